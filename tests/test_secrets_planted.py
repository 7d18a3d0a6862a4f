"""Secrets planted where issue 27 found them printed in clear; none may appear in any output or
written file (check text, -v, --json, --markdown, --redact, the snapshot on disk, index --json, fleet).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.redact import is_secret_name, mask_env, mask_text, mask_url
from tests import fleetdocs as fd
from tests.indexserver import IndexServer
from tests.machines import h200, write_tree

SKIP = ["--skip", "conda", "--skip", "docker", "--skip", "toolkits"]
#: every planted secret, and where it was planted
PIP_CONF = (
    "[global]\n"
    "extra-index-url = https://ci:ha#sh1pw@mirror.example/whl/cu128\n"
    "find-links = https://ci:sl/ash2pw@mirror.example/links\n"
    "proxy = u:pr0xyconf@proxy.example:3128\n"
)
ENV = {
    "ALL_PROXY": "u:pr0xyALL@proxy.example:1080",
    "CONDA_PWD": "c0ndapwdval",
    "PIP_FIND_LINKS": "https://ci:qu?est3pw@mirror.example/links",
    # a secret query key beside a byte that is not UTF-8 (surrogate-escaped, as os.environ has it)
    "PIP_INDEX_URL": "https://mirror.example/simple/?x=caf\udce9&token=qs3cretval",
}
SECRETS = ("ha#sh1pw", "sl/ash2pw", "qu?est3pw", "pr0xyconf", "pr0xyALL", "c0ndapwdval", "qs3cretval")


def leaks(text: str) -> list:
    return [s for s in SECRETS if s in text]


def test_index_url_passwords_holding_hash_question_mark_or_slash_are_masked():
    """The URL split ended the host part at the #, ? or / of the password and found no user part."""
    assert mask_url("https://ci:ha#sh1pw@mirror.example/whl") == "https://ci:***@mirror.example/whl"
    assert mask_url("https://ci:qu?est3pw@mirror.example/links") == "https://ci:***@mirror.example/links"
    assert mask_url("https://ci:sl/ash2pw@mirror.example/a@b") == "https://ci:***@mirror.example/a@b"
    assert mask_text("find-links = https://ci:sl/ash2pw@m/links ok") == "find-links = https://ci:***@m/links ok"
    assert mask_url("https://ci:p#a@b@mirror.example/x") == "https://ci:***@mirror.example/x"  # an @ in it too
    # what has no user part stays as it is: an @ in a path, a port before the path
    assert mask_url("https://host/pkg@1.0") == "https://host/pkg@1.0"
    assert mask_url("https://host:8080/pkg@1.0") == "https://host:8080/pkg@1.0"


def test_proxy_urls_without_a_scheme_are_masked():
    """curl and pip take ``u:pw@proxy:1080`` as a proxy; it was shown whole."""
    assert mask_env("ALL_PROXY", "u:pr0xyALL@proxy:1080") == "u:***@proxy:1080"
    assert mask_text("proxy = u:pr0xyconf@proxy:3128") == "proxy = u:***@proxy:3128"
    assert mask_url("u:pw@[::1]:3128") == "u:***@[::1]:3128"
    assert mask_text("git@github.com:org/repo and a:b") == "git@github.com:org/repo and a:b"
    assert mask_text("ubuntu:24.04@sha256:0a1b2c") == "ubuntu:24.04@sha256:0a1b2c"  # an image digest


def test_pwd_as_a_word_of_a_variable_name_is_a_password_but_the_shells_pwd_is_a_folder():
    assert is_secret_name("CONDA_PWD") and is_secret_name("DB_PWD") and is_secret_name("MY_PW")
    assert not is_secret_name("PWD") and not is_secret_name("OLDPWD") and not is_secret_name("CUDA_HOME")


def test_a_token_channel_right_after_a_tag_is_masked():
    """fleet --html put ``t/<token>/pytorch`` right after a ``>``."""
    assert mask_text("<td>t/TOKABC-1234/pytorch</td>") == "<td>t/***/pytorch</td>"


def test_a_secret_query_key_beside_a_byte_that_is_not_utf8_is_masked_without_a_crash():
    """urlencode re-encoded the query strictly: UnicodeEncodeError, check exit 3."""
    assert mask_url("https://m/simple/?x=caf\udce9&token=qs3cret") == "https://m/simple/?x=caf\udce9&token=***"


