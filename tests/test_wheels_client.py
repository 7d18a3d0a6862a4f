"""IndexClient against a real local HTTP server shaped like download.pytorch.org/whl."""

from __future__ import annotations

import socket
import time
from types import SimpleNamespace

import pytest

from envdoctor.wheels import (
    IndexClient,
    IndexUnavailable,
    Target,
    VariantListing,
    exit_code,
    listing_from_table,
    upstream_newer,
)
from tests.indexserver import IndexServer

CP312 = Target.for_python("3.12", platform="manylinux_2_28_x86_64")


@pytest.fixture(scope="module")
def server():
    with IndexServer(slow=1.5) as s:
        yield s


@pytest.fixture
def index(server, tmp_path):
    """A client factory on a mode of the server, with small retries and its own cache."""
    server.reset()

    def make(mode=None, userinfo=None, **kw):
        kw.setdefault("retries", 1)
        kw.setdefault("backoff", 0.0)
        kw.setdefault("timeout", 2.0)
        kw.setdefault("cache_dir", tmp_path / "cache")
        return IndexClient(server.url(mode, userinfo), **kw)

    return make


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_three_variants_of_issue_6(index, server):
    cu117, cu121, cu130 = index().variants(["cu117", "cu121", "cu130"], "torch", CP312)
    base = server.url()
    assert cu117 == VariantListing(
        "cu117",
        f"{base}/cu117",
        exists=True,
        status=200,
        versions=("1.13.0", "1.13.1", "2.0.0", "2.0.1"),
        compatible=(),
        other_pythons=("cp37", "cp38", "cp39", "cp310", "cp311"),
        package="torch",
        other_platforms=("win_amd64",),
        source="index",
        format="html",
    )
    assert cu121.compatible[0] == "2.2.0" and cu121.newest == "2.5.1"
    assert cu130.versions == ("2.9.0", "2.9.1", "2.10.0", "2.11.0")  # by Version, not by text
    assert cu130.newest == "2.11.0" and cu130.found
    assert exit_code((cu117, cu121, cu130)) == 1
    assert exit_code((cu121, cu130)) == 0
    assert exit_code((cu117, cu121), any_is_enough=True) == 0


def test_json_when_offered_same_answer_as_html(index, server):
    html = index().variant("cu128", "torch", CP312)
    js = index("pep691", cache_dir=None, cache=False).variant("cu128", "torch", CP312)
    assert js.format == "json" and html.format == "html"
    assert (js.versions, js.compatible, js.other_pythons) == (html.versions, html.compatible, html.other_pythons)
    accept = [h.get("Accept") for p, h in server.requests if p.startswith("/pep691/")]
    assert accept and accept[0].startswith("application/vnd.pypi.simple.v1+json")


def test_torchvision_and_a_package_the_variant_lacks(index):
    client = index()
    assert client.variant("cu121", "torchvision", CP312).newest == "0.19.1"
    audio = client.variant("cu121", "torchaudio", CP312)
    assert audio.exists is True and audio.versions == () and "no torchaudio page" in audio.note
    assert exit_code((audio,)) == 1


@pytest.mark.parametrize("mode, status", [(None, 404), ("s3", 403)])
def test_no_such_index(index, mode, status):
    listing = index(mode).variant("cu999", "torch", CP312)
    assert listing.exists is False and listing.status == status
    assert listing.error.endswith(f"/cu999: no such index (HTTP {status})")
    assert exit_code((listing,)) == 1


def test_500_then_success_is_retried(index, server):
    listing = index("flaky").variant("cu121", "torch", CP312)
    assert listing.found
    assert [s for p, s in server.statuses if p == "/flaky/whl/cu121/torch/"] == [500, 200]


def test_5xx_that_persists(index, server):
    listing = index("down", retries=2).variant("cu121", "torch", CP312)
    assert listing.exists is None and listing.status == 503
    assert "server error (HTTP 503), still failing after retries" in listing.error
    assert server.count("/down/whl/cu121/torch/") == 3
    assert exit_code((listing,)) == 2


