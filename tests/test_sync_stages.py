"""Each stage of the sync on tiny DataFrames: route, cast and write, dedup, publish, Glue batching."""
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from segment_lake.dedup import duplicate_rows
from segment_lake.field_codec import ENCODE, register_codec
from segment_lake.parse import parse_lines
from segment_lake.publish import move_files
from segment_lake.route import partition_keys
from segment_lake.state import SourceState
from segment_lake.storage import LakeStorage, join
from segment_lake.write import DATA, DISCARDS, LANDED, write_tables
from segment_lake_contract import DEDUP_WINDOW_DAYS

pytestmark = [pytest.mark.fast, pytest.mark.spark, pytest.mark.aws]

# the parse stage's rows, with the fields as a map of kind-tagged text (encoded as the parser does)
EVENTS_SCHEMA = ("table string, day string, _message_id string, _received_at timestamp, fields map<string,string>, "
                 "discards array<struct<column:string,value:string,reason:string>>")


def _write(spark, tmp_path, rows, columns, max_records_per_file=100, max_columns=5000):
    """write_tables on ``rows`` (EVENTS_SCHEMA) in two tasks; returns the files written and their rows (as dicts)."""
    register_codec(spark)
    frame = (spark.createDataFrame(rows, EVENTS_SCHEMA).repartition(2)
             .select("table", F.concat(F.lit("day="), "day").alias("partition"), "_message_id", "_received_at",
                     F.expr(f"{ENCODE}(fields)").alias("fields"), "discards"))
    written = write_tables(frame, columns, ["day"], f"file://{tmp_path}/stage", max_records_per_file,
                           max_columns)
    read = {kind: [r.asDict() for f in written if f.kind == kind for r in spark.read.parquet(f.uri).collect()]
            for kind in (DATA, DISCARDS, LANDED)}
    return written, read


@pytest.mark.parametrize("encoded,target,expected", [
    ("i5", "bigint", 5), ("s5", "bigint", 5), ("d5.0", "bigint", 5), ("d5.5", "bigint", None), ("sabc", "bigint", None),
    (f"d{2**63}", "bigint", None), ("btrue", "bigint", None), ("s 7 ", "bigint", 7),
    ("i5", "decimal(38,6)", "5.000000"), ("d1.25", "decimal(38,6)", "1.250000"), ("s2.5", "decimal(38,6)", "2.500000"),
    ("d0.1234567", "decimal(38,6)", "0.123457"), ("sx", "decimal(38,6)", None),
    ("btrue", "boolean", True), ("strue", "boolean", True), ("sFALSE", "boolean", False), ("syes", "boolean", None),
    ("i1", "boolean", None),
    ("t2024-01-02 03:04:05.000000\x1f2024-01-02T03:04:05Z", "timestamp", datetime(2024, 1, 2, 3, 4, 5)),
    ("t2024-01-02 03:04:05.250000\x1f2024-01-02T03:04:05.25Z", "timestamp", datetime(2024, 1, 2, 3, 4, 5, 250000)),
    ("t1850-01-02 03:04:05.000000\x1f1850-01-02T03:04:05Z", "timestamp", datetime(1850, 1, 2, 3, 4, 5)),
    ("syesterday", "timestamp", None), ("i1700000000", "timestamp", None),
    ("t2024-01-02 03:04:05.000000\x1f2024-01-02T03:04:05Z", "string", "2024-01-02T03:04:05Z"),
    ("btrue", "string", "true"), ("i7", "string", "7"), ('s["a"]', "string", '["a"]'),
])
def test_cast_is_lossless_or_null(spark, tmp_path, encoded, target, expected):
    _, read = _write(spark, tmp_path, [("t", "2024-01-02", "m", datetime(2024, 1, 2), {"v": encoded}, [])],
                     {"t": [("v", target)]})
    value = read[DATA][0]["v"]
    assert (str(value) if target.startswith("decimal") and value is not None else value) == expected
    assert len(read[DISCARDS]) == (1 if expected is None else 0)


