"""``envdoctor snapshot`` for people: what was saved, and the list of saved snapshots."""

from __future__ import annotations

from pathlib import Path

from envdoctor.bench.facts import BenchResult
from envdoctor.facts import Facts
from envdoctor.findings import Finding
from envdoctor.render.verify import when
from envdoctor.snapshot import HOW, Snapshot, SnapshotInfo, describe


def gpu_summary(gpus: tuple[str, ...]) -> str:
    """``2x NVIDIA H200, 1x NVIDIA L4``; ``no GPU listed``."""
    if not gpus:
        return "no GPU listed"
    names = sorted(set(gpus))
    return ", ".join(f"{gpus.count(n)}x {n}" for n in names)


def saved_lines(
    path: Path, facts: Facts, findings: tuple[Finding, ...], doc: dict, bench: BenchResult | None, in_store: bool
) -> list[str]:
    """What ``snapshot`` prints once the file is written, ending with the verify command to run."""
    driver, torch_version, gpus = describe(Snapshot(path, facts, findings, doc))
    torch_text = torch_version or ("not inspected" if "torch" in facts.skipped else "none")
    lines = [
        f"Snapshot saved: {path}{' (latest)' if in_store else ''}",
        f"  driver {driver or 'none'}, torch {torch_text}, {gpu_summary(gpus)}"
        + (f", bench {len(bench.points)} point(s)" if bench is not None else ""),
    ]
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        lines.append(
            f"  note: it records {len(errors)} error finding(s) ({', '.join(f.code for f in errors)}); "
            "verify compares against this state (envdoctor check shows them)"
        )
    lines.append(
        "After the upgrade (and the reboot), run: envdoctor verify"
        + ("" if in_store else f" --baseline {path}")
        + (" --bench" if bench is not None else "")
    )
    return lines


def list_lines(directory: Path, infos: tuple[SnapshotInfo, ...]) -> list[str]:
    """``snapshot --list``: one line per snapshot, oldest first, the latest marked."""
    if not infos:
        return [f"No snapshots in {directory}. Take one with: {HOW}"]
    lines = [f"Snapshots in {directory}:"]
    for info in infos:
        mark = "  <- latest" if info.latest else ""
        if info.error:
            lines.append(f"  {info.name}  unreadable: {info.error}{mark}")
            continue
        bench = ", bench" if info.bench else ""
        torch_text = info.torch or ("not inspected" if "torch" in info.skipped else "none")
        lines.append(
            f"  {info.name}  {when(info.created)}  driver {info.driver or 'none'}  "
            f"torch {torch_text}  {gpu_summary(info.gpus)}{bench}{mark}"
        )
    return lines
