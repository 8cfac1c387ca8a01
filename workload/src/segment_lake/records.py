"""The records the sync's stages pass along the chain (sync.py): each stage takes the one before's and returns its own.

    discover -> RunManifest (state.py) -> parse -> Parsed -> dedup -> Deduped -> infer -> Inferred
    -> write -> [WrittenFile] -> publish -> Published -> catalog, report
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from .catalog import TableInfo
from .progress import count


@dataclass(frozen=True)
class Parsed:
    """The run's lines, parsed: the events (rejected lines and suppressed users' events left out), the counts, and
    the span of the events' receivedAt in microseconds since the epoch (None without events; kept as numbers,
    because receivedAt may be any year from 1 to 9999, beyond what a Python datetime can be shifted by)."""

    events: DataFrame
    read_count: int
    rejected_count: int
    span: tuple[int, int] | None
    suppressed_count: int = 0


@dataclass(frozen=True)
class Deduped:
    """The events to land (``accepted``), and the duplicates: their row ids and record (on disk until the run ends)."""

    accepted: DataFrame
    duplicates: DataFrame
    duplicate_count: int
    row_count: int


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
    def existing(self) -> dict[str, list[tuple[str, str]] | None]:
        """The catalog's columns of each table (None: a new one)."""
        return {table: info and info.columns for table, info in self.catalog.items()}


@dataclass(frozen=True)
class WrittenFile:
    kind: str  # DATA, DISCARDS, LANDED (the messageId and receivedAt of the data rows) or DUPLICATES
    table: str | None  # DATA only
    partition: str | None  # DATA only; e.g. day=2024-01-02/hr=03
    uri: str
    rows: int


@dataclass(frozen=True)
class Published:
    """Rows published per table and partition, and the values discarded."""

    partitions: dict[str, dict[str, int]]
    discarded_value_count: int

    @property
    def row_count(self) -> int:
        return sum(sum(counts.values()) for counts in self.partitions.values())

    def summary(self, tables: int) -> str:
        return (f"{count(sum(map(len, self.partitions.values())), 'partition')} of {count(tables, 'table')}, "
                f"{count(self.discarded_value_count, 'discarded value')}")
