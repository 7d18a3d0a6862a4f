"""The index the user's pip and uv are really configured with: the files pip and uv read, in their
order, the variables, the proxy; used as the default base by ``index`` and ``recommend`` and shown,
masked, in their output and in check's facts.

The files are written as pip's and uv's documentation show them; expected answers are by hand.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envdoctor.cli import cli
from envdoctor.facts import Facts, TargetPython
from envdoctor.parse.indexconf import (
    IndexConfigError,
    parse_pip_config,
    parse_uv_config,
    pip_indexes,
    torch_base,
    uv_env_indexes,
    uv_indexes,
)
from envdoctor.probes.context import Context
from envdoctor.probes.indexconf import (
    configured_torch_base,
    index_config,
    pip_config_files,
    uv_config_files,
)
from envdoctor.render import text
from envdoctor.wheels import default_choice
from tests.documents import validate
from tests.fakes import cli_runner

HOME = "/home/ada"
#: Neither the machine's pip nor its uv configuration leaks into a test that sets these.
NO_FILES = {"PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1"}
#: ... and for a CLI run, none of the machine's own index variables either (None: unset).
CLEAN = dict(
    NO_FILES,
    **{
        k: None
        for k in (
            "PIP_INDEX_URL",
            "PIP_EXTRA_INDEX_URL",
            "PIP_FIND_LINKS",
            "PIP_NO_INDEX",
            "UV_INDEX",
            "UV_DEFAULT_INDEX",
            "UV_INDEX_URL",
            "UV_EXTRA_INDEX_URL",
            "ENVDOCTOR_INDEX_URL",
            "HTTPS_PROXY",
            "https_proxy",
        )
    },
)


def write(root: Path, path: str, text: str) -> None:
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def ctx_of(root: Path, **env: str) -> Context:
    return Context(root=root, env=dict({"HOME": HOME}, **env))


# --- pip.conf -------------------------------------------------------------------------------------


def test_pip_conf_keys_as_pip_normalizes_them_and_multi_line_values():
    conf = (
        "[global]\nindex_url = https://mirror.example/pytorch/whl/cu128\nextra-index-url =\n"
        "    https://a.example/simple\n    https://b.example/simple\n\n[install]\nno-index = false\n"
    )
    assert parse_pip_config(conf) == {
        ("global", "index-url"): "https://mirror.example/pytorch/whl/cu128",
        ("global", "extra-index-url"): "https://a.example/simple\nhttps://b.example/simple",
        ("install", "no-index"): "false",
    }


@pytest.mark.parametrize(
    "conf, why",
    [
        ("index-url = https://x\n", "a key before any [section]"),
        ("[global]\nindex-url = a\nindex-url = b\n", "'index-url' is set twice in [global]"),
        ("[global]\n[global]\n", "[global] appears twice"),
        ("[global]\njust words\n", "line 2: 'just words' is not 'key = value'"),
    ],
)
def test_a_pip_conf_pip_would_refuse_is_one_line(conf, why):
    with pytest.raises(IndexConfigError) as e:
        parse_pip_config(conf, "/etc/pip.conf")
    assert str(e.value).startswith("/etc/pip.conf: ") and why in str(e.value)


def test_blank_runs_in_a_hostile_pip_conf_stay_linear():
    import time

    started = time.monotonic()
    with pytest.raises(IndexConfigError):
        parse_pip_config("[global]\n" + ("a" + " " * 8000 + "b = 1\n") * 30 + "x")
    assert time.monotonic() - started < 2.0


def test_later_files_win_install_over_global_and_variables_over_all():
    files = [
        (
            "/etc/pip.conf",
            {("global", "index-url"): "https://a/whl/cu126", ("install", "extra-index-url"): "https://e/simple"},
        ),
        (f"{HOME}/.config/pip/pip.conf", {("global", "index-url"): "https://b/whl/cu128"}),
        ("/opt/venv/pip.conf", {("global", "extra-index-url"): "https://site/simple"}),
    ]
    found, _ = pip_indexes(files, {})
    # [install] of /etc/pip.conf beats [global] of the later files, as pip merges section.key first
    assert [(i.url, i.role, i.source) for i in found] == [
        ("https://b/whl/cu128", "index", f"{HOME}/.config/pip/pip.conf [global]"),
        ("https://e/simple", "extra", "/etc/pip.conf [install]"),
    ]
    found, proxy = pip_indexes(files, {"PIP_INDEX_URL": "https://c/whl/cu130", "PIP_PROXY": "http://p:3128"})
    assert found[0].url == "https://c/whl/cu130" and found[0].source == "PIP_INDEX_URL"
    assert proxy == ("http://p:3128", "PIP_PROXY")


def test_pip_reads_its_files_in_its_order(tmp_path):
    ctx = ctx_of(tmp_path, XDG_CONFIG_DIRS="/etc/xdg:/opt/xdg")
    assert pip_config_files(ctx, "/opt/venv") == [
        "/etc/xdg/pip/pip.conf",
        "/opt/xdg/pip/pip.conf",
        "/etc/pip.conf",
        f"{HOME}/.pip/pip.conf",
        f"{HOME}/.config/pip/pip.conf",
        "/opt/venv/pip.conf",
    ]


def test_pip_config_file_that_exists_replaces_the_users_and_dev_null_reads_none(tmp_path):
    write(tmp_path, "/srv/pip.conf", "[global]\nindex-url = https://m/whl/cu128\n")
    assert pip_config_files(ctx_of(tmp_path, PIP_CONFIG_FILE="/srv/pip.conf"), None) == [
        "/etc/xdg/pip/pip.conf",
        "/etc/pip.conf",
        "/srv/pip.conf",
    ]
    assert pip_config_files(ctx_of(tmp_path, PIP_CONFIG_FILE=os.devnull), "/opt/venv") == []


# --- uv --------------------------------------------------------------------------------------------

PYPROJECT = """[project]
name = "trainer"
dependencies = ["torch>=2.7"]

