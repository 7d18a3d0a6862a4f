"""The docker route: the driver (if none), Docker and the NVIDIA Container Toolkit where missing,
then ``docker run`` of the NGC PyTorch image :func:`~envdoctor.advise.image.choose_image` picks.

The toolkit install and docker configuration come from :mod:`envdoctor.commands`, as in the
docker rules, so each command is written once.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor import commands
from envdoctor.advise.choice import Choice
from envdoctor.advise.drivers import branch_driver, recommended_branch
from envdoctor.advise.image import choose_image
from envdoctor.advise.machine import Machine
from envdoctor.advise.plan import Image, Plan, Step, Way
from envdoctor.advise.routes import RouteDecision, nvidia_runtime
from envdoctor.advise.steps import CHECK_TORCH, driver_step, open_modules, ways
from envdoctor.parse import version
from envdoctor.table import Table

#: Options NVIDIA's PyTorch container notes recommend for ``docker run``.
DOCKER_RUN = "docker run {gpus} --rm -it --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 {image}"


def docker_plan(
    m: Machine, table: Table, choice: Choice, decision: RouteDecision, spec: SpecifierSet | None, with_nvcc: bool
) -> Plan:
    """The docker route's plan: the image for the driver (or the branch to install) and the GPUs."""
    warnings: list[str] = []
    steps: list[Step] = []
    if not m.nvidia:
        warnings.append("no NVIDIA GPU: the docker route runs NGC images on NVIDIA GPUs")
        cpu = f" ({choice.label})" if choice.ok and choice.torch else ""
        way = Way(
            "route",
            f"NGC images need an NVIDIA GPU: use --route system for the CPU wheels{cpu}",
            ("envdoctor recommend --route system",),
            choice.torch,
            choice.variant,
        )
        return Plan(
            "docker",
            "no-fit",
            choice,
            (),
            decision.reasons,
            decision.rejected,
            tuple(warnings),
            ways_out=(way,),
            sources=choice.sources,
        )
    driver = m.driver
    if not driver:
        branch = choice.driver_needed or recommended_branch(table, [g.cc for g in m.nvidia])
        driver = branch_driver(table, branch) if branch else None
    if choice.status == "no-fit" and choice.rejected and choice.rejected[0].what.startswith("driver "):
        warnings += list(choice.warnings)
        return Plan(
            "docker",
            "no-fit",
            choice,
            (),
            decision.reasons,
            decision.rejected,
            tuple(warnings),
            ways_out=ways(m, table, choice, None),
            sources=choice.sources,
        )
    image, w, rejected = choose_image(table, driver, m, spec) if driver else (None, [], [])
    if image is None:
        warnings.append(
            f"no NGC PyTorch image in envdoctor's table runs on driver {driver} with these GPUs"
            + (f" and --torch {spec}" if spec else "")
        )
        if rejected:
            warnings.append("closest tags: " + "; ".join(rejected[-3:]))
        return Plan(
            "docker",
            "no-fit",
            choice,
            (),
            decision.reasons,
            decision.rejected,
            tuple(warnings),
            ways_out=ways(m, table, choice, None),
            sources=choice.sources,
        )
    warnings += w
    s, w = driver_step(m, table, choice)
    steps += s
    warnings += w
    steps += _docker_setup(m)
    gpus = "--gpus all"
    d = m.facts.docker
    if "docker" in m.known and "nvidia" not in d.runtimes and any(x.startswith("nvidia.com/") for x in d.cdi_devices):
        gpus = "--device nvidia.com/gpu=all"
    steps.append(
        Step(
            f"Pull and run {image.image} (torch {image.torch}, CUDA {image.cuda})",
            (
                f"docker pull {image.image}",
                DOCKER_RUN.format(gpus=gpus, image=image.image),
            ),
            "NGC images are large (6-20 GB); --ipc=host and the ulimits are what NVIDIA's notes recommend",
        )
    )
    steps.append(
        Step(
            "Verify",
            (
                "envdoctor check",
                f"docker run {gpus} --rm {image.image} {CHECK_TORCH}",
                "# inside the container: pip install envdoctor && envdoctor check && envdoctor bench",
            ),
        )
    )
    if with_nvcc:
        warnings.append("--with-nvcc: NGC PyTorch images already contain the full CUDA toolkit with nvcc")
    return Plan(
        "docker",
        "ok",
        choice,
        tuple(steps),
        decision.reasons,
        decision.rejected,
        tuple(dict.fromkeys(warnings)),
        (),
        _upgrade(m, table, image, spec),
        image=image,
        python=None,
        sources=tuple(dict.fromkeys((image.source,) if image.source else ())),
        index_check="offline-table",
    )


def _docker_setup(m: Machine) -> list[Step]:
    """Docker itself (installed, running, open to this user) and the NVIDIA Container Toolkit."""
    steps = []
    d = m.facts.docker
    known = "docker" in m.known
    if known and not d.client:
        steps.append(
            Step(
                "Install Docker Engine",
                (
                    "# follow https://docs.docker.com/engine/install/ for this distribution, then:",
                    "sudo usermod -aG docker $USER",
                    "newgrp docker",
                ),
            )
        )
    elif known and d.daemon == "not_running":
        steps.append(Step("Start the docker daemon", ("sudo systemctl enable --now docker",)))
    elif known and d.daemon == "permission_denied":
        steps.append(
            Step("Let this user talk to the docker daemon", ("sudo usermod -aG docker $USER", "newgrp docker"))
        )
    if not known or not nvidia_runtime(m):
        install = commands.install_container_toolkit(m.facts.system)
        configure = commands.configure_docker(bool(d.rootless))
        cmds = configure if (known and d.nvidia_ctk) else install + configure
        title = (
            "Configure docker for the NVIDIA Container Toolkit"
            if (known and d.nvidia_ctk)
            else "Install the NVIDIA Container Toolkit and configure docker for it"
        )
        note = (
            None if known else "not inspected (what-if plan): skip this step if `docker info` lists the nvidia runtime"
        )
        steps.append(Step(title, cmds, note))
    return steps


def _upgrade(m: Machine, table: Table, image: Image, spec: SpecifierSet | None) -> tuple[Way, ...]:
    """A driver upgrade that would open a newer NGC image."""
    branch = recommended_branch(table, [g.cc for g in m.nvidia])
    have = version(m.driver)
    if not branch or have is None or int(branch) <= have.release[0]:
        return ()
    better, _, _ = choose_image(table, branch_driver(table, branch), m, spec)
    if better is None or Version(better.tag) <= Version(image.tag):
        return ()
    return (
        Way(
            "upgrade-driver",
            f"upgrade the driver to branch {branch}: then {better.image} (torch {better.torch}, CUDA {better.cuda})",
            commands.driver_install(m.facts.system, branch, open_modules(m, table), table),
            branch=branch,
        ),
    )
