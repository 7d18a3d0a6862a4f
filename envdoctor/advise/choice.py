"""What the advisor says about torch: the :class:`Choice`, the candidates it turned down, the ways out.

``Choice("ok", torch="2.13.0", variant="cu130", cuda="13.0", compatibility="direct").label`` is
``"torch 2.13.0+cu130"``. Frozen data only; :mod:`envdoctor.advise.choose` makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: "ok" (CUDA wheels), "cpu" (no NVIDIA GPU: CPU wheels), "no-fit" (GPUs, but no wheel works; see
#: the ways out), "amd" (outside what envdoctor advises), "macos" (PyPI's default wheel, with MPS).
Status = Literal["ok", "cpu", "no-fit", "amd", "macos"]

#: How the driver runs the chosen CUDA: "none" for CPU wheels, macOS, AMD, or when nothing fits.
Compatibility = Literal["direct", "minor-version", "none"]

#: The kinds of :class:`WayOut` (the plan document's ``ways_out[].kind``, docs/recommend.md).
WayKind = Literal[
    "upgrade-driver",
    "install-driver",
    "works-today",
    "direct",
    "confirmed-kernels",
    "newer-python",
    "older-python",
    "newer-glibc",
    "without-nvcc",
    "limits",
    "torch-spec",
    "route",
    "cpu",
]


@dataclass(frozen=True)
class Rejected:
    """A candidate that was looked at and turned down: ``Rejected("torch 2.13.0 cu130", "...")``."""

    what: str
    reason: str


@dataclass(frozen=True)
class WayOut:
    """Another way to a working torch when the choice is not good (or not there).

    kind: "upgrade-driver" (install ``branch``, then ``torch``+``variant``), "install-driver" (the
    last branch that still runs a retired GPU), "works-today" (the newest torch that works with
    today's driver, outside the request), "direct" (a torch the driver runs without minor-version
    compatibility), "confirmed-kernels" (the newest torch whose kernel list for these GPUs the
    table confirms, when the choice's is inferred), "newer-python" / "older-python" (what another
    Python would allow, when the Python is what holds torch back), "newer-glibc" (the machine's glibc
    holds torch back), "without-nvcc" (the CUDA toolkits NVIDIA's repository has for the distribution
    hold torch back, with ``--with-nvcc``), "limits" (several of these only together), "torch-spec"
    (nothing in the table matches ``--torch``), "route" (another route; the docker route without a
    GPU), "cpu".
    """

    kind: WayKind
    text: str
    torch: str | None = None
    variant: str | None = None
    branch: str | None = None


@dataclass(frozen=True)
class Choice:
    """The torch and wheel variant to install, or why there is none (``status``, see :data:`Status`)."""

    status: Status
    torch: str | None = None  # "2.13.0": the newest patch within the specifier
    variant: str | None = None  # "cu130", "cpu", "rocm7.2", "pypi" (macOS)
    cuda: str | None = None  # "13.0"
    index_url: str | None = None  # the table's index URL of the variant
    compatibility: Compatibility = "none"
    torchvision: str | None = None
    torchaudio: str | None = None
    python: str | None = None  # the Python the choice was made for (None: any)
    driver_needed: str | None = None  # a branch to install first ("580"): no driver yet
    driver_assumed: str | None = None  # the driver the choice was made for, when none is installed
    kernels: tuple[tuple[str, str], ...] = ()  # (GPU cc, "sm_86 cubin") per GPU
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    rejected: tuple[Rejected, ...] = ()
    ways_out: tuple[WayOut, ...] = ()
    sources: tuple[str, ...] = ()
    index_check: str = "offline-table"  # "live", "offline-table", "failed: <why>"
    release: str | None = field(default=None, compare=False)  # "2.13.0": the table row used
    unconfirmed: bool = False  # the chosen release or variant is unconfirmed in the table
    kernels_inferred: bool = False  # the kernel check used an arch list the table infers
    variant_asked: str | None = None  # the wheel variant --torch named ("2.7.1+cu118" -> "cu118")
    variant_changed: str | None = None  # why the asked one was not chosen (None: it was, or none asked)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "cpu", "macos")

    @property
    def label(self) -> str:
        """``"torch 2.13.0+cu130"``; ``"no torch"`` when there is none."""
        if not self.torch:
            return "no torch"
        return f"torch {self.torch}" + (f"+{self.variant}" if self.variant and self.variant != "pypi" else "")
