"""``envdoctor recommend`` end to end through Click: --from reports, what-if flags, --script, JSON.

Tests never touch the internet: ``--offline``, or a local index server on 127.0.0.1.
"""

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.version import Version

from envdoctor.cli import cli
from tests.indexserver import IndexServer
from tests.machines import cpu_box, h200

WHATIF_5090 = ["--gpu", "RTX 5090", "--driver", "570.133.20", "--os", "ubuntu:24.04", "--python-version", "3.12"]
CONTRACT = {
    "schema",
    "route",
    "torch",
    "variant",
    "index_url",
    "image",
    "commands",
    "warnings",
    "rejected",
    "compatibility",
    "sources",
    "index_check",
}


def run(*args, env=None):
    return CliRunner().invoke(cli, ["recommend", *args], env=env, catch_exceptions=False)


@pytest.fixture
def no_probe(monkeypatch):
    """Fail the test if anything reads this machine."""
    import envdoctor.inspect as inspect  # imported first, so it keeps the real collect for `check`
    import envdoctor.probes as probes

    def boom(*a, **k):
        raise AssertionError("recommend probed the machine")

    assert inspect.collect is probes.collect
    monkeypatch.setattr(probes, "collect", boom)


@pytest.fixture
def h200_report(tmp_path):
    """A report saved by `envdoctor check --json` on the recorded H200 (driver 580.159.04, Python 3.11)."""
    ctx = h200(tmp_path)
    r = CliRunner().invoke(cli, ["check", "--root", str(ctx.root), "--skip", "torch", "--json"], env=dict(ctx.env))
    path = tmp_path / "h200-report.json"
    path.write_text(r.output)
    return path


def test_what_if_alone_plans_without_probing(no_probe):
    r = run("--offline", *WHATIF_5090)
    assert r.exit_code == 0, r.output
    assert "system route: torch 2.11.0+cu128 (CUDA 12.8, the driver runs it directly)" in r.output
    assert "Not conda: conda was not inspected" in r.output and "Not docker:" in r.output


def test_json_contract(no_probe):
    r = run("--offline", "--json", *WHATIF_5090)
    doc = json.loads(r.output)
    assert CONTRACT <= set(doc)
    assert doc["schema"] == "envdoctor.plan/1" and doc["route"] == "system"
    assert (doc["torch"], doc["variant"], doc["compatibility"]) == ("2.11.0", "cu128", "direct")
    assert doc["index_url"] == "https://download.pytorch.org/whl/cu128" and doc["image"] is None
    assert doc["index_check"] == "offline-table"
    assert all(isinstance(c, str) and not c.startswith("#") for c in doc["commands"])
    assert doc["commands"][-2:] == [
        "envdoctor check --python ~/venvs/torch/bin/python",
        "envdoctor bench --python ~/venvs/torch/bin/python",
    ]
    assert {r["route"] for r in doc["rejected"]} == {"conda", "docker"}
    assert all(s.startswith(("http", "pytorch/", "llvm/")) for s in doc["sources"])


def test_from_report_plans_for_the_reported_machine(h200_report, no_probe):
    r = run("--offline", "--json", "--from", str(h200_report))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert (doc["torch"], doc["variant"]) == ("2.13.0", "cu130")
    assert doc["machine"]["driver"] == "580.159.04" and doc["machine"]["gpus"][0]["cc"] == "9.0"
    assert doc["machine"]["origin"].startswith("report ")


def test_from_report_with_a_what_if_driver(h200_report, no_probe):
    # The same H200 on R535: CUDA 12.x wheels only (13.x needs R580); 2.13's 12.x variant is cu126.
    r = run("--offline", "--json", "--from", str(h200_report), "--driver", "535.104.05")
    doc = json.loads(r.output)
    assert (doc["torch"], doc["variant"], doc["compatibility"]) == ("2.13.0", "cu126", "minor-version")


def test_docker_route_from_report(h200_report, no_probe):
    doc = json.loads(run("--offline", "--json", "--from", str(h200_report), "--route", "docker").output)
    assert doc["route"] == "docker" and doc["image"] == "nvcr.io/nvidia/pytorch:25.12-py3"
    assert doc["variant"] is None and doc["index_url"] is None


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "is not valid JSON"),
        ('{"x": 1}', "is not an envdoctor report"),
        ('{"schema": "envdoctor.report/9"}', "this envdoctor reads"),
    ],
)
def test_bad_report_is_one_line_and_exit_2(tmp_path, content, message, no_probe):
    path = tmp_path / "r.json"
    path.write_text(content)
    r = CliRunner().invoke(cli, ["recommend", "--from", str(path)])
    assert r.exit_code == 2
    assert message in r.output and len(r.output.strip().splitlines()) == 1


