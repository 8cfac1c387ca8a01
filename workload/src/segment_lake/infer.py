"""Infer: each table's columns and their types, within the source's table and column limits.

Column types are inferred over a whole run, merged with the catalog's, over an explicit lattice.

bigint < decimal(38,6) < string; boolean < string; timestamp < string. A column
the catalog already has keeps its type; new columns go at the end, in the order
first seen (earliest receivedAt, then messageId, then key position).
"""
from __future__ import annotations

import json
from dataclasses import replace
from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .catalog import TableInfo, same_location
from .column_types import ColumnType, ValueKind
from .errors import InvalidSettings
from .jvm_code import load_class
from .lake_columns import ALWAYS_TIMESTAMP
from .layout import owning_source
from .names import DISCARDS_TABLE, DUPLICATES_TABLE, refuse_legacy_tables
from .progress import count
from .records import Deduped, Inferred, Observed, TableSchema
from .storage import FrameWrite

if TYPE_CHECKING:
    from .environment import SyncEnvironment


def least_upper_bound(a: ColumnType, b: ColumnType) -> ColumnType:
    if a == b:
        return a
    if {a, b} == {ColumnType.BIGINT, ColumnType.DECIMAL}:
        return ColumnType.DECIMAL
    return ColumnType.STRING


def type_of_kinds(kinds) -> ColumnType:
    """The type of a column whose values in this run had ``kinds`` (ValueKind tags: ``i``, ``d``, ...)."""
    return reduce(least_upper_bound, sorted(ValueKind(k).column_type for k in kinds))


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


def observe(events: DataFrame) -> Observed:
    """Observed over every event of the run, in one pass (``jvm/ObserveColumns.java``)."""
    spark = events.sparkSession
    load_class(spark, "ObserveColumns")
    observer = spark.sparkContext._jvm.segmentlake.ObserveColumns
    found = json.loads(observer.observe(events.select(*observer.READS)._jdf))  # the columns it reads, by name
    columns: dict[str, list] = {}
    for table, column, kinds, received_at, message_id, position in found["columns"]:
        columns.setdefault(table, []).append((column, set(kinds), (received_at, message_id, position)))
    partitions: dict[str, list[str]] = {}
    for table, path in sorted(found["partitions"]):
        partitions.setdefault(table, []).append(path)
    return Observed(columns, partitions)


def infer(env: SyncEnvironment, deduped: Deduped) -> Inferred:
    """Each table's schema (catalog columns plus this run's new ones), the catalog's columns, and what the run's
    events showed; a source's new tables beyond its limit are refused, and a table's new columns beyond its."""
    refused_count = 0
    observed = observe(deduped.accepted)
    tables = sorted(observed.columns)
    catalog = _own_tables(env, tables)
    existing = {table: catalog[table] and catalog[table].columns for table in tables}
    refused = _tables_over_limit(env, tables, existing)
    tables = [table for table in tables if table not in refused]
    refuse_legacy_tables(env.catalog, env.settings, [table for table in tables if existing[table] is None])
    limit = env.settings.max_columns_per_table
    schemas = {table: plan_schema(existing[table], [o for o in observed.columns[table] if o[0] not in env.keys],
                                  limit) for table in tables}
    for table, schema in schemas.items():
        if schema.refused:
            env.progress(f"infer: {table} has its limit of {limit:,} columns (--max-columns-per-table): the "
                         f"values of {count(len(schema.refused), 'new column')} go to {DISCARDS_TABLE}")
    if refused:
        deduped, refused_count = _reject_tables(env, deduped, refused)
    return Inferred(schemas, catalog, observed, deduped, refused_count)


def _own_tables(env: SyncEnvironment, tables: list[str]) -> dict[str, TableInfo | None]:
    """The catalog's view of the run's tables and the source's record tables (None for a new one), once it is clear
    that each existing table (the discards and duplicates tables too) is this source's: a table of the same name that
    another source (or lake) writes would take none of this run's rows, which no query could then see."""
    settings, prefix = env.settings, env.settings.table_name_prefix
    records = {prefix + DISCARDS_TABLE: env.layout.discards, prefix + DUPLICATES_TABLE: env.state.duplicates_uri}
    found = env.catalog.describe_tables(settings.database, sorted({*tables, *records}))
    for table, info in found.items():
        if info is not None and not same_location(info.location, records.get(table) or env.table_location(table)):
            owner = owning_source(info.location)
            raise InvalidSettings(
                f"table {settings.database}.{table} holds "
                f"{f'source {owner}' if owner else 'another lake'}'s rows ({info.location}), not source "
                f"{settings.source_id}'s: give each source its own --glue-database (or --source-slug), or a "
                f"--table-prefix")
    return found


def _tables_over_limit(env: SyncEnvironment, tables: list[str], existing: dict) -> tuple[str, ...]:
    """The run's new tables beyond the source's limit (the first by name are created while there is room):
    the tables the source has are its folders in the lake and the run's tables the catalog has."""
    limit, prefix = env.settings.max_tables_per_source, len(env.settings.table_name_prefix)
    have = set(env.layout.table_folders(env.storage)) | {t[prefix:] for t in tables if existing[t] is not None}
    new = [table for table in tables if table[prefix:] not in have]
    refused = tuple(new[max(0, limit - len(have)):])
    if refused:
        env.progress(f"infer: source {env.settings.source_id} has its limit of {limit:,} tables "
                     f"(--max-tables-per-source): the events of {count(len(refused), 'new table')} are rejected")
    return refused


def _reject_tables(env: SyncEnvironment, deduped: Deduped, tables: tuple[str, ...]) -> tuple[Deduped, int]:
    """Leaves the events of ``tables`` out, recorded as rejected with their file, messageId and the reason
    (the input file keeps the event)."""
    over = F.col("table").isin(list(tables))
    reason = F.concat(F.lit(f"the source has its limit of {env.settings.max_tables_per_source} tables "
                            f"(--max-tables-per-source): no table "), F.col("table"),
                      F.lit(" was created; the input file keeps the event"))
    records = deduped.accepted.where(over).select("file", reason.alias("reason"), F.col("_message_id").alias("message_id"))
    refused = records.count()
    env.storage.write_frame(records.repartition(1), env.layout.rejected_of_run(deduped.run.run_id),
                            FrameWrite("json", "append"))
    return replace(deduped, accepted=deduped.accepted.where(~over), row_count=deduped.row_count - refused), refused
