"""ED2xx: each finding fires on the machine it describes and stays quiet on its neighbour.

Expected answers are written by hand. Most tests use the small table ``tests/tables/torch-small``
(four torch releases, every index URL on a mirror so the tests show the table's URL is used, no
driver branches on the architectures: the driver is taken to run every GPU); the last ones use
the frozen copy of ``data/``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import pytest

from envdoctor.facts import Facts
from envdoctor.facts.base import ProbeError
from envdoctor.facts.gpu import DriverFacts, GpuInfo, PciDevice, PciFacts
from envdoctor.facts.python import LoadedLibrary, TargetPython, TorchDevice, TorchFacts
from envdoctor.facts.system import SystemFacts
from envdoctor.parse.torch import nccl_version
from envdoctor.rules.torch import RULES
from tests.tables import HERE, table, with_rows

# --- the small table (tests/tables/torch-small) ---------------------------------------------------

LIMITS = (
    "PTX built by a newer 12.x toolkit than the driver cannot be JIT-compiled",
    "APIs introduced after the driver's own CUDA version fail with cudaErrorCallRequiresNewerDriver",
)
CU126_ARCH = ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
CU128_ARCH = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
CU118_ARCH = ("sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
CU130_ARCH = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
MIRROR = "https://mirror.example.org/whl"
TABLE = table("torch-small")


def with_torch_2_9(tmp_path, variants: dict[str, tuple]):
    """torch-small plus a torch 2.9.0 release with these CUDA variants (name -> arch list)."""
    block = (
        '[[release]]\nversion = "2.9.0"\npythons = ["3.10", "3.11", "3.12", "3.13"]\npypi_default = "cu128"\n'
        'manylinux = "manylinux_2_28"\nglibc = "2.28"\nconda = "conda-forge"\n'
        'patches = [{ version = "2.9.0", torchvision = "0.24.0", torchaudio = "2.9.0" }]\n'
        'source = "tests/test_rules_torch.py"\nchecked = "2026-12-01"\n\n'
        '[[release.variant]]\nname = "cpu"\nplatforms = ["linux_x86_64"]\n'
    )
    for name, archs in variants.items():
        listed = ", ".join(f'"{a}"' for a in archs)
        block += f'\n[[release.variant]]\nname = "{name}"\narch_list = [{listed}]\nplatforms = ["linux_x86_64"]\n'

    return table(str(with_rows(HERE / "torch-small", tmp_path, torch=block)))


# --- machines ---------------------------------------------------------------------------------------

PY = "/opt/venv/bin/python"


def gpu(name, cc, index=0):
    return GpuInfo(index=index, name=name, compute_capability=cc, source="nvidia-smi")


def machine(
    torch: TorchFacts,
    gpus=(),
    driver: Optional[str] = "570.86.15",
    driver_cuda: Optional[str] = "12.8",
    pci=(),
    env: Optional[dict[str, str]] = None,
    python: Optional[TargetPython] = None,
    skipped=(),
) -> Facts:
    return Facts(
        torch=torch,
        driver=DriverFacts(
            driver_version=driver if gpus or pci else None,
            driver_cuda=driver_cuda if gpus or pci else None,
            gpus=tuple(gpus),
            sources={"driver_version": "/sys/module/nvidia/version"},
        ),
        pci=PciFacts(devices=tuple(pci)),
        python=python
        or TargetPython(
            executable=PY, chosen_by="python3 on PATH", version="3.12.3", pip="24.0", platform="linux_x86_64"
        ),
        system=SystemFacts(env=env or {}),
        skipped=tuple(skipped),
    )


def built(version: str, cuda: Optional[str], arch=(), available=True, **kw) -> TorchFacts:
    return TorchFacts(installed=True, version=version, cuda=cuda, arch_list=tuple(arch), cuda_available=available, **kw)


def findings(facts, table=TABLE) -> list:
    return [f for rule in RULES for f in rule(facts, table)]


def codes(facts, table=TABLE) -> list[str]:
    return [f.code for f in findings(facts, table)]


def one(facts, code, table=TABLE):
    found = [f for f in findings(facts, table) if f.code == code]
    assert len(found) == 1, [f.code for f in findings(facts, table)]
    return found[0]


RTX4090 = gpu("NVIDIA GeForce RTX 4090", "8.9")
RTX5090 = gpu("NVIDIA GeForce RTX 5090", "12.0")
GTX1080 = gpu("NVIDIA GeForce GTX 1080", "6.1")
A100 = gpu("NVIDIA A100-SXM4-80GB", "8.0")
H200 = gpu("NVIDIA H200", "9.0")


# --- the real H200: nothing fires -----------------------------------------------------------------


def h200_torch(recording: str = "torch-child.txt") -> TorchFacts:
    """torch 2.11.0+cu130 on the H200, as torch_child.py reported it there
    (tests/fixtures/h200-driver580-cuda13/torch-child*.txt), through the probe's own parser."""
    from envdoctor.child import from_ran
    from envdoctor.probes.python import interpret
    from envdoctor.run import Ran
    from tests.fakes import recorded

    ran = Ran(("/opt/torch/.venv/bin/python", "-"), 0, recorded("h200-driver580-cuda13", recording), "", 3.6)
    return interpret(from_ran("torch_probe.py", "python3", ran), "/opt/torch/.venv/bin/python", "python3 on PATH")[1]


