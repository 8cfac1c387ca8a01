"""Deleting users from a source's lake (``segment-lake delete-users``).

Their ids join the source's suppression list first, so that no later sync or replay of the same raw events lands
them again. Then the deletion finds the files that hold their rows (in every table of the source, the discarded
values and the duplicates' record), writes each of those files again without the rows into the stage, and records
old -> new in a journal (``state/<source>/deletion.json``). Only then does a lake file change: each is replaced
under its own name (``LakeStorage.replace``), or removed when none of its rows is left, so a reader sees each file
whole, before or after, never both and never neither. A crash before the journal leaves the lake as it was (run
the command again); a crash after it is finished by the next deletion or sync of the source (``finish_deletion``).

Untouched: the raw input (``segment-logs/``, the user's own), rejected lines (not events: nothing in them is known
to be a user's), and the landed index (messageIds and times, which keep a redelivered event from landing twice).
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from .layout import LakeLayout
from .state import SourceState, new_run_id
from .storage import LakeStorage, join, relative_path
from .suppression import SuppressionList

DISCARDS, DUPLICATES = "discards", "duplicates"  # the datasets beside the tables
USER_COLUMNS = {"user_id": "user_ids", "anonymous_id": "anonymous_ids"}  # column -> the ids it is matched with
EVENT_COLUMNS = ("message_id", "received_at", "user_id", "anonymous_id")  # what finding the rows reads


@dataclass(frozen=True)
class Rewrite:
    """One lake file of a dataset (a table, ``discards`` or ``duplicates``) and its rewritten bytes in
    the stage (None: none of its rows is left, the file goes), with the rows deleted from it."""

    dataset: str
    file: str
    staged: str | None
    deleted: int


@dataclass(frozen=True)
class Journal:
    """A deletion's plan, written once every rewritten file is staged: the switch is replayed from it."""

    deletion_id: str
    source_id: str
    start_time: str
    user_ids: tuple[str, ...]
    anonymous_ids: tuple[str, ...]
    rewrites: tuple[Rewrite, ...] = field(default=())

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> Journal:
        data = json.loads(text)
        return Journal(data["deletion_id"], data["source_id"], data["start_time"], tuple(data["user_ids"]),
                       tuple(data["anonymous_ids"]), tuple(Rewrite(**r) for r in data["rewrites"]))


def deletion_report(journal: Journal, finish_time: datetime) -> dict:
    """What a deletion removed, per dataset, with the files it rewrote and removed."""
    rows: dict[str, int] = defaultdict(int)
    for rewrite in journal.rewrites:
        rows[rewrite.dataset] += rewrite.deleted
    tables = {name: n for name, n in rows.items() if name not in (DISCARDS, DUPLICATES)}
    return {"deletion_id": journal.deletion_id, "source_id": journal.source_id, "start_time": journal.start_time,
            "finish_time": finish_time.astimezone(UTC).isoformat(), "user_ids": list(journal.user_ids),
            "anonymous_ids": list(journal.anonymous_ids), "rows_deleted": sum(tables.values()),
            "tables": dict(sorted(tables.items())), "discarded_values_deleted": rows.get(DISCARDS, 0),
            "duplicates_deleted": rows.get(DUPLICATES, 0),
            "files_rewritten": sum(1 for r in journal.rewrites if r.staged is not None),
            "files_removed": sum(1 for r in journal.rewrites if r.staged is None)}


def users_rows(schema: StructType, user_ids: tuple[str, ...], anonymous_ids: tuple[str, ...]) -> Column:
    """True for a row of one of the users (ids compared as text, as a numeric userId lands in a bigint column);
    rows of a table without the column are nobody's."""
    ids = {"user_ids": user_ids, "anonymous_ids": anonymous_ids}
    matches = [F.col(column).cast("string").isin(list(ids[kind])) for column, kind in USER_COLUMNS.items()
               if ids[kind] and column in schema.fieldNames()]
    either = F.lit(False)
    for match in matches:
        either = either | match
    return F.coalesce(either, F.lit(False))


