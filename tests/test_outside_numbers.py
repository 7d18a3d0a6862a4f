"""Numbers from outside that ended in exit 3 (issue 27): a uv.toml or ``[tool.uv]`` holding an integer
past Python's 4,300 digits (check and index), a wheel cache entry with a 400-digit ``fetched_at``."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.parse.indexconf import IndexConfigError, parse_uv_config
from envdoctor.wheels.cache import PageCache

HUGE = "9" * 5000


def entry(url: str, status: int, fetched_at: str) -> str:
    """A cache entry's JSON with ``fetched_at`` written as given (a number json.dumps cannot write)."""
    return (
        '{"format": 2, "url": "'
        + url
        + '", "status": '
        + str(status)
        + ', "fetched_at": '
        + fetched_at
        + ', "etag": null, "last_modified": null, "page": null}'
    )


def test_a_uv_toml_with_an_integer_past_4300_digits_is_a_config_problem():
    with pytest.raises(IndexConfigError, match="uv.toml: not a uv configuration: a number of more digits"):
        parse_uv_config(f"[pip]\nconcurrent-downloads = {HUGE}\n")
    with pytest.raises(IndexConfigError, match="pyproject.toml: not a uv configuration"):
        parse_uv_config(f"[tool.uv]\nconcurrent-downloads = {HUGE}\n", "pyproject.toml", pyproject=True)


@pytest.fixture
def home_with_huge_uv(tmp_path, monkeypatch):
    (tmp_path / ".config" / "uv").mkdir(parents=True)
    (tmp_path / ".config" / "uv" / "uv.toml").write_text(f"[pip]\nconcurrent-downloads = {HUGE}\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text(f'[project]\nname = "x"\n[tool.uv]\nconcurrent-downloads = {HUGE}\n')
    monkeypatch.chdir(proj)
    return tmp_path


def test_check_of_a_uv_toml_with_an_integer_past_4300_digits_names_the_files(home_with_huge_uv):
    env = {"HOME": str(home_with_huge_uv), "PWD": str(home_with_huge_uv / "proj"), "XDG_CONFIG_HOME": None}
    r = CliRunner().invoke(cli, ["check", "--skip", "conda", "--skip", "docker", "--skip", "toolkits"], env=env)
    assert r.exit_code in (0, 1), r.output
    assert "uv.toml: not a uv configuration: a number of more digits than Python reads" in r.output
    assert "pyproject.toml: not a uv configuration" in r.output and "internal error" not in r.output


def test_index_of_a_uv_toml_with_an_integer_past_4300_digits_goes_on(home_with_huge_uv):
    env = {
        "HOME": str(home_with_huge_uv),
        "PWD": str(home_with_huge_uv / "proj"),
        "XDG_CONFIG_HOME": None,
        "ENVDOCTOR_CACHE_DIR": str(home_with_huge_uv / "cache"),
        "ENVDOCTOR_INDEX_URL": None,
        "PIP_INDEX_URL": None,
        "UV_INDEX_URL": None,
    }
    r = CliRunner().invoke(
        cli, ["index", "cu128", "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64", "--offline"], env=env
    )
    assert r.exit_code in (0, 1, 2) and "internal error" not in r.output, r.output
    assert "cu128: torch" in r.output


@pytest.mark.parametrize("fetched_at", ["1" + "0" * 399, "1e300", "true", '"1764600000"', "-5"])
def test_a_cache_entry_with_a_fetched_at_no_fetch_had_is_no_entry(tmp_path, fetched_at):
    cache = PageCache(tmp_path)
    url = "https://download.pytorch.org/whl/cu128/torch/"
    cache.path_for(url).parent.mkdir(parents=True)
    cache.path_for(url).write_text(entry(url, 200, fetched_at))
    assert cache.get(url) is None


def test_a_cache_entry_of_now_is_read(tmp_path):
    cache = PageCache(tmp_path)
    url = "https://download.pytorch.org/whl/cu128/torch/"
    cache.path_for(url).parent.mkdir(parents=True)
    cache.path_for(url).write_text(
        json.dumps(
            {
                "format": 2,
                "url": url,
                "status": 404,
                "fetched_at": time.time(),
                "etag": None,
                "last_modified": None,
                "page": None,
            }
        )
    )
    entry = cache.get(url)
    assert entry is not None and entry.status == 404 and entry.age() < 60


def test_index_of_a_cache_entry_with_a_400_digit_fetched_at_is_no_internal_error(tmp_path):
    from envdoctor.wheels.client import FALLBACK_BASE

    cache = PageCache(tmp_path / "cache")
    cache.directory.mkdir(parents=True)
    url = f"{FALLBACK_BASE}/cu128/torch/"
    cache.path_for(url).write_text(entry(url, 404, "1" + "0" * 399))
    r = CliRunner().invoke(
        cli,
        ["index", "cu128", "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64", "--offline"],
        env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"), "ENVDOCTOR_INDEX_URL": None},
    )
    assert "internal error" not in r.output and r.exit_code in (0, 1, 2), r.output
