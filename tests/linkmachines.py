"""Multi-GPU machines for the links tests: the H200's recorded NVML answers (tests/fakenvml.py)
repeated per GPU and changed where such a machine answers differently.

- ``nvswitch(8)``: HGX H100/H200, every GPU with 18 NVLink 4.0 links (NVML version 6) to NVSwitches,
  Fabric Manager done, GPUs 0-3 on NUMA node 0 and 4-7 on node 1 (NODE within a socket, SYS across),
  the shape of ``nvidia-smi topo -m`` in tests/fixtures/public-nvidia-smi-topo/nvswitch-8gpu-nv18.txt;
- ``pcie_pair()``: two GPUs under the CPU's host bridge (PHB), no NVLink;
- ``nv4_bridge()``: two RTX 3090 joined by a 4-link bridge (NVML version 5, remote = the other GPU);
- ``bridged_quad()``: four A100 PCIe, 0-1 and 2-3 joined by 12-link bridges, the pairs across sockets.

NVML answers per pair (common ancestor, P2P status) are keyed by both GPUs here; the shared fake
keys them by the first GPU only.
"""

from __future__ import annotations

import ctypes
from typing import Any, Dict, Optional, Tuple

import pynvml

from tests.fakenvml import FakeNvml, Handle

H200 = "h200-driver580-cuda13"
LEVEL = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}
P2P = {"ok": 0, "chipset not supported": 1, "not supported": 5}


def _bus(i: int) -> str:
    return f"00000000:{0x18 + 0x10 * i:02X}:00.0"