def test_the_writer_discards_what_does_not_fit_and_splits_tables_and_partitions(spark, tmp_path):
    t = datetime(2024, 1, 2, 3)
    rows = [("a", "2024-01-02", f"m{i}", t, {"x": f"i{i}", "day": "sMonday"}, []) for i in range(5)]
    rows += [("a", "2024-01-03", "m5", t, {"x": "sx"}, [("k", "1", "parse reason")]),
             ("b", "2024-01-02", "m6", t, {"y": "strue", "z": None}, [])]
    written, read = _write(spark, tmp_path, rows, {"a": [("x", "bigint")], "b": [("y", "boolean"), ("z", "string")]},
                           max_records_per_file=2)
    data = sorted((f.table, f.partition, f.rows) for f in written if f.kind == DATA)
    assert data == [("a", "day=2024-01-02", 1), ("a", "day=2024-01-02", 2), ("a", "day=2024-01-02", 2),
                    ("a", "day=2024-01-03", 1), ("b", "day=2024-01-02", 1)]
    assert sorted(read[DATA], key=lambda r: str(r)) == sorted(
        [{"x": i} for i in range(5)] + [{"x": None}, {"y": True, "z": None}], key=lambda r: str(r))
    discards = sorted((d["table_name"], d["column_name"], d["message_id"], d["value"], d["reason"]) for d in read[DISCARDS])
    assert discards == sorted([("a", "day", f"m{i}", "Monday", "column name is a partition key of the table") for i in range(5)]
                              + [("a", "k", "m5", "1", "parse reason"),
                                 ("a", "x", "m5", "x", "cannot be stored in a bigint column without loss")])
    assert sorted((r["message_id"], r["received_at"]) for r in read[LANDED]) == [(f"m{i}", t) for i in range(7)]


def test_a_table_at_its_column_limit_discards_the_values_of_columns_it_could_not_take(spark, tmp_path):
    t = datetime(2024, 1, 2, 3)
    rows = [("a", "2024-01-02", "m1", t, {"x": "i1", "extra": "sv", "more": "i2"}, [])]
    _, read = _write(spark, tmp_path, rows, {"a": [("x", "bigint")]}, max_columns=1)
    assert read[DATA] == [{"x": 1}]
    assert sorted((d["column_name"], d["value"], d["reason"]) for d in read[DISCARDS]) == [
        ("extra", "v", "the table has its limit of 1 columns (--max-columns-per-table)"),
        ("more", "2", "the table has its limit of 1 columns (--max-columns-per-table)")]
    with pytest.raises(Exception, match="is not in the schema of a"):  # below the limit: a bug
        _write(spark, tmp_path / "below", rows, {"a": [("x", "bigint")]}, max_columns=5)


def _dictionary_columns(spark, uri):
    """The columns of a Parquet file written with a dictionary, read from its footer."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(jvm.org.apache.hadoop.fs.Path(uri), conf)
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source)
    try:
        chunks = [chunk for block in reader.getFooter().getBlocks() for chunk in block.getColumns()]
        return {chunk.getPath().toDotString() for chunk in chunks
                if any("DICTIONARY" in encoding.name() for encoding in chunk.getEncodings())}
    finally:
        reader.close()


def test_per_event_columns_are_written_without_a_dictionary(spark, tmp_path):
    t = datetime(2024, 1, 2, 3)
    rows = [("a", "2024-01-02", f"m{i}", t, {"message_id": f"sm{i}", "sent_at": "t2024-01-02 03:04:05.000000\x1fx",
                                             "channel": "sserver"}, []) for i in range(50)]
    written, _ = _write(spark, tmp_path, rows, {"a": [("message_id", "string"), ("sent_at", "timestamp"),
                                                      ("channel", "string")]})
    for file in written:
        assert _dictionary_columns(spark, file.uri) == ({"channel"} if file.kind == DATA else set())


def _ids(spark, rows):
    """Dedup's input: (_row, _message_id, _received_at, file), all in table "t"."""
    return spark.createDataFrame([(*row, "t") for row in rows],
                                 "_row long, _message_id string, _received_at timestamp, file string, table string")


def _dropped(spark, rows, landed=None, run_id="run1"):
    return sorted(r["_row"] for r in duplicate_rows(_ids(spark, rows), landed, run_id).collect())


def test_dedup_in_a_run_keeps_the_first_in_received_at_order_then_file_then_line(spark):
    t = datetime(2024, 1, 2, 3)
    assert _dropped(spark, [(1, "m", t.replace(minute=5), "a"), (2, "m", t, "b"), (3, "n", t, "a"),
                            (4, "o", t, "b"), (5, "o", t, "a"), (6, "o", t, "a")]) == [1, 4, 6]