def h200(recording: str = "torch-child.txt", **env: str) -> Facts:
    return machine(
        h200_torch(recording),
        gpus=[H200],
        driver="580.159.04",
        driver_cuda="13.0",
        env=dict({"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64:/usr/local/nvidia/lib"}, **env),
        python=TargetPython(
            executable="/opt/torch/.venv/bin/python",
            chosen_by="python3 on PATH",
            version="3.12.3",
            pip=None,
            platform="linux_x86_64",
            venv=True,
        ),
    )


def test_h200_is_quiet():
    assert codes(h200()) == []


def test_h200_recording_parses():
    t = h200_torch()
    assert (t.version, t.cuda, t.cudnn_version, t.nccl_version, t.tiny_op) == (
        "2.11.0+cu130",
        "13.0",
        "9.19.0",
        "2.28.9",
        "ok",
    )
    assert t.cudnn_path == "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"
    assert t.arch_list == ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
    assert (t.torchvision, t.torchaudio, t.installer) == ("0.26.0", "2.11.0", "uv")  # plain PyPI wheels
    assert t.devices[0].capability == "9.0" and t.devices[0].multiprocessors == 132
    # libcuda comes through LD_LIBRARY_PATH=/usr/local/nvidia/lib64 (the driver's, as it should)
    assert ("/usr/local/nvidia/lib64/libcuda.so.580.159.04", "/usr/local/nvidia/lib64") in [
        (x.path, x.via_ld_library_path) for x in t.libraries
    ]


def test_h200_older_recording_agrees():
    """tests/fixtures/h200-driver580-cuda13/torch.txt (recorded before torch_child.py) says the same."""
    import json

    from tests.fakes import recorded

    raw = json.loads(recorded("h200-driver580-cuda13", "torch.txt"))
    t = h200_torch()
    assert (raw["version"], raw["cuda"], tuple(raw["arch_list"]), nccl_version(raw["nccl"])) == (
        t.version,
        t.cuda,
        t.arch_list,
        t.nccl_version,
    )


# --- ED200 / ED201 / ED202 / ED203 --------------------------------------------------------------


def test_ed200_target_python_missing():
    err = ProbeError("not_found", "the target Python /nope/python (--python) could not be run: /nope/python: not found")
    f = machine(
        TorchFacts(error=ProbeError("unavailable", "not inspected")),
        gpus=[A100],
        python=TargetPython(executable="/nope/python", chosen_by="--python", error=err),
    )
    assert codes(f) == ["ED200"]
    finding = one(f, "ED200")
    assert finding.severity == "error"
    assert finding.evidence == (
        "the target Python /nope/python (--python) could not be run: /nope/python: not found (chosen by: --python)",
    )


def test_ed200_quiet_when_python_runs():
    assert "ED200" not in codes(machine(TorchFacts(), gpus=[A100]))


def test_ed201_segfault_on_import():
    t = TorchFacts(
        installed=True,
        version="2.8.0+cu128",
        stage="import torch",
        stderr_tail='Fatal Python error: Segmentation fault\n\nCurrent thread:\n  File "torch/__init__.py", line 11',
        error=ProbeError("crashed", f"{PY} was killed by SIGSEGV during import torch"),
    )
    f = machine(t, gpus=[A100])
    assert codes(f) == ["ED201"]
    finding = one(f, "ED201")
    assert finding.severity == "error"
    assert finding.title == "Python crashed during import torch while envdoctor inspected torch"
    assert finding.evidence[0] == f"{PY} was killed by SIGSEGV during import torch"
    assert finding.evidence[1] == "installed torch: 2.8.0+cu128 (package metadata)"
    assert finding.fix == (f"{PY} -X faulthandler -c 'import torch'",)


def test_ed201_torch_that_does_not_answer_in_time_is_an_error_not_a_warning():
    """Issue 26: a torch that cannot be imported in time is unusable: nothing that uses it will work."""
    t = TorchFacts(
        installed=True,
        version="2.8.0+cu128",
        stage="torch.cuda.is_available()",
        error=ProbeError("timeout", f"{PY} did not finish the torch check in 60 s during torch.cuda.is_available()"),
    )
    finding = one(machine(t, gpus=[A100]), "ED201")
    assert finding.severity == "error"
    assert finding.title == "The torch check did not finish during torch.cuda.is_available()"
    assert finding.fix == (f"{PY} -X faulthandler -c 'import torch; print(torch.cuda.is_available())'",)


def test_ed201_quiet_when_the_python_could_not_run_or_torch_skipped():
    unavailable = TorchFacts(error=ProbeError("unavailable", "not inspected"))
    assert "ED201" not in codes(machine(unavailable, gpus=[A100]))
    crashed = TorchFacts(error=ProbeError("crashed", "killed by SIGSEGV"))
    assert codes(machine(crashed, gpus=[A100], skipped=["torch"])) == []


def test_ed202_missing_cudnn_on_import():
    t = TorchFacts(
        installed=True,
        version="2.8.0+cu128",
        import_error="ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
    )
    f = machine(t, gpus=[A100])
    assert codes(f) == ["ED202"]
    finding = one(f, "ED202")
    assert finding.fix == (f"{PY} -m pip install --force-reinstall torch==2.8.0 --index-url {MIRROR}/cu128",)
    assert finding.evidence[0] == (
        f"ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory (import torch in {PY})"
    )
    assert "nvidia-* packages" in finding.explanation


