"""The disk cache: hits, expiry, ETag revalidation, --refresh, --offline, atomic files."""

from __future__ import annotations

import json
import time

import pytest

from envdoctor.wheels import IndexClient, Target, default_cache_dir
from envdoctor.wheels.cache import CachedPage, PageCache
from envdoctor.wheels.pages import FileLink, Page
from tests.indexserver import IndexServer

CP312 = Target.for_python("3.12", platform="manylinux_2_28_x86_64")


@pytest.fixture(scope="module")
def server():
    with IndexServer() as s:
        yield s


@pytest.fixture(autouse=True)
def fresh(server):
    server.reset()


def client(server, cache_dir, mode=None, **kw):
    kw.setdefault("retries", 0)
    return IndexClient(server.url(mode), cache_dir=cache_dir, **kw)


def test_hit_makes_no_request(server, tmp_path):
    first = client(server, tmp_path).variant("cu128", "torch", CP312)
    assert not first.from_cache and server.count() == 1
    again = client(server, tmp_path).variant("cu128", "torch", CP312)
    assert server.count() == 1
    assert again.from_cache and again.source == "cache" and again.age < 60
    assert again.compatible == first.compatible


def test_missing_index_is_remembered_too(server, tmp_path):
    client(server, tmp_path).variant("cu999", "torch", CP312)
    assert server.count() == 2  # package page, then the variant root
    assert client(server, tmp_path).variant("cu999", "torch", CP312).exists is False
    assert server.count() == 2


def test_expired_entry_is_revalidated_with_etag(server, tmp_path):
    client(server, tmp_path).variant("cu128", "torch", CP312)
    listing = client(server, tmp_path, ttl=0).variant("cu128", "torch", CP312)
    path, headers = server.requests[-1]
    assert headers.get("If-None-Match", "").startswith('"')
    assert headers.get("If-Modified-Since") == "Fri, 01 Aug 2025 00:00:00 GMT"
    assert server.statuses[-1] == (path, 304)
    assert listing.from_cache and listing.note == "revalidated (304)" and listing.found
    # the revalidation restarted the clock: within the TTL again, no request at all
    client(server, tmp_path, ttl=60).variant("cu128", "torch", CP312)
    assert server.count() == 2


def test_expired_without_validators_refetches(server, tmp_path):
    client(server, tmp_path, "noetag").variant("cu128", "torch", CP312)
    listing = client(server, tmp_path, "noetag", ttl=0).variant("cu128", "torch", CP312)
    assert "If-None-Match" not in server.requests[-1][1]
    assert server.statuses[-1][1] == 200 and not listing.from_cache


def test_refresh_bypasses_a_fresh_cache(server, tmp_path):
    client(server, tmp_path).variant("cu128", "torch", CP312)
    listing = client(server, tmp_path, refresh=True).variant("cu128", "torch", CP312)
    assert server.count() == 2 and not listing.from_cache
    assert "If-None-Match" not in server.requests[-1][1]


def test_offline_with_a_cache(server, tmp_path):
    client(server, tmp_path).variant("cu121", "torch", CP312)
    server.reset()
    listing = client(server, tmp_path, offline=True, ttl=0).variant("cu121", "torch", CP312)
    assert server.count() == 0
    assert listing.offline and listing.from_cache and listing.newest == "2.5.1"


def test_offline_without_a_cache(server, tmp_path):
    listing = client(server, tmp_path, offline=True).variant("cu121", "torch", CP312)
    assert server.count() == 0
    assert listing.exists is None and listing.offline and listing.source == "none"
    assert listing.error == f"offline, and {server.url()}/cu121/torch/ is not in the cache"


def test_stale_cache_answers_when_the_network_fails(tmp_path):
    with IndexServer() as gone:
        url = gone.url()
        IndexClient(url, cache_dir=tmp_path).variant("cu121", "torch", CP312)
    listing = IndexClient(url, cache_dir=tmp_path, ttl=0, retries=0).variant("cu121", "torch", CP312)
    assert listing.found and listing.from_cache
    assert "connection refused" in listing.note and "answered from the cache" in listing.note


def test_files_are_atomic_and_hold_no_credentials(server, tmp_path):
    url = server.url("auth", "ada:s3cret")
    IndexClient(url, cache_dir=tmp_path).variant("cu128", "torch", CP312)
    files = list((tmp_path / "index").iterdir())
    assert files and all(f.suffix == ".json" and not f.name.startswith(".tmp") for f in files)
    for f in files:
        text = f.read_text()
        assert "s3cret" not in text and "ada:***@" in text


def test_unreadable_entry_counts_as_missing(server, tmp_path):
    cache = PageCache(tmp_path)
    url = server.url() + "/cu128/torch/"
    cache.path_for(url).parent.mkdir(parents=True)
    cache.path_for(url).write_text("{not json")
    assert cache.get(url) is None
    assert client(server, tmp_path).variant("cu128", "torch", CP312).found
    assert json.loads(cache.path_for(url).read_text())["status"] == 200


def test_put_and_get_round_trip(tmp_path):
    cache = PageCache(tmp_path)
    url = "https://u:p@m.example/whl/cpu/torch/"
    page = Page(
        url,
        "html",
        files=(
            FileLink(
                "torch-2.9.1+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
                "https://u:p@m.example/whl/cpu/torch-2.9.1%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl",
                (("sha256", "ab"),),
                ">=3.10",
                True,
                None,
            ),
            FileLink("torch-2.9.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl", "u", yanked="bad"),
        ),
    )
    assert cache.put(url, CachedPage(url, 200, time.time(), page, '"e"', None))
    got = cache.get(url)
    assert got.url == "https://u:***@m.example/whl/cpu/torch/" and got.etag == '"e"'
    assert got.page.files[0].requires_python == ">=3.10" and got.page.files[0].core_metadata
    assert got.page.files[0].hashes == (("sha256", "ab"),)
    assert got.page.files[1].yanked == "bad"
    assert "u:p@" not in cache.path_for(url).read_text()
    assert got.age() < 5


def test_unwritable_cache_does_not_fail_the_query(server, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert client(server, blocker).variant("cu128", "torch", CP312).found


def test_default_cache_dir():
    assert str(default_cache_dir({"ENVDOCTOR_CACHE_DIR": "/x/c", "XDG_CACHE_HOME": "/y"})) == "/x/c"
    assert str(default_cache_dir({"XDG_CACHE_HOME": "/y"})) == "/y/envdoctor"
    assert default_cache_dir({}).parts[-2:] == (".cache", "envdoctor")


@pytest.mark.parametrize(
    "content",
    [
        "9",
        "[" * 100000,
        '{"format": 2, "page": 7, "url": "u"}',
        '"text"',
        '{"format": 2, "url": "u", "status": 200, "fetched_at": "x"}',
    ],
)
def test_a_cache_entry_of_9_or_deep_json_counts_as_missing(server, tmp_path, content):
    """Was AttributeError ('int' has no .get) and RecursionError: exit 3 for index/recommend."""
    client(server, tmp_path).variant("cu128", "torch", CP312)
    files = list((tmp_path / "index").glob("*.json"))
    assert files
    for f in files:
        f.write_text(content)
    listing = client(server, tmp_path).variant("cu128", "torch", CP312)
    assert listing.found and not listing.from_cache  # fetched again, as for a missing entry