[[tool.uv.index]]
name = "pytorch-cu128"
url = "https://download.pytorch.org/whl/cu128"
explicit = true

[tool.uv.sources]
torch = [{ index = "pytorch-cu128", marker = "sys_platform == 'linux'" }]
"""


def test_pyproject_tool_uv_index_with_torch_pinned_to_it():
    settings = parse_uv_config(PYPROJECT, "pyproject.toml", pyproject=True)
    (index,) = uv_indexes(settings, "/srv/trainer/pyproject.toml")
    assert (index.url, index.role, index.name, index.explicit, index.torch_pinned) == (
        "https://download.pytorch.org/whl/cu128",
        "extra",
        "pytorch-cu128",
        True,
        True,
    )
    assert index.source == "/srv/trainer/pyproject.toml [[index]] pytorch-cu128"


def test_uv_toml_index_url_pip_table_and_junk_entries():
    settings = parse_uv_config(
        'index-url = "https://m/simple"\n[[index]]\nurl = "https://n/whl/cu126"\n'
        'default = true\n[[index]]\nname = 5\n[pip]\nextra-index-url = ["https://o/simple", 7]\n'
    )
    assert [(i.url, i.role, i.source) for i in uv_indexes(settings, "uv.toml")] == [
        ("https://n/whl/cu126", "index", "uv.toml [[index]]"),
        ("https://m/simple", "index", "uv.toml index-url"),
        ("https://o/simple", "extra", "uv.toml [pip] extra-index-url"),
    ]


def test_uv_variables():
    found = uv_env_indexes(
        {
            "UV_DEFAULT_INDEX": "https://d/simple",
            "UV_INDEX": "pt=https://e/whl/cu128 https://f/simple",
            "UV_EXTRA_INDEX_URL": "https://g/simple",
        }
    )
    assert [(i.url, i.role, i.name, i.source) for i in found] == [
        ("https://d/simple", "index", None, "UV_DEFAULT_INDEX"),
        ("https://e/whl/cu128", "extra", "pt", "UV_INDEX"),
        ("https://f/simple", "extra", None, "UV_INDEX"),
        ("https://g/simple", "extra", None, "UV_EXTRA_INDEX_URL"),
    ]


def test_bad_toml_is_one_line():
    with pytest.raises(IndexConfigError, match="uv.toml: not valid TOML"):
        parse_uv_config("[[index]\n", "uv.toml")
    with pytest.raises(IndexConfigError, match="nested too deeply|not valid TOML"):
        parse_uv_config("a = " + "[" * 50000 + "]" * 50000, "uv.toml")
    with pytest.raises(IndexConfigError, match="larger than 128 KiB"):
        parse_uv_config("#" * 200000, "uv.toml")


def test_a_uv_toml_of_deeply_dotted_keys_is_refused_not_parsed_for_seconds():
    """The fuzz run's find: tomllib took 2.9 s on a 95 kB key 'V12.8.93V12.8.93...' (quadratic in its parts)."""
    import time

    started = time.monotonic()
    with pytest.raises(IndexConfigError, match="line 1: a key of more than 16 dotted parts"):
        parse_uv_config("V12.8.93" * 12000, "uv.toml")
    assert time.monotonic() - started < 0.5
    # dots inside strings are no key parts: a URL or a long version list stays readable
    assert (
        parse_uv_config('v = "' + "1." * 500 + "\"\nurl = 'https://a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r/whl'\n")["url"]
        == "https://a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r/whl"
    )


