"""Index answers that are no wheel listing (issue 27), from the local index server on 127.0.0.1:
a redirect to a malformed IPv6-literal URL ("Invalid IPv6 URL" ValueError), ``charset=undefined``
and ``charset=idna`` (UnicodeError), PEP 691 JSON with a 5,000-digit integer. ``index`` cannot tell
(exit 2, as documented for it, with the reason on the variant's line, no "internal error");
``recommend`` says the live check failed and lets the table decide."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.wheels.client import _decode
from envdoctor.wheels.pages import PageError
from tests.indexserver import IndexServer

CP312 = ["--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"]
HOSTILE = {
    "badredirect": "an answer envdoctor cannot follow (Invalid IPv6 URL)",
    "charsetundefined": "a page in charset=undefined, which cannot be read",
    "charsetidna": "a page in charset=idna, which cannot be read",
    "bigint": "a number of 5000 digits",
}


@pytest.fixture(scope="module")
def server():
    with IndexServer() as s:
        yield s


def invoke(tmp_path, *args):
    env = {
        "ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"),
        "ENVDOCTOR_INDEX_URL": None,
        "ENVDOCTOR_INDEX_RETRIES": "0",
        "ENVDOCTOR_INDEX_BACKOFF": "0",
    }
    return CliRunner().invoke(cli, list(args), env=env)


@pytest.mark.parametrize("mode", sorted(HOSTILE))
def test_index_of_an_answer_that_is_no_wheel_listing_cannot_tell(server, tmp_path, mode):
    r = invoke(tmp_path, "index", "cu128", *CP312, "--index-url", server.url(mode))
    assert r.exit_code == 2, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output
    line = next(x for x in r.output.splitlines() if x.startswith("cu128: "))
    assert HOSTILE[mode] in line and ("not a wheel listing" in line or "not an index page" in line)


@pytest.mark.parametrize("mode", sorted(HOSTILE))
def test_recommend_of_an_answer_that_is_no_wheel_listing_falls_back_to_the_table(server, tmp_path, mode):
    r = invoke(tmp_path, "recommend", "--route", "system", "--index-url", server.url(mode))
    assert r.exit_code == 0, r.output
    assert "internal error" not in r.output and "live check failed" in r.output and HOSTILE[mode] in r.output


def test_a_charset_that_is_no_text_encoding_is_no_listing():
    with pytest.raises(PageError, match="charset=base64, which is no text encoding"):
        _decode(b"PGh0bWw+", "text/html; charset=base64")
    assert _decode(b"caf\xe9", "text/html; charset=nosuchcodec") == "caf\ufffd"
    assert _decode(b"caf\xe9", 'text/html; charset="latin-1"') == "caf\xe9"


def test_a_cache_entry_of_a_url_with_a_byte_that_is_not_utf8_is_stored_and_read(tmp_path):
    """The entry's file name hashed the URL's strict UTF-8 (UnicodeEncodeError on ``caf\\xe9``)."""
    import time

    from envdoctor.wheels.cache import CachedPage, PageCache

    cache = PageCache(tmp_path)
    url = "http://127.0.0.1:9/caf\udce9/whl/?token=s3cretval"
    assert cache.put(url, CachedPage(url, 404, time.time()))
    entry = cache.get(url)
    assert entry is not None and entry.status == 404 and "s3cretval" not in entry.url
    assert all("s3cretval" not in p.read_text() for p in tmp_path.rglob("*.json"))
