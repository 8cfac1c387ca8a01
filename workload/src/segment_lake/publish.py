"""Publish: a run's written files move from its stage folder into the lake under names of the run
(layout.data_file_name), so a redone run overwrites its own files; a redo first removes what an earlier attempt of
the run left."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from segment_lake_contract import DATE_PARTITIONS, hourly

from . import iceberg_tables
from .layout import data_file_name, written_by
from .parquet_tables import DATA, DISCARDS, DUPLICATES, LANDED, WrittenFile
from .pool import run_all
from .records import Published, Written
from .route import partition_span, partition_values
from .storage import LakeStorage
from .uris import join

if TYPE_CHECKING:
    from .environment import SyncEnvironment


def publish(env: SyncEnvironment, written: Written) -> Published:
    """Moves the run's files into their tables' partitions and the source's records, once the run still holds the
    lock, then removes the stage folder. A redo first removes what an earlier attempt of the run published. An
    Iceberg table's files then go live in one commit per table; a redo leaves a table it committed as it is."""
    env.lock.check()  # the files go live next
    date_partition = env.settings.date_partition

    def hour(partition: str) -> datetime | None:  # for a table partitioned by the hour of received_at
        span = partition_span(DATE_PARTITIONS[date_partition], partition_values(partition))
        return span[0] if span and hourly(date_partition) else None

    files, run_id = written.files, written.run.run_id
    outputs = env.layout.run_outputs(run_id)
    targets = {DISCARDS: outputs.discards, LANDED: outputs.landed, DUPLICATES: outputs.duplicates}
    iceberg = env.settings.table_format == iceberg_tables.FORMAT
    database = env.settings.database
    done = {table for table in {f.table for f in files if f.kind == DATA}
            if run_id in iceberg_tables.committed_runs(env.spark, database, table)} if iceberg and written.run.redo \
        else set()
    moved = move_files(env.storage, [f for f in files if f.table not in done],
                       lambda f: targets.get(f.kind) or join(env.table_location(f.table), f.partition),
                       run_id, written.run.redo)
    if iceberg:
        by_table = defaultdict(list)
        for file, uri in moved:
            if file.kind == DATA:
                by_table[file.table].append(iceberg_tables.DataFile(uri, file.partition, hour(file.partition)))
        run_all(env.storage.commit_table, [(database, table, table_files, run_id)
                                           for table, table_files in sorted(by_table.items())],
                iceberg_tables.threads(env.settings.catalog), "segment-lake-commit")
    env.storage.delete(outputs.stage, recursive=True)
    partitions: dict[str, dict[str, int]] = {}
    for file in files:
        if file.kind == DATA:
            counts = partitions.setdefault(file.table, {})
            counts[file.partition] = counts.get(file.partition, 0) + file.rows
    published = Published(written, partitions, sum(f.rows for f in files if f.kind == DISCARDS))
    if published.row_count != written.inferred.deduped.row_count:  # every accepted event once, or the run fails
        raise RuntimeError(f"wrote {published.row_count} rows for {written.inferred.deduped.row_count} accepted events")
    return published


def move_files(storage: LakeStorage, files: Iterable[WrittenFile], target: Callable[[WrittenFile], str], run_id: str,
               redo: bool) -> list[tuple[WrittenFile, str]]:
    """Moves ``files`` into their ``target`` folders under the run's names; returns each file with its new URI. A
    ``redo`` first removes the files an earlier attempt of the run left there."""
    by_target = defaultdict(list)
    for written in files:
        by_target[target(written)].append(written)
    moved = []
    for folder, written_files in sorted(by_target.items()):
        if redo:
            for old in storage.list_files(folder):
                if written_by(old.uri, run_id):
                    storage.delete(old.uri)
        moved += [(written, join(folder, data_file_name(run_id, index)))
                  for index, written in enumerate(sorted(written_files, key=lambda f: f.uri))]
    storage.publish_files([(written.uri, uri) for written, uri in moved])
    return moved
