"""Deleting users: every row of theirs goes from the tables, the discarded values and the duplicates' record, only the
files holding them change, the ids stay suppressed, and a crash at any write leaves each file whole."""
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import deletion_crash_points
import pytest
from crash_points import SMALL
from lake_events import event
from recording_environment import Died, ForwardingStorage
from sync_harness import Lake, make_catalog

from segment_lake.deletion import Journal, Rewrite, UserDeletion, deletion_report, users_rows
from segment_lake.state import SourceState
from segment_lake.suppression import SuppressionList

pytestmark = [pytest.mark.spark, pytest.mark.aws]

CLI = str(Path(sys.executable).with_name("segment-lake"))


def _write(folder: Path, name: str, events: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(e) + "\n" for e in events))


def test_users_rows_matches_ids_as_text_and_skips_absent_columns(spark):
    frame = spark.createDataFrame([("u1", None), ("u2", "a1"), (None, "a2"), ("42", None)],
                                  "user_id string, anonymous_id string")
    matched = frame.where(users_rows(frame.schema, ("u1", "42"), ("a1",))).collect()
    assert sorted(r["user_id"] for r in matched) == ["42", "u1", "u2"]
    numbers = spark.createDataFrame([(42,), (7,)], "user_id bigint")
    assert numbers.where(users_rows(numbers.schema, ("42",), ("a1",))).count() == 1
    assert numbers.where(users_rows(numbers.schema, (), ("a1",))).count() == 0  # no anonymous_id column: nobody's
    decimals = spark.createDataFrame([(Decimal("7.000000"),), (Decimal("7.500000"),)], "user_id decimal(38,6)")
    assert [r[0] for r in decimals.where(users_rows(decimals.schema, ("7", "abc"), ())).collect()] == [Decimal("7")]


def test_the_journal_round_trips_and_the_report_sums_it():
    journal = Journal("d1", "src", "2024-05-01T00:00:00+00:00", ("u1",), ("a1",), (
        Rewrite("page", "file:/l/a.parquet", "file:/s/a.parquet", 2), Rewrite("page", "file:/l/b.parquet", None, 1),
        Rewrite("identify", "file:/l/c.parquet", None, 1), Rewrite("discards", "file:/l/d.parquet", None, 3),
        Rewrite("duplicates", "file:/l/e.parquet", "file:/s/e.parquet", 1)))
    assert Journal.from_json(journal.to_json()) == journal
    from datetime import UTC, datetime
    report = deletion_report(journal, datetime(2024, 5, 1, 0, 1, tzinfo=UTC))
    assert (report.rows_deleted, report.tables, report.discarded_values_deleted, report.duplicates_deleted,
            report.files_rewritten, report.files_removed) == (4, {"identify": 1, "page": 3}, 3, 1, 2, 3)