def test_missing_report_is_exit_2(tmp_path):
    r = run("--from", str(tmp_path / "nope.json"))
    assert r.exit_code == 2 and "cannot read it" in r.output


@pytest.mark.parametrize(
    "args",
    [
        ["--gpu", "RTX 9999"],
        ["--torch", "banana"],
        ["--os", "ubuntu"],
        ["--driver", "12.8"],
        ["--python-version", "py3"],
    ],
)
def test_bad_what_if_values_are_usage_errors(args, no_probe):
    r = CliRunner().invoke(cli, ["recommend", "--offline", *WHATIF_5090, *args])
    assert r.exit_code == 2, r.output


def test_nothing_fits_exits_1_with_ways_out(no_probe):
    r = run(
        "--offline", "--gpu", "RTX 3090", "--driver", "450.51.06", "--os", "ubuntu:20.04", "--python-version", "3.10"
    )
    assert r.exit_code == 1
    assert "nothing fits" in r.output and "Ways out:" in r.output
    assert "upgrade the driver to branch 580" in r.output


def test_os_what_if_uses_that_distributions_glibc(no_probe):
    # Ubuntu 18.04 ships glibc 2.27; torch 2.7 and newer are manylinux_2_28 wheels (glibc >= 2.28),
    # so without --glibc the plan must stop below 2.7 (2.6.0's cu124 wheels were built on CentOS 7).
    r = run(
        "--offline",
        "--json",
        "--gpu",
        "RTX 3090",
        "--driver",
        "550.54.15",
        "--os",
        "ubuntu:18.04",
        "--python-version",
        "3.10",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["machine"]["glibc"] == "2.27"
    assert Version(doc["torch"]) < Version("2.7")
    assert (doc["torch"], doc["variant"]) == ("2.6.0", "cu124")
    assert any(
        b["what"].startswith("torch 2.7.1 ") and "need glibc 2.28" in b["reason"] for b in doc["rejected_builds"]
    )


def test_amd_exits_1_and_names_rocm(no_probe):
    r = run("--offline", "--json", "--gpu", "MI300X", "--os", "ubuntu:22.04", "--python-version", "3.12")
    assert r.exit_code == 1
    assert json.loads(r.output)["index_url"] == "https://download.pytorch.org/whl/rocm7.2"


def test_script_is_written_once_and_overwritten_only_with_force(tmp_path, no_probe):
    script = tmp_path / "install.sh"
    args = [
        "--offline",
        "--gpu",
        "RTX 4090",
        "--driver",
        "none",
        "--os",
        "ubuntu:24.04",
        "--python-version",
        "3.12",
        "--script",
        str(script),
    ]
    r = run(*args)
    assert r.exit_code == 0
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash") and "\nset -e\n" in text
    assert "sudo apt-get install -y nvidia-driver-580-open" in text and "--after-reboot" in text
    assert os.stat(script).st_mode & stat.S_IXUSR
    again = CliRunner().invoke(cli, ["recommend", *args])
    assert again.exit_code == 2 and "--force" in again.output
    assert run(*args, "--force").exit_code == 0


def test_torch_spec_and_route_through_the_cli(no_probe):
    doc = json.loads(
        run(
            "--offline",
            "--json",
            "--route",
            "conda",
            "--torch",
            "2.7",
            "--gpu",
            "RTX 4090",
            "--driver",
            "570.133.20",
            "--os",
            "ubuntu:24.04",
        ).output
    )
    assert doc["route"] == "conda" and doc["torch"] == "2.7.1"
    assert doc["commands"][0].startswith("conda create -y -n torch -c conda-forge ")
    assert " -c pytorch " not in f" {doc['commands'][0]} "


def test_probing_a_gpu_less_machine(tmp_path):
    ctx = cpu_box(tmp_path)
    r = CliRunner().invoke(cli, ["recommend", "--offline", "--json", "--root", str(ctx.root)], env=dict(ctx.env))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["variant"] == "cpu" and doc["status"] == "cpu"


def test_live_index_check_against_a_local_index(tmp_path, no_probe):
    # The fixture index holds cu130 wheels for 2.9.0-2.11.0 only: 2.13 and 2.12 are not there.
    with IndexServer() as server:
        base = server.url()
        r = CliRunner().invoke(
            cli,
            [
                "recommend",
                "--json",
                "--index-url",
                base,
                "--gpu",
                "H100",
                "--driver",
                "580.95.05",
                "--os",
                "ubuntu:24.04",
                "--python-version",
                "3.12",
                "--glibc",
                "2.39",
            ],
            env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")},
        )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert (doc["torch"], doc["variant"], doc["index_check"]) == ("2.11.0", "cu130", "live")
    assert doc["index_url"] == f"{base}/cu130"
    assert any(b["what"] == "torch 2.13.0 cu130" for b in doc["rejected_builds"])


def test_unreachable_index_falls_back_to_the_table(tmp_path, no_probe):
    with IndexServer() as server:
        url = server.url("down")
        r = CliRunner().invoke(
            cli,
            [
                "recommend",
                "--json",
                "--index-url",
                url,
                "--timeout",
                "2",
                *WHATIF_5090,
            ],
            env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")},
        )
    doc = json.loads(r.output)
    assert doc["torch"] == "2.11.0" and doc["index_check"].startswith("failed: ")


# --- user-acceptance review ---------------------------------------------------------------------

NO_GPU = ["--no-gpu", "--os", "ubuntu:24.04", "--python-version", "3.12"]


@pytest.mark.parametrize(
    "args, said",
    [
        (["--torch", ">=9"], "no torch release matches '>=9'; the newest envdoctor knows is 2.13.0"),
        (["--torch", "2.1.5"], "no torch 2.1.5 in envdoctor's table: torch 2.1 has 2.1.0, 2.1.1, 2.1.2"),
    ],
)
def test_torch_no_release_matches_is_one_line_exit_2_before_any_plan(args, said, no_probe):
    """Issue 26: --torch 9.9 led with "nothing fits as the machine is"; no such torch exists, so it
    is the user's input that cannot be planned with (exit 2), said before anything is planned."""
    for extra in ([], ["--json"]):
        r = run("--offline", *extra, *NO_GPU, *args)
        assert r.exit_code == 2, r.output
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("envdoctor recommend: --torch: " + said), r.output
        assert "nothing fits" not in r.output


@pytest.mark.parametrize(
    "args, way",
    [
        (["--torch", "1.13"], "torch 1.13 has no wheels for Python 3.12 (it has 3.7-3.10)"),
        (["--python-version", "3.15"], "Python 3.15 has no torch wheels yet; 3.14 does"),
        (["--python-version", "2.7"], "Python 2.7 has no torch wheels"),
    ],
)
def test_no_gpu_and_nothing_fits_exits_1_with_ways_out_not_a_torch_none_plan(args, way, no_probe):
    r = run("--offline", *NO_GPU, *args)
    assert r.exit_code == 1, r.output
    assert "None" not in r.output and "Install no torch" not in r.output
    assert "nothing fits as the machine is; see the ways out" in r.output and way in r.output
    doc = json.loads(run("--offline", "--json", *NO_GPU, *args).output)
    assert (doc["status"], doc["torch"], doc["commands"]) == ("no-fit", None, [])


def test_bare_driver_branch_is_read_as_that_branch_not_580_0(no_probe):
    # Was: "CUDA 13.0 needs driver 580.65.06 ...; driver 580 is older" and cu126.
    r = run(
        "--offline",
        "--json",
        "--gpu",
        "RTX 4090",
        "--driver",
        "580",
        "--os",
        "ubuntu:24.04",
        "--python-version",
        "3.12",
    )
    doc = json.loads(r.output)
    assert (doc["torch"], doc["variant"], doc["compatibility"]) == ("2.13.0", "cu130", "direct")
    assert doc["machine"]["driver"] == "580.65.06"
    assert "--driver 580: read as the R580 branch (580.65.06 or newer)" in doc["machine"]["given"]


def test_docker_route_without_a_gpu_names_a_way_out(tmp_path):
    ctx = cpu_box(tmp_path)
    r = CliRunner().invoke(
        cli, ["recommend", "--offline", "--route", "docker", "--root", str(ctx.root)], env=dict(ctx.env)
    )
    assert r.exit_code == 1
    assert "NGC images need an NVIDIA GPU: use --route system for the CPU wheels" in r.output
    assert "Turned down" not in r.output


def test_gtx_1080_with_a_bare_470_is_known(no_probe):
    r = run("--offline", "--gpu", "GTX 1080", "--driver", "470", "--os", "ubuntu:20.04", "--python-version", "3.10")
    assert r.exit_code == 0, r.output
    assert "NVIDIA GeForce GTX 1080 (cc 6.1)" in r.output
    assert "CUDA 11.0 itself" not in r.output  # the minor-version warning keeps to the chosen build


def test_unknown_gpu_suggests_near_names_in_one_line(no_probe):
    r = run(
        "--offline",
        "--gpu",
        "GTX 1800 Ti",
        "--driver",
        "535.104.05",
        "--os",
        "ubuntu:22.04",
        "--python-version",
        "3.10",
    )
    assert r.exit_code == 2
    assert "did you mean GTX 1080 Ti?" in r.output and len(r.output.strip().splitlines()) == 1


def test_windows_is_refused_in_one_line(no_probe):
    r = run("--offline", "--os", "windows:11", "--no-gpu", "--python-version", "3.12")
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        "envdoctor recommend: --os windows:11: envdoctor plans Linux machines (and macOS, CPU/MPS) only; "
        "on Windows, plan for the WSL2 distribution instead (e.g. --os ubuntu:24.04)"
    ]