def test_ed202_quiet_when_import_works():
    assert "ED202" not in codes(h200())


def test_ed203_no_torch_on_gpu_machine():
    f = machine(TorchFacts(), gpus=[RTX4090])
    assert codes(f) == ["ED203"]
    finding = one(f, "ED203")
    assert (finding.severity, finding.fix) == ("info", ("envdoctor recommend",))


def test_ed203_without_gpu_points_to_cpu_wheels_and_is_quiet_when_skipped():
    """Following the README on a GPU-less machine, check ended with "it works" and no torch at all."""
    f = machine(TorchFacts())
    assert codes(f) == ["ED203"] and one(f, "ED203").title.endswith("(no NVIDIA GPU here: the CPU wheels)")
    assert codes(machine(TorchFacts(), gpus=[RTX4090], skipped=["torch"])) == []


def test_ed203_counts_a_gpu_seen_only_on_the_pci_bus():
    pci = PciDevice("0000:01:00.0", "0x10de", "0x2684", "0x030000", compute_capability="8.9")
    assert codes(machine(TorchFacts(), pci=[pci])) == ["ED203"]


# --- ED204: CPU-only build ------------------------------------------------------------------------


def test_ed204_cpu_torch_on_rtx4090_picks_cu128():
    f = machine(built("2.8.0+cpu", None, available=False), gpus=[RTX4090])
    assert codes(f) == ["ED204"]
    finding = one(f, "ED204")
    assert finding.severity == "error"
    assert finding.fix == (f"{PY} -m pip install --force-reinstall torch==2.8.0 --index-url {MIRROR}/cu128",)
    assert finding.evidence[:2] == (
        f"torch 2.8.0+cpu (CPU only) in {PY}: torch.version.cuda is None",
        "GPU 0 (NVIDIA GeForce RTX 4090), compute capability 8.9 (nvidia-smi)",
    )


def test_ed204_pascal_gets_cu126_and_torchvision_follows():
    t = built("2.8.0+cpu", None, available=False, torchvision="0.23.0+cpu")
    finding = one(machine(t, gpus=[GTX1080]), "ED204")
    assert finding.fix == (
        f"{PY} -m pip install --force-reinstall torch==2.8.0 torchvision==0.23.0 --index-url {MIRROR}/cu126",
    )


def test_ed204_old_driver_uses_minor_version_compatibility():
    # 535 runs no 12.6+ build directly; cu129 is the newest it runs by minor-version compatibility
    f = machine(built("2.8.0+cpu", None, available=False), gpus=[A100], driver="535.104.05", driver_cuda="12.2")
    finding = one(f, "ED204")
    assert finding.fix == (f"{PY} -m pip install --force-reinstall torch==2.8.0 --index-url {MIRROR}/cu129",)
    assert "by minor-version compatibility" in finding.explanation


def test_ed204_without_pip_installs_it_first():
    py = TargetPython(executable=PY, chosen_by="--python", version="3.12.3", pip=None, platform="linux_x86_64")
    finding = one(machine(built("2.8.0+cpu", None, available=False), gpus=[RTX4090], python=py), "ED204")
    assert finding.fix == (
        f"{PY} -m ensurepip --upgrade",
        f"{PY} -m pip install --force-reinstall torch==2.8.0 --index-url {MIRROR}/cu128",
    )


def test_ed204_reinstall_into_an_externally_managed_python_makes_a_venv_first():
    """ED204 said `/usr/bin/python3 -m pip install --force-reinstall ...` for Ubuntu's own Python,
    which pip refuses (PEP 668: externally-managed-environment); recommend makes a venv first."""
    system = TargetPython(
        executable="/usr/bin/python3",
        chosen_by="python3 on PATH",
        version="3.12.3",
        pip="24.0",
        platform="linux_x86_64",
        prefix="/usr",
        venv=False,
    )
    t = built("2.8.0+cpu", None, available=False, torchvision="0.23.0+cpu")
    f = replace(
        machine(t, gpus=[RTX4090], python=system),
        system=SystemFacts(os_id="ubuntu", os_version="24.04", os_like=("debian",)),
    )
    finding = one(f, "ED204")
    assert finding.fix == (
        "/usr/bin/python3 -m venv ~/venvs/torch",
        f"~/venvs/torch/bin/python -m pip install torch==2.8.0 torchvision==0.23.0 --index-url {MIRROR}/cu128",
    )
    assert "PEP 668" in finding.explanation and "sudo apt-get install -y python3.12-venv" in finding.explanation
    # the siblings that pip into the target: ED209 installs torch and its pair into the new venv
    vision = built("2.8.0+cu128", "12.8", CU128_ARCH, torchvision="0.22.1+cu128")
    assert one(replace(machine(vision, gpus=[RTX4090], python=system)), "ED209").fix == (
        "/usr/bin/python3 -m venv ~/venvs/torch",
        f"~/venvs/torch/bin/python -m pip install torch==2.8.0 torchvision==0.23.0 --index-url {MIRROR}/cu128",
    )
    # a venv or a conda env is installed into directly
    for inside in (
        replace(system, venv=True, prefix="/opt/venv"),
        replace(system, conda_env=True, prefix="/opt/conda"),
    ):
        assert (
            one(machine(t, gpus=[RTX4090], python=inside), "ED204")
            .fix[0]
            .startswith("/usr/bin/python3 -m pip install --force-reinstall torch==2.8.0")
        )


