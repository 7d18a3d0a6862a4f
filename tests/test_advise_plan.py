"""Plans per route: the exact commands, in order, against hand-written expectations."""

import dataclasses

import pytest
from packaging.version import Version

from envdoctor.advise.image import choose_image
from envdoctor.advise.machine import blank_machine, is_datacenter, machine_from_facts
from envdoctor.advise.recommend import recommend
from envdoctor.advise.whatif import Overrides, WhatIfError, apply_overrides, parse_gpu, read_driver
from envdoctor.facts import (
    DockerFacts,
    DriverFacts,
    Facts,
    GpuInfo,
    PciDevice,
    PciFacts,
    SystemFacts,
    TargetPython,
    TorchFacts,
)
from envdoctor.render.plan import plan_document, render_script, render_text
from envdoctor.table import load_table

T = load_table()


def whatif(route=None, torch=None, nvcc=False, index_base=None, **o):
    m = apply_overrides(blank_machine(), Overrides(**o), T)
    return recommend(m, T, route, torch, nvcc, None, index_base)


def ubuntu(version="24.04", **o):
    o.setdefault("python_version", "3.12")
    return dict(os=f"ubuntu:{version}", **o)


def pip_lines(plan):
    return [c for c in plan.commands if " -m pip install " in c]


# --- system ------------------------------------------------------------------------------------


def test_gpu_without_driver_installs_the_driver_first():
    p = whatif(**ubuntu(driver="none", gpus=("RTX 4090",)))
    assert p.commands[:3] == ("sudo apt-get update", "sudo apt-get install -y nvidia-driver-580-open", "sudo reboot")
    assert p.commands[3] == "python3.12 -m venv ~/venvs/torch"
    assert p.commands[4] == (
        "~/venvs/torch/bin/python -m pip install torch==2.13.0+cu130 torchvision==0.28.0 "
        "--index-url https://download.pytorch.org/whl/cu130"
    )
    assert p.choice.driver_needed == "580"


def test_pascal_without_driver_takes_the_proprietary_modules():
    # The open kernel modules support Turing and newer only.
    p = whatif(**ubuntu(driver="none", gpus=("GTX 1080 Ti",)))
    assert "sudo apt-get install -y nvidia-driver-580" in p.commands
    assert not any("-open" in c for c in p.commands)


def test_debian_driver_install_comes_from_nvidia_repository():
    p = whatif(os="debian:12", python_version="3.11", driver="none", gpus=("H100",))
    assert p.commands[0] == (
        "wget https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb"
    )
    assert "sudo apt-get install -y nvidia-open-580" in p.commands


def test_every_plan_ends_with_verification():
    for p in (whatif(**ubuntu(driver="580.95.05", gpus=("H100",)), route=r) for r in ("system", "conda", "docker")):
        assert p.steps[-1].title == "Verify"
        assert any(c.startswith("envdoctor check") for c in p.steps[-1].commands)


def test_system_plan_offers_uv_bound_to_the_same_interpreter():
    p = whatif(**ubuntu(driver="570.133.20", gpus=("RTX 5090",)))
    assert p.alternatives == (
        "uv pip install --python ~/venvs/torch/bin/python torch==2.11.0+cu128 "
        "torchvision==0.26.0 torchaudio==2.11.0 --index-url https://download.pytorch.org/whl/cu128",
    )


def test_probed_venv_gets_the_wheels_directly():
    facts = Facts(
        system=SystemFacts(os_id="ubuntu", os_version="22.04", arch="x86_64", glibc="2.35"),
        driver=DriverFacts(driver_version="550.54.15", gpus=(GpuInfo(0, "NVIDIA A100-SXM4-80GB", "8.0"),)),
        python=TargetPython(executable="/srv/proj/.venv/bin/python", version="3.10.12", venv=True),
    )
    p = recommend(machine_from_facts(facts, T), T)
    assert p.route == "system" and not any("venv" in s.title for s in p.steps)
    # 550 runs CUDA 12.4 directly (550.54.14); cu126 would need MVC, and 2.6 is the last with cu124.
    assert pip_lines(p) == [
        "/srv/proj/.venv/bin/python -m pip install torch==2.13.0+cu126 torchvision==0.28.0 "
        "--index-url https://download.pytorch.org/whl/cu126"
    ]
    assert p.choice.compatibility == "minor-version"


