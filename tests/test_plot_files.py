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
        assert not written and kind == "not_regular" and line == f"no plot written: {path} exists and is not a regular file"
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
    assert seen["path"] != str(dest) and not os.path.exists(seen["path"])      # the temporary folder is gone