def test_index_url_credentials_from_the_environment_are_never_printed(tmp_path, no_probe):
    # Was: --index-url http://u:***@host/whl/cu130 in the plan and in --script: it cannot run.
    script = tmp_path / "install.sh"
    env = {"ENVDOCTOR_INDEX_URL": "http://u:pw@host/whl"}
    r = run(
        "--offline",
        "--gpu",
        "H100",
        "--driver",
        "580.95.05",
        "--os",
        "ubuntu:24.04",
        "--python-version",
        "3.12",
        "--script",
        str(script),
        env=env,
    )
    assert r.exit_code == 0, r.output
    for text in (r.output, script.read_text()):
        assert '--index-url "$ENVDOCTOR_INDEX_URL/cu130"' in text
        assert "u:pw" not in text and "u:***@host/whl/cu130" not in text
        assert "export ENVDOCTOR_INDEX_URL" not in text  # it is already set


def test_index_url_credentials_from_the_flag_get_an_export_line_first(tmp_path, no_probe):
    script = tmp_path / "install.sh"
    r = run(
        "--offline",
        "--index-url",
        "http://u:pw@host/whl",
        "--gpu",
        "H100",
        "--driver",
        "580.95.05",
        "--os",
        "ubuntu:24.04",
        "--python-version",
        "3.12",
        "--script",
        str(script),
    )
    assert r.exit_code == 0, r.output
    text = script.read_text()
    export = "export ENVDOCTOR_INDEX_URL='http://u:***@host/whl'  # set it to your mirror URL with its credentials"
    assert export in text and export in r.output and "u:pw" not in text + r.output
    assert text.index(export) < text.index('--index-url "$ENVDOCTOR_INDEX_URL/cu130"')


