"""Column types: inferred over a whole run, merged with the catalog's, over an explicit lattice.

bigint < decimal(38,6) < string; boolean < string; timestamp < string. A column
the catalog already has keeps its type; new columns go at the end, in the order
first seen (earliest receivedAt, then messageId, then key position).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame

from .column_types import ColumnType, ValueKind
from .jvm_code import load_class

# Segment's timestamp fields are timestamps whatever a run's values look like.
ALWAYS_TIMESTAMP = ("timestamp", "original_timestamp", "sent_at", "received_at")


def least_upper_bound(a: ColumnType, b: ColumnType) -> ColumnType:
    if a == b:
        return a
    if {a, b} == {ColumnType.BIGINT, ColumnType.DECIMAL}:
        return ColumnType.DECIMAL
    return ColumnType.STRING


def type_of_kinds(kinds) -> ColumnType:
    """The type of a column whose values in this run had ``kinds`` (ValueKind tags: ``i``, ``d``, ...)."""
    return reduce(least_upper_bound, sorted(ValueKind(k).column_type for k in kinds))


@dataclass(frozen=True)
class TableSchema:
    """Columns of one table in order, with their types; ``new_columns`` are the ones this run adds, ``refused``
    the ones it would have added beyond the table's column limit."""

    columns: tuple[tuple[str, str], ...]
    new_columns: tuple[str, ...]
    refused: tuple[str, ...] = ()


def plan_schema(existing: list[tuple[str, str]] | None, observed: list[tuple[str, set[str], tuple]],
                max_columns: int) -> TableSchema:
    """Merge the catalog's columns (``existing``, or None for a new table) with this run's
    ``observed`` columns: (column, kinds seen, first-seen key), up to ``max_columns`` in all (the first seen win)."""
    columns = list(existing or [])
    known = {name for name, _ in columns}
    new, refused = [], []
    for column, kinds, _ in sorted(observed, key=lambda item: item[2]):
        if column in known or not kinds:  # a column only ever null this run waits for a value
            continue
        if len(columns) >= max_columns:
            refused.append(column)
            continue
        inferred = ColumnType.TIMESTAMP if column in ALWAYS_TIMESTAMP else type_of_kinds(kinds)
        columns.append((column, inferred))
        known.add(column)
        new.append(column)
    return TableSchema(tuple(columns), tuple(new), tuple(refused))


@dataclass(frozen=True)
class Observed:
    """What one pass over a run's events saw: table -> [(column, kinds, first-seen key)], where the
    key is (receivedAt in microseconds, messageId, key position); and table -> its partition paths."""

    columns: dict[str, list[tuple[str, set[str], tuple]]]
    partitions: dict[str, list[str]]


def observe(events: DataFrame) -> Observed:
    """Observed over every event of the run, in one pass (``jvm/ObserveColumns.java``)."""
    spark = events.sparkSession
    load_class(spark, "ObserveColumns")
    found = json.loads(spark.sparkContext._jvm.segmentlake.ObserveColumns.observe(
        events.select("table", "_message_id", "_received_at", "fields", "partition")._jdf))
    columns: dict[str, list] = {}
    for table, column, kinds, received_at, message_id, position in found["columns"]:
        columns.setdefault(table, []).append((column, set(kinds), (received_at, message_id, position)))
    partitions: dict[str, list[str]] = {}
    for table, path in sorted(found["partitions"]):
        partitions.setdefault(table, []).append(path)
    return Observed(columns, partitions)