def mark_events(frame: DataFrame, events: DataFrame, time_column: str) -> DataFrame:
    """``frame`` with ``_doomed``: its row's messageId and ``time_column`` are those of one of ``events``."""
    keys = events.select(F.col("message_id").alias("_id"), F.col("received_at").alias("_at")).distinct()
    joined = frame.join(keys, (frame["message_id"] == keys["_id"]) & frame[time_column].eqNullSafe(keys["_at"]),
                        "left")
    return joined.withColumn("_doomed", F.col("_id").isNotNull()).drop("_id", "_at")


class UserDeletion:
    """Deletes users from one source's lake; the caller holds the source's lock (``check`` is called before the
    lake changes)."""

    def __init__(self, spark: SparkSession, storage: LakeStorage, layout: LakeLayout,
                 progress: Callable[[str], None] = print, check: Callable[[], None] = lambda: None) -> None:
        self.spark, self.storage, self.layout = spark, storage, layout
        self.state = SourceState(storage, layout.state)
        self.stage = layout.stage("deletion")
        self.progress, self.check = progress, check

    def run(self, user_ids: tuple[str, ...], anonymous_ids: tuple[str, ...], now: datetime | None = None) -> dict:
        """Deletes the rows of these ids; returns the deletion's report."""
        now = now or datetime.now(UTC)
        finish_deletion(self.storage, self.layout, self.progress)
        SuppressionList(self.storage, self.state.suppressed_uri).add(list(user_ids), list(anonymous_ids), now)
        self.storage.delete(self.stage, recursive=True)  # what a deletion that died before its journal staged
        journal = Journal(new_run_id(now), self.layout.source_id, now.isoformat(), user_ids, anonymous_ids)
        rewrites = self._plan(journal)
        journal = Journal(**{**journal.__dict__, "rewrites": tuple(rewrites)})
        self.check()  # the lake changes from here on
        self.storage.write_text(self.state.deletion_uri, journal.to_json())
        return finish_deletion(self.storage, self.layout, self.progress)

    def _plan(self, journal: Journal) -> list[Rewrite]:
        """Finds the users' rows and stages every affected file without them."""
        tables = self._table_files()
        schemas = {table: self.storage.parquet_schema(max(files, key=_file_name)) for table, files in tables.items()}
        events_uri = join(self.stage, "events")
        counts = self._find_in_tables(tables, schemas, journal, events_uri)
        rewrites = []
        for slot, (table, files) in enumerate(sorted(tables.items())):
            affected = {file: counts[file] for file in files if file in counts}
            if affected:
                schema = schemas[table]
                rewrites += self._rewrite(table, f"t{slot}", affected, schema,
                                          lambda frame, s=schema: frame.withColumn(
                                              "_doomed", users_rows(s, journal.user_ids, journal.anonymous_ids)))
        if counts:
            events = self.spark.read.parquet(events_uri)
            for dataset, root, time_column in ((DISCARDS, self.layout.discards, "received_at"),
                                               (DUPLICATES, self.state.duplicates_uri, "original_received_at")):
                files = [info.uri for info in self.storage.list_files(root) if info.uri.endswith(".parquet")]
                if files:
                    rewrites += self._rewrite_marked(dataset, files, lambda frame, t=time_column: mark_events(
                        frame, events, t))
        return rewrites

    def _table_files(self) -> dict[str, list[str]]:
        """Every table's Parquet files, by the table's name in the lake (its folder ``segment_type=<name>``)."""
        tables: dict[str, list[str]] = defaultdict(list)
        for info in self.storage.list_files(self.layout.tables):
            folder = relative_path(info.uri, self.layout.tables).split("/", 1)[0]
            if info.uri.endswith(".parquet") and folder.startswith("segment_type="):
                tables[folder[len("segment_type="):]].append(info.uri)
        return dict(tables)

    def _find_in_tables(self, tables: dict[str, list[str]], schemas: dict[str, StructType], journal: Journal,
                        events_uri: str) -> dict[str, tuple[str, int]]:
        """Rows of the users per file of every table; their messageIds and times go to ``events_uri``. One read per
        set of tables whose user columns have the same types (a bigint userId cannot be read as text)."""
        groups: dict[str, list[str]] = defaultdict(list)
        narrow: dict[str, StructType] = {}
        for table, files in tables.items():
            schema = StructType([f for f in schemas[table].fields if f.name in EVENT_COLUMNS])
            narrow[schema.json()] = schema
            groups[schema.json()] += files
        found = None
        for key, files in groups.items():
            schema = narrow[key]
            rows = (self.spark.read.schema(schema).parquet(*files)
                    .where(users_rows(schema, journal.user_ids, journal.anonymous_ids))
                    .select(F.input_file_name().alias("_file"), "message_id", "received_at"))
            found = rows if found is None else found.unionByName(rows)
        if found is None:
            return {}
        found.write.mode("overwrite").parquet(events_uri)
        return self._per_file(self.spark.read.parquet(events_uri))

    def _per_file(self, doomed: DataFrame) -> dict[str, tuple[str, int]]:
        """The doomed rows per file (``_file`` as Spark names it): by the file's URI, Spark's name and the count."""
        return {self.storage.from_spark_uri(row["_file"]): (row["_file"], row["count"])
                for row in doomed.groupBy("_file").count().collect()}

    def _rewrite_marked(self, dataset: str, files: list[str],
                        mark: Callable[[DataFrame], DataFrame]) -> list[Rewrite]:
        """Rewrites the files of a dataset that hold rows ``mark`` dooms."""
        schema = self.storage.parquet_schema(max(files, key=_file_name))
        frame = mark(self.spark.read.schema(schema).parquet(*files).withColumn("_file", F.input_file_name()))
        affected = self._per_file(frame.where("_doomed"))
        return self._rewrite(dataset, dataset, affected, schema, mark) if affected else []

    def _rewrite(self, dataset: str, slot: str, affected: dict[str, tuple[str, int]], schema: StructType,
                 mark: Callable[[DataFrame], DataFrame]) -> list[Rewrite]:
        """Writes each affected file again without its doomed rows, with the dataset's ``schema``, one staged file
        per file (``<slot>/n=<i>/``; none when no row is left)."""
        files = sorted(affected)
        index = self.spark.createDataFrame([(affected[f][0], i) for i, f in enumerate(files)],
                                           "_file string, n int")
        frame = mark(self.spark.read.schema(schema).parquet(*files).withColumn("_file", F.input_file_name()))
        kept = frame.where(~F.col("_doomed")).join(F.broadcast(index), "_file").select(*schema.fieldNames(), "n")
        folder = join(self.stage, slot)
        kept.repartition("n").write.partitionBy("n").parquet(folder)
        staged: dict[int, str] = {}
        for info in self.storage.list_files(folder):
            if info.uri.endswith(".parquet"):
                number = int(relative_path(info.uri, folder).split("/", 1)[0][len("n="):])
                if number in staged:
                    raise RuntimeError(f"rewriting {files[number]} gave more than one file")
                staged[number] = info.uri
        return [Rewrite(dataset, file, staged.get(i), affected[file][1]) for i, file in enumerate(files)]


