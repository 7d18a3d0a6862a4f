"""probes/toolkit.py: toolkits laid out under a fake root, their nvcc replaced by fakes that replay
recorded ``nvcc --version`` / ``nvcc -dryrun`` output."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Optional

import pytest

from envdoctor.probes.context import Context
from envdoctor.probes.toolkit import probe, resolve
from tests.fakes import FakeBin, recorded

DRYRUN = "-dryrun -E -x cu /dev/null"
NVCC = {
    "13.0": ("cpu-nvcc13-docker-client", "nvcc.txt"),
    "11.8": ("public-nvcc", "nvcc-11.8.txt"),
    "12.1": ("public-nvcc", "nvcc-12.1.txt"),
    "12.8": ("public-nvcc", "nvcc-12.8.txt"),
}


class Machine:
    """A file root with CUDA toolkits in it, and the fakes to run their nvcc."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "root"
        self.root.mkdir()
        self.bin = FakeBin(tmp_path)

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def program(self, absolute: str, **fake) -> None:
        dest = self.path(absolute)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(self.bin.add("prog", **fake)), dest)

    def toolkit(
        self, root: str, release: Optional[str] = None, headers: bool = True, version_json: Optional[str] = None, **fake
    ) -> None:
        """A toolkit folder: bin/nvcc (+ nvcc.profile) printing the recorded --version of ``release``."""
        if release or fake:
            if release:
                fake.setdefault("by_args", {"--version": (recorded(*NVCC[release]), "", 0)})
                fake.setdefault("rc", 99)
            self.program(f"{root}/bin/nvcc", **fake)
            self.path(f"{root}/bin/nvcc.profile").write_text("TOP = $(_HERE_)/..\n")
        if headers:
            self.path(f"{root}/targets/x86_64-linux/include").mkdir(parents=True, exist_ok=True)
            self.path(f"{root}/targets/x86_64-linux/include/cuda_runtime.h").write_text("")
            self.path(f"{root}/include").mkdir(parents=True, exist_ok=True)
            self.path(f"{root}/include/cuda_runtime.h").write_text("")
        if version_json is not None:
            self.path(root).mkdir(parents=True, exist_ok=True)
            self.path(f"{root}/version.json").write_text(version_json)

    def link(self, absolute: str, target: str) -> None:
        self.path(absolute).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, self.path(absolute))

    def ctx(self, timeout: float = 5, **env: str) -> Context:
        """The fakes are shell scripts: /usr/bin and /bin stay on PATH for their cat and sleep."""
        env["PATH"] = env.get("PATH", "") + ":/usr/bin:/bin"
        return Context(root=self.root, env=env, timeout=timeout)


def test_this_machine_wrapper_nvcc_outside_a_toolkit(tmp_path):
    """cpu-nvcc13-docker-client: /usr/local/bin/nvcc is a script that execs the 13.0 toolkit's nvcc."""
    m = Machine(tmp_path)
    m.toolkit("/usr/local/cuda-13.0", "13.0")
    m.link("/usr/local/cuda", "/usr/local/cuda-13.0")
    m.program(
        "/usr/local/bin/nvcc", by_args={DRYRUN: ("", recorded("cpu-nvcc13-docker-client", "nvcc-dryrun.txt"), 0)}, rc=99
    )
    facts = probe(m.ctx(PATH="/usr/local/sbin:/usr/local/bin:/usr/bin:/bin"))
    assert len(facts.toolkits) == 1
    tk = facts.toolkits[0]
    assert (tk.root, tk.release, tk.version) == ("/usr/local/cuda-13.0", "13.0", "13.0.88")
    assert tk.nvcc == "/usr/local/cuda-13.0/bin/nvcc"
    assert set(tk.found_via) == {"PATH", "/usr/local/cuda*"}
    assert set(tk.aliases) == {"/usr/local/bin/nvcc", "/usr/local/cuda"}
    assert facts.path_nvccs == ("/usr/local/bin/nvcc",) and facts.nvcc_on_path == "/usr/local/bin/nvcc"
    # torch would take /usr/local (the folder above /usr/local/bin): nvcc there, but no CUDA headers
    assert (facts.extension_root, facts.extension_rule) == ("/usr/local", "nvcc on PATH")
    assert facts.extension_status == "no_headers"
    assert facts.extension_toolkit == "/usr/local/cuda-13.0"
    assert facts.error is None and tk.error is None