def test_timeout(index):
    started = time.monotonic()
    listing = index("slow", timeout=0.3, retries=0).variant("cu121", "torch", CP312)
    assert time.monotonic() - started < 1.4
    assert listing.exists is None and "did not answer within 0.3 s" in listing.error


@pytest.mark.parametrize(
    "mode, words",
    [
        ("garbage", "not an index page (binary data)"),
        ("badjson", "JSON does not parse"),
        ("truncated", "truncated"),
        ("cut", "was cut off (truncated)"),
        ("loop", "redirect loop"),
    ],
)
def test_broken_answers_are_one_line(index, mode, words):
    listing = index(mode, retries=0).variant("cu121", "torch", CP312)
    assert listing.exists is None and words in listing.error
    assert "\n" not in listing.error and "Traceback" not in listing.error
    assert exit_code((listing,)) == 2


def test_redirect_is_followed(index):
    assert index("moved").variant("cu130", "torch", CP312).newest == "2.11.0"


def test_connection_refused():
    port = closed_port()
    client = IndexClient(f"http://127.0.0.1:{port}/whl", cache=False, retries=0)
    listing = client.variant("cu121", "torch", CP312)
    assert listing.error == f"connection refused by 127.0.0.1:{port} (http://127.0.0.1:{port}/whl/cu121/torch/)"


def test_dns_failure(monkeypatch):
    real = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        if host == "download.pytorch.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    client = IndexClient("https://download.pytorch.example/whl", cache=False, retries=0)
    listing = client.variant("cu128", "torch", CP312)
    assert listing.error.startswith("cannot resolve host download.pytorch.example (DNS failure)")


def test_tls_error(server):
    client = IndexClient(f"https://127.0.0.1:{server.port}/whl", cache=False, retries=0)
    listing = client.variant("cu128", "torch", CP312)
    assert listing.error.startswith(f"TLS error talking to 127.0.0.1:{server.port}: ")
    assert "\n" not in listing.error


def test_credentials_work_and_never_show(index, server):
    ok = index("auth", "ada:s3cret").variant("cu128", "torch", CP312)
    assert ok.found and ok.url == f"http://ada:***@127.0.0.1:{server.port}/auth/whl/cu128"
    bad = index("auth", "ada:wrongpass", cache=False).variant("cu128", "torch", CP312)
    assert "HTTP 401" in bad.error and "wrongpass" not in bad.error and "ada:***@" in bad.error
    refused = IndexClient(f"http://ada:s3cret@127.0.0.1:{closed_port()}/whl", cache=False, retries=0)
    assert "s3cret" not in refused.variant("cu128").error
    assert "s3cret" not in repr(ok) + repr(bad)


def test_proxy_from_the_environment(server, monkeypatch):
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
    server.reset()
    listing = IndexClient("http://index.behind-proxy.example/whl", cache=False).variant("cu121", "torch", CP312)
    assert listing.found
    assert server.requests[0][0] == "http://index.behind-proxy.example/whl/cu121/torch/"


def test_concurrent_variants_take_about_one_round_trip(tmp_path):
    with IndexServer(latency=0.2) as slow:
        client = IndexClient(slow.url(), cache=False)
        started = time.monotonic()
        listings = client.variants(["cu117", "cu121", "cu128", "cu130", "cpu", "rocm6.2"], "torch", CP312)
        elapsed = time.monotonic() - started
    assert all(item.exists for item in listings)
    assert elapsed < 0.2 * 3, elapsed  # sequential would be 6 x 0.2 s


