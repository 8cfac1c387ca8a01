"""Dedup: by messageId, one rule within a run and across runs: an event is a duplicate when an event
with the same messageId was kept, earlier in this run or by an earlier run, with a receivedAt at
most 7 days apart. A run takes its events in receivedAt order, ties broken by input file and line,
so when runs take the files in receivedAt order the lake holds the same events however the files
are split into runs. Rows landed by the run being redone (same run id) never count against it.

Only ids, times, files and tables are shuffled, and only the messageIds this run has and that occur
more than once (in this run or in the landed index within the window) are walked event by event;
the result is one row per duplicate, which the stages after it anti-join with the parsed rows (a broadcast
when the duplicates are few) and record.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from segment_lake_contract import DEDUP_WINDOW_DAYS

from . import iceberg_tables
from .column_types import ColumnType
from .landed_index import landed_ids, window
from .records import Deduped, Parsed

if TYPE_CHECKING:
    from .environment import SyncEnvironment

_WINDOW_MICROS = DEDUP_WINDOW_DAYS * 86_400 * 1_000_000
# Up to this many duplicates, their row ids are broadcast and the events are not shuffled again (6 s of a replay
# of 1M); beyond it (a larger replay: nearly every event a duplicate) the hash map would grow with the run (0.4 GB
# of heap built and serialized at 1M), so the events are shuffled to the anti-join instead, in bounded memory.
BROADCAST_DUPLICATES_MAX = 1_000_000

# What a duplicate's record holds (ColumnType names): which event was dropped, from where, and the
# kept event it repeats.
DUPLICATE_COLUMNS = (("message_id", ColumnType.STRING), ("received_at", ColumnType.TIMESTAMP),
                     ("table_name", ColumnType.STRING), ("file", ColumnType.STRING), ("run_id", ColumnType.STRING),
                     ("original_run_id", ColumnType.STRING), ("original_received_at", ColumnType.TIMESTAMP))

# One messageId's events of this run in order (_ours) and those earlier runs landed (_events with
# landed set), each (at, file, row, table, landed, run): the landed ones are kept from the start; an
# event of this run is kept unless a kept one is within the window. The state holds only the kept
# events (few: they are over 7 days apart), so a long run of redeliveries costs linear time.
_OURS = "array_sort(filter(_events, e -> NOT e.landed))"
_KEPT = f"""aggregate(_ours, filter(_events, e -> e.landed),
  (kept, e) -> IF(exists(kept, k -> abs(k.at - e.at) <= {_WINDOW_MICROS}), kept, array_append(kept, e)))"""
# Each dropped event with the kept event it repeats: of those kept before it within the window, the
# nearest (then the earliest, then by run: the same whatever order the events were collected in).
_DROPPED = f"""transform(
  filter(_ours, e -> NOT exists(_kept, k -> NOT k.landed AND k.row = e.row)),
  e -> named_struct('event', e, 'original', array_min(transform(
    filter(_kept, k -> abs(k.at - e.at) <= {_WINDOW_MICROS}
                       AND (k.landed OR struct(k.at, k.file, k.row) < struct(e.at, e.file, e.row))),
    k -> named_struct('distance', abs(k.at - e.at), 'at', k.at, 'run', k.run)))))"""


def duplicate_rows(events: DataFrame, landed: DataFrame | None, run_id: str, tasks: int) -> DataFrame:
    """One row per duplicate among ``events`` (_row, _message_id, _received_at, file, table), with
    ``landed`` (message_id, received_at, run_id) the index of earlier runs: ``_row`` and the record's
    columns (DUPLICATE_COLUMNS), ``run_id`` being this run; the ids shuffled into ``tasks`` partitions."""
    ours = events.select(
        F.col("_message_id").alias("id"), F.unix_micros("_received_at").alias("at"), "file",
        F.col("_row").alias("row"), "table", F.lit(False).alias("landed"), F.lit(run_id).alias("run"))
    if landed is not None:
        ours = ours.unionByName(landed.where(F.col("run_id") != run_id).select(
            F.col("message_id").alias("id"), F.unix_micros("received_at").alias("at"),
            F.lit(None).cast("string").alias("file"), F.lit(None).cast("long").alias("row"),
            F.lit(None).cast("string").alias("table"), F.lit(True).alias("landed"), F.col("run_id").alias("run")))
    ours = ours.repartition(tasks, "id")  # the window and the grouping below take this partitioning as it is
    by_id = Window.partitionBy("id")
    # struct fields in sort order: receivedAt, then file and line break ties
    repeated = (ours.withColumn("_seen", F.count(F.lit(1)).over(by_id))
                .withColumn("_has_ours", F.max(~F.col("landed")).over(by_id))
                .where("_seen > 1 AND _has_ours")
                .groupBy("id").agg(F.collect_list(F.struct("at", "file", "row", "table", "landed", "run"))
                                   .alias("_events")))
    dropped = (repeated.withColumn("_ours", F.expr(_OURS)).withColumn("_kept", F.expr(_KEPT))
               .select("id", F.explode(F.expr(_DROPPED)).alias("d")))
    return dropped.select(
        F.col("d.event.row").alias("_row"), F.col("id").alias("message_id"),
        F.timestamp_micros("d.event.at").alias("received_at"), F.col("d.event.table").alias("table_name"),
        F.col("d.event.file").alias("file"), F.lit(run_id).alias("run_id"),
        F.col("d.original.run").alias("original_run_id"),
        F.timestamp_micros("d.original.at").alias("original_received_at"))


def without_duplicates(events: DataFrame, duplicates: DataFrame, found: int,
                       broadcast_max: int = BROADCAST_DUPLICATES_MAX) -> DataFrame:
    """``events`` but the rows of the ``found`` ``duplicates`` (by ``_row``): a broadcast anti-join up to
    ``broadcast_max`` duplicates, a shuffled one beyond."""
    dropped = duplicates.select("_row")
    return events.join(F.broadcast(dropped) if found <= broadcast_max else dropped, "_row", "left_anti")


def dedup(env: SyncEnvironment, parsed: Parsed) -> Deduped:
    """The parsed events without the duplicates, against each other and the ids the lake holds (landed_index.py).
    The ids are shuffled into as many tasks as the bytes they come from call for (the run's input, the landed ids
    of the window): a small tick on a lake of few ids runs one task, not a task per shuffle partition (the duplicates
    are cached, so Spark's adaptive execution would not coalesce them)."""
    landed = None
    if parsed.span:  # only ids landed within the dedup window of this run's events can match
        landed = landed_ids(env.spark, env.storage, env.state, env.layout, env.settings.date_partition,
                            *window(*parsed.span, DEDUP_WINDOW_DAYS),
                            iceberg=env.settings.table_format == iceberg_tables.FORMAT)
    tasks = env.shuffle_tasks(sum(parsed.run.manifest.sizes) + (landed.stored_bytes if landed else 0))
    duplicates = duplicate_rows(parsed.events, landed.frame if landed else None, parsed.run.run_id,
                                tasks).persist(StorageLevel.DISK_ONLY)
    found = duplicates.count()
    return Deduped(parsed.run, without_duplicates(parsed.events, duplicates, found), duplicates, found,
                   parsed.read_count - parsed.rejected_count - parsed.suppressed_count - found)
