"""Compacting a source's closed partitions (``segment-lake compact``): each partition's small files become as few
files as the target size allows, with the same rows.

Readers find a partition's files through its location in the catalog, so the merged files are written to a stage
kept with the source's state (``state/<source>/compaction-stage/``), their row counts checked against the old
files' (footers), and the plan journaled (``state/<source>/compaction.json``). Then, for every partition:
point the catalog at its merged files in the stage; remove the old files from the partition's folder and copy the
merged ones in; point the catalog back at the folder; remove the staged copies. A reader thus sees the old files or
the merged ones, never both and never neither (a query that listed files before a switch may fail and need a retry),
and the partition is back in its folder, where the sync, replays and deletions expect it. Each step can be found
done or not from the catalog and the files, so a crash is finished by the next compaction or sync of the source
(``recovery.finish_unfinished``).

It first compacts the sync's own state: the finished runs' processed lists become one object, and the landed index
one generation without the ids older than its horizon (``landed_index``).
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from pyspark.sql import SparkSession

from segment_lake_contract import DATE_PARTITIONS

from . import iceberg_tables
from .catalog import Catalog, location_key, same_location
from .catalog.projection import is_projected
from .deletion import finish_unfinished_deletion
from .errors import InvalidSettings
from .journal import JournaledOperation, Record, begin, finish, summary
from .lake_columns import PARQUET_SETTINGS
from .landed_index import IndexCompaction, compact_index
from .layout import LakeLayout, data_file_name, file_name
from .progress import count
from .route import partition_keys, partition_path, partition_span
from .state import SourceState, new_run_id
from .storage import FileInfo, FrameWrite, LakeStorage
from .uris import join


@dataclass(frozen=True)
class Merge:
    """One partition's compaction: its old files (names in ``folder``) and the merged ones (names in ``staged``,
    which they keep in ``folder``), and its rows."""

    table: str
    values: tuple[str, ...]
    folder: str
    staged: str
    old_files: tuple[str, ...]
    new_files: tuple[tuple[str, int], ...]  # (name, size in bytes)
    rows: int


@dataclass(frozen=True)
class StateCompaction:
    """What compacting the sync's own state did: the processed lists merged into one, and the landed index."""

    processed_lists_merged: int = 0
    landed_index: IndexCompaction = IndexCompaction()

    @staticmethod
    def from_dict(data: dict) -> StateCompaction:
        if "landed_index" in data:
            return StateCompaction(data["processed_lists_merged"], IndexCompaction(**data["landed_index"]))
        # a journal of version 0.x kept the index's figures flat, as landed_<name>
        return StateCompaction(data.get("processed_lists_merged", 0), IndexCompaction(
            **{key.removeprefix("landed_"): value for key, value in data.items() if key.startswith("landed_")}))


@dataclass(frozen=True)
class CompactionJournal(Record):
    compaction_id: str
    source_id: str
    database: str
    keys: tuple[str, ...]
    start_time: str
    merges: tuple[Merge, ...] = field(default=())
    state: StateCompaction = StateCompaction()
    data_files: int | None = None  # the source's data files before (None in a journal of version 0.x)

    @staticmethod
    def from_json(text: str) -> CompactionJournal:
        data = json.loads(text)
        merges = tuple(Merge(m["table"], tuple(m["values"]), m["folder"], m["staged"], tuple(m["old_files"]),
                             tuple((name, size) for name, size in m["new_files"]), m["rows"]) for m in data["merges"])
        return CompactionJournal(data["compaction_id"], data["source_id"], data["database"], tuple(data["keys"]),
                                 data["start_time"], merges, StateCompaction.from_dict(data.get("state", {})),
                                 data.get("data_files"))


@dataclass(frozen=True)
class TableCompaction:
    partitions: int = 0
    files_before: int = 0
    files_after: int = 0


