"""Write a table's rows as Parquet under deterministic names, so a redone run overwrites its own files.

Spark writes into ``segment-stage/`` first (random part names); the files are then moved into the
table's partitions as ``part-<run id>-<n>.snappy.parquet``, after removing any file a crashed
attempt of the same run left there. Repartitioning by the partition keys gives one file per
partition (split at ``max_records_per_file``), never one tiny file per task.
"""
from __future__ import annotations

from collections import defaultdict

from pyspark.sql import DataFrame

from .storage import LakeStorage, join, relative_path


def write_parquet(rows: DataFrame, stage_uri: str, keys: list[str], max_records_per_file: int) -> None:
    (rows.repartition(*keys).write.mode("overwrite").partitionBy(*keys)
     .option("compression", "snappy").option("maxRecordsPerFile", max_records_per_file).parquet(stage_uri))


def publish(storage: LakeStorage, stage_uri: str, target_uri: str, run_id: str) -> list[str]:
    """Move staged files into ``target_uri`` under run-specific names; returns the partition paths."""
    staged = defaultdict(list)
    for info in storage.list_files(stage_uri):
        if info.uri.endswith(".parquet"):
            partition, _, _ = relative_path(info.uri, stage_uri).rpartition("/")
            staged[partition].append(info.uri)
    own_prefix = f"part-{run_id}-"
    for partition, files in sorted(staged.items()):
        partition_uri = join(target_uri, partition)
        for old in storage.list_files(partition_uri):
            if old.uri.rsplit("/", 1)[-1].startswith(own_prefix):
                storage.delete(old.uri)
        for index, source in enumerate(sorted(files)):
            storage.move(source, join(partition_uri, f"{own_prefix}{index:05d}.snappy.parquet"))
    storage.delete(stage_uri, recursive=True)
    return sorted(staged)
