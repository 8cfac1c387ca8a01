"""The lake contract, end to end, on the embedded catalog, on Glue, and on S3 (s3a) with Glue."""
import itertools
from datetime import datetime
from decimal import Decimal

import pytest
from lake_events import RUN1_COUNTS, RUN2_COUNTS, write_run1, write_run2
from sync_harness import Lake, make_catalog

ORDER_COLUMNS_RUN1 = [
    ("type", "string"), ("message_id", "string"), ("received_at", "timestamp"), ("event", "string"),
    ("user_id", "string"), ("timestamp", "timestamp"), ("sent_at", "timestamp"), ("original_timestamp", "timestamp"),
    ("context_page_url", "string"), ("integrations_all", "boolean"), ("properties_revenue", "decimal(38,6)"),
    ("properties_quantity", "bigint"), ("properties_product_id", "string"), ("properties_tags", "string"),
    ("properties_shipped_at", "timestamp"), ("properties_flag", "string"),
]
TABLES_RUN1 = {"track_order_completed", "identify", "page", "screen", "group", "alias", "track_101_account_update"}
_counter = itertools.count()


@pytest.fixture(params=["local", "glue", "s3"])
def lake(request, spark, glue_client, tmp_path):
    kind = request.param
    n = next(_counter)
    source_id = f"src{n}"
    database = f"contract_{kind}_{n}"
    if kind == "s3":
        s3 = request.getfixturevalue("s3a")(f"lake-{n}")
        lake_uri, input_uri = f"s3a://lake-{n}", f"s3a://lake-{n}/segment-logs/{source_id}"
    else:
        s3, lake_uri, input_uri = None, f"file://{tmp_path}/lake", f"file://{tmp_path}/input"
    lake = Lake(spark, make_catalog(kind, spark, glue_client), kind, lake_uri, input_uri, source_id, database)
    lake.upload = (lambda write: _upload(s3, f"lake-{n}", tmp_path, source_id, write)) if s3 else (
        lambda write: write(tmp_path / "input", source_id))
    return lake


def _upload(s3, bucket, tmp_path, source_id, write):
    staging = tmp_path / "to-upload"
    write(staging, source_id)
    for path in staging.rglob("*"):
        if path.is_file():
            key = str(path.relative_to(staging))
            s3.upload_file(str(path), bucket, key)


def _fix_input(lake):
    # the local layouts write below input/segment-logs/<source>; S3 keys start at segment-logs/
    if lake.kind != "s3":
        lake.input_uri = lake.input_uri + f"/segment-logs/{lake.source_id}"


