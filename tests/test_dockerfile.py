"""``envdoctor dockerfile``: the bounded parser of real Dockerfile syntax, and the lint of the
fixtures in tests/fixtures/dockerfiles/ (written for these tests in the shape of vLLM's, PyTorch's and
NGC-based Dockerfiles; their README names what each imitates)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from envdoctor.cli import cli
from envdoctor.dockerfile.analysis import base_image, pip_installs, torch_index
from envdoctor.dockerfile.parse import DockerfileError, expand, parse
from tests.fakes import cli_runner

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures" / "dockerfiles"
SCHEMA = json.loads((HERE.parent / "envdoctor/schemas/dockerfile-1.json").read_text())


def lint(name, *args):
    r = cli_runner().invoke(cli, ["dockerfile", str(FIXTURES / name), "--json", *args], catch_exceptions=False)
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    return r.exit_code, [(f["code"], f["severity"], f["line"]) for f in doc["findings"]], doc


# --- the parser -----------------------------------------------------------------------------------


def test_continuations_drop_comment_lines_and_keep_the_first_line_number():
    d = parse("FROM ubuntu:24.04\nRUN apt-get update && \\\n    # why\n\n    apt-get install -y git\nRUN true\n")
    run = d.instructions[1]
    assert (run.line, run.end_line, run.args) == (2, 5, "apt-get update && apt-get install -y git")
    assert d.instructions[2].line == 6


def test_heredocs_several_on_a_line_with_tabs_stripped_and_quoted_terminators():
    text = "FROM ubuntu\nCOPY <<a <<'b' /dst/\none $X\na\n\t\ttwo\nb\nRUN <<-EOT\n\tpip install torch\n\tEOT\nRUN echo done\n"
    d = parse(text)
    copy, run, last = d.instructions[1:]
    assert [(h.name, h.body, h.expand) for h in copy.heredocs] == [("a", "one $X", True), ("b", "\t\ttwo", False)]
    assert run.heredocs[0].body == "pip install torch" and run.heredocs[0].strip_tabs
    assert (last.line, last.args) == (10, "echo done")
    assert [p.packages for p in pip_installs(run.text)] == [("torch",)]


def test_global_args_feed_from_lines_and_a_stage_reimports_them():
    text = (
        "ARG CUDA=12.4.1\nARG FLAVOR\nFROM nvidia/cuda:${CUDA}-${FLAVOR:-devel}-ubuntu22.04 AS base\n"
        "ARG CUDA\nENV V=cu${CUDA}\nFROM base AS final\nRUN echo $V\n"
    )
    d = parse(text)
    assert d.stages[0].base == "nvidia/cuda:12.4.1-devel-ubuntu22.04" and d.stages[0].env == {"V": "cu12.4.1"}
    assert d.stages[1].parent == 0 and d.stages[1].env == {"V": "cu12.4.1"}
    assert d.instructions[-1].scope == {"V": "cu12.4.1"}
    over = parse(text, {"CUDA": "12.8.1", "FLAVOR": "runtime"})
    assert over.stages[0].base == "nvidia/cuda:12.8.1-runtime-ubuntu22.04"


def test_a_from_arg_without_a_value_is_recorded_not_guessed():
    d = parse("ARG BASE\nFROM ${BASE}\n")
    assert d.stages[0].base == "" and d.stages[0].unresolved == ("BASE",)


def test_the_escape_directive_and_the_exec_form():
    d = parse((FIXTURES / "escape-backtick.Dockerfile").read_text())
    assert d.escape == "`" and d.directives == {"escape": "`"}
    assert d.instructions[1].args == "pip install torch --index-url https://download.pytorch.org/whl/cu128"
    e = parse('FROM python:3.12\nRUN ["pip", "install", "vllm==0.11.0"]\n')
    assert e.instructions[1].exec_form == ("pip", "install", "vllm==0.11.0")
    assert pip_installs(e.instructions[1].text)[0].packages == ("vllm==0.11.0",)


def test_expansion_forms():
    values = {"A": "a", "EMPTY": ""}
    assert expand("${A:-x}-${EMPTY:-y}-${EMPTY-z}-${B:+w}-${A:+v}-$A\\$A", values) == "a-y--" + "-v-a$A"


@pytest.mark.parametrize(
    "text, message",
    [
        ("RUN echo hi\n", "no FROM instruction"),
        ("FROM ubuntu\nRUNN echo\n", "line 2: unknown instruction 'RUNN'"),
        ("FROM ubuntu\nRUN <<EOT\necho\n", "line 2: the heredoc <<EOT is never closed"),
        ("# escape=x\nFROM ubuntu\n", "the escape character must be"),
        ("FROM ubuntu\n" + "RUN true\n" * 5001, "more than 5000 instructions"),
    ],
)
def test_what_docker_build_refuses_is_one_error_with_its_line(text, message):
    with pytest.raises(DockerfileError, match=message):
        parse(text)


def test_pip_lines_of_real_shapes():
    (p,) = pip_installs("MAX_JOBS=4 python3 -m pip install --no-cache-dir -U 'flash-attn==2.8.3' --no-build-isolation")
    assert (p.env, p.packages, p.has("--no-build-isolation")) == ({"MAX_JOBS": "4"}, ("flash-attn==2.8.3",), True)
    (u,) = pip_installs("uv pip install --system torch --index-url https://download.pytorch.org/whl/cu128")
    assert u.tool == "uv" and torch_index(u.index_urls) == "cu128"
    assert pip_installs("echo pip install torch") == ()
    assert base_image("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime").torch == "2.5.1"


# --- the fixtures -----------------------------------------------------------------------------------


def test_the_vllm_style_file_is_clean_on_a_580_driver():
    code, found, doc = lint("vllm-style.Dockerfile", "--driver", "580.65.06")
    assert (code, found) == (0, [])
    assert [(s["line"], s["kind"], s["cuda"], s["nvcc"]) for s in doc["stages"]] == [
        (9, "cuda", "12.8.1", True),
        (27, "cuda", "12.8.1", True),
        (33, "cuda", "12.8.1", True),
    ]


def test_the_vllm_style_file_on_older_drivers():
    assert lint("vllm-style.Dockerfile", "--driver", "535.104.05")[:2] == (0, [("ED560", "warning", 33)])
    assert lint("vllm-style.Dockerfile", "--driver", "470.82.01")[:2] == (1, [("ED560", "error", 33)])


def test_the_pytorch_style_file_is_clean():
    assert lint("pytorch-style.Dockerfile", "--driver", "580.65.06")[:2] == (0, [])


def test_vllm_and_torch_on_top_of_ngc():
    code, found, doc = lint("ngc-vllm-on-top.Dockerfile", "--driver", "580.65.06")
    assert code == 1
    assert found == [("ED563", "error", 6), ("ED562", "error", 8), ("ED564", "warning", 10)]
    ed563 = doc["findings"][0]
    assert (
        ed563["title"]
        == "line 6: vllm 0.11.0 pins torch 2.8.0; the image has torch 2.6.0a0+ecf3bae40a (the base image)"
    )


def test_flash_attn_in_a_runtime_image_and_torch_from_pypi():
    code, found, doc = lint("runtime-flash-attn.Dockerfile", "--driver", "580.65.06")
    assert (code, found) == (1, [("ED564", "error", 5), ("ED561", "warning", 4)])
    assert (
        doc["findings"][1]["fix"][-1]
        == "pip3 install torch torchvision --index-url https://download.pytorch.org/whl/cu124"
    )
    assert doc["findings"][0]["fix"][1] == "FROM nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04   # a devel image has nvcc"


def test_a_gpu_stack_on_python_slim_lacks_the_nvidia_variables():
    assert lint("python-slim-vllm.Dockerfile", "--driver", "580.65.06")[:2] == (0, [("ED565", "warning", 2)])


def test_without_a_driver_the_cuda_is_said_unjudged(tmp_path):
    code, found, doc = lint("vllm-style.Dockerfile", "--root", str(tmp_path))
    assert found == [("ED566", "info", 33)] and doc["driver"]["version"] is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--driver", "12.8"], "--driver '12.8': a driver version looks like 570.133.20"),
        (["--driver", "nan"], "--driver 'nan'"),
        (["--build-arg", "NOEQUALS"], "--build-arg 'NOEQUALS': expected NAME=VALUE"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args, message):
    r = cli_runner().invoke(cli, ["dockerfile", str(FIXTURES / "vllm-style.Dockerfile"), *args])
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "target, message",
    [
        ("unclosed-heredoc.Dockerfile", "line 2: the heredoc <<EOT is never closed"),
        (".", "cannot read it"),
        ("missing.Dockerfile", "cannot read it (does not exist)"),
    ],
)
def test_bad_files_are_one_line_and_exit_2(target, message):
    r = cli_runner().invoke(cli, ["dockerfile", str(FIXTURES / target)])
    assert r.exit_code == 2 and message in r.stderr and "Traceback" not in r.stderr + r.stdout


def test_the_default_path_is_the_dockerfile_of_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "Dockerfile").write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install torch\n")
    monkeypatch.chdir(tmp_path)
    r = cli_runner().invoke(cli, ["dockerfile", "--driver", "580.65.06"])
    assert r.exit_code == 0 and "ED561 warning: line 2" in r.stdout


def test_hostile_text_is_bounded_and_never_a_traceback():
    import random

    rng = random.Random(21)
    alphabet = "FROM RUN ARG ENV ${}:-+\\`\"'<<EOF\n\t #=abc"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))
        try:
            d = parse(text)
        except DockerfileError:
            continue
        assert d.stages  # parsed: at least one FROM
    with pytest.raises(DockerfileError, match="larger than 1024 KiB"):
        parse("FROM ubuntu\n" + "#" * (1024 * 1024))
    with pytest.raises(DockerfileError, match="NUL bytes"):
        parse("FROM ubuntu\x00\n")
    d = parse("FROM ubuntu\r\nRUN echo a \\\r\n  b\r\n")  # CRLF files
    assert d.instructions[1].args == "echo a b"
    with pytest.raises(DockerfileError, match="a substitution grows past 65536 characters"):
        parse("FROM ubuntu\nENV A=" + "x" * 60000 + "\nENV B=${A}${A}\n")


def test_a_flash_attn_wheel_of_pypis_torch_in_an_ngc_image():
    code, found, doc = lint("ngc-flash-attn-wheel.Dockerfile", "--driver", "580.65.06")
    assert (code, found) == (1, [("ED567", "error", 5)])
    f = doc["findings"][0]
    assert "built for torch 2.4; the image has torch 2.6.0a0+ecf3bae40a" in f["evidence"]
    assert f["fix"][1].startswith(
        "pip install --no-deps https://github.com/Dao-AILab/flash-attention/releases/download/"
        "v2.7.4.post1/flash_attn-2.7.4.post1+cu12torch2.6cxx11abiTRUE-cp312-cp312-"
    )


def test_credentials_in_a_dockerfile_never_reach_the_output(tmp_path):
    f = tmp_path / "Dockerfile"
    f.write_text(
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "RUN pip install torch --extra-index-url https://bob:s3cret@mirror.example/simple\n"
    )
    for extra in ([], ["--json"]):
        r = cli_runner().invoke(cli, ["dockerfile", str(f), "--driver", "580.65.06", *extra])
        assert r.exit_code == 0 and "s3cret" not in r.stdout and "https://bob:***@mirror.example" in r.stdout


def test_a_dash_says_that_standard_input_is_not_read(tmp_path, monkeypatch):
    """qa2: ``envdoctor dockerfile -`` (docker build's stdin) said "-: cannot read it (does not exist)"."""
    monkeypatch.chdir(tmp_path)
    r = cli_runner().invoke(cli, ["dockerfile", "-"], input="FROM ubuntu:24.04\n")
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        "envdoctor dockerfile: -: the Dockerfile is not read from standard input; give its path "
        "(envdoctor dockerfile path/to/Dockerfile)"
    )
    (tmp_path / "-").write_text("FROM ubuntu:24.04\n")  # a file named "-" is still read
    assert cli_runner().invoke(cli, ["dockerfile", "-"]).exit_code == 0