def test_ed204_unknown_release_falls_back_to_recommend():
    finding = one(machine(built("2.99.0+cpu", None, available=False), gpus=[RTX4090]), "ED204")
    assert finding.fix == ("envdoctor recommend",)


def test_ed204_patch_the_table_lacks_keeps_the_installed_patch():
    # the table knows 2.8.0 only: the variant comes from the 2.8 rows, the pin stays 2.8.1, and
    # torchvision is left out (the table does not know its pair for 2.8.1)
    t = built("2.8.1+cpu", None, available=False, torchvision="0.23.1+cpu")
    assert one(machine(t, gpus=[RTX4090]), "ED204").fix == (
        f"{PY} -m pip install --force-reinstall torch==2.8.1 --index-url {MIRROR}/cu128",
    )


def test_ed204_python_the_release_has_no_wheels_for():
    py = TargetPython(executable=PY, chosen_by="--python", version="3.14.0", pip="25.2", platform="linux_x86_64")
    finding = one(machine(built("2.8.0+cpu", None, available=False), gpus=[RTX4090], python=py), "ED204")
    assert finding.fix == (f"envdoctor recommend --python {PY}",)  # recommend plans for the --python given


def test_ed204_gpu_of_unknown_capability_gets_a_build_unchecked_for_kernels():
    pci = PciDevice("0000:01:00.0", "0x10de", "0x2b85", "0x030000")
    f = machine(built("2.8.0+cpu", None, available=False), pci=[pci])
    assert one(f, "ED204").fix == (f"{PY} -m pip install --force-reinstall torch==2.8.0 --index-url {MIRROR}/cu128",)


PTX_ONLY = ("sm_80", "compute_80")


def test_choice_prefers_cubin_by_minor_version_compatibility_to_ptx(tmp_path):
    # H200 on 560: cu126 (direct, but only PTX for 9.0) or cu128 (sm_90 cubin, by minor-version
    # compatibility); the advisor takes the cubin
    t = with_torch_2_9(tmp_path, {"cu126": PTX_ONLY, "cu128": CU128_ARCH})
    f = machine(built("2.9.0+cpu", None, available=False), gpus=[H200], driver="560.35.03", driver_cuda="12.6")
    finding = one(f, "ED204", t)
    assert finding.fix == (f"{PY} -m pip install --force-reinstall torch==2.9.0 --index-url {MIRROR}/cu128",)
    assert "by minor-version compatibility" in finding.explanation


def test_choice_never_leans_on_ptx_under_minor_version_compatibility(tmp_path):
    # minor-version compatibility cannot JIT-compile PTX newer than the driver: no fit, recommend
    t = with_torch_2_9(tmp_path, {"cu128": PTX_ONLY})
    f = machine(built("2.9.0+cpu", None, available=False), gpus=[H200], driver="535.104.05", driver_cuda="12.2")
    assert one(f, "ED204", t).fix == ("envdoctor recommend",)


def test_ed204_quiet_on_cpu_machine_and_on_cuda_builds():
    assert codes(machine(built("2.8.0+cpu", None, available=False))) == []
    assert "ED204" not in codes(machine(built("2.8.0+cu128", "12.8", CU128_ARCH), gpus=[RTX4090]))


# --- ED205: torch's CUDA against the driver --------------------------------------------------------


def test_ed205_cu130_on_driver_535_is_impossible():
    t = built(
        "2.11.0+cu130",
        "13.0",
        CU130_ARCH,
        available=False,
        cuda_error="The NVIDIA driver on your system is too old (found version 12020).",
    )
    f = machine(t, gpus=[A100], driver="535.104.05", driver_cuda="12.2")
    assert codes(f) == ["ED205"]  # not ED207: the driver explains is_available() == False
    finding = one(f, "ED205")
    assert finding.severity == "error"
    assert finding.title == "torch needs CUDA 13.0, which driver 535.104.05 cannot run"
    assert finding.evidence == (
        f"torch 2.11.0+cu130 (CUDA 13.0) in {PY} (torch.version.cuda)",
        "NVIDIA driver 535.104.05, supports CUDA up to 12.2 (/sys/module/nvidia/version)",
        "CUDA 13.0 needs driver >= 580.65.06 (envdoctor table)",
        "minor-version compatibility for CUDA 13.x needs driver >= 580.65.06",
        "torch.cuda.init(): The NVIDIA driver on your system is too old (found version 12020).",
    )
    # cu128 of the same release runs on 535 by minor-version compatibility and has sm_80
    assert finding.fix == (f"{PY} -m pip install --force-reinstall torch==2.11.0 --index-url {MIRROR}/cu128",)
    assert "upgrade the NVIDIA driver to >= 580.65.06" in finding.explanation


def test_ed205_cu128_on_driver_535_runs_by_minor_version_compatibility():
    f = machine(built("2.8.0+cu128", "12.8", CU128_ARCH), gpus=[A100], driver="535.104.05", driver_cuda="12.2")
    assert codes(f) == ["ED205"]
    finding = one(f, "ED205")
    assert finding.severity == "warning"
    assert finding.title == "torch's CUDA 12.8 runs on driver 535.104.05 only by minor-version compatibility"
    assert LIMITS[0] in finding.explanation and LIMITS[1] in finding.explanation
    assert "minor-version compatibility for CUDA 12.x needs driver >= 525.60.13" in finding.evidence


