"""The lake contract of docs/lake-format.md, one test per clause, on the embedded catalog, on Glue, and on S3
(s3a) with Glue, and on Iceberg tables (on the embedded catalog, in a pytest of their own:
test_contract_on_iceberg.py). Each lake is synced once per module: a first run, a second with new files,
duplicates, a type change and new columns, and a third with nothing new; the tests read what each run left
(snapshots taken between the runs). The tables' rows are read by pyarrow (parquet_reader.py), an Iceberg table's by
pyiceberg from its metadata, not by the engine that wrote them."""
import itertools
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import pytest
from iceberg_readers import spark_with_iceberg
from lake_events import RUN1_COUNTS, RUN2_COUNTS, write_run1, write_run2
from parquet_reader import file_schemas, read_rows
from sync_harness import Lake, make_catalog

pytestmark = [pytest.mark.spark, pytest.mark.aws]

ORDER_COLUMNS_RUN1 = [
    ("type", "string"), ("message_id", "string"), ("received_at", "timestamp"), ("event", "string"),
    ("user_id", "string"), ("timestamp", "timestamp"), ("sent_at", "timestamp"), ("original_timestamp", "timestamp"),
    ("context_page_url", "string"), ("integrations_all", "boolean"), ("properties_revenue", "decimal(38,6)"),
    ("properties_quantity", "bigint"), ("properties_product_id", "string"), ("properties_tags", "string"),
    ("properties_shipped_at", "timestamp"), ("properties_flag", "string"),
]
TABLES_RUN1 = {"track_order_completed", "identify", "page", "screen", "group", "alias", "track_101_account_update"}
_counter = itertools.count()


@dataclass
class Snapshot:
    """What the lake held after one run."""
    result: object
    columns: dict
    rows: dict
    discards: list
    duplicates: list
    rejected: list
    report: list
    identify_files: list
    catalog: dict


@dataclass
class Synced:
    lake: Lake
    first: Snapshot
    second: Snapshot
    third: object  # the run with nothing new
    endpoint: str | None  # moto's, for a lake on S3


def _catalog(lake, spark, glue_client):
    """The catalog's view of the identify table and the order count, as the tests compare them."""
    orders = f"select count(*) from `{lake.database}`.`track_order_completed`"
    if lake.table_format == "iceberg":  # the metastore's entry, and the partitions in the table's own metadata
        entry = spark._jsparkSession.sharedState().externalCatalog().getTable(lake.database, "identify")
        return {"type": entry.tableType().name(), "table_type": entry.properties().get("table_type").get(),
                "metadata_location": entry.properties().get("metadata_location").get(),
                "catalog_partition_keys": [k for k in entry.partitionColumnNames().mkString(",").split(",") if k],
                "partitions": sorted(f"day={r[0]['day']}/hr={r[0]['hr']}" for r in spark.sql(
                    f"select partition from `{lake.database}`.`identify`.partitions").collect()),
                "orders": spark.sql(orders).first()[0]}
    if lake.kind == "local":
        described = {r["col_name"]: r["data_type"] for r in spark.sql(
            f"DESCRIBE FORMATTED `{lake.database}`.`identify`").collect()}
        return {"type": described["Type"], "input_format": described["InputFormat"],
                "partitions": [r[0] for r in spark.sql(f"SHOW PARTITIONS `{lake.database}`.`identify`").collect()],
                "orders": spark.sql(orders).first()[0]}
    table = glue_client.get_table(DatabaseName=lake.database, Name="identify")["Table"]
    partitions = glue_client.get_partitions(DatabaseName=lake.database, TableName="identify")["Partitions"]
    return {"table": table, "partitions": partitions}


def _snapshot(lake, result, spark, glue_client, endpoint):
    tables = {t.table_name for t in result.tables} | TABLES_RUN1
    columns = {t: lake.columns(t) for t in tables | {"segment_discards"}}
    rows = {t: lake.rows(t) if lake.table_format == "iceberg" else read_rows(lake.location(t), columns[t], endpoint=endpoint)
            for t in tables}
    return Snapshot(result, columns, rows,
                    lake.discards(), lake.duplicates(), lake.rejected(), lake.report(result),
                    lake.data_files("identify"), _catalog(lake, spark, glue_client))


