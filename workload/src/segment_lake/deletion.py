"""Deleting users from a source's lake (``segment-lake delete-users``).

Their ids join the source's suppression list first, so that no later sync or replay of the same raw events lands
them again. Then the deletion finds the files that hold their rows (in every table of the source, the discarded
values and the duplicates' record), writes each of those files again without the rows into a stage kept with the
source's state (``state/<source>/deletion-stage/``: no lifecycle rule expires it), checks every staged file's row
count against its original's, and records old -> new in a journal (``state/<source>/deletion.json``). Only then
does a lake file change: each is replaced under its own name (``LakeStorage.replace``), or removed when none of its
rows is left, so a reader sees each file whole, before or after, never both and never neither. A crash before the
journal leaves the lake as it was (run the command again); a crash after it is finished by the next deletion or sync
of the source (``recovery.finish_unfinished``).

An Iceberg table (``--table-format iceberg``) is read through its catalog instead, and the keys (messageId and
receivedAt) of its rows of the users are staged; the switch deletes them in one copy-on-write commit a table, whose
snapshot names the deletion so that a redo skips it (iceberg_tables.delete_rows). The files that held the rows stay
until compaction expires the snapshots before the deletion.

Untouched: the raw input (``segment-logs/``, the user's own), rejected lines (they keep the raw line, which may name
the user, but they are not events: nothing in them is known to be a user's), and the landed index (messageIds and
times, which keep a redelivered event from landing twice).
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, LongType, StringType, StructType

from . import iceberg_tables
from .errors import InvalidSettings
from .journal import JournaledOperation, Record, begin, finish, summary
from .lake_columns import PARQUET_SETTINGS
from .layout import LakeLayout, file_name, table_of_folder
from .progress import count
from .state import SourceState, new_run_id
from .storage import OVERWRITE, FrameWrite, LakeStorage
from .suppression import SuppressionList
from .uris import join, relative_path, shown

DISCARDS, DUPLICATES = "discards", "duplicates"  # the datasets beside the tables
USER_COLUMNS = {"user_id": "user_ids", "anonymous_id": "anonymous_ids"}  # column -> the ids it is matched with
EVENT_COLUMNS = ("message_id", "received_at", "user_id", "anonymous_id")  # what finding the rows reads


@dataclass(frozen=True)
class Rewrite:
    """One lake file of a dataset (a table, ``discards`` or ``duplicates``) and its rewritten bytes in
    the stage (None: none of its rows is left, the file goes), with the rows deleted from it and both sizes in bytes
    (a staged file found gone while its original is unchanged is then known not to have been switched)."""

    dataset: str
    file: str
    staged: str | None
    deleted: int
    size: int = 0
    staged_size: int = 0


@dataclass(frozen=True)
class TableDelete:
    """An Iceberg table's rows of the users: the table (by its name in the lake, and its catalog's ``database.table``),
    the staged keys (message_id, received_at) of those rows and how many they are; deleted in one commit naming the
    deletion (iceberg_tables.delete_rows), which a redo finds."""

    dataset: str
    table: str
    keys: str
    deleted: int


@dataclass(frozen=True)
class Journal(Record):
    """A deletion's plan, written once every rewritten file is staged: the switch is replayed from it."""

    deletion_id: str
    source_id: str
    start_time: str
    user_ids: tuple[str, ...]
    anonymous_ids: tuple[str, ...]
    rewrites: tuple[Rewrite, ...] = field(default=())
    deletes: tuple[TableDelete, ...] = field(default=())
    # what the search looked at (tables, files, rows), so that "0 deleted" is visibly an answer
    examined: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def from_json(text: str) -> Journal:
        data = json.loads(text)
        return Journal(data["deletion_id"], data["source_id"], data["start_time"], tuple(data["user_ids"]),
                       tuple(data["anonymous_ids"]), tuple(Rewrite(**r) for r in data["rewrites"]),
                       tuple(TableDelete(**d) for d in data.get("deletes", [])), data.get("examined", {}))


