"""Write a run's tables in one Spark job, then publish the files under deterministic names, so a
redone run overwrites its own files.

Rows arrive grouped by (table, partition) (the parse stage's shuffle) and are sorted within each
task; each task casts and writes its tables one file after another into ``segment-stage/``
(``jvm/WriteTables.java``). The
files the job reports (a retried task's leftovers are not among them) then move into the tables'
partitions as ``part-<run id>-<n>.snappy.parquet``, after removing any file a crashed attempt of
the same run left there.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyspark.sql import DataFrame

from .infer import ALWAYS_TIMESTAMP
from .jvm_code import load_class
from .storage import LakeStorage, join

DATA, DISCARDS, LANDED, DUPLICATES = "data", "discards", "landed", "duplicates"

# A column whose every value differs (an event's id and times) gains nothing from a Parquet dictionary
# but costs a hash lookup per value until Parquet gives up on it: a fifth of a sync's CPU at 1M events.
NO_DICTIONARY = ("message_id",) + ALWAYS_TIMESTAMP
PARQUET_SETTINGS = {f"parquet.enable.dictionary#{column}": "false" for column in NO_DICTIONARY}


@dataclass(frozen=True)
class WrittenFile:
    kind: str  # DATA, DISCARDS, LANDED (the messageId and receivedAt of the data rows) or DUPLICATES
    table: str | None  # DATA only
    partition: str | None  # DATA only; e.g. day=2024-01-02/hr=03
    uri: str
    rows: int


def write_tables(events: DataFrame, columns: dict[str, list[tuple[str, str]]], keys: list[str], stage_uri: str,
                 max_records_per_file: int, max_columns: int) -> list[WrittenFile]:
    """Write ``events`` (table, partition, _message_id, _received_at, fields, discards) as Parquet
    below ``stage_uri``, each table with its ``columns`` (name, type) in order, one task per partition
    of ``events``. Values named like a partition key (``keys``), and values their column's type
    cannot hold without loss, or of a column a table at its limit of ``max_columns`` could not take, go to discards
    files; each task writes a landed file of its data rows."""
    spark = events.sparkSession
    rows = (events.select("table", "partition", "_message_id", "_received_at", "fields", "discards")
            .sortWithinPartitions("table", "partition"))
    load_class(spark, "WriteTables")
    listing = spark.sparkContext._jvm.segmentlake.WriteTables.write(
        spark._jsparkSession, rows._jdf, json.dumps({t: [list(c) for c in cols] for t, cols in columns.items()}),
        stage_uri, json.dumps(keys), max_records_per_file, max_columns, json.dumps(PARQUET_SETTINGS))
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


def publish(storage: LakeStorage, files: Iterable[WrittenFile], target: Callable[[WrittenFile], str], run_id: str,
            redo: bool) -> None:
    """Move ``files`` into their ``target`` folders under run-specific names. A ``redo`` first removes the
    files an earlier attempt of the run left there."""
    by_target = defaultdict(list)
    for written in files:
        by_target[target(written)].append(written.uri)
    own_prefix = f"part-{run_id}-"
    for folder, uris in sorted(by_target.items()):
        if redo:
            for old in storage.list_files(folder):
                if old.uri.rsplit("/", 1)[-1].startswith(own_prefix):
                    storage.delete(old.uri)
        for index, source in enumerate(sorted(uris)):
            storage.move(source, join(folder, f"{own_prefix}{index:05d}.snappy.parquet"))
