"""One function per document kind that turns a node's documents into the facts the fleet compares.

:data:`EXTRACTORS` maps a document kind to its function; each reads the document's data (already
read by ``envdoctor.documents``) and adds to a :class:`Builder`. A kind of document the fleet
reads but does not compare yet (its row is in ``envdoctor.documents`` but no function here) is
kept in the node's sources with a note. Adding one is a function and a line in ``EXTRACTORS``::

    def _burn(data, b):                        # envdoctor.burn/1
        for gpu in data.get("gpus", []):
            b.gpu(gpu.get("index"), gpu.get("uuid"), ecc_uncorrected=...)

The values of a report are checked as ``envdoctor.report`` checks them (the same patterns, and no
version longer than ``report.MAX_VERSION``): a report no probe could have written is refused
with one line (:class:`ExtractError`) and the node is named as unreadable.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from envdoctor.facts.serde import DataError, from_data
from envdoctor.facts.system import SystemFacts
from envdoctor.findings import Finding
from envdoctor.fleet.facts import GpuFacts, NodeFacts, NodeInput, Value
from envdoctor.parse import major, major_minor
from envdoctor.parse.jsontext import opt_float, opt_int, opt_str
from envdoctor.report import CHECKED, MAX_VERSION

#: A text field of a report (jsontext's lenient getter, cut to the longest version kept).
_text = functools.partial(opt_str, max_chars=MAX_VERSION * 4)


class ExtractError(ValueError):
    """A document whose values no envdoctor could have written; the message is one line."""


# --- typed access to someone else's JSON ------------------------------------------------------


def _obj(data: Any, key: str) -> Dict[str, Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _list(data: Any, key: str) -> List[Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, list) else []


def _walk(value: Any, parts: List[str], where: str) -> Iterator[Tuple[str, Any]]:
    """(path, value) at ``a.b[].c`` in plain JSON data, as ``report.CHECKED`` names them."""
    if not parts:
        yield where, value
        return
    head, rest = parts[0], parts[1:]
    name = head[:-2] if head.endswith("[]") else head
    item = value.get(name) if isinstance(value, dict) else None
    if head.endswith("[]"):
        for i, element in enumerate(item if isinstance(item, list) else []):
            yield from _walk(element, rest, f"{where}.{name}[{i}]")
    else:
        yield from _walk(item, rest, f"{where}.{name}")


def check_report_values(facts: Mapping[str, Any]) -> None:
    """ExtractError for the first value of ``report.CHECKED`` that no probe writes (``"banana"``)."""
    for path, pattern, what in CHECKED:
        for where, value in _walk(facts, path.split("."), "facts"):
            if value in (None, ""):
                continue
            if not isinstance(value, str) or len(value) > MAX_VERSION or not pattern.fullmatch(value):
                raise ExtractError(f"{where} is {str(value)[:40]!r}, not {what}")


# --- the builder ---------------------------------------------------------------------------------


class Builder:
    """What the extractors learn about one node, frozen into a :class:`NodeFacts` at the end."""

    def __init__(self) -> None:
        self.values: Dict[str, Value] = {}
        self.gpus: List[Dict[str, Any]] = []
        self.info: Dict[str, str] = {}
        self.notes: List[str] = []
        self.system: Optional[SystemFacts] = None
        self.python: Optional[str] = None
        self.check_errors: Tuple[Finding, ...] = ()
        self.hostname: Optional[str] = None
        self.serials: List[str] = []
        self.sources: List[str] = []  # in the order read: the report first

    def set(self, key: str, value: Value) -> None:
        """Set a fact unless an earlier document (the report) already did."""
        self.values.setdefault(key, value)

    def gpu(self, index: Optional[int], uuid: Optional[str] = None, **fields: Any) -> None:
        """Add ``fields`` to the GPU with this UUID (else this index), creating it if new."""
        found = None
        if uuid:
            found = next((g for g in self.gpus if g.get("uuid") == uuid), None)
        if found is None and index is not None:
            found = next((g for g in self.gpus if g.get("index") == index and (not uuid or not g.get("uuid"))), None)
        if found is None:
            found = {"index": index if index is not None else len(self.gpus)}
            self.gpus.append(found)
        if uuid:
            found["uuid"] = uuid
        for key, value in fields.items():
            if key == "tflops":
                found.setdefault("tflops", {}).update(value)
            elif value is not None and found.get(key) is None:
                found[key] = value

    def freeze(self, node: NodeInput, name: str, source: Any, kinds: Tuple[str, ...]) -> NodeFacts:
        names = {f.name for f in dataclasses.fields(GpuFacts)}
        gpus = tuple(
            GpuFacts(**{k: v for k, v in g.items() if k in names}) for g in sorted(self.gpus, key=lambda g: g["index"])
        )
        sources = tuple(dict.fromkeys(self.sources + [d.source for d in node.documents]))
        return NodeFacts(
            name,
            source,
            sources,
            dict(self.values),
            gpus,
            node.status,
            node.rank,
            self.system,
            self.python,
            self.check_errors,
            dict(node.info, **self.info),
            tuple(node.notes) + tuple(self.notes),
            kinds,
            node.unreadable,
            tuple(self.serials),
        )


# --- envdoctor.report/1 (check --json, snapshot) --------------------------------------------------


def _joined(values: List[str]) -> Optional[str]:
    distinct = sorted(set(values))
    return ", ".join(distinct) if distinct else None


def _unit(value: Optional[float], unit: str) -> Optional[str]:
    return None if value is None else f"{value:g} {unit}"


def _report(data: Dict[str, Any], b: Builder) -> None:
    facts = _obj(data, "facts")
    check_report_values(facts)
    system, driver, pci = _obj(facts, "system"), _obj(facts, "driver"), _obj(facts, "pci")
    b.hostname = _text(system, "hostname")
    written = _text(data, "created_at") or _text(data, "collected_at")  # reports before created_at
    for key, value in (
        ("hostname", b.hostname),
        ("collected_at", written),
        ("envdoctor_version", _text(data, "envdoctor_version")),
    ):
        if value:
            b.info[key] = value
    try:
        slim = {k: v for k, v in system.items() if k not in ("env", "error")}
        b.system = from_data(SystemFacts, slim, "facts.system")
    except DataError as exc:
        b.notes.append(f"its system facts cannot be read ({exc}): fixes are written for Ubuntu")
    if system.get("error") is None:
        b.set(
            "os",
            _text(system, "os_name")
            or " ".join(x for x in (_text(system, "os_id"), _text(system, "os_version")) if x)
            or None,
        )
        b.set("kernel", _text(system, "kernel"))
    skipped = set(x for x in _list(facts, "skipped") if isinstance(x, str))

    # the driver and its GPUs
    if driver.get("error") is None:
        version = _text(driver, "driver_version")
        b.set("driver.version", version)
        branch = major(version)
        b.set("driver.branch", str(branch) if branch is not None else None)
        b.set("driver.cuda", _text(driver, "driver_cuda"))
        b.set("driver.kernel_module", _text(driver, "kernel_module_version"))
        b.set("driver.flavor", _text(driver, "kernel_module_flavor"))
        for g in _list(driver, "gpus"):
            if isinstance(g, dict):
                memory = opt_int(g, "memory_total_mib")
                clock = opt_int(g, "max_sm_clock_mhz")
                b.gpu(
                    opt_int(g, "index"),
                    _text(g, "uuid"),
                    name=_text(g, "name"),
                    memory_mib=memory,
                    power_limit_w=opt_float(g, "power_limit_w"),
                    max_sm_clock_mhz=clock,
                )
                serial = _text(g, "serial")
                if serial:
                    b.serials.append(serial)
    if not b.gpus and pci.get("error") is None and driver.get("error") is None:
        for i, dev in enumerate(d for d in _list(pci, "devices") if isinstance(d, dict)):
            b.gpu(i, None, name=_text(dev, "name"))
    if driver.get("error") is None or pci.get("error") is None:
        b.set("gpu.count", len(b.gpus))
        b.set("gpu.models", _joined([g["name"] for g in b.gpus if g.get("name")]))
        powers = [_unit(g.get("power_limit_w"), "W") for g in b.gpus]
        b.set("gpu.power_limit", _joined([p for p in powers if p]))
        clocks = [_unit(g.get("max_sm_clock_mhz"), "MHz") for g in b.gpus]
        b.set("gpu.max_sm_clock", _joined([c for c in clocks if c]))

    # torch in the target Python
    torch, python = _obj(facts, "torch"), _obj(facts, "python")
    b.python = _text(python, "executable")
    if python.get("error") is None and "python" not in skipped:
        b.set("python.version", major_minor(_text(python, "version")))
    if "torch" not in skipped and torch.get("error") is None and python.get("error") is None:
        installed = torch.get("installed") is True
        b.set("torch.version", _text(torch, "version") if installed else None)
        b.set("torch.cuda", _text(torch, "cuda") if installed else None)
        b.set("torch.cudnn", _text(torch, "cudnn_version") if installed else None)
        b.set("torch.nccl", _text(torch, "nccl_version") if installed else None)
        available = torch.get("cuda_available")
        b.set(
            "torch.gpu",
            None
            if not installed or not isinstance(available, bool)
            else ("usable" if available and torch.get("tiny_op") in (None, "ok") else "not usable"),
        )

    # CUDA toolkits and the container toolkit
    toolkits = _obj(facts, "toolkits")
    if toolkits.get("error") is None and "toolkits" not in skipped:
        releases = [_text(t, "release") or major_minor(_text(t, "version")) for t in _list(toolkits, "toolkits")]
        b.set("toolkits", _joined([r for r in releases if r]))
    docker = _obj(facts, "docker")
    if docker.get("error") is None and "docker" not in skipped:
        b.set("container_toolkit", _text(docker, "nvidia_ctk_version") or _text(docker, "nvidia_container_cli_version"))

    # the node's own check
    errors = []
    for i, f in enumerate(_list(data, "findings")):
        if isinstance(f, dict) and f.get("severity") == "error":
            try:
                errors.append(from_data(Finding, f, f"findings[{i}]"))
            except (DataError, ValueError):
                b.notes.append(f"finding {i} of its report cannot be read")
    b.check_errors = tuple(errors)
    b.set("check.errors", _joined([f.code for f in errors]))
    if isinstance(data.get("bench"), dict):
        _bench(data["bench"], b)


# --- envdoctor.bench/1 (bench --json, and the "bench" of check --bench / snapshot --bench) ---------


def point_key(dtype: str, n: int) -> str:
    """``bf16@8192``: a measured point's name."""
    return f"{dtype}@{n}"


