"""Every finding code envdoctor emits, in one registry: title, area, severities, meaning, fix, references.

``envdoctor explain ED205`` prints one entry and ``envdoctor explain`` lists them all. The code
that emits a finding writes its own title, evidence and exact commands for the machine at hand;
this registry says what the code means in general, so people can look it up, search for it and
suppress it knowingly. tests/test_codes.py checks that every code in the source is here (with the
same area, severities and references) and that every code here is emitted somewhere.

>>> lookup("ED205").title
"torch's CUDA is newer than the driver runs"
>>> range_of("ED751").name
'fleet'

Ranges (``RANGES``) are fixed; a new capability takes codes from its own range and adds them
here in the same change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Literal, Optional, Tuple

Severity = Literal["error", "warning", "info"]

CODE_PATTERN = re.compile(r"ED\d{3}")


@dataclass(frozen=True)
class CodeRange:
    """``ED{first}``..``ED{last}``: the codes of one area of envdoctor."""

    first: int
    last: int
    name: str  # "driver", "torch", ..., "fleet"
    covers: str  # what its findings are about
    reserved: bool = False  # no code emitted yet: the range is kept for the capability named


RANGES: Tuple[CodeRange, ...] = (
    CodeRange(100, 199, "driver", "the NVIDIA driver, the GPUs, WSL and container access to the GPU"),
    CodeRange(200, 299, "torch", "torch in the target Python: can it import, does its build fit the GPU and driver"),
    CodeRange(300, 399, "toolkits", "CUDA toolkits (nvcc) and the toolkit CUDA extension builds use"),
    CodeRange(400, 499, "conda", "the active conda environment's CUDA packages"),
    CodeRange(500, 599, "docker", "docker, podman and the NVIDIA Container Toolkit"),
    CodeRange(600, 629, "bench", "measured speed against the expected figures (matmul, bandwidth, layers)"),
    CodeRange(630, 699, "fit", "will a model fit: memory estimates against the GPUs, and their measured error"),
    CodeRange(
        700,
        749,
        "verify",
        "after a change, against a snapshot: ED701-ED719 regressions (errors), ED720-ED749 changes (info)",
    ),
    CodeRange(750, 799, "fleet", "many nodes: the node or GPU that differs from the others"),
    CodeRange(800, 839, "burn", "sustained load: per-GPU health verdicts (miscompares, ECC, throttling, Xid)"),
    CodeRange(840, 869, "links", "PCIe and NVLink links and the topology (degraded width or generation, links down)"),
    CodeRange(870, 899, "comms", "collectives through torch.distributed: bus bandwidth against the expected"),
    CodeRange(900, 939, "envdoctor", "envdoctor itself: a check or a data file that failed"),
    CodeRange(940, 969, "profile", "the user's own training or inference step: where its time goes, and the fixes"),
    CodeRange(970, 999, "envdoctor", "envdoctor itself (continued)", reserved=True),
)


@dataclass(frozen=True)
class Code:
    code: str  # "ED205"
    title: str  # one line, general (the finding's own title is specific)
    area: str  # the Finding.area the code is emitted with
    severities: Tuple[Severity, ...]  # the severities it is emitted with, the usual one first
    meaning: str  # what it means and why it matters
    fix: str  # the pattern of the fix (the finding prints the exact commands)
    references: Tuple[str, ...] = ()  # public pages that explain it


# --- references (the same URLs the findings carry) ---------------------------------------------
NVIDIA_DRIVER_GUIDE = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html"
NVIDIA_OPEN_MODULES = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html"
NVIDIA_ARCH_MATRIX = "https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html"
NVIDIA_WSL = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"
XID_CATALOG = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
CUDA_ENV_VARS = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars"
NVML_DEVICE_QUERIES = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"
NVML_NVLINK = "https://docs.nvidia.com/deploy/nvml-api/group__NvLink.html"
FABRIC_MANAGER = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
NCCL_TROUBLESHOOTING = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
NCCL_ACS = NCCL_TROUBLESHOOTING + "#pci-access-control-services-acs"
LINUX_VFIO = "https://docs.kernel.org/driver-api/vfio.html"
MIG_GUIDE = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html"
DRIVER_PERSISTENCE = "https://docs.nvidia.com/deploy/driver-persistence/index.html"
NCCL_TESTS_PERFORMANCE = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
NCCL_TESTS_NVLS = "https://github.com/NVIDIA/nccl-tests/issues/212"
CUDA_BINARY_COMPAT = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"
CUDA_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/"
CUDA_MINOR_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
CUDA_INSTALL_LINUX = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/"
XID_ERRORS = "https://docs.nvidia.com/deploy/xid-errors/index.html"
CTK_USER_GUIDE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/user-guide.html"
CTK_INSTALL = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
CTK_CDI = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html"
TORCH_INSTALL = "https://pytorch.org/get-started/locally/"
TORCH_CPP_EXTENSION = "https://pytorch.org/docs/stable/cpp_extension.html"
TORCHVISION_INSTALL = "https://github.com/pytorch/vision#installation"
TORCHAUDIO_COMPAT = "https://docs.pytorch.org/audio/2.11.0/installation.html#compatibility-matrix"
LD_SO = "https://man7.org/linux/man-pages/man8/ld.so.8.html"
CONDA_FORGE_CUDA = (
    "https://conda-forge.org/docs/user/tipsandtricks/#installing-cuda-enabled-packages-like-tensorflow-and-pytorch"
)
PYTORCH_CONDA_RETIRED = "https://github.com/pytorch/pytorch/issues/138506"
CONDA_PIP_MIXED = "https://www.anaconda.com/blog/using-pip-in-a-conda-environment"
DOCKER_DAEMON = "https://docs.docker.com/engine/daemon/start/"
DOCKER_POSTINSTALL = "https://docs.docker.com/engine/install/linux-postinstall/"
REF_FLASH_ATTN = "https://github.com/Dao-AILab/flash-attention#installation-and-features"
REF_TORCH_ABI = "https://pytorch.org/docs/stable/generated/torch.compiled_with_cxx11_abi.html"
REF_XFORMERS = "https://github.com/facebookresearch/xformers#installing-xformers"
REF_REQUIRES_DIST = "https://packaging.python.org/en/latest/specifications/core-metadata/#requires-dist-multiple-use"
REF_DEEPSPEED = "https://www.deepspeed.ai/tutorials/advanced-install/"
REF_APEX = "https://github.com/NVIDIA/apex#from-source"
REF_NVCC_HOST = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/"
REF_CUDA_COMPAT_DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/"
REF_NGC_PYTORCH = "https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/index.html"
CTK_ENV_VARS = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html"
PT_PROFILER = "https://docs.pytorch.org/docs/stable/profiler.html"
PT_DATALOADER = "https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading"
PT_TF32 = "https://docs.pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices"
PT_OPTIM = "https://docs.pytorch.org/docs/stable/optim.html#algorithms"
PT_DDP = "https://docs.pytorch.org/docs/stable/notes/ddp.html"
PT_CUDA_GRAPHS = "https://docs.pytorch.org/docs/stable/notes/cuda.html#cuda-graphs"
PT_SYNC_DEBUG = "https://docs.pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html"


_CODES: Tuple[Code, ...] = (
    # --- ED1xx: driver, GPU, WSL, container access ---------------------------------------------
    Code(
        "ED101",
        "NVIDIA GPU on the PCI bus, but no NVIDIA driver loaded",
        "driver",
        ("error",),
        "The PCI bus shows an NVIDIA display or 3D controller, yet no NVIDIA kernel module is loaded: "
        "nothing can use the GPU. Either no driver is installed, or its user-space part is installed and "
        "the kernel module did not load: it was not built for the running kernel (a kernel update without "
        "that kernel's headers), Secure Boot refused it (its signing key is not enrolled), or nouveau holds "
        "the card. GPUs bound to vfio-pci are ED113, not this.",
        "No driver: install the branch envdoctor recommend plans for these GPUs (open or proprietary modules "
        "as the GPU needs), with the running kernel's headers; with Secure Boot, enroll the key DKMS signed "
        "the module with after the install (Ubuntu: update-secureboot-policy --enroll-key; elsewhere "
        "mokutil --import /var/lib/dkms/mok.pub), then reboot. Driver installed, module missing: dkms status, "
        "the headers for uname -r, sudo dkms autoinstall, sudo modprobe nvidia, the kernel log (sudo dmesg), "
        "and the key enrolment under Secure Boot; no reinstall. Blacklist nouveau first where it holds the GPU.",
        (NVIDIA_DRIVER_GUIDE,),
    ),
    Code(
        "ED102",
        "Driver upgraded without a reboot: kernel module and user-space driver differ",
        "driver",
        ("error",),
        "The loaded kernel module is one driver version and the installed user-space libraries another. "
        "Until the new module loads, NVML, nvidia-smi and every CUDA program fail with "
        "'Driver/library version mismatch'.",
        "Reboot (or unload and reload the nvidia modules when nothing uses the GPU); hold the driver "
        "packages to stop unattended upgrades. Inside a container all of this is done on the host, then "
        "the container is restarted.",
        (NVIDIA_DRIVER_GUIDE,),
    ),
    Code(
        "ED103",
        "nvidia-smi or NVML cannot read the driver",
        "driver",
        ("error", "warning"),
        "A driver is there, but nvidia-smi or NVML fails (an error when neither answers, a warning when "
        "one still does): the module is not loaded, a GPU hangs, or a container lost its device cgroups.",
        "Read the error text: load the module (modprobe, dkms status), look for Xid errors in the kernel "
        "log, or restart the container; the finding names the commands (for the host when envdoctor runs "
        "in a container; under WSL2, the Windows driver and wsl --shutdown).",
        (NVIDIA_DRIVER_GUIDE,),
    ),
    Code(
        "ED104",
        "nvidia-smi is installed but no NVIDIA GPU is present",
        "gpu",
        ("warning",),
        "The driver's tools are installed, but the PCI bus shows no NVIDIA GPU: the card is not seated or "
        "powered, or the VM's instance type has none.",
        "Check the card (lspci -nn) or the instance type.",
        (NVIDIA_DRIVER_GUIDE,),
    ),
    Code(
        "ED105",
        "This container has no access to an NVIDIA GPU",
        "container",
        ("error", "warning"),
        "envdoctor runs in a container that has no /dev/nvidia* device nodes although a GPU was asked for "
        "(NVIDIA_VISIBLE_DEVICES, nvidia-smi present) or is on the host's PCI bus.",
        "Start the container with the GPU passed through: docker run --gpus all, a CDI device "
        "(--device nvidia.com/gpu=all), a Kubernetes GPU request, apptainer --nv.",
        (CTK_USER_GUIDE,),
    ),
    Code(
        "ED106",
        "WSL: no GPU under WSL1, or a Linux driver installed inside WSL2",
        "driver",
        ("error",),
        "WSL1 has no GPU support. Under WSL2 the Windows driver provides libcuda and NVML in "
        "/usr/lib/wsl/lib; a Linux NVIDIA driver installed inside the distribution shadows them.",
        "Move the distribution to WSL2 (wsl --set-version), or remove the package that installed the Linux "
        "driver's NVML inside WSL2 (the driver packages that need it go with it; libnvidia-container stays) "
        "and restart WSL.",
        (NVIDIA_WSL,),
    ),
    Code(
        "ED107",
        "CUDA_VISIBLE_DEVICES hides every GPU",
        "gpu",
        ("error",),
        "CUDA_VISIBLE_DEVICES is empty, -1, or names indices or UUIDs the driver does not have; CUDA stops at "
        "the first invalid entry, so programs see no GPU.",
        "Unset it, or list GPUs that exist (by index or UUID).",
        (CUDA_ENV_VARS,),
    ),
    Code(
        "ED108",
        "The driver branch no longer supports this GPU",
        "driver",
        ("error",),
        "The GPU's architecture was dropped by driver branches after its last one; this driver is newer.",
        "Install the last branch that supports the GPU (the finding names it).",
        (NVIDIA_ARCH_MATRIX,),
    ),
    Code(
        "ED109",
        "The driver is too old for this GPU",
        "driver",
        ("error",),
        "The GPU's architecture needs a newer driver branch than the one installed.",
        "Install a driver branch that supports the GPU.",
        (NVIDIA_ARCH_MATRIX,),
    ),
    Code(
        "ED110",
        "Wrong kernel-module flavour for this GPU (open or proprietary)",
        "driver",
        ("error",),
        "The open kernel modules drive Turing (7.5) and newer only; Blackwell GPUs are driven only by the "
        "open modules. The loaded flavour does not fit the GPU.",
        "Install the driver with the other flavour of kernel modules.",
        (NVIDIA_OPEN_MODULES,),
    ),
    Code(
        "ED111",
        "NVML and nvidia-smi disagree on the number of GPUs",
        "gpu",
        ("warning",),
        "One source lists a GPU the other does not: a GPU fell off the bus (Xid 79) or is excluded.",
        "Compare nvidia-smi -L with the kernel log (Xid errors).",
        (NVIDIA_DRIVER_GUIDE,),
    ),
    Code(
        "ED112",
        "No NVIDIA GPU on this machine: torch will run on the CPU",
        "gpu",
        ("info",),
        "The PCI bus shows no NVIDIA GPU and no driver is loaded. Said so that a CPU wheel is a choice, "
        "not an accident.",
        "Nothing to fix on a CPU machine; envdoctor recommend gives the CPU wheels.",
    ),
    Code(
        "ED113",
        "NVIDIA GPU bound to vfio-pci: passed through to a virtual machine",
        "gpu",
        ("info",),
        "vfio-pci, not a GPU driver, holds the device: it is reserved for a virtual machine, which drives it "
        "with its own NVIDIA driver. Nothing on this host can use it meanwhile, and installing a driver here "
        "changes nothing.",
        "Use the GPU inside the VM (run envdoctor there); to use it on the host, remove its id from "
        "vfio-pci.ids= (kernel command line or /etc/modprobe.d) and reboot.",
        (LINUX_VFIO,),
    ),
    # --- ED160-ED169: the live state of each GPU (envdoctor/rules/gpu_state.py) -----------------------
    Code(
        "ED160",
        "A GPU is in use by another process",
        "gpu",
        ("warning", "error"),
        "NVML lists processes with a context on the GPU, or the GPU is busy with none listed (a process of "
        "another pid namespace). A job placed there shares its memory and compute: it runs slower, or fails "
        "out of memory. check warns; diag, which asks whether a job may start, calls it an error.",
        "Find the process (nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv), and end "
        "it if it is stale; in a container, ask on the host.",
        (NVML_DEVICE_QUERIES,),
    ),
    Code(
        "ED161",
        "A zombie process holds a GPU",
        "gpu",
        ("error",),
        "A process that has exited but was not reaped (state Z) still holds its GPU context and memory. Its "
        "parent must reap it; if the parent is gone or stuck, only a GPU reset or a reboot frees the memory.",
        "ps -o pid,ppid,stat,cmd -p PID; end the parent; else nvidia-smi --gpu-reset -i N with nothing "
        "running, or reboot.",
        (NVML_DEVICE_QUERIES,),
    ),
    Code(
        "ED162",
        "The GPU's compute mode keeps a job out",
        "gpu",
        ("error", "info"),
        "Exclusive-process mode lets one process have a context; a second one fails with 'all CUDA-capable "
        "devices are busy or unavailable'. Prohibited lets none. Schedulers set exclusive mode on purpose: it is "
        "a fault only where the GPU is already taken, or prohibited.",
        "sudo nvidia-smi -i N -c DEFAULT where sharing is wanted; else end the process that holds it.",
        ("https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#compute-modes",),
    ),
    Code(
        "ED163",
        "The power limit is set below the default",
        "gpu",
        ("warning",),
        "An operator (nvidia-smi -pl) or a tool lowered the enforced power limit: under load the clocks drop "
        "and the GPU delivers less than its model should.",
        "sudo nvidia-smi -i N -pl DEFAULT_W, unless the limit is wanted (a power budget).",
        ("https://docs.nvidia.com/deploy/nvidia-smi/index.html",),
    ),
    Code(
        "ED164",
        "The GPU's clocks are held below the default",
        "gpu",
        ("warning",),
        "Applications clocks (nvidia-smi -ac) or locked clocks (-lgc) hold the SM clock below the default: "
        "every kernel runs slower.",
        "sudo nvidia-smi -i N -rac and -rgc, unless the setting is wanted.",
        ("https://docs.nvidia.com/deploy/nvidia-smi/index.html",),
    ),
    Code(
        "ED165",
        "Retired pages or remapped rows wait for a reset, or a remapping failed",
        "gpu",
        ("warning", "error"),
        "The GPU found bad memory and will stop using it after the next GPU reset (pending); until then the "
        "bad cells stay in use. A failed remapping means it ran out of spare rows: the GPU needs service.",
        "Pending: reset the GPU with nothing on it (nvidia-smi --gpu-reset -i N) or reboot. Failure: drain "
        "the node and replace the GPU.",
        ("https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html",),
    ),
    Code(
        "ED166",
        "MIG mode is pending a change, or on with no instance",
        "gpu",
        ("warning", "error"),
        "The MIG mode set takes effect after a GPU reset, so what runs now differs from the configuration; "
        "or MIG is on and no GPU instance exists, so no process can use the GPU.",
        "Reset the GPU (nvidia-smi --gpu-reset -i N); or create instances (nvidia-smi mig -cgi ... -C), or "
        "leave MIG mode (nvidia-smi -mig 0).",
        (MIG_GUIDE,),
    ),
    # --- ED2xx: torch in the target Python -----------------------------------------------------------
    Code(
        "ED200",
        "The target Python could not be inspected",
        "torch",
        ("error", "warning"),
        "The interpreter envdoctor was told (--python: an error) or found on PATH (a warning) does not run, "
        "is not Python, or is older than 3.8.",
        "Point --python at the interpreter your code runs with.",
        (TORCH_INSTALL,),
    ),
    Code(
        "ED201",
        "The torch check crashed, hung, exited with an error or printed no result",
        "torch",
        ("error", "warning"),
        "The child process that imports torch in the target Python did not finish its report: killed by a "
        "signal, past its timeout, a non-zero exit, or output envdoctor cannot read. Programs importing "
        "torch there will likely fail the same way.",
        "Rerun the step the finding names with python -X faulthandler to see where it stops; a mismatched "
        "CUDA library on LD_LIBRARY_PATH or a half-upgraded install are the usual causes.",
        (TORCH_INSTALL,),
    ),
    Code(
        "ED202",
        "import torch fails in the target Python",
        "torch",
        ("error",),
        "torch is installed, but importing it raises: a CUDA library it links against is missing, a symbol "
        "is undefined (another library version was loaded), or the install is broken.",
        "Reinstall the same torch build from its index (--force-reinstall); remove LD_LIBRARY_PATH entries "
        "that bring other CUDA libraries.",
        (TORCH_INSTALL,),
    ),
    Code(
        "ED203",
        "torch is not installed in the target Python",
        "torch",
        ("info",),
        "The target Python has no torch package. A note, not a problem: the verdict says so rather than 'it works'.",
        "envdoctor recommend gives the install commands; envdoctor check --python PATH inspects another interpreter.",
        (TORCH_INSTALL,),
    ),
    Code(
        "ED204",
        "torch is a CPU-only build on a machine with an NVIDIA GPU",
        "torch",
        ("error",),
        "torch.version.cuda is None although the machine has an NVIDIA GPU: the CPU wheel was installed, "
        "usually by a plain pip install from an index without CUDA builds.",
        "Reinstall torch from the CUDA variant index envdoctor picks for this driver and GPU; into a new "
        "virtual environment first when the target Python is neither a venv nor a conda env (a "
        "distribution's Python refuses pip installs: PEP 668), as envdoctor recommend does.",
        (TORCH_INSTALL,),
    ),
    Code(
        "ED205",
        "torch's CUDA is newer than the driver runs",
        "torch",
        ("error", "warning"),
        "The CUDA runtime torch was built with needs a newer driver. Below the minor-version floor CUDA "
        "cannot start (an error: 'CUDA driver version is insufficient'); above it, it runs by minor-version "
        "compatibility only, and PTX JIT and newer APIs fail (a warning).",
        "Upgrade the NVIDIA driver to the version the finding names, or install the torch build for an "
        "older CUDA that this driver runs.",
        (CUDA_COMPAT, CUDA_MINOR_COMPAT),
    ),
    Code(
        "ED206",
        "The torch build has no kernels for the GPU's compute capability",
        "torch",
        ("error", "warning"),
        "Kernels run on a GPU only when built for its architecture (same major, same or lower minor) or as "
        "PTX of a lower capability. With neither, GPU work fails with 'no kernel image is available' (an "
        "error); with PTX only, the driver JIT-compiles at first use (a warning).",
        "Install a torch build whose arch list includes the GPU (the finding names the variant).",
        (CUDA_BINARY_COMPAT,),
    ),
    Code(
        "ED207",
        "torch cannot use the GPU: torch.cuda.is_available() is False",
        "torch",
        ("error",),
        "A CUDA build and a driver that fit each other, yet CUDA does not start in torch: no device nodes, "
        "CUDA_VISIBLE_DEVICES, stale cuda-compat libraries or a mixed driver install.",
        "Read the CUDA error text (torch.cuda.init() prints it); the finding maps the common ones to their fix.",
        (TORCH_INSTALL,),
    ),
    Code(
        "ED208",
        "A tiny CUDA operation failed in torch",
        "torch",
        ("error",),
        "(torch.ones(8, device='cuda') * 2).sum() failed: no kernels for the GPU, its memory taken by other "
        "processes, or a GPU in an error state.",
        "Run the operation by hand to see the error; see ED206 for builds without kernels.",
        (CUDA_BINARY_COMPAT,),
    ),
    Code(
        "ED209",
        "torchvision or torchaudio belong to another torch release",
        "torch",
        ("error",),
        "Their compiled parts are built against one torch release; with another they fail to load "
        "(torchvision: 'operator torchvision::nms does not exist'; torchaudio: 'libtorchaudio.so: undefined "
        "symbol') or crash. torchaudio 2.11 and later are built against torch's stable ABI and also work "
        "with later torch releases.",
        "Install the version that pairs with the installed torch, from the same index, with --no-deps.",
        (TORCHVISION_INSTALL, TORCHAUDIO_COMPAT),
    ),
    Code(
        "ED210",
        "torchvision or torchaudio were built for another CUDA (or the CPU) than torch",
        "torch",
        ("error", "warning"),
        "A companion package of another CUDA major refuses to load (an error); another minor or a CPU build "
        "loads but is not the tested pair, and a CPU build has no CUDA kernels (a warning).",
        "Reinstall the companion from torch's own variant index with --no-deps.",
        (TORCHVISION_INSTALL, TORCHAUDIO_COMPAT),
    ),
    Code(
        "ED211",
        "LD_LIBRARY_PATH makes torch load CUDA libraries other than its wheel's",
        "torch",
        ("warning", "error"),
        "The loader searches LD_LIBRARY_PATH before the paths torch's wheel records, so a system CUDA or "
        "cuDNN of another version replaces the tested one (an error when cuDNN then fails).",
        "Remove the folders the finding names from LD_LIBRARY_PATH where it is set.",
        (LD_SO,),
    ),
    # --- ED3xx: CUDA toolkits ------------------------------------------------------------------------
    Code(
        "ED301",
        "nvcc's CUDA major differs from torch's: CUDA extension builds fail",
        "toolkits",
        ("error",),
        "torch.utils.cpp_extension raises when the nvcc it would use has another CUDA major version than "
        "torch was built with.",
        "Point CUDA_HOME and PATH at a toolkit of torch's CUDA release, or install one.",
        (TORCH_CPP_EXTENSION,),
    ),
    Code(
        "ED302",
        "nvcc's CUDA minor differs from torch's: CUDA extension builds may misbehave",
        "toolkits",
        ("warning",),
        "torch only warns on a minor difference, but kernels built with another CUDA minor can fail to load or link.",
        "Point CUDA_HOME and PATH at a toolkit of torch's CUDA release, or install one.",
        (TORCH_CPP_EXTENSION,),
    ),
    Code(
        "ED303",
        "CUDA_HOME or CUDA_PATH names a folder that does not exist",
        "toolkits",
        ("error",),
        "Extension builds and tools that read it (CMake, Triton, DeepSpeed) fail with 'nvcc not found' or "
        "missing headers.",
        "Fix the line that sets it (shell profile, /etc/environment) to an installed toolkit, or unset it.",
        (TORCH_CPP_EXTENSION,),
    ),
    Code(
        "ED304",
        "CUDA_HOME and the nvcc on PATH are different CUDA releases",
        "toolkits",
        ("warning",),
        "torch extensions compile with $CUDA_HOME/bin/nvcc, CMake, Triton and Makefiles with the nvcc on "
        "PATH: one project mixes headers and compilers of two releases.",
        "Put the toolkit you want first on PATH, or change CUDA_HOME to the other one.",
        (TORCH_CPP_EXTENSION,),
    ),
    Code(
        "ED305",
        "CUDA extension builds would use a folder that is not a CUDA toolkit",
        "toolkits",
        ("warning",),
        "The folder has bin/nvcc (a wrapper) but no include/cuda_runtime.h: sources that include CUDA "
        "headers and the final link fail.",
        "Set CUDA_HOME to the real toolkit.",
        (TORCH_CPP_EXTENSION,),
    ),
    Code(
        "ED306",
        "CUDA_HOME or CUDA_PATH has no bin/nvcc",
        "toolkits",
        ("warning",),
        'The folder is a CUDA runtime without the compiler; torch raises "nvcc not found" when it builds '
        "a CUDA extension.",
        "Point CUDA_HOME at a toolkit with nvcc, install one, or unset it.",
        (TORCH_CPP_EXTENSION,),
    ),
    Code(
        "ED307",
        "CUDA_HOME or CUDA_PATH is set to an empty string",
        "toolkits",
        ("warning",),
        "torch.utils.cpp_extension takes the empty value and does not look for nvcc, so every CUDA extension "
        "build stops with 'CUDA was not found on the system'.",
        "Unset the variable (or set it to a toolkit).",
        (TORCH_CPP_EXTENSION,),
    ),
    Code(
        "ED308",
        "An nvcc that hangs, crashes or prints garbage",
        "toolkits",
        ("warning",),
        "nvcc --version of a toolkit does not work: a toolkit copied from another machine or half removed "
        "by a package manager.",
        "Run it by hand to see the error; reinstall that toolkit or remove it from PATH.",
        (CUDA_INSTALL_LINUX,),
    ),
    Code(
        "ED309",
        "No CUDA toolkit (nvcc): CUDA extensions cannot be built here",
        "toolkits",
        ("info",),
        "torch has CUDA, but no nvcc is installed. torch itself does not need one (its wheels carry the "
        "runtime); building from source (flash-attn, apex, DeepSpeed ops) does.",
        "Install the toolkit of torch's CUDA release only if you build CUDA extensions.",
        (CUDA_INSTALL_LINUX,),
    ),
    # --- ED330-ED359: the libraries above torch (envdoctor/stack/, docs/stack.md) ----------------------
    Code(
        "ED330",
        "A library above torch does not load (its import fails, classified)",
        "stack",
        ("error",),
        "Importing flash-attn, xformers, vLLM, bitsandbytes or another library above torch failed in a separate "
        "process of the target Python, or (xFormers) it imported but said its C++/CUDA part did not load. The "
        "exact error is classified: an undefined symbol of c10/at/torch (built for another torch release), a "
        "symbol naming std::__cxx11 (built with the other C++ ABI: torch._C._GLIBCXX_USE_CXX11_ABI decides), a "
        "libcudart.so.N of another CUDA major, a missing CUDA library, an architecture the kernels do not support, "
        "a missing module or an old libstdc++.",
        "Reinstall the build that matches the installed torch: flash-attn's prebuilt wheel for this torch, CUDA, "
        "C++ ABI and Python (its GitHub release) or a source build with --no-build-isolation; xformers and vLLM "
        "from the release that pins this torch, naming torch in the same command so it is not replaced.",
        (REF_FLASH_ATTN, REF_TORCH_ABI, REF_XFORMERS),
    ),
    Code(
        "ED331",
        "Importing a library above torch crashed the interpreter",
        "stack",
        ("error",),
        "The import ended the process with a signal (SIGSEGV, SIGABRT), or a C library called exit() before the "
        "import returned: a C++/CUDA part built for another torch or CUDA often crashes instead of raising. "
        "envdoctor imports each library in its own process, so the rest of the check went on.",
        "Run the import with python -X faulthandler to see the C stack, then reinstall the library's build for "
        "this torch (the finding prints the command).",
        (),
    ),
    Code(
        "ED332",
        "Importing a library above torch hung",
        "stack",
        ("error",),
        "The import did not finish within the budget and was killed. Module code that waits on a GPU, a lock "
        "file (a half-finished JIT build in ~/.cache/torch_extensions) or the network hangs this way.",
        "Run python -X importtime -c 'import MODULE' with a timeout to see where it stops; remove a stale lock "
        "under ~/.cache/torch_extensions.",
        (),
    ),
    Code(
        "ED333",
        "A library's declared pins reject the installed torch",
        "stack",
        ("error",),
        "The library's own metadata (Requires-Dist, read with packaging.requirements and its markers evaluated "
        "for this Python) pins torch, or a library beside it, to a version that is not installed: vLLM and "
        "xformers pin an exact torch. The next pip install of either replaces the other's torch, and a build for "
        "another torch fails to load (ED330).",
        "Install the library's release that pins the installed torch, naming torch in the same command, or move "
        "torch to the pin from the index of its CUDA variant.",
        (REF_REQUIRES_DIST,),
    ),
    Code(
        "ED334",
        "A library does not support this machine's GPU architecture",
        "stack",
        ("error", "warning"),
        "The library's published minimum (or maximum) compute capability excludes the GPUs here: "
        "FlashAttention-2 needs Ampere (8.0) or newer, FlashAttention-3 is Hopper (9.0) only, vLLM needs 7.0. "
        "An error when every GPU is outside, a warning when some are.",
        'Uninstall it or leave it unused (transformers: attn_implementation="sdpa"); FlashAttention-3 off '
        "Hopper: FlashAttention-2.",
        (REF_FLASH_ATTN,),
    ),
    Code(
        "ED335",
        "DeepSpeed's ops belong to another torch or CUDA, or cannot be built",
        "stack",
        ("error", "warning"),
        "deepspeed/git_version_info_installed.py (what ds_report reads) records the ops compiled in at install "
        "time and the torch and CUDA they were compiled with; ops of another torch or CUDA fail to load. With no "
        "op compiled in, DeepSpeed builds them at first use (JIT), which needs ninja.",
        "Rebuild the ops for this torch (DS_BUILD_OPS=1 pip install deepspeed --no-build-isolation) or install "
        "ninja for the JIT build; ds_report shows the result.",
        (REF_DEEPSPEED,),
    ),
    Code(
        "ED336",
        "A known-bad install of a library above torch",
        "stack",
        ("error", "warning"),
        "data/extensions.toml lists the install as wrong: PyPI's 'apex' is an unrelated package (NVIDIA Apex "
        "is built from its repository), AutoGPTQ is archived in favour of GPTQModel.",
        "The row's own fix: the command that installs the right package.",
        (REF_APEX,),
    ),
    Code(
        "ED337",
        "A source build of a library above torch would fail or crawl here",
        "stack",
        ("warning",),
        "A library that is compiled against torch (flash-attn, apex, mamba-ssm, causal-conv1d, DeepSpeed's ops) "
        "is broken without a prebuilt wheel that fits, or was installed from source, and its rebuild would trip: "
        "no nvcc or one of another CUDA major than torch, a GCC newer than that nvcc accepts "
        "(crt/host_config.h), no ninja, MAX_JOBS unset (one job per CPU exhausts the RAM), TORCH_CUDA_ARCH_LIST "
        "not set to these GPUs.",
        "Install the nvcc of torch's CUDA and a GCC it accepts, pip install ninja, export MAX_JOBS and "
        "TORCH_CUDA_ARCH_LIST as the finding prints, then pip install --no-build-isolation.",
        (REF_NVCC_HOST,),
    ),
    Code(
        "ED338",
        "The check of the libraries above torch did not finish",
        "stack",
        ("warning",),
        "The import checks were cut short (the torch check's time ran out, a process could not start) or "
        "data/extensions.toml could not be read: some libraries were not judged, which is not the same as fine.",
        "Run envdoctor check again with a larger --torch-timeout, or import the named module by hand.",
        (),
    ),
    # --- ED4xx: conda ---------------------------------------------------------------------------------
    Code(
        "ED401",
        "The conda env has a CUDA runtime but no nvcc",
        "conda",
        ("info",),
        "Running torch needs only the runtime; building from source needs nvcc of torch's CUDA release.",
        "Install cuda-nvcc of torch's CUDA release into the env (conda-forge; torch.version.cuda when the "
        "target Python is the env, else the pytorch build, else pytorch-cuda), moving a cuda-version pin of "
        "another release with it.",
        (CONDA_FORGE_CUDA,),
    ),
    Code(
        "ED402",
        "torch comes from the retired `pytorch` conda channel",
        "conda",
        ("warning",),
        "PyTorch stopped publishing to its Anaconda channel after 2.5: the env can get no newer torch and "
        "mixes channels with conda-forge.",
        "Create a new env from conda-forge (pytorch-gpu) and reinstall your packages there.",
        (PYTORCH_CONDA_RETIRED,),
    ),
    Code(
        "ED403",
        "The conda env needs a newer CUDA than the driver supports",
        "conda",
        ("error",),
        "The env's CUDA major is newer than the driver's CUDA: torch.cuda.is_available() is False and CUDA "
        "calls fail with 'driver too old'.",
        "Upgrade the driver, or pin the env to the driver's CUDA line (cuda-version<=X.Y).",
        (CONDA_FORGE_CUDA,),
    ),
    Code(
        "ED404",
        "Two torch installs in one conda env: conda's pytorch and pip's torch",
        "conda",
        ("warning",),
        "Both write site-packages/torch; the last one overwrote part of the other, and conda still believes "
        "its own files are there.",
        "Keep one: uninstall pip's torch and force-reinstall conda's (or the reverse).",
        (CONDA_PIP_MIXED,),
    ),
    # --- ED5xx: docker, podman, the NVIDIA Container Toolkit ------------------------------------------
    Code(
        "ED501",
        "The docker client is installed but no Docker daemon is running",
        "docker",
        ("warning", "info"),
        "docker commands cannot run containers. Inside a container (info) there is no daemon of its own; "
        "the host's can be used through its socket.",
        "Start the daemon (systemctl start docker, or --user for rootless), or mount the host's socket.",
        (DOCKER_DAEMON,),
    ),
    Code(
        "ED502",
        "Permission denied on the Docker daemon's socket",
        "docker",
        ("warning",),
        "The user is not in the docker group (which is equivalent to root on the machine).",
        "Add the user to the docker group and log in again (or newgrp docker); inside a container, start it "
        "with --group-add of the socket's group id.",
        (DOCKER_POSTINSTALL,),
    ),
    Code(
        "ED503",
        "Docker cannot give containers the GPU: the NVIDIA Container Toolkit is not installed",
        "docker",
        ("error",),
        "docker run --gpus all fails with 'could not select device driver \"\" with capabilities: [[gpu]]': "
        "no nvidia runtime, no CDI spec, no nvidia-ctk.",
        "Install the NVIDIA Container Toolkit from NVIDIA's repository, configure Docker's runtime, restart Docker.",
        (CTK_INSTALL,),
    ),
    Code(
        "ED504",
        "The NVIDIA Container Toolkit is installed, but Docker is not configured to use it",
        "docker",
        ("warning",),
        "Docker's daemon.json lacks the nvidia runtime (it is lost when Docker is reinstalled).",
        "nvidia-ctk runtime configure --runtime=docker, then restart Docker.",
        (CTK_INSTALL,),
    ),
    Code(
        "ED505",
        "Docker is older than 19.03: no docker run --gpus",
        "docker",
        ("error",),
        "Before 19.03 GPUs needed the nvidia-docker2 wrapper, which NVIDIA no longer maintains.",
        "Upgrade Docker Engine from Docker's repository, then install and configure the container toolkit.",
        (CTK_INSTALL,),
    ),
    Code(
        "ED506",
        "The Docker daemon does not answer properly",
        "docker",
        ("warning",),
        "The client reached no working daemon: it is hung or starting, or DOCKER_HOST or the docker context "
        "points elsewhere.",
        "Check the daemon's status and log, restart it, and check docker context ls.",
        (DOCKER_DAEMON,),
    ),
    Code(
        "ED507",
        "podman is installed but has no CDI spec for the NVIDIA GPU",
        "docker",
        ("warning",),
        "podman takes GPUs through CDI; without a spec no container gets the GPU.",
        "Generate the spec with nvidia-ctk cdi generate (again after every driver upgrade).",
        (CTK_CDI,),
    ),
    # --- ED7xx: verify against a snapshot --------------------------------------------------------------
    # --- ED560-ED569: a Dockerfile, linted before the build (envdoctor/dockerfile/, docs/stack.md) -------
    Code(
        "ED560",
        "The image's CUDA is newer than the driver runs",
        "dockerfile",
        ("error", "warning"),
        "The final stage's base image (nvidia/cuda:X, an NGC PyTorch release, pytorch/pytorch:...-cudaX) ships a "
        "CUDA release that needs a newer driver than this host's (or --driver): the container starts, and CUDA "
        "fails with 'the provided PTX was compiled with an unsupported toolchain' or 'CUDA driver version is "
        "insufficient'. A warning where only minor-version compatibility covers it.",
        "Upgrade the host's driver, or build FROM an image of a CUDA release the driver supports.",
        (REF_CUDA_COMPAT_DOC,),
    ),
    Code(
        "ED561",
        "torch installed from PyPI into a CUDA image, without the index of its CUDA",
        "dockerfile",
        ("warning",),
        "pip install torch without --index-url https://download.pytorch.org/whl/cuXYZ takes PyPI's wheel, built "
        "for PyPI's default CUDA variant: a second CUDA stack beside the image's, and extensions compiled with "
        "the image's nvcc against a torch of another CUDA.",
        "Add --index-url https://download.pytorch.org/whl/cuXYZ of the image's CUDA (uv: --torch-backend).",
        (TORCH_INSTALL,),
    ),
    Code(
        "ED562",
        "torch reinstalled over the NGC PyTorch image's own build",
        "dockerfile",
        ("error",),
        "NGC's PyTorch image ships its own torch (CUDA, cuDNN and the C++11 ABI of that release) and "
        "transformer-engine, flash-attn and apex compiled against it; pip install torch replaces it and those "
        "break (undefined symbols at import).",
        "Drop torch from the install and constrain it to what the image ships (pip install -c a file of its "
        "pip list --format=freeze).",
        (REF_NGC_PYTORCH,),
    ),
    Code(
        "ED563",
        "A library's torch pin fights the image's torch",
        "dockerfile",
        ("error",),
        "vLLM and xformers pin one torch release (data/extensions.toml); installing a release of them that pins "
        "another torch than the image has replaces the image's torch, or fails to resolve under a constraint.",
        "Install the release that pins the image's torch, or build FROM the project's own image (vLLM's).",
        (REF_REQUIRES_DIST,),
    ),
    Code(
        "ED564",
        "flash-attn compiled without nvcc, MAX_JOBS or --no-build-isolation",
        "dockerfile",
        ("error", "warning"),
        "pip install flash-attn compiles it when no wheel matches: a runtime image has no nvcc (error); without "
        "MAX_JOBS ninja starts one nvcc per CPU and the build runs out of memory; without --no-build-isolation "
        "pip builds in an environment without torch.",
        "Build FROM a devel image, ENV MAX_JOBS=4 (or what the builder's RAM fits), pip install flash-attn "
        "--no-build-isolation.",
        (REF_FLASH_ATTN,),
    ),
    Code(
        "ED565",
        "NVIDIA_VISIBLE_DEVICES or NVIDIA_DRIVER_CAPABILITIES missing where the image needs them",
        "dockerfile",
        ("warning",),
        "NVIDIA's images set both; an image built on ubuntu or python that installs a GPU stack does not. Under "
        "the nvidia runtime without --gpus, an unset NVIDIA_VISIBLE_DEVICES exposes no GPU, and an unset "
        "NVIDIA_DRIVER_CAPABILITIES mounts only 'utility' (no libcuda); a value without 'compute' is the same.",
        "ENV NVIDIA_VISIBLE_DEVICES=all and ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility in the final stage.",
        (CTK_ENV_VARS,),
    ),
    Code(
        "ED566",
        "A base image envdoctor cannot judge",
        "dockerfile",
        ("info",),
        "A FROM line uses an ARG without a value (give it with --build-arg), or names a release envdoctor's "
        "tables do not hold: its CUDA and torch were not checked, which is not the same as fine.",
        "envdoctor dockerfile --build-arg NAME=VALUE, as the build gets it.",
        (),
    ),
    Code(
        "ED567",
        "A prebuilt flash-attn wheel for another torch, C++ ABI or CUDA than the image's",
        "dockerfile",
        ("error",),
        "flash-attn's release wheels are named for the torch, CUDA major and C++ ABI they were built against "
        "(flash_attn-2.8.3+cu12torch2.8cxx11abiFALSE-cp312-...); NGC's torch is built with the C++11 ABI and "
        "download.pytorch.org's from torch 2.7 on too. A wheel of another torch, ABI or CUDA installs, and its "
        "import fails with an undefined symbol.",
        "Install the wheel named for the image's torch, ABI and CUDA (the finding spells the file name).",
        (REF_FLASH_ATTN,),
    ),
    # bench (envdoctor/bench/rules.py): matmul, memory bandwidth, layers
    Code(
        "ED508",
        "The NVIDIA Container Toolkit has known container-escape CVEs",
        "docker",
        ("warning",),
        "The installed toolkit is older than the release that fixes a container escape named in NVIDIA's security "
        "bulletins (data/security.toml): a crafted image started with GPU access can reach the host.",
        "Upgrade nvidia-container-toolkit (and libnvidia-container) to the fixed release, then restart Docker.",
        ("https://nvidia.custhelp.com/app/answers/detail/a_id/5659",),
    ),
    Code(
        "ED509",
        "A CDI spec was generated for another driver version than the loaded one",
        "docker",
        ("warning",),
        "nvidia-ctk cdi generate names the driver's files by version; after a driver upgrade the spec points at "
        "files that are gone, and containers started through CDI fail or get the old libraries.",
        "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml (the spec's own path).",
        (CTK_CDI,),
    ),
    Code(
        "ED600",
        "Tensor Cores not delivering",
        "bench",
        ("error",),
        "fp16 matrix products run no faster than the GPU's fp32 units allow: torch runs on the CPU, the fp16 "
        "kernels do not use the Tensor Cores (a torch or cuBLAS older than the GPU), or the GPU is throttled. "
        "The verdict's lines say which.",
        "Run `envdoctor check` for the torch build and the GPU it sees; install a torch built for this GPU "
        "(`envdoctor recommend`), then rerun envdoctor bench.",
    ),
    Code(
        "ED601",
        "A matrix product failed or computed a wrong result",
        "bench",
        ("error",),
        "A matmul point raised an error or its result differs from float64 beyond the dtype's bound. A wrong "
        "result at any speed is a fault of the GPU, its memory, the driver or the library.",
        "Rerun envdoctor bench; if it repeats, run `envdoctor burn` and `nvidia-smi -q -d ECC,ROW_REMAPPER`.",
    ),
    Code(
        "ED602",
        "A GPU is slower than its siblings",
        "bench",
        ("error",),
        "With --device all, one GPU's matmul rate is more than 10% under the median of the others at the same size.",
        "Look at its clocks, power limit and throttle reasons in the report, and at its cooling; then run "
        "`envdoctor burn --device all`.",
    ),
    Code(
        "ED605",
        "GPU memory bandwidth far below the datasheet",
        "bench",
        ("error",),
        "The best copy or a * 1.2 over buffers well past the L2 reached less than 65% of the datasheet "
        "bandwidth. HBM GPUs deliver 85-92% of it.",
        "Look for another process on the GPU (`nvidia-smi`), a memory clock held low (`nvidia-smi -q -d "
        "CLOCK`), or a fault.",
    ),
    Code(
        "ED606",
        "GPU memory bandwidth below the datasheet",
        "bench",
        ("warning",),
        "The best copy or a * 1.2 past the L2 reached 65-80% of the datasheet bandwidth, under the usual "
        "85-92%. It can be the load of another process, a memory clock below its maximum, or ECC on a GDDR "
        "card; compare with a second run and with the machine's other GPUs.",
        "Read the finding's evidence (the points, clocks and power of the run) and rerun envdoctor bench.",
    ),
    Code(
        "ED607",
        "A memory-bandwidth point failed or wrote wrong data",
        "bench",
        ("error",),
        "A copy or a * 1.2 raised an error other than running out of memory, or its output differs from what "
        "it computes. Wrong data from a plain copy points at the GPU or its memory: rerun, then `envdoctor "
        "burn` and `nvidia-smi -q -d ECC,ROW_REMAPPER`.",
        "Read the finding's evidence (the points, clocks and power of the run) and rerun envdoctor bench.",
    ),
    Code(
        "ED610",
        "scaled_dot_product_attention runs the math kernel on this GPU",
        "bench",
        ("warning",),
        "SDPA fell back to its unfused math path for fp16/bf16, which materialises the s x s scores like "
        "eager attention: a torch built without the flash and memory-efficient kernels, those kernels "
        "switched off (torch.backends.cuda.enable_flash_sdp(False)), or inputs they refuse. Training and "
        "inference run slower and use more memory than they could.",
        "Read the finding's evidence (the points, clocks and power of the run) and rerun envdoctor bench.",
    ),
    Code(
        "ED611",
        "A transformer layer failed or gave NaN/Inf",
        "bench",
        ("error",),
        "A layer point raised an error other than running out of memory, or its output (or its input's "
        "gradient) holds NaN or Inf with inputs and weights that cannot overflow. Rerun; if it stays, the "
        "kernel or the GPU computes wrongly: `envdoctor burn`, and report the torch version.",
        "Read the finding's evidence (the points, clocks and power of the run) and rerun envdoctor bench.",
    ),
    Code(
        "ED612",
        "Layer points skipped: not enough GPU memory",
        "bench",
        ("info",),
        "Some layer points ran out of memory and were skipped (the rest were measured).",
        "Free the GPU of other processes, or read the skipped shapes as too large for this GPU.",
    ),
    Code(
        "ED613",
        "Repeats disturbed by other load",
        "bench",
        ("warning",),
        "A point's slowest repeat took ten times its fastest or more: another program used the device while it "
        "was timed, so its figure (the median) says nothing about the device, and a layer compared with it can "
        "show more than 100% of the matmul rate.",
        "Find what else runs (top, nvidia-smi) and run envdoctor bench again on an idle machine.",
    ),
    # fit --measure (envdoctor/fit/rules.py): the estimate against a real run
    Code(
        "ED630",
        "The estimate missed the measured peak by more than its target",
        "fit",
        ("warning",),
        "envdoctor fit --measure ran the workload and the estimated peak (reserved + context) is more than 10% "
        "above the measured one or more than 5% below it, the target fit is held to. The term and phase rows "
        "of the report show where the estimate and the run part; a run with other processes on the GPU, an "
        "allocator setting (PYTORCH_CUDA_ALLOC_CONF) or a model variant fit does not model can explain it.",
        "Read the per-term rows; rerun on an idle GPU; report the config and both numbers if it repeats.",
    ),
    Code(
        "ED631",
        "Out of memory in the measurement, although the estimate said it fits",
        "fit",
        ("error",),
        "The measured run ran out of GPU memory while the estimated peak fits this GPU: the estimate is too "
        "low for this workload, or something else held the memory (another process, a fragmented cache).",
        "Treat the estimate as too low here: take one of the ways to fit it lists, and report the config.",
    ),
    Code(
        "ED632",
        "Out of memory in the measurement, as the estimate said",
        "fit",
        ("info",),
        "The estimate said the workload does not fit this GPU and the run did run out of memory: the verdict "
        "is confirmed. The peak reached before the failure is a lower bound of what it needs.",
        "Use one of the ways to fit that envdoctor fit lists, and measure again.",
    ),
    Code(
        "ED633",
        "The estimate said it does not fit, but the measurement ran",
        "fit",
        ("warning",),
        "The estimated peak is above this GPU's memory, yet the measured run completed: the estimate is too "
        "high for this workload (the per-term rows show where).",
        "Read the per-term rows and report the config.",
    ),
    Code(
        "ED634",
        "This measurement cannot be made in the target Python",
        "fit",
        ("warning",),
        "The workload needs a package the target interpreter does not have (peft for LoRA, bitsandbytes for "
        "int8/int4 weights or 8-bit AdamW, transformers for a model the reference decoder does not build). "
        "envdoctor never guesses a measurement: the estimate stands alone.",
        "Install the package named in the evidence into the target environment, or measure another workload.",
    ),
    Code(
        "ED635",
        "The measurement failed",
        "fit",
        ("error",),
        "The measuring child did not report: torch is missing, it crashed, printed something else, or did "
        "not finish in its time bound (a hung GPU, a model far slower than expected).",
        "Read the evidence (the step it was in); run envdoctor check; give --timeout more seconds if it was only slow.",
    ),
    Code(
        "ED636",
        "Measured on the CPU: tensor bytes only",
        "fit",
        ("info",),
        "With --cpu the workload ran on the CPU with torch's CPU allocator, which keeps no statistics: the "
        "peak is the largest sum of live tensors, compared with the estimate without its allocator reserve "
        "and CUDA context. It checks the activation and state terms, not a GPU's memory.",
        "Measure on a GPU for the peak a GPU would see.",
    ),
    Code(
        "ED637",
        "Another process held GPU memory during the measurement",
        "fit",
        ("info",),
        "More than 1 GiB of the GPU was in use before the measuring child started. The context measurement "
        "leaves it out, but the allocator had less room and the timing may share the GPU.",
        "Measure again on an idle GPU (nvidia-smi lists the processes) for the cleanest numbers.",
    ),
    Code(
        "ED638",
        "The measurement was stopped before it finished",
        "fit",
        ("info",),
        "Ctrl-C (or a stop) ended the measuring child; the estimate is reported alone.",
        "Run envdoctor fit --measure again.",
    ),
    Code(
        "ED701",
        "Driver upgraded without a reboot (since the snapshot)",
        "driver",
        ("error",),
        "The new driver is installed and the old kernel module still runs; nvidia-smi, NVML, containers and "
        "CUDA fail until the reboot, so the GPU and torch comparisons wait for it.",
        "Reboot, then run envdoctor verify again.",
        (NVIDIA_DRIVER_GUIDE,),
    ),
    Code(
        "ED702",
        "A GPU of the snapshot is missing",
        "gpu",
        ("error",),
        "The driver lists fewer GPUs (or a UUID is gone): a GPU that fell off the bus (Xid 79) is invisible "
        "to CUDA, containers and torch.",
        "Look for Xid errors in the kernel log; a GPU that fell off the bus returns after a reset or a reboot.",
        (XID_ERRORS,),
    ),
    Code(
        "ED703",
        "A GPU changed since the snapshot",
        "gpu",
        ("error",),
        "Its name, compute capability, or memory (down by more than 1%) changed: MIG mode, retired or "
        "remapped memory rows, or another board.",
        "nvidia-smi -q: product name, UUID, memory, retired pages, MIG mode.",
        (XID_ERRORS,),
    ),
    Code(
        "ED704",
        "nvidia-smi or NVML fails now, or the driver is gone",
        "driver",
        ("error",),
        "They worked in the snapshot. Often the kernel changed and the module was not built for it, or a "
        "container lost its device cgroups.",
        "dkms status for the running kernel, the kernel log, modprobe nvidia; restart the container.",
        (NVIDIA_DRIVER_GUIDE,),
    ),
    Code(
        "ED705",
        "The driver's CUDA is now older than torch's CUDA",
        "driver",
        ("error",),
        "After the change the driver supports an older CUDA than torch was built for: CUDA fails to start or "
        "kernels fail to load.",
        "envdoctor recommend: a torch build for this driver, or the driver this torch needs.",
        (CUDA_COMPAT,),
    ),
    Code(
        "ED706",
        "torch no longer imports (or is gone, or its check fails)",
        "torch",
        ("error",),
        "torch imported in the snapshot and does not now.",
        "Import it by hand to see the error; envdoctor check gives the full diagnosis.",
    ),
    Code(
        "ED707",
        "torch no longer sees the GPUs (or sees fewer)",
        "torch",
        ("error",),
        "torch.cuda.is_available() was True and is False now, or it counts fewer devices: a driver update "
        "without a reboot, a driver older than torch's CUDA, a container without its device nodes.",
        "nvidia-smi, then envdoctor check for why CUDA does not start.",
    ),
    Code(
        "ED708",
        "The tiny CUDA operation fails now",
        "torch",
        ("error",),
        "CUDA starts but a kernel cannot run: a driver too old for torch's CUDA, an architecture the build "
        "lacks, or a GPU in an error state.",
        "envdoctor check, and the kernel log for Xid errors.",
    ),
    Code(
        "ED709",
        "The NVIDIA Container Toolkit no longer works as in the snapshot",
        "docker",
        ("error",),
        "The daemon, the nvidia runtime, the CDI spec or the toolkit's programs are gone or fail.",
        "Start the daemon, configure the runtime again, regenerate the CDI spec, or reinstall the toolkit; "
        "then docker run --rm --gpus all ubuntu nvidia-smi.",
        (CTK_INSTALL,),
    ),
    Code(
        "ED710",
        "nvcc or the CUDA toolkit no longer works as in the snapshot",
        "toolkits",
        ("error",),
        "An nvcc fails now, or CUDA extension builds would now use a folder that is missing or broken.",
        "nvcc --version, the /usr/local/cuda links, then envdoctor check.",
    ),
    Code(
        "ED711",
        "conda fails now (it worked in the snapshot)",
        "conda",
        ("error",),
        "conda info or conda list no longer answers.",
        "Run conda info to see the error.",
    ),
    Code(
        "ED712",
        "A bench point is slower than the snapshot by more than the tolerance, or fails",
        "bench",
        ("error",),
        "A compute-bound matmul point measures slower than the snapshot beyond --tolerance, fails, or the "
        "benchmark no longer runs.",
        "Check clocks, power limit, temperature and throttle reasons, then bench again on an idle GPU.",
    ),
    Code(
        "ED713",
        "A new error finding that the snapshot did not have",
        "verify",
        ("error",),
        "envdoctor check reports an error code now that it did not report when the snapshot was taken; the "
        "finding carries that code's evidence, fix and area.",
        "Follow the fix of the original code (envdoctor explain CODE).",
    ),
    Code(
        "ED720",
        "The driver version changed",
        "driver",
        ("info",),
        "Expected after a driver update; a CDI spec names the driver's files by version.",
        "Regenerate the CDI spec where one is used (unless nvidia-cdi-refresh does it).",
    ),
    Code(
        "ED721",
        "GPUs added, or memory reported slightly differently",
        "gpu",
        ("info",),
        "More GPUs than in the snapshot, or a driver update reserves a little more or less memory.",
        "Nothing to fix.",
    ),
    Code(
        "ED722",
        "torch changed (version, CUDA, cuDNN, NCCL, torchvision, torchaudio)",
        "torch",
        ("info",),
        "The torch install differs from the snapshot.",
        "Nothing to fix if the change was intended.",
    ),
    Code(
        "ED723",
        "CUDA toolkits changed",
        "toolkits",
        ("info",),
        "Toolkits added or removed, their versions, or which nvcc is first on PATH.",
        "Nothing to fix if the change was intended.",
    ),
    Code(
        "ED724",
        "conda changed",
        "conda",
        ("info",),
        "Its version, the __cuda virtual package (it follows the driver), the active env or its CUDA packages.",
        "Nothing to fix if the change was intended.",
    ),
    Code(
        "ED725",
        "Docker or container toolkit versions changed",
        "docker",
        ("info",),
        "docker, nvidia-ctk, nvidia-container-cli or podman versions, or docker's runtimes.",
        "Nothing to fix if the change was intended.",
    ),
    Code(
        "ED726",
        "The OS, kernel or glibc changed",
        "system",
        ("info",),
        "A new kernel needs the nvidia module built for it (DKMS).",
        "Nothing to fix if the driver still loads.",
    ),
    Code(
        "ED727",
        "An error of the snapshot is fixed now",
        "verify",
        ("info",),
        "An error finding of the snapshot is not reported any more.",
        "Nothing to fix.",
    ),
    Code(
        "ED728",
        "A bench point is slower at a small, launch-bound size",
        "bench",
        ("info",),
        "Small products measure how fast the CPU issues them more than the GPU, and vary by a third from run "
        "to run: a change, not a regression.",
        "Nothing to fix; compare the large sizes.",
    ),
    # --- ED840-ED869: GPU links and topology (envdoctor/links/rules_topo.py) ----------------------------
    Code(
        "ED840",
        "PCIe link limited below the GPU's generation by its slot",
        "links",
        ("warning",),
        "NVML's maximum for this GPU in this slot (or the bridge port above it in sysfs) is a lower PCIe "
        "generation than the GPU supports: the slot, a riser, or the BIOS's link-speed setting holds it back. "
        "Every host<->GPU copy, and GPU<->GPU traffic without NVLink, runs at the lower rate.",
        "Move the card to a CPU-attached x16 slot of its generation, replace the riser, or set the slot's link "
        "speed to Auto in the BIOS; read again under load.",
        (NVML_DEVICE_QUERIES,),
    ),
    Code(
        "ED841",
        "PCIe link narrower than the GPU's",
        "links",
        ("warning",),
        "The slot allows fewer lanes than the GPU has (x8 of x16): it is wired narrower, or a riser or a "
        "bifurcation setting splits it. This is NVML's maximum for the GPU in this slot (or the bridge port in "
        "sysfs), not the current width, so it is not idle power saving.",
        "Use a slot wired x16, undo the bifurcation setting, or replace the riser.",
        (NVML_DEVICE_QUERIES,),
    ),
    Code(
        "ED842",
        "PCIe link running below its maximum under load",
        "links",
        ("warning",),
        "The GPU was busy when read and its link ran at a lower generation or width than it trains at: a "
        "marginal link (riser, seating, signal) that down-trained.",
        "Re-seat the card or replace the riser; check lspci's LnkSta under load.",
        (NVML_DEVICE_QUERIES,),
    ),
    Code(
        "ED845",
        "NVLink links down",
        "links",
        ("error", "info"),
        "Some or all NVLinks of a GPU that has them are inactive: traffic to its peers falls back to PCIe (or "
        "to the remaining links). On SXM boards this is a hardware or Fabric Manager fault; on bridged cards a "
        "missing or loose bridge.",
        "SXM boards: check Fabric Manager, then service; bridged cards: fit or re-seat the bridge.",
        (NVML_NVLINK,),
    ),
    Code(
        "ED846",
        "NVLink error counters are not zero",
        "links",
        ("warning",),
        "Replays, recoveries or CRC errors were counted on active NVLinks since the driver loaded: a degrading "
        "link that slows collectives and can precede Xid 74 (the link taken offline).",
        "Watch whether the counters grow under load (envdoctor comms); re-seat the bridge, or service the board.",
        (NVML_NVLINK,),
    ),
    Code(
        "ED847",
        "NVSwitch fabric not ready (Fabric Manager)",
        "links",
        ("error",),
        "On an NVSwitch board the GPU's fabric registration has not completed or failed: until Fabric Manager "
        "finishes, CUDA and NCCL cannot use NVLink between the GPUs.",
        "Start nvidia-fabricmanager (its version matching the driver's) and read its log.",
        (FABRIC_MANAGER,),
    ),
    Code(
        "ED848",
        "GPU pairs with fewer NVLinks than the GPU model has (nvidia-smi topo -m)",
        "links",
        ("error",),
        "Read from nvidia-smi topo -m where NVML cannot list link states: on an NVSwitch board every pair "
        "should show all of the GPU's links (H100/H200: NV18), on a mesh each GPU's pairs add up to them; a "
        "pair with fewer (NV12) or none (SYS) means links or the fabric are down and collectives slow down.",
        "Read the link states (nvidia-smi nvlink -s), check Fabric Manager, then service.",
        (NVML_NVLINK,),
    ),
    Code(
        "ED850",
        "No peer-to-peer access between GPUs",
        "links",
        ("warning", "info"),
        "NVML reports that GPUs cannot read or write each other's memory: NCCL stages traffic through host "
        "memory. On servers PCI ACS or the IOMMU usually blocks it; GeForce drivers do not enable P2P over "
        "PCIe at all.",
        "Disable PCI ACS on the bridges above the GPUs and set iommu=pt; GeForce cards need an NVLink bridge for P2P.",
        (NCCL_ACS,),
    ),
    Code(
        "ED851",
        "GPUs sit on different NUMA nodes",
        "links",
        ("info",),
        "The GPUs are attached to different CPU sockets: traffic between GPUs of different nodes crosses the "
        "CPU interconnect (SYS), and a process pinned to one node feeds the other node's GPUs through it.",
        "Bind each process to its GPU's NUMA node (numactl --cpunodebind --membind).",
        (),
    ),
    Code(
        "ED855",
        "MIG mode is on",
        "links",
        ("warning", "info"),
        "The GPU is partitioned into MIG instances: torch sees one instance per process, not the whole GPU, "
        "and NCCL cannot join MIG instances with P2P or NVLink.",
        "nvidia-smi -mig 0 and a GPU reset for whole-GPU jobs; nothing to do where MIG instances are intended.",
        (MIG_GUIDE,),
    ),
    Code(
        "ED856",
        "ECC is off on a data-center GPU",
        "links",
        ("warning",),
        "ECC protects memory from silent bit flips; data-center GPUs ship with it on. With it off, corrupted "
        "training runs go undetected and the row-remapping counters stay blind.",
        "nvidia-smi -e 1, then reboot.",
        (),
    ),
    Code(
        "ED857",
        "Persistence mode is off",
        "links",
        ("info",),
        "Without persistence the driver tears the GPU down when the last client exits and sets it up again for "
        "the next one: every CUDA start and nvidia-smi call is slower.",
        "systemctl enable --now nvidia-persistenced.",
        (DRIVER_PERSISTENCE,),
    ),
    # --- ED860-ED867: the fabric between nodes (envdoctor/rules/fabric.py) ---------------------------
    Code(
        "ED860",
        "An InfiniBand/RoCE port is not ACTIVE",
        "links",
        ("error",),
        "The port's state in /sys/class/infiniband is DOWN, INIT or ARMED: no traffic between nodes goes "
        "through it. Up physically but INIT means no subnet manager configured it; DOWN is the cable, the "
        "switch port or a disabled port.",
        "ibstat DEV PORT; check the subnet manager (opensm or the switch's), the cable and the switch port.",
        ("https://docs.kernel.org/infiniband/sysfs.html",),
    ),
    Code(
        "ED861",
        "InfiniBand/RoCE without GPUDirect RDMA",
        "links",
        ("warning",),
        "Adapters are active but neither nvidia_peermem is loaded nor the open kernel module's dma-buf path "
        "available: NCCL stages traffic between nodes through host memory, at a fraction of the adapter's rate.",
        "sudo modprobe nvidia-peermem (and load it at boot), or use the open kernel module with a kernel and "
        "NCCL that support dma-buf.",
        ("https://docs.nvidia.com/cuda/gpudirect-rdma/index.html",),
    ),
    Code(
        "ED862",
        "NCCL_SOCKET_IFNAME names no interface of this node",
        "links",
        ("error",),
        "NCCL picks its bootstrap and socket interfaces by this prefix list; when none matches, the process "
        "group cannot start ('no socket interface found').",
        "Name an interface of ip -br link, or unset the variable.",
        ("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
    ),
    Code(
        "ED863",
        "NCCL_IB_HCA names HCAs this node does not have",
        "links",
        ("error",),
        "NCCL uses only the HCAs this list names; a name that matches no adapter leaves NCCL on fewer rails "
        "than the node has, or on sockets.",
        "Name adapters of ibv_devices, or unset the variable.",
        ("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
    ),
    Code(
        "ED864",
        "An NCCL variable forces a slower path",
        "links",
        ("warning",),
        "NCCL_P2P_DISABLE, NCCL_IB_DISABLE or NCCL_SHM_DISABLE switch off a transport NCCL would use: GPU "
        "peer copies, InfiniBand, or shared memory. Often left in a profile after a workaround.",
        "Unset the variable unless it works around a known fault on this machine.",
        ("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
    ),
    Code(
        "ED865",
        "No NCCL net plugin found",
        "links",
        ("info",),
        "NCCL's built-in IB verbs transport is used; SHARP (nccl-rdma-sharp-plugins) and AWS EFA "
        "(aws-ofi-nccl) need their plugin.",
        "Nothing for plain InfiniBand; install the fabric's plugin where it has one.",
        ("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
    ),
    Code(
        "ED866",
        "A GPU's nearest active adapter is across the CPU link",
        "links",
        ("info",),
        "Its traffic between nodes crosses the inter-CPU link (topo -m: SYS), where GPUDirect RDMA is slow or off.",
        "Bind each rank to the adapter of its own NUMA node; check nvidia-smi topo -m.",
        ("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
    ),
    Code(
        "ED867",
        "An InfiniBand/RoCE port runs slower than the node's others",
        "links",
        ("warning",),
        "One active port negotiated a lower rate than the other ports of the node: a cable or a switch port.",
        "ibstat DEV PORT; reseat or replace the cable.",
        ("https://docs.kernel.org/infiniband/sysfs.html",),
    ),
    # --- ED870-ED899: collectives (envdoctor/links/rules_comms.py) ---------------------------------------
    Code(
        "ED870",
        "Bus bandwidth far below what the links should carry",
        "comms",
        ("error",),
        "At large messages a collective reached less than half of the expected figure (a published one for "
        "this setup, else ~80% of the slowest path's peak): NCCL is not using NVLink or P2P, a link is "
        "degraded, or the GPUs are busy or throttled.",
        "envdoctor topo for a degraded link or missing P2P; NCCL settings in the environment; the clocks under load.",
        (NCCL_TESTS_PERFORMANCE,),
    ),
    Code(
        "ED871",
        "Bus bandwidth below what the links should carry",
        "comms",
        ("warning",),
        "At large messages a collective reached 50-80% of the expected figure: a slower path than expected, a "
        "down-trained PCIe link, NCCL settings in the environment, or other load.",
        "envdoctor topo; NCCL settings in the environment; other load on the GPUs.",
        (NCCL_TESTS_PERFORMANCE,),
    ),
    Code(
        "ED872",
        "A collective returned a wrong result",
        "comms",
        ("error",),
        "After timing, every rank put known values in its input and the output did not hold the expected sum "
        "or concatenation: a GPU, link or NCCL fault that silently corrupts training.",
        "envdoctor burn on the GPUs and their ECC counters; another NCCL algorithm narrows it down.",
        (NCCL_TROUBLESHOOTING,),
    ),
    Code(
        "ED873",
        "A rank failed",
        "comms",
        ("error",),
        "A rank stopped answering (hung) or died during the run; the others then failed waiting for it. The "
        "rank named is the one to look at (its GPU, its link, its log).",
        "Look at the named rank's GPU (nvidia-smi, Xid in the kernel log) and NCCL's own log.",
        (NCCL_TROUBLESHOOTING,),
    ),
    Code(
        "ED874",
        "The ranks could not run",
        "comms",
        ("error",),
        "No rank measured anything: the target Python has no torch or no CUDA, a GPU index is wrong, or the "
        "ranks could not meet (the rendezvous port, the firewall, a launcher's variables).",
        "envdoctor check for torch and CUDA in the target Python; envdoctor comms --backend gloo to see "
        "whether processes meet.",
        (),
    ),
    Code(
        "ED875",
        "One GPU pair is much slower than the others",
        "comms",
        ("warning",),
        "A one-way copy between two GPUs ran at less than half of the other pairs of the same kind of path (or "
        "of its link's expected rate): that link, bridge or slot is the slow one.",
        "envdoctor topo for those GPUs; re-seat the bridge or the card, check the slot.",
        (),
    ),
    Code(
        "ED876",
        "Host <-> GPU copies far below the PCIe link",
        "comms",
        ("warning",),
        "Pinned copies between host memory and the GPU reached less than half of what the GPU's PCIe link "
        "carries: a down-trained link, a shared switch, or memory on the far NUMA node.",
        "envdoctor topo for the link and its NUMA node; run bound to the GPU's node.",
        (),
    ),
    Code(
        "ED877",
        "One GPU: nothing to measure between GPUs",
        "comms",
        ("info",),
        "With a single rank no byte crosses a link between GPUs (nccl-tests' factors are 0); the host<->GPU "
        "copies are measured instead.",
        "Nothing to fix.",
        (),
    ),
    Code(
        "ED878",
        "NVLink SHARP (NVLS) state",
        "comms",
        ("info",),
        "NVLS lets the NVSwitch reduce, raising all-reduce busbw above the wire rate (~480 vs ~370 GB/s on 8 "
        "H100/H200). It is on where NCCL_NVLS_ENABLE allows and the fabric supports multicast; envdoctor never "
        "changes NCCL_NVLS_ENABLE and compares with the figure for the state it found.",
        "Nothing to fix: the verdict uses the figure for the NVLS state found.",
        (NCCL_TESTS_NVLS,),
    ),
    Code(
        "ED879",
        "NCCL went through host memory between GPUs",
        "comms",
        ("warning",),
        "NCCL connected some GPUs of this node through shared host memory (SHM) instead of P2P or NVLink: P2P "
        "is disabled (NCCL_P2P_DISABLE, ACS/IOMMU, GeForce) and every byte crosses the CPU.",
        "envdoctor topo for P2P support; unset NCCL_P2P_DISABLE.",
        (NCCL_TROUBLESHOOTING,),
    ),
    Code(
        "ED880",
        "Sizes skipped: not enough GPU memory",
        "comms",
        ("warning",),
        "A size needs more free GPU memory than one GPU had; it was left out on every rank.",
        "Free GPU memory, or measure smaller sizes (--sizes).",
        (),
    ),
    Code(
        "ED881",
        "No GPU: nothing to measure",
        "comms",
        ("info",),
        "Neither NVML nor the target's torch sees a GPU, so there is nothing to measure between GPUs or "
        "between host and GPU; --backend gloo --nproc N measures collectives between CPU processes.",
        "Nothing to measure; envdoctor comms --backend gloo --nproc N measures CPU processes.",
        (),
    ),
    Code(
        "ED882",
        "The ranks answered but measured nothing",
        "comms",
        ("error",),
        "Every rank ran and answered in the right form, yet no collective, pair copy or host copy was measured "
        "(every size skipped, or an empty answer): nothing measured is never a healthy verdict.",
        "Read each rank's answer (--json), give sizes that fit, check torch and CUDA in the target.",
    ),
    # --- ED9xx: envdoctor itself -------------------------------------------------------------------
    # fleet (envdoctor/fleet/rules.py): a node that differs from the others
    Code(
        "ED751",
        "A node runs another driver branch than the fleet",
        "fleet",
        ("error",),
        "The driver branch (580, 570) decides the highest CUDA the node runs and how the GPUs behave; a job "
        "spread over nodes of different branches fails or differs on some of them.",
        "Install the fleet's branch (the commands are for the node's distribution) and reboot.",
    ),
    Code(
        "ED752",
        "A node runs another driver version of the fleet's branch",
        "fleet",
        ("warning",),
        "Same branch, another release: usually harmless, but bug fixes differ.",
        "Upgrade it with the others.",
    ),
    Code(
        "ED753",
        "A node's driver supports another CUDA than the fleet's",
        "fleet",
        ("error",),
        "Programs built for the newer CUDA fail on the node whose driver supports less (cudaErrorInsufficientDriver).",
        "Upgrade its driver.",
    ),
    Code(
        "ED754",
        "A node's loaded kernel module differs from the fleet's driver",
        "fleet",
        ("warning",),
        "The kernel module in memory is not the version the others run (often a driver upgraded without a "
        "reboot); reboot or reload the module.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED755",
        "A node uses the other kernel-module flavour (open or proprietary)",
        "fleet",
        ("warning",),
        "The open and proprietary modules of one branch behave alike for CUDA, but support, GSP firmware and "
        "bugs differ; install the flavour the others run.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED756",
        "A node has another number of GPUs than the fleet",
        "fleet",
        ("error",),
        "A GPU is missing (fallen off the bus, Xid 79, not passed through to the VM, disabled) or the node is "
        "another type; a job asking for every GPU fails there.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED757",
        "A node has other GPU models than the fleet",
        "fleet",
        ("error",),
        "A job tuned for one model (memory, speed, kernels) runs unevenly on another; schedule it apart.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED758",
        "A GPU's power limit differs from the fleet's for its model",
        "fleet",
        ("warning",),
        "A lower power limit makes that GPU, and every collective waiting for it, slower; set the limit the "
        "others run.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED759",
        "A GPU's max SM clock differs from the fleet's for its model",
        "fleet",
        ("warning",),
        "Another VBIOS or board: it may run slower than the others.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED760",
        "A node's ECC mode differs from the fleet's",
        "fleet",
        ("warning",),
        "ECC off frees memory and hides memory errors; ECC on costs a little. Keep the fleet alike.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED761",
        "A node runs another torch build than the fleet",
        "fleet",
        ("error",),
        "Another torch release or CUDA variant gives other kernels, numerics and NCCL; a job spread over the "
        "nodes may hang or fail.",
        "Install the fleet's build.",
    ),
    Code(
        "ED762",
        "A node's torch is built for another CUDA than the fleet's",
        "fleet",
        ("error",),
        "The torch wheel's CUDA variant differs; install the fleet's.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED763",
        "torch cannot use the GPUs on a node where the fleet's can",
        "fleet",
        ("error",),
        "The node's torch is a CPU build, or CUDA fails there (driver, container, visible devices); its own "
        "check says which.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED764",
        "A node's torch loads another cuDNN than the fleet's",
        "fleet",
        ("warning",),
        "Convolution and attention kernels differ, and so may speed and numerics.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED765",
        "A node's torch loads another NCCL than the fleet's",
        "fleet",
        ("error",),
        "NCCL's versions talk to each other only within limits: a collective across nodes with different "
        "NCCLs may hang or fail. Load the fleet's.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED766",
        "A node runs another Python than the fleet",
        "fleet",
        ("warning",),
        "Wheels and pickled objects differ between Python versions.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED767",
        "A node has other CUDA toolkits (nvcc) than the fleet",
        "fleet",
        ("warning",),
        "Extensions built on that node (JIT or pip builds) use another nvcc.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED768",
        "A node has another NVIDIA Container Toolkit than the fleet",
        "fleet",
        ("warning",),
        "Containers get the GPUs another way (or not at all) on that node.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED769",
        "A node runs another operating system than the fleet",
        "fleet",
        ("warning",),
        "Libraries, the driver packaging and the glibc differ.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED770",
        "A node runs another Linux kernel than the fleet",
        "fleet",
        ("info",),
        "Usually harmless; a DKMS driver module must be built for each kernel.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED771",
        "A node's own check found errors the others do not have",
        "fleet",
        ("error",),
        "envdoctor check on the node reported errors (each with its own code and fix); the fix of each is "
        "repeated here.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED772",
        "A GPU has uncorrected ECC errors",
        "fleet",
        ("error",),
        "Memory errors ECC could not correct: results on that GPU may be wrong, and the driver may have "
        "killed processes (Xid 48, 94, 95).",
        "Drain the node, reset the GPU, and watch whether they return.",
    ),
    Code(
        "ED773",
        "A GPU has row remaps pending or failed",
        "fleet",
        ("error",),
        "Pending remaps take effect at the next GPU reset; a failed remap means the memory cannot be "
        "repaired: the GPU needs service.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED774",
        "A GPU reports corrected ECC errors where the fleet has none",
        "fleet",
        ("warning",),
        "Corrected errors cost nothing now but often come before uncorrected ones; watch the GPU.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED775",
        "A GPU is more than 5% slower than the fleet's median for its model",
        "fleet",
        ("error",),
        "Measured matmul TFLOP/s at the same point (dtype and size) as the other GPUs of the same model; a "
        "slow GPU (power cap, thermal throttling, a clock lock, a degraded board) holds back every collective "
        "of a job.",
        "Look at its clock-event reasons and measure it again.",
    ),
    Code(
        "ED780",
        "A node did not report",
        "fleet",
        ("error",),
        "In a gather: the node never joined rank 0 within --join-timeout (not started, hung, cannot reach "
        "rank 0's address and port) or joined too late; the others are reported without it.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED781",
        "A node's document could not be read",
        "fleet",
        ("error",),
        "The file is not an envdoctor document, is cut short, or holds values no probe writes; the node is "
        "named and left out of the comparison.",
        "Bring the node in line with the fleet: the finding gives the node's value, the majority's and the "
        "commands for that node.",
    ),
    Code(
        "ED782",
        "A node is slow with every partner in the pairwise comms pass",
        "fleet",
        ("error", "warning"),
        "fleet --gather --comms paired the nodes twice (two rounds, the pairs of a round at once) and timed a "
        "two-node all-reduce per pair: this node's pairs were all more than 5% below the median busbw of all "
        "pairs while its partners were fine with others, so the node (its NIC, the GPU's PCIe path to it, its "
        "CPU for gloo) holds back every collective it is in. An error over NCCL; a warning over gloo, whose "
        "figure is TCP through the CPUs and not the path a job's NCCL takes.",
        "On that node: envdoctor comms and envdoctor topo (PCIe width, the NIC nearest the GPU), ibstat for "
        "the port state and rate.",
    ),
    Code(
        "ED783",
        "A link between two nodes is slow in the pairwise comms pass",
        "fleet",
        ("error", "warning"),
        "One pair was more than 5% below the median busbw of all pairs while both of its nodes were fine with "
        "their other partner: the path between them (a cable, a switch port, a route) is slow. A warning "
        "where one of the two had no other partner (an odd count of nodes), so node and link cannot be told "
        "apart, and over gloo.",
        "Look at the ports of both nodes (ibstat) and the switch ports and cables between them.",
    ),
    Code(
        "ED784",
        "A node did not finish the comms phase",
        "fleet",
        ("error",),
        "fleet --gather --comms gives every step of its comms phase (ready, the process group, the "
        "all-reduce, each round of pairs) --join-timeout seconds; this node did not finish the first step "
        "some node did not finish (it hung, failed, or waited on a partner that did). Its report is still "
        "compared with the others'.",
        "envdoctor comms on that node; NCCL_DEBUG=INFO shows where NCCL stops; raise --join-timeout where a "
        "first connection is slow.",
    ),
    Code(
        "ED785",
        "A collective across the nodes gave wrong results",
        "fleet",
        ("error",),
        "After the timing, every rank filled its buffer with known small integers and ran the all-reduce "
        "once more; some elements of the result differed from the exact sum: data is corrupted on the way "
        "(a GPU, a NIC, host memory).",
        "Run envdoctor burn on the nodes of the pair with wrong results; take them out of service until it "
        "is understood.",
    ),
    Code(
        "ED786",
        "Bandwidth between two nodes far below their adapters' rate",
        "fleet",
        ("warning",),
        "In the pairwise pass over NCCL, a pair of nodes reached less than half of the rate of the slower "
        "node's fastest active InfiniBand/RoCE port (its report's fabric facts): NCCL went over TCP sockets, "
        "without GPUDirect RDMA, over a port that trained down, or across the CPU link.",
        "Run envdoctor diag -r 1 on both nodes (ports, GPUDirect RDMA, NCCL variables), and the gather again "
        "with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see NET/IB or NET/Socket.",
    ),
    # burn (envdoctor/burn/rules.py): sustained load on every GPU
    Code(
        "ED800",
        "A product differed from the first one",
        "burn",
        ("error",),
        "The same inputs went through the same cuBLAS call on one stream, which NVIDIA documents to give "
        "bit-identical results, yet a result differed (on the CPU: by more than floating-point summation in "
        "another order can explain). The GPU computes wrong answers under load.",
        "Take it out of service, rerun burn to see whether it repeats, then run NVIDIA's field diagnostics or "
        "ask for a replacement.",
    ),
    Code(
        "ED801",
        "The first product is wrong against float64",
        "burn",
        ("error",),
        "The first product of the load was compared with the same product in float64 on a slice and is off by "
        "more than the dtype allows (or holds NaN/Inf). Every later product was compared with a wrong "
        "reference. Rerun; if it repeats, the GPU (or the torch/cuBLAS build) computes wrongly.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED802",
        "The memory pattern test read back wrong words",
        "burn",
        ("error",),
        "Words written to GPU memory with a known pattern read back different. This is a memory fault (or an "
        "uncorrected ECC error).",
        "Check the ECC and remapped-row counters, reset the GPU and rerun.",
    ),
    Code(
        "ED803",
        "Uncorrected ECC errors during the run",
        "burn",
        ("error",),
        "The GPU's volatile uncorrected ECC count (or rows remapped for uncorrectable errors) grew during the "
        "load. Data on the GPU may have been corrupted.",
        "Drain the GPU, reset it (nvidia-smi -r) so the row is remapped, and rerun burn; replace it if errors recur.",
    ),
    Code(
        "ED804",
        "Uncorrected ECC errors since the driver loaded",
        "burn",
        ("error",),
        "The GPU reports uncorrected ECC errors from before this run (the volatile count since the driver "
        "loaded). A reset clears the count and applies pending row remaps; rerun burn after it.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED805",
        "A row remap is pending",
        "burn",
        ("error",),
        "The GPU found a bad memory row and has a remap waiting for the next GPU reset. Until then the row is "
        "unprotected.",
        "Reset the GPU (nvidia-smi -r, no processes on it) and rerun burn.",
    ),
    Code(
        "ED806",
        "A row remap failed",
        "burn",
        ("error",),
        "The GPU could not remap a bad memory row (its remap table is full or the remap failed). NVIDIA's "
        "guidance is to have the GPU serviced (RMA).",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED807",
        "A critical Xid during the run",
        "burn",
        ("error",),
        "NVML delivered an Xid that NVIDIA's catalog says needs a GPU reset, a reboot, or service. The "
        "finding names the code, its meaning and what to do.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
        (XID_CATALOG,),
    ),
    Code(
        "ED808",
        "An Xid during the run",
        "burn",
        (
            "warning",
            "info",
        ),
        "NVML delivered an Xid that is usually an application or driver event rather than a hardware fault. "
        "During envdoctor's own known-good load it is worth a look: its meaning and action are in the "
        "finding.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
        (XID_CATALOG,),
    ),
    Code(
        "ED809",
        "Sustained throughput below 90% of the model's figure",
        "burn",
        ("error",),
        "The median product rate after the warm-up is under 0.9x the sustained rate recorded for this GPU "
        "model at its power limit (data/health.toml).",
        "Look at the clocks, power and clock-event reasons of the run: a power limit set lower, poor cooling, "
        "or a GPU that is slow.",
    ),
    Code(
        "ED810",
        "Sustained throughput below the model's figure, which does not apply fully",
        "burn",
        ("warning",),
        "The rate is under 0.9x the recorded figure, but that figure is unconfirmed or was measured at a "
        "higher power limit than this GPU has, so this is a warning, not a fault.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED811",
        "Slower than the machine's other GPUs",
        "burn",
        ("error",),
        "The sustained rate of this GPU is more than 5% below the median of the other GPUs of the machine "
        "under the same load. DCGM's diagnostics once passed an A100 running at a third of its siblings' "
        "speed (NVIDIA/DCGM#122); compare its clocks, power and temperature with theirs.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED812",
        "Clocks held back by temperature, power brake or a hardware slowdown",
        "burn",
        ("error",),
        "In more than 5% of the samples under load NVML reported a clock-event reason other than idle or the "
        "software power cap: thermal slowdown, hardware slowdown or the power brake.",
        "Check cooling (fans, airflow, heatsink contact) and power delivery.",
    ),
    Code(
        "ED813",
        "The GPU reached its slowdown temperature",
        "burn",
        ("error",),
        "The GPU temperature reached the threshold at which it slows itself down (NVML's slowdown threshold). "
        "Under a sustained load a healthy, well-cooled GPU stays well below it.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED814",
        "The GPU memory reached its maximum temperature",
        "burn",
        ("error",),
        "The memory temperature reached NVML's maximum memory operating temperature.",
        "Check cooling.",
    ),
    Code(
        "ED815",
        "The GPU came close to its slowdown temperature",
        "burn",
        ("warning",),
        "The temperature came within 5 C of the slowdown threshold: the cooling has little margin left.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED816",
        "The GPU's burn process hung",
        "burn",
        ("error",),
        "The child process that loads this GPU printed nothing for longer than the idle limit (a product or a "
        "synchronisation that never returns) and was stopped. A hung GPU often shows an Xid in the kernel log "
        "(sudo dmesg | grep -i xid); reset the GPU or reboot.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED817",
        "The GPU's burn process died",
        "burn",
        ("error",),
        "The child process that loads this GPU crashed, exited or failed before it finished (the finding "
        "names the signal or the error and the step). The other GPUs are reported as usual.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED818",
        "The load failed with an error",
        "burn",
        ("error",),
        "A product, a compare or the memory test raised an error (for example a CUDA error: an illegal "
        "address or an uncorrectable ECC error). The GPU could not complete the load.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED819",
        "Not enough free GPU memory",
        "burn",
        ("warning",),
        "The load or the memory test could not allocate what it needed: another process holds GPU memory.",
        "Stop it and rerun burn for a full test.",
    ),
    Code(
        "ED820",
        "Corrected ECC errors during the run",
        "burn",
        ("warning",),
        "ECC corrected errors during the load. A few are normal over a GPU's life; a steady stream points at "
        "a memory row going bad (watch for remaps).",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED821",
        "PCIe replays during the run",
        "burn",
        ("warning",),
        "The GPU's PCIe replay counter grew: packets were resent on the link. DCGM's PCIe test tolerates up "
        "to 80 under heavy traffic; during burn the link is nearly idle.",
        "Check seating and risers.",
    ),
    Code(
        "ED822",
        "NVLink errors during the run",
        "burn",
        ("warning",),
        "NVLink recovery events, or more than 100 CRC errors, during the load (DCGM's limits).",
        "Check the NVLink bridge or the NVSwitch fabric.",
    ),
    Code(
        "ED823",
        "Thermal violation time during the run",
        "burn",
        ("warning",),
        "NVML counted time in which the clocks were held back for temperature during the load.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED824",
        "NVML is not readable: GPU health was not watched",
        "burn",
        ("warning",),
        "The load ran on the GPU but envdoctor could not read NVML, so temperatures, clocks, throttle "
        "reasons, ECC and Xids are unknown and no health verdict beyond correctness is given.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED825",
        "Xid events were not watched",
        "burn",
        ("info",),
        "NVML refused the Xid event set (older driver or permissions): Xids during the run would not be seen.",
        "Look at the kernel log instead: sudo dmesg | grep -i xid.",
    ),
    Code(
        "ED826",
        "The run was stopped before its time",
        "burn",
        ("info",),
        "Ctrl-C (or a stop) ended the load early: the verdict covers what ran.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED827",
        "Too short for a throughput verdict",
        "burn",
        ("info",),
        "A dtype's load ran for less than 3 s, too short for a sustained figure to mean much.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
    ),
    Code(
        "ED828",
        "CPU run: no GPU-health verdict",
        "burn",
        ("info",),
        "No GPU was usable and burn --cpu asked for the CPU, so the load ran on the CPU with small products "
        "(without --cpu burn stops there, exit 2). It still checks that repeated products agree, but says "
        "nothing about a GPU (no Tensor Cores, clocks or ECC).",
        "Run envdoctor burn on a machine with an NVIDIA GPU (and a CUDA build of torch) for a GPU verdict.",
    ),
    Code(
        "ED829",
        "An Xid on a GPU that was not burned",
        "burn",
        ("warning",),
        "NVML delivered an Xid for a GPU outside --device during the run.",
        "The finding names what was seen and where; act on its evidence and rerun envdoctor burn.",
        (XID_CATALOG,),
    ),
    Code(
        "ED830",
        "The load answered but measured nothing",
        "burn",
        ("error",),
        "The target answered in the burn child's form, but no product was computed and no memory tested on "
        "any device: nothing measured is never a verdict, so the run failed.",
        "Read the devices' answers (--json), then check torch and CUDA in the target.",
    ),
    # --- ED94x: profile, the user's own step -----------------------------------------------------
    Code(
        "ED940",
        "Input-bound: the step waits for its batches",
        "profile",
        ("warning",),
        "The profiled steps spend 20% or more of their wall time inside DataLoader's __next__: the GPU (or "
        "the model's compute) waits for the data, and nothing on the model side will make the step faster.",
        "More DataLoader workers (num_workers up to the CPU cores per GPU), pin_memory=True, persistent_workers "
        "and prefetch_factor; move per-sample work out of __getitem__.",
        (PT_DATALOADER,),
    ),
    Code(
        "ED941",
        "Host syncs in the loop",
        "profile",
        ("warning", "info"),
        "A call at the user's line (.item(), .tolist(), .cpu(), bool(tensor), torch.cuda.synchronize()) makes "
        "the CPU wait for the GPU every step, so the CPU cannot queue the next kernels ahead: a warning when the "
        "waits take 5% of the step or more on a GPU; on a CPU-only torch only a note (it would wait on a GPU).",
        "Keep the value on the GPU (accumulate in a tensor) and read it every N steps or when logging; "
        "torch.cuda.set_sync_debug_mode('warn') lists every sync.",
        (PT_SYNC_DEBUG,),
    ),
    Code(
        "ED942",
        "fp32 matmuls without Tensor Cores",
        "profile",
        ("warning",),
        "Half or more of the matmul time ran in fp32 on the CUDA cores, on a GPU whose Tensor Cores run TF32, "
        "fp16 or bf16 several times faster.",
        "torch.backends.cuda.matmul.allow_tf32 = True (or torch.set_float32_matmul_precision('high')), or bf16 "
        "autocast.",
        (PT_TF32,),
    ),
    Code(
        "ED943",
        "The optimizer step is not fused",
        "profile",
        ("warning",),
        "Adam/AdamW/SGD/Adagrad on CUDA without fused=True, and its step takes 10% of the step or more: the "
        "fused implementation does the whole update in a few kernels.",
        "torch.optim.AdamW(params, ..., fused=True).",
        (PT_OPTIM,),
    ),
    Code(
        "ED944",
        "Communication-bound",
        "profile",
        ("warning",),
        "Collectives take 30% of the step or more and under half of them overlap computation: the ranks wait "
        "for each other's gradients or shards.",
        "DDP: larger buckets, no_sync() under gradient accumulation; FSDP/ZeRO-3 over PCIe: a lower stage or "
        "hybrid sharding within the node; check the links with envdoctor topo.",
        (PT_DDP,),
    ),
    Code(
        "ED945",
        "Launch-bound",
        "profile",
        ("warning",),
        "The GPU is idle 30% of the step or more between kernels whose median is under 20 us: the CPU cannot "
        "launch them fast enough.",
        "torch.compile the model (fuses small kernels), mode='reduce-overhead' (CUDA graphs), or larger batches.",
        (PT_CUDA_GRAPHS,),
    ),
    Code(
        "ED946",
        "The GPU is idle with no cause envdoctor can name",
        "profile",
        ("info",),
        "The GPU is idle 40% of the step or more and none of the other causes (input, syncs, launches, "
        "communication) explains it.",
        "Keep the trace (--trace DIR) and look at the gaps in Perfetto or HolisticTraceAnalysis.",
        (PT_PROFILER,),
    ),
    Code(
        "ED948",
        "The profiler slowed the profiled steps",
        "profile",
        ("info",),
        "The profiled steps took more than 10% longer than the same script's steps timed without the profiler: "
        "the shares still hold, the absolute times are inflated.",
        "Read the shares, and the baseline's step time for the absolute one; leave --shapes off.",
        (PT_PROFILER,),
    ),
    Code(
        "ED900",
        "One of envdoctor's checks failed",
        "envdoctor",
        ("warning",),
        "A check raised an exception: a bug in envdoctor, not a problem of the machine. The other checks ran.",
        "Run envdoctor check --debug for the traceback and report it.",
    ),
    Code(
        "ED901",
        "envdoctor's compatibility table could not be loaded",
        "envdoctor",
        ("warning",),
        "The bundled data/*.toml files are missing or broken; checks that need the table (driver floors, GPU "
        "architectures) were skipped.",
        "Reinstall envdoctor (pip install --force-reinstall envdoctor) to restore the data files.",
    ),
    Code(
        "ED902",
        "envdoctor could not read part of the machine",
        "envdoctor",
        ("warning",),
        "A probe failed (a command hung, exited with an error, printed what envdoctor cannot read, or a file "
        "could not be read) and no other finding covers it, so that part of the report is missing: nothing "
        "is known about it, not even that it is fine.",
        "Run the command the evidence names by hand to see what it says; envdoctor check -v shows where "
        "each fact came from.",
    ),
)

CODES: Dict[str, Code] = {c.code: c for c in _CODES}


def lookup(code: str) -> Optional[Code]:
    """The registry entry of ``code`` ("ed205" and " ED205 " are accepted); None if unknown."""
    return CODES.get(code.strip().upper())


def meaning(code: str) -> str:
    """The registry's explanation of ``code``: what a finding's ``explanation`` says by default."""
    entry = CODES[code]
    return entry.meaning + (" " + entry.fix if entry.fix else "")


def range_of(code: str) -> Optional[CodeRange]:
    """The range ``code`` falls in (known or not); None for something that is not a code."""
    text = code.strip().upper()
    if not CODE_PATTERN.fullmatch(text):
        return None
    number = int(text[2:])
    return next((r for r in RANGES if r.first <= number <= r.last), None)
