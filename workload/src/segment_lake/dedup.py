"""Dedup by messageId, one rule within a run and across runs: an event is a duplicate when an event
with the same messageId was kept, earlier in this run or by an earlier run, with a receivedAt at
most 7 days apart. A run takes its events in receivedAt order, ties broken by input file and line,
so the lake holds the same events however the files are split into runs. Rows landed by the run
being redone (same run id) never count against it.

Only ids and times are shuffled, and only the messageIds seen more than once (in this run or in
the landed index within the window) are walked event by event; the result is one row per
duplicate, which the stages after it anti-join (broadcast) with the parsed rows and record.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

DEDUP_WINDOW_DAYS = 7
_WINDOW_MICROS = DEDUP_WINDOW_DAYS * 86_400 * 1_000_000

# What a duplicate's record holds (ColumnType names): which event was dropped, from where, and the
# kept event it repeats.
DUPLICATE_COLUMNS = (("message_id", "string"), ("received_at", "timestamp"), ("table_name", "string"),
                     ("file", "string"), ("run_id", "string"), ("original_run_id", "string"),
                     ("original_received_at", "timestamp"))

# Walks one messageId's events of this run in order, starting from the times earlier runs landed:
# an event within the window of a kept one is a duplicate of it, any other is kept.
_WALK = f"""aggregate(
  array_sort(filter(_events, e -> NOT e.landed)),
  named_struct('kept', transform(filter(_events, e -> e.landed), e -> named_struct('at', e.at, 'run', e.run)),
               'duplicates', CAST(array() AS array<struct<row: bigint, at: bigint, file: string, table: string,
                                                          original_run: string, original_at: bigint>>)),
  (state, e) -> IF(exists(state.kept, k -> abs(k.at - e.at) <= {_WINDOW_MICROS}),
    named_struct('kept', state.kept, 'duplicates', array_append(state.duplicates, named_struct(
      'row', e.row, 'at', e.at, 'file', e.file, 'table', e.table,
      'original_run', filter(state.kept, k -> abs(k.at - e.at) <= {_WINDOW_MICROS})[0].run,
      'original_at', filter(state.kept, k -> abs(k.at - e.at) <= {_WINDOW_MICROS})[0].at))),
    named_struct('kept', array_append(state.kept, named_struct('at', e.at, 'run', e.run)),
                 'duplicates', state.duplicates)),
  state -> state.duplicates)"""


def duplicate_rows(events: DataFrame, landed: DataFrame | None, run_id: str) -> DataFrame:
    """One row per duplicate among ``events`` (_row, _message_id, _received_at, file, table), with
    ``landed`` (message_id, received_at, run_id) the index of earlier runs: ``_row`` and the record's
    columns (DUPLICATE_COLUMNS), ``run_id`` being this run."""
    ours = events.select(
        F.col("_message_id").alias("id"), F.unix_micros("_received_at").alias("at"), "file", "_row",
        "table", F.lit(False).alias("landed"), F.lit(run_id).alias("run"))
    if landed is not None:
        ours = ours.unionByName(landed.where(F.col("run_id") != run_id).select(
            F.col("message_id").alias("id"), F.unix_micros("received_at").alias("at"), F.lit(None).cast("string").alias("file"),
            F.lit(None).cast("long").alias("_row"), F.lit(None).cast("string").alias("table"),
            F.lit(True).alias("landed"), F.col("run_id").alias("run")))
    # struct fields in sort order: receivedAt, then file and line break ties
    repeated = (ours.withColumn("_seen", F.count(F.lit(1)).over(Window.partitionBy("id"))).where("_seen > 1")
                .groupBy("id").agg(F.collect_list(F.struct("at", "file", F.col("_row").alias("row"), "table",
                                                           "landed", "run")).alias("_events")))
    duplicate = F.explode(F.expr(_WALK)).alias("d")
    return repeated.select("id", duplicate).select(
        F.col("d.row").alias("_row"), F.col("id").alias("message_id"),
        F.timestamp_micros("d.at").alias("received_at"), F.col("d.table").alias("table_name"),
        F.col("d.file").alias("file"), F.lit(run_id).alias("run_id"), F.col("d.original_run").alias("original_run_id"),
        F.timestamp_micros("d.original_at").alias("original_received_at"))
