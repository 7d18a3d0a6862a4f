"""Probes that do not wait on each other: shown by order, not by timing. Each fake blocks until
the other side has started; were they run one after the other, the first would wait in vain
until its timeout and the assertion on its answer would fail."""

import time
from pathlib import Path

from envdoctor.probes import collect, driver
from envdoctor.probes.context import Context
from tests.fakes import FakeBin, recorded
from tests.machines import H200, SMI_QUERY_ARGS, FakeNvml, h200

WAIT = 20.0  # how long a fake waits for the other side; the probes' own timeout is shorter


def _wait_for(path: Path) -> bool:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.01)
    return False


class NvmlThatWaitsForSmi(FakeNvml):
    """NVML that answers only once nvidia-smi has started."""

    def __init__(self, marker: Path) -> None:
        super().__init__()
        self.marker = marker

    def nvmlInit(self) -> None:
        _wait_for(self.marker)


def test_nvidia_smi_runs_while_nvml_is_read(tmp_path):
    marker = tmp_path / "smi-started"
    ctx = h200(tmp_path, nvml=NvmlThatWaitsForSmi(marker))
    bin = FakeBin(tmp_path / "b")
    query = bin._store(recorded(H200, "nvidia-smi-query.txt"))
    bin.add_script("nvidia-smi", f'touch {marker}\n[ "$*" = "{SMI_QUERY_ARGS}" ] && cat {query}\nexit 0')
    d = driver.probe(Context(root=ctx.root, env=bin.env(), timeout=3.0, nvml=ctx.nvml))
    assert d.nvml_error is None and d.sources["gpus"] == "nvml"
    assert d.smi_error is None and len(d.smi_gpus) == 1


def test_probes_run_at_the_same_time(tmp_path):
    # the conda probe's `conda info` waits for the docker probe's `docker version`, and the reverse
    ctx = h200(tmp_path)
    bin = FakeBin(tmp_path / "b")
    loops = int(WAIT * 10)
    for me, other in (("conda", "docker"), ("docker", "conda")):
        bin.add_script(
            me,
            f"touch {tmp_path}/{me}-up\n"
            f"i=0; while [ ! -e {tmp_path}/{other}-up ] && [ $i -lt {loops} ]; do sleep 0.1; i=$((i+1)); done\n"
            f"[ -e {tmp_path}/{other}-up ] && echo met >> {tmp_path}/{me}-met\nexit 1",
        )
    collect(Context(root=ctx.root, env=bin.env(), timeout=3.0, nvml=ctx.nvml), skip=("torch", "toolkits"))
    assert (tmp_path / "conda-met").read_text() == "met\n"
    assert (tmp_path / "docker-met").read_text().startswith("met\n")


def test_the_target_pythons_child_runs_before_the_probes_are_gathered(tmp_path):
    # the fake interpreter answers only once the test, after start() returned, lets it; were the
    # child started by facts() (or after the other probes), it would wait in vain and time out
    from envdoctor.probes import start

    ctx = h200(tmp_path)
    bin = FakeBin(tmp_path / "b")
    loops = int(WAIT * 10)
    bin.add_script(
        "python3",
        f"touch {tmp_path}/child-up\n"
        f"i=0; while [ ! -e {tmp_path}/go ] && [ $i -lt {loops} ]; do sleep 0.1; i=$((i+1)); done\n"
        "cat >/dev/null; echo 'not the protocol'; exit 0",
    )
    probing = start(
        Context(root=ctx.root, env=bin.env(), timeout=WAIT, nvml=ctx.nvml),
        skip=("torch", "conda", "docker", "toolkits"),
    )
    assert _wait_for(tmp_path / "child-up")
    (tmp_path / "go").touch()
    facts = probing.facts()
    assert facts.python.executable == str(bin.dir / "python3")
    assert facts.python.error is not None and facts.python.error.kind == "unparseable"  # it answered
    assert facts.driver.gpus[0].name == "NVIDIA H200"
