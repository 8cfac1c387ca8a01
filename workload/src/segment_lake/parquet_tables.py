"""The lake's Parquet tables, written in one Spark job by the JVM writer (``jvm/WriteTables.java``): rows arrive
grouped by (table, partition) and sorted within each task; each task casts and writes its tables one file after
another, and the values a column cannot hold to discards files. The job reports the files it wrote (a retried task's
leftovers are not among them). The storage port (storage.py) writes tables through it."""
from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import DataFrame

from .column_types import ColumnType
from .jvm_code import load_class
from .lake_columns import ICEBERG_PARQUET_SETTINGS, PARQUET_SETTINGS

DATA, DISCARDS, LANDED, DUPLICATES = "data", "discards", "landed", "duplicates"
# A discarded value's record: where it was, which event had it, the value as text and why it was discarded.
DISCARD_COLUMNS = (("table_name", ColumnType.STRING), ("column_name", ColumnType.STRING),
                   ("message_id", ColumnType.STRING), ("received_at", ColumnType.TIMESTAMP),
                   ("value", ColumnType.STRING), ("reason", ColumnType.STRING))


@dataclass(frozen=True)
class WrittenFile:
    kind: str  # DATA, DISCARDS, LANDED (the messageId and receivedAt of the data rows) or DUPLICATES
    table: str | None  # DATA only
    partition: str | None  # DATA only; e.g. day=2024-01-02/hr=03
    uri: str
    rows: int


@dataclass(frozen=True)
class TablePlan:
    """What a run writes: each table's ``columns`` (name, type) in order, below ``stage_uri``. Values named like a
    partition key (``keys``), values their column's type cannot hold without loss, and values of a column a table at
    its limit of ``max_columns`` could not take go to discards files."""

    columns: dict[str, list[tuple[str, str]]]
    keys: list[str]
    stage_uri: str
    max_records_per_file: int
    max_columns: int
    # iceberg: each file also holds the partition keys' values, after the table's columns (iceberg_tables.py), but
    # a file of a table partitioned by the hour of received_at, which has no key columns
    table_format: str = "parquet"
    hidden_hours: frozenset[str] = frozenset()

    @property
    def file_columns(self) -> dict[str, list[tuple[str, str]]]:
        if self.table_format != "iceberg":
            return self.columns
        return {table: [*columns, *((key, "string") for key in self.keys if table not in self.hidden_hours)]
                for table, columns in self.columns.items()}


def write_parquet_tables(events: DataFrame, plan: TablePlan) -> list[WrittenFile]:
    """Writes ``events`` (table, partition, _message_id, _received_at, fields, discards) as the ``plan`` says, one
    task per partition of ``events``; each task also writes a landed file of its data rows."""
    spark = events.sparkSession
    load_class(spark, "WriteTables")
    writer = spark.sparkContext._jvm.segmentlake.WriteTables
    rows = events.select(*writer.READS).sortWithinPartitions("table", "partition")  # the columns it reads, by name
    listing = writer.write(
        spark._jsparkSession, rows._jdf,
        json.dumps({t: [list(c) for c in cols] for t, cols in plan.file_columns.items()}),
        plan.stage_uri, json.dumps(plan.keys), plan.max_records_per_file, plan.max_columns,
        json.dumps(ICEBERG_PARQUET_SETTINGS if plan.table_format == "iceberg" else PARQUET_SETTINGS),
        ", ".join(f"{name} {column_type}" for name, column_type in DISCARD_COLUMNS))
    written = []
    for line in listing.splitlines():
        kind, table, partition_path, uri, count = line.split("\t")
        written.append(WrittenFile(kind, table if kind == DATA else None, partition_path if kind == DATA else None,
                                   uri, int(count)))
    return written
