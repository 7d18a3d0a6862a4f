"""Everything the probes learn, as frozen dataclasses (one module per area).

``from envdoctor.facts import Facts, GpuInfo`` loads the module that defines each name when it is
first asked for (PEP 562), so that one area's module (``envdoctor.facts.base``, which every probe
needs) imports without all the others: check starts the target interpreter's child before the
other areas' classes are made (making a frozen dataclass is most of the cost of importing these
modules). ``Facts`` itself is in ``envdoctor.facts.report``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Dict

if TYPE_CHECKING:
    from envdoctor.facts.base import ProbeError
    from envdoctor.facts.conda import CondaFacts, CondaPackage
    from envdoctor.facts.docker import DockerFacts
    from envdoctor.facts.fabric import FabricFacts
    from envdoctor.facts.gpu import DriverFacts, GpuInfo, PciDevice, PciFacts
    from envdoctor.facts.gpu_state import GpuStateFacts
    from envdoctor.facts.links import LinksFacts
    from envdoctor.facts.python import LoadedLibrary, TargetPython, TorchDevice, TorchElsewhere, TorchFacts
    from envdoctor.facts.report import Facts
    from envdoctor.facts.system import SystemFacts
    from envdoctor.facts.toolkit import Toolkit, ToolkitFacts

#: name -> the module of this package that defines it
_HOMES: Dict[str, str] = {
    "CondaFacts": "conda",
    "CondaPackage": "conda",
    "DockerFacts": "docker",
    "DriverFacts": "gpu",
    "FabricFacts": "fabric",
    "Facts": "report",
    "GpuInfo": "gpu",
    "GpuStateFacts": "gpu_state",
    "LinksFacts": "links",
    "LoadedLibrary": "python",
    "PciDevice": "gpu",
    "PciFacts": "gpu",
    "ProbeError": "base",
    "SystemFacts": "system",
    "TargetPython": "python",
    "Toolkit": "toolkit",
    "ToolkitFacts": "toolkit",
    "TorchDevice": "python",
    "TorchElsewhere": "python",
    "TorchFacts": "python",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # asked once
    return value


__all__ = [
    "CondaFacts",
    "CondaPackage",
    "DockerFacts",
    "DriverFacts",
    "FabricFacts",
    "Facts",
    "GpuInfo",
    "GpuStateFacts",
    "LinksFacts",
    "LoadedLibrary",
    "PciDevice",
    "PciFacts",
    "ProbeError",
    "SystemFacts",
    "TargetPython",
    "Toolkit",
    "ToolkitFacts",
    "TorchDevice",
    "TorchElsewhere",
    "TorchFacts",
]