def test_uv_finds_the_nearest_project_then_the_users_then_the_systems(tmp_path):
    write(tmp_path, "/srv/uv.toml", 'index-url = "https://w/simple"\n')
    write(tmp_path, "/srv/proj/pyproject.toml", '[project]\nname = "p"\n')  # no [tool.uv]: uv looks further up
    write(tmp_path, "/etc/uv/uv.toml", 'index-url = "https://s/simple"\n')
    ctx = ctx_of(tmp_path, PWD="/srv/proj/src")
    assert uv_config_files(ctx) == [
        ("/srv/uv.toml", False),
        (f"{HOME}/.config/uv/uv.toml", False),
        ("/etc/uv/uv.toml", False),
    ]
    assert uv_config_files(ctx_of(tmp_path, UV_CONFIG_FILE="/srv/uv.toml")) == [("/srv/uv.toml", False)]
    assert uv_config_files(ctx_of(tmp_path, UV_NO_CONFIG="1")) == []


# --- the torch base ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, base",
    [
        ("https://download.pytorch.org/whl/cu128", "https://download.pytorch.org/whl"),
        ("https://download.pytorch.org/whl/cu128/", "https://download.pytorch.org/whl"),
        ("https://download.pytorch.org/whl/nightly/cu130", "https://download.pytorch.org/whl"),
        ("https://download.pytorch.org/whl/rocm6.2.4", "https://download.pytorch.org/whl"),
        (
            "https://me:pw@artifactory.example/api/pypi/pytorch/whl/cpu",
            "https://me:pw@artifactory.example/api/pypi/pytorch/whl",
        ),
        ("https://mirror.example/pytorch/whl", "https://mirror.example/pytorch/whl"),
        ("https://pypi.org/simple", None),
        ("https://mirror.example/simple/", None),
        ("file:///opt/pypi/simple", None),
        ("/opt/wheels", None),
        ("https://cu128", None),
    ],
)
def test_which_urls_are_torch_wheel_indexes(url, base):
    assert torch_base(url) == base


# --- through the probe Context ------------------------------------------------------------------------


def test_index_config_of_a_machine_masked_with_the_base_it_implies(tmp_path):
    write(tmp_path, "/etc/pip.conf", "[global]\nextra-index-url = https://pypi.example/simple\n")
    write(
        tmp_path,
        f"{HOME}/.config/pip/pip.conf",
        "[global]\nindex-url = https://ada:s3cr'et@mirror.example/pt/whl/cu128\n",
    )
    write(tmp_path, "/srv/proj/pyproject.toml", PYPROJECT)
    c = index_config(
        ctx_of(
            tmp_path, PWD="/srv/proj", HTTPS_PROXY="http://ada:pw@proxy.example:3128", NO_PROXY="localhost,127.0.0.1"
        ),
        prefix="/opt/venv",
    )
    assert [(i.tool, i.role, i.url, i.source) for i in c.indexes] == [
        ("pip", "index", "https://ada:***@mirror.example/pt/whl/cu128", f"{HOME}/.config/pip/pip.conf [global]"),
        ("pip", "extra", "https://pypi.example/simple", "/etc/pip.conf [global]"),
        ("uv", "extra", "https://download.pytorch.org/whl/cu128", "/srv/proj/pyproject.toml [[index]] pytorch-cu128"),
    ]
    # uv pins torch to its index: that is where torch comes from
    assert (c.torch_base, c.torch_base_source) == (
        "https://download.pytorch.org/whl",
        "/srv/proj/pyproject.toml [[index]] pytorch-cu128: https://download.pytorch.org/whl/cu128",
    )
    assert c.proxies == {"HTTPS_PROXY": "http://ada:***@proxy.example:3128", "NO_PROXY": "localhost,127.0.0.1"}
    assert c.files == ("/etc/pip.conf", f"{HOME}/.config/pip/pip.conf", "/srv/proj/pyproject.toml")
    assert "s3cr" not in json.dumps([i.url for i in c.indexes])