def test_several_toolkits_cuda_home_and_path_disagree(tmp_path):
    m = Machine(tmp_path)
    m.toolkit("/usr/local/cuda-12.8", "12.8")
    m.toolkit("/usr/local/cuda-12.1", "12.1")
    m.link("/usr/local/cuda", "/usr/local/cuda-12.8")  # absolute link: followed inside the root only
    facts = probe(m.ctx(PATH="/usr/local/cuda-12.1/bin:/usr/bin:/bin", CUDA_HOME="/usr/local/cuda"))
    roots = {tk.root: tk for tk in facts.toolkits}
    assert set(roots) == {"/usr/local/cuda-12.1", "/usr/local/cuda-12.8"}
    assert roots["/usr/local/cuda-12.8"].aliases == ("/usr/local/cuda",)
    assert set(roots["/usr/local/cuda-12.8"].found_via) == {"CUDA_HOME", "/usr/local/cuda*"}
    assert set(roots["/usr/local/cuda-12.1"].found_via) == {"PATH", "/usr/local/cuda*"}
    assert (facts.extension_root, facts.extension_rule, facts.extension_status) == (
        "/usr/local/cuda",
        "CUDA_HOME",
        "ok",
    )
    assert facts.extension_toolkit == "/usr/local/cuda-12.8"
    assert facts.nvcc_on_path == "/usr/local/cuda-12.1/bin/nvcc" and facts.cuda_home == "/usr/local/cuda"


def test_every_nvcc_on_path_is_found_not_only_the_first(tmp_path):
    m = Machine(tmp_path)
    m.toolkit("/opt/cuda-11.8", "11.8")
    m.toolkit("/usr/local/cuda-12.8", "12.8")
    facts = probe(m.ctx(PATH="/usr/local/cuda-12.8/bin:/opt/cuda-11.8/bin:/usr/local/cuda-12.8/bin/"))
    assert facts.path_nvccs == ("/usr/local/cuda-12.8/bin/nvcc", "/opt/cuda-11.8/bin/nvcc")
    assert {tk.release for tk in facts.toolkits} == {"11.8", "12.8"}
    assert {tk.root: tk.found_via for tk in facts.toolkits}["/opt/cuda-11.8"] == ("PATH", "/opt/cuda*")
    assert facts.extension_root == "/usr/local/cuda-12.8" and facts.extension_toolkit == "/usr/local/cuda-12.8"


def test_conda_env_nvcc(tmp_path):
    m = Machine(tmp_path)
    prefix = "/home/ada/miniforge3/envs/dl"
    m.toolkit(prefix, "12.8", headers=False)
    m.path(f"{prefix}/targets/x86_64-linux/include").mkdir(parents=True)
    m.path(f"{prefix}/targets/x86_64-linux/include/cuda_runtime.h").write_text("")
    facts = probe(m.ctx(PATH=f"{prefix}/bin:/usr/bin:/bin", CONDA_PREFIX=prefix))
    (tk,) = facts.toolkits
    assert tk.root == prefix and set(tk.found_via) == {"PATH", "conda"} and tk.release == "12.8"
    assert (facts.extension_root, facts.extension_status) == (prefix, "ok")


