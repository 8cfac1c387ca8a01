"""Forgetting an attempt of a run on an Iceberg lake: a table whose snapshot names the run keeps the run's files (a
redo of the run leaves it as it is), other tables lose them; dropping the run for good (`state reset`) is refused
while a table holds it, which would land its rows twice. A deletion refuses an Iceberg table the source's record
lacks before it changes anything (it would rewrite files the table's metadata names). Judged on a lake folder
through a storage over the local disk (the part of the storage port they use), with metadata files as Iceberg
writes them."""
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from segment_lake.catalog import TableInfo
from segment_lake.catalog_changes import table_changes
from segment_lake.deletion import UserDeletion
from segment_lake.errors import InvalidSettings
from segment_lake.iceberg_tables import RUN_PROPERTY, parse_record, record_tables, tables_committed_by
from segment_lake.layout import LakeLayout, data_file_name
from segment_lake.recovery import forget_attempt
from segment_lake.storage import FileInfo

pytestmark = pytest.mark.fast

RUN = "20240102T030000Z-0a1b2c3d"


class DiskStorage:
    """Files under ``file://`` URIs, as the storage port lists, reads and deletes them."""

    @staticmethod
    def _path(uri: str) -> Path:
        return Path(uri.removeprefix("file://"))

    def exists(self, uri):
        return self._path(uri).exists()

    def list_files(self, uri):
        root = self._path(uri)
        return [FileInfo(f"file://{p}", p.stat().st_size) for p in sorted(root.rglob("*")) if p.is_file()]

    def list_folders(self, uri):
        root = self._path(uri)
        return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []

    def read_text(self, uri):
        return self._path(uri).read_text()

    def write_text(self, uri, text):
        self._path(uri).parent.mkdir(parents=True, exist_ok=True)
        self._path(uri).write_text(text)

    def delete(self, uri, recursive=False):
        path = self._path(uri)
        if path.is_dir() and recursive:
            for child in sorted(path.rglob("*"), reverse=True):
                child.unlink() if child.is_file() else child.rmdir()
            path.rmdir()
        elif path.exists():
            os.remove(path)


def table(lake: Path, name: str, runs: list[str] | None) -> Path:
    """A table folder with one file of RUN; with ``runs``, an Iceberg table whose newest metadata has their snapshots."""
    folder = lake / "segment-data" / "data" / "src1" / f"segment_type={name}"
    (folder / "day=2024-01-02" / "hr=03").mkdir(parents=True)
    (folder / "day=2024-01-02" / "hr=03" / data_file_name(RUN, 0)).write_bytes(b"PAR1")
    if runs is not None:
        (folder / "metadata").mkdir()
        (folder / "metadata" / "00000-a.metadata.json").write_text(json.dumps({"snapshots": []}))
        (folder / "metadata" / "00001-b.metadata.json").write_text(json.dumps({"snapshots": [
            {"snapshot-id": i, "summary": {"operation": "append", RUN_PROPERTY: run}} for i, run in enumerate(runs)]}))
    return folder / "day=2024-01-02" / "hr=03" / data_file_name(RUN, 0)


def test_a_table_that_committed_the_run_keeps_its_files_and_a_reset_is_refused(tmp_path):
    layout, storage = LakeLayout(f"file://{tmp_path}", "src1"), DiskStorage()
    committed = table(tmp_path, "identify", ["older-run", RUN])
    uncommitted = table(tmp_path, "page", ["older-run"])
    parquet = table(tmp_path, "track_a", None)
    record_tables(storage, layout, {"identify": "src1.identify", "page": "src1.page"})  # as the sync does
    unrecorded = table(tmp_path, "screen", [RUN])  # a table a sync made before it recorded its tables
    assert tables_committed_by(storage, layout, RUN) == ["identify", "screen"]
    with pytest.raises(InvalidSettings, match=f"run {RUN} already committed Iceberg table identify and 1 more: dropping it "
                                              "would land their rows twice; let the next sync redo the run instead"):
        forget_attempt(storage, layout, RUN, redone=False)
    assert committed.exists() and uncommitted.exists() and parquet.exists()  # refused before anything changed
    forget_attempt(storage, layout, RUN)  # a redo of the run
    assert committed.exists() and unrecorded.exists() and not uncommitted.exists() and not parquet.exists()


def test_a_deletion_refuses_an_iceberg_table_the_record_lacks_before_anything_changes(tmp_path):
    layout, storage = LakeLayout(f"file://{tmp_path}", "src1"), DiskStorage()
    table(tmp_path, "identify", ["older-run"])
    table(tmp_path, "track_a", None)
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(InvalidSettings, match="table identify of source src1 is an Iceberg table the source's state "
                                              "does not record: run a sync of the source with --table-format iceberg"):
        UserDeletion(None, storage, layout).run(("u1",), ())
    assert sorted(p for p in tmp_path.rglob("*")) == before  # not even suppressed


def test_a_sync_in_the_other_format_is_refused_before_it_writes(tmp_path):
    """In the catalog stage, for a table of the run (on any lake); and for a local lake whose source records Iceberg
    tables, before Spark starts."""
    settings = SimpleNamespace(table_format="parquet", database="src1", date_partition="day_hour")
    env = SimpleNamespace(settings=settings, keys=["day", "hr"], table_location=lambda table: f"file:///l/{table}")
    inferred = SimpleNamespace(schemas={"identify": None}, catalog={"identify": TableInfo([], "file:///l/identify",
                                                                                         table_format="iceberg")})
    with pytest.raises(InvalidSettings, match=r"^table src1.identify is in the iceberg format, and all of a source's "
                                              r"tables share one: sync it with --table-format iceberg$"):
        table_changes(env, inferred)
    # a table partitioned by the hour of received_at, and a run whose files would each be a day
    daily = SimpleNamespace(table_format="iceberg", database="src1", date_partition="day")
    hourly = SimpleNamespace(schemas={"identify": None}, catalog={"identify": TableInfo(
        [], "file:///l/identify", table_format="iceberg", hidden_hours=True)})
    with pytest.raises(InvalidSettings, match=r"^table src1.identify is partitioned by the hour of received_at, and "
                                              r"--date-partition day writes a file a day: use day_hour or "
                                              r"year_month_day_hour$"):
        table_changes(SimpleNamespace(**{**vars(env), "settings": daily}), hourly)

    layout = LakeLayout(f"file://{tmp_path}/lake", "src1")
    (tmp_path / "input").mkdir()
    sync = [str(Path(sys.executable).with_name("segment-lake")), "sync", "--source-id", "src1", "--input", "input",
            "--lake", "lake"]
    assert parse_record("{}", "u") == {}  # no table recorded: nothing to refuse
    record_tables(DiskStorage(), layout, {"identify": "src1.identify", "page": "src1.page"})
    refused = subprocess.run(sync, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (refused.returncode, refused.stderr.strip()) == (1, "segment-lake: error (invalid_settings): table "
                                                              "src1.identify is in the iceberg format, and all of a "
                                                              "source's tables share one: sync it with --table-format "
                                                              "iceberg")
    assert not (tmp_path / "lake/segment-data/metastore").exists()  # no Spark started, nothing made
    DiskStorage().write_text(layout.state_files.iceberg_tables_uri, '{"identify": ')  # cut short
    broken = subprocess.run(sync, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert broken.returncode == 1 and len(broken.stderr.strip().splitlines()) == 1, broken.stderr
    assert broken.stderr.startswith(f"segment-lake: error (invalid_settings): {layout.state_files.iceberg_tables_uri} "
                                    "is not a record of the source's Iceberg tables ("), broken.stderr