def finish_deletion(storage: LakeStorage, layout: LakeLayout,
                    progress: Callable[[str], None] = print) -> dict | None:
    """Switches the files of the source's journaled deletion (again, if a crash stopped it), writes its report and
    clears the journal and the stage; its report, or None when no deletion was journaled."""
    state = SourceState(storage, layout.state)
    if not storage.exists(state.deletion_uri):
        return None
    journal = Journal.from_json(storage.read_text(state.deletion_uri))
    for rewrite in journal.rewrites:
        if rewrite.staged is None:
            storage.delete(rewrite.file)
        elif storage.exists(rewrite.staged):  # gone once it replaced the file
            storage.replace(rewrite.staged, rewrite.file)
    report = deletion_report(journal, datetime.now(UTC))
    storage.write_text(layout.deletion_report(journal.deletion_id), json.dumps(report, indent=1) + "\n")
    storage.delete(state.deletion_uri)
    storage.delete(layout.stage("deletion"), recursive=True)
    progress(f"deletion {journal.deletion_id}: {report['rows_deleted']} rows deleted, "
             f"{report['files_rewritten']} files rewritten, {report['files_removed']} removed")
    return report


def _file_name(uri: str) -> str:
    """A data file's name: ``part-<run id>-<n>`` sorts by the run that wrote it."""
    return uri.rsplit("/", 1)[-1]