def test_ed205_from_driver_cuda_alone():
    t = built("2.11.0+cu130", "13.0", CU130_ARCH, available=False)
    f = replace(machine(t, gpus=[A100]), driver=DriverFacts(driver_cuda="12.2", gpus=(A100,)))
    finding = one(f, "ED205")
    assert (finding.severity, finding.title) == ("error", "torch needs CUDA 13.0, which driver 12.2 cannot run")
    # a driver that reports CUDA 12.2 is at least 12.2's own minimum (535.54.03): cu128 by MVC
    assert finding.fix == (f"{PY} -m pip install --force-reinstall torch==2.11.0 --index-url {MIRROR}/cu128",)


def test_ed205_quiet_when_driver_is_new_enough():
    assert "ED205" not in codes(
        machine(built("2.8.0+cu128", "12.8", CU128_ARCH), gpus=[A100], driver="570.86.15", driver_cuda="12.8")
    )
    assert "ED205" not in codes(h200())


# --- ED206: kernels for the GPU ----------------------------------------------------------------------


def test_ed206_cu118_wheel_on_rtx5090():
    t = built(
        "2.7.1+cu118",
        "11.8",
        CU118_ARCH,
        tiny_op="cuda:0: RuntimeError: CUDA error: no kernel image is available for execution on the device",
    )
    f = machine(t, gpus=[RTX5090], driver="575.57.08", driver_cuda="12.9")
    assert sorted(codes(f)) == ["ED206", "ED208"]
    finding = one(f, "ED206")
    assert finding.severity == "error"
    assert finding.title == "torch 2.7.1+cu118 has no kernels for compute capability 12.0"
    assert finding.evidence == (
        "GPU 0 (NVIDIA GeForce RTX 5090): compute capability 12.0 (nvidia-smi)",
        "torch 2.7.1+cu118 has kernels for sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90 "
        "(torch.cuda.get_arch_list())",
    )
    assert finding.fix == (f"{PY} -m pip install --force-reinstall torch==2.7.1 --index-url {MIRROR}/cu128",)


def test_ed206_pascal_on_cu128():
    f = machine(built("2.8.0+cu128", "12.8", CU128_ARCH), gpus=[GTX1080])
    finding = one(f, "ED206")
    assert finding.title == "torch 2.8.0+cu128 has no kernels for compute capability 6.1"
    assert finding.fix == (f"{PY} -m pip install --force-reinstall torch==2.8.0 --index-url {MIRROR}/cu126",)


def test_ed206_no_build_of_the_release_fits():
    f = machine(built("2.12.0+cu130", "13.0", CU130_ARCH), gpus=[GTX1080], driver="580.82.07", driver_cuda="13.0")
    assert one(f, "ED206").fix == ("envdoctor recommend",)


def test_ed206_ptx_only_is_a_warning():
    f = machine(built("2.8.0+cu128", "12.8", ("sm_80", "compute_80")), gpus=[H200])
    finding = one(f, "ED206")
    assert finding.severity == "warning"
    assert finding.evidence[0] == "GPU 0 (NVIDIA H200): compute capability 9.0 (nvidia-smi); only compute_80 PTX fits"


def test_ed206_quiet_when_same_major_cubin_covers():
    assert codes(machine(built("2.8.0+cu128", "12.8", ("sm_80", "sm_86")), gpus=[RTX4090])) == []


def test_ed206_uses_torch_devices_when_the_driver_lists_no_gpu():
    t = built("2.8.0+cu128", "12.8", CU128_ARCH, devices=(TorchDevice(0, "NVIDIA GeForce GTX 1080", "6.1"),))
    f = replace(machine(t), driver=DriverFacts(driver_version="570.86.15", driver_cuda="12.8"))
    assert one(f, "ED206").evidence[0] == (
        "cuda:0 (NVIDIA GeForce GTX 1080): compute capability 6.1 (torch.cuda.get_device_properties)"
    )


# --- ED207: is_available() False ---------------------------------------------------------------------


def test_ed207_error_804():
    t = built(
        "2.8.0+cu128",
        "12.8",
        CU128_ARCH,
        available=False,
        cuda_error="CUDA error: forward compatibility was attempted on non supported HW",
    )
    f = machine(t, gpus=[RTX4090])
    assert codes(f) == ["ED207"]
    finding = one(f, "ED207")
    assert finding.evidence[1] == (
        "torch.cuda.init(): CUDA error: forward compatibility was attempted on non supported HW"
    )
    assert "cuda-compat" in finding.explanation
    assert finding.fix == (f"{PY} -c 'import torch; torch.cuda.init()'   # shows the full CUDA error",)


def test_ed207_hidden_by_cuda_visible_devices():
    t = built("2.8.0+cu128", "12.8", CU128_ARCH, available=False, cuda_error="No CUDA GPUs are available")
    finding = one(machine(t, gpus=[RTX4090], env={"CUDA_VISIBLE_DEVICES": ""}), "ED207")
    assert "CUDA_VISIBLE_DEVICES='' (environment)" in finding.evidence
    assert finding.fix[0] == "unset CUDA_VISIBLE_DEVICES"


