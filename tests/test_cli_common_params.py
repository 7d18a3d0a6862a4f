"""The shared Click parameters of clicore.py: ChoiceList (bench --suite/--dtype, burn --dtype,
comms --collective) and gpu_index_or_all (bench and burn --device)."""

import re

import click
import pytest
from click.testing import CliRunner

from envdoctor.clicore import ChoiceList, FilePath, Number, gpu_index_or_all, gpu_indices, python_option, seconds


@click.command()
@click.option("--dtype", "dtypes", type=ChoiceList(("fp32", "fp16", "bf16"), "DTYPES"), multiple=True)
@click.option("--suite", "suites", type=ChoiceList(("matmul", "memory"), "SUITES", every="all"), multiple=True)
@click.option("--op", "ops", type=ChoiceList(("all_reduce", "all_gather"), "OPS"), default="all_reduce")
@click.option("--device", default="0", callback=gpu_index_or_all)
def cmd(dtypes, suites, ops, device):
    click.echo(repr((dtypes, suites, ops, device)))


def _run(*args):
    return CliRunner().invoke(cmd, list(args))


def test_choice_list_reads_commas_case_and_repeats():
    r = _run("--dtype", "FP16, fp32,fp16", "--dtype", "bf16", "--op", "All-Gather")
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "((('fp16', 'fp32'), ('bf16',)), (), ('all_gather',), '0')"


def test_choice_list_all_stands_for_every_choice():
    r = _run("--suite", "memory,all")
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "((), (('matmul', 'memory'),), ('all_reduce',), '0')"


@pytest.mark.parametrize(
    "args, said",
    [
        (("--dtype", "fp8"), "'fp8': choose from fp32, fp16, bf16 (comma-separated)"),
        (("--dtype", ","), "',': choose from fp32, fp16, bf16 (comma-separated)"),
        (("--suite", "layers"), "'layers': choose from matmul, memory or all (comma-separated)"),
        (("--op", "all"), "'all': choose from all_reduce, all_gather (comma-separated)"),
    ],
)
def test_choice_list_refuses_unknown_names_with_exit_2(args, said):
    r = _run(*args)
    assert r.exit_code == 2 and said in r.output


def test_device_takes_all_or_one_index():
    assert _run("--device", " ALL ").output.strip().endswith("'all')")
    assert _run("--device", "07").output.strip().endswith("'7')")
    for bad in ("1024", "-1", "0,1", "gpu0"):
        r = _run("--device", bad)
        assert r.exit_code == 2 and "give a GPU index (0, 1, ... up to 1023) or 'all'" in r.output, bad


@pytest.mark.parametrize("bad", ["\u00b2", "\u0663", "999999999999", "\uff11", "1e3", " "])
def test_device_of_superscript_arabic_digit_or_huge_index_is_a_usage_error(bad):
    """Issue 27: '²' and 999999999999 printed a traceback, '٣' (an Arabic-Indic 3) was GPU 3."""
    r = _run("--device", bad)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "give a GPU index (0, 1, ... up to 1023) or 'all'" in r.output


@click.command()
@click.option("--seconds", "secs", type=seconds(5, 86400), default=60.0)
@click.option("--n", type=Number(1, 8, integer=True), default=1)
@click.option("--pct", type=Number(0.1, 90, unit="%"), default=5.0)
@python_option
def numbers(secs, n, pct, python):
    click.echo(repr((secs, n, pct, python)))


