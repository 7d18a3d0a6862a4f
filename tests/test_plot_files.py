"""--plot writes its PNG as every envdoctor file is written: atomically, never over what is not a
regular file. The review found bench and comms let matplotlib write the user's path directly
(a symlink or a device there was written through); only burn went through a temporary file."""

from __future__ import annotations

import os
import sys

from envdoctor.child import draw_plot


def test_a_plot_onto_a_symlink_or_a_device_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "plot.png"
    link.symlink_to(target)
    for path in (str(link), os.devnull, str(tmp_path)):
        written, line, kind = draw_plot("plot.py", {"path": path, "title": "t", "panels": []}, sys.executable)
        assert (
            not written
            and kind == "not_regular"
            and line == f"no plot written: {path} exists and is not a regular file"
        )
    assert target.read_text() == "keep me"


def test_the_plot_child_draws_into_a_private_temporary_file_not_the_users_path(tmp_path, monkeypatch):
    seen = {}

    def fake_run_child(script, spec, **kw):
        seen["path"] = spec["path"]
        with open(spec["path"], "wb") as fh:
            fh.write(b"\x89PNG fake")
        from envdoctor.child import ChildRun

        return ChildRun(script=script, python=sys.executable, result={"path": spec["path"]})

    import envdoctor.child as child

    monkeypatch.setattr(child, "run_child", fake_run_child)
    dest = tmp_path / "out.png"
    written, line, _ = draw_plot("plot.py", {"path": str(dest), "title": "t", "panels": [1]}, sys.executable)
    assert written and line == f"plot written to {dest}" and dest.read_bytes() == b"\x89PNG fake"
    assert seen["path"] != str(dest) and not os.path.exists(seen["path"])  # the temporary folder is gone


def _fake_matplotlib_python(tmp_path):
    """A target 'python' that does what matplotlib does to the disk: its cache and settings go to
    $MPLCONFIGDIR when set, else ~/.cache/matplotlib and ~/.config/matplotlib; then it answers."""
    from tests.fakes import FakeBin

    seen = tmp_path / "mplconfigdir.txt"
    script = (
        f'cat > /dev/null; echo "$MPLCONFIGDIR" > {seen}\n'
        'if [ -n "$MPLCONFIGDIR" ]; then mkdir -p "$MPLCONFIGDIR" && echo x > "$MPLCONFIGDIR/fontlist.json";\n'
        'else mkdir -p "$HOME/.cache/matplotlib" "$HOME/.config/matplotlib"; fi\n'
        'echo \'{"envdoctor_child": 2, "kind": "error", "error": {"kind": "no_matplotlib", "message": "m"}}\''
    )
    return FakeBin(tmp_path).add_script("python3", script), seen


def test_the_plot_child_leaves_no_matplotlib_folders_in_home(tmp_path):
    """The plot child created ~/.cache/matplotlib and ~/.config/matplotlib: it now gets a private
    MPLCONFIGDIR under the temporary folder, which is removed with it."""
    home = tmp_path / "home"
    home.mkdir()
    python, seen = _fake_matplotlib_python(tmp_path)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    written, line, kind = draw_plot(
        "plot.py", {"path": str(tmp_path / "b.png"), "title": "t", "panels": []}, str(python), env=env
    )
    assert not written and kind == "no_matplotlib"
    private = seen.read_text().strip()
    assert private and "envdoctor-plot-" in private and not os.path.exists(private)
    assert list(home.iterdir()) == []


def test_a_plot_into_a_folder_that_does_not_exist_is_refused_and_no_folder_made(tmp_path):
    """--plot made the missing parent folders (write_atomic's mkdir); as -o, it says the folder
    does not exist."""
    python, seen = _fake_matplotlib_python(tmp_path)
    dest = tmp_path / "no" / "such" / "b.png"
    written, line, kind = draw_plot("plot.py", {"path": str(dest), "title": "t", "panels": []}, str(python))
    assert (written, kind) == (False, "no_folder")
    assert line.startswith(f"no plot written: the folder {dest.parent} does not exist")
    assert not (tmp_path / "no").exists() and not seen.exists()  # the child was not even started


def test_plot_options_into_a_folder_that_does_not_exist_are_refused_before_any_run(tmp_path):
    from click.testing import CliRunner

    from envdoctor.cli import cli

    for command in ("bench", "burn", "comms"):
        r = CliRunner().invoke(cli, [command, "--plot", str(tmp_path / "missing" / "x.png")])
        assert r.exit_code == 2 and f"the folder {tmp_path / 'missing'} does not exist" in r.output, command
    assert not (tmp_path / "missing").exists()


def test_an_output_name_of_another_kind_is_refused_before_any_run(tmp_path):
    """``burn --plot x.txt`` was taken: the whole burn ran, then matplotlib refused the format (or
    wrote a PDF for ``x.pdf``, not the PNG --plot promises). One rule (clicore.output_files): --plot
    ends .png, ``--html -o`` ends .html or .htm, and ``-o`` without --html (it wrote nothing) is refused."""
    from click.testing import CliRunner

    from envdoctor.cli import cli

    def run(*args):
        r = CliRunner().invoke(cli, list(args))
        errors = [line for line in r.output.splitlines() if line.startswith("Error:")]
        return r.exit_code, errors

    for command in ("bench", "burn", "comms"):
        for name in ("x.txt", "x.pdf", "x"):
            code, errors = run(command, "--plot", str(tmp_path / name))
            assert code == 2 and len(errors) == 1, (command, name, errors)
            assert "'--plot'" in errors[0] and "the plot is a PNG: name a file ending .png" in errors[0]
    code, errors = run("check", "--html", "-o", str(tmp_path / "page.txt"))
    assert code == 2 and "the --html page is HTML: name a file ending .html or .htm" in errors[0]
    code, errors = run("check", "-o", str(tmp_path / "page.html"))
    assert code == 2 and "-o writes the --html page; add --html" in errors[0]
    code, errors = run("fleet", "--html", "-o", str(tmp_path / "fleet.json"), str(tmp_path / "a.json"))
    assert code == 2 and "name a file ending .html or .htm" in errors[0]
    assert not list(tmp_path.iterdir())  # nothing written, nothing run


def test_an_output_name_of_its_kind_in_any_case_is_taken():
    from envdoctor.clicore import output_files

    output_files({"plot": "B.PNG", "html_output": "Page.HTM", "as_html": True})
    output_files({"output": "fleet.json", "as_html": False})  # fleet's -o of another format