@dataclass(frozen=True)
class CompactionReport(Record):
    """What a compaction merged (``compactions/<source>/<id>.json``): partitions and files per table, and rows
    (unchanged); the source's data files before and after; what it did to the sync's state. Partitions in
    ``partitions_not_compacted`` keep their files: their merged files were gone."""

    compaction_id: str
    source_id: str
    database: str
    start_time: str
    finish_time: str
    partitions_compacted: int
    rows: int
    merged_files_before: int
    merged_files_after: int
    tables: dict[str, TableCompaction]
    partitions_not_compacted: list[str]
    state: StateCompaction
    files_before: int | None  # None when finishing a journal of version 0.x, which did not count them
    files_after: int | None

    def summary(self) -> list[str]:
        return summary(f"compaction {self.compaction_id}", f"{self.partitions_compacted} partitions, "
                       f"{self.merged_files_before} files merged into {self.merged_files_after}",
                       self.partitions_not_compacted,
                       "the merged files of {n} partitions were gone, so they keep their files", "run compact again")

    def told(self, layout: LakeLayout) -> list[str]:
        """What ``segment-lake compact`` prints: its figures, what it did to the state, and where its report is."""
        lines = [f"compacted {self.source_id}: {self.partitions_compacted} partitions, {self.merged_files_before} "
                 f"files merged into {self.merged_files_after}; data files of the source: {self.files_before} before, "
                 f"{self.files_after} after"]
        index, done = self.state.landed_index, []
        if self.state.processed_lists_merged:
            done.append(f"{self.state.processed_lists_merged} processed lists merged into one")
        if index.runs_merged:
            done.append(f"landed index: {index.runs_merged} runs merged, {index.ids_after} of {index.ids_before} ids "
                        f"kept (received from {index.horizon})")
        if done:
            lines.append(f"  state: {'; '.join(done)}")
        if self.partitions_compacted:
            lines.append(f"  report: {layout.compaction_report(self.compaction_id)}")
        return lines


def partition_end(date_partition: str, values: tuple) -> datetime | None:
    """When a partition's time ends (UTC), from its values (an Iceberg table's hour, or the date partition's keys);
    None when they are not a time (never closed)."""
    span = iceberg_tables.hour_span(values) or partition_span(DATE_PARTITIONS[date_partition], values)
    return span[0] + span[1] if span else None


def files_wanted(size: int, target: int) -> int:
    """How many files of about ``target`` bytes ``size`` bytes make."""
    return max(1, math.ceil(size / target))