def test_dedup_in_a_run_has_the_window_of_seven_days_from_the_kept_event(spark):
    day = datetime(2024, 1, 1)
    # kept on day 0; 7 days later a duplicate of it; 9 days: kept; 12 days: a duplicate of the 9th day's
    assert _dropped(spark, [(1, "m", day, "a"), (2, "m", day + timedelta(days=7), "a"),
                            (3, "m", day + timedelta(days=9), "a"), (4, "m", day + timedelta(days=12), "a")]) == [2, 4]


def test_cross_run_dedup_honours_the_window_and_the_run(spark):
    t = datetime(2024, 1, 10)
    landed = spark.createDataFrame([
        ("a", datetime(2024, 1, 4), "run1"),   # 6 days before: duplicate
        ("b", datetime(2024, 1, 2), "run1"),   # 8 days before: a new event
        ("c", datetime(2024, 1, 17), "run1"),  # 7 days after: duplicate
        ("d", t, "run2"),                      # landed by the run being redone: not a duplicate
    ], "message_id string, received_at timestamp, run_id string")
    assert _dropped(spark, [(1, "a", t, "f"), (2, "b", t, "f"), (3, "c", t, "f"), (4, "d", t, "f")],
                    landed, "run2") == [1, 3]


def test_a_duplicate_names_its_file_table_and_the_kept_event(spark):
    t = datetime(2024, 1, 10)
    landed = spark.createDataFrame([("a", datetime(2024, 1, 9), "run0")],
                                   "message_id string, received_at timestamp, run_id string")
    record = {r["_row"]: r.asDict() for r in duplicate_rows(
        _ids(spark, [(1, "a", t, "f1"), (2, "b", t, "f1"), (3, "b", t + timedelta(hours=1), "f2")]), landed, "run1").collect()}
    assert record == {
        1: {"_row": 1, "message_id": "a", "received_at": t, "table_name": "t", "file": "f1", "run_id": "run1",
            "original_run_id": "run0", "original_received_at": datetime(2024, 1, 9)},
        3: {"_row": 3, "message_id": "b", "received_at": t + timedelta(hours=1), "table_name": "t", "file": "f2",
            "run_id": "run1", "original_run_id": "run1", "original_received_at": t}}


def test_a_duplicate_repeats_the_nearest_event_kept_before_it(spark):
    day = datetime(2024, 1, 1)
    landed = spark.createDataFrame([("m", day - timedelta(days=1), "run0")],
                                   "message_id string, received_at timestamp, run_id string")
    # kept: day -1 (run0) and day 7 (8 days after it); day 6 repeats day -1's, not day 7's (kept after it)
    events = [(1, "m", day + timedelta(days=6), "a"), (2, "m", day + timedelta(days=7), "a"),
              (3, "m", day + timedelta(days=8), "a")]
    record = {r["_row"]: (r["original_run_id"], r["original_received_at"])
              for r in duplicate_rows(_ids(spark, events), landed, "run1").collect()}
    assert record == {1: ("run0", day - timedelta(days=1)), 3: ("run1", day + timedelta(days=7))}


def test_a_long_run_of_redeliveries_keeps_one(spark):
    t = datetime(2024, 1, 1)
    assert len(_dropped(spark, [(n, "m", t + timedelta(seconds=n), "a") for n in range(3000)])) == 2999


def test_the_duplicates_record_keeps_the_runs_of_the_dedup_window(spark, tmp_path):
    storage = LakeStorage(spark)
    state = SourceState(storage, f"file://{tmp_path}/state")
    runs = ["20240101T000000Z-aaaa", "20240108T000000Z-bbbb", "20240108T060000Z-cccc"]
    for run in runs:
        storage.write_text(join(state.duplicates_uri, f"part-{run}-00000.snappy.parquet"), "x")
    state.prune_duplicates(datetime(2024, 1, 8, 3))
    assert [f.uri.rsplit("/", 1)[-1] for f in storage.list_files(state.duplicates_uri)] == [
        "part-20240108T060000Z-cccc-00000.snappy.parquet"]


def _model_kept(events):
    """The dedup rule, independently: walk (row, id, at, file) in (at, file, row) order; keep an event
    unless a kept one with its id is at most 7 days away."""
    kept: dict[str, list[datetime]] = {}
    rows = set()
    for row, message_id, at, _ in sorted(events, key=lambda e: (e[2], e[3], e[0])):
        if not any(abs(at - k) <= timedelta(days=DEDUP_WINDOW_DAYS) for k in kept.get(message_id, [])):
            kept.setdefault(message_id, []).append(at)
            rows.add(row)
    return rows


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 40)), min_size=1, max_size=14),
       st.integers(1, 3), st.data())
