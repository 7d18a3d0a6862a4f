"""The HTML page of ``envdoctor fit --html``, from the fit document: does it fit each GPU, the peak
term by term as a stacked bar against the GPU's memory, the phases, the ways to make it fit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from envdoctor.htmlpage import Cell, commands, fmt, items, kv, page, para, redact_document, section, stacked_bar, table
from envdoctor.redact import Redactor

GIB = 2**30


def _gib(n: Any) -> Optional[float]:
    return float(n) / GIB if isinstance(n, (int, float)) else None


def _flags(way: Mapping[str, Any]) -> str:
    """A way's flags and the given ones it leaves out: ``--dtype bf16 (without --amp)``."""
    without = [str(f) for f in way.get("without") or () if isinstance(f, str)]
    return str(way.get("flags") or "") + (f" (without {', '.join(without)})" if without else "")


def fit_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    d = redact_document(doc, machine)
    code = int((d.get("summary") or {}).get("exit_code") or 0)
    model, w = d.get("model") or {}, d.get("workload") or {}
    gpus = [g for g in d.get("gpus") or () if isinstance(g, Mapping)]
    peak = _gib(d.get("peak_bytes"))
    peak_text = f"{peak:.2f} GiB" if peak is not None else "?"
    if not gpus:
        verdict = f"the peak is {peak_text} ({d.get('peak_phase')}); no GPU given to compare with"
    else:
        verdict = "; ".join(
            f"{'fits' if g.get('fits') else 'cannot run it on' if g.get('problem') else 'does not fit'} {g.get('name')}"
            for g in gpus
        )
        verdict += f" (peak {peak_text} at {d.get('peak_phase')})"
    terms = [(str(k), _gib(v) or 0.0) for k, v in (d.get("terms") or {}).items()]
    bars = [
        stacked_bar(
            f"{model.get('name')} peak by term against {g.get('name')}",
            terms,
            ("usable memory", _gib(g.get("total_bytes")) or 0.0),
        )
        for g in gpus
    ] or [stacked_bar(f"{model.get('name')} peak by term", terms, None)]
    body = [
        section(
            "Against the GPUs",
            table(
                ["GPU", "memory GiB", "fits", "spare GiB", "source", "why"],
                [
                    [
                        g.get("name"),
                        _gib(g.get("total_bytes")),
                        Cell(
                            ("yes, tight" if g.get("tight") else "yes") if g.get("fits") else "no",
                            ("warning" if g.get("tight") else "") if g.get("fits") else "error",
                        ),
                        _gib(g.get("spare_bytes")),
                        g.get("source"),
                        # the GPU cannot run it (bf16 below sm_80), or runs it unlike the estimate printed
                        # or it fits with little spare (tight: why that is close)
                        "; ".join(x for x in (g.get("problem") or g.get("note"), g.get("tight")) if x),
                    ]
                    for g in gpus
                ],
            )
            if gpus
            else "",
            *bars,
            id="gpus",
        )
    ]
    details = [t for t in d.get("term_details") or () if isinstance(t, Mapping)]
    body.append(
        section(
            f"The peak, term by term ({d.get('peak_phase')})",
            table(["term", "GiB", "how"], [[t.get("name"), _gib(t.get("bytes")), t.get("formula")] for t in details]),
            id="terms",
        )
    )
    phases = [p for p in d.get("phases") or () if isinstance(p, Mapping)]
    if phases:
        body.append(
            section(
                "Phases", table(["phase", "GiB"], [[p.get("name"), _gib(p.get("bytes"))] for p in phases]), id="phases"
            )
        )
    ways = [x for x in d.get("ways") or () if isinstance(x, Mapping)]
    if ways:
        body.append(
            section(
                f"Ways to fit {d.get('ways_for') or ''}".strip(),
                table(
                    ["way", "flags", "peak GiB", "fits"],
                    [
                        [
                            x.get("label"),
                            _flags(x),
                            _gib(x.get("peak_bytes")),
                            Cell("yes" if x.get("fits") else "no", "" if x.get("fits") else "warning"),
                        ]
                        for x in ways
                    ],
                ),
                para(
                    "Add the flags of a way that fits to the same fit command (leaving out those it says without):",
                    "muted",
                )
                if any(x.get("fits") for x in ways)
                else "",
                commands([_flags(x) for x in ways if x.get("fits")]),
                id="ways",
            )
        )
    if d.get("max_batch") or d.get("max_seq"):
        body.append(
            section(
                "Limits",
                kv(
                    [
                        ("largest batch", d.get("max_batch")),
                        ("longest context", d.get("max_seq")),
                        ("for", d.get("limits_for")),
                    ]
                ),
                id="limits",
            )
        )
    if isinstance(d.get("measurement"), Mapping):
        m = d["measurement"]
        body.append(
            section(
                "Measured",
                kv([(str(k), fmt(v)) for k, v in m.items() if not isinstance(v, (list, dict))]),
                id="measured",
            )
        )
    body.append(
        section(
            "Model and workload",
            kv(
                [
                    ("model", model.get("name")),
                    ("source", model.get("source")),
                    ("parameters", model.get("params_total")),
                    ("trainable", model.get("params_trainable")),
                    ("layers", model.get("layers")),
                    ("hidden", model.get("hidden_size")),
                    ("heads", f"{model.get('heads')} ({model.get('kv_heads')} KV)"),
                ]
            ),
            kv([(k, v) for k, v in w.items() if v not in (None, 0, False, [])]),
            id="model",
        )
    )
    flops = d.get("flops") or {}
    if flops:
        body.append(
            section(
                "FLOPs",
                kv(
                    [
                        ("per token", flops.get("per_token")),
                        ("per step", flops.get("per_step")),
                        ("tokens per step", flops.get("tokens_per_step")),
                        ("convention", flops.get("convention")),
                    ]
                ),
                id="flops",
            )
        )
    if d.get("notes"):
        body.append(section("Notes", items(d["notes"]), id="notes"))
    if not gpus:
        body.append(para("Name a GPU (--gpu H200) to see whether it fits.", "muted"))
    return page("fit", str(model.get("name") or ""), code, verdict, body, d)
