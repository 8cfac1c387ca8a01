"""One sync of one source: discover, parse, route, dedup, infer, cast, write, catalog, state, report."""
from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import interrupt, write
from .catalog import Catalog, TableChange, same_location
from .column_types import ColumnType
from .compaction import finish_compaction
from .dedup import DEDUP_WINDOW_DAYS, DUPLICATE_COLUMNS, duplicate_rows
from .deletion import finish_deletion
from .discover import new_files, other_sources, read_lines, replay_files
from .errors import InvalidSettings, classify, jvm_failure, missing_input
from .infer import Observed, TableSchema, observe, plan_schema
from .landed_index import landed_ids, window
from .layout import LakeLayout, owning_source
from .lock import SourceLock, default_holder, lock_store
from .parse import parse_lines
from .progress import HEARTBEAT_SECONDS, Progress, Sink, count, spark_tasks, stderr_sink
from .recovery import forget_attempt
from .report import RunResult, TableResult, render
from .route import partition_keys, partition_values
from .session import jvm_exit_code
from .settings import SyncSettings
from .state import RunManifest, SourceState, new_run_id
from .storage import LakeStorage, join, relative_path, shown, write_text_without_spark
from .suppression import SuppressionList, is_suppressed
from .sync_reports import REPORTS_DATABASE, register_reports

DISCARDS_TABLE = "segment_discards"
DUPLICATES_TABLE = "segment_duplicates"
DISCARD_COLUMNS = [("table_name", ColumnType.STRING), ("column_name", ColumnType.STRING),
                   ("message_id", ColumnType.STRING), ("received_at", ColumnType.TIMESTAMP),
                   ("value", ColumnType.STRING), ("reason", ColumnType.STRING)]

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
class Inferred:
    """Every table's schema for this run, its columns in the catalog (None for a new table), and what
    the events showed."""

    schemas: dict[str, TableSchema]
    existing: dict[str, list[tuple[str, str]] | None]
    observed: Observed
    refused_tables: tuple[str, ...] = ()  # new tables beyond the source's limit: their events are rejected


@dataclass(frozen=True)
class Written:
    """Rows written per table and partition, and the values discarded."""

    partitions: dict[str, dict[str, int]]
    discarded_value_count: int

    @property
    def row_count(self) -> int:
        return sum(sum(counts.values()) for counts in self.partitions.values())