def test_the_landed_set_does_not_depend_on_how_files_are_split_into_runs(spark, drawn, per_file, data):
    """Events every 12 hours (ties and exact 7-day gaps are common) in files in receivedAt order (their
    lines in any order), split into runs at random file boundaries; each run deduplicates against what
    the earlier ones landed."""
    ordered = sorted(drawn, key=lambda e: e[1])
    events = [(row, message_id, datetime(2024, 1, 1) + timedelta(hours=12 * half_days), f"f{row // per_file:03d}")
              for row, (message_id, half_days) in enumerate(ordered)]
    # within a file, lines need not be in receivedAt order: renumber them in a drawn order
    for start in range(0, len(events), per_file):
        lines = data.draw(st.permutations(range(start, min(start + per_file, len(events)))))
        for line, index in zip(lines, range(start, start + len(lines)), strict=True):
            events[index] = (line, *events[index][1:])
    files = sorted({e[3] for e in events})
    cuts = sorted(data.draw(st.sets(st.integers(1, len(files) - 1), max_size=3)) if len(files) > 1 else [])
    runs = [files[a:b] for a, b in zip([0, *cuts], [*cuts, len(files)], strict=True)]
    landed_rows, index = set(), []
    for number, run_files in enumerate(runs):
        run_events = [e for e in events if e[3] in run_files]
        landed = spark.createDataFrame(index, "message_id string, received_at timestamp, run_id string") if index else None
        dropped = _dropped(spark, run_events, landed, f"run{number}")
        kept = [e for e in run_events if e[0] not in dropped]
        landed_rows.update(e[0] for e in kept)
        index += [(e[1], e[2], f"run{number}") for e in kept]
    assert landed_rows == _model_kept(events)


@pytest.mark.parametrize("option,expected", [
    ("day_hour", "day=2024-01-02/hr=23"),
    ("year_month_day_hour", "year=2024/month=01/day=02/hr=23"),
    ("year_month_day", "year=2024/month=01/day=02"),
    ("day", "day=2024-01-02"),
])
def test_route_names_tables_and_partitions_by_received_at_in_utc(spark, option, expected):
    line = '{"type":"track","event":"Order Completed","messageId":"m","receivedAt":"2024-01-03T00:59:00+01:00"}'
    lines = spark.createDataFrame([(line, "f", None)], "value string, file string, unreadable string")
    row = parse_lines(lines, "ios_", option, 1).first()
    assert row["table"] == "ios_track_order_completed"
    assert row["partition"] == expected
    assert [part.split("=")[0] for part in expected.split("/")] == partition_keys(option)


def test_publish_renames_per_run_and_a_redo_replaces_a_crashed_attempt(spark, tmp_path):
    storage = LakeStorage(spark)
    rows = [("t", "2024-01-02", f"m{i}", datetime(2024, 1, 2), {"n": f"i{i}"}, []) for i in range(10)]
    target = f"file://{tmp_path}/table"
    for attempt in range(2):
        written, _ = _write(spark, tmp_path / f"attempt{attempt}", rows, {"t": [("n", "bigint")]}, max_records_per_file=3)
        written = [f for f in written if f.kind == DATA]
        if attempt == 1:
            written = written[:2]  # the redo writes fewer files than the crashed attempt left
        move_files(storage, written, lambda f: join(target, f.partition), "run-1", redo=attempt == 1)
    names = sorted(f.uri.rsplit("/", 1)[-1] for f in storage.list_files(target))
    assert names == [f"part-run-1-{i:05d}.snappy.parquet" for i in range(2)]
    assert spark.read.parquet(target).count() == sum(f.rows for f in written)


