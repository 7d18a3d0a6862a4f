"""The snapshot store: file names, the latest pointer, atomic writes, reading back, migration."""

import datetime
import json
import os
from pathlib import Path

import pytest

from envdoctor import snapshot as store
from envdoctor.bench.facts import BenchPoint, BenchResult
from envdoctor.facts import Facts, SystemFacts
from envdoctor.findings import Finding
from envdoctor.snapshot import SnapshotError

FIXTURE = Path(__file__).parent / "fixtures" / "snapshots" / "h200-580.json"
T0 = datetime.datetime(2026, 11, 29, 17, 30, 5, tzinfo=datetime.timezone.utc)


def fixture_doc():
    return json.loads(FIXTURE.read_text())


def leftovers(directory):
    return [n for n in os.listdir(directory) if n.startswith(".")]


def test_file_name_is_the_utc_time():
    assert store.file_name(T0) == "2026-11-29T17-30-05Z.json"
    assert store.file_name(T0, 2) == "2026-11-29T17-30-05Z-2.json"
    cet = T0.astimezone(datetime.timezone(datetime.timedelta(hours=1)))
    assert store.file_name(cet) == "2026-11-29T17-30-05Z.json"


def test_store_dir_follows_the_state_override(tmp_path):
    assert store.store_dir({"ENVDOCTOR_STATE_DIR": str(tmp_path)}) == tmp_path / "snapshots"
    assert store.store_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "envdoctor" / "snapshots"


def test_save_never_overwrites_and_moves_latest(tmp_path):
    d = tmp_path / "snapshots"
    first = store.save({"n": 1}, d, T0)
    second = store.save({"n": 2}, d, T0)
    third = store.save({"n": 3}, d, T0)
    assert [first.name, second.name, third.name] == [
        "2026-11-29T17-30-05Z.json",
        "2026-11-29T17-30-05Z-2.json",
        "2026-11-29T17-30-05Z-3.json",
    ]
    assert json.loads(first.read_text()) == {"n": 1}
    assert (d / "latest").read_text() == "2026-11-29T17-30-05Z-3.json\n"
    assert store.latest(d) == third
    assert [p.name for p in store.snapshot_files(d)] == [first.name, second.name, third.name]
    assert leftovers(d) == []


def test_latest_falls_back_to_the_newest_file(tmp_path):
    d = tmp_path
    store.save({}, d, T0)
    newest = store.save({}, d, T0 + datetime.timedelta(hours=1))
    (d / "latest").unlink()
    assert store.latest(d) == newest
    (d / "latest").write_text("deleted-long-ago.json\n")
    assert store.latest(d) == newest
    (d / "latest").write_text("../../etc/passwd\n")
    assert store.latest(d) == newest
    assert store.latest(tmp_path / "nothing-here") is None


def test_interrupted_snapshot_write_keeps_the_old_state(tmp_path, monkeypatch):
    d = tmp_path
    old = store.save({"n": 1}, d, T0)
    real_replace = os.replace

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(SnapshotError, match="No space left on device"):
        store.save({"n": 2}, d, T0 + datetime.timedelta(minutes=5))
    monkeypatch.setattr(os, "replace", real_replace)
    assert sorted(os.listdir(d)) == [old.name, "latest"]  # no new file, no temp file
    assert store.latest(d) == old and json.loads(old.read_text()) == {"n": 1}


def test_interrupted_pointer_write_keeps_the_old_pointer(tmp_path, monkeypatch):
    d = tmp_path
    old = store.save({"n": 1}, d, T0)
    real_replace = os.replace
    calls = []

    def crash_on_pointer(src, dst):
        calls.append(dst)
        if str(dst).endswith("latest"):
            raise KeyboardInterrupt  # Ctrl-C between the two writes
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_pointer)
    with pytest.raises(KeyboardInterrupt):
        store.save({"n": 2}, d, T0 + datetime.timedelta(minutes=5))
    monkeypatch.setattr(os, "replace", real_replace)
    assert (d / "latest").read_text() == old.name + "\n"
    new = d / store.file_name(T0 + datetime.timedelta(minutes=5))
    assert json.loads(new.read_text()) == {"n": 2}  # complete, only not yet "latest"
    assert leftovers(d) == []


def test_write_to_refuses_an_existing_file_unless_forced(tmp_path):
    target = tmp_path / "before.json"
    target.write_text("precious")
    with pytest.raises(SnapshotError, match="already exists; .* --force"):
        store.write_to({"n": 1}, target)
    assert target.read_text() == "precious"
    store.write_to({"n": 1}, target, force=True)
    assert json.loads(target.read_text()) == {"n": 1}
    with pytest.raises(SnapshotError, match="is a folder"):
        store.write_to({}, tmp_path)


def test_snapshot_document_is_a_report_plus_extras():
    system = SystemFacts(hostname="gpu-01", env={"PIP_INDEX_URL": "https://ci:t0ps3cret@pypi.corp.example/simple"})
    facts = Facts(system=system, envdoctor_version="0.1.0", collected_at="2026-11-29T17:30:05+00:00")
    bench = BenchResult(points=(BenchPoint(0, "bf16", 8192, tflops=640.0),))
    doc = store.snapshot_document(facts, (Finding("ED102", "error", "mismatch"),), bench, "2026-11-29T17:30:05Z")
    assert doc["schema"] == "envdoctor.report/1" and doc["summary"]["exit_code"] == 1
    assert doc["snapshot"] == {"host": "gpu-01", "created": "2026-11-29T17:30:05Z", "envdoctor_version": "0.1.0"}
    assert doc["bench"]["points"][0]["tflops"] == 640.0
    assert "t0ps3cret" not in json.dumps(doc)