class Compaction:
    """Compacts one source's closed partitions; the caller holds the source's lock (``check`` runs before the lake
    changes, and before each partition's switches)."""

    def __init__(self, spark: SparkSession, storage: LakeStorage, catalog: Catalog, layout: LakeLayout, database: str,
                 table_prefix: str, date_partition: str, progress: Callable[[str], None] = print,
                 check: Callable[[], None] = lambda: None) -> None:
        self.spark, self.storage, self.catalog, self.layout = spark, storage, catalog, layout
        self.database, self.prefix, self.date_partition = database, table_prefix, date_partition
        self.keys = tuple(partition_keys(date_partition))
        self.state = SourceState(storage, layout.state)
        self.progress, self.check = progress, check

    def run(self, older_than_hours: float, target_file_mb: int, now: datetime | None = None) -> CompactionReport:
        """Compacts the partitions that ended more than ``older_than_hours`` ago; returns the report."""
        now = now or datetime.now(UTC)
        finish_unfinished_compaction(self.storage, self.catalog, self.layout, self.progress, self.check)
        pending = self.state.pending()
        if pending is not None:
            raise InvalidSettings(f"run {pending.run_id} of source {self.layout.source_id} is unfinished: sync first "
                                  f"(it redoes the run), then compact")
        journal = CompactionJournal(new_run_id(now), self.layout.source_id, self.database, self.keys, now.isoformat())
        self.check()  # the sync's state changes first: processed lists, then the landed index
        state = StateCompaction(self.state.merge_processed(journal.compaction_id),
                                compact_index(self.spark, self.storage, self.state, journal.compaction_id, self.check))
        listed = self.storage.list_files(self.layout.tables)
        candidates, iceberg = self._candidates(listed, now - timedelta(hours=older_than_hours), target_file_mb << 20)
        self._maintain(iceberg, now - timedelta(hours=older_than_hours), target_file_mb << 20)
        merges = []
        for slot, (table, partitions) in enumerate(sorted(candidates.items())):
            merges += self._merge(journal, slot, table, partitions, target_file_mb << 20)
        # the Parquet tables' files: an Iceberg table's folder also holds files no snapshot names any more
        iceberg_folders = tuple(location_key(self.layout.table_of_name(table, self.prefix)) + "/" for table in iceberg)
        journal = replace(journal, merges=tuple(merges), state=state, data_files=sum(
            1 for info in listed if info.uri.endswith(".parquet") and not location_key(info.uri).startswith(
                iceberg_folders)))
        operation = compaction(self.storage, self.catalog, self.layout, self.check)
        if merges:
            return begin(operation, self.storage, journal, self.check, self.progress)
        finish(operation, self.storage, self.progress)  # no journal: removes the stage
        return compaction_report(journal, now)

    def _candidates(self, listed: list[FileInfo], closed_before: datetime, target: int
                    ) -> tuple[dict[str, list[tuple[tuple[str, ...], str, list[FileInfo]]]], list[str]]:
        """The closed partitions of each Parquet table (by catalog name) whose files would be fewer merged, with
        their values, folder and files (only partitions the catalog has in their own folder); and the Iceberg
        tables."""
        folders: dict[str, list[FileInfo]] = defaultdict(list)
        for info in listed:
            if info.uri.endswith(".parquet"):
                folders[location_key(info.uri.rsplit("/", 1)[0])].append(info)
        found, projected, iceberg = defaultdict(list), [], []
        names = self.layout.table_folders(self.storage)
        tables = self.catalog.describe_tables(self.database, [self.prefix + name for name in names])  # one read
        for name in names:
            table, root = self.prefix + name, self.layout.table(name)
            known = tables[table]
            if known is None:
                continue
            if known.table_format == "iceberg":  # its metadata names its files: Iceberg's own procedures
                iceberg.append(table)
                continue
            if is_projected(known.parameters):  # no partition to point at the merged files
                projected.append(table)
                continue
            for values, location in self.catalog.partition_locations(self.database, table).items():
                if len(values) != len(self.keys):
                    raise InvalidSettings(f"table {table!r} has {len(values)} partition keys, not those of "
                                          f"--date-partition {self.date_partition}: pass the syncs' --date-partition")
                folder = join(root, partition_path(list(self.keys), values))
                files = folders.get(location_key(folder), [])
                end = partition_end(self.date_partition, values)
                if (end is None or end > closed_before or not same_location(location, folder)
                        or len(files) <= files_wanted(sum(f.size for f in files), target)):
                    continue
                found[table].append((values, folder, files))
        if projected:
            self.progress(f"compact: {count(len(projected), 'table')} with partition projection left as they are "
                          f"({', '.join(projected[:3])}{', ...' if len(projected) > 3 else ''}): Athena reads them at "
                          f"fixed folders, which a compaction cannot switch")
        return found, iceberg

    def _maintain(self, tables: list[str], closed_before: datetime, target: int) -> None:
        """Compacts each Iceberg table through Iceberg (one commit a step): its closed partitions whose files would
        be fewer merged, snapshots older than ``closed_before`` expired and orphan files a day older removed. No run is
        unfinished (run() refuses then), so no redo needs an expired snapshot or an orphan file."""
        done = []
        for table in tables:
            self.check()
            qualified = f"{self.database}.{table}"
            # as for Parquet: only partitions whose files would be fewer merged (else each compaction redoes them)
            ends = {values: partition_end(self.date_partition, values) for values, (files, size)
                    in iceberg_tables.partition_files(self.spark, qualified).items()
                    if files > files_wanted(size, target)}
            partitions = [values for values, end in ends.items() if end is not None and end <= closed_before]
            done.append(self.storage.maintain_table(qualified, partitions, target, closed_before))
        if tables:
            self.progress(f"compact: {count(len(tables), 'Iceberg table')} through Iceberg: "
                          f"{sum(d.files_merged for d in done)} files merged into {sum(d.files_written for d in done)}, "
                          f"{count(sum(d.snapshots_expired for d in done), 'snapshot')} expired, "
                          f"{count(sum(d.files_removed for d in done), 'file')} removed (only expired snapshots named them, "
                          "or none)")

    def _merge(self, journal: CompactionJournal, slot: int, table: str,
               partitions: list[tuple[tuple[str, ...], str, list[FileInfo]]], target: int) -> list[Merge]:
        """Writes each partition's rows again into the stage, ``<slot>/<partition path>/``, in files of about
        ``target`` bytes (by the table's bytes per row), with the union of its files' columns; every partition's
        merged files must hold its old files' rows (footers) before the journal lets a switch begin."""
        footers = {info.uri: self.storage.parquet_footer(info.uri) for _, _, files in partitions for info in files}
        schema = None
        for uri in sorted(footers, reverse=True):  # the newest file's column order first (files sort by run)
            schema = footers[uri][0] if schema is None else _union(schema, footers[uri][0])
        rows = sum(count for _, count in footers.values())
        size = sum(info.size for _, _, files in partitions for info in files)
        per_file = max(1, int(target / max(1.0, size / max(1, rows))))
        base = self.layout.table_of_name(table, self.prefix)
        stage = join(self.state.compaction_stage_uri, journal.compaction_id, str(slot))
        frame = (self.spark.read.option("basePath", base)
                 .schema(_with_keys(schema, self.keys))
                 .parquet(*[info.uri for _, _, files in partitions for info in files]))
        self.storage.write_frame(frame.repartition(*self.keys), stage, FrameWrite(
            partition_by=tuple(self.keys), options={**PARQUET_SETTINGS, "maxRecordsPerFile": per_file}))
        staged: dict[str, list[FileInfo]] = defaultdict(list)
        for info in self.storage.list_files(stage):
            if info.uri.endswith(".parquet"):
                staged[location_key(info.uri.rsplit("/", 1)[0])].append(info)
        merges = []
        for values, folder, files in partitions:
            staged_folder = join(stage, partition_path(list(self.keys), values))
            new = staged.get(location_key(staged_folder), [])
            old_rows = sum(footers[info.uri][1] for info in files)
            new_rows = sum(self.storage.parquet_footer(info.uri)[1] for info in new)
            if new_rows != old_rows:
                raise RuntimeError(f"the merged files of {table} {'/'.join(values)} hold {new_rows} rows, not "
                                   f"{old_rows}: nothing was changed; run compact again")
            merges.append(Merge(table, values, folder, staged_folder, tuple(file_name(i.uri) for i in files),
                                tuple((data_file_name(journal.compaction_id, n), i.size)
                                      for n, i in enumerate(sorted(new, key=lambda i: i.uri))), old_rows))
            self._name_staged(staged_folder, new, merges[-1])
        return merges

    def _name_staged(self, folder: str, new: list[FileInfo], merge: Merge) -> None:
        """Gives the staged files the names they keep in the partition's folder (layout.data_file_name: they sort
        after the files of the runs they merged)."""
        for info, (name, _) in zip(sorted(new, key=lambda i: i.uri), merge.new_files, strict=True):
            self.storage.move(info.uri, join(folder, name))


