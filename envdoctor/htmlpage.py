"""The one HTML page of every ``--html``: skeleton, escaping, the embedded document, tables, findings
and inline SVG charts. Each command's content lives in its own renderer, built from its JSON
document (``envdoctor/<plugin>/page.py``, ``envdoctor/render/*_page.py``).

A page is one self-contained file: no network, no external script, font or style, so it opens
from a ``file://`` URL and as an e-mail attachment. It starts with the verdict, then the content,
and ends with the document itself in ``<script type="application/json" id="envdoctor-document">``
(so the page is also the data). Personal details are always masked, as ``--redact`` masks them
(:func:`redact_document`), and secrets as everywhere. The page reads without script; a few lines
of inline script sort tables (a click on a column, or ``#sort=COLUMN`` / ``#sort=-COLUMN`` in the
URL), filter them (the box above, or ``#filter=TEXT``) and copy a fix::

    page("check", "h200-vm", 0, "no problems found", ["<section>...</section>"], doc)
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from envdoctor import __version__
from envdoctor.redact import Redactor, mask_data, mask_text

#: exit code -> (css class, the word the verdict banner starts with)
VERDICTS = {0: ("ok", "OK"), 1: ("problem", "PROBLEM"), 2: ("unusable", "COULD NOT RUN"), 3: ("bug", "ENVDOCTOR BUG")}
PALETTE = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#0a7b83", "#d1242f", "#57606a")

CSS = """
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;
padding:1em 1.5em;color:#1f2328;background:#fff}
h1{font-size:1.35em;margin:.2em 0}h2{font-size:1.12em;margin:1.6em 0 .4em;border-bottom:1px solid #d0d7de}
h3{font-size:1em;margin:1.1em 0 .3em}
.verdict{border-radius:6px;padding:.7em 1em;margin:.4em 0 1em;border:1px solid}
.verdict .word{font-weight:700;letter-spacing:.04em;margin-right:.6em}
.v-ok{background:#dafbe1;border-color:#1a7f37}.v-problem{background:#ffebe9;border-color:#cf222e}
.v-unusable{background:#fff8c5;border-color:#bf8700}.v-bug{background:#fbefff;border-color:#8250df}
table{border-collapse:collapse;margin:.4em 0;font-size:13px}
th,td{border:1px solid #d0d7de;padding:.22em .5em;text-align:left;vertical-align:top}
th{background:#f6f8fa;white-space:nowrap}table.sortable th{cursor:pointer}
table.kv th{text-align:right;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.error,td.error{background:#ffebe9}.warning,td.warning{background:#fff8c5}.info,td.info{background:#ddf4ff}
td.drift{background:#ffd8b5;font-weight:600}
tr.v-ok,tr.v-warning,tr.v-deviates,tr.v-missing,tr.v-unreadable{background:none}
tr.v-deviates td:first-child,tr.v-missing td:first-child,tr.v-unreadable td:first-child{border-left:4px solid #cf222e}
tr.v-warning td:first-child{border-left:4px solid #bf8700}tr.v-ok td:first-child{border-left:4px solid #1a7f37}
.sev{font-weight:700;text-transform:uppercase;font-size:11px;padding:0 .35em;border-radius:3px}
.sev-error{color:#fff;background:#cf222e}.sev-warning{color:#1f2328;background:#e3b341}
.sev-info{color:#fff;background:#0969da}
.finding{border:1px solid #d0d7de;border-radius:6px;padding:.5em .8em;margin:.5em 0}
.finding h3{margin:0 0 .3em}
.muted{color:#59636e}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:4px;padding:.5em .7em;overflow-x:auto;
white-space:pre-wrap;margin:.3em 0}
button.copy{float:right;font-size:11px;margin:0 0 .2em .5em}
svg{max-width:100%;height:auto;background:#fff}svg text{font:11px system-ui,sans-serif;fill:#1f2328}
.legend span{display:inline-block;margin-right:1em;font-size:12px}
.legend i{display:inline-block;width:12px;height:3px;margin-right:4px;vertical-align:middle}
footer{margin-top:2em;font-size:12px}
details>summary{cursor:pointer}
.filter{margin:.3em 0}
"""

#: Sorting, filtering (also from the URL's #sort=COL, #sort=-COL, #filter=TEXT) and copying a fix.
#: Plain ES5, no library; the page reads the same without it.
SCRIPT = r"""
(function () {
  function key(row, col) {
    var c = row.cells[col];
    return c ? (c.getAttribute('data-k') !== null ? c.getAttribute('data-k') : c.textContent.trim()) : '';
  }
  function sortTable(table, col, asc) {
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (x, y) {
      var a = key(x, col), b = key(y, col), n = parseFloat(a), m = parseFloat(b);
      var r = (!isNaN(n) && !isNaN(m) && String(n) === a && String(m) === b) ? n - m
        : a.localeCompare(b, undefined, {numeric: true});
      return asc ? r : -r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.setAttribute('aria-sort', i === col ? (asc ? 'ascending' : 'descending') : 'none');
    });
    table.setAttribute('data-sorted', (asc ? '' : '-') + col);
  }
  function filterTable(table, text) {
    var words = text.toLowerCase().split(/\s+/).filter(Boolean), shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      var t = r.textContent.toLowerCase();
      var ok = words.every(function (w) { return t.indexOf(w) >= 0; });
      r.style.display = ok ? '' : 'none';
      if (ok) { shown++; }
    });
    table.setAttribute('data-shown', shown);
  }
  function column(table, name) {
    var cells = table.tHead.rows[0].cells;
    for (var i = 0; i < cells.length; i++) {
      if (cells[i].textContent.trim().toLowerCase() === name.toLowerCase() || String(i) === name) { return i; }
    }
    return -1;
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.title = 'sort';
      th.addEventListener('click', function () {
        sortTable(table, i, th.getAttribute('aria-sort') !== 'ascending');
      });
    });
  });
  document.querySelectorAll('input.filter').forEach(function (box) {
    var table = document.getElementById(box.getAttribute('data-table'));
    box.addEventListener('input', function () { filterTable(table, box.value); });
  });
  document.querySelectorAll('pre.fix').forEach(function (pre) {
    if (!navigator.clipboard) { return; }
    var b = document.createElement('button');
    b.className = 'copy'; b.type = 'button'; b.textContent = 'copy';
    b.addEventListener('click', function () { navigator.clipboard.writeText(pre.textContent.replace(/^copy/, '')); });
    pre.insertBefore(b, pre.firstChild);
  });
  var hash = {};
  location.hash.replace(/^#/, '').split('&').forEach(function (part) {
    var kv = part.split('=');
    if (kv[0]) { hash[decodeURIComponent(kv[0])] = decodeURIComponent(kv.slice(1).join('=')); }
  });
  var main = document.querySelector('table.sortable');
  if (main && hash.sort) {
    var desc = hash.sort.charAt(0) === '-', col = column(main, desc ? hash.sort.slice(1) : hash.sort);
    if (col >= 0) { sortTable(main, col, !desc); }
  }
  if (hash.filter !== undefined) {
    document.querySelectorAll('input.filter').forEach(function (box) {
      box.value = hash.filter; filterTable(document.getElementById(box.getAttribute('data-table')), hash.filter);
    });
  }
  document.documentElement.setAttribute('data-ready', '1');
  if (window.performance) {
    document.documentElement.setAttribute('data-ready-ms', String(Math.round(performance.now())));
  }
})();
"""


def esc(value: Any) -> str:
    """Text for HTML (quotes too): ``esc('<a href="x">')`` -> ``'&lt;a href=&quot;x&quot;&gt;'``."""
    return html.escape("" if value is None else str(value), quote=True)


def embedded_json(doc: Any) -> str:
    """``doc`` as JSON that cannot end its ``<script>`` block: ``<``, ``>`` and ``&`` are written as
    ``\\u003c`` ... (they only occur inside JSON strings, where the escape means the same)."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# --- redaction ------------------------------------------------------------------------------------------

_HOME = re.compile(r"(?<![\w.-])/(?:home|Users)/[^/\s\"'<>]+")


def _get(doc: Any, *path: str) -> Any:
    for key in path:
        doc = doc.get(key) if isinstance(doc, Mapping) else None
    return doc


def redact_document(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> Any:
    """``doc`` with secrets masked and the personal details ``--redact`` masks: the host name, user
    and home it names (a report's ``facts.system``, a snapshot's ``snapshot.host``, comms' ``hosts``),
    the machine's own (``machine``), GPU UUIDs and serials, and any ``/home/NAME``."""
    system = _get(doc, "facts", "system") or {}
    gpus = _get(doc, "facts", "driver", "gpus") or []
    serials = [str(g.get("serial")) for g in gpus if isinstance(g, Mapping) and g.get("serial")]
    hosts = [
        system.get("hostname"),
        _get(doc, "snapshot", "host"),
        _get(doc, "baseline", "host"),
        _get(doc, "current", "host"),
        *(doc.get("hosts") or []),
        *(r.get("host") for r in doc.get("ranks") or () if isinstance(r, Mapping)),
    ]
    user = system.get("user") if system.get("user") != "root" else None  # root names no person
    out = mask_data(doc)
    for host in dict.fromkeys(h for h in hosts if isinstance(h, str) and h):
        out = Redactor(host, user, system.get("home"), serials).data(out)
    if not any(isinstance(h, str) and h for h in hosts):
        out = Redactor(None, user, system.get("home"), serials).data(out)
    if machine is not None:
        out = machine.data(out)
    return _strip_homes(out)


def _strip_homes(obj: Any) -> Any:
    if isinstance(obj, str):
        return _HOME.sub("~", obj)
    if isinstance(obj, list):
        return [_strip_homes(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _strip_homes(v) for k, v in obj.items()}
    return obj


# --- the page ---------------------------------------------------------------------------------------------


def page(
    command: str, subject: str, code: int, verdict: str, body: Iterable[str], doc: Mapping[str, Any], detail: str = ""
) -> str:
    """The whole page: title, the verdict banner (from the exit ``code`` and its line), ``body``
    (HTML fragments, already escaped), the footer and the embedded document."""
    cls, word = VERDICTS.get(code, ("bug", f"EXIT {code}"))
    title = f"envdoctor {command}" + (f": {subject}" if subject else "")
    made = doc.get("created_at") or doc.get("collected_at") or ""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<header><h1>{esc(title)}</h1>",
        f'<div class="verdict v-{cls}" id="verdict" data-exit="{code}"><span class="word">{esc(word)}</span>'
        f"<span>{esc(verdict)}</span>" + (f'<div class="muted">{esc(detail)}</div>' if detail else "") + "</div>",
        "</header><main>",
        *body,
        "</main>",
        f'<footer class="muted">envdoctor {esc(doc.get("envdoctor_version") or __version__)}, '
        f"{esc(doc.get('schema'))}, written {esc(made)}, exit code {code}. Personal details are masked "
        "(host, user, home, GPU UUIDs and serials). The document is embedded in this page: "
        "<code>#envdoctor-document</code>.</footer>",
        f'<script type="application/json" id="envdoctor-document">{embedded_json(doc)}</script>',
        f"<script>{SCRIPT}</script>",
        "</body></html>",
        "",
    ]
    return mask_text("\n".join(parts))


def section(title: str, *content: str, id: str = "") -> str:
    ident = f' id="{esc(id)}"' if id else ""
    return f"<section{ident}><h2>{esc(title)}</h2>" + "".join(content) + "</section>"


def para(text: str, cls: str = "") -> str:
    return f'<p class="{cls}">{esc(text)}</p>' if cls else f"<p>{esc(text)}</p>"


def items(lines: Iterable[Any], cls: str = "") -> str:
    shown = [f"<li>{esc(x)}</li>" for x in lines if x not in (None, "")]
    if not shown:
        return ""
    return (f'<ul class="{cls}">' if cls else "<ul>") + "".join(shown) + "</ul>"


def pct(value: Any) -> str:
    """A fraction as a percentage: ``pct(0.6412)`` -> ``"64.1 %"``; "-" for none."""
    return f"{float(value) * 100:.1f} %" if isinstance(value, (int, float)) and math.isfinite(value) else "-"


def fmt(value: Any, digits: int = 3) -> str:
    """A cell's text: ``None`` -> "-", floats to ``digits`` significant places, lists joined."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, digits) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {fmt(v, digits)}" for k, v in value.items()) or "-"
    return str(value)


@dataclass(frozen=True)
class Cell:
    """A table cell with a class (``error``, ``drift``, ``num``) and a sort key."""

    text: Any
    cls: str = ""
    key: Any = None


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    id: str = "",
    sortable: bool = False,
    row_classes: Sequence[str] = (),
    filter_box: bool = False,
) -> str:
    """An HTML table; a cell is a value (numbers right-aligned, sorted as numbers) or a :class:`Cell`."""
    cls = ' class="sortable"' if sortable else ""
    ident = f' id="{esc(id)}"' if id else ""
    out = []
    if filter_box and id:
        out.append(
            f'<div class="filter"><label>filter: <input class="filter" type="search" data-table="{esc(id)}" '
            'placeholder="words a row must hold"></label></div>'
        )
    out.append(
        f"<table{ident}{cls}><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr></thead><tbody>"
    )
    for i, row in enumerate(rows):
        rc = row_classes[i] if i < len(row_classes) else ""
        out.append(f'<tr class="{esc(rc)}">' if rc else "<tr>")
        for value in row:
            c = value if isinstance(value, Cell) else Cell(value)
            classes = c.cls
            key = c.key
            if isinstance(c.text, (int, float)) and not isinstance(c.text, bool):
                classes = (classes + " num").strip()
                key = c.text if key is None and sortable else key
            attrs = f' class="{esc(classes)}"' if classes else ""
            attrs += f' data-k="{esc(key)}"' if key is not None else ""
            out.append(f"<td{attrs}>{esc(fmt(c.text))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def kv(rows: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of facts, the rows whose value is missing left out."""
    shown = [(k, v) for k, v in rows if v not in (None, "", [], {})]
    if not shown:
        return ""
    return (
        '<table class="kv"><tbody>'
        + "".join(f"<tr><th>{esc(k)}</th><td>{esc(fmt(v))}</td></tr>" for k, v in shown)
        + "</tbody></table>"
    )


def commands(lines: Sequence[str]) -> str:
    """Commands to copy: one ``<pre class="fix">`` (a copy button where the script runs)."""
    if not lines:
        return ""
    return '<pre class="fix"><code>' + esc("\n".join(lines)) + "</code></pre>"


def findings(rows: Sequence[Mapping[str, Any]], none: str = "No findings.") -> str:
    """Findings as a person reads them: code, severity, title, evidence, the fix to copy, the
    reference (as text: a page links to nothing outside itself), most severe first."""
    if not rows:
        return para(none, "muted")
    order = {"error": 0, "warning": 1, "info": 2}
    out = []
    for f in sorted(rows, key=lambda f: order.get(str(f.get("severity")), 3)):
        sev = str(f.get("severity") or "info")
        out.append(
            f'<div class="finding {esc(sev)}" id="{esc(f.get("code"))}"><h3><code>{esc(f.get("code"))}</code> '
            f'<span class="sev sev-{esc(sev)}">{esc(sev)}</span> {esc(f.get("title"))}</h3>'
        )
        out.append(items(f.get("evidence") or (), "muted"))
        if f.get("explanation"):
            out.append(para(str(f["explanation"])))
        fix = [str(x) for x in f.get("fix") or ()]
        if fix:
            out.append("<div>Fix:</div>" + commands(fix))
        if f.get("reference"):
            out.append(f'<div class="muted">Reference: <code>{esc(f["reference"])}</code></div>')
        out.append("</div>")
    return "".join(out)


# --- charts ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    """One line of a chart: ``Series("fp16 GPU 0", ((1024, 210.5), (8192, 641.1)))``."""

    name: str
    points: tuple[tuple[float, float], ...]
    dashed: bool = False


@dataclass(frozen=True)
class Ref:
    """A horizontal reference line: ``Ref(989.0, "fp16 datasheet 989 TFLOP/s")``."""

    value: float
    label: str


@dataclass(frozen=True)
class Chart:
    title: str
    x_label: str
    y_label: str
    series: tuple[Series, ...]
    refs: tuple[Ref, ...] = ()
    log_x: bool = False
    x_format: str = "g"  # "bytes" for sizes in bytes
    width: int = 640
    height: int = 280


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    out, v = [], first
    while v <= hi + step * 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _bytes(v: float) -> str:
    for unit, size in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if v >= size:
            q = v / size
            return f"{q:g}{unit}" if q == int(q) else f"{q:.1f}{unit}"
    return f"{v:g}"


def _num(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e5 else f"{v:.3g}"


def svg_chart(c: Chart) -> str:
    """A line chart as inline SVG: the series with markers, the reference lines dashed and labelled,
    axes with ticks; a log2 x axis for sizes."""
    pts = [p for s in c.series for p in s.points if all(math.isfinite(v) for v in p)]
    if not pts:
        return para(f"{c.title}: nothing measured to draw.", "muted")
    left, right, top, bottom = 62, 28, 24, 42
    w, h = c.width - left - right, c.height - top - bottom
    xs = [p[0] for p in pts if not c.log_x or p[0] > 0]
    ys = [p[1] for p in pts] + [r.value for r in c.refs if math.isfinite(r.value)]
    x0, x1 = min(xs), max(xs)
    y1 = max(ys) * 1.08 if max(ys) > 0 else 1.0
    y0 = min(0.0, min(ys))

    def fx(x: float) -> float:
        if c.log_x:
            a, b = math.log2(x0), math.log2(x1)
            return left + (w / 2 if b == a else (math.log2(max(x, 1e-300)) - a) / (b - a) * w)
        return left + (w / 2 if x1 == x0 else (x - x0) / (x1 - x0) * w)

    def fy(y: float) -> float:
        return top + h - (y - y0) / (y1 - y0) * h

    label = _bytes if c.x_format == "bytes" else _num
    out = [
        f'<figure><svg viewBox="0 0 {c.width} {c.height}" '
        f'width="{c.width}" height="{c.height}" role="img" aria-label="{esc(c.title)}">',
        f'<text x="{left}" y="14" font-weight="600">{esc(c.title)}</text>',
        f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#d0d7de"/>',
    ]
    for t in _ticks(y0, y1):
        y = fy(t)
        out.append(
            f'<line x1="{left}" x2="{left + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eaeef2"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(_num(t))}</text>'
        )
    if c.log_x:
        xt = sorted(set(xs))
        if len(xt) > 9:
            a, b = math.floor(math.log2(x0)), math.ceil(math.log2(x1))
            step = max(1, math.ceil((b - a) / 8))
            xt = [2.0**e for e in range(a, b + 1, step) if x0 <= 2.0**e <= x1]
    else:
        xt = _ticks(x0, x1, 6)
    for t in xt:
        x = fx(t)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + h}" y2="{top + h + 4}" stroke="#57606a"/>'
            f'<text x="{x:.1f}" y="{top + h + 16}" text-anchor="middle">{esc(label(t))}</text>'
        )
    out.append(
        f'<text x="{left + w / 2}" y="{c.height - 6}" text-anchor="middle">{esc(c.x_label)}</text>'
        f'<text transform="translate(14 {top + h / 2}) rotate(-90)" text-anchor="middle">'
        f"{esc(c.y_label)}</text>"
    )
    for r in c.refs:
        if not math.isfinite(r.value):
            continue
        y = fy(r.value)
        out.append(
            f'<line x1="{left}" x2="{left + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#57606a" '
            f'stroke-dasharray="6 4"/><text x="{left + w - 4}" y="{y - 4:.1f}" text-anchor="end" '
            f'fill="#57606a">{esc(r.label)}</text>'
        )
    legend = []
    for i, s in enumerate(c.series):
        color = PALETTE[i % len(PALETTE)]
        good = [p for p in s.points if all(math.isfinite(v) for v in p) and (not c.log_x or p[0] > 0)]
        if not good:
            continue
        path = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in good)
        dash = ' stroke-dasharray="4 3"' if s.dashed else ""
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.8"{dash} points="{path}"/>')
        if len(good) <= 40:
            out.extend(
                f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="2.6" fill="{color}">'
                f"<title>{esc(s.name)}: {esc(label(x))}, {esc(_num(round(y, 3)))}</title></circle>"
                for x, y in good
            )
        legend.append(f'<span><i style="background:{color}"></i>{esc(s.name)}</span>')
    out.append("</svg>")
    out.append(f'<figcaption class="legend">{"".join(legend)}</figcaption></figure>')
    return "".join(out)


def stacked_bar(
    title: str,
    parts: Sequence[tuple[str, float]],
    limit: Optional[tuple[str, float]],
    unit: str = "GiB",
    width: int = 760,
) -> str:
    """One horizontal bar of ``parts`` (label, value) stacked, against ``limit`` (a marked line):
    fit's terms against the GPU's usable memory."""
    shown = [(k, v) for k, v in parts if v and math.isfinite(v) and v > 0]
    total = sum(v for _, v in shown)
    top = max(total, limit[1] if limit else 0.0) * 1.05 or 1.0
    left, bar_h, height = 10, 34, 120
    w = width - 2 * left
    out = [
        f'<figure><svg viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{esc(title)}">',
        f'<text x="{left}" y="14" font-weight="600">{esc(title)}</text>',
    ]
    x = float(left)
    legend = []
    for i, (name, value) in enumerate(shown):
        color = PALETTE[i % len(PALETTE)]
        bw = value / top * w
        out.append(
            f'<rect x="{x:.1f}" y="28" width="{bw:.1f}" height="{bar_h}" fill="{color}">'
            f"<title>{esc(name)}: {value:.2f} {esc(unit)}</title></rect>"
        )
        if bw > 60:
            out.append(f'<text x="{x + 4:.1f}" y="49" fill="#fff" style="fill:#fff">{esc(name)}</text>')
        legend.append(f'<span><i style="background:{color}"></i>{esc(name)} {value:.2f} {esc(unit)}</span>')
        x += bw
    out.append(f'<text x="{left}" y="82">total {total:.2f} {esc(unit)}</text>')
    if limit:
        lx = left + limit[1] / top * w
        out.append(
            f'<line x1="{lx:.1f}" x2="{lx:.1f}" y1="22" y2="70" stroke="#1f2328" stroke-width="2" '
            f'stroke-dasharray="5 3"/><text x="{min(lx, width - 200):.1f}" y="100">{esc(limit[0])} '
            f"{limit[1]:.2f} {esc(unit)}</text>"
        )
    out.append("</svg>")
    out.append(f'<figcaption class="legend">{"".join(legend)}</figcaption></figure>')
    return "".join(out)


__all__ = [
    "CSS",
    "Cell",
    "Chart",
    "PALETTE",
    "Ref",
    "SCRIPT",
    "Series",
    "VERDICTS",
    "commands",
    "embedded_json",
    "esc",
    "findings",
    "fmt",
    "pct",
    "items",
    "kv",
    "page",
    "para",
    "redact_document",
    "section",
    "stacked_bar",
    "svg_chart",
    "table",
]