def test_delete_users_removes_every_row_of_theirs_and_nothing_else(spark, tmp_path):
    day = tmp_path / "input" / "1704153600000"
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input", "del1", "deletion_db")
    _write(day, "1.json", [
        event("identify", "m1", "2024-01-02T01:00:00Z", userId="u1", traits={"email": "u1@example.com"}),
        event("track", "m2", "2024-01-02T01:05:00Z", event="Signed Up", userId="u1"),
        event("page", "m3", "2024-01-02T01:10:00Z", userId="u2", properties={"count": 1}),
        event("page", "m4", "2024-01-02T01:15:00Z", userId="u1"),
        event("page", "m5", "2024-01-02T01:20:00Z", anonymousId="a1"),
        event("track", "m7", "2024-01-02T01:25:00Z", event="Numeric", userId=7),  # a bigint user_id column
    ])
    lake.sync()
    _write(day, "2.json", [
        event("track", "m2", "2024-01-02T01:30:00Z", event="Signed Up", userId="u1"),  # a duplicate
        event("page", "m8", "2024-01-02T01:35:00Z", userId="u1", properties={"count": "many"}),  # a discarded value
        event("page", "m9", "2024-01-02T01:40:00Z", userId="u2", properties={"count": "lots"}),
        event("identify", "m10", "2024-01-02T01:45:00Z", userId="u2"),
        event("track", "m13", "2024-01-02T01:50:00Z", event="Numeric", userId="u1"),  # text in a bigint column
        event("page", "m14", "2024-01-02T01:55:00Z", userId="u2", properties={"color": "red"}),  # a new column
    ])
    second = lake.sync()
    assert second.duplicate_count == 1 and second.discarded_value_count == 3
    assert lake.columns("track_numeric") and dict(lake.columns("track_numeric"))["user_id"] == "bigint"
    storage = lake.storage
    untouched = {uri: Path(uri[len("file:"):]).read_bytes() for uri in lake.data_files("identify")
                 if "m10" in {r["message_id"] for r in spark.read.parquet(uri).collect()}}
    assert len(untouched) == 1
    schemas = {uri: storage.parquet_footer(uri)[0] for uri in lake.data_files("page")}
    discards = [{r["message_id"] for r in spark.read.parquet(f.uri).collect()}
                for f in storage.list_files(lake.layout.discards) if f.uri.endswith(".parquet")]
    doomed = {"m8", "m13"}  # the discards files are written one per task: count what each holds
    discards_rewritten = sum(1 for ids in discards if ids & doomed and ids - doomed)
    discards_removed = sum(1 for ids in discards if ids <= doomed)
    assert len({len(schema.fields) for schema in schemas.values()}) == 2  # the second sync's file has one more

    report = UserDeletion(spark, storage, lake.layout, progress=lambda line: None).run(("u1", "7"), ("a1",))

    assert [r["message_id"] for r in lake.rows("page")] == ["m14", "m3", "m9"]
    assert [r["message_id"] for r in lake.rows("identify")] == ["m10"]
    assert lake.rows("track_signed_up") == [] and lake.rows("track_numeric") == []
    assert [(r["message_id"], r["value"]) for r in lake.discards()] == [("m9", "lots")]
    # a rewritten file keeps its own schema (the older one does not gain the newer column)
    assert {uri: [(f.name, f.dataType) for f in storage.parquet_footer(uri)[0].fields] for uri in schemas} == {
        uri: [(f.name, f.dataType) for f in schema.fields] for uri, schema in schemas.items()}
    assert not [f for f in storage.list_files(SourceState(storage, lake.layout.state).duplicates_uri)
                if f.uri.endswith(".parquet")]
    assert {uri: Path(uri[len("file:"):]).read_bytes() for uri in untouched} == untouched  # only affected files change
    assert (report.rows_deleted, report.tables, report.discarded_values_deleted,
            report.duplicates_deleted, report.files_rewritten, report.files_removed) == (
        7, {"identify": 1, "page": 3, "track_numeric": 2, "track_signed_up": 1}, 2, 1, 2 + discards_rewritten,
        4 + 1 + discards_removed)  # tables: page twice rewritten, four files removed; the duplicates' one removed
    written = json.loads(storage.read_text(lake.layout.deletion_report(report.deletion_id)))
    assert written == json.loads(report.to_json())
    assert not storage.exists(SourceState(storage, lake.layout.state).deletion_uri)
    assert not storage.exists(SourceState(storage, lake.layout.state).deletion_stage_uri)
    # the catalog reads the rewritten tables
    assert [r[0] for r in spark.sql("select message_id from deletion_db.page order by 1").collect()] == [
        "m14", "m3", "m9"]

    # deletion implies suppression: the same users' events delivered again do not land
    suppressed = SuppressionList(storage, SourceState(storage, lake.layout.state).suppressed_uri).read()
    assert set(suppressed.user_ids) == {"u1", "7"} and set(suppressed.anonymous_ids) == {"a1"}
    _write(day, "3.json", [event("page", "m4", "2024-01-02T09:15:00Z", userId="u1"),
                           event("page", "m11", "2024-01-02T09:20:00Z", anonymousId="a1"),
                           event("page", "m12", "2024-01-02T09:25:00Z", userId="u2")])
    third = lake.sync()
    assert (third.suppressed_count, third.row_count) == (2, 1)
    assert [r["message_id"] for r in lake.rows("page")] == ["m12", "m14", "m3", "m9"]

    again = UserDeletion(spark, storage, lake.layout, progress=lambda line: None).run(("u1",), ())
    assert (again.rows_deleted, again.files_rewritten, again.files_removed) == (0, 0, 0)