def test_two_runs_follow_the_lake_contract(lake):
    _fix_input(lake)
    lake.upload(write_run1)
    first = lake.sync()
    assert {k: getattr(first, k) for k in RUN1_COUNTS} == RUN1_COUNTS
    assert first.read_count == first.row_count + first.duplicate_count + first.rejected_count
    assert first.discarded_value_count == 4

    # tables and columns, in first-seen order with inferred types
    assert {t.table_name for t in first.tables} == TABLES_RUN1
    assert lake.columns("track_order_completed") == ORDER_COLUMNS_RUN1
    identify = dict(lake.columns("identify"))
    assert identify["traits_age"] == "bigint" and identify["traits_vip"] == "boolean"
    assert identify["timestamp"] == "timestamp"
    assert dict(lake.columns("page"))["properties_big"] == "string"
    assert "day" not in dict(lake.columns("page"))

    orders = {r["message_id"]: r for r in lake.rows("track_order_completed")}
    assert set(orders) == {"m1", "m2", "m10"}
    m1 = orders["m1"]
    assert m1["event"] == "Order Completed" and orders["m2"]["event"] == "order_completed"
    assert m1["properties_revenue"] == Decimal("19.990000") and orders["m2"]["properties_revenue"] == Decimal("5")
    assert m1["properties_quantity"] == 2
    assert m1["properties_tags"] == '["x","y"]'
    assert m1["properties_flag"] == "true" and orders["m2"]["properties_flag"] == "yes"
    assert m1["integrations_all"] is True
    assert m1["received_at"] == datetime(2024, 1, 2, 3, 4, 5)
    assert m1["timestamp"] == datetime(2024, 1, 2, 3, 4)
    assert m1["properties_shipped_at"] == datetime(2024, 1, 5)
    assert m1["context_page_url"] == "https://shop.example/cart"
    assert (m1["day"], m1["hr"]) == ("2024-01-02", "03")
    assert orders["m10"]["properties_product_id"] == "A"

    identify_rows = lake.rows("identify")
    assert [(r["message_id"], r["traits_email"]) for r in identify_rows] == [("m11", None), ("m3", "ada@example.com")]
    assert [r["timestamp"] for r in identify_rows] == [None, None]
    assert {r["message_id"]: r["properties_big"] for r in lake.rows("page")}["m5"] == str(10**40)
    assert [r["message_id"] for r in lake.rows("track_101_account_update")] == ["m9"]
    for table in TABLES_RUN1:
        assert len(lake.rows(table)) == next(t.row_count for t in first.tables if t.table_name == table)

    discards = [(d["table_name"], d["column_name"], d["message_id"], d["value"]) for d in lake.discards()]
    assert sorted(discards) == sorted([
        ("track_order_completed", "properties_product_id", "m10", "B"),
        ("track_order_completed", "properties." + "x" * 251, "m10", "1"),
        ("identify", "timestamp", "m11", "yesterday"),
        ("page", "day", "m12", "Monday"),
    ])
    assert all(d["reason"] and d["received_at"] for d in lake.discards())
    assert lake.columns("segment_discards")[:4] == [("table_name", "string"), ("column_name", "string"),
                                                    ("message_id", "string"), ("received_at", "timestamp")]

    rejected = lake.rejected()
    assert sorted(r["reason"] for r in rejected) == sorted([
        "not JSON: Expecting value", "not a JSON object", "no type", "unknown type 'click'",
        "track without event", "no messageId", "no parseable receivedAt"])
    assert all(r["file"] and r["raw"] for r in rejected)
    assert sum(r["file"].endswith("b.json.gz") for r in rejected) == 2

    report = lake.report(first)
    source = report[0]
    assert source["type"] == "source" and source["status"] == "finished" and source["error"] is None
    assert {k: source[k] for k in RUN1_COUNTS} == RUN1_COUNTS
    assert source["discarded_value_count"] == 4 and source["database"] == lake.database
    events = {line["table_name"]: line for line in report[1:]}
    assert set(events) == TABLES_RUN1
    assert events["track_order_completed"]["row_count"] == 3 and events["track_order_completed"]["is_new"] is True
    assert events["identify"]["partitions"] == ["day=2024-01-02/hr=05", "day=2024-01-02/hr=07"]
    assert events["track_order_completed"]["new_columns"] == [c for c, _ in ORDER_COLUMNS_RUN1]

    # one file per partition, named for the run
    files = lake.data_files("identify")
    assert len(files) == 2 and all(f"part-{first.run_id}-00000.snappy.parquet" in f for f in files)

    # second run: new files, duplicates, a type change, new columns
    lake.upload(write_run2)
    second = lake.sync()
    assert {k: getattr(second, k) for k in RUN2_COUNTS} == RUN2_COUNTS
    assert second.discarded_value_count == 1
    assert not lake.storage.exists(lake.layout.rejected_of_run(second.run_id))  # it rejected nothing
    assert lake.storage.exists(lake.layout.rejected_of_run(first.run_id))
    assert lake.columns("track_order_completed") == ORDER_COLUMNS_RUN1 + [
        ("properties_gift_wrap", "boolean"), ("properties_note", "string")]
    orders = {r["message_id"]: r for r in lake.rows("track_order_completed")}
    assert set(orders) == {"m1", "m2", "m10", "m22"}
    assert orders["m1"]["properties_revenue"] == Decimal("19.99")  # the duplicate did not land
    assert orders["m22"]["properties_gift_wrap"] is True and orders["m1"]["properties_gift_wrap"] is None
    identify = [(r["message_id"], r["traits_age"], r["traits_email"]) for r in lake.rows("identify")]
    assert identify == [("m11", None, None), ("m20", 31, None), ("m21", None, None), ("m3", 30, "ada@example.com"),
                        ("m3", None, "again@example.com")]
    assert dict(lake.columns("identify"))["traits_age"] == "bigint"
    assert [d["value"] for d in lake.discards() if d["message_id"] == "m21"] == ["old"]
    assert {r["message_id"]: r["properties_big"] for r in lake.rows("page")}["m23"] == "5"
    assert [r["name"] for r in lake.rows("screen") if r["message_id"] == "m24"] == ["A"]
    events = {line["table_name"]: line for line in lake.report(second)[1:]}
    assert events["track_order_completed"]["new_columns"] == ["properties_gift_wrap", "properties_note"]
    assert events["track_order_completed"]["is_new"] is False

    # third run: nothing new, nothing duplicated
    third = lake.sync()
    assert (third.read_count, third.row_count, third.tables) == (0, 0, [])
    assert len(lake.rows("track_order_completed")) == 4


def test_catalog_registers_external_partitioned_tables(lake, glue_client, spark):
    _fix_input(lake)
    lake.upload(write_run1)
    lake.sync()
    if lake.kind == "local":
        described = {r["col_name"]: r["data_type"] for r in spark.sql(
            f"DESCRIBE FORMATTED `{lake.database}`.`identify`").collect()}
        assert described["Type"] == "EXTERNAL"
        assert "parquet" in described["InputFormat"].lower()
        partitions = [r[0] for r in spark.sql(f"SHOW PARTITIONS `{lake.database}`.`identify`").collect()]
        assert partitions == ["day=2024-01-02/hr=05", "day=2024-01-02/hr=07"]
        assert spark.sql(f"select count(*) from `{lake.database}`.`track_order_completed`").first()[0] == 3
    else:
        table = glue_client.get_table(DatabaseName=lake.database, Name="identify")["Table"]
        assert table["TableType"] == "EXTERNAL_TABLE"
        assert [k["Name"] for k in table["PartitionKeys"]] == ["day", "hr"]
        location = table["StorageDescriptor"]["Location"]
        assert location.endswith(f"/segment-data/data/{lake.source_id}/segment_type=identify")
        if lake.kind == "s3":
            assert location.startswith("s3://")
        partitions = glue_client.get_partitions(DatabaseName=lake.database, TableName="identify")["Partitions"]
        assert sorted(tuple(p["Values"]) for p in partitions) == [("2024-01-02", "05"), ("2024-01-02", "07")]
        assert all(p["StorageDescriptor"]["Location"].startswith(location) for p in partitions)
