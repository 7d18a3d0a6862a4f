"""probes/conda.py with fake conda / micromamba programs replaying recorded JSON."""

from __future__ import annotations

import json
import time

from envdoctor.probes.conda import probe
from envdoctor.probes.context import Context
from tests.fakes import FakeBin, recorded

CF129 = "public-conda25-conda-forge-cu129"
MM126 = "public-micromamba2-conda-forge-cu126"
PT121 = "public-conda24-pytorch-channel-cu121"
DL = "/home/ada/miniforge3/envs/dl"
NOT_AN_ENV = json.dumps(
    {
        "caused_by": "None",
        "error": f"EnvironmentLocationNotFound: Not a conda environment: {DL}",
        "exception_name": "EnvironmentLocationNotFound",
        "exception_type": "<class 'conda.exceptions.EnvironmentLocationNotFound'>",
        "location": DL,
        "message": f"Not a conda environment: {DL}",
    },
    indent=2,
)


def ctx(env, timeout=5.0):
    return Context(root=env.pop("_root"), env=env, timeout=timeout)


def fake_conda(tmp_path, name="conda", info=None, listed=None, **extra):
    fb = FakeBin(tmp_path)
    by_args = {"info --json": info if info is not None else (recorded(CF129, "conda-info.txt"), "", 0)}
    by_args[f"list --json --prefix {DL}"] = listed if listed is not None else (recorded(CF129, "conda-list.txt"), "", 0)
    exe = fb.add(name, by_args=by_args, stderr="unexpected call", rc=99, **extra)
    return fb, exe


def test_no_conda_at_all(tmp_path):
    facts = probe(Context(root=tmp_path, env=FakeBin(tmp_path).env(hermetic=True)))
    assert facts.exe is None and facts.error is None and facts.packages == ()


def test_conda_from_conda_exe_with_an_active_env(tmp_path):
    fb, exe = fake_conda(tmp_path)
    facts = probe(
        ctx(dict(fb.env(hermetic=True, CONDA_EXE=str(exe), CONDA_PREFIX=DL, CONDA_DEFAULT_ENV="dl"), _root=tmp_path))
    )
    assert (facts.exe, facts.flavor, facts.found_via) == (str(exe), "conda", "CONDA_EXE")
    assert facts.version == "25.5.1" and facts.base_prefix == "/home/ada/miniforge3"
    assert (facts.active_prefix, facts.active_name) == (DL, "dl")
    assert facts.channels == ("conda-forge",) and facts.virtual_cuda == "12.9"
    assert [p.name for p in facts.packages] == ["cuda-version", "pytorch"]
    assert facts.source == f"{exe} info --json" and facts.packages_source == f"{exe} list --json --prefix {DL}"
    assert facts.error is None


def test_micromamba_from_mamba_exe(tmp_path):
    prefix = "/home/ada/micromamba/envs/torch"
    fb = FakeBin(tmp_path)
    exe = fb.add(
        "micromamba",
        by_args={
            "info --json": (recorded(MM126, "micromamba-info.txt"), "", 0),
            f"list --json --prefix {prefix}": (recorded(MM126, "micromamba-list.txt"), "", 0),
        },
        rc=99,
    )
    facts = probe(ctx(dict(fb.env(hermetic=True, MAMBA_EXE=str(exe), CONDA_PREFIX=prefix), _root=tmp_path)))
    assert (facts.flavor, facts.found_via, facts.version) == ("micromamba", "MAMBA_EXE", "2.3.0")
    assert facts.active_name == "torch"  # from "torch (active)": CONDA_DEFAULT_ENV is unset
    assert {p.name for p in facts.packages} >= {"cuda-nvcc", "pytorch", "pytorch-gpu"}
    assert facts.virtual_cuda == "12.8" and facts.error is None


def test_stale_conda_exe_falls_back_to_path(tmp_path):
    fb, exe = fake_conda(tmp_path)
    env = fb.env(hermetic=True, CONDA_EXE="/opt/gone/bin/conda", CONDA_PREFIX=DL)
    facts = probe(ctx(dict(env, _root=tmp_path)))
    assert (facts.exe, facts.found_via, facts.version) == (str(exe), "PATH", "25.5.1")