def test_delete_users_on_s3_with_glue(spark, s3a, glue_client):
    """On S3 a file is replaced by a copy over its key (s3a), and the Glue catalog needs no change."""
    s3 = s3a("deletion-lake")

    def put(name: str, events: list[dict]) -> None:
        s3.put_object(Bucket="deletion-lake", Key=f"segment-logs/del2/1704153600000/{name}",
                      Body="".join(json.dumps(e) + "\n" for e in events).encode())

    lake = Lake(spark, make_catalog("glue", spark, glue_client), "s3", "s3a://deletion-lake",
                "s3a://deletion-lake/segment-logs/del2", "del2", "deletion_s3")
    put("1.json", [event("page", "m1", "2024-01-02T01:00:00Z", userId="u1"),
                   event("page", "m2", "2024-01-02T01:05:00Z", userId="u2"),
                   event("identify", "m3", "2024-01-02T01:10:00Z", userId="u1")])
    lake.sync()
    put("2.json", [event("page", "m4", "2024-01-02T02:00:00Z", userId="u1")])
    lake.sync()
    page_files = sorted(lake.data_files("page"))

    report = UserDeletion(spark, lake.storage, lake.layout, progress=lambda line: None).run(("u1",), ())

    assert (report.rows_deleted, report.files_rewritten, report.files_removed) == (3, 1, 2)
    assert [r["message_id"] for r in lake.rows("page")] == ["m2"]
    assert lake.rows("identify") == []
    assert sorted(lake.data_files("page")) == page_files[:1]  # the rewritten file kept its key
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="deletion-lake").get("Contents", [])
            if not o["Key"].endswith("/")]  # s3a's folder markers
    assert not [k for k in keys if k.startswith("segment-stage/") or "/deletion.json" in k or "/deletion-stage/" in k]
    assert f"segment-data/deletions/del2/{report.deletion_id}.json" in keys


class StopAfterTheJournal(ForwardingStorage):
    """Storage whose process dies right after the deletion's journal is written."""

    def write_text(self, uri, text):
        self._storage.write_text(uri, text)
        if uri.endswith("/deletion.json"):
            raise Died(uri)


def test_a_staged_file_gone_before_its_switch_is_reported_and_the_rerun_deletes(spark, tmp_path):
    _write(tmp_path / "input" / "1704153600000", "1.json", [event("page", "m1", "2024-01-02T01:00:00Z", userId="u1"),
                                                             event("page", "m2", "2024-01-02T01:05:00Z", userId="u2")])
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input", "del3", "deletion_db3")
    lake.sync()
    storage, state = lake.storage, SourceState(lake.storage, lake.layout.state)
    try:
        UserDeletion(spark, StopAfterTheJournal(storage), lake.layout, progress=lambda line: None).run(("u1",), ())
        raise AssertionError("the deletion outlived its journal")
    except Died:
        pass
    journal = Journal.from_json(storage.read_text(state.deletion_uri))
    storage.delete(state.deletion_stage_uri, recursive=True)  # by hand, say
    said = []
    report = UserDeletion(spark, storage, lake.layout, progress=said.append).run(("u1",), ())
    first = json.loads(storage.read_text(lake.layout.deletion_report(journal.deletion_id)))
    assert first["files_not_switched"] == [journal.rewrites[0].file]
    assert "still hold the users' rows" in said[1] and "run delete-users again" in said[1]
    assert report.rows_deleted == 1 and [r["message_id"] for r in lake.rows("page")] == ["m2"]


def test_a_deletion_killed_at_any_write_leaves_every_file_whole(spark, tmp_path):
    summary = deletion_crash_points.run_trials(spark, tmp_path, trials=5, events=1500, seed=5, shape=SMALL)
    assert summary["trials"] == 5 and summary["crash_points"] == 5 and summary["files_changed"] > 2


def test_the_command_needs_an_id_and_a_lake(tmp_path):
    def delete(*args):
        return subprocess.run([CLI, "delete-users", "--source-id", "src1", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)

    nobody = delete("--lake", "lake")
    assert nobody.returncode == 1
    assert nobody.stderr.strip() == ("segment-lake: error (invalid_settings): delete-users needs at least one "
                                     "--user-id or --anonymous-id")
    nowhere = delete("--lake", "missing", "--user-id", "u1")
    assert nowhere.returncode == 1
    assert nowhere.stderr.strip() == ("segment-lake: error (invalid_settings): no lake at 'missing': pass the --lake "
                                      "the syncs write to")