# the lakes the contract is checked on: Parquet on the embedded catalog, on Glue, and on S3 with Glue; Iceberg tables
# in a run whose Spark opens with Iceberg (test_contract_on_iceberg.py)
KINDS = ["iceberg"] if spark_with_iceberg() else ["local", "glue", "s3"]


@pytest.fixture(scope="module", params=KINDS)
def synced(request, spark, glue_client, tmp_path_factory):
    kind = request.param
    n = next(_counter)
    tmp_path = tmp_path_factory.mktemp(f"contract-{kind}")
    source_id = f"src{n}"
    database = f"contract_{kind}_{n}"
    endpoint = None
    if kind == "s3":
        s3, endpoint = request.getfixturevalue("s3a")(f"lake-{n}"), request.getfixturevalue("aws_endpoint")
        lake_uri, input_uri = f"s3a://lake-{n}", f"s3a://lake-{n}/segment-logs/{source_id}"
    else:
        s3, lake_uri = None, f"file://{tmp_path}/lake"
        input_uri = f"file://{tmp_path}/input/segment-logs/{source_id}"
    lake = Lake(spark, make_catalog("local" if kind == "iceberg" else kind, spark, glue_client),
                "local" if kind == "iceberg" else kind, lake_uri, input_uri, source_id, database,
                table_format="iceberg" if kind == "iceberg" else "parquet")

    def upload(write):
        if s3 is None:
            write(tmp_path / "input", source_id)
            return
        staging = tmp_path / "to-upload"
        write(staging, source_id)
        for path in staging.rglob("*"):
            if path.is_file():
                s3.upload_file(str(path), f"lake-{n}", str(path.relative_to(staging)))

    upload(write_run1)
    first = _snapshot(lake, lake.sync(), spark, glue_client, endpoint)
    upload(write_run2)
    second = _snapshot(lake, lake.sync(), spark, glue_client, endpoint)
    return Synced(lake, first, second, lake.sync(), endpoint)


def _orders(snapshot):
    return {r["message_id"]: r for r in snapshot.rows["track_order_completed"]}


