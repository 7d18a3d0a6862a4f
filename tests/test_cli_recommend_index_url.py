"""A broken ``--index-url`` is a usage error (exit 2, the URL masked) in every command that takes it.

Was (issue 12): ``http://[::1/whl`` gave a ValueError traceback and exit 1 (the check ran as a Click
callback, before the guard); a port above 65535 and a 64-character host label went through the check
and failed later, deep in the index client.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli

LONG_LABEL = "a" * 64
NO_GPU = ["--offline", "--no-gpu", "--os", "ubuntu:24.04", "--python-version", "3.12"]

BROKEN = [
    ("http://[::1/whl", "not a usable URL (Invalid IPv6 URL): http://[::1/whl"),
    ("http://user:s3cret@[::1/whl", "not a usable URL (Invalid IPv6 URL): http://user:***@[::1/whl"),
    (
        "http://mirror:99999/whl",
        "not a usable URL (the port must be a number from 1 to 65535): http://mirror:99999/whl",
    ),
    (
        "http://user:s3cret@mirror:65536/whl",
        "not a usable URL (the port must be a number from 1 to 65535): http://user:***@mirror:65536/whl",
    ),
    ("http://mirror:0/whl", "not a usable URL (the port must be a number from 1 to 65535)"),
    ("http://mirror:http/whl", "not a usable URL (the port must be a number from 1 to 65535)"),
    (
        f"http://{LONG_LABEL}.example.com/whl",
        "not a usable host name (each dot-separated label 1-63 characters, "
        f"253 in all): http://{LONG_LABEL}.example.com/whl",
    ),
    ("https://mirror..example.com/whl", "not a usable host name"),
    ("ftp://mirror/whl", "not an http(s) URL: ftp://mirror/whl"),
    ("", "empty: give an http(s) URL such as https://download.pytorch.org/whl"),
]


def _says(message: str, line: str) -> bool:
    """The message is in the line; a message longer than the usage line keeps (values of 80 characters
    and more are cut there, ``... (N characters)``) is compared up to where the value starts."""
    return message in line or (len(message) > 120 and message.split(": http")[0] in line and "characters)" in line)


def _error_line(output: str) -> str:
    lines = [x for x in output.splitlines() if x.startswith("Error: ")]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.parametrize("url, message", BROKEN)
def test_broken_index_url_is_exit_2_in_recommend(url, message):
    r = CliRunner().invoke(cli, ["recommend", *NO_GPU, "--index-url", url])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    line = _error_line(r.output)
    assert line.startswith("Error: Invalid value for '--index-url': ") and _says(message, line)
    assert "s3cret" not in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("url, message", BROKEN)
def test_broken_index_url_is_exit_2_in_index(url, message, tmp_path):
    r = CliRunner().invoke(
        cli, ["index", "cu130", "--index-url", url], env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")}
    )
    assert r.exit_code == 2, r.output
    assert _says(message, _error_line(r.output)) and "s3cret" not in r.output


def test_broken_index_url_from_the_environment_is_masked_too(tmp_path):
    r = CliRunner().invoke(
        cli, ["recommend", *NO_GPU], env={"ENVDOCTOR_INDEX_URL": "http://user:s3cret@mirror:70000/whl"}
    )
    assert r.exit_code == 2, r.output
    assert "http://user:***@mirror:70000/whl" in _error_line(r.output) and "s3cret" not in r.output


def test_broken_index_url_in_table_stale():
    r = CliRunner().invoke(cli, ["table", "--stale", "--index-url", "http://[::1/whl"])
    assert r.exit_code == 2, r.output
    assert "not a usable URL (Invalid IPv6 URL)" in _error_line(r.output)


@pytest.mark.parametrize(
    "url, kept",
    [
        ("http://[::1]:8080/whl/", "http://[::1]:8080/whl"),
        ("https://user:pw@mirror.example.com:443/pytorch/whl", "https://user:pw@mirror.example.com:443/pytorch/whl"),
        ("http://bücher.example/whl", "http://bücher.example/whl"),  # an IDN host encodes fine
        (f"http://{'a' * 63}.example.com/whl", f"http://{'a' * 63}.example.com/whl"),
        ("http://mirror.example.com./whl", "http://mirror.example.com./whl"),  # a fully qualified name
    ],
)
def test_good_index_urls_still_pass(url, kept):
    from envdoctor.clicore import check_index_url

    assert check_index_url(None, None, url) == kept  # type: ignore[arg-type]


@pytest.mark.parametrize("variable", ["PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX"])
def test_a_broken_index_url_in_pip_or_uv_configuration_is_said_not_a_traceback(variable, tmp_path):
    """Was ValueError 'Invalid IPv6 URL', exit 3 (the audit of issue 12): the configured URL never
    passed the check --index-url gets. Now it is named, masked, and the table's base is used."""
    env = {
        variable: "http://u:pw1@[::1/whl/cu128",
        "ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"),
        "HOME": str(tmp_path),
        "PIP_CONFIG_FILE": "/dev/null",
    }
    r = CliRunner().invoke(cli, ["index", "cu128", "--offline"], env=env)
    assert r.exit_code in (0, 1), r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert f"{variable}: http://u:***@[::1/whl/cu128 is not a usable URL (Invalid IPv6 URL)" in r.output
    assert "pw1" not in r.output and "Traceback" not in r.output
    from envdoctor.probes.context import Context
    from envdoctor.probes.indexconf import configured_torch_base
    from envdoctor.wheels import default_choice

    base, source = default_choice(env, configured_torch_base(Context(env=env)))
    assert base == "https://download.pytorch.org/whl" and "is not a usable URL" in source


def test_a_broken_envdoctor_index_url_names_the_variable_not_the_option():
    r = CliRunner().invoke(cli, ["recommend", *NO_GPU], env={"ENVDOCTOR_INDEX_URL": "http://[::1/whl"})
    assert r.exit_code == 2
    assert _error_line(r.output).startswith("Error: ENVDOCTOR_INDEX_URL (the variable, not an option) is not a usable")