@dataclass(frozen=True)
class DeletionReport(Record):
    """What a deletion removed, per dataset, with the files it rewrote and removed (``deletions/<source>/<id>.json``).
    ``files_not_switched`` still hold the users' rows: their staged rewrites were gone."""

    deletion_id: str
    source_id: str
    start_time: str
    finish_time: str
    user_ids: list[str]
    anonymous_ids: list[str]
    rows_deleted: int
    tables: dict[str, int]
    discarded_values_deleted: int
    duplicates_deleted: int
    files_rewritten: int
    files_removed: int
    files_not_switched: list[str]
    examined: dict[str, int]  # tables, files and rows searched

    def summary(self) -> list[str]:
        return summary(f"deletion {self.deletion_id}", f"{self.rows_deleted} rows deleted, {self.files_rewritten} "
                       f"files rewritten, {self.files_removed} removed", self.files_not_switched,
                       "the staged rewrites of {n} files were gone, so they still hold the users' rows",
                       "run delete-users again with the same ids")

    def told(self, layout: LakeLayout) -> list[str]:
        """What ``segment-lake delete-users`` prints: what it deleted and searched, and where its report is."""
        ids, examined = len(self.user_ids) + len(self.anonymous_ids), self.examined
        return [f"deleted {count(self.rows_deleted, 'row')} of {count(ids, 'id')} from "
                f"{count(len(self.tables), 'table')} ({count(self.files_rewritten, 'file')} rewritten, "
                f"{self.files_removed} removed), with {count(self.discarded_values_deleted, 'discarded value')} and "
                f"{count(self.duplicates_deleted, 'recorded duplicate')}; the ids are suppressed",
                f"  searched: {count(examined['rows'], 'row')} in {count(examined['files'], 'file')} of "
                f"{count(examined['tables'], 'table')}",
                f"  report: {shown(layout.deletion_report(self.deletion_id))}"]


def deletion_report(journal: Journal, finish_time: datetime, not_switched: tuple[str, ...] = ()) -> DeletionReport:
    """The report of a journaled deletion, from its rewrites."""
    rows: dict[str, int] = defaultdict(int)
    for change in (*journal.rewrites, *journal.deletes):
        rows[change.dataset] += change.deleted
    tables = {name: n for name, n in rows.items() if name not in (DISCARDS, DUPLICATES)}
    return DeletionReport(
        journal.deletion_id, journal.source_id, journal.start_time, finish_time.astimezone(UTC).isoformat(),
        list(journal.user_ids), list(journal.anonymous_ids), sum(tables.values()), dict(sorted(tables.items())),
        rows.get(DISCARDS, 0), rows.get(DUPLICATES, 0), sum(1 for r in journal.rewrites if r.staged is not None),
        sum(1 for r in journal.rewrites if r.staged is None), list(not_switched), dict(journal.examined))


def users_rows(schema: StructType, user_ids: tuple[str, ...], anonymous_ids: tuple[str, ...]) -> Column:
    """True for a row of one of the users: text columns match the ids as given, number columns their value (``7``
    matches a bigint 7 and a decimal 7.000000); rows of a table without the column are nobody's."""
    ids = {"user_ids": user_ids, "anonymous_ids": anonymous_ids}
    types = {f.name: f.dataType for f in schema.fields}
    either = F.lit(False)
    for column, kind in USER_COLUMNS.items():
        values = _as_type(ids[kind], types[column]) if column in types else []
        if values:
            either = either | F.col(column).isin(values)
    return F.coalesce(either, F.lit(False))


def _as_type(ids: tuple[str, ...], data_type) -> list:
    """The ids a column of ``data_type`` can hold, as its values."""
    if isinstance(data_type, StringType):
        return list(ids)
    if isinstance(data_type, LongType):
        return [int(v) for v in ids if re.fullmatch(r"-?\d{1,18}", v)]
    if isinstance(data_type, DecimalType):
        values = []
        for v in ids:
            try:
                number = Decimal(v)
            except InvalidOperation:
                continue
            if number.is_finite():
                values.append(number)
        return values
    return []


def mark_events(frame: DataFrame, events: DataFrame, time_column: str) -> DataFrame:
    """``frame`` with ``_doomed`` (or'ed with any it has): its row's messageId and ``time_column`` are those of one of
    ``events``."""
    keys = events.select(F.col("message_id").alias("_id"), F.col("received_at").alias("_at")).distinct()
    joined = frame.join(keys, (frame["message_id"] == keys["_id"]) & frame[time_column].eqNullSafe(keys["_at"]),
                        "left")
    doomed = F.col("_id").isNotNull()
    if "_doomed" in frame.columns:
        doomed = doomed | F.col("_doomed")
    return joined.withColumn("_doomed", doomed).drop("_id", "_at")


