"""The HTML page of ``envdoctor recommend --html``, from the plan document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from envdoctor.htmlpage import commands, esc, fmt, items, kv, page, para, redact_document, section, table
from envdoctor.redact import Redactor


def plan_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None) -> str:
    """The plan: what to install by which route, the commands in order to copy, why, what else."""
    d = redact_document(doc, machine)
    code = int((d.get("summary") or {}).get("exit_code") or (0 if d.get("status") == "ok" else 1))
    m = d.get("machine") or {}
    if d.get("status") == "ok":
        what = f"torch {d.get('torch')} {d.get('variant') or ''} by the {d.get('route')} route".replace("  ", " ")
        verdict = "already installed: nothing to change" if d.get("already_installed") else f"install {what}"
    else:
        verdict = "nothing fits as the machine is: the ways out are below"
    body = []
    steps = [s for s in d.get("steps") or () if isinstance(s, Mapping)]
    if steps:
        body.append(
            section(
                "Commands, in order",
                *(
                    f"<h3>{i}. {esc(s.get('title'))}</h3>"
                    + commands([str(c) for c in s.get("commands") or ()])
                    + (para(str(s["note"]), "muted") if s.get("note") else "")
                    for i, s in enumerate(steps, 1)
                ),
                id="steps",
            )
        )
    elif d.get("commands"):
        body.append(section("Commands, in order", commands([str(c) for c in d["commands"]]), id="steps"))
    ways = d.get("ways_out") or []
    if ways:
        body.append(section("Ways out", items(fmt(w) for w in ways), id="ways"))
    body.append(
        section(
            "Why",
            items([*(d.get("choice_reasons") or ()), *(d.get("reasons") or ())]),
            items(d.get("warnings") or (), "warning"),
            id="why",
        )
    )
    body.append(
        section(
            "The plan",
            kv(
                [
                    ("route", d.get("route")),
                    ("torch", d.get("torch")),
                    ("torchvision", d.get("torchvision")),
                    ("torchaudio", d.get("torchaudio")),
                    ("variant", d.get("variant")),
                    ("CUDA", d.get("cuda")),
                    ("index", d.get("index_url")),
                    ("image", d.get("image")),
                    ("conda", d.get("conda")),
                    ("compatibility", d.get("compatibility")),
                    ("driver needed", d.get("driver_needed")),
                    ("target Python", d.get("python")),
                    ("index checked", d.get("index_check")),
                ]
            ),
            id="plan",
        )
    )
    body.append(
        section(
            "The machine",
            kv(
                [
                    ("from", m.get("origin")),
                    ("OS", m.get("os")),
                    ("arch", m.get("arch")),
                    ("glibc", m.get("glibc")),
                    ("driver", m.get("driver")),
                    ("Python", m.get("python")),
                    ("given", m.get("given")),
                ]
            ),
            table(
                ["GPU", "compute capability", "vendor"],
                [[g.get("name"), g.get("cc"), g.get("vendor")] for g in m.get("gpus") or () if isinstance(g, Mapping)],
            ),
            id="machine",
        )
    )
    alt = d.get("alternatives") or []
    if alt:
        body.append(section("The same with another tool", commands([str(a) for a in alt]), id="alternatives"))
    rejected = [[r.get("route"), r.get("reason")] for r in d.get("rejected") or () if isinstance(r, Mapping)]
    builds = [[r.get("what"), r.get("reason")] for r in d.get("rejected_builds") or () if isinstance(r, Mapping)]
    if rejected or builds:
        body.append(
            section(
                "Not chosen",
                table(["route", "why not"], rejected) if rejected else "",
                "<details><summary>builds passed over ({})</summary>{}</details>".format(
                    len(builds), table(["build", "why not"], builds)
                )
                if builds
                else "",
                id="rejected",
            )
        )
    if d.get("sources"):
        body.append(section("Sources", items(d["sources"], "muted"), id="sources"))
    return page("recommend", str(d.get("route") or ""), code, verdict, body, d)
