"""Issue 24 in a real browser: every page opens in headless Chromium with no console message, shows
its verdict once its script ran, the fleet table sorts and filters (through the address's #sort= and
#filter=, which a click does the same way), a screenshot of each page is kept (the test's tmp_path),
and a 1,000-node fleet page loads within the stated bound."""

from __future__ import annotations

import re

import pytest

from tests.browser import open_page, screenshot
from tests.htmlpages import PAGES, fleet_of

#: A 1,000-node fleet page (about 4.1 MB) must be ready, its script run, within this many
#: milliseconds of the browser starting to read it. Measured on the 2-core CI machine: 1.2-1.6 s
#: when it is quiet, up to 9.5 s while eight other test runs share its cores; the bound leaves room.
FLEET_1000_READY_MS = 15000


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_page_opens_without_a_console_message_and_shows_its_verdict(name, tmp_path):
    p = PAGES[name](tmp_path)
    path = tmp_path / f"{name}.html"
    path.write_text(p.html)
    opened = open_page(path)
    assert opened.console == []
    assert 'data-ready="1"' in opened.dom  # the page's script ran to its end
    verdict = re.search(r'<div class="verdict[^"]*" id="verdict"[^>]*>(.*?)</div>', opened.dom, re.S)
    assert verdict and p.verdict in re.sub(r"<[^>]+>|\s+", " ", verdict.group(1).replace("&amp;", "&"))
    png = screenshot(path, tmp_path / f"{name}.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_console_error_is_seen(tmp_path):
    """The check above can fail: a page whose script throws is caught."""
    p = PAGES["fit"](tmp_path)
    path = tmp_path / "broken.html"
    path.write_text(p.html.replace("(function () {", "(function () { nosuch();", 1))
    opened = open_page(path)
    assert any("nosuch is not defined" in line for line in opened.console)
    assert 'data-ready="1"' not in opened.dom


def _rows(dom: str) -> list:
    body = dom[dom.index('<table id="nodes"') :]
    body = body[body.index("<tbody>") : body.index("</tbody>")]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body)]


def _shown(dom: str) -> list:
    body = dom[dom.index('<table id="nodes"') :]
    body = body[body.index("<tbody>") : body.index("</tbody>")]
    return [row for row in re.findall(r"<tr([^>]*)>", body) if "display: none" not in row]


def test_the_fleet_table_sorts_and_filters(tmp_path):
    p = PAGES["fleet"](tmp_path)
    path = tmp_path / "fleet.html"
    path.write_text(p.html)
    plain = _rows(open_page(path).dom)
    assert [r[1] for r in plain][:3] == ["deviates"] * 3  # the server order: worst first
    by_gpus = _rows(open_page(path, "#sort=GPUs").dom)
    assert [r[3] for r in by_gpus] == ["7", "8", "8", "8", "8"]  # ascending
    by_gpus_down = open_page(path, "#sort=-GPUs").dom
    assert [r[3] for r in _rows(by_gpus_down)][-1] == "7" and 'aria-sort="descending"' in by_gpus_down
    by_driver = _rows(open_page(path, "#sort=driver").dom)
    assert [r[4] for r in by_driver][0].startswith("570")
    filtered = open_page(path, "#filter=570").dom
    assert 'data-shown="1"' in filtered and len(_shown(filtered)) == 1
    assert 'value="570"' in filtered or "570" in filtered


def test_a_thousand_node_fleet_page_loads_within_the_bound(tmp_path):
    path = tmp_path / "fleet-1000.html"
    path.write_text(fleet_of(1000))
    opened = open_page(path)
    assert opened.console == []
    ready = int(re.search(r'data-ready-ms="(\d+)"', opened.dom).group(1))
    print(
        f"1000-node fleet page: {path.stat().st_size / 1e6:.2f} MB, ready after {ready} ms, "
        f"browser run {opened.seconds:.1f} s"
    )
    assert ready < FLEET_1000_READY_MS
    assert len(_rows(opened.dom)) == 1000
    sorted_dom = open_page(path, "#sort=-driver").dom
    assert _rows(sorted_dom)[0][4].startswith("580") and _rows(sorted_dom)[-1][4].startswith("570")
    screenshot(path, tmp_path / "fleet-1000.png")


def test_a_click_on_a_column_sorts_the_fleet_table_and_typing_filters_it(tmp_path):
    """Through the DevTools protocol: the mouse clicks the GPUs heading, then again, then types."""
    from tests.browser import Cdp

    p = PAGES["fleet"](tmp_path)
    path = tmp_path / "fleet.html"
    path.write_text(p.html)
    gpus = (
        "Array.prototype.map.call(document.querySelectorAll('#nodes tbody tr'), function (r) "
        "{ return r.cells[3].textContent; })"
    )
    shown = (
        "Array.prototype.filter.call(document.querySelectorAll('#nodes tbody tr'), function (r) "
        "{ return r.style.display !== 'none'; }).length"
    )
    with Cdp(path) as page:
        assert page.evaluate(gpus) == ["8", "7", "8", "8", "8"]  # worst first: gpu-04 is second
        page.click("#nodes thead th:nth-child(4)")
        assert page.evaluate(gpus) == ["7", "8", "8", "8", "8"]
        page.click("#nodes thead th:nth-child(4)")
        assert page.evaluate(gpus) == ["8", "8", "8", "8", "7"]
        page.type_into("input.filter", "2.10.0")
        assert page.evaluate(shown) == 1