def test_root_variants_and_all(index, server):
    assert index().root_variants() == ()  # the real base page lists packages
    client = index("autoindex")
    assert client.root_variants() == ("cpu", "cu117", "cu121", "cu128", "cu130", "rocm6.2")
    listings = client.all_variants(["cu130", "cu102"], "torch", CP312)
    assert [item.variant for item in listings] == ["cu130", "cu102", "cpu", "cu117", "cu121", "cu128", "rocm6.2"]
    assert listings[1].exists is False


def test_has_wheel(index):
    client = index()
    assert client.has_wheel("cu121", "torch", "2.5.1", CP312) is True
    assert client.has_wheel("cu121", "torch", "2.5.1+cu121", CP312) is True
    assert client.has_wheel("cu121", "torch", "2.1.0", CP312) is False
    assert client.has_wheel("cu999", "torch", "2.1.0", CP312) is False
    assert index("down", retries=0).has_wheel("cu121", "torch", "2.5.1", CP312) is None


def test_bad_variant_names_are_refused(index):
    for name in ("../etc", "cu128/../../x", "", "CU 128"):
        with pytest.raises(ValueError):
            index().variant(name)


def _tv(name: str, platforms=("linux_x86_64", "win_amd64")) -> SimpleNamespace:
    return SimpleNamespace(name=name, platforms=platforms)


#: Shaped like envdoctor.table's Table (index_base, variants, torch_releases), hand-written.
FAKE_TABLE = SimpleNamespace(
    index_base="https://download.pytorch.org/whl",
    variants=(SimpleNamespace(name="cpu", kind="cpu"), SimpleNamespace(name="cu121", kind="cuda")),
    torch_releases=(
        SimpleNamespace(
            version="2.8.0",
            pythons=("3.9", "3.10", "3.11", "3.12", "3.13", "3.13t"),
            variants=(_tv("cpu", ("linux_x86_64", "macosx_arm64")),),
        ),
        SimpleNamespace(
            version="2.4.1", pythons=("3.8", "3.9", "3.10", "3.11", "3.12"), variants=(_tv("cpu"), _tv("cu121"))
        ),
        SimpleNamespace(version="2.1.0", pythons=("3.8", "3.9", "3.10", "3.11"), variants=(_tv("cu121"),)),
    ),
)


def test_upstream_newer(index):
    assert upstream_newer(FAKE_TABLE, index(), "cpu") == ("2.9.1",)
    with pytest.raises(IndexUnavailable, match="HTTP 503"):
        upstream_newer(FAKE_TABLE, index("down", retries=0), "cpu")


def test_listing_from_table_when_offline_and_uncached(index):
    blank = index(offline=True).variant("cu121", "torch", CP312)
    assert blank.source == "none" and blank.offline and "not in the cache" in blank.error
    listing = listing_from_table(FAKE_TABLE, blank, CP312)
    assert listing.source == "table" and listing.exists is True
    assert listing.versions == ("2.1.0", "2.4.1") and listing.compatible == ("2.4.1",)
    unknown = index(offline=True).variant("cu999", "torch", CP312)
    unknown_offline = listing_from_table(FAKE_TABLE, unknown, CP312)
    assert unknown_offline.source == "none" and unknown_offline.exists is None
    assert unknown_offline.error == (
        "offline: not in the cache, and envdoctor's table knows no variant cu999 "
        "(run without --offline to ask the index)"
    )
    cpu = index(offline=True).variant("cpu", "torch", CP312)
    assert listing_from_table(FAKE_TABLE, cpu, CP312).compatible == ("2.4.1", "2.8.0")
    mac = Target.for_python("3.12", platform="macosx_14_0_arm64")
    assert listing_from_table(FAKE_TABLE, cpu, mac).compatible == ("2.8.0",)
    win_ft = Target.for_python("3.13t", platform="win_amd64")
    assert listing_from_table(FAKE_TABLE, cpu, win_ft).compatible == ()
    linux_ft = Target.for_python("3.13t", platform="manylinux_2_28_x86_64")
    assert listing_from_table(FAKE_TABLE, cpu, linux_ft).compatible == ("2.8.0",)