def test_ed207_quiet_when_available_or_driver_too_old():
    assert "ED207" not in codes(machine(built("2.8.0+cu128", "12.8", CU128_ARCH), gpus=[RTX4090]))
    t = built("2.11.0+cu130", "13.0", CU130_ARCH, available=False)
    assert "ED207" not in codes(machine(t, gpus=[A100], driver="535.104.05", driver_cuda="12.2"))


# --- ED208: the tiny op ----------------------------------------------------------------------------


def test_ed208_tiny_op_failed():
    t = built("2.8.0+cu128", "12.8", CU128_ARCH, tiny_op="cuda:0: RuntimeError: CUDA error: out of memory")
    f = machine(t, gpus=[RTX4090])
    assert codes(f) == ["ED208"]
    finding = one(f, "ED208")
    assert finding.evidence[0] == (
        "(torch.ones(8, device='cuda') * 2).sum().item(): cuda:0: RuntimeError: CUDA error: out of memory"
    )
    assert "other processes" in finding.explanation


def test_ed208_quiet_when_ok():
    assert "ED208" not in codes(h200())


# --- ED209 / ED210: torchvision and torchaudio -------------------------------------------------------


def test_ed209_torchvision_of_another_release():
    t = built("2.8.0+cu128", "12.8", CU128_ARCH, torchvision="0.22.1+cu128")
    f = machine(t, gpus=[RTX4090])
    assert codes(f) == ["ED209"]
    finding = one(f, "ED209")
    assert finding.title == "torchvision 0.22.1+cu128 does not belong to torch 2.8.0+cu128"
    assert finding.fix == (
        f"{PY} -m pip install --force-reinstall --no-deps torchvision==0.23.0 --index-url {MIRROR}/cu128",
    )


def test_ed210_torchvision_for_another_cuda():
    t = built("2.8.0+cu128", "12.8", CU128_ARCH, torchvision="0.23.0+cu126", torchaudio="2.8.0+cpu")
    found = {(f.code, f.title, f.severity) for f in findings(machine(t, gpus=[RTX4090]))}
    assert found == {
        ("ED210", "torchvision was built for cu126, torch for cu128", "warning"),
        ("ED210", "torchaudio was built for cpu, torch for cu128", "warning"),
    }
    t = built("2.7.1+cu126", "12.6", CU126_ARCH, torchvision="0.22.1+cu118")
    finding = one(machine(t, gpus=[RTX4090]), "ED210")
    assert finding.severity == "error"
    assert finding.fix == (
        f"{PY} -m pip install --force-reinstall --no-deps torchvision==0.22.1 --index-url {MIRROR}/cu126",
    )


def test_ed209_ed210_quiet_on_matching_pairs():
    ok = built("2.8.0+cu128", "12.8", CU128_ARCH, torchvision="0.23.0+cu128", torchaudio="2.8.0+cu128")
    assert codes(machine(ok, gpus=[RTX4090])) == []
    pypi = built("2.8.0", "12.8", CU128_ARCH, torchvision="0.23.0")  # both plain PyPI wheels (cu128)
    assert codes(machine(pypi, gpus=[RTX4090])) == []
    no_audio = built("2.12.0+cu130", "13.0", CU130_ARCH, torchaudio="2.11.0+cu130")  # none released for 2.12
    assert codes(machine(no_audio, gpus=[H200], driver="580.159.04", driver_cuda="13.0")) == []


# --- ED211: LD_LIBRARY_PATH -----------------------------------------------------------------------------

SITE = "/opt/venv/lib/python3.12/site-packages"


