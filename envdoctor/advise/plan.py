"""The plan: exact commands, in order, for one route, with the reasons and the ways out. Frozen data.

:func:`envdoctor.advise.recommend.recommend` makes one; :mod:`envdoctor.render.plan` prints it (text,
the ``envdoctor.plan/1`` JSON document, a shell script). ``Step("Verify", ("envdoctor check",
"envdoctor bench"))`` is the last step of every plan that installs something.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from envdoctor.advise.choice import Choice, Status, WayKind
from envdoctor.advise.current import Change, Current
from envdoctor.advise.machine import Machine
from envdoctor.advise.routes import Route, RouteRejection

SCHEMA = "envdoctor.plan/1"

#: How the driver runs an NGC image's CUDA ("forward-compat": through the image's cuda-compat).
ImageCompatibility = Literal["direct", "minor-version", "forward-compat"]


@dataclass(frozen=True)
class Step:
    """One step of a plan: a title, commands in order (``#`` lines are comments), a note."""

    title: str
    commands: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class Way:
    """A way out with its commands (``kind`` as in :class:`~envdoctor.advise.choice.WayOut`)."""

    kind: WayKind
    text: str
    commands: tuple[str, ...] = ()
    torch: str | None = None
    variant: str | None = None
    branch: str | None = None


@dataclass(frozen=True)
class Image:
    """The NGC image for the docker route."""

    image: str  # "nvcr.io/nvidia/pytorch:25.12-py3"
    tag: str
    torch: str  # "2.10.0a0+b4e4ee81d3"
    cuda: str  # "13.1.0"
    forward_compat: bool = False
    unconfirmed: bool = False
    source: str = ""
    compatibility: ImageCompatibility = "direct"


@dataclass(frozen=True)
class Plan:
    route: Route
    status: Status
    choice: Choice
    steps: tuple[Step, ...] = ()
    reasons: tuple[str, ...] = ()  # why this route
    rejected: tuple[RouteRejection, ...] = ()
    warnings: tuple[str, ...] = ()
    alternatives: tuple[str, ...] = ()  # other spellings of a step (uv)
    ways_out: tuple[Way, ...] = ()
    image: Image | None = None
    index_url: str | None = None
    python: str | None = None  # the interpreter (or env Python) the plan installs into
    conda: str | None = None  # the conda create command's channel story
    sources: tuple[str, ...] = ()
    index_check: str = "offline-table"
    machine: Machine | None = None
    installed: bool = False  # the chosen build is already in the target Python: nothing to install
    index_env: str | None = None  # commands read the index base from this variable (it holds credentials)
    current: Current | None = None  # the torch the target Python has now, and whether it works
    changes: tuple[Change, ...] = ()  # what the steps change in that Python (torch, torchvision, ...)
    optional: bool = False  # the current build works (or should): the steps are an upgrade

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "cpu", "macos")

    @property
    def commands(self) -> tuple[str, ...]:
        """Every command of every step, in order, without comment lines."""
        return tuple(c for s in self.steps for c in s.commands if not c.lstrip().startswith("#"))

    @property
    def torch(self) -> str | None:
        if self.route == "docker":
            return self.image.torch if self.image else None
        return self.choice.torch

    @property
    def variant(self) -> str | None:
        return self.choice.variant if self.route == "system" else None

    @property
    def cuda(self) -> str | None:
        if self.route == "docker":
            return self.image.cuda if self.image else None
        return self.choice.cuda