def test_torch_already_installed_is_noticed(tmp_path):
    # Was: "Install torch 2.13.0+cpu" into an interpreter that already had 2.13.0+cpu.
    import sys

    from tests.faketorch import make_torch

    site = make_torch(tmp_path, version="2.13.0+cpu")
    r = CliRunner().invoke(
        cli, ["recommend", "--offline", "--json", "--python", sys.executable, "--no-gpu"], env={"PYTHONPATH": str(site)}
    )
    doc = json.loads(r.output)
    assert r.exit_code == 0 and doc["already_installed"] is True and doc["python"] == sys.executable
    assert [s["title"] for s in doc["steps"]] == ["Verify"]
    assert not any(" -m pip install " in c for c in doc["commands"])


def test_probed_machine_checks_the_live_index_with_its_best_manylinux_tag(tmp_path):
    """A probed interpreter's tag list starts with plain linux_x86_64; recommend used that one tag and
    so turned down every manylinux_2_28 wheel on a real index ("nothing fits", exit 1)."""
    report = Path(__file__).parent / "fixtures/h200-driver580-cuda13/envdoctor-check.json"
    with IndexServer() as server:
        base = server.url()
        r = CliRunner().invoke(
            cli,
            ["recommend", "--json", "--from", str(report), "--index-url", base],
            env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")},
        )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    # the fixture index holds cu130 wheels 2.9.0-2.11.0 for cp312 manylinux_2_28_x86_64
    assert (doc["torch"], doc["variant"], doc["index_check"]) == ("2.11.0", "cu130", "live")


@pytest.mark.parametrize("route", ["system", "conda"])
def test_a_cpu_plan_verifies_with_bench_cpu(no_probe, route):
    """qa2: bench stops (exit 2) where torch sees no GPU unless --cpu asks for the CPU; a plan of CPU
    wheels printed plain ``envdoctor bench`` as its last step, which then stopped."""
    cpu = json.loads(
        run(
            "--offline", "--json", "--no-gpu", "--route", route, "--os", "ubuntu:24.04", "--python-version", "3.12"
        ).output
    )
    assert cpu["variant"] == "cpu" or route == "conda", cpu["variant"]
    bench = [c for c in cpu["commands"] if c.startswith("envdoctor bench")]
    assert bench and all(c.endswith(" --cpu") for c in bench), bench
    gpu = json.loads(run("--offline", "--json", "--route", route, *WHATIF_5090).output)
    bench = [c for c in gpu["commands"] if c.startswith("envdoctor bench")]
    assert bench and not any("--cpu" in c for c in bench), bench