def test_mirror_index_url_is_used_in_the_commands():
    p = whatif(**ubuntu(driver="580.95.05", gpus=("H100",)), index_base="https://mirror.example/pytorch/whl")
    assert pip_lines(p)[0].endswith("--index-url https://mirror.example/pytorch/whl/cu130")
    assert p.index_url == "https://mirror.example/pytorch/whl/cu130"


def test_ubuntu_18_04_wheels_stop_at_2_6_and_its_toolkits_at_cuda_12_1():
    # glibc 2.27: torch 2.7+ (manylinux_2_28) does not install, so 2.6 cu124 is the newest wheel.
    p = whatif(**ubuntu("18.04", python_version="3.10", glibc="2.27", driver="550.54.15", gpus=("RTX 3090",)))
    assert (p.torch, p.variant) == ("2.6.0", "cu124")
    # With nvcc: NVIDIA's ubuntu1804 repository stops at CUDA 12.1 (nvidia/cuda 12.1.0-*-ubuntu18.04 is
    # the last image of that line), so no 12.4 toolkit; but 2.6 also ships cu118 wheels (11.8 is in
    # its release matrix, test-infra b1bdc332, built on the CentOS 7 image) and the repository has
    # 11.8: torch 2.6.0+cu118 with the 11.8 toolkit (its arch list is inferred, so the plan says so).
    p = whatif(
        route="system",
        nvcc=True,
        **ubuntu("18.04", python_version="3.10", glibc="2.27", driver="550.54.15", gpus=("RTX 3090",)),
    )
    assert (p.torch, p.variant) == ("2.6.0", "cu118")
    toolkits = [c for c in p.commands if "cuda-toolkit-" in c]
    assert toolkits == ["sudo apt-get install -y cuda-toolkit-11-8"]
    assert any("kernel list of torch 2.6.0 cu118 is inferred" in w for w in p.warnings)


def test_with_nvcc_refuses_a_toolkit_the_repository_does_not_have():
    # Pascal needs a CUDA 12 build (cu126); Debian 13's NVIDIA repository starts at CUDA 13.0, which
    # removed Pascal: no matching nvcc from it, so no toolkit step, and the conda way is named.
    p = whatif(
        nvcc=True, os="debian:13", python_version="3.13", glibc="2.41", driver="580.95.05", gpus=("GTX 1080 Ti",)
    )
    assert p.variant == "cu126" and not any("cuda-toolkit" in c for c in p.commands)
    assert any("debian13 repository has no CUDA 12.6 toolkit" in w and "cuda-nvcc" in w for w in p.warnings)


def test_with_nvcc_installs_the_toolkit_of_torchs_cuda_before_the_wheels():
    p = whatif(nvcc=True, **ubuntu("22.04", driver="580.95.05", gpus=("RTX 4090",)))
    cmds = list(p.commands)
    keyring = (
        "wget https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb"
    )
    assert cmds.index(keyring) < cmds.index("sudo apt-get install -y cuda-toolkit-13-0") < cmds.index(pip_lines(p)[0])
    assert "export CUDA_HOME=/usr/local/cuda-13.0" in cmds


def test_rhel_toolkit_uses_dnf_and_the_repo_file():
    p = whatif(nvcc=True, os="rhel:9", python_version="3.12", driver="580.95.05", gpus=("L4",))
    assert (
        "sudo dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/"
        "rhel9/x86_64/cuda-rhel9.repo"
    ) in p.commands
    assert "sudo dnf install -y cuda-toolkit-13-0" in p.commands


def test_no_fit_has_no_commands_but_both_ways_out():
    p = whatif(**ubuntu("20.04", python_version="3.10", driver="450.51.06", gpus=("RTX 3090",)))
    assert not p.ok and p.commands == ()
    kinds = [w.kind for w in p.ways_out]
    assert kinds[0] == "upgrade-driver"
    assert "sudo apt-get install -y nvidia-driver-580-open" in p.ways_out[0].commands


def test_no_gpu_is_cpu_wheels():
    p = whatif(os="debian:12", python_version="3.11", no_gpu=True)
    assert p.status == "cpu" and p.variant == "cpu"
    assert pip_lines(p) == [
        "~/venvs/torch/bin/python -m pip install torch==2.13.0 torchvision==0.28.0 "
        "--index-url https://download.pytorch.org/whl/cpu"
    ]