def _bench(data: Dict[str, Any], b: Builder) -> None:
    devices = [d for d in _list(data, "devices") if isinstance(d, dict)]
    rates: Dict[int, Dict[str, float]] = {}
    for p in _list(data, "points"):
        if not isinstance(p, dict) or p.get("status") != "ok":
            continue
        device, n, dtype, tflops = opt_int(p, "device"), opt_int(p, "n"), _text(p, "dtype"), opt_float(p, "tflops")
        if device is None or n is None or dtype is None or tflops is None or tflops <= 0:
            continue
        rates.setdefault(device, {})[point_key(dtype, n)] = tflops
    cpu = False
    for d in devices:
        index = opt_int(d, "index")
        if d.get("kind") != "cuda" or index is None:
            cpu = cpu or d.get("kind") == "cpu"
            continue
        nvml = opt_int(d, "nvml_index")
        b.gpu(
            nvml if nvml is not None else index,
            _text(d, "uuid"),
            name=_text(d, "name"),
            power_limit_w=opt_float(d, "power_limit_w"),
            max_sm_clock_mhz=opt_int(d, "max_sm_clock_mhz"),
            tflops=rates.get(index, {}),
        )
    if cpu:
        b.notes.append("its bench measured the CPU: not compared with GPUs")
    if data.get("created_at"):
        b.info.setdefault("bench_at", str(data["created_at"])[:40])