class UserDeletion:
    """Deletes users from one source's lake; the caller holds the source's lock (``check`` is called before the
    lake changes, and before each file's switch)."""

    def __init__(self, spark: SparkSession, storage: LakeStorage, layout: LakeLayout,
                 progress: Callable[[str], None] = print, check: Callable[[], None] = lambda: None) -> None:
        self.spark, self.storage, self.layout = spark, storage, layout
        self.state = SourceState(storage, layout.state)
        self.iceberg = iceberg_tables.recorded_tables(storage, layout)  # folder -> catalog name
        self.stage = self.state.deletion_stage_uri
        self.progress, self.check = progress, check

    def run(self, user_ids: tuple[str, ...], anonymous_ids: tuple[str, ...],
            now: datetime | None = None) -> DeletionReport:
        """Deletes the rows of these ids; returns the deletion's report."""
        now = now or datetime.now(UTC)
        if self.storage.exists(self.state.compaction_uri):  # its partitions' files are between two places
            raise InvalidSettings(f"source {self.layout.source_id} has an unfinished compaction: finish it with "
                                  f"`segment-lake compact` (or a sync), then delete the users")
        finish_unfinished_deletion(self.storage, self.layout, self.progress, self.check)
        tables = self._table_files()  # before anything changes: it may refuse
        SuppressionList(self.storage, self.state.suppressed_uri).add(list(user_ids), list(anonymous_ids), now)
        journal = Journal(new_run_id(now), self.layout.source_id, now.isoformat(), user_ids, anonymous_ids)
        rewrites, deletes, examined = self._plan(journal, tables)
        journal = Journal(**{**journal.__dict__, "rewrites": tuple(rewrites), "deletes": tuple(deletes),
                             "examined": examined})
        return begin(deletion(self.storage, self.layout, self.check), self.storage, journal, self.check,
                     self.progress)

    def _plan(self, journal: Journal, tables: dict[str, list[str]]
              ) -> tuple[list[Rewrite], list[TableDelete], dict[str, int]]:
        """Finds the users' rows, stages every affected file of the Parquet ``tables`` without them and the keys of
        those in Iceberg tables; also returns how many tables, files and rows it searched."""
        discards = self._files(self.layout.discards)
        # a user id of another type than its column's is not in the table but among the discarded values
        discarded = self._discarded_users(discards, journal)
        schemas = {table: self.storage.parquet_footer(max(files, key=file_name))[0] for table, files in tables.items()}

        def mark_table(frame: DataFrame) -> DataFrame:
            frame = frame.withColumn("_doomed", users_rows(frame.schema, journal.user_ids, journal.anonymous_ids))
            return mark_events(frame, discarded, "received_at") if discarded is not None else frame

        events_uri = join(self.stage, "events")
        counts, rows_examined = self._find_in_tables(tables, schemas, mark_table, events_uri)
        deletes, iceberg_files, iceberg_rows = self._find_in_iceberg(mark_table)
        examined = {"tables": len(tables) + len(self.iceberg),
                    "files": sum(map(len, tables.values())) + iceberg_files, "rows": rows_examined + iceberg_rows}
        rewrites = []
        for slot, (table, files) in enumerate(sorted(tables.items())):
            affected = {file: counts.pop(file) for file in files if file in counts}
            if affected:
                rewrites += self._rewrite(table, f"t{slot}", affected, mark_table)
        if counts:  # every file a row was found in is one of the listed
            raise RuntimeError(f"rows of the users were found in files not listed: {sorted(counts)[:3]}")
        found = ([events_uri] if rewrites else []) + [delete.keys for delete in deletes]
        if found:
            events = self.spark.read.parquet(*found).select("message_id", "received_at")
            for dataset, files, time_column in ((DISCARDS, discards, "received_at"),
                                                (DUPLICATES, self._files(self.state.duplicates_uri),
                                                 "original_received_at")):
                if files:
                    mark = lambda frame, t=time_column: mark_events(frame, events, t)  # noqa: E731
                    frame = mark(self._read(files))
                    affected = self._per_file(frame.where("_doomed"))
                    rewrites += self._rewrite(dataset, dataset, affected, mark) if affected else []
        return rewrites, deletes, examined

    def _files(self, root: str) -> list[str]:
        return [info.uri for info in self.storage.list_files(root) if info.uri.endswith(".parquet")]

    def _read(self, files: list[str], schema: StructType | None = None) -> DataFrame:
        """The files' rows with ``_file``, each file's name as Spark gives it; by default with the newest's schema."""
        schema = schema or self.storage.parquet_footer(max(files, key=file_name))[0]
        return self.spark.read.schema(schema).parquet(*files).withColumn("_file", F.input_file_name())

    def _table_files(self) -> dict[str, list[str]]:
        """Every Parquet table's files, by the table's name in the lake (its folder's, layout.table_of_folder); an
        Iceberg table's metadata names its files. Refuses an Iceberg table the source's record lacks: its files are
        not all live, and rewriting them would break it."""
        tables: dict[str, list[str]] = defaultdict(list)
        for info in self.storage.list_files(self.layout.tables):
            folder, _, path = relative_path(info.uri, self.layout.tables).partition("/")
            table = table_of_folder(folder)
            if table is None or table in self.iceberg:
                continue
            if path.startswith("metadata/") and path.endswith(".metadata.json"):
                raise InvalidSettings(f"table {table} of source {self.layout.source_id} is an Iceberg table the "
                                      "source's state does not record: run a sync of the source with --table-format "
                                      "iceberg (it records the tables it writes), then delete the users")
            if info.uri.endswith(".parquet"):
                tables[table].append(info.uri)
        return dict(tables)

    def _discarded_users(self, discards: list[str], journal: Journal) -> DataFrame | None:
        """The events (message_id, received_at) whose user id or anonymous id of the users was discarded, or None."""
        if not discards:
            return None
        ids = {"user_ids": journal.user_ids, "anonymous_ids": journal.anonymous_ids}
        match = F.lit(False)
        for column, kind in USER_COLUMNS.items():
            if ids[kind]:
                match = match | ((F.col("column_name") == column) & F.col("value").isin(list(ids[kind])))
        events = self._read(discards).where(match).select("message_id", "received_at")
        uri = join(self.stage, "discarded-users")
        self.storage.write_frame(events, uri, OVERWRITE)
        found = self.spark.read.parquet(uri)
        return found if found.limit(1).count() else None

    def _find_in_tables(self, tables: dict[str, list[str]], schemas: dict[str, StructType],
                        mark: Callable[[DataFrame], DataFrame], events_uri: str) -> tuple[dict[str, tuple[str, int]], int]:
        """Rows of the users per file of every table, and how many rows the tables hold (from the files' footers);
        the users' messageIds and times go to ``events_uri``. One read per set of tables whose user columns have the
        same types (a bigint userId cannot be read as text)."""
        groups: dict[str, list[str]] = defaultdict(list)
        narrow: dict[str, StructType] = {}
        for table, files in tables.items():
            schema = StructType([f for f in schemas[table].fields if f.name in EVENT_COLUMNS])
            narrow[schema.json()] = schema
            groups[schema.json()] += files
        found, searched = None, 0
        for key, files in groups.items():
            searched += self.spark.read.schema(narrow[key]).parquet(*files).count()  # from the footers alone
            rows = mark(self._read(files, narrow[key])).where("_doomed").select("_file", "message_id", "received_at")
            found = rows if found is None else found.unionByName(rows)
        if found is None:
            return {}, 0
        self.storage.write_frame(found, events_uri, OVERWRITE)
        return self._per_file(self.spark.read.parquet(events_uri)), searched

    def _find_in_iceberg(self, mark: Callable[[DataFrame], DataFrame]) -> tuple[list[TableDelete], int, int]:
        """The users' rows in the Iceberg tables, read through their catalog, with their keys staged (``i<n>/t=<table
        name>/``); and how many files and rows the tables hold. One read per set of tables whose user columns have
        the same types, as for Parquet tables."""
        groups: dict[str, list[DataFrame]] = defaultdict(list)
        files = 0
        for name, table in sorted(self.iceberg.items()):
            if not self.spark.catalog.tableExists(table):
                if self.storage.exists(f"{self.layout.table(name)}/metadata"):  # made: the session cannot see it
                    raise InvalidSettings(f"Iceberg table {table} is not in the catalog this command opened: run it "
                                          "where the syncs of the source run (their catalog), then delete the users")
                continue  # recorded by a sync that died before making it
            files += iceberg_tables.data_files(self.spark, table)
            frame = self.spark.table(table)
            frame = frame.select(*(column for column in frame.columns if column in EVENT_COLUMNS))
            groups[frame.schema.json()].append(frame.withColumn("t", F.lit(name)))
        deletes, searched = [], 0
        for slot, frames in enumerate(groups.values()):
            frame = reduce(DataFrame.unionByName, frames)
            searched += frame.count()
            keys = join(self.stage, f"i{slot}")
            self.storage.write_frame(mark(frame).where("_doomed").select("message_id", "received_at", "t"), keys,
                                     FrameWrite(mode="overwrite", partition_by=("t",)))
            found = self.spark.read.parquet(keys).groupBy("t").count().collect() \
                if self.storage.list_folders(keys) else []  # none written: no t=... folder, no column t
            for row in found:
                deletes.append(TableDelete(row["t"], self.iceberg[row["t"]], join(keys, f"t={row['t']}"), row["count"]))
        return sorted(deletes, key=lambda d: d.dataset), files, searched

    def _per_file(self, doomed: DataFrame) -> dict[str, tuple[str, int]]:
        """The doomed rows per file (``_file`` as Spark names it): by the file's URI, Spark's name and the count."""
        return {self.storage.from_spark_uri(row["_file"]): (row["_file"], row["count"])
                for row in doomed.groupBy("_file").count().collect()}

    def _rewrite(self, dataset: str, slot: str, affected: dict[str, tuple[str, int]],
                 mark: Callable[[DataFrame], DataFrame]) -> list[Rewrite]:
        """Writes each affected file again without its doomed rows and with its own schema, one staged file per file
        (``<slot>-<schema>/n=<i>/``; none when no row is left). Files of one schema are written by one Spark job. Each
        staged file must hold its original's rows less the deleted ones (from the footers) before the journal lets
        the switch begin."""
        by_schema: dict[str, list[str]] = defaultdict(list)
        schemas: dict[str, StructType] = {}
        rows: dict[str, int] = {}
        for file in sorted(affected):
            schema, rows[file] = self.storage.parquet_footer(file)
            schemas[schema.json()] = schema
            by_schema[schema.json()].append(file)
        rewrites = []
        for group, (key, files) in enumerate(by_schema.items()):
            schema = schemas[key]
            index = self.spark.createDataFrame([(affected[f][0], i) for i, f in enumerate(files)], "_file string, n int")
            kept = (mark(self._read(files, schema)).where(~F.col("_doomed")).join(F.broadcast(index), "_file")
                    .select(*schema.fieldNames(), "n"))
            folder = join(self.stage, f"{slot}-{group}")
            self.storage.write_frame(kept.repartition("n"), folder, FrameWrite(partition_by=("n",), options=PARQUET_SETTINGS))
            staged: dict[int, tuple[str, int]] = {}
            for info in self.storage.list_files(folder):
                if info.uri.endswith(".parquet"):
                    number = int(relative_path(info.uri, folder).split("/", 1)[0][len("n="):])
                    if number in staged:
                        raise RuntimeError(f"rewriting {files[number]} gave more than one file")
                    staged[number] = (info.uri, info.size)
            for i, file in enumerate(files):
                kept = self.storage.parquet_footer(staged[i][0])[1] if i in staged else 0
                if kept != rows[file] - affected[file][1]:
                    raise RuntimeError(f"the rewrite of {file} holds {kept} rows, not {rows[file]} - "
                                       f"{affected[file][1]}: nothing was changed; run delete-users again")
                rewrites.append(Rewrite(dataset, file, staged[i][0] if i in staged else None, affected[file][1],
                                        self.storage.size(file) or 0, staged[i][1] if i in staged else 0))
        return rewrites