def test_check_prints_no_planted_secret_in_any_format(tmp_path):
    ctx = h200(tmp_path, env=ENV)
    write_tree(ctx.root, {"/etc/pip.conf": PIP_CONF})
    for args in ([], ["-v"], ["--json"], ["--markdown"], ["--redact"], ["--redact", "--json"], ["--html"]):
        r = CliRunner().invoke(cli, ["check", "--root", str(ctx.root), *SKIP, *args], env=dict(ctx.env))
        assert r.exit_code == 0, r.output
        assert leaks(r.output) == [], args
    shown = CliRunner().invoke(cli, ["check", "--root", str(ctx.root), *SKIP, "-v"], env=dict(ctx.env)).output
    assert "u:***@proxy.example:1080" in shown and "https://ci:***@mirror.example/whl/cu128" in shown


def test_snapshot_writes_no_planted_secret(tmp_path):
    ctx = h200(tmp_path, env=ENV)
    write_tree(ctx.root, {"/etc/pip.conf": PIP_CONF})
    state = tmp_path / "state"
    env = dict(ctx.env, ENVDOCTOR_STATE_DIR=str(state))
    r = CliRunner().invoke(cli, ["snapshot", "--root", str(ctx.root), *SKIP], env=env)
    assert r.exit_code in (0, 1), r.output
    written = [p for p in state.rglob("*") if p.is_file()]
    assert written and leaks(r.output) == []
    for p in written:
        assert leaks(p.read_text(errors="replace")) == [], p


def test_index_json_prints_no_password_holding_a_hash(tmp_path):
    with IndexServer() as server:
        url = server.url("auth", "ada:ha#sh1pw")
        r = CliRunner().invoke(
            cli,
            [
                "index",
                "cu128",
                "--python-version",
                "3.12",
                "--platform",
                "manylinux_2_28_x86_64",
                "--index-url",
                url,
                "--json",
            ],
            env={
                "ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"),
                "ENVDOCTOR_INDEX_RETRIES": "1",
                "ENVDOCTOR_INDEX_BACKOFF": "0",
            },
        )
    assert r.exit_code != 3 or "internal error" not in r.output
    assert "Traceback" not in r.output and leaks(r.output) == []
    for p in (tmp_path / "cache").rglob("*"):
        if p.is_file():
            assert leaks(p.read_text(errors="replace")) == [], p


def test_fleet_prints_no_planted_secret_in_any_format(tmp_path):
    leaky = fd.host(fd.h200(), "gpu-02")
    leaky["findings"] = [
        {
            "code": "ED205",
            "severity": "error",
            "title": "t/TOKCHAN-98765/pytorch",
            "evidence": [
                "t/TOKCHAN-98765/pytorch",
                "index https://ci:sl/ash2pw@mirror.example/whl",
                "proxy u:pr0xyconf@proxy.example:3128",
            ],
            "fix": ["pip install torch --index-url https://ci:ha#sh1pw@mirror.example/whl"],
            "reference": None,
            "area": "torch",
            "explanation": None,
        }
    ]
    fd.write(tmp_path / "a", fd.host(fd.h200(), "gpu-01"))
    fd.write(tmp_path / "b", leaky)
    out = tmp_path / "out.html"
    for fmt in ((), ("--json",), ("--markdown",), ("--html",), ("--redact",), ("--html", "-o", str(out))):
        r = CliRunner().invoke(cli, ["fleet", str(tmp_path / "a"), str(tmp_path / "b"), *fmt])
        assert r.exit_code in (0, 1), r.output
        assert leaks(r.output) == [] and "TOKCHAN-98765" not in r.output, fmt
    assert leaks(out.read_text()) == [] and "TOKCHAN-98765" not in out.read_text()


def test_the_planted_secrets_would_be_seen_unmasked(tmp_path):
    """The tests above can fail: the secrets reach the report (masking is what hides them)."""
    ctx = h200(tmp_path, env=ENV)
    write_tree(ctx.root, {"/etc/pip.conf": PIP_CONF})
    r = CliRunner().invoke(cli, ["check", "--root", str(ctx.root), *SKIP, "--json"], env=dict(ctx.env))
    doc = json.loads(r.output)
    assert "/etc/pip.conf" in json.dumps(doc) and Path(ctx.root, "etc/pip.conf").read_text() == PIP_CONF