def test_the_unmasked_base_is_for_requests_only(tmp_path):
    write(
        tmp_path,
        f"{HOME}/.config/pip/pip.conf",
        "[global]\nindex-url = https://ada:s3cret@mirror.example/pt/whl/cu128\n",
    )
    assert configured_torch_base(ctx_of(tmp_path)) == (
        "https://ada:s3cret@mirror.example/pt/whl",
        f"{HOME}/.config/pip/pip.conf [global]: https://ada:***@mirror.example/pt/whl/cu128",
    )


def test_a_broken_file_is_a_problem_the_others_still_count(tmp_path):
    write(tmp_path, "/etc/pip.conf", "index-url = https://x/whl/cu126\n")
    write(tmp_path, f"{HOME}/.config/uv/uv.toml", '[[index]]\nurl = "https://m/whl/cu128"\n')
    c = index_config(ctx_of(tmp_path))
    assert c.problems == ("/etc/pip.conf: not an INI file: a key before any [section] (line 1)",)
    assert c.torch_base == "https://m/whl"


def test_a_fifo_named_pip_conf_does_not_block(tmp_path):
    (tmp_path / "etc").mkdir()
    os.mkfifo(tmp_path / "etc" / "pip.conf")
    assert index_config(ctx_of(tmp_path)).files == ()


def test_check_shows_indexes_base_and_proxy():
    c = index_config(
        Context(
            root=Path("/nonexistent"),
            env={"HOME": HOME, "PIP_INDEX_URL": "https://m/whl/cu128", "HTTPS_PROXY": "http://proxy:3128"},
        )
    )
    out = text.render(Facts(python=TargetPython(executable="/usr/bin/python3", version="3.12.3", index_config=c)), ())
    assert "Indexes           pip index https://m/whl/cu128 (PIP_INDEX_URL)\n" in out
    assert (
        "Torch index base  https://m/whl (from PIP_INDEX_URL: https://m/whl/cu128): index and recommend use it\n"
    ) in out
    assert "Proxy             HTTPS_PROXY=http://proxy:3128\n" in out


# --- the default of index and recommend ------------------------------------------------------------------


def _choice(env, root=None):
    """default_choice as the commands call it: the configuration read by the command, with its root."""
    from envdoctor.probes.indexconf import configured_torch_base

    return default_choice(env, configured_torch_base(Context(root=root or Path("/"), env=env)))


def test_default_choice_order():
    assert _choice(dict(NO_FILES, ENVDOCTOR_INDEX_URL="https://e/whl/", PIP_INDEX_URL="https://p/whl/cu128")) == (
        "https://e/whl",
        "ENVDOCTOR_INDEX_URL",
    )
    assert _choice(dict(NO_FILES, PIP_INDEX_URL="https://p/whl/cu128")) == (
        "https://p/whl",
        "your pip/uv configuration (PIP_INDEX_URL: https://p/whl/cu128)",
    )
    base, source = _choice(dict(NO_FILES, PIP_INDEX_URL="https://pypi.example/simple"))
    assert source == "envdoctor's table" and base == "https://download.pytorch.org/whl"
    # the client reads no configuration of its own: what the command hands it, or the table
    assert default_choice(dict(NO_FILES, PIP_INDEX_URL="https://p/whl/cu128"))[1] == "envdoctor's table"


def test_recommend_reads_pip_conf_under_its_root(tmp_path, monkeypatch):
    # default_choice built its own Context from os.environ and "/": --root was ignored
    from envdoctor.cli.recommend import _configured_index

    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "pip.conf").write_text("[global]\nindex-url = https://mirror.example/torch/whl/cu128\n")
    for name in list(os.environ):
        if name.startswith(("PIP_", "UV_", "XDG_")) or name == "ENVDOCTOR_INDEX_URL":
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    base, line = _configured_index(tmp_path)
    assert base == "https://mirror.example/torch/whl" and "/etc/pip.conf" in (line or "")
    assert _configured_index(tmp_path / "elsewhere") == (None, None)


