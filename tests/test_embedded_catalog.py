"""The embedded catalog of a local lake (embedded_catalog.py): created under a lock, and a half-created one left by a
killed run set aside."""
import subprocess
import sys
from pathlib import Path

import pytest
from lake_events import write_run1

pytestmark = pytest.mark.spark

CLI = str(Path(sys.executable).with_name("segment-lake"))


def run(*args, cwd=None):
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def test_a_catalog_left_half_created_by_a_killed_run_does_not_block_the_source(tmp_path):
    # what a kill while Derby creates the embedded catalog leaves: its folder without service.properties (or with the
    # file Derby had opened and not yet flushed, empty: created() tells it from a whole one, the last test here)
    write_run1(tmp_path / "input", "src1")
    half = tmp_path / "lake" / "segment-data" / "metastore" / "metastore_db"
    (half / "seg0").mkdir(parents=True)
    result = run("sync", "--source-id", "src1", "--input", "input/segment-logs/src1", "--lake", "lake", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "the embedded catalog was left half-created by a killed run; moved it to " in result.stderr
    assert (half / "service.properties").is_file()
    tables = run("sql", "--lake", "lake", "show tables in src1", cwd=tmp_path).stdout
    assert "src1\ttrack_order_completed\tfalse" in tables


def test_a_catalog_another_command_is_creating_is_left_alone(tmp_path):
    """A second command started while the first's Derby was still creating the catalog (no service.properties yet)
    took the folder for a killed run's and moved it away under the running first. Now a command creates the catalog
    under a lock: this holder stands in for the first command."""
    import threading

    from segment_lake.embedded_catalog import CREATION_LOCK, LAST_LINE, creation

    creating = tmp_path / "metastore_db"
    (creating / "seg0").mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys\n"
                               f"f = open({str(tmp_path / CREATION_LOCK)!r}, 'a')\n"
                               "fcntl.flock(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\nsys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    must_create = []

    def second_command():
        with creation(str(tmp_path)) as must:
            must_create.append(must)

    second = threading.Thread(target=second_command)
    second.start()
    second.join(timeout=1)
    assert second.is_alive() and must_create == []  # waits while the first creates
    (creating / "service.properties").write_text(f"derby.serviceProtocol=x\n{LAST_LINE}\n")  # the first's Derby finished
    holder.communicate("")  # and the first released the lock
    second.join(timeout=30)
    assert must_create == [False] and (creating / "seg0").is_dir()  # nothing to create, nothing moved
    assert not list(tmp_path.glob("metastore_db.half-created-*"))

    (creating / "service.properties").unlink()  # now as a run killed while creating it leaves the folder
    with creation(str(tmp_path)) as must:
        assert must is True
    assert not creating.exists() and len(list(tmp_path.glob("metastore_db.half-created-*"))) == 1


def test_a_catalog_counts_as_created_once_derby_wrote_its_service_properties_whole(spark, tmp_path):
    import shutil

    from segment_lake.embedded_catalog import DATABASE, created, creation

    # the tests' session's catalog, made by Derby (the warehouse folder is beside metastore_db)
    store = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")).parent
    assert created(str(store))
    whole = (store / DATABASE / "service.properties").read_text()
    copy = tmp_path / DATABASE
    copy.mkdir()
    for cut in ("", whole[: len(whole) // 2], whole.rstrip()[:-1]):  # killed before, during and at the end of a flush
        (copy / "service.properties").write_text(cut)
        assert not created(str(tmp_path)), cut
    shutil.copy(store / DATABASE / "service.properties", copy / "service.propertiesold")  # Derby rewriting the file
    assert created(str(tmp_path))
    (copy / "service.propertiesold").unlink()
    (copy / "service.properties").write_text("")  # as the kill harness's killed run left it: set aside, created anew
    with creation(str(tmp_path)) as must_create:
        assert must_create is True and not copy.exists()
    assert len(list(tmp_path.glob(f"{DATABASE}.half-created-*"))) == 1