def test_macos_gets_the_default_wheel_with_mps():
    p = whatif(os="macos:14.5", python_version="3.12", no_gpu=True)
    assert p.status == "macos" and p.index_url == "https://pypi.org/simple"
    assert pip_lines(p) == ["~/venvs/torch/bin/python -m pip install torch==2.13.0 torchvision==0.28.0"]


def test_amd_gpu_is_outside_with_the_rocm_index_named():
    p = whatif(os="ubuntu:22.04", python_version="3.12", gpus=("MI300X",))
    assert p.status == "amd" and not p.ok and p.commands == ()
    # 2.13's ROCm variants are rocm7.1 and rocm7.2 (test-infra 6d36e31f).
    assert p.index_url == "https://download.pytorch.org/whl/rocm7.2"
    assert "outside what envdoctor advises" in p.warnings[0]


# --- conda ---------------------------------------------------------------------------------------


def test_conda_route_for_torch_2_7_uses_conda_forge_not_the_pytorch_channel():
    # 2.5 was the last release on -c pytorch (pytorch/pytorch#138506).
    p = whatif(route="conda", torch="2.7", os="ubuntu:24.04", driver="570.133.20", gpus=("RTX 4090",))
    create = p.commands[0]
    assert create == (
        "conda create -y -n torch -c conda-forge --override-channels python=3.12 pytorch-gpu=2.7 "
        "torchvision cuda-version=12"
    )
    for cmd in p.commands:
        words = cmd.split()
        assert ("-c", "pytorch") not in set(zip(words, words[1:]))
    assert any("several GB" in (s.note or "") for s in p.steps)


def test_conda_route_for_torch_2_5_uses_the_retired_channel_with_pytorch_cuda():
    # 535 runs 12.1 directly (530.30.02) and 12.4 only by MVC: pytorch-cuda=12.1.
    p = whatif(route="conda", torch="2.5", os="ubuntu:22.04", driver="535.104.05", gpus=("RTX 3090",))
    assert p.commands[0] == (
        "conda create -y -n torch -c pytorch -c nvidia python=3.12 pytorch=2.5.1 "
        "torchvision=0.20.1 torchaudio=2.5.1 pytorch-cuda=12.1"
    )


def test_conda_with_nvcc_adds_cuda_nvcc():
    p = whatif(route="conda", nvcc=True, os="ubuntu:24.04", driver="580.95.05", gpus=("H100",))
    assert p.commands[0].endswith("pytorch-gpu=2.13 torchvision cuda-version=13 cuda-nvcc")


def test_conda_for_pascal_pins_cuda_12():
    # conda-forge's CUDA 13 builds start at sm_75; its 12.x builds still carry sm_60.
    p = whatif(route="conda", os="ubuntu:24.04", driver="580.95.05", gpus=("GTX 1080 Ti",))
    assert "cuda-version=12" in p.commands[0]


# --- docker --------------------------------------------------------------------------------------


def test_docker_on_h200_with_r580_runs_ngc_25_12():
    # NGC 25.12: CUDA 13.1.0, PyTorch 2.10.0a0 (NVIDIA's 25.12 release notes); CUDA 13.x runs on R580.
    p = whatif(route="docker", os="ubuntu:24.04", driver="580.95.05", gpus=("H200",))
    assert p.image.image == "nvcr.io/nvidia/pytorch:25.12-py3" and not p.image.forward_compat
    assert (
        "docker run --gpus all --rm -it --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 "
        "nvcr.io/nvidia/pytorch:25.12-py3"
    ) in p.commands
    assert p.torch.startswith("2.10.0a0") and p.cuda == "13.1.0"


def test_docker_datacenter_gpu_on_r535_uses_forward_compatibility():
    # NGC 24.10 wants R560 but lists 535.86+ among the forward-compatible data-center branches.
    p = whatif(route="docker", os="ubuntu:22.04", driver="535.104.05", gpus=("A100",))
    assert p.image.tag == "24.10" and p.image.forward_compat
    assert any("forward-compatibility mode" in w for w in p.warnings)


def test_docker_geforce_on_r535_gets_no_forward_compatibility():
    p = whatif(route="docker", os="ubuntu:22.04", driver="535.104.05", gpus=("RTX 3090",))
    assert not p.image.forward_compat
    assert Version(T.ngc(p.image.tag).min_driver) <= Version("535")


