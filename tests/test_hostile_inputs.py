"""Hostile input of issue 27, each family named after its failure: the one typed reader, saved
reports for fleet, CUDA_VISIBLE_DEVICES and --device. Each failed before (exit 3, a traceback, or
a wrong answer); now each is a value, or one line and exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.parse import jsontext
from envdoctor.parse.jsontext import JsonError, get_float, get_int, loads, opt_float, opt_int, opt_str
from envdoctor.parse.visible import VisibleError, check_visible, visible_count
from tests import fleetdocs

HUGE = "9" * 400


# --- the one reader ---------------------------------------------------------------------------


def test_lone_surrogates_in_json_strings_and_keys_come_out_as_replacement_characters():
    data = loads('{"host\\ud800": ["a\\udfffb", {"k": "\\udc80"}], "ok": "\\ud83d\\ude00"}')
    assert data == {"host\ufffd": ["a\ufffdb", {"k": "\ufffd"}], "ok": "\U0001f600"}
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # encodes


def test_a_surrogate_already_in_the_text_is_replaced_too():
    assert loads('"caf\udce9"') == "caf\ufffd"


def test_lenient_getters_agree_on_every_kind_of_value():
    """Six modules had their own _int/_float/_str: _int(3.9) was 3 in fit, None in parse.torch."""
    assert [opt_int(v) for v in (3, 3.0, 3.9, True, "3", None, float("nan"), 10**400)] == [
        3,
        3,
        None,
        None,
        None,
        None,
        None,
        10**400,
    ]
    assert opt_int(10**400, high=2**63) is None and opt_int(-1, low=0) is None
    assert [opt_float(v) for v in (2, 2.5, True, "2", float("inf"), 10**400)] == [2.0, 2.5, None, None, None, None]
    assert [opt_str(v) for v in ("x", "", 5, None, "a\udc80")] == ["x", None, None, None, "a\ufffd"]
    assert opt_int({"n": 4}, "n") == 4 and opt_int([4], "n") is None and opt_str({"s": "x" * 9000}, "s") == "x" * 4096


def test_the_modules_that_had_their_own_getters_use_the_reader_s():
    root = Path(jsontext.__file__).parent.parent
    for module in (
        "fit/facts.py",
        "parse/torch.py",
        "parse/docker.py",
        "fleet/analysis.py",
        "fleet/comms.py",
        "burn/collect.py",
    ):
        text = (root / module).read_text()
        assert not re.search(r"^def _(int|float|str|num)\(", text, re.M), module


def test_typed_getters_refuse_a_number_out_of_the_field_s_range():
    with pytest.raises(JsonError, match="n: 1180591620717411303424 is outside ..9.22337e"):
        get_int({"n": 2**70}, "n", high=2**63)
    with pytest.raises(JsonError, match="the number is out of range"):
        get_float({"w": 10**400}, "w")
    with pytest.raises(JsonError, match="w: -1 is outside 0.."):
        get_float({"w": -1}, "w", low=0)
    assert get_float({"w": 700}, "w", low=0, high=5000) == 700.0


# --- fleet reports ----------------------------------------------------------------------------


def _fleet(*args: str):
    return CliRunner().invoke(cli, ["fleet", *args])


def _reports(folder: Path, extra: dict) -> Path:
    folder.mkdir()
    for i in range(2):
        fleetdocs.write(folder, fleetdocs.host(fleetdocs.h200(), f"gpu-{i}"), f"gpu-{i}.json")
    for name, text in extra.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("fmt", ["", "--json", "--markdown", "--html"])
def test_fleet_report_with_a_400_digit_power_limit_is_merged_not_an_overflow(tmp_path, fmt):
    text = json.dumps(fleetdocs.host(fleetdocs.h200(), "big"))
    text, n = re.subn(r'"power_limit_w": [0-9.]+', f'"power_limit_w": {HUGE}', text, count=1)
    assert n == 1
    folder = _reports(tmp_path / "r", {"big.json": text})
    r = _fleet(str(folder), *([fmt] if fmt else []))
    assert r.exit_code in (0, 1), r.output
    assert "internal error" not in r.output and "Traceback" not in r.output
    assert "big" in r.output or fmt == "--html"  # the page masks node names as --redact does


@pytest.mark.parametrize("fmt", ["", "--json", "--markdown", "--html"])
def test_fleet_report_with_lone_surrogates_encodes_in_every_format(tmp_path, fmt):
    doc = fleetdocs.host(fleetdocs.h200(), "sur\ud800x")
    doc["facts"]["driver"]["driver_version"] = "5\udfff"
    folder = _reports(tmp_path / "r", {"sur.json": json.dumps(doc), "corrupt.json": "{not json"})
    r = _fleet(str(folder), *([fmt] if fmt else []))
    assert r.exit_code == 1, r.output
    assert "internal error" not in r.output
    r.output.encode("utf-8")
    if fmt == "--html":  # the page masks node and file names as --redact does
        assert "ED781" in r.output and r.output.count("ED781") >= 2
    else:
        assert "corrupt.json" in r.output and "gpu-0" in r.output  # named, and the merge went on


def test_fleet_folder_of_only_corrupt_files_is_one_line_exit_2(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "a.json").write_text("{not json")
    (folder / "b.json").write_text('{"schema": "envdoctor.report/1", "x": ' + HUGE + "9}")
    r = _fleet(str(folder))
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and "none of the files under" in r.output


# --- CUDA_VISIBLE_DEVICES and --device --------------------------------------------------------


@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "999999999999", "0,\u00b2", "1e3", "0x1"])
def test_cuda_visible_devices_of_non_ascii_or_huge_digits_is_refused(value):
    with pytest.raises(
        VisibleError,
        match="CUDA_VISIBLE_DEVICES=.* \\(the variable\\): .* is not a GPU index or "
        "UUID; give GPU indices in ASCII digits",
    ):
        check_visible(value)


@pytest.mark.parametrize("value", [None, "", "-1", "NoDevFiles", "0,1", "GPU-c7d3a8fe-462a,MIG-ab", "3,-1", " 1 "])
def test_cuda_visible_devices_of_the_accepted_form_passes(value):
    check_visible(value)


def test_visible_count_reads_only_ascii_digits_as_indices():
    """'٣' was GPU 3 (int() reads Arabic-Indic digits), '²' raised ValueError (exit 3)."""
    assert visible_count("\u0663", 8) == 0 and visible_count("0,\u00b2,1", 8) == 1
    assert visible_count("999999999999", 8) == 0


@pytest.mark.parametrize("command", [["burn", "--seconds", "5"], ["bench"], ["comms"]])
@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "999999999999"])
def test_cuda_visible_devices_is_one_line_exit_2_before_anything_runs(command, value, tmp_path):
    r = CliRunner().invoke(cli, [*command, "--python", "/bin/false"], env={"CUDA_VISIBLE_DEVICES": value})
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "CUDA_VISIBLE_DEVICES=" in lines[0] and "(the variable)" in lines[0], r.output


@pytest.mark.parametrize("command", [["burn"], ["bench"]])
@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "999999999999"])
def test_device_of_superscript_arabic_or_huge_digits_is_one_line_exit_2(command, value):
    r = CliRunner().invoke(cli, [*command, "--device", value, "--python", "/bin/false"])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [
        f"Error: Invalid value for '--device': {value!r}: give a GPU index (0, 1, ... up to 1023) or 'all'"
    ]


# --- a comms child that hangs -----------------------------------------------------------------


@pytest.mark.parametrize("timeout_s, bound", [(10.0, 40.0), (30.0, 60.0), (1.0, 31.0), (300.0, 330.0)])
def test_comms_child_that_hangs_is_stopped_at_its_stated_bound_not_60_s(timeout_s, bound):
    """Issue 27: with --timeout 10 a silent rank was stopped after 60 s; docs/links.md says --timeout + 30."""
    from envdoctor.links.host import CommsOptions, _limits, idle_bound

    opts = CommsOptions(timeout_s=timeout_s)
    assert idle_bound(opts) == bound
    assert _limits(opts, (1 << 20,), ("all_reduce",), 2)[1] == bound


# --- children that answer garbage ---------------------------------------------------------------

_HOSTILE_CHILD = r"""#!/bin/sh
cat > /dev/null
echo 'garbage {"envdoctor_child": 2, "kind": "device"}'
echo '{"envdoctor_child": 2, "kind": "device", "device": {"index": "x", "skipped": [1], "name": 5, "kind": []}}'
echo '{"envdoctor_child": 2, "kind": "plan", "n": "big", "notes": 7, "points": "x", "world_size": [], "devices": 3}'
echo '{"envdoctor_child": 2, "kind": "python", "python_version": 3, "torch_version": ["x"], "torch_cuda": {}}'
echo '{"envdoctor_child": 2, "kind": "point", "point": {"collective": 5, "bytes": "1G", "time_s": "fast"}}'
echo '{"envdoctor_child": 2, "kind": "interval", "interval": {"dtype": "\ud800", "start": "now", "tflops": 1e308}}'
echo '{"envdoctor_child": 2, "kind": "stage", "stage": "caf\udce9 \u202e"}'
printf '\377\376 not utf-8\n'
exit 1
"""


@pytest.mark.parametrize(
    "command", [["burn", "--seconds", "5"], ["bench"], ["comms", "--backend", "gloo", "--nproc", "1"]]
)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_child_of_wrongly_typed_lines_garbage_then_exit_1_is_a_failed_run_not_a_traceback(command, as_json, tmp_path):
    """Issue 27: wrongly typed fields were a TypeError (exit 3); garbage then exit 1 a traceback in burn --json."""
    python = tmp_path / "python3"
    python.write_text(_HOSTILE_CHILD)
    python.chmod(0o755)
    r = CliRunner().invoke(
        cli, [*command, "--python", str(python), *(["--json"] if as_json else [])], env={"CUDA_VISIBLE_DEVICES": None}
    )
    assert r.exit_code in (1, 2), r.output
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    r.stdout.encode("utf-8")
    if as_json and r.exit_code == 1:
        json.loads(r.stdout)


def test_a_file_named_with_a_nul_is_an_input_error_not_a_value_error(tmp_path):
    """os.stat raises ValueError for a NUL: dockerfile 'a\\0b' was exit 3 (the one file reader refuses it)."""
    from envdoctor.inputs import InputError, read_input

    with pytest.raises(InputError, match="a path cannot hold a NUL character"):
        read_input("a\0b")
    r = CliRunner().invoke(cli, ["dockerfile", "--", "a\0b"])
    assert r.exit_code == 2 and "a path cannot hold a NUL character" in r.output, r.output