# --- the NVML health reading a gather adds (``fleet --gather``) -----------------------------------


def _health(data: Dict[str, Any], b: Builder) -> None:
    """``{"gpus": [{"index": 0, "uuid": "GPU-...", "ecc_mode": {"current": 1, "pending": 1},
    "ecc_corrected": 0, "ecc_uncorrected": 0, "remapped_rows": {"correctable": 0, "uncorrectable": 0,
    "pending": 0, "failure": 0}}], "error": null}``"""
    if data.get("error") and b.values.get("driver.version"):  # a node without a driver: nothing to say
        b.notes.append(f"its NVML health reading failed: {str(data['error'])[:200]}")
    for g in _list(data, "gpus"):
        if not isinstance(g, dict):
            continue
        mode, remap = _obj(g, "ecc_mode"), _obj(g, "remapped_rows")
        current = opt_int(mode, "current")
        b.gpu(
            opt_int(g, "index"),
            _text(g, "uuid"),
            ecc_enabled=None if current is None else bool(current),
            ecc_corrected=opt_int(g, "ecc_corrected"),
            ecc_uncorrected=opt_int(g, "ecc_uncorrected"),
            remap_pending=opt_int(remap, "pending"),
            remap_failure=opt_int(remap, "failure"),
            remap_uncorrectable=opt_int(remap, "uncorrectable"),
        )
    enabled = [g.get("ecc_enabled") for g in b.gpus if g.get("ecc_enabled") is not None]
    if enabled:
        b.set("gpu.ecc", "on" if all(enabled) else ("off" if not any(enabled) else "mixed"))


Extractor = Callable[[Dict[str, Any], Builder], None]

#: Document kind -> the function that reads it. The report comes first: its facts win.
EXTRACTORS: Dict[str, Extractor] = {
    "report": _report,
    "snapshot": _report,
    "bench": _bench,
    "health": _health,
}
_ORDER = {kind: i for i, kind in enumerate(EXTRACTORS)}


def extract(node: NodeInput) -> Tuple[Builder, Tuple[str, ...]]:
    """The builder filled from every document of ``node`` (reports first), and the kinds read.

    ExtractError when a report holds a value no probe writes.
    """
    b = Builder()
    kinds = []
    for doc in sorted(node.documents, key=lambda d: _ORDER.get(d.kind, len(_ORDER))):
        fn = EXTRACTORS.get(doc.kind)
        if fn is None:
            b.notes.append(
                f"{doc.source}: an envdoctor {doc.kind} document; this envdoctor does not compare "
                f"{doc.kind} results across nodes yet"
            )
            continue
        b.sources.append(doc.source)
        try:
            fn(doc.data, b)
        except ExtractError as exc:
            raise ExtractError(f"{doc.source} holds a value no probe writes: {exc}") from None
        kinds.append(doc.kind)
    return b, tuple(dict.fromkeys(kinds))


__all__ = ["EXTRACTORS", "Builder", "ExtractError", "check_report_values", "extract", "point_key"]
