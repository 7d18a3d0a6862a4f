"""``envdoctor index`` end to end (CliRunner) against the local index server."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from tests.indexserver import IndexServer
from tests.test_wheels_client import FAKE_TABLE

CP312 = ["--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"]


@pytest.fixture(scope="module")
def server():
    with IndexServer(slow=1.5) as s:
        yield s


@pytest.fixture
def run(server, tmp_path, monkeypatch):
    """Invoke ``envdoctor index ...`` with a private cache and a fake (or no) table."""
    server.reset()
    monkeypatch.setattr("envdoctor.cli.index._load_table", lambda: FAKE_TABLE)

    def invoke(*args, env=None, table=FAKE_TABLE):
        monkeypatch.setattr("envdoctor.cli.index._load_table", lambda: table)
        environ = {
            "ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"),
            "ENVDOCTOR_INDEX_URL": None,
            "ENVDOCTOR_INDEX_RETRIES": "1",
            "ENVDOCTOR_INDEX_BACKOFF": "0",
        }
        environ.update(env or {})
        return CliRunner().invoke(cli, ["index", *args], env=environ)

    return invoke


def test_issue_6_cu117_cu121_cu130(run, server):
    result = run("cu117", "cu121", "cu130", *CP312, "--index-url", server.url())
    base = server.url()
    assert result.output.splitlines() == [
        f"index: {base}  target: cp312 (CPython 3.12 on manylinux_2_28_x86_64)",
        "cu117: torch 1.13.0-2.0.1 (4 versions), none for cp312 (wheels for cp37-cp311 or "
        "win_amd64); newest for cp312 is on cu130",
        "cu121: torch 2.1.0-2.5.1 (12 versions); for cp312: 2.2.0-2.5.1 (newest 2.5.1)",
        "cu130: torch 2.9.0-2.11.0 (4 versions); for cp312: 2.9.0-2.11.0 (newest 2.11.0)",
        "newest torch for cp312: 2.11.0 on cu130",
        f"  pip install torch==2.11.0 --index-url {base}/cu130",
    ]
    assert result.exit_code == 1  # cu117 has nothing for cp312


def test_found_exits_0_and_json_document(run, server):
    result = run("cu121", "cu130", *CP312, "--index-url", server.url("pep691"), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["version"] == "1" and doc["exit_code"] == 0 and doc["package"] == "torch"
    assert doc["target"]["short"] == "cp312"
    assert [v["variant"] for v in doc["variants"]] == ["cu121", "cu130"]
    assert doc["variants"][0]["format"] == "json"
    assert doc["variants"][1]["compatible"] == ["2.9.0", "2.9.1", "2.10.0", "2.11.0"]
    assert doc["newest"] == {"variant": "cu130", "version": "2.11.0", "index_url": f"{server.url('pep691')}/cu130"}


def test_hint_looks_at_the_other_known_variants(run, server):
    result = run("cu117", *CP312, "--index-url", server.url())
    assert "newest for cp312 is on cu121" in result.output  # FAKE_TABLE knows cpu and cu121
    assert result.exit_code == 1


def test_index_url_from_the_environment(run, server):
    result = run("cu128", *CP312, env={"ENVDOCTOR_INDEX_URL": server.url("moved")})
    assert result.exit_code == 0 and f"index: {server.url('moved')}" in result.output


@pytest.mark.parametrize(
    "mode, words",
    [
        ("down", "server error (HTTP 503), still failing after retries"),
        ("slow", "did not answer within 0.3 s"),
        ("garbage", "not an index page (binary data)"),
        ("badjson", "JSON does not parse"),
        ("truncated", "not a complete index page"),
        ("cut", "was cut off (truncated)"),
        ("loop", "redirect loop"),
    ],
)
def test_each_failure_is_one_line_and_exit_2(run, server, mode, words):
    result = run("cu121", *CP312, "--index-url", server.url(mode), "--timeout", "0.3")
    lines = result.output.splitlines()
    assert result.exit_code == 2, result.output
    assert lines[1].startswith("cu121: ") and words in lines[1]
    assert "Traceback" not in result.output and len(lines) <= 3


def test_connection_refused_and_dns_exit_2(run):
    with IndexServer() as gone:
        url = gone.url()
    result = run("cu121", "--index-url", url, env={"ENVDOCTOR_INDEX_RETRIES": "0"})
    assert result.exit_code == 2 and "connection refused by 127.0.0.1:" in result.output


def test_no_such_index_exits_1(run, server):
    result = run("cu999", "--index-url", server.url("s3"))
    assert result.exit_code == 1
    assert f"cu999: {server.url('s3')}/cu999: no such index (HTTP 403)" in result.output


def test_credentials_are_masked_everywhere(run, server):
    good = run("cu128", "--index-url", server.url("auth", "ada:s3cret"))
    bad = run("cu128", "--index-url", server.url("auth", "ada:wrongpass"), "--refresh")
    doc = run("cu128", "--index-url", server.url("auth", "ada:s3cret"), "--json")
    for result in (good, bad, doc):
        assert "s3cret" not in result.output and "wrongpass" not in result.output
        assert "ada:***@" in result.output
    assert good.exit_code == 0 and bad.exit_code == 2


def test_offline_with_and_without_cache(run, server):
    result = run("cu121", *CP312, "--index-url", server.url(), "--offline", table=None)
    assert result.exit_code == 2 and server.count() == 0
    assert "offline: answers come from the cache; nothing was fetched" in result.output
    assert "is not in the cache" in result.output
    # from the bundled table when the cache has nothing
    result = run("cu121", *CP312, "--index-url", server.url(), "--offline")
    assert "cu121: torch 2.1.0, 2.4.1; for cp312: 2.4.1 (newest 2.4.1)" in result.output
    assert "(from the bundled table (offline, not in the cache))" in result.output
    # a filled cache answers offline without a request
    run("cu121", *CP312, "--index-url", server.url())
    server.reset()
    result = run("cu121", *CP312, "--index-url", server.url(), "--offline")
    assert server.count() == 0 and result.exit_code == 0
    assert "(cached " in result.output and "newest 2.5.1" in result.output


def test_refresh_asks_again(run, server):
    run("cu121", "--index-url", server.url())
    run("cu121", "--index-url", server.url())
    assert server.count() == 1
    run("cu121", "--index-url", server.url(), "--refresh")
    assert server.count() == 2


def test_all_uses_table_and_root(run, server):
    result = run("--all", *CP312, "--index-url", server.url("autoindex"))
    variants = [line.split(":")[0] for line in result.output.splitlines()[1:] if not line.startswith(" ")]
    assert variants[:2] == ["cpu", "cu121"]  # the table's, first
    assert set(variants) >= {"cu117", "cu128", "cu130", "rocm6.2"}
    assert result.exit_code == 0


def test_python_path_is_probed(run, server):
    result = run("cu128", "--python", sys.executable, "--index-url", server.url())
    assert f"({sys.executable}, Python " in result.output.splitlines()[0]


@pytest.mark.parametrize(
    "args, words",
    [
        (["cu128", "--offline", "--refresh"], "contradict"),
        (["cu128", "--python", sys.executable, "--python-version", "3.12"], "not both"),
        (["../../etc"], "not a variant name"),
        ([], "name one or more variants"),
        (["cu128", "--python-version", "3"], "not a Python version"),
        (["cu128", "--platform", "many linux"], "not a platform tag"),
        (["cu128", "--index-url", "file:///tmp/whl"], "not an http(s) URL"),
        (["cu128", "--package", "numpy"], "numpy"),
        (["cu128", "--python", "/no/such/python"], "does not exist"),
    ],
)
def test_usage_errors_exit_2(run, args, words):
    result = run(*args)
    assert result.exit_code == 2 and words in result.output


def test_with_the_real_table(server, tmp_path):
    """Uses data/ through envdoctor.table: its variant names and base, against the local server."""
    from envdoctor.table import load_table

    table = load_table()
    names = [v.name for v in table.variants]
    assert "cu121" in names and "cu130" in names
    result = CliRunner().invoke(
        cli,
        ["index", "--all", *CP312, "--index-url", server.url()],
        env={"ENVDOCTOR_CACHE_DIR": str(tmp_path), "ENVDOCTOR_INDEX_URL": None},
    )
    assert result.exit_code == 0, result.output
    assert "cu130: torch 2.9.0-2.11.0" in result.output
    assert f"cu102: {server.url()}/cu102: no such index (HTTP 404)" in result.output


def test_offline_table_answer_lists_patches_and_leaves_out_unconfirmed(tmp_path):
    """`index cu117 cu121 cu130 --offline` listed 2.0.0/2.5.0 but not the patches 2.0.1/2.5.1 the table
    holds, and offered 2.14.0, a release the table marks unconfirmed."""
    from click.testing import CliRunner as Runner

    r = Runner().invoke(
        cli,
        ["index", "cu121", "cu130", "--offline", "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"],
        env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "empty-cache"), "ENVDOCTOR_INDEX_URL": None},
    )
    assert r.exit_code == 0, r.output
    assert "newest 2.5.1" in r.output  # a patch release of the 2.5 row
    assert "pip install torch==2.14.0" not in r.output  # unconfirmed in the table


def test_index_python_that_prints_garbage_is_exit_2_as_in_recommend(tmp_path):
    """Was exit 1 (which means "no such index") for an interpreter that cannot answer (issue 12 audit)."""
    import os

    from click.testing import CliRunner

    from envdoctor.cli import cli

    bad = tmp_path / "python3"
    bad.write_text("#!/bin/sh\necho garbage\n")
    os.chmod(bad, 0o755)
    r = CliRunner().invoke(
        cli, ["index", "cu128", "--python", str(bad), "--offline"], env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")}
    )
    assert r.exit_code == 2, r.output
    assert f"{bad} did not print its interpreter details" in r.output


def test_could_not_tell_is_exit_2_with_what_to_do_not_a_bug(run, server):
    """A failing index is no bug of envdoctor's (3): exit 2 in text and in the document, and a line
    says what to do -- the network for a live read, a run without --offline for an empty cache."""
    live = run("cu121", *CP312, "--index-url", server.url("down"), "--timeout", "0.3")
    assert live.exit_code == 2 and "check the network, a proxy (HTTPS_PROXY) or --index-url" in live.output
    doc = run("cu121", *CP312, "--index-url", server.url("down"), "--timeout", "0.3", "--json")
    answer = json.loads(doc.stdout)
    assert doc.exit_code == 2 and answer["exit_code"] == 2 and answer["summary"]["exit_code"] == 2
    assert answer["network_failure"] is True
    offline = run("cu121", *CP312, "--index-url", server.url(), "--offline", table=None)
    assert offline.exit_code == 2 and "run it without --offline to fetch" in offline.output