def deletion(storage: LakeStorage, layout: LakeLayout,
             check: Callable[[], None] = lambda: None) -> JournaledOperation[Journal, DeletionReport]:
    """The source's deletion as a journaled operation (journal.py); ``check`` runs before each file's switch: the
    caller still holds the lock."""

    def switch(journal: Journal) -> DeletionReport:
        for delete in journal.deletes:
            check()
            storage.delete_rows(delete.table, delete.keys, journal.deletion_id)
        not_switched = []
        for rewrite in journal.rewrites:
            check()
            if rewrite.staged is None:
                storage.delete(rewrite.file)
            elif storage.exists(rewrite.staged):  # gone once it replaced the file
                storage.replace(rewrite.staged, rewrite.file)
            elif rewrite.size != rewrite.staged_size and storage.size(rewrite.file) == rewrite.size:
                not_switched.append(rewrite.file)  # its staged file was removed by hand: the original is still there
        return deletion_report(journal, datetime.now(UTC), tuple(not_switched))

    files = layout.state_files
    return JournaledOperation(files.deletion_uri, files.deletion_stage_uri, Journal.from_json, switch,
                              lambda j: layout.deletion_report(j.deletion_id))


def finish_unfinished_deletion(storage: LakeStorage, layout: LakeLayout, progress: Callable[[str], None] = print,
                               check: Callable[[], None] = lambda: None) -> None:
    """Finishes the deletion a crash stopped after its journal, or removes the stage of one that died before it."""
    finish(deletion(storage, layout, check), storage, progress)