def test_input_every_line_is_landed_a_duplicate_or_rejected(synced):
    first, second = synced.first.result, synced.second.result
    assert {k: getattr(first, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    assert {k: getattr(second, k) for k in RUN2_COUNTS} == RUN2_COUNTS
    for run in (first, second):
        assert run.read_count == run.row_count + run.duplicate_count + run.rejected_count


def test_where_data_lands_one_file_per_partition_named_for_the_run(synced):
    first = synced.first
    assert len(first.identify_files) == 2
    assert all(f"part-{first.result.run_id}-00000.snappy.parquet" in f for f in first.identify_files)
    m1 = _orders(first)["m1"]
    assert (m1["day"], m1["hr"]) == ("2024-01-02", "03")


def test_files_hold_the_catalog_columns_in_order_in_day_and_hour_folders(synced):
    """Read by pyarrow: each file of a table has the catalog's columns in the catalog's order (a file written before
    a column was added stops short of it), timestamps as INT96 (as Hive and Athena read them; an Iceberg table's as
    INT64 microseconds), and its folder is the partition's."""
    columns = synced.lake.columns("track_order_completed")
    schemas = file_schemas(synced.lake.location("track_order_completed"), synced.endpoint)
    assert len(schemas) >= 2
    # an Iceberg table's files hold its partition keys too, after the columns, and timestamps as Iceberg's spec has them
    iceberg = synced.lake.table_format == "iceberg"
    keys = ["day", "hr"] if iceberg else []

    def as_timestamp(column) -> bool:  # Iceberg's timestamptz: INT64 microseconds adjusted to UTC; else INT96
        if iceberg:
            return column.physical_type == "INT64" and \
                '"isAdjustedToUTC":true,"timeUnit":"microseconds"' in column.logical_type.to_json()
        return column.physical_type == "INT96"
    for path, schema in schemas.items():
        assert re.fullmatch(r"day=\d{4}-\d{2}-\d{2}/hr=\d{2}/part-[^/]+\.snappy\.parquet", path), path
        names = schema.names[:len(schema.names) - len(keys)]
        assert schema.names == [name for name, _ in columns[:len(names)]] + keys, path
        kinds = dict(columns)
        assert all(as_timestamp(schema.column(i)) for i, name in enumerate(names) if kinds[name] == "timestamp"), path
    assert {len(schema.names) - len(keys) for schema in schemas.values()} == {len(ORDER_COLUMNS_RUN1), len(columns)}


def test_tables_one_per_type_and_track_event(synced):
    first = synced.first
    assert {t.table_name for t in first.result.tables} == TABLES_RUN1
    assert [r["message_id"] for r in first.rows["track_101_account_update"]] == ["m9"]
    for table in TABLES_RUN1:
        assert len(first.rows[table]) == next(t.row_count for t in first.result.tables if t.table_name == table)
    orders = _orders(first)
    assert orders["m1"]["event"] == "Order Completed" and orders["m2"]["event"] == "order_completed"


def test_columns_flattened_in_first_seen_order(synced):
    first = synced.first
    assert first.columns["track_order_completed"] == ORDER_COLUMNS_RUN1
    assert "day" not in dict(first.columns["page"])
    m1 = _orders(first)["m1"]
    assert m1["context_page_url"] == "https://shop.example/cart"
    assert m1["properties_tags"] == '["x","y"]'
    assert m1["integrations_all"] is True


def test_types_inferred_and_values_that_do_not_fit_discarded(synced):
    first = synced.first
    identify = dict(first.columns["identify"])
    assert identify["traits_age"] == "bigint" and identify["traits_vip"] == "boolean"
    assert identify["timestamp"] == "timestamp"
    assert dict(first.columns["page"])["properties_big"] == "string"
    orders = _orders(first)
    m1 = orders["m1"]
    assert m1["properties_revenue"] == Decimal("19.990000") and orders["m2"]["properties_revenue"] == Decimal("5")
    assert m1["properties_quantity"] == 2
    assert m1["properties_flag"] == "true" and orders["m2"]["properties_flag"] == "yes"
    assert m1["received_at"] == datetime(2024, 1, 2, 3, 4, 5)
    assert m1["timestamp"] == datetime(2024, 1, 2, 3, 4)
    assert m1["properties_shipped_at"] == datetime(2024, 1, 5)
    assert orders["m10"]["properties_product_id"] == "A"
    identify_rows = first.rows["identify"]
    assert [(r["message_id"], r["traits_email"]) for r in identify_rows] == [("m11", None), ("m3", "ada@example.com")]
    assert [r["timestamp"] for r in identify_rows] == [None, None]
    assert {r["message_id"]: r["properties_big"] for r in first.rows["page"]}["m5"] == str(10**40)

    assert first.result.discarded_value_count == 4
    discards = [(d["table_name"], d["column_name"], d["message_id"], d["value"]) for d in first.discards]
    assert sorted(discards) == sorted([
        ("track_order_completed", "properties_product_id", "m10", "B"),
        ("track_order_completed", "properties." + "x" * 251, "m10", "1"),
        ("identify", "timestamp", "m11", "yesterday"),
        ("page", "day", "m12", "Monday"),
    ])
    assert all(d["reason"] and d["received_at"] for d in first.discards)
    assert first.columns["segment_discards"][:4] == [("table_name", "string"), ("column_name", "string"),
                                                     ("message_id", "string"), ("received_at", "timestamp")]


def test_schema_evolution_appends_columns_and_keeps_types(synced):
    second = synced.second
    assert second.result.discarded_value_count == 1
    assert second.columns["track_order_completed"] == ORDER_COLUMNS_RUN1 + [
        ("properties_gift_wrap", "boolean"), ("properties_note", "string")]
    orders = _orders(second)
    assert orders["m22"]["properties_gift_wrap"] is True and orders["m1"]["properties_gift_wrap"] is None
    identify = [(r["message_id"], r["traits_age"], r["traits_email"]) for r in second.rows["identify"]]
    assert identify == [("m11", None, None), ("m20", 31, None), ("m21", None, None), ("m3", 30, "ada@example.com"),
                        ("m3", None, "again@example.com")]
    assert dict(second.columns["identify"])["traits_age"] == "bigint"
    assert [d["value"] for d in second.discards if d["message_id"] == "m21"] == ["old"]
    assert {r["message_id"]: r["properties_big"] for r in second.rows["page"]}["m23"] == "5"
    assert [r["name"] for r in second.rows["screen"] if r["message_id"] == "m24"] == ["A"]


def test_dedup_by_message_id_in_a_run_and_across_runs(synced):
    assert set(_orders(synced.first)) == {"m1", "m2", "m10"}
    orders = _orders(synced.second)
    assert set(orders) == {"m1", "m2", "m10", "m22"}
    assert orders["m1"]["properties_revenue"] == Decimal("19.99")  # the duplicate did not land


def test_dropped_duplicates_are_recorded_with_the_event_they_repeat(synced):
    first, second = synced.first, synced.second
    run1, run2 = first.result.run_id, second.result.run_id
    assert [(d["message_id"], d["received_at"], d["table_name"], d["file"].rsplit("/", 1)[-1], d["run_id"],
             d["original_run_id"], d["original_received_at"]) for d in second.duplicates] == [
        ("m3", datetime(2024, 1, 2, 5, 0, 9), "identify", "a.json", run1, run1, datetime(2024, 1, 2, 5)),
        ("m1", datetime(2024, 1, 3), "track_order_completed", "c.json", run2, run1, datetime(2024, 1, 2, 3, 4, 5)),
        ("m24", datetime(2024, 1, 3, 4, 0, 1), "screen", "c.json", run2, run2, datetime(2024, 1, 3, 4))]
    for snapshot in (first, second):  # the report counts the record's rows of its run
        run = snapshot.result.run_id
        assert snapshot.result.duplicate_count == sum(d["run_id"] == run for d in snapshot.duplicates)
    assert synced.lake.columns("segment_duplicates") == [
        ("message_id", "string"), ("received_at", "timestamp"), ("table_name", "string"), ("file", "string"),
        ("run_id", "string"), ("original_run_id", "string"), ("original_received_at", "timestamp")]


def test_rejected_lines_kept_with_their_reason_and_file(synced):
    rejected = synced.first.rejected
    assert sorted(r["reason"] for r in rejected) == sorted([
        "not JSON at line 1 column 4: expecting value", "not a JSON object", "no type", "unknown type 'click'",
        "track without event", "no messageId", "no parseable receivedAt"])
    assert all(r["file"] and r["raw"] for r in rejected)
    assert sum(r["file"].endswith("b.json.gz") for r in rejected) == 2
    layout = synced.lake.layout
    assert synced.lake.storage.exists(layout.rejected_of_run(synced.first.result.run_id))
    assert not synced.lake.storage.exists(layout.rejected_of_run(synced.second.result.run_id))  # it rejected nothing


def test_catalog_registers_external_partitioned_tables(synced):
    lake, catalog = synced.lake, synced.first.catalog
    if lake.table_format == "iceberg":  # an Iceberg table in the metastore, its partitions in its own metadata
        assert (catalog["type"], catalog["table_type"]) == ("EXTERNAL", "ICEBERG")
        assert catalog["metadata_location"].startswith(lake.location("identify").replace("file://", "file:") + "/metadata/")
        assert catalog["catalog_partition_keys"] == []
        assert catalog["partitions"] == ["day=2024-01-02/hr=05", "day=2024-01-02/hr=07"]
        assert catalog["orders"] == 3
        return
    if lake.kind == "local":
        assert catalog["type"] == "EXTERNAL"
        assert "parquet" in catalog["input_format"].lower()
        assert catalog["partitions"] == ["day=2024-01-02/hr=05", "day=2024-01-02/hr=07"]
        assert catalog["orders"] == 3
        return
    table = catalog["table"]
    assert table["TableType"] == "EXTERNAL_TABLE"
    assert [k["Name"] for k in table["PartitionKeys"]] == ["day", "hr"]
    location = table["StorageDescriptor"]["Location"]
    assert location.endswith(f"/segment-data/data/{lake.source_id}/segment_type=identify")
    if lake.kind == "s3":
        assert location.startswith("s3://")
    partitions = catalog["partitions"]
    assert sorted(tuple(p["Values"]) for p in partitions) == [("2024-01-02", "05"), ("2024-01-02", "07")]
    assert all(p["StorageDescriptor"]["Location"].startswith(location) for p in partitions)


def test_report_a_source_line_and_one_line_per_table(synced):
    first = synced.first
    source, events = first.report[0], {line["table_name"]: line for line in first.report[1:]}
    assert source["type"] == "source" and source["status"] == "finished" and source["error"] is None
    assert {k: source[k] for k in RUN1_COUNTS} == RUN1_COUNTS
    assert source["discarded_value_count"] == 4 and source["database"] == synced.lake.database
    assert set(events) == TABLES_RUN1
    assert events["track_order_completed"]["row_count"] == 3 and events["track_order_completed"]["is_new"] is True
    assert events["identify"]["partitions"] == ["day=2024-01-02/hr=05", "day=2024-01-02/hr=07"]
    assert events["track_order_completed"]["new_columns"] == [c for c, _ in ORDER_COLUMNS_RUN1]
    second = {line["table_name"]: line for line in synced.second.report[1:]}
    assert second["track_order_completed"]["new_columns"] == ["properties_gift_wrap", "properties_note"]
    assert second["track_order_completed"]["is_new"] is False


def test_reports_registered_in_sync_reports_one_partition_per_run(synced):
    """Every run's report is a partition (source_id, day, run_id) of __segment_datalake.sync_reports, as Athena
    reads it on Glue; on the embedded catalog Spark SQL answers from it."""
    lake = synced.lake
    runs = [synced.first.result, synced.second.result, synced.third]
    expected = {(lake.source_id, r.start_time.strftime("%Y-%m-%d"), r.run_id): r.row_count for r in runs}
    if lake.kind == "local":
        rows = lake.spark.sql(
            "select source_id, day, run_id, row_count from __segment_datalake.sync_reports "
            f"where source_id = '{lake.source_id}' and type = 'source' and run_id in "
            f"({', '.join(repr(r.run_id) for r in runs)})").collect()  # other tests' syncs share the table
        assert {(r[0], r[1], r[2]): r[3] for r in rows} == expected
        return
    glue = lake.catalog.glue
    table = glue.get_table(DatabaseName="__segment_datalake", Name="sync_reports")["Table"]
    assert [k["Name"] for k in table["PartitionKeys"]] == ["source_id", "day", "run_id"]
    assert table["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"] == "org.openx.data.jsonserde.JsonSerDe"
    # the table is shared: other tests' sources (some with this source id) have partitions too
    partitions = [p for p in glue.get_partitions(DatabaseName="__segment_datalake", TableName="sync_reports",
                                                 Expression=f"source_id = '{lake.source_id}'")["Partitions"]
                  if p["Values"][2] in {r.run_id for r in runs}]
    assert {tuple(p["Values"]) for p in partitions} == set(expected)
    for partition in partitions:  # each points at its run's report, in s3:// form on S3
        location = partition["StorageDescriptor"]["Location"]
        run_id = partition["Values"][2]
        result = next(r for r in runs if r.run_id == run_id)
        assert location == lake.layout.report(run_id, result.start_time).rsplit("/", 1)[0].replace("s3a://", "s3://")
        source_line = lake.spark.read.json(location.replace("s3://", "s3a://")).where("type = 'source'").first()
        assert source_line["row_count"] == expected[tuple(partition["Values"])]


def test_exactly_once_a_run_with_nothing_new_lands_nothing(synced):
    third = synced.third
    assert (third.read_count, third.row_count, third.tables) == (0, 0, [])
    assert len(synced.lake.rows("track_order_completed")) == 4