def test_docker_blackwell_needs_an_image_with_cuda_12_8():
    # 25.01 is the first Blackwell-capable month (CUDA 12.8.0); R570 runs it.
    p = whatif(route="docker", os="ubuntu:24.04", driver="570.133.20", gpus=("RTX 5090",))
    assert p.image.tag == "25.01"


def test_docker_pascal_stays_on_a_cuda_12_image():
    # CUDA 13.0 removed Pascal.
    p = whatif(route="docker", os="ubuntu:24.04", driver="580.95.05", gpus=("GTX 1080 Ti",))
    assert Version(p.image.cuda).major == 12


def test_docker_pascal_is_not_sent_to_an_image_that_dropped_pascal():
    # The 25.01 notes support compute capability 7.5 and later (Pascal and Volta dropped); 24.xx
    # supports 6.0 and later. 24.11/24.12 are rows the table does not confirm, so the newest image for
    # a GTX 1080 Ti (6.1) on R580 is 24.10 (CUDA 12.6.2, R560+), not 25.01 (CUDA 12.8, which still
    # compiles for Pascal, but the image does not support it).
    p = whatif(route="docker", os="ubuntu:24.04", driver="580.95.05", gpus=("GTX 1080 Ti",))
    assert p.image.tag == "24.10" and p.ok
    # the table's min_cc values are unconfirmed, so the plan says to check the notes
    assert any("minimum compute capability of 6.0, unconfirmed" in w for w in p.warnings)
    m = apply_overrides(blank_machine(), Overrides(driver="580.95.05", gpus=("GTX 1080 Ti",), os="ubuntu:24.04"), T)
    image, _, rejected = choose_image(T, "580.95.05", m, None)
    assert image.tag == "24.10"
    assert any(
        r.startswith("25.01: it supports compute capability 7.5 and later (per envdoctor table, unconfirmed)")
        and "Pascal (compute 6.1)" in r
        for r in rejected
    )
    assert not any(r.startswith("24.10:") for r in rejected)


def test_docker_volta_stops_before_25_01_too():
    # V100 (7.0) on R570: 25.01 wants 7.5+, so 24.10 (R560+), the newest confirmed row below it.
    p = whatif(route="docker", os="ubuntu:22.04", driver="570.133.20", gpus=("V100",))
    assert p.image.tag == "24.10" and not p.image.forward_compat


def test_docker_min_cc_confirmed_rejects_without_hedging():
    # A copy of the table in which 25.01's min_cc were confirmed: the rejection states it plainly.
    ngc = tuple(
        dataclasses.replace(r, unconfirmed_fields=tuple(f for f in r.unconfirmed_fields if f != "min_cc"))
        if r.tag in ("25.01", "24.10")
        else r
        for r in T.ngc_releases
    )
    t2 = dataclasses.replace(T, ngc_releases=ngc)
    m = apply_overrides(blank_machine(), Overrides(driver="580.95.05", gpus=("GTX 1080 Ti",), os="ubuntu:24.04"), t2)
    image, warnings, rejected = choose_image(t2, "580.95.05", m, None)
    assert image.tag == "24.10"
    assert "25.01: it supports compute capability 7.5 and later; Pascal (compute 6.1) is below that" in rejected
    assert not any("minimum compute capability" in w for w in warnings)


def test_docker_turing_and_newer_still_get_25_01():
    # T4 (7.5) meets 25.01's minimum: on R570 it runs 25.01 (CUDA 12.8.0) directly.
    p = whatif(route="docker", os="ubuntu:24.04", driver="570.133.20", gpus=("T4",))
    assert p.image.tag == "25.01"


def test_docker_plan_installs_and_configures_the_container_toolkit_when_missing():
    facts = Facts(
        system=SystemFacts(os_id="ubuntu", os_version="24.04", arch="x86_64", glibc="2.39"),
        driver=DriverFacts(driver_version="580.95.05", gpus=(GpuInfo(0, "NVIDIA H200", "9.0"),)),
        docker=DockerFacts(client="/usr/bin/docker", client_version="28.2.2", daemon="ok"),
    )
    p = recommend(machine_from_facts(facts, T), T, route="docker")
    cmds = list(p.commands)
    assert (
        cmds.index("sudo apt-get install -y nvidia-container-toolkit")
        < cmds.index("sudo nvidia-ctk runtime configure --runtime=docker")
        < cmds.index("sudo systemctl restart docker")
    )
    ready = dataclasses.replace(facts, docker=dataclasses.replace(facts.docker, runtimes=("nvidia", "runc")))
    p2 = recommend(machine_from_facts(ready, T), T, route="docker")
    assert not any("nvidia-ctk" in c for c in p2.commands)