def _union(schema, other):
    from pyspark.sql.types import StructType

    names = set(schema.fieldNames())
    return StructType(list(schema.fields) + [f for f in other.fields if f.name not in names])


def _with_keys(schema, keys: tuple[str, ...]):
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([*schema.fields, *(StructField(key, StringType()) for key in keys)])


def compaction_report(journal: CompactionJournal, finish_time: datetime,
                      not_compacted: tuple[str, ...] = ()) -> CompactionReport:
    """The report of a journaled compaction, from its merges, without the partitions ``not_compacted``."""
    done = [m for m in journal.merges if merge_name(m) not in not_compacted]
    tables: dict[str, TableCompaction] = defaultdict(TableCompaction)
    for merge in done:
        counts = tables[merge.table]
        tables[merge.table] = TableCompaction(counts.partitions + 1, counts.files_before + len(merge.old_files),
                                              counts.files_after + len(merge.new_files))
    before, after = sum(len(m.old_files) for m in done), sum(len(m.new_files) for m in done)
    return CompactionReport(
        journal.compaction_id, journal.source_id, journal.database, journal.start_time,
        finish_time.astimezone(UTC).isoformat(), len(done), sum(m.rows for m in done), before, after,
        dict(sorted(tables.items())), list(not_compacted), journal.state, journal.data_files,
        None if journal.data_files is None else journal.data_files - before + after)


