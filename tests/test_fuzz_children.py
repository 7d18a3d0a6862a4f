"""Property tests of the host side of bench, burn and comms: whatever a child prints (fields of the
wrong type, numbers past any range, lone surrogates, control characters, garbage lines), the host
turns it into a result, its verdicts and its text and JSON, all of which encode as UTF-8, and
nothing raises (issue 27: a wrongly typed field was a TypeError and exit 3; a lone surrogate an
exit 0 or a UnicodeEncodeError; garbage then exit 1 a traceback in burn --json).

Each case starts from a real answer (the H200 bench recording, the burn child's healthy steps,
eight H200 comms ranks) and replaces up to five of its values, anywhere in the tree, with hostile
ones. ``ENVDOCTOR_FUZZ_EXAMPLES`` sets the number of examples (the suite's run: 25 per case).
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.child import from_ran
from envdoctor.run import Ran
from tests.test_bench_fakes import child_doc, recorded_run

EXAMPLES = int(os.environ.get("ENVDOCTOR_FUZZ_EXAMPLES", "25"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 25, suppress_health_check=list(HealthCheck)
)

#: Values a hostile or broken child may print in place of any other (each valid JSON).
HOSTILE: List[Any] = [
    "x",
    "",
    "\ud800",
    "a\udfffb",
    "\x00\x1b[2J\u202e",
    "9" * 400,
    10**300,
    -(10**300),
    -1,
    0,
    1.5,
    -0.0,
    1e308,
    True,
    False,
    None,
    [],
    {},
    [1, "x", None],
    {"a": {"b": []}},
    "\u0663",
    "x" * 20000,
]


def _paths(value: Any, where: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
    """Every place in a JSON tree (the root excluded), depth first."""
    out: List[Tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        out.append(where + (key,))
        out.extend(_paths(child, where + (key,)))
    return out


def _set(tree: Any, path: Tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


@st.composite
def mutated(draw: Any, original: Any) -> Any:
    tree = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 5))):
        paths = _paths(tree)
        if not paths:
            break
        _set(tree, draw(st.sampled_from(paths)), copy.deepcopy(draw(st.sampled_from(HOSTILE))))
    return tree


def _line(kind: str, **fields: Any) -> str:
    return json.dumps({"envdoctor_child": 2, "kind": kind, **fields})


def _run(script: str, lines: List[str], rc: int = 0) -> Any:
    from envdoctor.facts.base import ProbeError

    error = None if rc == 0 else ProbeError("exit_status", f"exited {rc}")
    return from_ran(script, "python3", Ran(("python3", "-"), rc, "\n".join(lines) + "\n", "", 3.0, error))


def _encodes(*texts: str) -> None:
    for text in texts:
        text.encode("utf-8")


# --- bench ------------------------------------------------------------------------------------

BENCH_DOC = child_doc(recorded_run("default"))


@SETTINGS
@given(doc=mutated(BENCH_DOC))
def test_bench_child_answer_of_any_shape_is_a_result_that_encodes(doc: Dict[str, Any]) -> None:
    from envdoctor.bench.host import build_result
    from envdoctor.bench.render import render_bench_text
    from envdoctor.documents import dumps
    from envdoctor.facts.serde import DataError, to_data

    run = _run(
        "bench.py", [_line("plan", points=3, devices=doc.get("devices")), "garbage {", _line("result", result=doc)]
    )
    answer = run.result if run.result is not None else {}
    try:
        result = build_result(answer)
    except DataError:
        return  # the host's documented refusal: "the child's output does not fit"
    _encodes(render_bench_text(result), dumps(to_data(result)))


# --- burn -------------------------------------------------------------------------------------


def _burn_lines() -> List[Dict[str, Any]]:
    from tests.test_burn_fakes import healthy_steps

    out = []
    for step in healthy_steps(0):
        if step[0] == "emit":
            out.append(
                {"kind": step[1], **json.loads(json.dumps(step[2]).replace('"$now-1"', "1.0").replace('"$now"', "2.0"))}
            )
        elif step[0] == "intervals":
            for i, rate in enumerate(step[2]):
                out.append(
                    {
                        "kind": "interval",
                        "interval": {
                            "dtype": step[1],
                            "start": 1.0 + i * 0.15,
                            "end": 1.15 + i * 0.15,
                            "products": 100,
                            "gemm_s": 0.15,
                            "tflops": rate,
                            "fastest_tflops": rate,
                            "mismatches": 0,
                            "bad_products": [],
                            "bad_count": 0,
                        },
                    }
                )
        elif step[0] == "result":
            fields = json.loads(json.dumps(step[1]).replace('"$now-1"', "1.0").replace('"$now"', "2.0"))
            out.append({"kind": "result", "result": fields})
    return out


BURN_LINES = _burn_lines()


@SETTINGS
@given(lines=mutated(BURN_LINES), rc=st.sampled_from([0, 1]))
def test_burn_child_lines_of_any_shape_give_a_verdict_that_encodes(lines: List[Any], rc: int) -> None:
    from envdoctor.burn import collect, rules
    from envdoctor.burn.facts import BurnResult
    from envdoctor.burn.render import render_burn_text, verdict_line
    from envdoctor.documents import dumps
    from envdoctor.facts.serde import to_data
    from envdoctor.redact import mask_data
    from envdoctor.table.health import load_health

    text = [
        _line(
            str(e.get("kind")) if isinstance(e, dict) else "x",
            **{k: v for k, v in e.items() if k != "kind"} if isinstance(e, dict) else {},
        )
        for e in lines
    ]
    run = _run("burn.py", ["garbage \xff"] + text, rc)
    health = load_health()
    gpu = collect.from_child(run, 0)
    result = rules.judge(BurnResult(python="python3", seconds=5.0, gpus=(gpu,), cpu_run=gpu.kind == "cpu"), health)
    _encodes(render_burn_text(result), verdict_line(result), dumps(mask_data(to_data(result))))


# --- comms ------------------------------------------------------------------------------------


def _comms_answer() -> Dict[str, Any]:
    from tests.test_comms_result import BUSBW, answer

    return answer(
        0,
        2,
        BUSBW,
        pairs=[{"src": 0, "dst": 1, "bytes": 1 << 28, "iters": 5, "time_s": 0.001, "wrong": 0}],
        host={"status": "ok", "bytes": 1 << 28, "directions": [{"direction": "h2d", "iters": 5, "time_s": 0.01}]},
    )


COMMS_ANSWER = _comms_answer()


@SETTINGS
@given(answer=mutated(COMMS_ANSWER))
def test_comms_rank_answer_of_any_shape_gives_verdicts_that_encode(answer: Dict[str, Any]) -> None:
    from envdoctor.documents import dumps
    from envdoctor.facts.links import LinksFacts
    from envdoctor.links.analysis_comms import build
    from envdoctor.links.analysis_topo import expected
    from envdoctor.links.render_comms import comms_document, render_comms_text
    from envdoctor.links.rules_comms import verdicts
    from envdoctor.links.table import load_links
    from envdoctor.redact import mask_data

    table = load_links()
    links = LinksFacts()
    raw = answer.get("points")
    points = [_line("point", point=p) for p in raw] if isinstance(raw, list) else []
    runs = [
        _run(
            "comms.py",
            [_line("plan", points=4, world_size=2, rank=0, device=answer.get("device"))]
            + points
            + [_line("result", result=answer)],
        ),
        _run("comms.py", ["garbage", _line("error", error=answer.get("device"))], 1),
    ]
    result = build(
        runs,
        backend="nccl",
        launcher="envdoctor",
        world=2,
        links=links,
        top=expected(links, table),
        table=table,
        nccl=None,
        nccl_log_note=None,
        env={},
        ranks=[0, 1],
        common={},
    )
    findings = verdicts(result)
    _encodes(render_comms_text(result, findings), dumps(mask_data(comms_document(result, findings))))


@pytest.mark.parametrize(
    "lines",
    [
        ["garbage", "\x00\x00", '{"envdoctor_child": 2, "kind": "result", "result": "\\ud800"}'],
        ['{"envdoctor_child": 2, "kind": "error", "error": 5}', "Traceback (most recent call last):"],
        [
            '{"envdoctor_child": 2, "kind": "stage", "stage": ["import torch"]}',
            '{"envdoctor_child": 2, "kind": "result", "result": {"schema": 1, "points": "x", "devices": {"a": 1}}}',
        ],
    ],
)
def test_garbage_then_exit_1_is_a_failed_run_not_a_traceback(lines):
    """Issue 27: garbage then exit 1 printed a traceback in burn --json."""
    from envdoctor.burn import collect

    run = _run("burn.py", lines, 1)
    assert not run.ok and run.error is not None
    gpu = collect.from_child(run, 0)
    assert gpu.child is not None and gpu.child.state in ("died", "failed")
    run.error.message.encode("utf-8")
