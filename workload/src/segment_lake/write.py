"""Write: a run's tables in one Spark job into the run's stage folder (publish.py then moves them into the lake).

Rows arrive grouped by (table, partition) (the parse stage's shuffle) and are sorted within each task; each task
casts and writes its tables one file after another (``jvm/WriteTables.java``), and the values a column cannot hold
to discards files. The job reports the files it wrote (a retried task's leftovers are not among them).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from .column_types import ColumnType
from .jvm_code import load_class
from .lake_columns import PARQUET_SETTINGS
from .records import Inferred, Written, WrittenFile
from .storage import LakeStorage, join

if TYPE_CHECKING:
    from .environment import SyncEnvironment

DATA, DISCARDS, LANDED, DUPLICATES = "data", "discards", "landed", "duplicates"
# A discarded value's record: where it was, which event had it, the value as text and why it was discarded.
DISCARD_COLUMNS = (("table_name", ColumnType.STRING), ("column_name", ColumnType.STRING),
                   ("message_id", ColumnType.STRING), ("received_at", ColumnType.TIMESTAMP),
                   ("value", ColumnType.STRING), ("reason", ColumnType.STRING))


def write_tables(events: DataFrame, columns: dict[str, list[tuple[str, str]]], keys: list[str], stage_uri: str,
                 max_records_per_file: int, max_columns: int) -> list[WrittenFile]:
    """Write ``events`` (table, partition, _message_id, _received_at, fields, discards) as Parquet
    below ``stage_uri``, each table with its ``columns`` (name, type) in order, one task per partition
    of ``events``. Values named like a partition key (``keys``), and values their column's type
    cannot hold without loss, or of a column a table at its limit of ``max_columns`` could not take, go to discards
    files; each task writes a landed file of its data rows."""
    spark = events.sparkSession
    load_class(spark, "WriteTables")
    writer = spark.sparkContext._jvm.segmentlake.WriteTables
    rows = events.select(*writer.READS).sortWithinPartitions("table", "partition")  # the columns it reads, by name
    listing = writer.write(
        spark._jsparkSession, rows._jdf, json.dumps({t: [list(c) for c in cols] for t, cols in columns.items()}),
        stage_uri, json.dumps(keys), max_records_per_file, max_columns, json.dumps(PARQUET_SETTINGS),
        ", ".join(f"{name} {column_type}" for name, column_type in DISCARD_COLUMNS))
    written = []
    for line in listing.splitlines():
        kind, table, partition_path, uri, count = line.split("\t")
        written.append(WrittenFile(kind, table if kind == DATA else None, partition_path if kind == DATA else None,
                                   uri, int(count)))
    return written


def write_duplicates(duplicates: DataFrame, count: int, stage_uri: str, storage: LakeStorage) -> list[WrittenFile]:
    """Write the record of a run's ``count`` dropped duplicates as one Parquet file below ``stage_uri``."""
    folder = join(stage_uri, DUPLICATES)
    duplicates.coalesce(1).write.parquet(folder)
    return [WrittenFile(DUPLICATES, None, None, f.uri, count) for f in storage.list_files(folder)
            if f.uri.endswith(".parquet")]


def write(env: SyncEnvironment, inferred: Inferred) -> Written:
    """Writes every table and the discards in one job, and the duplicates' record, into the run's stage folder."""
    schemas, deduped = inferred.schemas, inferred.deduped
    stage = env.layout.stage(inferred.run.run_id)
    env.storage.delete(stage, recursive=True)  # a crashed attempt's files
    files = write_tables(deduped.accepted, {table: list(schema.columns) for table, schema in schemas.items()},
                         env.keys, stage, env.settings.max_records_per_file, env.settings.max_columns_per_table)
    if deduped.duplicate_count:
        files += write_duplicates(deduped.duplicates.drop("_row"), deduped.duplicate_count, stage, env.storage)
    return Written(inferred, files)