def test_glue_adds_only_missing_partitions_in_batches(glue_client):
    from segment_lake.catalog import TableChange
    from segment_lake.catalog.glue import GlueCatalog

    catalog = GlueCatalog(glue_client)
    assert catalog.ensure_database("batches") is True
    assert catalog.ensure_database("batches") is False
    partitions = [(f"2024-01-{d:02d}", f"{h:02d}") for d in range(1, 12) for h in range(24)]  # 264
    change = TableChange("t", (("a", "bigint"),), ("day", "hr"), tuple(partitions),
                         "s3a://b/segment-data/data/s/segment_type=t")
    catalog.create_table("batches", change)
    calls = []
    original = glue_client.batch_create_partition
    glue_client.batch_create_partition = lambda **kw: calls.append(len(kw["PartitionInputList"])) or original(**kw)
    try:
        assert catalog.add_partitions("batches", change, change.columns) == 264
        assert calls == [100, 100, 64]
        more = TableChange("t", change.columns, change.keys, (*partitions, ("2024-02-01", "00")), change.location)
        assert catalog.add_partitions("batches", more, change.columns) == 1
        assert calls == [100, 100, 64, 1]
        added = glue_client.get_partition(DatabaseName="batches", TableName="t", PartitionValues=["2024-02-01", "00"])
        assert added["Partition"]["StorageDescriptor"]["Location"] == (
            "s3://b/segment-data/data/s/segment_type=t/day=2024-02-01/hr=00")
    finally:
        glue_client.batch_create_partition = original
    table = glue_client.get_table(DatabaseName="batches", Name="t")["Table"]
    assert table["StorageDescriptor"]["Location"] == "s3://b/segment-data/data/s/segment_type=t"
    # a run that adds a column to a partition that exists gives that partition the table's column list (Hive reads
    # a partition through its own); partitions it did not write keep theirs, their files lack the column
    catalog.register("batches", [TableChange("t", (("a", "bigint"), ("b", "string")), change.keys,
                                             (("2024-01-01", "00"),), change.location)])
    assert catalog.tables_columns("batches", ["t", "u"]) == {"t": [("a", "bigint"), ("b", "string")], "u": None}

    def columns(*values):
        partition = glue_client.get_partition(DatabaseName="batches", TableName="t", PartitionValues=list(values))
        return [(c["Name"], c["Type"]) for c in partition["Partition"]["StorageDescriptor"]["Columns"]]

    assert columns("2024-01-01", "00") == [("a", "bigint"), ("b", "string")]
    assert columns("2024-01-01", "01") == [("a", "bigint")]
    # a compaction's switch of location gives the partition the table's columns too
    catalog.set_partition_locations("batches", "t", change.keys, {("2024-01-01", "01"): "s3a://b/merged/x"})
    assert columns("2024-01-01", "01") == [("a", "bigint"), ("b", "string")]
    assert glue_client.get_partition(DatabaseName="batches", TableName="t", PartitionValues=["2024-01-01", "01"])[
        "Partition"]["StorageDescriptor"]["Location"] == "s3://b/merged/x"