def merge_name(merge: Merge) -> str:
    """How a report names a merge's partition: its table and values."""
    return f"{merge.table} {'/'.join(merge.values)}"


def compaction(storage: LakeStorage, catalog: Catalog, layout: LakeLayout,
               check: Callable[[], None] = lambda: None) -> JournaledOperation[CompactionJournal, CompactionReport]:
    """The source's compaction as a journaled operation (journal.py): each step is found done or not from the catalog
    and the files; ``check`` runs before each: the caller still holds the lock."""

    def switch(journal: CompactionJournal) -> CompactionReport:
        not_compacted: list[str] = []
        by_table: dict[str, list[Merge]] = defaultdict(list)
        for merge in journal.merges:
            by_table[merge.table].append(merge)
        for table, merges in sorted(by_table.items()):
            locations = catalog.partition_locations(journal.database, table)
            # a partition dropped from the catalog since (by hand) is left as it is
            merges = [m for m in merges if m.values in locations]
            # 1. readers go to the merged files, unless a partition is back in its folder with them (step 3 done)
            at_home = [m for m in merges if same_location(locations[m.values], m.folder) and not _moved(storage, m)]
            away = [m for m in merges if same_location(locations[m.values], m.staged)]
            # merged files removed by hand: a partition at home keeps its old files, one away goes back to them
            lost = [m for m in at_home + away if not _staged(storage, m) and not _moved(storage, m)]
            not_compacted += [merge_name(m) for m in lost]
            to_stage = {m.values: m.staged for m in at_home if m not in lost}
            if to_stage:
                check()
                catalog.set_partition_locations(journal.database, table, journal.keys, to_stage)
            # 2. the folder gets the merged files in place of the old ones, while nobody reads it
            moving = [m for m in merges if m.values in to_stage or (m in away and m not in lost)]
            for merge in moving:
                check()
                for name in merge.old_files:
                    storage.delete(join(merge.folder, name))
                for name, size in merge.new_files:
                    if storage.size(join(merge.folder, name)) != size:
                        storage.copy(join(merge.staged, name), join(merge.folder, name))
            # 3. readers go back to the folder
            back = {m.values: m.folder for m in moving + [m for m in lost if m in away]}
            if back:
                check()
                catalog.set_partition_locations(journal.database, table, journal.keys, back)
        return compaction_report(journal, datetime.now(UTC), tuple(not_compacted))

    files = layout.state_files
    return JournaledOperation(files.compaction_uri, files.compaction_stage_uri, CompactionJournal.from_json, switch,
                              lambda j: layout.compaction_report(j.compaction_id))


def _staged(storage: LakeStorage, merge: Merge) -> bool:
    return all(storage.size(join(merge.staged, name)) == size for name, size in merge.new_files)


def _moved(storage: LakeStorage, merge: Merge) -> bool:
    """Whether the partition's folder holds the merged files and none of the old ones."""
    return (all(storage.size(join(merge.folder, name)) == size for name, size in merge.new_files)
            and not any(storage.exists(join(merge.folder, name)) for name in merge.old_files))


def finish_unfinished_compaction(storage: LakeStorage, catalog: Catalog, layout: LakeLayout,
                                 progress: Callable[[str], None] = print, check: Callable[[], None] = lambda: None) -> None:
    """Finishes what a crash stopped, in this order: a deletion (merged away, its old files would come back beside
    the merged ones), then a compaction."""
    finish_unfinished_deletion(storage, layout, progress, check)
    finish(compaction(storage, catalog, layout, check), storage, progress)
