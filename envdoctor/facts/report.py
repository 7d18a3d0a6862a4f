"""``Facts``: one inspection of one machine, every area's facts together."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from envdoctor.facts.conda import CondaFacts
from envdoctor.facts.docker import DockerFacts
from envdoctor.facts.fabric import FabricFacts
from envdoctor.facts.gpu import DriverFacts, PciFacts
from envdoctor.facts.gpu_state import GpuStateFacts
from envdoctor.facts.links import LinksFacts
from envdoctor.facts.python import TargetPython, TorchFacts
from envdoctor.facts.system import SystemFacts
from envdoctor.facts.toolkit import ToolkitFacts


@dataclass(frozen=True)
class Facts:
    """One inspection of one machine: what ``envdoctor check`` reports under ``facts``."""

    #: the areas every report has had (a saved report lacks the later ones: from_data fills them)
    json_required = ("system", "pci", "driver", "toolkits", "conda", "docker", "python", "torch")

    system: SystemFacts = field(default_factory=SystemFacts)
    pci: PciFacts = field(default_factory=PciFacts)
    driver: DriverFacts = field(default_factory=DriverFacts)
    toolkits: ToolkitFacts = field(default_factory=ToolkitFacts)
    conda: CondaFacts = field(default_factory=CondaFacts)
    docker: DockerFacts = field(default_factory=DockerFacts)
    python: TargetPython = field(default_factory=TargetPython)
    torch: TorchFacts = field(default_factory=TorchFacts)
    links: LinksFacts = field(default_factory=LinksFacts)
    gpu_state: GpuStateFacts = field(default_factory=GpuStateFacts)  # what runs on each GPU now
    fabric: FabricFacts = field(default_factory=FabricFacts)  # IB/RoCE, GPUDirect RDMA, NCCL variables
    collected_at: Optional[str] = None  # ISO 8601, UTC
    envdoctor_version: Optional[str] = None
    probe_seconds: dict[str, float] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()  # areas not inspected this run ("torch")
