"""The local JVM's class archive (class_archive.py): the first sync records it as its JVM exits, and the JVMs of later
commands map it (with -Xshare:on a JVM that cannot map its archive refuses to start)."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

CLI = str(Path(sys.executable).with_name("segment-lake"))


def test_the_first_sync_records_the_archive_and_later_commands_map_it(tmp_path):
    folder = tmp_path / "tmp"
    folder.mkdir()
    env = dict(os.environ, TMPDIR=str(folder))  # where the archive lives: none yet
    env.pop("SEGMENT_LAKE_CLASS_ARCHIVE", None)
    # a sync with nothing to sync: its JVM starts, opens the lake and records all the same (a smaller archive, and
    # make test's CPU: the commands below need no table)
    (tmp_path / "input").mkdir()
    sync = subprocess.run([CLI, "sync", "--source-id", "src1", "--input", "input", "--lake", "lake"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert sync.returncode == 0, sync.stderr[-2000:]
    assert "cds" not in sync.stderr.lower()  # the JVM's archive messages are silenced
    left = sorted(path.name for path in folder.iterdir() if "classes" in path.name)
    assert len(left) == 1 and left[0].endswith(".jsa"), left  # no marker, no partial archive left
    mapped = subprocess.run([CLI, "sql", "--lake", "lake", "select 41 + 1"], cwd=tmp_path,
                            env=dict(env, SEGMENT_LAKE_JAVA_OPTIONS="-Xshare:on"), capture_output=True, text=True,
                            timeout=600)
    assert mapped.returncode == 0 and mapped.stdout.split()[-1] == "42", mapped.stderr[-2000:]
    # Java 17 crashed (SIGSEGV) mapping the archive under Flight Recorder: with an agent the archive is not used
    profiled = subprocess.run([CLI, "sql", "--lake", "lake", "select 41 + 1"], cwd=tmp_path,
                              env=dict(env, JAVA_TOOL_OPTIONS=f"-XX:StartFlightRecording=filename={tmp_path}/"),
                              capture_output=True, text=True, timeout=600)
    assert profiled.returncode == 0 and list(tmp_path.glob("*.jfr")), profiled.stderr[-2000:]
    # the control: -Xshare:on is strict, a JVM given an archive it cannot map refuses to start (and off adds none)
    off = subprocess.run([CLI, "sql", "--lake", "lake", "select 1"], cwd=tmp_path, capture_output=True, text=True,
                         env=dict(env, SEGMENT_LAKE_CLASS_ARCHIVE="off",
                                  SEGMENT_LAKE_JAVA_OPTIONS=f"-XX:SharedArchiveFile={folder / 'none.jsa'} -Xshare:on"),
                         timeout=600)
    assert off.returncode != 0 and "none.jsa" in off.stdout + off.stderr


def test_a_spark_configuration_folder_on_the_class_path_turns_the_archive_off(tmp_path):
    # the launcher puts SPARK_CONF_DIR on the class path: a JVM told to record with a non-empty folder there failed
    # as it exited ("Cannot have non-empty directory in paths"), after the sync's verdict, on every sync
    folder, conf = tmp_path / "tmp", tmp_path / "conf"
    folder.mkdir()
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.ui.showConsoleProgress false\n")
    env = dict(os.environ, TMPDIR=str(folder), SPARK_CONF_DIR=str(conf))
    env.pop("SEGMENT_LAKE_CLASS_ARCHIVE", None)
    (tmp_path / "input").mkdir()  # nothing to sync: its JVM starts and exits all the same
    sync = subprocess.run([CLI, "sync", "--source-id", "src1", "--input", "input", "--lake", "lake"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert sync.returncode == 0, sync.stderr[-2000:]
    assert "Error occurred during initialization of VM" not in sync.stdout + sync.stderr, sync.stdout + sync.stderr
    assert not [path.name for path in folder.iterdir() if "classes" in path.name]  # no archive, marker or partial


def test_an_archive_another_user_could_have_written_is_not_mapped(tmp_path, monkeypatch):
    """The archive lives in the shared temporary folder, and a JVM runs the classes it maps."""
    from segment_lake import class_archive

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("SEGMENT_LAKE_CLASS_ARCHIVE", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    jar = tmp_path / "app.jar"
    jar.write_bytes(b"")
    archive = Path(class_archive.archive_path([str(jar)]))
    assert archive.parent == tmp_path
    archive.write_bytes(b"planted")
    archive.chmod(0o444)
    assert class_archive.java_options([str(jar)], record=False)[0] == [f"-XX:SharedArchiveFile={archive}",
                                                                      class_archive.QUIET]  # this user's own
    archive.chmod(0o666)
    assert class_archive.java_options([str(jar)], record=True) == ([], None)  # others may write it
    if os.geteuid() == 0:
        archive.chmod(0o444)
        os.chown(archive, 65534, 65534)  # another user's
        assert class_archive.java_options([str(jar)], record=True) == ([], None)
    assert archive.read_bytes() == b"planted" and not list(tmp_path.glob("*.recording"))
