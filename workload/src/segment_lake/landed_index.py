"""The messageIds the lake already holds, with their receivedAt and the run that landed them: what dedup compares a
run's events against.

Each run adds the ids it landed as a folder of its own (``state/<source>/landed/run_id=<run>/``). ``segment-lake
compact`` merges those folders into one generation (``landed-compacted/<compaction id>/``, named by
``landed-compacted.json``) and drops the ids received more than the dedup window and a day before the newest (the
horizon), so the index stays about eight days long however old the lake. A run whose events reach back before the
horizon (a replay, a late file) reads the older ids from the source's tables themselves: message_id and
received_at of the day partitions concerned (and, in an Iceberg source, of the hour folders Iceberg writes itself:
every file there, live or not yet expired). An id found twice (a crash between a new generation and the removal of
the folders it merged) changes nothing: dedup keeps the first event of a messageId however often it is listed.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from segment_lake_contract import DATE_PARTITIONS, DEDUP_WINDOW_DAYS

from .iceberg_tables import HIDDEN_HOURS_FOLDER
from .layout import WRITER_OF_FILE, LakeLayout, run_of_name
from .route import partition_span
from .state import SourceState
from .storage import OVERWRITE, LakeStorage
from .uris import join

HORIZON_DAYS = DEDUP_WINDOW_DAYS + 1  # a day more than the window: a sync's events are hours apart, not a day
ROWS_PER_FILE = 4_000_000  # about 60 MB of ids and times
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

@dataclass(frozen=True)
class Generation:
    """The merged index: its folder name, the run folders it merged (removed after it is named) and its horizon."""

    name: str
    merged_runs: tuple[str, ...]
    horizon: datetime

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "merged_runs": list(self.merged_runs),
                           "horizon": self.horizon.isoformat()})

    @staticmethod
    def from_json(text: str) -> Generation:
        data = json.loads(text)
        return Generation(data["name"], tuple(data["merged_runs"]), datetime.fromisoformat(data["horizon"]))


@dataclass(frozen=True)
class IndexCompaction:
    """What compacting the index did: the run folders merged, the ids before and after and the horizon (None when
    there was no run folder to merge)."""

    runs_merged: int = 0
    ids_before: int | None = None
    ids_after: int | None = None
    horizon: str | None = None


def current_generation(storage: LakeStorage, state: SourceState) -> Generation | None:
    if not storage.exists(state.landed_generation_uri):
        return None
    return Generation.from_json(storage.read_text(state.landed_generation_uri))


@dataclass(frozen=True)
class LandedIds:
    """The ids a run's events are compared with, and the bytes they are read from (what sizes dedup's shuffle)."""

    frame: DataFrame
    stored_bytes: int


def landed_ids(spark: SparkSession, storage: LakeStorage, state: SourceState, layout: LakeLayout,
               date_partition: str, first: datetime, last: datetime, iceberg: bool = False) -> LandedIds | None:
    """message_id, received_at and run_id of the events the lake holds that were received from ``first`` to
    ``last`` (an ``iceberg`` source's tables may have hour folders too); None when it holds none."""
    found, stored = [], 0
    if runs := storage.list_files(state.landed_uri):
        found.append(spark.read.parquet(state.landed_uri))
        stored += sum(f.size for f in runs)
    generation = current_generation(storage, state)
    if generation:
        merged = join(state.landed_generations_uri, generation.name)
        found.append(spark.read.parquet(merged))
        stored += sum(f.size for f in storage.list_files(merged))
        if first < generation.horizon:
            frames, in_tables = table_ids(spark, storage, layout, date_partition, first, min(last, generation.horizon),
                                          iceberg)
            found += frames
            stored += in_tables
    if not found:
        return None
    return LandedIds(_ids(found).where(F.col("received_at").between(_at(first), _at(last))), stored)


def table_ids(spark: SparkSession, storage: LakeStorage, layout: LakeLayout, date_partition: str, first: datetime,
              last: datetime, iceberg: bool = False) -> tuple[list[DataFrame], int]:
    """The ids in the source's tables received from ``first`` to ``last`` (with the run or compaction that wrote
    each file as run_id, "" for others), read from the day partitions of those days only (and an ``iceberg``
    source's hour folders of those days): one read per type of the tables' message_id column (text as Segment sends
    it, a number when a source sent numbers) and kind of folder; and the bytes of the files read (whole rows: more
    than the two columns read)."""
    day_keys = [(key, pattern) for key, pattern in DATE_PARTITIONS[date_partition] if key != "hr"]
    days = storage.glob(join(layout.tables, "*", "/".join(f"{key}=*" for key, _ in day_keys)))
    # an Iceberg table partitioned by the hour of received_at: the files Iceberg writes itself (a compaction's, a
    # deletion's) are in folders of the hour, not of the date partition (a listing a table: Iceberg sources only)
    hours = storage.glob(join(layout.tables, "*", f"{HIDDEN_HOURS_FOLDER}=*")) if iceberg else []
    first_day, last_day = first.astimezone(UTC).date(), last.astimezone(UTC).date()
    # by table folder and kind of folder (the date partition's, or the hour's)
    by_table: dict[tuple[str, bool], list[str]] = defaultdict(list)
    for by_hour, depth, folders, day_of in ((False, len(day_keys), days, lambda f: day_of_folder(f, day_keys)),
                                            (True, 1, hours, day_of_hour_folder)):
        for folder in folders:
            if first_day <= day_of(folder) <= last_day:
                by_table[folder.rsplit("/", depth)[0], by_hour].append(folder)
    by_type: dict[tuple[str, bool], list[str]] = defaultdict(list)  # one read each: its folders' keys must agree
    stored = 0
    for (_, by_hour), folders in by_table.items():
        files = [f for folder in folders for f in storage.list_files(folder) if f.uri.endswith(".parquet")]
        fields = {f.name: f.dataType.simpleString() for f in storage.parquet_footer(files[0].uri)[0].fields} if files else {}
        if "message_id" in fields:  # a table whose ids were all discarded has none to match
            by_type[fields["message_id"], by_hour] += folders
            stored += sum(f.size for f in files)
    return [spark.read.schema(f"message_id {kind}, received_at timestamp").option("basePath", layout.tables)
            .parquet(*folders).select(F.col("message_id").cast("string").alias("message_id"), "received_at",
                                      F.regexp_extract(F.input_file_name(), WRITER_OF_FILE, 1).alias("run_id"))
            for (kind, _), folders in sorted(by_type.items())], stored


def _ids(frames: list[DataFrame]) -> DataFrame:
    return reduce(DataFrame.unionByName, (frame.select("message_id", "received_at", "run_id") for frame in frames))


def _at(moment: datetime) -> Column:
    """A timestamp literal from its microseconds: a datetime literal would be rebased from the Julian calendar
    before 1582."""
    return F.timestamp_micros(F.lit((moment - _EPOCH) // timedelta(microseconds=1)))


def day_of_hour_folder(folder: str) -> date:
    """The day of an Iceberg hour folder (``.../received_at_hour=2024-01-02-03``); date.max when it is not one."""
    try:
        return date.fromisoformat(folder.rsplit("=", 1)[1][:10])
    except ValueError:
        return date.max


def day_of_folder(folder: str, day_keys: list[tuple[str, str]]) -> date:
    """The day of a day folder (``.../day=2024-01-02`` or ``.../year=2024/month=01/day=02``); date.max when its
    values are not a day (``__HIVE_DEFAULT_PARTITION__``), so it is never read."""
    values = dict(part.split("=", 1) for part in folder.split("/")[-len(day_keys):])
    span = partition_span(day_keys, [values.get(key, "") for key, _ in day_keys])
    return span[0].date() if span else date.max


def from_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def window(first_micros: int, last_micros: int, days: int) -> tuple[datetime, datetime]:
    """From ``days`` before the first time to ``days`` after the last."""
    return shifted(from_micros(first_micros), -days), shifted(from_micros(last_micros), days)


def shifted(moment: datetime, days: int) -> datetime:
    """``days`` later (earlier when negative), within the years datetime holds: a hostile receivedAt may be in year 1
    or 9999."""
    try:
        return moment + timedelta(days=days)
    except OverflowError:
        return (datetime.max if days > 0 else datetime.min).replace(tzinfo=UTC)


def compact_index(spark: SparkSession, storage: LakeStorage, state: SourceState, generation_name: str,
                  check=lambda: None) -> IndexCompaction:
    """Merges the run folders and the current generation into a new generation without the ids before the new
    horizon (the newest id's receivedAt, or now if later, less HORIZON_DAYS); the caller holds the source's lock and no run is
    unfinished."""
    current = current_generation(storage, state)
    if current:  # what a crash left: the folders the current generation merged, and unnamed generations
        for run in current.merged_runs:
            storage.delete(state.landed_run_uri(run), recursive=True)
    for name in storage.list_folders(state.landed_generations_uri):
        if current is None or name != current.name:
            storage.delete(join(state.landed_generations_uri, name), recursive=True)
    runs = [run for run in map(run_of_name, storage.list_folders(state.landed_uri)) if run is not None]
    if not runs:
        return IndexCompaction()
    sources = [spark.read.parquet(state.landed_uri)]
    if current:
        sources.append(spark.read.parquet(join(state.landed_generations_uri, current.name)))
    ids = _ids(sources)
    counted = ids.agg(F.count(F.lit(1)).alias("rows"), F.max(F.unix_micros("received_at")).alias("newest")).first()
    # from the newest id, or now when an event claims a later receivedAt: one such event does not empty the index
    now = datetime.now(UTC)
    newest = min(from_micros(counted["newest"]), now) if counted["newest"] is not None else now
    horizon = max(shifted(newest, -HORIZON_DAYS), current.horizon if current else datetime.min.replace(tzinfo=UTC))
    kept = ids.where(F.col("received_at") >= _at(horizon))
    kept_rows = kept.count()
    storage.write_frame(kept.repartition(max(1, -(-kept_rows // ROWS_PER_FILE))),
                        join(state.landed_generations_uri, generation_name), OVERWRITE)
    check()  # the index changes from here on
    storage.write_text(state.landed_generation_uri, Generation(generation_name, tuple(runs), horizon).to_json())
    for run in runs:
        storage.delete(state.landed_run_uri(run), recursive=True)
    if current:
        storage.delete(join(state.landed_generations_uri, current.name), recursive=True)
    return IndexCompaction(len(runs), counted["rows"], kept_rows, horizon.isoformat())
