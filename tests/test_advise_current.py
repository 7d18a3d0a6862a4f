"""The torch the target Python has now: the plan says whether it works and what the steps would change.

Was (issue 12): ``recommend`` on the H200, whose torch 2.11.0+cu130 works (the recorded report: CUDA
available, the tiny CUDA operation ran), planned torch 2.13.0 and torchvision 0.28.0 as if nothing
were there, and said nothing of the installed torchaudio 2.11.0 (the table pairs no torchaudio with
torch 2.12 and later).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli

REPORT = Path(__file__).parent / "fixtures/h200-driver580-cuda13/envdoctor-check.json"
VENV = "/opt/torch/.venv/bin/python3"


def recommend(*args, code=0, json_out=True):
    r = CliRunner().invoke(cli, ["recommend", "--offline", *(["--json"] if json_out else []), *args])
    assert r.exit_code == code, r.output
    return json.loads(r.output) if json_out else r.output


def edited_report(tmp_path: Path, **torch) -> Path:
    doc = json.loads(REPORT.read_text())
    doc["facts"]["torch"].update(torch)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


def test_working_torch_on_the_h200_is_said_to_work_and_the_upgrade_is_optional():
    text = recommend("--from", str(REPORT), json_out=False)
    lines = text.splitlines()
    assert lines[0] == (
        "envdoctor recommend: system route: torch 2.11.0+cu130 already works here; upgrading to "
        "torch 2.13.0+cu130 is optional"
    )
    assert lines[1] == f"  planned for: report {REPORT}"
    assert lines[2] == (
        f"  now: torch 2.11.0+cu130 in {VENV} works (the report: imported, CUDA available, "
        "a tiny CUDA operation ran); nothing needs to change"
    )
    assert (
        "The upgrade would change:\n"
        "  - torch 2.11.0+cu130 -> 2.13.0+cu130 (same variant cu130, CUDA 13.0)\n"
        "  - torchvision 0.26.0 -> 0.28.0\n"
        "  - torchaudio 2.11.0 is left as it is: envdoctor's table pairs no torchaudio release with torch "
        "2.13.0, so it cannot say whether 2.11.0 works with it (after the upgrade: "
        f"{VENV} -c 'import torchaudio')\n"
    ) in text
    assert "Commands for the optional upgrade, in order (printed, not run):" in text


def test_working_torch_on_the_h200_in_the_plan_document():
    doc = recommend("--from", str(REPORT))
    assert doc["upgrade_optional"] is True and doc["already_installed"] is False
    cur = doc["current"]
    assert (cur["python"], cur["torch"], cur["variant"], cur["torchvision"], cur["torchaudio"], cur["state"]) == (
        VENV,
        "2.11.0+cu130",
        "cu130",
        "0.26.0",
        "2.11.0",
        "works",
    )
    assert [(c["package"], c["now"], c["then"]) for c in doc["changes"]] == [
        ("torch", "2.11.0+cu130", "2.13.0+cu130"),
        ("torchvision", "0.26.0", "0.28.0"),
        ("torchaudio", "2.11.0", None),
    ]
    # torch and torchvision move together; torchaudio is not pinned to a guess
    assert (
        f"{VENV} -m pip install torch==2.13.0+cu130 torchvision==0.28.0 --index-url "
        "https://download.pytorch.org/whl/cu130" in doc["commands"]
    )
    assert not any("torchaudio==" in c for c in doc["commands"])


def test_an_upgrade_within_a_release_that_pairs_torchaudio_moves_all_three(tmp_path):
    report = edited_report(
        tmp_path, version="2.7.0+cu128", cuda="12.8", torchvision="0.22.0+cu128", torchaudio="2.7.0+cu128"
    )
    doc = recommend("--from", str(report), "--torch", "2.7")
    assert [(c["package"], c["now"], c["then"]) for c in doc["changes"]] == [
        ("torch", "2.7.0+cu128", "2.7.1+cu128"),
        ("torchvision", "0.22.0+cu128", "0.22.1"),
        ("torchaudio", "2.7.0+cu128", "2.7.1"),
    ]
    assert (
        f"{VENV} -m pip install torch==2.7.1+cu128 torchvision==0.22.1 torchaudio==2.7.1 --index-url "
        "https://download.pytorch.org/whl/cu128" in doc["commands"]
    )


def test_a_companion_of_another_release_is_not_already_installed(tmp_path):
    # torch is the chosen build, but torchvision belongs to 2.11: the install line puts 0.28.0 in
    report = edited_report(tmp_path, version="2.13.0+cu130", torchvision="0.26.0", torchaudio=None)
    doc = recommend("--from", str(report))
    assert doc["already_installed"] is False
    assert [(c["package"], c["now"], c["then"]) for c in doc["changes"]] == [("torchvision", "0.26.0", "0.28.0")]


def test_the_chosen_build_with_its_companions_is_already_installed(tmp_path):
    report = edited_report(tmp_path, version="2.13.0+cu130", torchvision="0.28.0", torchaudio=None)
    doc = recommend("--from", str(report))
    assert doc["already_installed"] is True and doc["changes"] == [] and doc["upgrade_optional"] is False
    assert doc["current"]["state"] == "works"


def test_a_broken_build_is_said_broken_and_the_plan_is_not_optional(tmp_path):
    report = edited_report(tmp_path, tiny_op="CUDA error: no kernel image is available for execution on the device")
    doc = recommend("--from", str(report))
    assert doc["upgrade_optional"] is False and doc["current"]["state"] == "broken"
    assert doc["current"]["text"] == (
        f"torch 2.11.0+cu130 in {VENV} does not work here (a tiny CUDA operation failed: CUDA error: no kernel "
        "image is available for execution on the device); the plan replaces it"
    )
    assert not doc["upgrade_optional"]


def test_on_a_what_if_driver_the_report_s_run_is_not_claimed(tmp_path):
    # The same H200 on R535: 2.11.0+cu130 cannot run there (CUDA 13 needs R580), whatever the report saw.
    doc = recommend("--from", str(REPORT), "--driver", "535.104.05")
    assert doc["current"]["state"] == "unfit" and doc["upgrade_optional"] is False
    assert doc["current"]["evidence"] == (
        "by envdoctor's table it does not fit here: CUDA 13.0 needs driver 580.65.06 (minor-version floor "
        "580.65.06); driver 535.104.05 is older; not run: the machine is a what-if"
    )


@pytest.mark.parametrize(
    "route, where",
    [
        ("conda", "this plan installs into ~/miniforge3/envs/torch/bin/python and leaves it as it is"),
        ("docker", "this plan runs torch in a container and leaves it as it is"),
    ],
)
def test_other_routes_leave_the_working_build_as_it_is(route, where):
    r = CliRunner().invoke(cli, ["recommend", "--offline", "--json", "--from", str(REPORT), "--route", route])
    assert r.exit_code in (0, 1), r.output  # docker from inside a container: no image to run
    doc = json.loads(r.output)
    assert doc["current"]["text"].endswith(where) and doc["changes"] == []


def test_metadata_only_build_is_expected_to_work_by_the_table(tmp_path):
    """recommend does not import torch on this machine: the installed build is judged by the table."""
    from tests.faketorch import make_torch

    site = make_torch(tmp_path, version="2.11.0+cu130", cuda="13.0", torchvision="0.26.0", torchaudio="2.11.0")
    r = CliRunner().invoke(
        cli,
        [
            "recommend",
            "--offline",
            "--json",
            "--python",
            sys.executable,
            "--gpu",
            "H100",
            "--driver",
            "580.95.05",
            "--os",
            "ubuntu:24.04",
        ],
        env={"PYTHONPATH": str(site)},
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    cur = doc["current"]
    assert (cur["torch"], cur["torchvision"], cur["torchaudio"], cur["state"]) == (
        "2.11.0+cu130",
        "0.26.0",
        "2.11.0",
        "expected",
    )
    assert cur["evidence"] == (
        "by envdoctor's table it fits here: driver 580.95.05 runs CUDA 13.0 directly, "
        "kernels for every GPU: compute 9.0 via sm_90 cubin; not run: the machine is a what-if"
    )
    assert doc["upgrade_optional"] is True


def test_metadata_only_build_on_a_probed_machine(tmp_path):
    """The GPU-less CI machine, probed, with torch 2.11.0+cpu in its Python (metadata read, not imported)."""
    from tests.faketorch import make_torch
    from tests.machines import cpu_box

    ctx = cpu_box(tmp_path / "m")
    site = make_torch(tmp_path, version="2.11.0+cpu", cuda=None, torchvision="0.26.0+cpu")
    r = CliRunner().invoke(
        cli,
        ["recommend", "--offline", "--json", "--root", str(ctx.root), "--python", sys.executable],
        env=dict(ctx.env, PYTHONPATH=str(site)),
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    cur = doc["current"]
    assert (cur["torch"], cur["variant"], cur["torchvision"], cur["state"]) == (
        "2.11.0+cpu",
        "cpu",
        "0.26.0+cpu",
        "expected",
    )
    assert cur["evidence"] == (
        "by envdoctor's table it fits here; read from its metadata, not imported: `envdoctor check` runs it"
    )
    assert [(c["package"], c["now"], c["then"]) for c in doc["changes"]] == [
        ("torch", "2.11.0+cpu", "2.13.0"),
        ("torchvision", "0.26.0+cpu", "0.28.0"),
    ]
    assert doc["upgrade_optional"] is True


def test_the_chosen_build_installed_but_broken_is_not_nothing_to_install(tmp_path):
    # Was: "already installed: nothing to install" for a build whose tiny CUDA operation failed.
    report = edited_report(
        tmp_path,
        version="2.13.0+cu130",
        torchvision="0.28.0",
        torchaudio=None,
        tiny_op="CUDA error: an illegal memory access was encountered",
    )
    lines = recommend("--from", str(report), json_out=False).splitlines()
    assert lines[0] == (
        f"envdoctor recommend: system route: torch 2.13.0+cu130, the build to use, is installed in "
        f"{VENV} but does not work here (see `now:`)"
    )
    assert lines[2] == (
        f"  now: torch 2.13.0+cu130 in {VENV} does not work here (a tiny CUDA operation failed: CUDA "
        f"error: an illegal memory access was encountered); `envdoctor check --python {VENV}` says "
        "why and how to fix it"
    )


def test_with_libraries_that_pin_another_torch_the_plan_is_not_an_optional_upgrade():
    """`recommend --with vllm` on the H200 (torch 2.11.0 works) said 'upgrading to torch 2.8.0 is
    optional' and 'nothing needs to change', while vllm 0.11.0 pins torch 2.8.0."""
    text = recommend("--from", str(REPORT), "--with", "vllm", json_out=False)
    assert "is optional" not in text.splitlines()[0] and "nothing needs to change" not in text
    assert "Commands for the optional upgrade" not in text
    doc = recommend("--from", str(REPORT), "--with", "vllm")
    assert doc["upgrade_optional"] is False and any("vllm" in c for s in doc["steps"] for c in s["commands"])
