"""`recommend --script` into a place that cannot be written: one line, exit 2 (it was an internal error)."""

from click.testing import CliRunner

from envdoctor.cli import cli


def test_script_that_cannot_be_written(tmp_path):
    target = tmp_path / "no-such-folder" / "file-as-folder"
    (tmp_path / "no-such-folder").write_text("a file, not a folder")
    r = CliRunner().invoke(
        cli,
        [
            "recommend",
            "--offline",
            "--no-gpu",
            "--python-version",
            "3.12",
            "--os",
            "ubuntu:24.04",
            "--script",
            str(target),
        ],
    )
    assert r.exit_code == 2
    assert f"cannot write {target}" in r.output and "internal error" not in r.output


def test_script_on_a_fifo_does_not_ask_for_force_that_cannot_help(tmp_path):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    for extra in ([], ["--force"]):
        r = CliRunner().invoke(
            cli,
            [
                "recommend",
                "--offline",
                "--no-gpu",
                "--python-version",
                "3.12",
                "--os",
                "ubuntu:24.04",
                "--script",
                str(fifo),
                *extra,
            ],
        )
        assert r.exit_code == 2, r.output
        assert "a named pipe (FIFO), not a regular file" in r.output and "--force" not in r.output
        assert len(r.output.strip().splitlines()) == 1