def test_version_files_when_there_is_no_nvcc(tmp_path):
    m = Machine(tmp_path)
    m.toolkit("/usr/local/cuda-11.8", version_json=recorded("public-nvcc", "version-json-11.8.txt"))
    m.path("/usr/local/cuda-10.2").mkdir(parents=True)
    m.path("/usr/local/cuda-10.2/version.txt").write_text(recorded("public-nvcc", "version-txt-10.2.txt"))
    facts = probe(m.ctx())
    roots = {tk.root: tk for tk in facts.toolkits}
    assert (roots["/usr/local/cuda-11.8"].version, roots["/usr/local/cuda-11.8"].release) == ("11.8.89", "11.8")
    assert roots["/usr/local/cuda-11.8"].version_source == "/usr/local/cuda-11.8/version.json"
    assert roots["/usr/local/cuda-11.8"].nvcc is None
    assert (roots["/usr/local/cuda-10.2"].version, roots["/usr/local/cuda-10.2"].version_source) == (
        "10.2.89",
        "/usr/local/cuda-10.2/version.txt",
    )


def test_runtime_only_usr_local_cuda(tmp_path):
    """A CUDA runtime image: /usr/local/cuda with libraries, no nvcc, no version file."""
    m = Machine(tmp_path)
    m.path("/usr/local/cuda-12.8/lib64").mkdir(parents=True)
    m.link("/usr/local/cuda", "cuda-12.8")
    facts = probe(m.ctx())
    assert facts.toolkits == ()
    assert (facts.extension_root, facts.extension_rule, facts.extension_status) == (
        "/usr/local/cuda",
        "/usr/local/cuda",
        "no_nvcc",
    )


def test_nothing_at_all(tmp_path):
    facts = probe(Machine(tmp_path).ctx())
    assert facts.toolkits == () and facts.extension_root is None and facts.extension_status is None
    assert facts.error is None


@pytest.mark.parametrize(
    "env, rule, status",
    [
        ({"CUDA_HOME": "/usr/local/cuda-12.4"}, "CUDA_HOME", "missing"),
        ({"CUDA_PATH": "/opt/nowhere"}, "CUDA_PATH", "missing"),
        ({"CUDA_HOME": ""}, "CUDA_HOME", None),  # "" or None -> None: torch looks for nvcc
        ({"CUDA_PATH": ""}, "CUDA_PATH", "empty"),  # None or "" -> "": torch gives up
        ({"CUDA_HOME": "", "CUDA_PATH": "/usr/local/cuda-12.8"}, "CUDA_PATH", "ok"),
    ],
)
def test_cuda_home_the_way_torch_reads_it(tmp_path, env, rule, status):
    m = Machine(tmp_path)
    m.toolkit("/usr/local/cuda-12.8", "12.8")
    facts = probe(m.ctx(**env))
    if status is None:
        # CUDA_HOME="": torch looks for nvcc on PATH, then /usr/local/cuda; this machine has neither
        # (only /usr/local/cuda-12.8), so nothing is chosen
        assert (facts.extension_rule, facts.extension_root, facts.extension_status) == (None, None, None)
        return
    assert (facts.extension_rule, facts.extension_status) == (rule, status)


def test_cuda_home_without_nvcc(tmp_path):
    m = Machine(tmp_path)
    m.path("/opt/cuda-runtime/lib64").mkdir(parents=True)
    facts = probe(m.ctx(CUDA_HOME="/opt/cuda-runtime"))
    assert (facts.extension_root, facts.extension_status) == ("/opt/cuda-runtime", "no_nvcc")


def test_hung_nvcc_is_an_error_and_the_rest_is_still_reported(tmp_path):
    m = Machine(tmp_path)
    m.toolkit("/usr/local/cuda-12.1", hang=True, version_json='{"cuda": {"name": "CUDA SDK", "version": "12.1.1"}}')
    m.toolkit("/usr/local/cuda-12.8", "12.8")
    started = time.monotonic()
    facts = probe(m.ctx(timeout=1))
    assert time.monotonic() - started < 4
    roots = {tk.root: tk for tk in facts.toolkits}
    hung = roots["/usr/local/cuda-12.1"]
    assert hung.error.kind == "timeout" and "did not answer in 1 s" in hung.error.message
    assert "/usr/local/cuda-12.1/bin/nvcc" in hung.error.message
    assert (hung.version, hung.version_source) == ("12.1.1", "/usr/local/cuda-12.1/version.json")
    assert roots["/usr/local/cuda-12.8"].release == "12.8" and roots["/usr/local/cuda-12.8"].error is None