def test_a_denied_catalog_call_is_reported_as_insufficient_permissions(spark, tmp_path):
    import json

    import boto3
    from botocore.stub import Stubber
    from lake_events import write_run1

    from segment_lake.catalog.glue import GlueCatalog
    from segment_lake.settings import SyncSettings
    from segment_lake.sync import Sync

    client = boto3.client("glue", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(client)
    for _ in range(3):  # the run's report (sync_reports), the source's database, the failed run's report again
        stubber.add_client_error("get_database", service_error_code="AccessDeniedException",
                                 service_message="User is not authorized to perform: glue:GetDatabase",
                                 http_status_code=403)
    write_run1(tmp_path / "input", "src1")
    settings = SyncSettings(source_id="src1", input_uri=f"{tmp_path}/input", lake_uri=f"{tmp_path}/lake",
                            glue_database="denied", catalog="glue")
    with stubber, pytest.raises(Exception, match="AccessDeniedException"):
        Sync(spark, settings, GlueCatalog(client), progress=lambda line: None).run()
    [report] = (tmp_path / "lake" / "segment-data" / "reports").rglob("report.json")
    source = json.loads(report.read_text().splitlines()[0])
    assert source["status"] == "failed" and source["error_code"] == "insufficient_permissions"
    assert source["error"] == ("access denied to GetDatabase: User is not authorized to perform: glue:GetDatabase; "
                               "give the EMR instance role this action on this resource")
    assert source["read_count"] == 19  # what the run had counted before it failed


def test_no_catalog_write_when_nothing_changed(spark, glue_client, tmp_path):
    import json

    from segment_lake.catalog.glue import GlueCatalog
    from segment_lake.settings import SyncSettings
    from segment_lake.sync import Sync

    day = tmp_path / "input" / "1704153600000"
    day.mkdir(parents=True)
    line = {"type": "identify", "messageId": "a", "receivedAt": "2024-01-02T05:00:00Z", "traits": {"age": 1}}
    (day / "1.json").write_text(json.dumps(line) + "\n")
    settings = SyncSettings(source_id="quiet", input_uri=str(tmp_path / "input"), lake_uri=str(tmp_path / "lake"),
                            glue_database="quiet", catalog="glue")
    Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()

    writes = []
    watched = ("create_database", "create_table", "update_table", "batch_create_partition", "create_partition")
    originals = {name: getattr(glue_client, name) for name in watched}
    for name in watched:
        setattr(glue_client, name, lambda *a, _name=name, **k: writes.append((_name, k.get("TableName")))
                or originals[_name](*a, **k))
    try:
        (day / "2.json").write_text(json.dumps(dict(line, messageId="b", traits={"age": 2})) + "\n")
        result = Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()
    finally:
        for name, original in originals.items():
            setattr(glue_client, name, original)
    assert result.row_count == 1
    # same columns, same partition: Glue is only read, but for the new run's report
    assert writes == [("batch_create_partition", "sync_reports")]


@pytest.mark.parametrize("slug_or_id,prefix,database,table", [
    ("iOS Prod", "ios", "ios_prod", "ios_identify"), ("web-app", "web_", "web_app", "web_identify"),
    ("Src9", "", "src9", "identify"), ("shop__eu", "x1", "shop__eu", "x1_identify"),
])
def test_names_as_segment_documents_them(spark, glue_client, tmp_path, slug_or_id, prefix, database, table):
    from segment_lake.catalog.glue import GlueCatalog
    from segment_lake.settings import SyncSettings
    from segment_lake.sync import Sync

    _one_event(tmp_path)
    settings = SyncSettings(source_id="n1", source_slug=slug_or_id, input_uri=str(tmp_path / "input"),
                            lake_uri=str(tmp_path / "lake"), table_prefix=prefix, catalog="glue")
    result = Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()
    assert (result.database, [t.table_name for t in result.tables]) == (database, [table])
    assert glue_client.get_table(DatabaseName=database, Name=table)["Table"]["StorageDescriptor"]["Location"].endswith(
        "/segment_type=identify")


def test_names_of_an_earlier_version_are_refused_not_forked(spark, glue_client, tmp_path):
    from segment_lake.catalog.glue import GlueCatalog
    from segment_lake.errors import InvalidSettings
    from segment_lake.settings import SyncSettings
    from segment_lake.sync import Sync

    _one_event(tmp_path)
    glue_client.create_database(DatabaseInput={"Name": "i_os_legacy"})  # how "iOS Legacy" was named before
    settings = SyncSettings(source_id="n2", source_slug="iOS Legacy", input_uri=str(tmp_path / "input"),
                            lake_uri=str(tmp_path / "lake"), catalog="glue")
    with pytest.raises(InvalidSettings, match="has database 'i_os_legacy'.*pass --glue-database i_os_legacy"):
        Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()
    assert "ios_legacy" not in {d["Name"] for d in glue_client.get_databases()["DatabaseList"]}

    glue_client.create_database(DatabaseInput={"Name": "prefixed"})
    glue_client.create_table(DatabaseName="prefixed", TableInput={  # prefix "mob", joined bare
        "Name": "mobidentify", "StorageDescriptor": {"Columns": [{"Name": "traits_age", "Type": "bigint"}]}})
    settings = SyncSettings(source_id="n3", glue_database="prefixed", table_prefix="mob",
                            input_uri=str(tmp_path / "input"), lake_uri=str(tmp_path / "lake2"), catalog="glue")
    with pytest.raises(InvalidSettings, match="has 'mobidentify'.*without the '_' after prefix 'mob'.*'mob_identify'"):
        Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()
    assert [t["Name"] for t in glue_client.get_tables(DatabaseName="prefixed")["TableList"]] == ["mobidentify"]


def _one_event(tmp_path):
    import json

    day = tmp_path / "input" / "1704153600000"
    day.mkdir(parents=True, exist_ok=True)
    line = {"type": "identify", "messageId": "a", "receivedAt": "2024-01-02T05:00:00Z", "traits": {"age": 1}}
    (day / "1.json").write_text(json.dumps(line) + "\n")
