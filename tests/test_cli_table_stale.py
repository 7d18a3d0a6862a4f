"""``envdoctor table --stale`` against the local index server (never the internet)."""

import subprocess
import sys
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from tests.indexserver import IndexServer


@pytest.fixture(scope="module")
def server():
    with IndexServer() as s:
        yield s


def invoke(server, tmp_path, monkeypatch, newest, *args):
    fake = SimpleNamespace(torch_releases=(SimpleNamespace(version=newest),))
    monkeypatch.setattr("envdoctor.cli.table._table", lambda: fake)
    env = {"ENVDOCTOR_CACHE_DIR": str(tmp_path), "ENVDOCTOR_INDEX_RETRIES": "0"}
    return CliRunner().invoke(cli, ["table", "--stale", *args], env=env)


def test_stale_table_lists_newer_releases(server, tmp_path, monkeypatch):
    r = invoke(server, tmp_path, monkeypatch, "2.9.0", "--index-url", server.url(), "--variant", "cu130")
    assert r.exit_code == 1, r.output
    assert r.output.startswith("table is stale: newest bundled torch 2.9.0;")
    assert "2.10.0" in r.output and "data/torch.toml" in r.output


def test_current_table(server, tmp_path, monkeypatch):
    r = invoke(server, tmp_path, monkeypatch, "9.0.0", "--index-url", server.url(), "--variant", "cu130")
    assert r.exit_code == 0 and r.output.startswith("table is current: newest bundled torch 9.0.0")


def test_unreadable_index_is_one_line_exit_3(server, tmp_path, monkeypatch):
    r = invoke(
        server,
        tmp_path,
        monkeypatch,
        "2.9.0",
        "--index-url",
        server.url("down"),
        "--variant",
        "cu130",
        "--timeout",
        "2",
    )
    assert r.exit_code == 2 and r.output.count("\n") == 1
    assert r.output.startswith("envdoctor: cannot tell whether the table is stale:")


def test_credentials_are_masked(server, tmp_path, monkeypatch):
    url = server.url().replace("http://", "http://bob:s3cret@")
    r = invoke(server, tmp_path, monkeypatch, "9.0.0", "--index-url", url, "--variant", "cu130")
    assert "s3cret" not in r.output


def test_stale_json_is_the_document_with_the_exit_code(server, tmp_path, monkeypatch):
    import json

    r = invoke(server, tmp_path, monkeypatch, "2.9.0", "--index-url", server.url(), "--variant", "cu130", "--json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["schema"] == "envdoctor.stale/1" and doc["stale"] is True and doc["summary"]["exit_code"] == 1
    assert doc["bundled_newest"] == "2.9.0" and "2.10.0" in doc["newer"] and doc["variant"] == "cu130"
    current = json.loads(
        invoke(
            server, tmp_path, monkeypatch, "9.0.0", "--index-url", server.url(), "--variant", "cu130", "--json"
        ).stdout
    )
    assert current["stale"] is False and current["newer"] == [] and current["summary"]["exit_code"] == 0


def test_stale_json_of_an_unreadable_index_says_why_and_exits_2(server, tmp_path, monkeypatch):
    import json

    url = server.url("down").replace("http://", "http://bob:s3cret@")
    r = invoke(
        server, tmp_path, monkeypatch, "2.9.0", "--index-url", url, "--variant", "cu130", "--timeout", "2", "--json"
    )
    assert r.exit_code == 2, r.output
    doc = json.loads(r.stdout)
    assert doc["stale"] is None and doc["error"] and doc["summary"]["exit_code"] == 2
    assert "s3cret" not in r.output


def test_table_json_without_stale_or_a_subcommand_is_a_usage_error():
    """Nothing to print as a document: one Error line and exit 2, not the help with exit 0."""
    r = subprocess.run(
        [sys.executable, "-m", "envdoctor", "table", "--json"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "Error: --json needs --stale or a subcommand: envdoctor table --stale --json, envdoctor table gpu H200 --json"
    ]
