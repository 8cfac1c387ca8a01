"""One sync of one source: discover, parse, route, dedup, infer, cast, write, catalog, state, report."""
from __future__ import annotations

import json
import os
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Callable

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import write
from .catalog import Catalog, TableChange
from .column_types import ColumnType
from .dedup import DEDUP_WINDOW_DAYS, duplicate_rows
from .discover import new_files, read_lines
from .errors import InvalidSettings, classify, jvm_failure
from .layout import LakeLayout
from .infer import TableSchema, observe, plan_schema
from .parse import parse_lines
from .report import RunResult, TableResult, render
from .route import partition_keys, partition_values
from .settings import SyncSettings
from .state import RunManifest, SourceState
from .session import jvm_exit_code
from .storage import LakeStorage, join, relative_path, write_text_without_spark

DISCARDS_TABLE = "segment_discards"
DISCARD_COLUMNS = [("table_name", ColumnType.STRING), ("column_name", ColumnType.STRING),
                   ("message_id", ColumnType.STRING), ("received_at", ColumnType.TIMESTAMP),
                   ("value", ColumnType.STRING), ("reason", ColumnType.STRING)]

Progress = Callable[[str], None]


_STARTED = time.monotonic()


def stderr_progress(line: str) -> None:
    """Progress on stderr, with the seconds since the process started (JVM start-up included)."""
    print(f"segment-lake: [{time.monotonic() - _STARTED:6.1f}s] {line}", file=sys.stderr, flush=True)


def new_run_id(now: datetime) -> str:
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


