"""Every index request is bounded as a whole, and pages are bounded in size (a real 127.0.0.1 server).

Issue 12: a slow-drip index server (1 byte every 0.5 s) made ``index`` and ``recommend`` never
finish (only each read was timed); a 10 MB index page made ``recommend`` hang (the page was read
from the cache and analysed again for every version it asked about).
"""

from __future__ import annotations

import shutil
import time

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.wheels import IndexClient, Target
from envdoctor.wheels import client as client_module
from tests.indexserver import FIXTURE_ROOT, IndexServer

CP312 = Target.for_python("3.12", platform="manylinux_2_28_x86_64")
MACHINE = [
    "--gpu",
    "H100",
    "--driver",
    "580.95.05",
    "--os",
    "ubuntu:24.04",
    "--python-version",
    "3.12",
    "--route",
    "system",
]


@pytest.fixture(scope="module")
def server():
    with IndexServer(drip=0.5) as s:
        yield s


def test_slow_drip_page_is_cut_off_at_the_timeout(server, tmp_path):
    started = time.monotonic()
    listing = IndexClient(server.url("drip"), cache_dir=tmp_path, timeout=1.5, retries=1, backoff=0).variant(
        "cu121", "torch", CP312
    )
    took = time.monotonic() - started
    assert listing.exists is None and took < 5, took
    assert f"127.0.0.1:{server.port} did not send the whole page within 1.5 s" in listing.error
    assert "--timeout gives it longer" in listing.error


def test_slow_drip_without_a_content_length_says_the_page_was_too_slow_not_truncated(server, tmp_path):
    """The audit of issue 12: with no Content-Length the shut socket ends the body like an end of
    file, and the cut page was reported as "not a complete index page (truncated inside a tag)"."""
    listing = IndexClient(server.url("dripnolength"), cache_dir=tmp_path, timeout=1.5, retries=0, backoff=0).variant(
        "cu121", "torch", CP312
    )
    assert listing.exists is None
    assert f"127.0.0.1:{server.port} did not send the whole page within 1.5 s" in listing.error
    assert "truncated" not in listing.error


def test_slow_drip_headers_are_cut_off_at_the_timeout(server, tmp_path):
    started = time.monotonic()
    listing = IndexClient(server.url("driphead"), cache_dir=tmp_path, timeout=1.5, retries=2, backoff=0).variant(
        "cu121", "torch", CP312
    )
    took = time.monotonic() - started
    assert listing.exists is None and took < 5, took  # retries included: the deadline is per request
    assert f"127.0.0.1:{server.port} did not answer within 1.5 s" in listing.error


def test_index_command_against_a_slow_drip_server_finishes(server, tmp_path):
    started = time.monotonic()
    r = CliRunner().invoke(
        cli,
        ["index", "cu121", "--python-version", "3.12", "--index-url", server.url("drip"), "--timeout", "1"],
        env={"ENVDOCTOR_CACHE_DIR": str(tmp_path)},
    )
    assert r.exit_code == 2 and time.monotonic() - started < 5, r.output
    assert "did not send the whole page within 1 s" in r.output


def test_recommend_against_a_slow_drip_server_finishes(server, tmp_path):
    started = time.monotonic()
    r = CliRunner().invoke(
        cli,
        ["recommend", *MACHINE, "--index-url", server.url("drip"), "--timeout", "1"],
        env={"ENVDOCTOR_CACHE_DIR": str(tmp_path)},
    )
    took = time.monotonic() - started
    assert r.exit_code in (0, 1) and took < 20, (took, r.output)


def _big_index(tmp_path, megabytes):
    """The fixture index with its cu128 and cu130 torch pages padded to ``megabytes`` with old
    versions (the real anchors kept, so the newest torch is still there)."""
    root = tmp_path / "index"
    shutil.copytree(FIXTURE_ROOT, root)
    for variant in ("cu128", "cu130"):
        page = root / "whl" / variant / "torch" / "index.html"
        real = page.read_text()
        head, tail = real.split("</body>")
        filler = (
            '<a href="https://download-r2.pytorch.org/whl/{v}/torch-0.{i}.{j}%2B{v}-cp312-cp312-'
            "manylinux_2_28_x86_64.whl#sha256=" + "0" * 64 + '">torch-0.{i}.{j}+{v}-cp312-cp312-'
            "manylinux_2_28_x86_64.whl</a><br/>\n"
        )
        rows, size, n = [], len(real), 0
        while size < megabytes * 1024 * 1024:
            row = filler.format(v=variant, i=n // 1000, j=n % 1000)
            rows.append(row)
            size += len(row)
            n += 1
        page.write_text(head + "".join(rows) + "</body>" + tail)
        (page.parent / "index.json").unlink()
    return root


def test_recommend_with_a_10_mb_index_page_reads_each_page_once(tmp_path):
    with IndexServer(root=_big_index(tmp_path, 10)) as big:
        started = time.monotonic()
        r = CliRunner().invoke(
            cli,
            ["recommend", *MACHINE, "--index-url", big.url(), "--json"],
            env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")},
        )
        took = time.monotonic() - started
        assert r.exit_code == 0, r.output
        assert big.count("/cu130/torch/") == 1 and took < 60, took  # was: no end (each question re-read it)
    assert "torch==2.11.0+cu130" in r.output


def test_page_over_the_limit_is_refused_with_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(client_module, "MAX_PAGE_BYTES", 2 * 1024 * 1024)  # so the test page stays small
    with IndexServer(root=_big_index(tmp_path, 3)) as big:
        listing = IndexClient(big.url(), cache_dir=tmp_path / "cache", retries=0).variant("cu130", "torch", CP312)
    assert listing.exists is None
    assert "a page of 3 MiB: envdoctor reads index pages up to 2 MiB" in listing.error
    assert "is this URL an index?" in listing.error


def test_the_same_listing_is_asked_once(tmp_path):
    with IndexServer() as s:
        client = IndexClient(s.url(), cache_dir=tmp_path / "cache", refresh=True)
        first = client.variant("cu121", "torch", CP312)
        assert client.variant("cu121", "torch", CP312) is first
        assert s.count("/cu121/torch/") == 1