@pytest.mark.parametrize(
    "args, said",
    [
        (("--seconds", "nan"), "'--seconds': 'nan': give a number from 5 to 86400 seconds"),
        (("--seconds", "NaN"), "'--seconds': 'NaN': give a number from 5 to 86400 seconds"),
        (("--seconds", "inf"), "'--seconds': 'inf': give a number from 5 to 86400 seconds"),
        (("--seconds", "-inf"), "'--seconds': '-inf': give a number from 5 to 86400 seconds"),
        (("--seconds", "-1"), "'--seconds': '-1': give a number from 5 to 86400 seconds"),
        (("--seconds", "1e308"), "'--seconds': '1e308': give a number from 5 to 86400 seconds"),
        (("--seconds", "\u0663\u0660"), "'--seconds': '\u0663\u0660': give a number from 5 to 86400 seconds"),
        (("--seconds", "9" * 5000), "give a number from 5 to 86400 seconds"),
        (("--seconds", ""), "'--seconds': '': give a number from 5 to 86400 seconds"),
        (("--n", "2.5"), "'--n': '2.5': give a whole number from 1 to 8"),
        (("--n", "0"), "'--n': '0': give a whole number from 1 to 8"),
        (("--n", "\u00b2"), "'--n': '\u00b2': give a whole number from 1 to 8"),
        (("--pct", "95"), "'--pct': '95': give a number from 0.1 to 90 %"),
        (("--python", ""), "'--python': it is empty: give the path of a Python interpreter"),
        (("--python", "  "), "'--python': it is empty"),
        (("--python", "py\0thon"), "'--python': a path cannot hold a NUL character"),
    ],
)
def test_nan_inf_negative_huge_and_non_ascii_numbers_are_refused_with_their_range(args, said):
    """Issue 26 section 3: NaN and inf passed every float option (burn --seconds nan printed FAULTY)."""
    r = CliRunner().invoke(numbers, list(args))
    assert r.exit_code == 2, r.output
    errors = [line for line in r.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and said in errors[0] and len(errors[0]) < 200, r.output


def test_numbers_in_range_pass_as_their_type():
    r = CliRunner().invoke(numbers, ["--seconds", " 5 ", "--n", "8", "--pct", "0.1", "--python", "python3"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "(5.0, 8, 0.1, 'python3')"


def test_device_lists_refuse_a_gpu_named_twice_and_non_ascii_digits():
    """Issue 26: comms --devices 0,0 exited 1; it is a usage error."""
    assert gpu_indices("3, 0,1") == (3, 0, 1)
    for bad, said in (
        ("0,0", "GPU 0 is named twice"),
        ("0,\u0663", "'\u0663' is not a GPU index (0 to 1023)"),
        ("1,", "'' is not a GPU index"),
        ("1024", "'1024' is not a GPU index"),
    ):
        with pytest.raises(ValueError, match=re.escape(said)):
            gpu_indices(bad)


@click.command()
@click.option("-o", "--output", type=FilePath(dir_okay=False), default=None)
def writes(output):
    click.echo(repr(output))


@pytest.mark.parametrize(
    "value, said",
    [
        ("a\0b", "a path cannot hold a NUL character"),
        ("x" * 300, "a file name of 300 bytes (at most 255)"),
        ("d/" * 3000, "a path of 6000 bytes (at most 4096)"),
    ],
)
def test_a_path_no_file_can_have_is_a_usage_error_not_a_value_error(value, said):
    """A NUL made os.stat raise ValueError (a traceback); a 300-byte name ENAMETOOLONG (exit 3)."""
    r = CliRunner().invoke(writes, ["-o", value])
    assert r.exit_code == 2 and said in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_a_path_of_a_normal_name_passes():
    assert CliRunner().invoke(writes, ["-o", "before-upgrade.json"]).output.strip() == "'before-upgrade.json'"


def test_envdoctor_alone_still_shows_the_help_and_a_group_usage_error_is_one_line():
    """The one-line usage error must not break Click's own "no arguments: the help" (a usage error too)."""
    from envdoctor.cli import cli

    r = CliRunner().invoke(cli, [])
    assert r.exit_code == 2 and "[OPTIONS] COMMAND [ARGS]..." in r.output and "Doctor and install" in r.output
    r = CliRunner().invoke(cli, ["--bogus"])
    assert r.exit_code == 2 and r.output.strip().splitlines() == ["Error: No such option '--bogus'."], r.output
    r = CliRunner().invoke(cli, ["burn", "--seconds", "nan"])
    assert r.exit_code == 2 and r.output.strip().splitlines() == [
        "Error: Invalid value for '--seconds': 'nan': give a number from 5 to 86400 seconds"
    ], r.output


@pytest.mark.parametrize(
    "variable, value",
    [("ENVDOCTOR_INDEX_TTL", "nan"), ("ENVDOCTOR_INDEX_RETRIES", "\u0663"), ("ENVDOCTOR_INDEX_BACKOFF", "-1")],
)
def test_a_number_from_an_environment_variable_is_refused_in_the_variable_s_name(variable, value):
    from envdoctor.cli import cli

    r = CliRunner().invoke(cli, ["index", "--offline", "cu128"], env={variable: value})
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [
        f"Error: {variable} (the variable, not an option): {value!r}: give " + r.output.split(": give ", 1)[1].strip()
    ]
