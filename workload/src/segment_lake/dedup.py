"""Dedup by messageId: within a run keep the earliest receivedAt; across runs drop an event whose
messageId an earlier run landed with a receivedAt at most 7 days apart. Rows landed by the run
being redone (same run id) never count against it."""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

DEDUP_WINDOW_DAYS = 7


def first_per_message(events: DataFrame) -> DataFrame:
    """One row per messageId: earliest receivedAt, ties broken by file and then the line itself."""
    order = Window.partitionBy("_message_id").orderBy("_received_at", "file", F.to_json("fields"))
    return events.withColumn("_rank", F.row_number().over(order)).where("_rank = 1").drop("_rank")


def drop_seen_before(events: DataFrame, landed: DataFrame | None, run_id: str) -> DataFrame:
    """``events`` minus those ``landed`` (message_id, received_at, run_id) by another run within the window."""
    if landed is None:
        return events
    others = landed.where(F.col("run_id") != run_id).select(
        F.col("message_id").alias("_seen_id"), F.col("received_at").alias("_seen_at"))
    window = F.expr(f"INTERVAL {DEDUP_WINDOW_DAYS} DAYS")
    condition = ((F.col("_message_id") == F.col("_seen_id"))
                 & (F.col("_seen_at") >= F.col("_received_at") - window)
                 & (F.col("_seen_at") <= F.col("_received_at") + window))
    return events.join(others, condition, "left_anti")