# --- what-if parsing and rendering ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text, cc", [("RTX 3090 Ti", "8.6"), ("H100", "9.0"), ("8.6", "8.6"), ("sm_120", "12.0"), ("sm_90a", "9.0")]
)
def test_gpu_names_and_capabilities(text, cc):
    assert parse_gpu(text, T).cc == cc


@pytest.mark.parametrize("text", ["MI300X", "Radeon RX 7900 XTX", "AMD Instinct MI250"])
def test_amd_names(text):
    assert parse_gpu(text, T).vendor == "amd"


@pytest.mark.parametrize(
    "o",
    [
        dict(gpus=("RTX 9999",)),
        dict(driver="12.8"),
        dict(os="ubuntu"),
        dict(python_version="three"),
        dict(no_gpu=True, gpus=("H100",)),
    ],
)
def test_bad_overrides_raise_one_line(o):
    with pytest.raises(WhatIfError):
        apply_overrides(blank_machine(), Overrides(**o), T)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("NVIDIA H100 NVL", True),  # table: datacenter = true (its row is otherwise unconfirmed)
        ("NVIDIA GeForce RTX 4090", False),  # table: GeForce
        ("NVIDIA RTX A6000", None),  # table: the flag is unconfirmed (the heuristic would say False)
        ("GH100 [H200 SXM 141GB]", True),  # lspci name, looked up by its bracketed part
        ("Tesla P100-PCIE-16GB", True),  # not in the table: the name heuristic
        ("NVIDIA GeForce GTX 1650", False),  # not in the table: the name heuristic
        ("Some Future Board", None),
    ],
)
def test_is_datacenter_asks_the_table_first(name, expected):
    assert is_datacenter(name, T) is expected


def test_is_datacenter_follows_the_table_not_the_name():
    # A copy of the table that says the A100 is not a data-center GPU wins over the name heuristic.
    gpus = tuple(
        dataclasses.replace(g, datacenter=False, datacenter_source=None) if g.name.startswith("NVIDIA A100") else g
        for g in T.gpus
    )
    t2 = dataclasses.replace(T, gpus=gpus)
    assert is_datacenter("NVIDIA A100-SXM4-80GB", t2) is False
    assert is_datacenter("NVIDIA A100-SXM4-80GB") is True  # no table: the heuristic
    assert parse_gpu("A100", t2).datacenter is False and parse_gpu("A100", T).datacenter is True


def test_datacenter_by_pci_id_when_the_name_is_unknown():
    # A GPU without a driver, known only by its PCI device id (0x2335: H200) and no pci.ids name.
    facts = Facts(pci=PciFacts(devices=(PciDevice("0000:00:06.0", "0x10de", "0x2335", "0x030200"),)))
    m = machine_from_facts(facts, T)
    assert m.gpus[0].datacenter is True
    # the driver's name is not in the table, but its bus id leads to the PCI device: still the H200's row
    facts = Facts(
        pci=facts.pci,
        driver=DriverFacts(
            driver_version="580.95.05", gpus=(GpuInfo(0, "NVIDIA Renamed Board", "9.0", pci_bus_id="00000000:00:06.0"),)
        ),
    )
    assert machine_from_facts(facts, T).gpus[0].datacenter is True


def test_os_what_if_brings_that_distributions_glibc():
    # Ubuntu 18.04 has glibc 2.27 (pep600_compliance ubuntu-18.04.json): torch 2.7+ wheels are
    # manylinux_2_28 (glibc 2.28) and do not install; 2.6.0's cu124 wheels were built on CentOS 7.
    p = whatif(**ubuntu("18.04", python_version="3.10", driver="550.54.15", gpus=("RTX 3090",)))
    assert p.machine.glibc == "2.27"
    assert (p.torch, p.variant) == ("2.6.0", "cu124")
    assert any("glibc 2.27" in g and "envdoctor's table" in g for g in p.machine.given)
    assert any(r.what == "torch 2.7.1 cu128" and "glibc 2.28" in r.reason for r in p.choice.rejected)
    # --glibc still wins over the distribution's
    p = whatif(**ubuntu("18.04", python_version="3.10", driver="550.54.15", gpus=("RTX 3090",), glibc="2.28"))
    assert p.machine.glibc == "2.28" and Version(p.torch) >= Version("2.7")


