"""Pure parsing of index pages and the wheel analysis, against the recorded page shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.wheels import PageError, Target, analyze, parse_html, parse_json, parse_page
from envdoctor.wheels.pages import FileLink, variant_names

WHL = Path(__file__).parent / "fixtures" / "pytorch-index" / "whl"
BASE = "https://download.pytorch.org/whl"
CP312 = Target.for_python("3.12", platform="manylinux_2_28_x86_64")


def page(variant: str, package: str = "", kind: str = "html") -> str:
    folder = WHL / variant / package if package else WHL / variant
    return (folder / f"index.{kind}").read_text()


def test_dotdot_relative_links_resolve_and_plus_is_unquoted():
    p = parse_html(page("cu128", "torch"), f"{BASE}/cu128/torch/")
    first = p.files[0]
    assert p.format == "html"
    assert first.filename == "torch-2.7.0+cu128-cp310-cp310-manylinux_2_28_aarch64.whl"
    # "../../whl/cu128/x" from ".../whl/cu128/torch/" lands on ".../whl/whl/cu128/x": the client
    # only relies on the file name, which is right whatever the resolved path.
    assert first.url.endswith("/whl/cu128/torch-2.7.0%2Bcu128-cp310-cp310-manylinux_2_28_aarch64.whl")
    assert first.hashes[0][0] == "sha256" and len(first.hashes[0][1]) == 64
    assert first.core_metadata is True


def test_root_relative_links_of_the_old_generator():
    p = parse_html(page("cu117", "torch"), f"{BASE}/cu117/torch/")
    assert p.files[0].url.startswith("https://download.pytorch.org/whl/cu117/torch-1.13.0%2Bcu117-")
    assert p.files[0].core_metadata is False
    assert len(p.files) == 32


def test_absolute_r2_links():
    p = parse_html(page("cu130", "torch"), "http://mirror.example/whl/cu130/torch/")
    assert all(f.url.startswith("https://download-r2.pytorch.org/whl/cu130/") for f in p.files)


def test_json_page_equals_html_page():
    html = parse_html(page("cu121", "torch"), f"{BASE}/cu121/torch/")
    js = parse_json(page("cu121", "torch", "json"), f"{BASE}/cu121/torch/")
    assert js.format == "json" and js.api_version == "1.1"
    assert [f.filename for f in js.files] == [f.filename for f in html.files]
    assert js.files[0].url == f"{BASE}/cu121/torch-2.1.0%2Bcu121-cp310-cp310-linux_x86_64.whl"
    assert js.files[0].requires_python == ">=3.10"
    assert js.files[0].core_metadata is True


def test_root_pages_list_projects_and_variant_names():
    assert parse_html(page("cu121"), f"{BASE}/cu121/").projects == ("torch", "torchvision")
    assert parse_json(page("cu121", kind="json"), f"{BASE}/cu121/").projects == ("torch", "torchvision")
    base = parse_html(page(""), f"{BASE}/")
    assert variant_names(base) == ()  # the real base page lists packages, not variants
    autoindex = (
        '<html><body><pre><a href="../">../</a>\n<a href="cu118/">cu118/</a>\n'
        '<a href="rocm6.2.4/">rocm6.2.4/</a>\n<a href="cpu/">cpu/</a>\n'
        '<a href="torch/">torch/</a></pre></body></html>'
    )
    assert variant_names(parse_html(autoindex, "http://m/whl/")) == ("cu118", "rocm6.2.4", "cpu")


def test_pep503_attributes_entities_yanked_and_base_tag():
    text = (
        '<html><head><base href="https://files.example/pkgs/"></head><body>'
        '<a href="torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ab" '
        'data-requires-python="&gt;=3.9" data-yanked="broken CUDA">t</a>'
        '<a href="torch-2.7.0-cp312-cp312-manylinux_2_28_x86_64.whl" data-core-metadata="true">t</a>'
        "</body></html>"
    )
    files = parse_html(text, "https://index.example/simple/torch/").files
    assert files[0].url == "https://files.example/pkgs/torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert files[0].requires_python == ">=3.9"
    assert files[0].yanked == "broken CUDA"
    assert files[1].yanked is None and files[1].core_metadata is True


def test_an_empty_package_page_is_an_index():
    assert parse_html("<!DOCTYPE html><html><body><h1>Links for torch</h1></body></html>", BASE).files == ()


@pytest.mark.parametrize(
    "text, ctype, reason",
    [
        ("\x1f\x8b\x08\x00 binary", "text/html", "binary"),
        ("Welcome to nginx! It works.", "text/html", "no HTML and no links"),
        (page("cu121", "torch")[:3000], "text/html", "truncated"),
        ('<p>links</p>\n<a href="torch-2.1.0-cp310-cp310-linux_x86', "text/html", "truncated inside a tag"),
        ('{"meta": {"api-version": "1.1"}, "files": [', "application/vnd.pypi.simple.v1+json", "JSON does not parse"),
        ('{"files": []}', "application/vnd.pypi.simple.v1+json", "without 'meta'"),
        ('{"meta": {"api-version": "2.0"}, "files": []}', "application/vnd.pypi.simple.v1+json", "unsupported"),
        ('<?xml version="1.0"?><Error><Code>AccessDenied</Code></Error>', "application/xml", "Content-Type"),
    ],
)
def test_not_an_index(text, ctype, reason):
    with pytest.raises(PageError, match=reason):
        parse_page(text, f"{BASE}/cu121/torch/", ctype)


def test_json_sniffed_when_the_content_type_is_vague():
    assert parse_page(page("cu121", "torch", "json"), f"{BASE}/cu121/torch/", None).format == "json"


# -- analyze: hand-written expectations ------------------------------------------------------


def files_of(variant: str) -> tuple:
    return parse_html(page(variant, "torch"), f"{BASE}/{variant}/torch/").files


def test_cu117_has_nothing_for_cp312():
    versions, compatible, pythons, platforms = analyze(files_of("cu117"), "torch", CP312)
    assert versions == ("1.13.0", "1.13.1", "2.0.0", "2.0.1")
    assert compatible == ()
    assert pythons == ("cp37", "cp38", "cp39", "cp310", "cp311")
    assert platforms == ("win_amd64",)


def test_cu117_for_cp311_has_the_2_0_series_only():
    cp311 = Target.for_python("3.11", platform="manylinux_2_28_x86_64")
    _, compatible, pythons, _ = analyze(files_of("cu117"), "torch", cp311)
    assert compatible == ("2.0.0", "2.0.1")
    assert "cp311" not in pythons


def test_cu121_for_cp312_starts_at_2_2():
    _, compatible, _, _ = analyze(files_of("cu121"), "torch", CP312)
    assert compatible == ("2.2.0", "2.2.1", "2.2.2", "2.3.0", "2.3.1", "2.4.0", "2.4.1", "2.5.0", "2.5.1")


def test_old_glibc_machine_cannot_use_manylinux_2_28():
    centos7 = Target.for_python("3.12", platform="manylinux_2_17_x86_64")
    _, compatible, _, platforms = analyze(files_of("cu130"), "torch", centos7)
    assert compatible == ()
    assert "manylinux_2_28_x86_64" in platforms


def test_free_threaded_python_needs_t_wheels():
    ft = Target.for_python("3.14t", platform="manylinux_2_28_x86_64")
    assert ft.short == "cp314t"
    _, compatible, pythons, _ = analyze(files_of("cu128"), "torch", ft)
    assert compatible == ("2.9.0", "2.9.1")
    assert "cp314" in pythons and "cp313t" in pythons


def test_cpu_index_mixes_local_labels_and_macos_wheels():
    mac = Target.for_python("3.12", platform="macosx_14_0_arm64")
    versions, compatible, _, _ = analyze(files_of("cpu"), "torch", mac)
    assert versions == ("2.8.0", "2.9.1") and compatible == ("2.8.0", "2.9.1")


def test_requires_python_yanked_foreign_and_bad_names():
    files = [
        FileLink("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl", "u", requires_python=">=3.13"),
        FileLink("torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl", "u", yanked=""),
        FileLink("torch-2.7.0-cp312-cp312-manylinux_2_28_x86_64.whl", "u", requires_python="garbage!"),
        FileLink("torchvision-0.22.0-cp312-cp312-manylinux_2_28_x86_64.whl", "u"),
        FileLink("torch-notaversion-cp312.whl", "u"),
        FileLink("torch-2.6.0.tar.gz", "u"),
    ]
    versions, compatible, _, _ = analyze(files, "torch", CP312)
    assert versions == ("2.6.0", "2.7.0", "2.8.0", "2.9.0")
    assert compatible == ("2.7.0",)
