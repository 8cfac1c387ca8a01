"""Dedup by messageId: within a run keep the earliest receivedAt; across runs drop an event whose
messageId an earlier run landed with a receivedAt at most 7 days apart. Rows landed by the run
being redone (same run id) never count against it.

Only ids and times are shuffled: the result is the set of row ids (``_row``) to drop, which the
stages after it anti-join (broadcast) with the parsed rows.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

DEDUP_WINDOW_DAYS = 7


def duplicate_rows(events: DataFrame, landed: DataFrame | None, run_id: str) -> DataFrame:
    """``_row`` of each event of ``events`` (_row, _message_id, _received_at, file) that is a duplicate:
    all but the first of a messageId in this run (earliest receivedAt, then file, then line), and a
    first whose messageId another run ``landed`` (message_id, received_at, run_id) within the window."""
    order = Window.partitionBy("_message_id").orderBy("_received_at", "file", "_row")
    ranked = events.select("_row", "_message_id", "_received_at", "file").withColumn("_rank", F.row_number().over(order))
    later = ranked.where("_rank > 1").select("_row")
    if landed is None:
        return later
    others = landed.where(F.col("run_id") != run_id).select(
        F.col("message_id").alias("_seen_id"), F.col("received_at").alias("_seen_at"))
    window = F.expr(f"INTERVAL {DEDUP_WINDOW_DAYS} DAYS")
    seen = ranked.where("_rank = 1").join(
        others, (F.col("_message_id") == F.col("_seen_id"))
        & (F.col("_seen_at") >= F.col("_received_at") - window) & (F.col("_seen_at") <= F.col("_received_at") + window),
        "left_semi")
    return later.unionByName(seen.select("_row"))