def test_index_uses_and_shows_the_configured_base_masked():
    env = dict(
        CLEAN,
        PIP_INDEX_URL="https://ada:s3cret@mirror.example/pt/whl/cu126",
        HTTPS_PROXY="http://ada:pw@proxy.example:3128",
    )
    result = cli_runner().invoke(cli, ["index", "cu128", "--offline", "--python-version", "3.12"], env=env)
    lines = result.output.splitlines()
    assert lines[0].startswith("index: https://ada:***@mirror.example/pt/whl  target: cp312")
    assert lines[1] == (
        "  base from your pip/uv configuration (PIP_INDEX_URL: https://ada:***@mirror.example/pt/whl/"
        "cu126); --index-url overrides it"
    )
    assert lines[2] == "  proxy: HTTPS_PROXY=http://ada:***@proxy.example:3128"
    assert "s3cret" not in result.output and "ada:pw" not in result.output
    doc = json.loads(
        cli_runner().invoke(cli, ["index", "cu128", "--offline", "--python-version", "3.12", "--json"], env=env).output
    )
    validate(doc, "index")
    assert doc["index_source"].startswith("your pip/uv configuration (PIP_INDEX_URL")
    assert doc["configured_indexes"] == [
        {
            "url": "https://ada:***@mirror.example/pt/whl/cu126",
            "role": "index",
            "tool": "pip",
            "source": "PIP_INDEX_URL",
        }
    ]


def test_index_url_still_wins_over_the_configuration():
    env = dict(CLEAN, PIP_INDEX_URL="https://mirror.example/pt/whl/cu126")
    result = cli_runner().invoke(
        cli,
        ["index", "cu128", "--offline", "--python-version", "3.12", "--index-url", "https://other.example/whl"],
        env=env,
    )
    assert result.output.startswith("index: https://other.example/whl ") and "base from" not in result.output


def test_recommend_plans_with_the_configured_base_and_says_so():
    env = dict(CLEAN, PIP_INDEX_URL="https://mirror.example/pt/whl/cu126")
    result = cli_runner().invoke(
        cli,
        [
            "recommend",
            "--offline",
            "--gpu",
            "H100",
            "--driver",
            "570.133.20",
            "--os",
            "ubuntu:24.04",
            "--python-version",
            "3.12",
        ],
        env=env,
    )
    assert "--index-url https://mirror.example/pt/whl/cu12" in result.stdout
    assert (
        "envdoctor recommend: the wheel index base https://mirror.example/pt/whl comes from your pip/uv "
        "configuration (PIP_INDEX_URL: https://mirror.example/pt/whl/cu126); --index-url overrides it"
    ) in result.stderr


def test_recommend_without_configuration_is_unchanged():
    result = cli_runner().invoke(
        cli,
        [
            "recommend",
            "--offline",
            "--gpu",
            "H100",
            "--driver",
            "570.133.20",
            "--os",
            "ubuntu:24.04",
            "--python-version",
            "3.12",
        ],
        env=CLEAN,
    )
    assert "--index-url https://download.pytorch.org/whl/cu12" in result.stdout and "comes from" not in result.stderr


def test_index_recommend_and_check_read_the_configuration_under_the_same_root(tmp_path):
    """index and recommend read pip.conf under --root, as check's probe does; before, default_choice
    read the real /etc/pip.conf (a Context of its own) and index had no --root at all."""
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "pip.conf").write_text("[global]\nindex-url = https://rootmirror.example/pt/whl/cu126\n")
    env = dict(CLEAN, PIP_CONFIG_FILE=None, HOME=str(tmp_path / "home"), XDG_CONFIG_DIRS="/etc/xdg")
    shown = index_config(Context(root=root, env={k: v for k, v in env.items() if v is not None}))
    assert shown.torch_base == "https://rootmirror.example/pt/whl"  # what check reports
    result = cli_runner().invoke(
        cli, ["index", "cu128", "--offline", "--python-version", "3.12", "--root", str(root)], env=env
    )
    assert result.output.startswith("index: https://rootmirror.example/pt/whl "), result.output
    assert "base from your pip/uv configuration (/etc/pip.conf" in result.output
    result = cli_runner().invoke(
        cli,
        [
            "recommend",
            "--offline",
            "--gpu",
            "H100",
            "--driver",
            "570.133.20",
            "--os",
            "ubuntu:24.04",
            "--python-version",
            "3.12",
            "--root",
            str(root),
        ],
        env=env,
    )
    assert "--index-url https://rootmirror.example/pt/whl/cu12" in result.stdout, result.output
