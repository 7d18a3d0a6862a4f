"""The shared Click parameters of clicore.py: ChoiceList (bench --suite/--dtype, burn --dtype,
comms --collective) and gpu_index_or_all (bench and burn --device)."""

import click
import pytest
from click.testing import CliRunner

from envdoctor.clicore import ChoiceList, gpu_index_or_all


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


@pytest.mark.parametrize("args, said", [
    (("--dtype", "fp8"), "'fp8': choose from fp32, fp16, bf16 (comma-separated)"),
    (("--dtype", ","), "',': choose from fp32, fp16, bf16 (comma-separated)"),
    (("--suite", "layers"), "'layers': choose from matmul, memory or all (comma-separated)"),
    (("--op", "all"), "'all': choose from all_reduce, all_gather (comma-separated)"),
])
def test_choice_list_refuses_unknown_names_with_exit_2(args, said):
    r = _run(*args)
    assert r.exit_code == 2 and said in r.output


def test_device_takes_all_or_one_index():
    assert _run("--device", " ALL ").output.strip().endswith("'all')")
    assert _run("--device", "07").output.strip().endswith("'7')")
    for bad in ("1024", "-1", "0,1", "gpu0"):
        r = _run("--device", bad)
        assert r.exit_code == 2 and "give a GPU index (0, 1, ...) or 'all'" in r.output, bad