class Sync:
    """Runs one sync; every stage reports its outcome and time to ``progress``. The catalog, lock and storage are
    handed in or made from the settings (tests hand in ones that fail on purpose: tests/crash_points.py)."""

    def __init__(self, spark: SparkSession, settings: SyncSettings, catalog: Catalog,
                 progress: Sink = stderr_sink, heartbeat_seconds: float = HEARTBEAT_SECONDS,
                 lock: SourceLock | None = None, storage: LakeStorage | None = None) -> None:
        self.spark = spark
        self.settings = settings
        self.catalog = catalog
        self.progress = Progress(progress, spark_tasks(spark), heartbeat_seconds)
        self.storage = storage or LakeStorage(spark)
        self.lake = settings.lake_uri
        self.layout = LakeLayout(self.lake, settings.source_id)
        self.state = SourceState(self.storage, self.layout.state)
        self.keys = partition_keys(settings.date_partition)
        self.driver_memory = spark.conf.get("spark.driver.memory", None)  # named if the JVM runs out
        self.lock = lock or source_lock(spark, self.layout, wait_seconds=settings.lock_wait_minutes * 60)
        self._reports_registered = False

    # -- the run -----------------------------------------------------------------------------------

    def run(self) -> RunResult:
        """Sync; always writes a report, and re-raises a failure after reporting it. Refuses at once, with no
        report, while another run holds the source's lock."""
        now = datetime.now(UTC)
        result = RunResult(self.settings.source_id, new_run_id(now), self.settings.database, now,
                           workspace_id=self.settings.workspace_id, emr_cluster_id=_emr_cluster_id(),
                           s3_bucket=_bucket(self.lake))
        self.lock.run_id = result.run_id
        with self.lock.held(now) as taken_over:
            if taken_over:
                self.progress(f"lock: took over the expired lock of {taken_over}")
            return self._run_locked(result)

    def _run_locked(self, result: RunResult) -> RunResult:
        try:
            with ThreadPoolExecutor(1, thread_name_prefix="segment-lake-catalog") as self._background:
                try:
                    self._run(result)
                finally:
                    self.progress.close()
        except BaseException as error:
            died = jvm_failure(error, jvm_exit_code(self.spark, error), self.driver_memory)
            # a signal to the whole process group may have ended the JVM too: then it is what the report says
            stopped = self._interrupted() if interrupt.received() and died is None else None
            failure = stopped or error
            result.status = "failed"
            result.error_code, result.error = classify(died or failure)
            if died is None and not self._reports_registered:  # so that the failure shows in sync_reports too
                try:
                    self._register_reports(result.run_id, result.start_time)
                except Exception as problem:  # the report must not hide the sync's own failure
                    self.progress(f"report: could not register it in {REPORTS_DATABASE}: {problem}")
            self._report(result, spark_alive=died is None)
            if died:
                raise died from error
            if stopped:
                raise stopped from None
            raise
        return result

    def _interrupted(self) -> interrupt.Interrupted:
        """What a signal left: the run it began, which the next sync redoes, or nothing."""
        try:
            begun = self.state.pending()
        except Exception:  # noqa: BLE001 - the state cannot be read now; the next sync reads it
            return interrupt.Interrupted(interrupt.received(), "the next `segment-lake sync` finishes or redoes what "
                                                               "this one began, nothing is lost")
        return interrupt.Interrupted(interrupt.received(), (
            f"run {begun.run_id} of source {self.settings.source_id} is unfinished; the next `segment-lake sync` "
            f"redoes it, nothing is lost") if begun else "no run was begun")

    def _run(self, result: RunResult) -> None:
        """The stages, each returning a typed result; the report takes its counts from them as they finish
        (a failed run's report has those of the stages it completed)."""
        with self.progress.stage("discover") as done:
            # one a crash stopped goes first (and a stage left by one that died before its journal)
            finish_deletion(self.storage, self.layout, self.progress, self.lock.check)
            finish_compaction(self.storage, self.catalog, self.layout, self.progress, self.lock.check)
            manifest = self._manifest(result)
            redo = manifest.run_id != result.run_id
            done(f"redoing unfinished run {manifest.run_id} over {count(len(manifest.files), 'file')}" if redo
                 else f"replay of {manifest.replay[0]} to {manifest.replay[1]}: {count(len(manifest.files), 'file')}"
                 if manifest.replay else f"{count(len(manifest.files), 'new file')}" if manifest.files
                 else "no new files; nothing to do")
        result.run_id, result.start_time = manifest.run_id, datetime.fromisoformat(manifest.start_time)
        result.replay = manifest.replay
        self.lock.run_id = manifest.run_id
        reports_ready = self._background.submit(self._register_reports, result.run_id, result.start_time)
        if not manifest.files:
            reports_ready.result()
            self._report(result)
            return
        # the catalog's first call starts the embedded metastore, for seconds: let it start while Spark parses
        database_ready = self._background.submit(self._ensure_database)
        parsed = self._parse(manifest)
        result.read_count, result.rejected_count = parsed.read_count, parsed.rejected_count
        result.suppressed_count = parsed.suppressed_count
        deduped = self._dedup(parsed, manifest.run_id)
        result.duplicate_count, result.row_count = deduped.duplicate_count, deduped.row_count
        database_ready.result()
        inferred = self._infer(deduped.accepted)
        if inferred.refused_tables:
            deduped, refused = self._reject_tables(deduped, inferred.refused_tables, manifest.run_id)
            result.rejected_count, result.row_count = result.rejected_count + refused, deduped.row_count
        # the catalog learns the tables while they are written (a reader sees their new partitions
        # empty for a moment, never a row twice); the run finishes only when both are done
        registered = self._background.submit(self.catalog.register, self.settings.database, [
            TableChange(table, schema.columns, tuple(self.keys),
                        tuple(partition_values(path) for path in inferred.observed.partitions[table]),
                        self._table_location(table)) for table, schema in inferred.schemas.items()])
        written = self._write(deduped, inferred.schemas, manifest.run_id, redo)
        if written.row_count != deduped.row_count:  # every accepted event is written exactly once, or the run fails
            raise RuntimeError(f"wrote {written.row_count} rows for {deduped.row_count} accepted events")
        result.discarded_value_count = written.discarded_value_count
        result.tables = [TableResult(
            table_name=table, database=self.settings.database, row_count=sum(written.partitions[table].values()),
            partitions=sorted(written.partitions[table]), new_columns=list(schema.new_columns),
            is_new=inferred.existing[table] is None) for table, schema in inferred.schemas.items()]
        records = []
        if written.discarded_value_count:
            records.append(TableChange(self.settings.table_name_prefix + DISCARDS_TABLE, tuple(DISCARD_COLUMNS),
                                       ("run_id",), ((manifest.run_id,),), self.layout.discards))
        if deduped.duplicate_count:
            records.append(TableChange(self.settings.table_name_prefix + DUPLICATES_TABLE, DUPLICATE_COLUMNS, (), (),
                                       self.state.duplicates_uri))
        with self.progress.stage("catalog") as done:
            registered.result()
            reports_ready.result()
            if records:
                self.catalog.register(self.settings.database, records)
            done(f"{count(len(inferred.schemas) + len(records), 'table')} up to date")
        # reported before the state advances: a crash in between redoes the run, which rewrites this same report,
        # so the finished reports count every landed event once
        self._report(result)
        with self.progress.stage("state") as done:
            self.lock.check()
            self.state.prune_duplicates(result.start_time - timedelta(days=DEDUP_WINDOW_DAYS))
            self.state.finish(manifest)
            done(f"{count(len(manifest.files), 'file')} processed by run {manifest.run_id}")
        deduped.duplicates.unpersist()

    # -- stages ------------------------------------------------------------------------------------

    def _parse(self, manifest: RunManifest) -> Parsed:
        """Parses the run's files once into the shuffle files every later stage reads; counts the lines,
        keeps the rejected ones and leaves out (counted) the events of suppressed users."""
        suppressed = SuppressionList(self.storage, self.state.suppressed_uri).read()
        with self.progress.stage("parse", f"reading {count(len(manifest.files), 'file')}") as done:
            rows = parse_lines(read_lines(self.spark, list(manifest.files), list(manifest.sizes)),
                               self.settings.table_name_prefix,
                               self.settings.date_partition, int(self.spark.conf.get("spark.sql.shuffle.partitions")))
            rows = rows.withColumn("_suppressed", F.col("reason").isNull() & is_suppressed(suppressed))
            counted = rows.groupBy(F.col("reason").isNotNull().alias("rejected"), "_suppressed").agg(
                F.count(F.lit(1)).alias("count"), F.min(F.unix_micros("_received_at")).alias("first"),
                F.max(F.unix_micros("_received_at")).alias("last"))
            read = rejected = dropped = 0
            span = None
            for row in counted.collect():
                read += row["count"]
                if row["rejected"]:
                    rejected = row["count"]
                elif row["_suppressed"]:
                    dropped = row["count"]
                else:
                    span = (row["first"], row["last"])
            if rejected:
                (rows.where(F.col("reason").isNotNull()).select("file", "reason", "raw").repartition(1)
                 .write.mode("overwrite").json(self.layout.rejected_of_run(manifest.run_id)))
            else:  # a crashed attempt's records go (the infer stage may add to the folder)
                self.storage.delete(self.layout.rejected_of_run(manifest.run_id), recursive=True)
            done(f"{count(read, 'line')}, {rejected} rejected" + (f", {count(dropped, 'event')} of suppressed users"
                                                                   if dropped else ""))
        return Parsed(rows.where(F.col("reason").isNull() & ~F.col("_suppressed")).drop("_suppressed"), read,
                      rejected, span, dropped)

    def _dedup(self, parsed: Parsed, run_id: str) -> Deduped:
        with self.progress.stage("dedup") as done:
            landed = None
            if parsed.span:  # only ids landed within the dedup window of this run's events can match
                landed = landed_ids(self.spark, self.storage, self.state, self.layout, self.settings.date_partition,
                                    *window(*parsed.span, DEDUP_WINDOW_DAYS))
            duplicates = duplicate_rows(parsed.events, landed, run_id).persist(StorageLevel.DISK_ONLY)
            found = duplicates.count()
            deduped = Deduped(parsed.events.join(F.broadcast(duplicates.select("_row")), "_row", "left_anti"),
                              duplicates, found,
                              parsed.read_count - parsed.rejected_count - parsed.suppressed_count - found)
            done(f"{count(deduped.row_count, 'event')} to land, {count(found, 'duplicate')}")
        return deduped

    def _infer(self, accepted: DataFrame) -> Inferred:
        """Each table's schema (catalog columns plus this run's new ones), the catalog's columns, and
        what the run's events showed."""
        with self.progress.stage("infer") as done:
            observed = observe(accepted)
            tables = sorted(observed.columns)
            existing = self._own_tables(tables)
            refused = self._tables_over_limit(tables, existing)
            tables = [table for table in tables if table not in refused]
            self._refuse_legacy_tables([table for table in tables if existing[table] is None])
            limit = self.settings.max_columns_per_table
            schemas = {table: plan_schema(existing[table], [o for o in observed.columns[table] if o[0] not in self.keys],
                                          limit) for table in tables}
            for table, schema in schemas.items():
                if schema.refused:
                    self.progress(f"infer: {table} has its limit of {limit:,} columns (--max-columns-per-table): the "
                                  f"values of {count(len(schema.refused), 'new column')} go to {DISCARDS_TABLE}")
            done(f"{count(len(schemas), 'table')}, {count(sum(len(s.new_columns) for s in schemas.values()), 'new column')}")
        return Inferred(schemas, existing, observed, refused)

    def _own_tables(self, tables: list[str]) -> dict[str, list[tuple[str, str]] | None]:
        """The catalog's columns of the run's tables (None for a new one), once it is clear that each existing table
        (and the source's discards and duplicates tables) is this source's: a table of the same name that another
        source (or lake) writes would take none of this run's rows, which no query could then see."""
        prefix = self.settings.table_name_prefix
        records = {prefix + DISCARDS_TABLE: self.layout.discards, prefix + DUPLICATES_TABLE: self.state.duplicates_uri}
        found = self.catalog.describe_tables(self.settings.database, sorted({*tables, *records}))
        for table, info in found.items():
            if info is not None and not same_location(info.location, records.get(table) or self._table_location(table)):
                owner = owning_source(info.location)
                raise InvalidSettings(
                    f"table {self.settings.database}.{table} holds "
                    f"{f'source {owner}' if owner else 'another lake'}'s rows ({info.location}), not source "
                    f"{self.settings.source_id}'s: give each source its own --glue-database (or --source-slug), or a "
                    f"--table-prefix")
        return {table: found[table] and found[table].columns for table in tables}

    def _tables_over_limit(self, tables: list[str], existing: dict) -> tuple[str, ...]:
        """The run's new tables beyond the source's limit (the first by name are created while there is room):
        the tables the source has are its folders in the lake and the run's tables the catalog has."""
        limit, prefix = self.settings.max_tables_per_source, len(self.settings.table_name_prefix)
        have = {name.split("=", 1)[1] for name in self.storage.list_folders(self.layout.tables)
                if name.startswith("segment_type=")} | {t[prefix:] for t in tables if existing[t] is not None}
        new = [table for table in tables if table[prefix:] not in have]
        refused = tuple(new[max(0, limit - len(have)):])
        if refused:
            self.progress(f"infer: source {self.settings.source_id} has its limit of {limit:,} tables "
                          f"(--max-tables-per-source): the events of {count(len(refused), 'new table')} are rejected")
        return refused

    def _reject_tables(self, deduped: Deduped, tables: tuple[str, ...], run_id: str) -> tuple[Deduped, int]:
        """Leaves the events of ``tables`` out, recorded as rejected with their file, messageId and the reason
        (the input file keeps the event)."""
        over = F.col("table").isin(list(tables))
        reason = F.concat(F.lit(f"the source has its limit of {self.settings.max_tables_per_source} tables "
                                f"(--max-tables-per-source): no table "), F.col("table"),
                          F.lit(" was created; the input file keeps the event"))
        records = deduped.accepted.where(over).select("file", reason.alias("reason"), F.col("_message_id").alias("message_id"))
        refused = records.count()
        records.repartition(1).write.mode("append").json(self.layout.rejected_of_run(run_id))
        return Deduped(deduped.accepted.where(~over), deduped.duplicates, deduped.duplicate_count,
                       deduped.row_count - refused), refused

    def _write(self, deduped: Deduped, schemas: dict[str, TableSchema], run_id: str, redo: bool) -> Written:
        """Writes every table and the discards in one job, and the duplicates' record; publishes the files."""
        stage = self.layout.stage(run_id)
        with self.progress.stage("write", f"casting and writing {count(len(schemas), 'table')} as Parquet") as done:
            self.storage.delete(stage, recursive=True)  # a crashed attempt's files
            files = write.write_tables(
                deduped.accepted, {table: list(schema.columns) for table, schema in schemas.items()}, self.keys, stage,
                self.settings.max_records_per_file, self.settings.max_columns_per_table)
            if deduped.duplicate_count:
                files += write.write_duplicates(deduped.duplicates.drop("_row"), deduped.duplicate_count, stage,
                                                self.storage)
            self.lock.check()  # the files go live next
            targets = {write.DISCARDS: self.layout.discards_of_run(run_id),
                       write.LANDED: self.state.landed_run_uri(run_id), write.DUPLICATES: self.state.duplicates_uri}
            write.publish(self.storage, files,
                          lambda f: targets.get(f.kind) or join(self._table_location(f.table), f.partition), run_id, redo)
            self.storage.delete(stage, recursive=True)
            partitions: dict[str, dict[str, int]] = {}
            for file in files:
                if file.kind == write.DATA:
                    counts = partitions.setdefault(file.table, {})
                    counts[file.partition] = counts.get(file.partition, 0) + file.rows
            written = Written(partitions, sum(f.rows for f in files if f.kind == write.DISCARDS))
            done(f"{count(sum(map(len, partitions.values())), 'partition')} of {count(len(schemas), 'table')}, "
                 f"{count(written.discarded_value_count, 'discarded value')}")
        return written

    def _manifest(self, result: RunResult) -> RunManifest:
        """The unfinished run to redo, or a new run: over the files no finished run processed, or for a replay the
        files of its days, processed or not (dedup keeps what the lake has from landing twice)."""
        replay = self._replay_window()
        pending = self.state.pending()
        if pending and self.state.is_finished(pending.run_id):
            self.state.finish(pending)  # crashed after advancing the state: only the cleanup was left
            pending = None
        if pending and replay and pending.replay != replay:
            raise InvalidSettings(f"source {self.settings.source_id} has an unfinished run {pending.run_id}: "
                                  f"`segment-lake sync` redoes it; replay after it")
        if pending:
            pending = self._without_missing_files(pending)
            if pending.files:
                return pending
            self.state.finish(pending)  # none of its files is left: nothing to redo
        if not self.storage.exists(self.settings.input_uri):
            raise missing_input(self.settings.input_uri)
        files = (replay_files(self.storage, self.settings.input_uri, self.settings.replay_from,
                              self.settings.replay_to) if replay else
                 new_files(self.storage, self.settings.input_uri, self.state.processed_files()))
        others = other_sources([relative_path(f.uri, self.settings.input_uri) for f in files], self.settings.source_id)
        if others:
            named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            raise InvalidSettings(
                f"--input {self.settings.input_uri!r} holds the folders of other sources ({named}), not only the day "
                f"folders of source {self.settings.source_id}: pass the folder of {self.settings.source_id}'s events, "
                f"{join(self.settings.input_uri, self.settings.source_id)}")
        manifest = RunManifest(result.run_id, tuple(f.uri for f in files), result.start_time.isoformat(),
                               tuple(f.size for f in files), replay)
        if files:
            self.state.begin(manifest)
        return manifest

    def _replay_window(self) -> tuple[str, str] | None:
        first, last = self.settings.replay_from, self.settings.replay_to
        return (first.isoformat(), last.isoformat()) if first else None

    def _without_missing_files(self, manifest: RunManifest) -> RunManifest:
        """An unfinished run's files that still exist, with their sizes: a file removed since (by hand, or by a
        lifecycle rule) has nothing left to land, and waiting for it would block the source for good."""
        sizes = {file: self.storage.size(file) for file in manifest.files}
        missing = [file for file, size in sizes.items() if size is None]
        if not missing:
            return RunManifest(manifest.run_id, manifest.files, manifest.start_time,
                               tuple(sizes[file] for file in manifest.files), manifest.replay)
        shown = ", ".join(relative_path(file, self.settings.input_uri) for file in missing[:3])
        self.progress(f"discover: dropping {count(len(missing), 'file')} that unfinished run {manifest.run_id} listed "
                      f"and no longer exist{'s' if len(missing) == 1 else ''}: {shown}{' and more' if len(missing) > 3 else ''}")
        # with other files the redo writes other folders: what the attempt published must go first
        forget_attempt(self.storage, self.layout, self.state, manifest.run_id)
        kept_files = tuple(f for f in manifest.files if sizes[f] is not None)
        kept = RunManifest(manifest.run_id, kept_files, manifest.start_time, tuple(sizes[f] for f in kept_files),
                           manifest.replay)
        self.state.begin(kept)
        return kept

    def _register_reports(self, run_id: str, start_time: datetime) -> None:
        register_reports(self.catalog, self.layout, run_id, start_time)
        self._reports_registered = True

    def _ensure_database(self) -> None:
        legacy, database = self.settings.legacy_database, self.settings.database
        if legacy:  # an earlier version may have named this source's database otherwise: do not fork it
            if self.catalog.database_exists(database):
                return
            if self.catalog.database_exists(legacy):
                raise InvalidSettings(
                    f"the catalog has database {legacy!r}, named from {self.settings.database_name_source!r} by an "
                    f"earlier version; Segment's name is {database!r}: pass --glue-database {legacy} to keep "
                    f"syncing into it, or rename it (README: Names from earlier versions)")
        self.catalog.ensure_database(database)

    def _refuse_legacy_tables(self, new_tables: list[str]) -> None:
        """A table an earlier version named without the ``_`` after the prefix is not silently forked."""
        legacy = self.settings.legacy_table_prefix
        if not legacy or not new_tables:
            return
        suffix = len(self.settings.table_name_prefix)
        old_names = {legacy + table[suffix:]: table for table in new_tables}
        found = self.catalog.tables_columns(self.settings.database, sorted(old_names))
        clashes = sorted(old for old, columns in found.items() if columns is not None)
        if clashes:
            named = ", ".join(repr(old) for old in clashes[:3]) + (" and more" if len(clashes) > 3 else "")
            raise InvalidSettings(
                f"the catalog has {named}, named by an earlier version without the '_' after prefix {legacy!r}; this "
                f"version writes {old_names[clashes[0]]!r}: rename the old tables (README: Names from earlier versions) "
                f"and sync again")

    def where(self, result: RunResult) -> list[str]:
        """Where a run left what a user looks at next: its report, and the rejected lines, duplicates
        and discarded values it recorded (when it recorded any)."""
        database, prefix, run = self.settings.database, self.settings.table_name_prefix, result.run_id
        lines = [f"report: {shown(self.layout.report(run, result.start_time))}"]
        if result.rejected_count:
            lines.append(f"rejected lines: {shown(self.layout.rejected_of_run(run))}/")
        if result.duplicate_count:
            lines.append(f"duplicates: {database}.{prefix}{DUPLICATES_TABLE} where run_id = '{run}'")
        if result.discarded_value_count:
            lines.append(f"discarded values: {database}.{prefix}{DISCARDS_TABLE} where run_id = '{run}'")
        return lines

    def _table_location(self, table: str) -> str:
        return self.layout.table(table[len(self.settings.table_name_prefix):])

    def _report(self, result: RunResult, spark_alive: bool = True) -> None:
        result.finish_time = datetime.now(UTC)
        write_text = self.storage.write_text if spark_alive else write_text_without_spark
        if spark_alive:
            try:
                self._keep_failed_attempt(result)
            except Exception as error:  # the attempt's own report matters more than the one before it
                self.progress(f"report: could not keep the earlier attempt's report: {error}")
        try:
            write_text(self.layout.report(result.run_id, result.start_time), render(result))
        except Exception as error:  # the report must not hide the sync's own failure
            self.progress(f"report: could not write the report: {error}")
            return
        self.progress(f"report: {relative_path(self.layout.report(result.run_id, result.start_time), self.lake)}")

    def _keep_failed_attempt(self, result: RunResult) -> None:
        """A redo's report takes the run's report name; a failed (or interrupted) attempt's report is kept beside it,
        so the history and sync_reports show every attempt (a finished one redone after a crash is just rewritten)."""
        uri = self.layout.report(result.run_id, result.start_time)
        if not self.storage.exists(uri):
            return
        earlier = json.loads(self.storage.read_text(uri).splitlines()[0])
        if earlier.get("status") == "failed":
            self.storage.move(uri, self.layout.failed_attempt_report(result.run_id, result.start_time,
                                                                     earlier["finish_time"]))


def source_lock(spark: SparkSession, layout: LakeLayout, wait_seconds: float = 0) -> SourceLock:
    """The source's lock, next to its state; on S3 through the endpoint Spark's s3a uses, if one is set."""
    endpoint = spark.sparkContext._jsc.hadoopConfiguration().get("fs.s3a.endpoint")
    return SourceLock(lock_store(join(layout.state, "lock.json"), endpoint if endpoint and "://" in endpoint else None),
                      layout.source_id, default_holder(), wait_seconds=wait_seconds)


def _bucket(lake: str) -> str | None:
    return lake.split("://", 1)[1].split("/", 1)[0] if lake.startswith(("s3://", "s3a://")) else None


def _emr_cluster_id() -> str | None:
    """The cluster id EMR writes on every node, when running there."""
    try:
        with open("/mnt/var/lib/info/job-flow.json") as info:
            return json.load(info).get("jobFlowId")
    except (OSError, ValueError):
        return os.environ.get("EMR_CLUSTER_ID")
