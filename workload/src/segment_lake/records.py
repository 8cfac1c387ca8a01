"""The records the sync's stages pass along the chain (sync.py): each stage takes the record before it and returns its
own, which carries the run and says what the stage did (``summary``, its progress line); the run's report takes
its figures from each (report.RunResult.add).

    discover -> Run -> parse -> Parsed -> dedup -> Deduped -> infer -> Inferred -> write -> Written
    -> publish -> Published -> catalog, report, state
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from .catalog import TableInfo
from .parquet_tables import WrittenFile
from .progress import count
from .state import RunManifest


@dataclass(frozen=True)
class Run:
    """The run every record belongs to: its manifest (id, files, start), and whether it redoes an attempt of that
    run that stopped (whose published files the redo replaces) instead of a new run."""

    manifest: RunManifest
    redo: bool

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    def summary(self) -> str:
        """A redo of an unfinished run, a replay, new files or none."""
        files = count(len(self.manifest.files), "file")
        if self.redo:
            return f"redoing unfinished run {self.run_id} over {files}"
        if self.manifest.replay:
            return f"replay of {self.manifest.replay[0]} to {self.manifest.replay[1]}: {files}"
        return count(len(self.manifest.files), "new file") if self.manifest.files else "no new files; nothing to do"


@dataclass(frozen=True)
class Parsed:
    """The run's lines, parsed: the events (rejected lines and suppressed users' events left out), the counts, and
    the span of the events' receivedAt in microseconds since the epoch (None without events; kept as numbers,
    because receivedAt may be any year from 1 to 9999, beyond what a Python datetime can be shifted by)."""

    run: Run
    events: DataFrame
    read_count: int
    rejected_count: int
    span: tuple[int, int] | None
    suppressed_count: int = 0

    def summary(self) -> str:
        return (f"{count(self.read_count, 'line')}, {self.rejected_count} rejected"
                + (f", {count(self.suppressed_count, 'event')} of suppressed users" if self.suppressed_count else ""))


@dataclass(frozen=True)
class Deduped:
    """The events to land (``accepted``), and the duplicates: their row ids and record (on disk until the run ends)."""

    run: Run
    accepted: DataFrame
    duplicates: DataFrame
    duplicate_count: int
    row_count: int

    def summary(self) -> str:
        return f"{count(self.row_count, 'event')} to land, {count(self.duplicate_count, 'duplicate')}"


@dataclass(frozen=True)
class TableSchema:
    """Columns of one table in order, with their types; ``new_columns`` are the ones this run adds, ``refused``
    the ones it would have added beyond the table's column limit."""

    columns: tuple[tuple[str, str], ...]
    new_columns: tuple[str, ...]
    refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class Observed:
    """What one pass over a run's events saw: table -> [(column, kinds, first-seen key)], where the
    key is (receivedAt in microseconds, messageId, key position); and table -> its partition paths."""

    columns: dict[str, list[tuple[str, set[str], tuple]]]
    partitions: dict[str, list[str]]


@dataclass(frozen=True)
class Inferred:
    """Every table's schema for this run, the catalog's table (None for a new one; the source's discards and
    duplicates tables too, so that the catalog stage reads none of them again), what the events showed,
    and the events to write: ``deduped`` without those of new tables beyond the source's limit (``refused_count``
    of them, recorded as rejected)."""

    schemas: dict[str, TableSchema]
    catalog: dict[str, TableInfo | None]
    observed: Observed
    deduped: Deduped
    refused_count: int = 0

    @property
    def run(self) -> Run:
        return self.deduped.run

    @property
    def existing(self) -> dict[str, list[tuple[str, str]] | None]:
        """The catalog's columns of each table (None: a new one)."""
        return {table: info and info.columns for table, info in self.catalog.items()}

    def summary(self) -> str:
        new_columns = sum(len(schema.new_columns) for schema in self.schemas.values())
        return f"{count(len(self.schemas), 'table')}, {count(new_columns, 'new column')}"


@dataclass(frozen=True)
class Written:
    """The files the write stage left in the run's stage folder, of the tables ``inferred`` planned."""

    inferred: Inferred
    files: list[WrittenFile]

    @property
    def run(self) -> Run:
        return self.inferred.run

    def summary(self) -> str:
        return f"{count(len(self.files), 'file')} staged"


@dataclass(frozen=True)
class Published:
    """Rows published per table and partition, and the values discarded, of the files ``written``."""

    written: Written
    partitions: dict[str, dict[str, int]]
    discarded_value_count: int

    @property
    def run(self) -> Run:
        return self.written.run

    @property
    def row_count(self) -> int:
        return sum(sum(counts.values()) for counts in self.partitions.values())

    def summary(self) -> str:
        return (f"{count(sum(map(len, self.partitions.values())), 'partition')} of "
                f"{count(len(self.written.inferred.schemas), 'table')}, "
                f"{count(self.discarded_value_count, 'discarded value')}")
