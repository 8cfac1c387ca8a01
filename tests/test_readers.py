"""What the query engines read, as they read it. Hive reads a partition through the partition's own column list, not
the table's: a column a later run added to a partition's files must be in that partition's list, or Hive reads it as
NULL. Hive itself answers here: the Hive 2.3 driver inside Spark's jars, on the embedded metastore (a fetch task,
no MapReduce). Athena v3 maps columns by name; Spark 3.5 reads a partition with the table's schema."""
import json

import pytest
from sync_harness import Lake

from segment_lake.catalog.local import LocalCatalog

pytestmark = pytest.mark.spark


def _events(folder, *events):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"events-{len(list(folder.iterdir()))}.json").write_text("".join(json.dumps(e) + "\n" for e in events))


def _order(message_id, received_at, **properties):
    return {"type": "track", "event": "Order Completed", "messageId": message_id, "receivedAt": received_at,
            "properties": properties}


def hive(spark, statement: str) -> list[str]:
    """``statement``'s rows as Hive's driver prints them (tab-separated). Spark lets its Hive client run HiveQL only
    under spark.testing, set for the call alone."""
    system = spark._jvm.java.lang.System
    system.setProperty("spark.testing", "true")
    try:
        lines = spark._jsparkSession.sharedState().externalCatalog().unwrapped().client().runSqlHive(statement)
    finally:
        system.clearProperty("spark.testing")
    iterator, rows = lines.iterator(), []
    while iterator.hasNext():
        rows.append(iterator.next())
    return rows


def test_hive_reads_a_column_a_later_run_added_to_a_partition(spark, tmp_path):
    day = tmp_path / "input" / "1704153600000"
    lake = Lake(spark, LocalCatalog(spark), "local", f"file://{tmp_path}/lake", f"file://{tmp_path}/input", "src1",
                database="hive_reads")
    _events(day, _order("m1", "2024-01-02T03:00:00.000Z", revenue=5))
    lake.sync()
    # a late event lands in the same hour, with a property no event had before
    _events(day, _order("m2", "2024-01-02T03:30:00.000Z", revenue=7, giftWrap=True))
    lake.sync()
    table = "hive_reads.track_order_completed"

    def through_hive_serde():
        return sorted(tuple(line.split("\t")) for line in hive(
            spark, f"SELECT message_id, properties_gift_wrap, properties_revenue FROM {table} "
                   "WHERE day = '2024-01-02' AND hr = '03'"))

    assert through_hive_serde() == [("m1", "NULL", "5"), ("m2", "true", "7")]
    assert sorted(tuple(r) for r in spark.sql(f"select message_id, properties_gift_wrap, int(properties_revenue) from "
                                                 f"{table}").collect()) == [("m1", None, 5), ("m2", True, 7)]
    # a compaction's switch of the partition's location keeps the table's column list
    catalog = LocalCatalog(spark)
    locations = catalog.partition_locations("hive_reads", "track_order_completed")
    catalog.set_partition_locations("hive_reads", "track_order_completed", ("day", "hr"), locations)
    assert catalog.partition_locations("hive_reads", "track_order_completed") == locations
    assert through_hive_serde() == [("m1", "NULL", "5"), ("m2", "true", "7")]