class Sync:
    """Runs one sync; every stage reports a progress line."""

    def __init__(self, spark: SparkSession, settings: SyncSettings, catalog: Catalog,
                 progress: Progress = stderr_progress) -> None:
        self.spark = spark
        self.settings = settings
        self.catalog = catalog
        self.progress = progress
        self.storage = LakeStorage(spark)
        self.lake = settings.lake_uri
        self.layout = LakeLayout(self.lake, settings.source_id)
        self.state = SourceState(self.storage, self.layout.state)
        self.keys = partition_keys(settings.date_partition)
        self.driver_memory = spark.conf.get("spark.driver.memory", None)  # named if the JVM runs out

    # -- the run -----------------------------------------------------------------------------------

    def run(self) -> RunResult:
        """Sync; always writes a report, and re-raises a failure after reporting it."""
        now = datetime.now(timezone.utc)
        result = RunResult(self.settings.source_id, new_run_id(now), self.settings.database, now,
                           workspace_id=self.settings.workspace_id, emr_cluster_id=_emr_cluster_id(),
                           s3_bucket=_bucket(self.lake))
        try:
            with ThreadPoolExecutor(1, thread_name_prefix="segment-lake-catalog") as self._background:
                self._run(result)
        except BaseException as error:
            died = jvm_failure(error, jvm_exit_code(self.spark, error), self.driver_memory)
            result.status = "failed"
            result.error_code, result.error = classify(died or error)
            self._report(result, spark_alive=died is None)
            if died:
                raise died from error
            raise
        self._report(result)
        return result

    def _run(self, result: RunResult) -> None:
        manifest = self._manifest(result)
        redo = manifest.run_id != result.run_id
        result.run_id, result.start_time = manifest.run_id, datetime.fromisoformat(manifest.start_time)
        if not manifest.files:
            self.progress("discover: no new files; nothing to do")
            return
        # the catalog's first call starts the embedded metastore, for seconds: let it start while Spark parses
        database_ready = self._background.submit(self.catalog.ensure_database, self.settings.database)
        # parsed once into the shuffle files the write needs; every stage reads those again
        parsed = parse_lines(read_lines(self.spark, list(manifest.files)), self.settings.table_prefix,
                             self.settings.date_partition, int(self.spark.conf.get("spark.sql.shuffle.partitions")))
        span = self._count_parsed(parsed, result)
        if result.rejected_count:
            self._write_rejected(parsed, manifest.run_id)
        events = parsed.where(F.col("reason").isNull())
        duplicates = self._dedup(events, manifest.run_id, span).persist(StorageLevel.DISK_ONLY)
        result.duplicate_count = duplicates.count()
        result.row_count = result.read_count - result.rejected_count - result.duplicate_count
        self.progress(f"dedup: {result.row_count} events to land, {result.duplicate_count} duplicates")
        accepted = events.join(F.broadcast(duplicates), "_row", "left_anti")
        database_ready.result()
        schemas, existing, observed = self._infer(accepted)
        # the catalog learns the tables while they are written (a reader sees their new partitions
        # empty for a moment, never a row twice); the run finishes only when both are done
        registered = self._background.submit(self.catalog.register, self.settings.database, [
            TableChange(table, schema.columns, tuple(self.keys),
                        tuple(partition_values(path) for path in observed.partitions[table]),
                        self._table_location(table)) for table, schema in schemas.items()])
        written = self._write(accepted, schemas, manifest.run_id, redo)
        partitions: dict[str, dict[str, int]] = {}
        for file in written:
            if file.kind == write.DATA:
                counts = partitions.setdefault(file.table, {})
                counts[file.partition] = counts.get(file.partition, 0) + file.rows
        landed = sum(sum(counts.values()) for counts in partitions.values())
        if landed != result.row_count:  # every accepted event is written exactly once, or the run fails
            raise RuntimeError(f"wrote {landed} rows for {result.row_count} accepted events")
        result.discarded_value_count = sum(f.rows for f in written if f.kind == write.DISCARDS)
        result.tables = [TableResult(
            table_name=table, database=self.settings.database, row_count=sum(partitions[table].values()),
            partitions=sorted(partitions[table]), new_columns=list(schema.new_columns),
            is_new=existing[table] is None) for table, schema in schemas.items()]
        self.progress(f"write: {len(schemas)} tables, {result.discarded_value_count} discarded values")
        registered.result()
        if result.discarded_value_count:
            self.catalog.register(self.settings.database, [TableChange(
                self.settings.table_prefix + DISCARDS_TABLE, tuple(DISCARD_COLUMNS), ("run_id",), ((manifest.run_id,),),
                self.layout.discards)])
        self.progress("catalog: up to date")
        self.state.finish(manifest)
        self.progress(f"state: {len(manifest.files)} files processed by run {manifest.run_id}")
        duplicates.unpersist()

    # -- stages ------------------------------------------------------------------------------------

    def _count_parsed(self, parsed: DataFrame, result: RunResult):
        """Read and rejected counts, and the span of the accepted events' receivedAt (or None)."""
        counted = parsed.groupBy(F.col("reason").isNotNull().alias("rejected")).agg(
            F.count(F.lit(1)).alias("count"), F.min("_received_at").alias("first"), F.max("_received_at").alias("last"))
        span = None
        for row in counted.collect():
            result.read_count += row["count"]
            if row["rejected"]:
                result.rejected_count = row["count"]
            else:
                span = (row["first"], row["last"])
        self.progress(f"parse: {result.read_count} lines, {result.rejected_count} rejected")
        return span

    def _infer(self, accepted: DataFrame):
        """Each table's schema (catalog columns plus this run's new ones), the catalog's columns, and
        what the run's events showed."""
        observed = observe(accepted)
        tables = sorted(observed.columns)
        existing = self.catalog.tables_columns(self.settings.database, tables)
        schemas = {table: plan_schema(existing[table], [o for o in observed.columns[table] if o[0] not in self.keys])
                   for table in tables}
        self.progress(f"infer: {len(schemas)} tables")
        return schemas, existing, observed

    def _write(self, accepted: DataFrame, schemas: dict[str, TableSchema], run_id: str, redo: bool):
        """Writes every table and the discards in one job, and publishes the files."""
        stage = self.layout.stage(run_id)
        self.storage.delete(stage, recursive=True)  # a crashed attempt's files
        written = write.write_tables(
            accepted, {table: list(schema.columns) for table, schema in schemas.items()}, self.keys, stage,
            self.settings.max_records_per_file)
        discards = self.layout.discards_of_run(run_id)
        targets = {write.DISCARDS: discards, write.LANDED: self.state.landed_run_uri(run_id)}
        write.publish(self.storage, written, lambda f: targets.get(f.kind) or join(self._table_location(f.table), f.partition),
                      run_id, redo)
        self.storage.delete(stage, recursive=True)
        return written

    def _manifest(self, result: RunResult) -> RunManifest:
        """The unfinished run to redo, or a new run over the files no finished run processed."""
        pending = self.state.pending()
        if pending and self.state.is_finished(pending.run_id):
            self.state.finish(pending)  # crashed after advancing the state: only the cleanup was left
            pending = None
        if pending:
            self.progress(f"discover: redoing unfinished run {pending.run_id} over {len(pending.files)} files")
            return pending
        if not self.storage.exists(self.settings.input_uri):
            raise InvalidSettings(f"input {self.settings.input_uri} does not exist: check --input "
                                  f"(Segment writes segment-logs/<source-id>/ in the bucket)")
        files = new_files(self.storage, self.settings.input_uri, self.state.processed_files())
        manifest = RunManifest(result.run_id, tuple(files), result.start_time.isoformat())
        if files:
            self.state.begin(manifest)
        self.progress(f"discover: {len(files)} new files")
        return manifest

    def _dedup(self, events: DataFrame, run_id: str, span) -> DataFrame:
        landed = None
        if span and self.storage.list_files(self.state.landed_uri):
            # only ids landed within the dedup window of this run's events can match: Parquet statistics
            # let Spark skip the rest of the ever-growing index
            margin = timedelta(days=DEDUP_WINDOW_DAYS)
            landed = self.spark.read.parquet(self.state.landed_uri).where(
                F.col("received_at").between(span[0] - margin, span[1] + margin))
        return duplicate_rows(events, landed, run_id)

    def _table_location(self, table: str) -> str:
        return self.layout.table(table[len(self.settings.table_prefix):])

    def _write_rejected(self, parsed: DataFrame, run_id: str) -> None:
        target = self.layout.rejected_of_run(run_id)
        (parsed.where(F.col("reason").isNotNull()).select("file", "reason", "raw").repartition(1)
         .write.mode("overwrite").json(target))

    def _report(self, result: RunResult, spark_alive: bool = True) -> None:
        result.finish_time = datetime.now(timezone.utc)
        write_text = self.storage.write_text if spark_alive else write_text_without_spark
        try:
            write_text(self.layout.report(result.run_id, result.start_time), render(result))
        except Exception as error:  # the report must not hide the sync's own failure
            self.progress(f"report: could not write the report: {error}")
            return
        self.progress(f"report: {relative_path(self.layout.report(result.run_id, result.start_time), self.lake)}")


def _bucket(lake: str) -> str | None:
    return lake.split("://", 1)[1].split("/", 1)[0] if lake.startswith(("s3://", "s3a://")) else None


def _emr_cluster_id() -> str | None:
    """The cluster id EMR writes on every node, when running there."""
    try:
        with open("/mnt/var/lib/info/job-flow.json") as info:
            return json.load(info).get("jobFlowId")
    except (OSError, ValueError):
        return os.environ.get("EMR_CLUSTER_ID")