def test_fixture_reads_back():
    snap = store.load(FIXTURE)
    assert snap.host == "h200-vm" and snap.created and snap.migrated_from is None
    assert snap.facts.driver.driver_version == "580.159.04"
    assert snap.facts.torch.version == "2.11.0+cu130" and snap.facts.torch.cuda_available is True
    assert store.describe(snap) == ("580.159.04", "2.11.0+cu130", ("NVIDIA H200",))
    assert snap.bench is None


def test_bench_section_reads_back(tmp_path):
    doc = fixture_doc()
    doc["bench"] = {"points": [{"device": 0, "dtype": "bf16", "n": 8192, "tflops": 640.2}]}
    (tmp_path / "b.json").write_text(json.dumps(doc))
    snap = store.load(tmp_path / "b.json")
    assert snap.bench.points[0].tflops == 640.2
    doc["bench"] = {"points": "garbage"}
    (tmp_path / "b.json").write_text(json.dumps(doc))
    snap = store.load(tmp_path / "b.json")
    assert snap.bench is None and "bench section" in snap.bench_error


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist; take a baseline with: envdoctor snapshot"),
        ("", "is empty"),
        ("   \n", "is empty"),
        (FIXTURE.read_text()[:5000], "is not valid JSON (cut short or damaged near line"),
        ("[1, 2]", "is not an envdoctor report (not a JSON object)"),
        ('{"facts": {}}', "no 'schema' key"),
        ('{"schema": "envdoctor.bench/1", "points": []}', "is an envdoctor.bench document, not a report or snapshot"),
        ('{"schema": "pip.inspect/1"}', "is a document of schema 'pip.inspect/1'"),
        ('{"schema": "envdoctor.report/2", "facts": {}}', "written by a newer envdoctor (schema envdoctor.report/2)"),
        ('{"schema": "envdoctor.report/beta", "facts": {}}', "cannot read"),
        (
            '{"schema": "envdoctor.report/1", "facts": {"driver": {"gpus": "many"}}}',
            "does not have the shape of a report",
        ),
    ],
)
def test_unusable_baselines_say_why_in_one_line(tmp_path, content, message):
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SnapshotError) as info:
        store.load(path)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert str(path) in str(info.value)


def test_a_folder_and_binary_junk_are_refused(tmp_path):
    with pytest.raises(SnapshotError, match="is a folder"):
        store.load(tmp_path)
    (tmp_path / "x.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(SnapshotError, match="not a text file"):
        store.load(tmp_path / "x.json")


def test_prerelease_format_0_is_migrated(tmp_path):
    """envdoctor.report/0 (pre-release): 'problems' instead of 'findings', host/created at the top."""
    doc = fixture_doc()
    old = {
        "schema": "envdoctor.report/0",
        "host": "gpu-01",
        "created": "2026-11-01T09:00:00Z",
        "envdoctor_version": "0.0.3",
        "facts": doc["facts"],
        "problems": [{"code": "ED102", "severity": "error", "title": "Driver upgraded without a reboot"}],
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    snap = store.load(tmp_path / "old.json")
    assert snap.migrated_from == "envdoctor.report/0"
    assert snap.host == "gpu-01" and snap.created == "2026-11-01T09:00:00Z"
    assert snap.doc["schema"] == "envdoctor.report/1" and snap.doc["summary"]["exit_code"] == 1
    assert [f.code for f in snap.findings] == ["ED102"]
    assert snap.facts.driver.driver_version == "580.159.04"


def test_migration_chain_refuses_a_broken_old_document(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({"schema": "envdoctor.report/0", "problems": "x"}))
    with pytest.raises(SnapshotError, match="cannot be converted"):
        store.load(tmp_path / "old.json")


def test_a_plain_check_report_is_a_baseline(tmp_path):
    doc = fixture_doc()
    del doc["snapshot"]
    (tmp_path / "check.json").write_text(json.dumps(doc))
    snap = store.load(tmp_path / "check.json")
    assert snap.host == "h200-vm" and snap.created == doc["collected_at"]


def test_list_marks_latest_and_unreadable(tmp_path):
    d = tmp_path
    store.save(fixture_doc(), d, T0)
    (d / store.file_name(T0 + datetime.timedelta(hours=1))).write_text('{"schema": "envdoctor.rep')
    newest = store.save(fixture_doc(), d, T0 + datetime.timedelta(hours=2))
    infos = store.list_snapshots(d)
    assert [i.latest for i in infos] == [False, False, True] and infos[-1].path == newest
    assert infos[0].driver == "580.159.04" and infos[0].gpus == ("NVIDIA H200",)
    assert infos[1].error and "not valid JSON" in infos[1].error


def test_a_fifo_named_latest_does_not_block(tmp_path):
    newest = store.save({}, tmp_path, T0)
    (tmp_path / "latest").unlink()
    os.mkfifo(tmp_path / "latest")
    assert store.latest(tmp_path) == newest  # the pointer is skipped, not read
    with pytest.raises(SnapshotError, match="named pipe"):
        store.save({}, tmp_path, T0 + datetime.timedelta(hours=1))  # and never replaced by a file


def test_a_fifo_as_baseline_is_refused_unread(tmp_path):
    os.mkfifo(tmp_path / "b.json")
    with pytest.raises(SnapshotError, match="is a named pipe \\(FIFO\\), not a regular file"):
        store.load(tmp_path / "b.json")
