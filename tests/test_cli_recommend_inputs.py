"""``recommend`` refuses a value it cannot plan with, in one line and exit 2, before probing anything.

Was (issue 12): ``--python /nonexistent`` planned for that path (exit 0); an empty ``--python``,
``--torch``, ``--driver``, ``--os`` (and ``--python-version``, ``--glibc``, ``--from``, ``--script``)
was silently dropped, or read as "." (this folder); ``--python`` with ``--from`` or
``--python-version`` was silently overruled.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli

WHATIF = ["--offline", "--gpu", "H100", "--driver", "580.95.05", "--os", "ubuntu:24.04"]


@pytest.fixture
def no_probe(monkeypatch):
    """Fail the test if anything reads this machine."""
    import envdoctor.probes as probes

    def boom(*a, **k):
        raise AssertionError("recommend probed the machine")

    monkeypatch.setattr(probes, "collect", boom)


def one_line_exit_2(args, expected):
    r = CliRunner().invoke(cli, ["recommend", *args])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [f"envdoctor recommend: {expected}"], r.output
    return r


@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "blank"])
def test_empty_python_is_refused_by_the_option_itself(blank, no_probe):
    """Every command's --python refuses an empty value (clicore), recommend's too."""
    r = CliRunner().invoke(cli, ["recommend", *WHATIF, f"--python={blank}"])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [
        "Error: Invalid value for '--python': it is empty: give the path of a Python interpreter (or a name on PATH)"
    ], r.output


@pytest.mark.parametrize(
    "option, expected",
    [
        (
            "--torch",
            "--torch is empty: give a torch version or a PEP 440 specifier (2.7, 2.7.1, '>=2.4,<2.6'), "
            "or leave it out for the newest that works",
        ),
        (
            "--driver",
            "--driver is empty: give a driver version (570.133.20, or a branch such as 580), or 'none' for no driver",
        ),
        (
            "--os",
            "--os is empty: give ID:VERSION as in /etc/os-release (ubuntu:22.04, debian:12, rhel:9; "
            "a rolling release as arch:rolling)",
        ),
        ("--python-version", "--python-version is empty: give X.Y (3.12, or 3.13t for free-threaded)"),
        ("--glibc", "--glibc is empty: give a version such as 2.35 (ldd --version prints it)"),
        ("--from", "--from is empty: give a report saved by `envdoctor check --json`"),
        ("--script", "--script is empty: give the file to write the commands to (e.g. install.sh)"),
    ],
)
@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "blank"])
def test_empty_option_is_refused_not_silently_ignored(option, expected, blank, no_probe):
    one_line_exit_2(
        [*WHATIF, "--python-version", "3.12", f"{option}={blank}"]
        if option != "--python-version"
        else [*WHATIF, f"{option}={blank}"],
        expected,
    )


def test_nonexistent_python_is_exit_2_not_a_plan_for_that_path(no_probe):
    one_line_exit_2(
        [*WHATIF, "--python", "/nonexistent/bin/python3"],
        "--python /nonexistent/bin/python3: no such file; give an interpreter that runs (e.g. "
        "/opt/venv/bin/python), or leave --python out to plan for python3 on PATH (or a new virtual "
        "environment)",
    )


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda tmp: tmp, "is a folder"),
        (lambda tmp: (tmp / "python3").write_text("#!/bin/sh\n") and tmp / "python3", "not executable"),
        (lambda tmp: "no-such-python-anywhere", "not found on PATH"),
    ],
    ids=["folder", "not executable", "name not on PATH"],
)
def test_python_that_cannot_be_run_is_exit_2(tmp_path, make, why, no_probe):
    target = str(make(tmp_path))
    r = one_line_exit_2(
        [*WHATIF, "--python", target],
        f"--python {target}: {why}; give an interpreter that runs (e.g. /opt/venv/bin/python), or "
        "leave --python out to plan for python3 on PATH (or a new virtual environment)",
    )
    assert "Commands" not in r.output


def test_python_that_runs_but_is_not_a_python_is_exit_2(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    r = CliRunner().invoke(cli, ["recommend", *WHATIF, "--python", str(fake)])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [
        f"envdoctor recommend: --python {fake}: {fake} exited with status 0 without printing envdoctor's result"
    ]


def test_python_with_from_is_a_contradiction_not_silently_ignored(tmp_path, no_probe):
    one_line_exit_2(
        ["--offline", "--from", str(tmp_path / "r.json"), "--python", sys.executable],
        f"--python and --from contradict each other: --from plans for the machine of "
        f"{tmp_path / 'r.json'} and its Python; leave one out",
    )


def test_python_with_python_version_is_a_contradiction_not_silently_ignored(no_probe):
    one_line_exit_2(
        [*WHATIF, "--python", sys.executable, "--python-version", "3.12"],
        "--python and --python-version contradict each other: --python plans for that interpreter "
        "(its version is read from it), --python-version for a Python of that version you have not "
        "made yet; leave one out",
    )


# --- values the table does not know: accepted, and said so ---------------------------------------------


def plan_json(*args):
    import json

    r = CliRunner().invoke(cli, ["recommend", "--offline", "--json", "--python-version", "3.12", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_rolling_release_os_is_accepted_and_the_plan_says_what_it_lacks(no_probe):
    # Was: "--os 'arch:rolling': expected ID:VERSION" although it has that form.
    doc = plan_json("--gpu", "H100", "--driver", "none", "--os", "arch:rolling")
    assert doc["route"] == "system" and (doc["torch"], doc["variant"]) == ("2.13.0", "cu130")
    assert (
        "--os arch:rolling: not a distribution in envdoctor's table; NVIDIA's CUDA repository has no packages "
        "for it: pip wheels still work (they carry their own CUDA runtime); the NVIDIA driver comes from the "
        "distribution's own packages, which envdoctor does not spell out"
    ) in doc["warnings"]
    assert "glibc unknown: torch 2.13.0 cu130 wheels need glibc 2.28 or newer" in doc["warnings"]
    # no NVIDIA repository line is invented for it: the driver step is a pointer to the guide
    assert not any("developer.download.nvidia.com" in c for c in doc["commands"])


def test_rolling_release_with_a_driver_says_nothing_about_installing_one(no_probe):
    doc = plan_json("--gpu", "H100", "--driver", "580.95.05", "--os", "arch:rolling", "--glibc", "2.42")
    [line] = [w for w in doc["warnings"] if w.startswith("--os arch:rolling")]
    assert line.endswith("pip wheels still work (they carry their own CUDA runtime)")
    assert not any(w.startswith("glibc unknown") for w in doc["warnings"])


def test_unknown_release_of_a_known_distribution_is_said_not_silently_accepted(no_probe):
    # Was: --os ubuntu:99.04 planned without a word (glibc unknown, NVIDIA's repository assumed absent).
    doc = plan_json("--gpu", "H100", "--driver", "580.95.05", "--os", "ubuntu:99.04")
    assert (
        "--os ubuntu:99.04: envdoctor's table does not know this ubuntu release (it knows 18.04, 20.04, "
        "22.04, 24.04), so NVIDIA's CUDA repository is taken not to serve it: pip wheels still work (they "
        "carry their own CUDA runtime)"
    ) in doc["warnings"]


def test_known_release_gets_no_such_warning(no_probe):
    doc = plan_json("--gpu", "H100", "--driver", "580.95.05", "--os", "ubuntu:24.04")
    assert not any("envdoctor's table does not know" in w for w in doc["warnings"])


def test_driver_newer_than_the_table_is_said_not_silently_accepted(no_probe):
    # Was: --driver 9999.99 accepted without a word.
    doc = plan_json("--gpu", "H100", "--driver", "9999.99", "--os", "ubuntu:24.04")
    assert (
        "--driver 9999.99: newer than any driver envdoctor's table knows (its newest branch is R620); assumed "
        "to run every CUDA release the table lists (up to 13.3.1) directly, and every GPU an R620 driver runs"
    ) in doc["warnings"]
    assert doc["compatibility"] == "direct"


def test_a_driver_of_a_known_branch_gets_no_such_warning(no_probe):
    doc = plan_json("--gpu", "H100", "--driver", "620.10", "--os", "ubuntu:24.04")
    assert not any("newer than any driver" in w for w in doc["warnings"])


def test_headline_without_a_driver_does_not_say_the_driver_runs_it(no_probe):
    r = CliRunner().invoke(
        cli,
        [
            "recommend",
            "--offline",
            "--gpu",
            "RTX 4090",
            "--driver",
            "none",
            "--os",
            "ubuntu:24.04",
            "--python-version",
            "3.12",
        ],
    )
    assert r.output.splitlines()[0] == (
        "envdoctor recommend: system route: torch 2.13.0+cu130 (CUDA 13.0, once driver branch 580 is installed)"
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("arch:rolling", ("arch", "rolling")),
        ("debian:sid", ("debian", "sid")),
        ("opensuse-tumbleweed:20260101", ("opensuse-tumbleweed", "20260101")),
        ("Ubuntu:24.04", ("ubuntu", "24.04")),
    ],
)
def test_os_versions_that_are_words(text, expected):
    from envdoctor.advise.whatif import parse_os

    assert parse_os(text) == expected


@pytest.mark.parametrize("text", ["arch", "arch:", ":rolling", "arch:-x", "arch:roll ing"])
def test_os_without_the_id_version_form_is_still_refused(text):
    from envdoctor.advise.whatif import WhatIfError, parse_os

    with pytest.raises(WhatIfError, match="ID:VERSION"):
        parse_os(text)


# --- --from with a damaged report -----------------------------------------------------------------------

REPORT_FIXTURE = Path(__file__).parent / "fixtures/h200-driver580-cuda13/envdoctor-check.json"


def edited_report(tmp_path, edit):
    import json

    doc = json.loads(REPORT_FIXTURE.read_text())
    edit(doc)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    return path


def test_report_message_names_the_option_and_the_file_once(tmp_path, no_probe):
    # Was: "--from: /x/r.json holds a value ..." next to "--from /x/r.json: cannot read it (...)".
    path = edited_report(tmp_path, lambda d: d["facts"]["driver"].update(driver_version="banana"))
    one_line_exit_2(
        ["--offline", "--from", str(path)],
        f"--from {path}: holds a value no probe writes: facts.driver.driver_version is 'banana', "
        "not a driver version like 580.159.04",
    )


def test_report_without_facts_is_exit_2_not_a_plan_for_a_blank_machine(tmp_path, no_probe):
    # Was: exit 0 with a plan for "no NVIDIA GPU: CPU wheels" (every area defaulted to absent).
    path = edited_report(tmp_path, lambda d: d.pop("facts"))
    one_line_exit_2(
        ["--offline", "--from", str(path)],
        f"--from {path}: holds no facts, so there is no machine to plan for; save a report with "
        "`envdoctor check --json > report.json`",
    )


def test_an_area_the_report_does_not_hold_is_unknown_not_absent(tmp_path, no_probe):
    import json

    path = edited_report(tmp_path, lambda d: [d["facts"].pop(k) for k in ("docker", "conda")])
    r = CliRunner().invoke(cli, ["recommend", "--offline", "--json", "--from", str(path)])
    doc = json.loads(r.output)
    assert {x["route"]: x["reason"] for x in doc["rejected"]} == {
        "conda": "conda was not inspected (not in the report)",
        "docker": "docker was not inspected (not in the report)",
    }


# --- values too long or too large to be what they claim --------------------------------------------------


@pytest.mark.parametrize(
    "option, value",
    [
        ("--driver", "5" * 5000),
        ("--torch", "2." + "1" * 5000),
        ("--python-version", "3." + "1" * 5000),
        ("--os", "ubuntu:" + "2" * 5000),
        ("--gpu", "A" * 5000),
        ("--glibc", "2." + "1" * 5000),
    ],
)
def test_a_5000_character_value_is_exit_2_not_an_internal_error(option, value, no_probe):
    # Was: --driver/--torch of 5,000 digits: "internal error: ValueError: Exceeds the limit (4300 digits)",
    # exit 3; --os ubuntu:222...: a plan; the messages quoted all 5,000 characters.
    r = CliRunner().invoke(cli, ["recommend", *WHATIF, "--python-version", "3.12", option, value])
    assert r.exit_code == 2, r.output[:300]
    [line] = r.output.strip().splitlines()
    assert line == (
        f"envdoctor recommend: {option} {value[:40]!r}... ({len(value)} characters): too long to be "
        "a value envdoctor reads (at most 100 characters)"
    )


@pytest.mark.parametrize(
    "option, value, expected",
    [
        ("--glibc", "2.150000000", "--glibc '2.150000000': a glibc version looks like 2.35 (glibc 2.x releases)"),
        (
            "--driver",
            "580." + "5" * 20,
            f"--driver '580.{'5' * 20}': a driver version looks like 570.133.20 (at most "
            "four parts of at most four digits)",
        ),
    ],
)
def test_numbers_no_real_value_has_are_refused(option, value, expected, no_probe):
    one_line_exit_2([*WHATIF, "--python-version", "3.12", option, value], expected)


def test_recommend_torch_that_no_release_matches_names_the_newest_known(no_probe):
    """Issue 26: --torch 9.9 led with "nothing fits as the machine is"; no torch 9.9 exists."""
    r = CliRunner().invoke(cli, ["recommend", *WHATIF, "--torch", "9.9"])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "envdoctor recommend: --torch: no torch release matches '9.9'; the newest envdoctor knows is 2."
    ), r.output
    assert "nothing fits" not in r.output


@pytest.mark.parametrize("spec", ["2.7", "2.7.1", ">=2.4,<2.6", "2.7.1+cu118"])
def test_recommend_torch_of_a_known_release_still_plans(spec, no_probe):
    r = CliRunner().invoke(cli, ["recommend", *WHATIF, "--python-version", "3.12", "--torch", spec])
    assert r.exit_code in (0, 1), r.output
    assert "knows no torch release" not in r.output