def test_os_what_if_for_a_distribution_without_a_glibc_says_it_is_unknown():
    # SLES 15's glibc depends on its service pack: the table gives none, so nothing is assumed.
    p = whatif(os="sles:15", python_version="3.12", driver="580.95.05", gpus=("H100",))
    assert p.machine.glibc is None
    assert any(w.startswith("glibc unknown") for w in p.warnings)


def test_script_splits_at_the_reboot():
    p = whatif(**ubuntu(driver="none", gpus=("RTX 4090",)))
    script = render_script(p)
    assert script.startswith("#!/usr/bin/env bash\n") and "\nset -e\n" in script
    first, second = script.split('echo "Reboot now (sudo reboot), then run: bash $0 --after-reboot"')
    assert "nvidia-driver-580-open" in first and "sudo reboot\n" not in first
    assert "-m pip install torch==2.13.0+cu130" in second


def test_json_document_and_text_agree():
    p = whatif(**ubuntu(driver="580.95.05", gpus=("H100",)))
    doc = plan_document(p)
    assert doc["schema"] == "envdoctor.plan/1" and doc["commands"] == list(p.commands)
    assert "torch 2.13.0+cu130" in render_text(p)


# --- user-acceptance review ---------------------------------------------------------------------


def test_no_gpu_and_nothing_fits_prints_no_step_with_torch_none():
    # Was: "Install no torch from None ... pip install torch==None --index-url None", status "cpu".
    for o in (dict(torch=">=9"), dict(torch="2.1.5"), dict(python_version="3.15"), dict(python_version="2.7")):
        torch = o.pop("torch", None)
        p = whatif(torch=torch, no_gpu=True, os="ubuntu:24.04", **{"python_version": "3.12", **o})
        assert p.status == "no-fit" and not p.ok and p.steps == ()
        text, script = render_text(p), render_script(p)
        assert "None" not in text and "None" not in script
        assert p.ways_out and "nothing fits as the machine is; see the ways out" in text
        assert plan_document(p)["torch"] is None and plan_document(p)["status"] == "no-fit"


def test_a_cpu_choice_without_a_torch_never_becomes_a_step():
    # The renderer's last guard: a choice that says "cpu" but names no torch is no plan.
    from envdoctor.advise.choice import Choice
    from envdoctor.advise.plan import Plan
    from envdoctor.advise.recommend import _never_torch_none

    p = _never_torch_none(Plan("system", "cpu", Choice("cpu"), steps=(), python="python3"))
    assert p.status == "no-fit" and not p.ok


def test_docker_without_a_gpu_gives_a_real_way_out_and_no_unrelated_turned_down_lines():
    # Was: "see the ways out" with none, plus "Turned down: torch 2.14.0 cpu" (an unconfirmed release
    # passed over for the confirmed 2.13.0+cpu, which fits).
    p = whatif(route="docker", no_gpu=True, os="ubuntu:24.04")
    assert p.status == "no-fit"
    assert [w.text for w in p.ways_out] == [
        "NGC images need an NVIDIA GPU: use --route system for the CPU wheels (torch 2.13.0+cpu)"
    ]
    assert p.ways_out[0].commands == ("envdoctor recommend --route system",)
    text = render_text(p)
    assert "Turned down" not in text and "torch 2.14.0" not in text


def test_bare_driver_branch_580_is_read_as_the_r580_branch():
    # CUDA 13.0 GA needs 580.65.06 (release notes, Table 3); a bare 580 used to be 580.0, "older".
    assert read_driver("580", T) == ("580.65.06", "--driver 580: read as the R580 branch (580.65.06 or newer)")
    assert read_driver("570", T)[0] == "570.26"  # CUDA 12.8 GA
    assert read_driver("470", T)[0] == "470.42.01"  # CUDA 11.4 GA
    assert read_driver("580.95.05", T) == ("580.95.05", None)
    p = whatif(**ubuntu(driver="580", gpus=("RTX 4090",)))
    assert p.choice.label == "torch 2.13.0+cu130" and p.choice.compatibility == "direct"
    assert "--driver 580: read as the R580 branch (580.65.06 or newer)" in render_text(p)


