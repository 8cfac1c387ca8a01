"""Parse: raw lines into events (or rejections with a reason) inside Spark's JVM, each event routed to its table and
date partition (route.py), shuffled once by table and partition; the lines counted, the rejected ones recorded, and
the events of suppressed users left out.

The parser is ``jvm/ParseEvent.java`` and the stage ``jvm/ParseLines.java`` (see jvm_code.py). An event's
flattened fields travel as one binary value (field_codec.py).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from segment_lake_contract import DATE_PARTITIONS

from .discover import read_lines
from .field_codec import register_codec
from .records import Parsed, Run
from .storage import FrameWrite
from .suppression import SuppressionList, is_suppressed

if TYPE_CHECKING:
    from .environment import SyncEnvironment

def parse_lines(lines: DataFrame, table_prefix: str, date_partition: str, tasks: int) -> DataFrame:
    """``lines`` (value, file, unreadable; see discover.read_lines) -> one row per non-blank line (and one per
    file's unreadable rest, rejected with its reason), in ``tasks`` partitions grouped by table
    and date partition: ``_row`` (unique, in line order within a file), file, reason and raw (for
    rejected lines), table, partition (``day=2024-01-02/hr=03``), the event's own messageId and
    receivedAt as ``_message_id`` and ``_received_at`` (the flattened ``message_id`` and
    ``received_at`` columns are data like any other), fields (binary) and discards."""
    spark = lines.sparkSession
    register_codec(spark)
    stage = spark.sparkContext._jvm.segmentlake.ParseLines.stage
    return DataFrame(stage(spark._jsparkSession, lines.select("value", "file", "unreadable")._jdf, table_prefix,
                           json.dumps(DATE_PARTITIONS[date_partition]), tasks), spark)


def parse(env: SyncEnvironment, run: Run) -> Parsed:
    """Parses the run's files once into the shuffle files every later stage reads; counts the lines, records the
    rejected ones (``layout.rejected_of_run``) and leaves out (counted) the events of suppressed users."""
    suppressed = SuppressionList(env.storage, env.state.suppressed_uri).read()
    rejected_uri = env.layout.rejected_of_run(run.run_id)
    manifest = run.manifest
    rows = parse_lines(read_lines(env.spark, list(manifest.files), list(manifest.sizes)),
                       env.settings.table_name_prefix, env.settings.date_partition,
                       env.shuffle_tasks(sum(manifest.sizes)))
    rows = rows.withColumn("_suppressed", F.col("reason").isNull() & is_suppressed(suppressed))
    counted = rows.groupBy(F.col("reason").isNotNull().alias("rejected"), "_suppressed").agg(
        F.count(F.lit(1)).alias("count"), F.min(F.unix_micros("_received_at")).alias("first"),
        F.max(F.unix_micros("_received_at")).alias("last"))
    read = rejected = dropped = 0
    span = None
    for row in counted.collect():
        read += row["count"]
        if row["rejected"]:
            rejected = row["count"]
        elif row["_suppressed"]:
            dropped = row["count"]
        else:
            span = (row["first"], row["last"])
    if rejected:
        env.storage.write_frame(rows.where(F.col("reason").isNotNull()).select("file", "reason", "raw").repartition(1),
                                rejected_uri, FrameWrite("json", "overwrite"))
    else:  # a crashed attempt's records go (the infer stage may add to the folder)
        env.storage.delete(rejected_uri, recursive=True)
    return Parsed(run, rows.where(F.col("reason").isNull() & ~F.col("_suppressed")).drop("_suppressed"), read,
                  rejected, span, dropped)
