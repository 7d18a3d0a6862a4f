"""The "Extensions" section of ``check`` (text and Markdown): one row per installed library.

A row says the version, where it came from and how its import went, so a library that was not
imported never reads as fine::

    flash-attn    2.8.3 (pip, from an index): does not load (ImportError, see ED330)
    xformers      0.0.32.post1 (pip, from an index): imports (0.0.32.post1, 3.1 s)
"""

from __future__ import annotations

from typing import List, Tuple

from envdoctor.facts import Facts
from envdoctor.stack.facts import Extension, StackFacts
from envdoctor.stack.host import CATALOG, signal_name

Row = Tuple[str, str]


def _origin(e: Extension) -> str:
    d = e.direct_url
    how = e.installer or "no INSTALLER"
    if d is None:
        return how
    if d.editable:
        return f"{how}, editable {d.url}"
    if d.vcs:
        return f"{how}, {d.vcs} {d.url}"
    return f"{how}, {d.url}"


def _outcome(e: Extension, stack: StackFacts) -> str:
    o = e.outcome
    if o is None:
        return f"not imported ({stack.imports_skipped})" if stack.imports_skipped else "not imported"
    if o.timed_out:
        return f"import hung (killed after {o.seconds or 0:.0f} s)"
    if o.signal is not None:
        return f"import crashed ({signal_name(o.signal)})"
    if o.ok is None:
        return f"not checked ({o.start_error or o.torch_error or 'no answer'})"
    if not o.ok:
        return f"does not load ({o.error_type})"
    if o.stderr and "xFormers can't load C++/CUDA extensions" in o.stderr:
        return "imports, but its C++/CUDA part does not load"
    took = f", {o.seconds:.1f} s" if o.seconds is not None else ""
    return f"imports{took}"


def extension_rows(facts: Facts) -> List[Row]:
    """The section's rows; the build environment last, when a library was found."""
    stack = facts.torch.extensions
    if not stack.checked:
        return [("Libraries", f"not checked: {stack.error}" if stack.error else "not checked (torch not inspected)")]
    if not stack.extensions:
        names = ", ".join(n for n, _, _ in CATALOG[:6])
        return [("Libraries", f"none of the {len(CATALOG)} envdoctor knows ({names}, ...)")]
    rows: List[Row] = []
    for e in stack.extensions:
        label = e.name if e.name == e.dist else f"{e.name} ({e.dist})"
        rows.append((label, f"{e.version} ({_origin(e)}): {_outcome(e, stack)}"))
        d = e.deepspeed
        if d is not None and not d.unreadable:
            built = [op for op, on in sorted(d.installed_ops.items()) if on]
            with_ = "" if d.torch_version in (None, "0.0") else f" with torch {d.torch_version}, CUDA {d.cuda_version}"
            rows.append(
                (
                    "  DeepSpeed ops",
                    (
                        f"compiled in: {', '.join(built)}{with_}"
                        if built
                        else "none compiled in: built at first use (JIT, needs ninja)"
                    ),
                )
            )
    abi = stack.torch_cxx11_abi
    if abi is not None:
        rows.append(("torch C++ ABI", f"cxx11abi{'TRUE' if abi else 'FALSE'} (torch._C._GLIBCXX_USE_CXX11_ABI)"))
    b = stack.build
    parts = [f"ninja {b.ninja}" if b.ninja else "no ninja"]
    if b.cpus:
        parts.append(f"{b.cpus} CPUs")
    if b.available_bytes:
        parts.append(f"{b.available_bytes / 2**30:.0f} GiB available")
    parts += [f"{k}={v}" for k, v in sorted(b.env.items()) if k in ("MAX_JOBS", "TORCH_CUDA_ARCH_LIST")]
    rows.append(("Source builds", ", ".join(parts)))
    return rows