@pytest.mark.parametrize(
    "name, cc, nvml",
    [
        ("GTX 1080", "6.1", "NVIDIA GeForce GTX 1080"),
        ("GTX 1070", "6.1", "NVIDIA GeForce GTX 1070"),
        ("GTX 1060", "6.1", "NVIDIA GeForce GTX 1060 6GB"),
        ("RTX 2060", "7.5", "NVIDIA GeForce RTX 2060"),
        ("RTX 2070 Super", "7.5", "NVIDIA GeForce RTX 2070 SUPER"),
        ("RTX 2080", "7.5", "NVIDIA GeForce RTX 2080"),
        ("RTX 3070", "8.6", "NVIDIA GeForce RTX 3070"),
        ("RTX 3060 Ti", "8.6", "NVIDIA GeForce RTX 3060 Ti"),
        ("RTX 4070 Ti", "8.9", "NVIDIA GeForce RTX 4070 Ti"),
        ("RTX A4000", "8.6", "NVIDIA RTX A4000"),
        ("RTX A5000", "8.6", "NVIDIA RTX A5000"),
        ("Tesla P100", "6.0", "Tesla P100-PCIE-16GB"),
        ("L40", "8.9", "NVIDIA L40"),
    ],
)
def test_common_gpus_are_known(name, cc, nvml):
    # Compute capabilities from NVIDIA's CUDA GPU lists (developer.nvidia.com/cuda-gpus, /cuda-legacy-gpus).
    g = parse_gpu(name, T)
    assert (g.name, g.cc, g.inferred) == (nvml, cc, None)


def test_gtx_1080_on_driver_470_gets_a_plan():
    # Was: exit 2 "unknown GPU". R470 runs CUDA 11.8 by minor-version compatibility; cu118 wheels keep sm_60.
    p = whatif(os="ubuntu:20.04", python_version="3.10", gpus=("GTX 1080",), driver="470")
    assert p.ok and p.choice.variant == "cu118"


@pytest.mark.parametrize(
    "name, cc, series",
    [
        ("GeForce GTX 1050 Ti", "6.1", "GTX 10xx"),
        ("GTX 1660 SUPER", "7.5", "GTX 16xx"),
        ("RTX 2060 12GB", "7.5", "RTX 20xx"),
        ("RTX 3050", "8.6", "RTX 30xx"),
        ("RTX 4060 Ti", "8.9", "RTX 40xx"),
        ("RTX 5070 Ti", "12.0", "RTX 50xx"),
        ("RTX 2050", "8.6", "RTX 2050 (GA107)"),  # pci.ids: GA107 [GeForce RTX 2050]
        ("RTX 3050 A Laptop GPU", "8.9", "RTX 3050 A (AD106/AD107)"),
    ],
)
def test_gpu_not_in_the_table_takes_its_series_compute_capability_marked_inferred(name, cc, series):
    g = parse_gpu(name, T)
    assert (g.cc, g.inferred) == (cc, series)
    p = whatif(os="ubuntu:24.04", python_version="3.12", gpus=(name,), driver="580.95.05")
    assert any("inferred from its name" in w for w in p.warnings)


@pytest.mark.parametrize("name", ["RTX 2000 Ada Generation", "Quadro RTX 4000", "RTX PRO 4000 Blackwell"])
def test_workstation_names_are_not_read_as_geforce_series(name):
    with pytest.raises(WhatIfError):
        parse_gpu(name, T)


def test_unknown_gpu_error_suggests_the_near_names():
    with pytest.raises(WhatIfError, match=r"did you mean GTX 1080 Ti\?"):
        parse_gpu("GTX 1800 Ti", T)


@pytest.mark.parametrize("os_", ["windows:11", "windows:10", "win11:23h2", "windows"])
def test_windows_is_refused_in_one_line(os_):
    with pytest.raises(WhatIfError, match="envdoctor plans Linux machines") as info:
        apply_overrides(blank_machine(), Overrides(os=os_), T)
    assert "\n" not in str(info.value)


def test_rhel_venv_note_names_no_debian_package():
    # RHEL family: venv and ensurepip come with python3.11 itself; python3.11-venv is Debian's name.
    p = whatif(os="rhel:9", python_version="3.11", driver="none", gpus=("H100",))
    venv = [st for st in p.steps if st.title.startswith("Create a virtual environment")][0]
    assert "python3.11-venv" not in venv.note and "sudo dnf install -y python3.11" in venv.note
    assert "sudo dnf module enable -y nvidia-driver:580-open" in p.commands
    assert "sudo dnf install -y nvidia-open" in p.commands and "sudo dnf install -y nvidia-open-580" not in p.commands