def test_hung_wrapper_is_not_run_twice(tmp_path):
    m = Machine(tmp_path)
    m.program("/usr/local/bin/nvcc", hang=True)
    started = time.monotonic()
    facts = probe(m.ctx(timeout=1, PATH="/usr/local/bin"))
    assert time.monotonic() - started < 2.5
    (tk,) = facts.toolkits
    assert tk.root == "/usr/local" and tk.error.kind == "timeout" and tk.version is None


def test_nvcc_with_garbage_output(tmp_path):
    m = Machine(tmp_path)
    m.toolkit("/usr/local/cuda-12.8", stdout="\x7fELF\x02\x01 not text")
    (tk,) = probe(m.ctx()).toolkits
    assert tk.error.kind == "unparseable" and tk.version is None


def test_nvcc_exits_non_zero_with_its_error(tmp_path):
    m = Machine(tmp_path)
    m.toolkit(
        "/usr/local/cuda-12.8",
        stderr="/usr/local/cuda-12.8/bin/nvcc: error while loading shared libraries: "
        "libnvvm.so.4: cannot open shared object file: No such file or directory",
        rc=127,
    )
    (tk,) = probe(m.ctx()).toolkits
    assert tk.error.kind == "exit_status" and "libnvvm.so.4" in tk.error.message


def test_truncated_version_json_and_a_broken_wrapper(tmp_path):
    m = Machine(tmp_path)
    m.toolkit("/usr/local/cuda-12.6", version_json='{"cuda" : {"name" : "CUDA SDK", "vers')
    m.program("/usr/bin/nvcc", stdout="", rc=1)  # a wrapper whose -dryrun prints nothing
    facts = probe(m.ctx(PATH="/usr/bin"))
    roots = {tk.root: tk for tk in facts.toolkits}
    assert roots["/usr/local/cuda-12.6"].error.kind == "unparseable"
    assert roots["/usr"].error is not None and roots["/usr"].aliases == ("/usr/bin/nvcc",)


def test_unreadable_version_file(tmp_path):
    m = Machine(tmp_path)
    m.path("/usr/local/cuda-12.6/version.json").mkdir(parents=True)  # a folder where a file should be
    m.path("/usr/local/cuda-12.6/version.txt").write_text("CUDA Version 12.6.3")
    (tk,) = probe(m.ctx()).toolkits
    assert tk.error.kind == "unavailable" and tk.version == "12.6.3"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_version_file_without_permission(tmp_path):
    m = Machine(tmp_path)
    m.toolkit("/usr/local/cuda-12.6", version_json=recorded("public-nvcc", "version-json-12.6.txt"))
    m.path("/usr/local/cuda-12.6/version.json").chmod(0)
    (tk,) = probe(m.ctx()).toolkits
    assert tk.error.kind == "permission" and tk.version is None


def test_resolve_stays_inside_the_root(tmp_path):
    m = Machine(tmp_path)
    m.path("/usr/local/cuda-12.8/bin").mkdir(parents=True)
    m.link("/usr/local/cuda", "/usr/local/cuda-12.8")
    m.link("/etc/alternatives/cuda", "../../usr/local/cuda")
    m.link("/loop", "/loop")
    ctx = m.ctx()
    assert resolve(ctx, "/usr/local/cuda/bin") == "/usr/local/cuda-12.8/bin"
    assert resolve(ctx, "/etc/alternatives/cuda") == "/usr/local/cuda-12.8"
    assert resolve(ctx, "/usr/local/./cuda/../cuda-12.8") == "/usr/local/cuda-12.8"
    assert resolve(ctx, "/loop") == "/loop"