class LinkNvml(FakeNvml):
    def __init__(self, gpus: int, name: str = "NVIDIA H200") -> None:
        recorded = FakeNvml.recorded(H200, gpus=gpus)
        super().__init__(recorded.recording)
        self.paths: Dict[Tuple[int, int], str] = {}
        self.p2p: Dict[Tuple[int, int], str] = {}
        self.fabric: Dict[int, Tuple[int, int]] = {}
        for i in range(gpus):
            self.set(i, "nvmlDeviceGetName", name)
            self.recording["gpus"][i]["nvmlDeviceGetPciInfo"]["busId"] = _bus(i)

    def socket(self, gpu: int, node: int, cpus: range) -> None:
        mask = [0] * 16
        for c in cpus:
            mask[c // 64] |= 1 << (c % 64)
        self.set(gpu, "nvmlDeviceGetCpuAffinity:16", mask)
        self.set(gpu, "nvmlDeviceGetMemoryAffinity:1,0", [1 << node])

    def links(
        self, gpu: int, count: int, version: int, remote: Optional[int], kind: int, down: Tuple[int, ...] = ()
    ) -> None:
        """``count`` NVLinks of NVML ``version`` to GPU ``remote`` (kind 0) or to switches (kind 2)."""
        for link in range(count):
            self.set(gpu, f"nvmlDeviceGetNvLinkState:{link}", 0 if link in down else 1)
            self.set(gpu, f"nvmlDeviceGetNvLinkVersion:{link}", version)
            bus = _bus(remote) if remote is not None else f"00000000:{0xC1 + link % 4:02X}:00.0"
            self.set(gpu, f"nvmlDeviceGetNvLinkRemotePciInfo:{link}", {"busId": bus})
            self.set(gpu, f"nvmlDeviceGetNvLinkRemoteDeviceType:{link}", kind)
            for counter in range(4):
                self.set(gpu, f"nvmlDeviceGetNvLinkErrorCounter:{link},{counter}", 0)
        self.set(gpu, f"nvmlDeviceGetNvLinkState:{count}", {"error": pynvml.NVML_ERROR_INVALID_ARGUMENT})

    def pair(self, a: int, b: int, path: str, p2p: str = "ok") -> None:
        self.paths[(a, b)] = self.paths[(b, a)] = path
        self.p2p[(a, b)] = self.p2p[(b, a)] = p2p

    # --- answers by both GPUs ---------------------------------------------------------------
    def nvmlDeviceGetTopologyCommonAncestor(self, h1: Handle, h2: Handle) -> int:
        return LEVEL[self.paths[(h1.index, h2.index)]]

    def nvmlDeviceGetP2PStatus(self, h1: Handle, h2: Handle, cap: Any) -> int:
        return P2P[self.p2p[(h1.index, h2.index)]]

    def nvmlDeviceGetGpuFabricInfoV(self, h: Handle, ref: Any) -> int:
        if h.index not in self.fabric:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        info = ref._obj if hasattr(ref, "_obj") else ctypes.cast(ref, ctypes.POINTER(pynvml.c_nvmlGpuFabricInfoV_t))[0]
        info.state, info.status = self.fabric[h.index]
        return 0


def nvswitch(gpus: int = 8, name: str = "NVIDIA H200") -> LinkNvml:
    nv = LinkNvml(gpus, name)
    half = max(1, gpus // 2)
    for i in range(gpus):
        node = 0 if i < half else 1
        nv.socket(i, node, range(0, 56) if node == 0 else range(56, 112))
        nv.links(i, 18, 6, None, 2)
        nv.fabric[i] = (3, 0)  # NVML_GPU_FABRIC_STATE_COMPLETED, success
        nv.set(i, "nvmlDeviceGetUtilizationRates", {"gpu": 0, "memory": 0})
    for a in range(gpus):
        for b in range(a + 1, gpus):
            nv.pair(a, b, "NODE" if (a < half) == (b < half) else "SYS")
    return nv


def pcie_pair(path: str = "PHB", p2p: str = "ok", name: str = "NVIDIA GeForce RTX 4090") -> LinkNvml:
    nv = LinkNvml(2, name)
    for i in range(2):
        nv.socket(i, 0, range(16))
        nv.set(i, "nvmlDeviceGetCurrPcieLinkGeneration", 4)
        nv.set(i, "nvmlDeviceGetMaxPcieLinkGeneration", 4)
        nv.set(i, "nvmlDeviceGetGpuMaxPcieLinkGeneration", 4)
        nv.set(i, "nvmlDeviceGetEccMode", {"error": 3})  # GeForce: no ECC
    nv.pair(0, 1, path, p2p)
    return nv


def nv4_bridge() -> LinkNvml:
    nv = LinkNvml(2, "NVIDIA GeForce RTX 3090")
    for i in range(2):
        nv.socket(i, 0, range(24))
        nv.links(i, 4, 5, 1 - i, 0)
        for f in (
            "nvmlDeviceGetCurrPcieLinkGeneration",
            "nvmlDeviceGetMaxPcieLinkGeneration",
            "nvmlDeviceGetGpuMaxPcieLinkGeneration",
        ):
            nv.set(i, f, 4)
        nv.set(i, "nvmlDeviceGetEccMode", {"error": 3})
    nv.pair(0, 1, "PHB")
    return nv


def bridged_quad() -> LinkNvml:
    nv = LinkNvml(4, "NVIDIA A100 80GB PCIe")
    for i in range(4):
        nv.socket(i, i // 2, range(0, 32) if i < 2 else range(32, 64))
        nv.links(i, 12, 4, i ^ 1, 0)
        for f in (
            "nvmlDeviceGetCurrPcieLinkGeneration",
            "nvmlDeviceGetMaxPcieLinkGeneration",
            "nvmlDeviceGetGpuMaxPcieLinkGeneration",
        ):
            nv.set(i, f, 4)
    for a in range(4):
        for b in range(a + 1, 4):
            nv.pair(a, b, "PXB" if a // 2 == b // 2 else "SYS")
    return nv


SPEED = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe"}


def pci_tree(
    gpus: int,
    gen: int = 5,
    width: int = 16,
    port: Optional[Dict[int, Tuple[int, int]]] = None,
    link: Optional[Dict[int, Tuple[int, int]]] = None,
) -> Tuple[Dict[str, str], Dict[str, str]]:
    """(files, symlinks) of /sys for ``gpus`` GPUs at the buses LinkNvml gives them, each under its
    own bridge port (as on a server: /sys/devices/pci0000:00/0000:00:0N.0/0000:BB:00.0).
    ``port[i] = (gen, width)``: what GPU i's slot supports; ``link[i]``: what its link trained at."""
    files: Dict[str, str] = {}
    links: Dict[str, str] = {}
    for i in range(gpus):
        address = "0000:" + _bus(i).split(":", 1)[1].lower()
        up = f"0000:00:{i + 1:02x}.0"
        real = f"/sys/devices/pci0000:00/{up}/{address}"
        cur_gen, cur_width = (link or {}).get(i, (gen, width))
        p_gen, p_width = (port or {}).get(i, (gen, width))
        files.update(
            {
                f"{real}/vendor": "0x10de\n",
                f"{real}/class": "0x030200\n",
                f"{real}/device": "0x2335\n",
                f"{real}/current_link_speed": SPEED[cur_gen] + "\n",
                f"{real}/current_link_width": f"{cur_width}\n",
                f"{real}/max_link_speed": SPEED[gen] + "\n",
                f"{real}/max_link_width": f"{width}\n",
                f"{real}/numa_node": f"{0 if i < max(1, gpus // 2) else 1}\n",
                f"/sys/devices/pci0000:00/{up}/max_link_speed": SPEED[p_gen] + "\n",
                f"/sys/devices/pci0000:00/{up}/max_link_width": f"{p_width}\n",
            }
        )
        links[f"/sys/bus/pci/devices/{address}"] = f"../../../devices/pci0000:00/{up}/{address}"
        links[f"/sys/bus/pci/devices/{up}"] = f"../../../devices/pci0000:00/{up}"
    return files, links


def context(tmp_path: Any, nv: LinkNvml, gpus: int, **tree: Any) -> Any:
    """A probe Context: ``nv`` for NVML, a /sys tree of ``pci_tree(gpus, **tree)``, an empty PATH."""
    from envdoctor.probes.context import Context
    from tests.fakes import FakeBin
    from tests.machines import write_tree

    files, symlinks = pci_tree(gpus, **tree)
    root = write_tree(tmp_path / "root", files, symlinks)
    return Context(root=root, env=FakeBin(tmp_path).env(hermetic=True), timeout=5.0, nvml=nv)