def _with_torch(version, cuda=None, venv=True):
    facts = Facts(
        system=SystemFacts(
            platform="linux", arch="x86_64", os_id="ubuntu", os_version="24.04", os_like=("debian",), glibc="2.39"
        ),
        python=TargetPython(
            executable="/home/u/venv/bin/python", version="3.12.3", abi_tag="cp312", venv=venv, glibc="2.39"
        ),
        torch=TorchFacts(installed=True, version=version, cuda=cuda),
    )
    return machine_from_facts(facts, T)


def test_already_installed_build_leaves_only_the_verify_step():
    # Was: "Install torch 2.13.0+cpu" into an interpreter that already had it.
    p = recommend(_with_torch("2.13.0+cpu"), T)
    assert p.ok and p.installed and p.choice.label == "torch 2.13.0+cpu"
    assert [st.title for st in p.steps] == ["Verify"]
    assert p.commands == (
        "envdoctor check --python /home/u/venv/bin/python",
        "envdoctor bench --python /home/u/venv/bin/python --cpu",
    )  # CPU wheels: bench --cpu
    assert "already installed" in render_text(p) and "nothing to install" in render_text(p)
    assert plan_document(p)["already_installed"] is True


def test_another_build_of_the_same_version_is_still_installed():
    for version, cuda in (("2.13.0+cu130", "13.0"), ("2.12.1+cpu", None), ("2.13.0", None)):
        p = recommend(_with_torch(version, cuda), T)
        assert not p.installed and any(" -m pip install torch==2.13.0" in c for c in p.commands)


def test_credentials_in_the_index_base_stay_in_the_environment_variable():
    # Was: --index-url http://u:***@host/whl/cu130, which cannot run. The secret is never printed.
    m = apply_overrides(blank_machine(), Overrides(**ubuntu(driver="580.95.05", gpus=("H100",))), T)
    p = recommend(m, T, index_base="http://u:pw@host/whl", index_env="ENVDOCTOR_INDEX_URL")
    assert pip_lines(p) == [
        "~/venvs/torch/bin/python -m pip install torch==2.13.0+cu130 torchvision==0.28.0 "
        '--index-url "$ENVDOCTOR_INDEX_URL/cu130"'
    ]
    assert not any("u:pw" in c or "***" in c for c in p.commands)
    assert p.index_url == "http://u:pw@host/whl/cu130" and p.index_env == "ENVDOCTOR_INDEX_URL"
    given = recommend(
        m, T, index_base="http://u:pw@host/whl", index_env="ENVDOCTOR_INDEX_URL", index_export="http://u:***@host/whl"
    )
    export = "export ENVDOCTOR_INDEX_URL='http://u:***@host/whl'  # set it to your mirror URL with its credentials"
    i = given.commands.index(export)
    assert "$ENVDOCTOR_INDEX_URL/cu130" in given.commands[i + 1] and ":pw@" not in "".join(given.commands)
    assert 'case "$ENVDOCTOR_INDEX_URL" in *"***"*)' in render_script(given)


def test_wsl2_plan_holds_the_windows_driver_to_the_windows_minimums():
    # Windows driver 560.70 under WSL2: CUDA 12.6 needs 560.76 on Windows (560.28.03 on Linux)
    def plan(wsl):
        facts = Facts(
            system=SystemFacts(os_id="ubuntu", os_version="22.04", arch="x86_64", glibc="2.35", wsl=wsl),
            driver=DriverFacts(driver_version="560.70", gpus=(GpuInfo(0, "NVIDIA GeForce RTX 4090", "8.9"),)),
            python=TargetPython(executable="/srv/proj/.venv/bin/python", version="3.12.3", venv=True),
        )
        return recommend(machine_from_facts(facts, T), T, None, "2.8")

    linux, wsl = plan(None), plan("wsl2")
    assert (linux.choice.variant, linux.choice.compatibility) == ("cu126", "direct")
    assert (wsl.choice.variant, wsl.choice.compatibility) == ("cu129", "minor-version")
    up = next(w for w in wsl.ways_out if w.kind == "upgrade-driver")
    assert up.commands[0] == "# WSL2: install or upgrade the NVIDIA driver on Windows, not inside WSL"
