"""ED3xx rules on hand-written facts; every expected fix is written out by hand."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.facts.base import ProbeError
from envdoctor.facts.conda import CondaFacts
from envdoctor.facts.python import TorchFacts
from envdoctor.facts.system import SystemFacts
from envdoctor.facts.toolkit import Toolkit, ToolkitFacts
from envdoctor.findings import Finding
from envdoctor.rules import toolkits as rules
from envdoctor.table import load_table

UBUNTU = SystemFacts(os_id="ubuntu", os_version="24.04", os_like=("debian",), arch="x86_64")
T128 = Toolkit(
    "/usr/local/cuda-12.8",
    "/usr/local/cuda-12.8/bin/nvcc",
    "12.8.93",
    "12.8",
    "/usr/local/cuda-12.8/bin/nvcc --version",
    ("CUDA_HOME", "/usr/local/cuda*"),
    ("/usr/local/cuda",),
)
T121 = Toolkit(
    "/usr/local/cuda-12.1",
    "/usr/local/cuda-12.1/bin/nvcc",
    "12.1.105",
    "12.1",
    "/usr/local/cuda-12.1/bin/nvcc --version",
    ("PATH", "/usr/local/cuda*"),
)
T130 = Toolkit(
    "/usr/local/cuda-13.0",
    "/usr/local/cuda-13.0/bin/nvcc",
    "13.0.88",
    "13.0",
    "/usr/local/cuda-13.0/bin/nvcc --version",
    ("PATH", "/usr/local/cuda*"),
    ("/usr/local/bin/nvcc", "/usr/local/cuda"),
)


def torch(cuda="12.8", version=None):
    return TorchFacts(installed=True, version=version or f"2.9.1+cu{cuda.replace('.', '')}", cuda=cuda)


def home(*toolkits, root="/usr/local/cuda", ext="/usr/local/cuda-12.8", rule="CUDA_HOME", status="ok", **kw):
    return ToolkitFacts(
        toolkits=toolkits,
        cuda_home=root if rule == "CUDA_HOME" else None,
        extension_root=root,
        extension_rule=rule,
        extension_status=status,
        extension_toolkit=ext,
        **kw,
    )


def found(facts: Facts, code: str, table: object = None) -> list[Finding]:
    return [f for rule in rules.RULES for f in rule(facts, table) if f.code == code]


# ED301 / ED302 -----------------------------------------------------------------------------------


def test_ed301_nvcc_major_differs_from_torch():
    facts = Facts(system=UBUNTU, torch=torch("13.0", "2.11.0+cu130"), toolkits=home(T128))
    (f,) = found(facts, "ED301")
    assert f.severity == "error" and "nvcc 12.8" in f.title and "CUDA 13.0" in f.title
    assert f.fix == (
        "wget https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/cuda-keyring_1.1-1_all.deb",
        "sudo dpkg -i cuda-keyring_1.1-1_all.deb",
        "sudo apt-get update",
        "sudo apt-get install -y cuda-toolkit-13-0",
        "export CUDA_HOME=/usr/local/cuda-13.0",
        'export PATH="/usr/local/cuda-13.0/bin:$PATH"',
    )
    assert any("torch.version.cuda = 13.0" in e for e in f.evidence)
    assert any("$CUDA_HOME=/usr/local/cuda" in e for e in f.evidence)
    assert not found(facts, "ED302")


def test_ed301_quiet_when_releases_match_or_torch_has_no_cuda():
    assert not found(Facts(system=UBUNTU, torch=torch("12.8"), toolkits=home(T128)), "ED301")
    assert not found(Facts(torch=TorchFacts(installed=True, version="2.9.1+cpu"), toolkits=home(T128)), "ED301")
    assert not found(Facts(torch=TorchFacts(), toolkits=home(T128)), "ED301")
    assert not found(Facts(torch=torch("13.0"), toolkits=home(T128, status="missing")), "ED301")


def test_ed302_minor_differs_and_the_matching_toolkit_is_already_there():
    facts = Facts(system=UBUNTU, torch=torch("12.1"), toolkits=home(T128, T121))
    (f,) = found(facts, "ED302")
    assert f.severity == "warning"
    assert f.fix == ("export CUDA_HOME=/usr/local/cuda-12.1", 'export PATH="/usr/local/cuda-12.1/bin:$PATH"')
    assert not found(facts, "ED301")


def test_ed302_in_a_conda_env_installs_cuda_nvcc():
    facts = Facts(
        torch=torch("12.6"),
        toolkits=home(T128),
        conda=CondaFacts(flavor="micromamba", active_prefix="/home/ada/micromamba/envs/torch"),
    )
    (f,) = found(facts, "ED302")
    assert f.fix == ("micromamba install -c conda-forge cuda-nvcc=12.6", 'export CUDA_HOME="$CONDA_PREFIX"')


def test_ed302_fix_on_rhel_and_suse():
    rocky = SystemFacts(os_id="rocky", os_version="9.4", os_like=("rhel", "centos", "fedora"), arch="x86_64")
    (f,) = found(Facts(system=rocky, torch=torch("12.6"), toolkits=home(T128)), "ED302")
    assert f.fix[:3] == (
        "sudo dnf config-manager --add-repo "
        "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/cuda-rhel9.repo",
        "sudo dnf clean expire-cache",
        "sudo dnf install -y cuda-toolkit-12-6",
    )
    sles = SystemFacts(os_id="sles", os_version="15.6", os_like=("suse",), arch="x86_64")
    (f,) = found(Facts(system=sles, torch=torch("12.6"), toolkits=home(T128)), "ED302", load_table())
    assert f.fix[:3] == (
        "sudo zypper addrepo https://developer.download.nvidia.com/compute/cuda/repos/sles15/x86_64/cuda-sles15.repo",
        "sudo zypper refresh",
        "sudo zypper install -y cuda-toolkit-12-6",
    )
    # without the table SLES is not guessed (its folder is sles15, not sles156): the guide instead
    (f,) = found(Facts(system=sles, torch=torch("12.6"), toolkits=home(T128)), "ED302")
    assert f.fix[0].startswith("# install the CUDA 12.6 toolkit")
    (f,) = found(Facts(system=SystemFacts(os_id="arch"), torch=torch("12.6"), toolkits=home(T128)), "ED302")
    assert f.fix[0].startswith("# install the CUDA 12.6 toolkit")


def test_ed309_fix_takes_the_repository_folder_from_the_table():
    # Oracle Linux 9 uses rhel9 (data/distros.toml also_ids); Linux Mint has no NVIDIA repository
    ol = SystemFacts(os_id="ol", os_version="9.6", os_like=("fedora",), arch="x86_64")
    (f,) = found(Facts(system=ol, torch=torch("12.8")), "ED309", load_table())
    assert f.fix[0] == (
        "sudo dnf config-manager --add-repo "
        "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/cuda-rhel9.repo"
    )
    mint = SystemFacts(os_id="linuxmint", os_version="22", os_like=("ubuntu", "debian"), arch="x86_64")
    (f,) = found(Facts(system=mint, torch=torch("12.8")), "ED309", load_table())
    assert f.fix == (
        "# install the CUDA 12.8 toolkit for your distribution: https://developer.nvidia.com/cuda-toolkit-archive",
        "export CUDA_HOME=/usr/local/cuda-12.8",
        'export PATH="/usr/local/cuda-12.8/bin:$PATH"',
    )


# ED303 -------------------------------------------------------------------------------------------


def test_ed303_cuda_home_does_not_exist():
    facts = Facts(torch=torch("12.8"), toolkits=home(T128, root="/usr/local/cuda-12.4", ext=None, status="missing"))
    (f,) = found(facts, "ED303")
    assert f.severity == "error" and "/usr/local/cuda-12.4" in f.title
    assert f.fix == (
        "grep -n CUDA_HOME ~/.bashrc ~/.profile ~/.bash_profile /etc/environment   # where it is set",
        "export CUDA_HOME=/usr/local/cuda-12.8",
        'export PATH="/usr/local/cuda-12.8/bin:$PATH"',
    )


def test_ed303_with_no_toolkit_at_all_unsets_it():
    facts = Facts(toolkits=home(root="/opt/cuda", ext=None, rule="CUDA_PATH", status="missing"))
    (f,) = found(facts, "ED303")
    assert f.fix[-1] == "unset CUDA_PATH" and "CUDA_PATH points to /opt/cuda" in f.title


def test_ed303_quiet():
    assert not found(Facts(toolkits=home(T128)), "ED303")
    missing = home(root="/usr/local/cuda", ext=None, rule="/usr/local/cuda", status="missing")
    assert not found(Facts(toolkits=missing), "ED303")


# ED304 -------------------------------------------------------------------------------------------


def test_ed304_cuda_home_and_path_name_different_releases():
    facts = Facts(toolkits=home(T128, T121, nvcc_on_path="/usr/local/cuda-12.1/bin/nvcc"))
    (f,) = found(facts, "ED304")
    assert f.severity == "warning" and "CUDA 12.8" in f.title and "CUDA 12.1" in f.title
    assert f.fix == ('export PATH="/usr/local/cuda-12.8/bin:$PATH"',)


def test_ed304_quiet_with_one_toolkit_or_the_same_one():
    assert not found(Facts(toolkits=home(T128, nvcc_on_path="/usr/local/cuda/bin/nvcc")), "ED304")
    assert not found(Facts(toolkits=home(T128, T121, nvcc_on_path="/usr/local/cuda/bin/nvcc")), "ED304")
    assert not found(
        Facts(
            toolkits=home(
                T128,
                T121,
                root="/usr/local/cuda-12.1",
                ext="/usr/local/cuda-12.1",
                rule="nvcc on PATH",
                nvcc_on_path="/usr/local/cuda-12.1/bin/nvcc",
            )
        ),
        "ED304",
    )


# ED305 / ED306 / ED307 ---------------------------------------------------------------------------


def test_ed305_this_machine_wrapper_nvcc_in_usr_local_bin():
    facts = Facts(
        torch=torch("13.0"),
        toolkits=ToolkitFacts(
            toolkits=(T130,),
            nvcc_on_path="/usr/local/bin/nvcc",
            extension_root="/usr/local",
            extension_rule="nvcc on PATH",
            extension_status="no_headers",
            extension_toolkit="/usr/local/cuda-13.0",
            path_nvccs=("/usr/local/bin/nvcc",),
        ),
    )
    (f,) = found(facts, "ED305")
    assert f.severity == "warning" and f.fix == ("export CUDA_HOME=/usr/local/cuda-13.0",)
    assert any("/usr/local/include/cuda_runtime.h does not" in e for e in f.evidence)


def test_ed306_cuda_home_is_a_runtime_without_nvcc():
    facts = Facts(
        torch=torch("12.8"),
        toolkits=home(root="/opt/cuda-runtime", ext=None, status="no_nvcc"),
        system=SystemFacts(os_id="debian", os_version="12", arch="x86_64"),
    )
    (f,) = found(facts, "ED306")
    assert f.fix[3] == "sudo apt-get install -y cuda-toolkit-12-8" and "debian12" in f.fix[0]
    facts = Facts(torch=torch("12.8"), toolkits=home(T128, root="/opt/cuda-runtime", ext=None, status="no_nvcc"))
    (f,) = found(facts, "ED306")
    assert f.fix == ("export CUDA_HOME=/usr/local/cuda-12.8", 'export PATH="/usr/local/cuda-12.8/bin:$PATH"')


def test_ed307_empty_cuda_path():
    facts = Facts(
        torch=torch("12.8"),
        toolkits=ToolkitFacts(cuda_path="", extension_root="", extension_rule="CUDA_PATH", extension_status="empty"),
    )
    (f,) = found(facts, "ED307")
    assert f.fix == ("unset CUDA_PATH",)


def test_ed305_quiet_for_a_cpu_only_torch_on_the_ci_machine():
    """The CI box (wrapper nvcc in /usr/local/bin, CPU torch 2.13.0): torch builds no CUDA extension,
    its cpp_extension.CUDA_HOME is None, so the warning was noise."""
    cpu = TorchFacts(installed=True, version="2.13.0+cpu", cuda=None)
    facts = Facts(
        torch=cpu,
        toolkits=ToolkitFacts(
            toolkits=(T130,),
            nvcc_on_path="/usr/local/bin/nvcc",
            extension_root="/usr/local",
            extension_rule="nvcc on PATH",
            extension_status="no_headers",
            extension_toolkit="/usr/local/cuda-13.0",
            path_nvccs=("/usr/local/bin/nvcc",),
        ),
    )
    assert not found(facts, "ED305")


def test_ed305_306_307_quiet():
    facts = Facts(toolkits=home(T128))
    assert not any(found(facts, c) for c in ("ED305", "ED306", "ED307"))
    runtime_image = home(root="/usr/local/cuda", ext=None, rule="/usr/local/cuda", status="no_nvcc")
    assert not found(Facts(toolkits=runtime_image), "ED306")


# ED308 / ED309 -----------------------------------------------------------------------------------


def test_ed308_hung_nvcc():
    hung = Toolkit(
        "/usr/local/cuda-12.1",
        "/usr/local/cuda-12.1/bin/nvcc",
        "12.1.1",
        "12.1",
        "/usr/local/cuda-12.1/version.json",
        ("/usr/local/cuda*",),
        error=ProbeError(
            "timeout", "/usr/local/cuda-12.1/bin/nvcc did not answer in 10 s", "/usr/local/cuda-12.1/bin/nvcc --version"
        ),
    )
    (f,) = found(Facts(toolkits=ToolkitFacts(toolkits=(hung, T128))), "ED308")
    assert "did not answer in 10 s" in f.title and f.fix == ("/usr/local/cuda-12.1/bin/nvcc --version",)
    assert not found(Facts(toolkits=ToolkitFacts(toolkits=(T128,))), "ED308")


def test_ed309_torch_with_cuda_and_no_nvcc_anywhere():
    facts = Facts(system=UBUNTU, torch=torch("12.8"))
    (f,) = found(facts, "ED309")
    assert f.severity == "info" and f.fix[3] == "sudo apt-get install -y cuda-toolkit-12-8"


def test_ed309_quiet():
    assert not found(Facts(torch=torch("12.8"), toolkits=home(T128)), "ED309")
    assert not found(Facts(torch=torch("12.8"), conda=CondaFacts(active_prefix="/opt/conda")), "ED309")
    assert not found(Facts(torch=TorchFacts(installed=True, version="2.9.1+cpu")), "ED309")


def test_wsl_uses_the_wsl_ubuntu_repository():
    wsl = SystemFacts(os_id="ubuntu", os_version="22.04", os_like=("debian",), arch="x86_64", wsl="wsl2")
    (f,) = found(Facts(system=wsl, torch=torch("12.8")), "ED309")
    assert (
        f.fix[0]
        == "wget https://developer.download.nvidia.com/compute/cuda/repos/wsl-ubuntu/x86_64/cuda-keyring_1.1-1_all.deb"
    )


def test_every_finding_has_a_reference_and_area():
    facts = Facts(
        system=UBUNTU, torch=torch("13.0"), toolkits=home(T128, T121, nvcc_on_path="/usr/local/cuda-12.1/bin/nvcc")
    )
    findings = [f for rule in rules.RULES for f in rule(facts, None)]
    assert {f.code for f in findings} == {"ED301", "ED304"}
    assert all(f.reference and f.area == "toolkits" and f.fix for f in findings)