def test_conda_on_path_without_an_active_env_lists_nothing(tmp_path):
    info = json.loads(recorded(CF129, "conda-info.txt"))
    info.update(active_prefix=None, active_prefix_name=None)
    fb, exe = fake_conda(tmp_path, info=(json.dumps(info), "", 0), listed=("", "should not run", 99))
    facts = probe(ctx(dict(fb.env(hermetic=True), _root=tmp_path)))
    assert facts.version == "25.5.1" and facts.active_prefix is None and facts.packages == ()
    assert facts.error is None


def test_active_prefix_from_conda_info_when_the_env_is_not_in_the_environment(tmp_path):
    fb, exe = fake_conda(tmp_path)
    facts = probe(ctx(dict(fb.env(hermetic=True), _root=tmp_path)))
    assert facts.active_prefix == DL and len(facts.packages) == 2


def test_conda_info_hangs(tmp_path):
    fb = FakeBin(tmp_path)
    fb.add("conda", hang=True)
    started = time.monotonic()
    facts = probe(ctx(dict(fb.env(hermetic=True, CONDA_PREFIX=DL), _root=tmp_path), timeout=1))
    assert time.monotonic() - started < 3
    assert facts.exe.endswith("/conda") and facts.error.kind == "timeout"
    assert "did not answer in 1 s" in facts.error.message and facts.error.command.endswith("info --json")
    assert facts.active_prefix == DL and facts.version is None


def test_conda_list_fails_with_conda_json_error(tmp_path):
    fb, exe = fake_conda(tmp_path, listed=(NOT_AN_ENV, "", 1))
    facts = probe(ctx(dict(fb.env(hermetic=True, CONDA_PREFIX=DL), _root=tmp_path)))
    assert facts.version == "25.5.1" and facts.packages == ()
    assert facts.error.kind == "exit_status" and f"Not a conda environment: {DL}" in facts.error.message


def test_garbage_and_truncated_json(tmp_path):
    fb, exe = fake_conda(tmp_path, info=("Traceback (most recent call last):\n  File ...\nKeyError: 'x'\n", "", 0))
    facts = probe(ctx(dict(fb.env(hermetic=True, CONDA_PREFIX=DL), _root=tmp_path)))
    assert facts.error.kind == "unparseable" and facts.exe == str(exe)
    text = recorded(CF129, "conda-list.txt")
    fb, exe = fake_conda(tmp_path / "b", listed=(text[: len(text) // 2], "", 0))
    facts = probe(ctx(dict(fb.env(hermetic=True, CONDA_PREFIX=DL), _root=tmp_path)))
    assert facts.error.kind == "unparseable" and facts.version == "25.5.1" and facts.channels == ("conda-forge",)


def test_conda_crashes_with_its_own_error(tmp_path):
    fb, exe = fake_conda(tmp_path, info=("", "CondaError: Unable to create prefix directory '/opt/conda'.\n", 1))
    facts = probe(ctx(dict(fb.env(hermetic=True), _root=tmp_path)))
    assert facts.error.kind == "exit_status" and "Unable to create prefix directory" in facts.error.message


def test_retired_channel_env(tmp_path):
    prefix = "/home/ada/miniconda3/envs/mmcv"
    fb = FakeBin(tmp_path)
    exe = fb.add(
        "conda",
        by_args={
            "info --json": (recorded(PT121, "conda-info.txt"), "", 0),
            f"list --json --prefix {prefix}": (recorded(PT121, "conda-list.txt"), "", 0),
        },
        rc=99,
    )
    facts = probe(ctx(dict(fb.env(hermetic=True, CONDA_EXE=str(exe), CONDA_PREFIX=prefix), _root=tmp_path)))
    pkgs = {p.name: p for p in facts.packages}
    assert pkgs["pytorch"].channel == "pytorch" and pkgs["pytorch-cuda"].version == "12.1"
    assert pkgs["torch"].channel == "pypi" and facts.channels[:2] == ("pytorch", "nvidia")