def _shadowed(**kw) -> TorchFacts:
    return built(
        "2.8.0+cu128",
        "12.8",
        CU128_ARCH,
        cudnn_version="9.1.0",
        cudnn_path="/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9.1.0",
        libraries=(
            LoadedLibrary("/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9.1.0", "/usr/local/cuda/lib64"),
            LoadedLibrary("/usr/lib/x86_64-linux-gnu/libcuda.so.570.86.15"),
        ),
        bundled_libraries=(f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",),
        location=f"{SITE}/torch",
        **kw,
    )


def test_ed211_system_cudnn_shadows_the_wheels():
    f = machine(_shadowed(), gpus=[RTX4090], env={"LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/usr/local/nvidia/lib64"})
    assert codes(f) == ["ED211"]
    finding = one(f, "ED211")
    assert finding.severity == "warning"
    assert finding.evidence == (
        "torch loaded /usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9.1.0 through "
        "LD_LIBRARY_PATH entry /usr/local/cuda/lib64 (/proc/self/maps)",
        f"the wheel ships {SITE}/nvidia/cudnn/lib/libcudnn.so.9",
    )
    assert finding.fix == ("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64",)


def test_ed211_only_entry_means_unset_and_version_error_means_error():
    t = _shadowed(
        cudnn_error="RuntimeError: cuDNN version incompatibility: PyTorch was compiled against "
        "(9, 10, 2) but found runtime version (9, 1, 0)."
    )
    finding = one(machine(t, gpus=[RTX4090], env={"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}), "ED211")
    assert finding.severity == "error"
    assert finding.fix == ("unset LD_LIBRARY_PATH",)


def test_ed211_quiet_when_the_shipped_copy_is_loaded():
    assert codes(h200()) == []
    # a driver library through LD_LIBRARY_PATH is not a shadowed wheel library
    libcuda = LoadedLibrary("/usr/local/nvidia/lib64/libcuda.so.1", "/usr/local/nvidia/lib64")
    t = replace(_shadowed(), libraries=(libcuda, LoadedLibrary(f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9")))
    assert codes(machine(t, gpus=[RTX4090])) == []


# --- with the real table -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_table():
    from envdoctor.table import load_table

    return load_table()


def test_real_table_cpu_torch_on_rtx4090(real_table):
    f = machine(built("2.8.0+cpu", None, available=False), gpus=[RTX4090])
    assert one(f, "ED204", real_table).fix == (
        f"{PY} -m pip install --force-reinstall torch==2.8.0 --index-url https://download.pytorch.org/whl/cu128",
    )


def test_real_table_cu118_on_rtx5090(real_table):
    f = machine(built("2.7.1+cu118", "11.8", CU118_ARCH), gpus=[RTX5090], driver="575.57.08", driver_cuda="12.9")
    finding = one(f, "ED206", real_table)
    assert finding.fix == (
        f"{PY} -m pip install --force-reinstall torch==2.7.1 --index-url https://download.pytorch.org/whl/cu128",
    )


def test_real_table_cu130_on_535(real_table):
    t = built("2.11.0+cu130", "13.0", CU130_ARCH, available=False)
    finding = one(machine(t, gpus=[A100], driver="535.104.05", driver_cuda="12.2"), "ED205", real_table)
    assert finding.severity == "error"
    assert "CUDA 13.0 needs driver >= 580.65.06 (envdoctor table)" in finding.evidence


def test_real_table_h200_quiet(real_table):
    assert codes(h200(), real_table) == []


def test_real_table_torchvision_pairing(real_table):
    t = built("2.11.0+cu130", "13.0", CU130_ARCH, torchvision="0.25.0+cu130")
    f = machine(t, gpus=[H200], driver="580.159.04", driver_cuda="13.0")
    assert one(f, "ED209", real_table).fix == (
        f"{PY} -m pip install --force-reinstall --no-deps torchvision==0.26.0 "
        "--index-url https://download.pytorch.org/whl/cu130",
    )


# --- real failures recorded on the H200 -----------------------------------------------------------


def test_real_h200_system_cudnn_first_on_ld_library_path(real_table):
    """The system cuDNN 9.14 put before the wheel's 9.19: torch loads libcudnn_graph 9.14 from it."""
    f = h200(
        "torch-child-system-cudnn-first.txt",
        LD_LIBRARY_PATH="/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64:/usr/local/nvidia/lib",
    )
    assert codes(f, real_table) == ["ED211"]
    finding = one(f, "ED211", real_table)
    assert finding.severity == "error"
    assert finding.evidence == (
        "torch loaded /usr/lib/x86_64-linux-gnu/libcudnn_graph.so.9.14.0 through LD_LIBRARY_PATH entry "
        "/usr/lib/x86_64-linux-gnu (/proc/self/maps)",
        "the wheel ships /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn_graph.so.9",
        "torch.backends.cudnn.version(): RuntimeError: cuDNN version incompatibility: PyTorch was compiled  "
        "against (9, 19, 0) but found runtime version (9, 14, 0). PyTorch already comes bundled with cuDNN. "
        "One option to resolving this error is to ensure PyTorch can find the bundled cuDNN. one possibility "
        "is that there is a conflicting cuDNN in LD_LIBRARY_PATH.",
    )
    assert finding.fix == ("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib",)


def test_real_h200_with_every_gpu_hidden(real_table):
    f = h200("torch-child-no-visible-gpu.txt", CUDA_VISIBLE_DEVICES="")
    assert codes(f, real_table) == ["ED207"]
    finding = one(f, "ED207", real_table)
    assert finding.evidence[1] == "torch.cuda.init(): No CUDA GPUs are available"
    assert finding.fix == (
        "unset CUDA_VISIBLE_DEVICES",
        "/opt/torch/.venv/bin/python -c 'import torch; torch.cuda.init()'   # shows the full CUDA error",
    )


def test_ed201_quiet_when_the_target_is_not_a_python_at_all():
    """`check --python /bin/ls` gave ED200 and an ED201 whose fix was `/bin/ls -X faulthandler ...`."""
    from envdoctor.facts import Facts, TargetPython, TorchFacts
    from envdoctor.facts.base import ProbeError
    from envdoctor.rules import torch as torch_rules

    err = ProbeError("exit_status", "/bin/ls exited with status 2: Try '/bin/ls --help' for more information.")
    facts = Facts(
        python=TargetPython(executable="/bin/ls", chosen_by="--python", error=err), torch=TorchFacts(error=err)
    )
    codes = [f.code for rule in torch_rules.RULES for f in rule(facts, None)]
    assert codes == ["ED200"]


def test_ed205_under_wsl2_uses_the_windows_driver_minimums():
    # WSL2: the driver is the Windows one (566.36), held to NVIDIA's Windows column: CUDA 12.8 needs
    # 570.65 there (570.26 on Linux), and the 12.x minor-version floor is 527.41 (525.60.13)
    from envdoctor.table import load_table

    real = load_table()
    base = machine(built("2.8.0+cu128", "12.8", CU128_ARCH), gpus=[RTX4090], driver="566.36", driver_cuda="12.7")
    wsl = replace(base, system=SystemFacts(wsl="wsl2"))
    finding = one(wsl, "ED205", real)
    assert finding.severity == "warning"
    assert (
        "CUDA 12.8 needs driver >= 570.65 on Windows (WSL2 uses the Windows driver) (envdoctor table)"
        in finding.evidence
    )
    assert "minor-version compatibility for CUDA 12.x needs driver >= 527.41" in finding.evidence
    linux = one(base, "ED205", real)
    assert "CUDA 12.8 needs driver >= 570.26 (envdoctor table)" in linux.evidence
    assert "minor-version compatibility for CUDA 12.x needs driver >= 525.60.13" in linux.evidence


def test_ed206_for_a_v100_nvidia_smi_lists_without_compute_cap_on_driver_470():
    """nvidia-smi before R510 has no compute_cap: the GPU was dropped and its kernels never checked."""
    from envdoctor.table import load_table

    v100 = GpuInfo(index=0, name="Tesla V100-SXM2-16GB", source="nvidia-smi")
    f = machine(
        built("2.7.1+cu118", "11.8", ("sm_80", "sm_86", "sm_90")), gpus=[v100], driver="470.256.02", driver_cuda="11.4"
    )
    finding = one(f, "ED206", table=load_table())
    assert finding.title == "torch 2.7.1+cu118 has no kernels for compute capability 7.0"
    assert finding.evidence[0] == (
        "GPU 0 (Tesla V100-SXM2-16GB): compute capability 7.0 (nvidia-smi; compute capability from envdoctor table)"
    )


def test_ed209_for_torchaudio_says_torchaudio_not_torchvision():
    """ED209 for a torchaudio of another release gave torchvision's text (operator torchvision::nms)
    and torchvision's page."""
    t = built("2.8.0+cu128", "12.8", CU128_ARCH, torchaudio="2.7.1+cu128")
    finding = one(machine(t, gpus=[RTX4090]), "ED209")
    assert finding.title == "torchaudio 2.7.1+cu128 does not belong to torch 2.8.0+cu128"
    assert "torchvision" not in finding.explanation and "libtorchaudio.so" in finding.explanation
    assert finding.reference == "https://docs.pytorch.org/audio/2.11.0/installation.html#compatibility-matrix"
    assert finding.fix == (
        f"{PY} -m pip install --force-reinstall --no-deps torchaudio==2.8.0 --index-url {MIRROR}/cu128",
    )
    cpu_audio = built("2.8.0+cu128", "12.8", CU128_ARCH, torchaudio="2.8.0+cpu")
    assert one(machine(cpu_audio, gpus=[RTX4090]), "ED210").reference == finding.reference


def test_k80_on_r470_with_a_cu130_torch_is_not_told_to_upgrade_the_driver_past_keplers_last_branch():
    """Issue 26: K80 + driver 470 + cu130 said "upgrade the driver to >= 580.65.06", a driver no
    Kepler GPU runs (R470 is its last branch, data/gpus.toml). The fix is the newest torch that
    Kepler and R470 run (what recommend picks), or a newer GPU."""
    from envdoctor.table import load_table

    real = load_table()
    f = machine(
        built(
            "2.10.0+cu130",
            "13.0",
            CU130_ARCH,
            available=False,
            cuda_error="CUDA driver version is insufficient for CUDA runtime version",
        ),
        gpus=[gpu("Tesla K80", "3.7")],
        driver="470.256.02",
        driver_cuda="11.4",
    )
    finding = one(f, "ED205", table=real)
    assert finding.severity == "error"
    assert "580" not in finding.explanation and "upgrade the NVIDIA driver" not in finding.explanation
    assert (
        "R470 is the last driver branch for Kepler (compute 3.7): no driver this GPU runs supports CUDA 13.0"
        in finding.explanation
    )
    assert "torch 2.7.1+cu118, the newest torch this GPU and driver 470.256.02 run" in finding.explanation
    assert finding.fix[-2:] == (
        f"{PY} -m pip install --force-reinstall torch==2.7.1 --index-url https://download.pytorch.org/whl/cu118",
        "# or move to a newer GPU: Kepler's drivers end at R470",
    )


def test_ed203_and_ed112_fix_names_the_python_check_was_given():
    """`check --python /usr/bin/python3` on a machine whose python3 on PATH has torch: the fix said
    `envdoctor recommend`, which plans for that other interpreter ("nothing to install")."""
    py = TargetPython(
        executable="/usr/bin/python3", chosen_by="--python", version="3.11.2", pip=None, platform="linux_x86_64"
    )
    f = machine(TorchFacts(), pci=(), python=py)
    f = replace(f, pci=PciFacts(devices=(), source="/sys/bus/pci/devices"))
    assert one(f, "ED203").fix == ("envdoctor recommend --python /usr/bin/python3",)
    from envdoctor.rules.driver import no_gpu

    assert [x.fix for x in no_gpu(f, TABLE)] == [("envdoctor recommend --python /usr/bin/python3   # CPU wheels",)]
    plain = replace(f, python=replace(py, chosen_by="python3 on PATH"))
    assert one(plain, "ED203").fix == ("envdoctor recommend",)
