"""One sync of one source: the stages, in order, each taking the record before it and returning its own
(records.py):

    discover (Run) -> parse (Parsed) -> dedup (Deduped) -> infer (Inferred) -> write (Written)
    -> publish (Published) -> catalog -> report -> state

Each stage is its module's function over a SyncEnvironment; this module composes them, holds the source's lock,
and reports a failure."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from pyspark.sql import SparkSession

from segment_lake_contract import DEDUP_WINDOW_DAYS

from . import iceberg_tables, interrupt
from .catalog import Catalog
from .catalog.registered import recorded, unregistered
from .catalog_changes import record_changes, table_changes
from .dedup import dedup
from .discover import discover
from .emr_node import emr_cluster_id
from .environment import SyncEnvironment
from .errors import classify, jvm_failure
from .infer import infer
from .layout import lake_bucket
from .lock import SourceLock, source_lock
from .metrics import put_metrics
from .names import ensure_database
from .parse import parse
from .pool import run_all
from .progress import HEARTBEAT_SECONDS, Progress, Sink, count, spark_tasks, stderr_sink
from .publish import publish
from .recovery import finish_unfinished
from .report import RunResult, file_report, told
from .session import jvm_exit_code
from .settings import SyncSettings
from .state import SourceState, new_run_id
from .storage import HadoopStorage, LakeStorage
from .sync_reports import REPORTS_DATABASE, register_reports
from .write import write


class Sync:
    """Runs one sync; every stage reports its outcome and time to ``progress``. The catalog, lock and storage are
    handed in or made from the settings (tests hand in ones that fail on purpose: tests/crash_points.py)."""

    def __init__(self, spark: SparkSession, settings: SyncSettings, catalog: Catalog,
                 progress: Sink = stderr_sink, heartbeat_seconds: float = HEARTBEAT_SECONDS,
                 lock: SourceLock | None = None, storage: LakeStorage | None = None, metrics=None) -> None:
        layout = settings.layout
        storage = storage or HadoopStorage(spark)
        self.env = SyncEnvironment(
            spark, settings, catalog, storage, layout, SourceState(storage, layout.state),
            lock or source_lock(spark, layout, wait_seconds=settings.lock_wait.seconds),
            Progress(progress, spark_tasks(spark), heartbeat_seconds))
        self.driver_memory = spark.conf.get("spark.driver.memory", None)  # named if the JVM runs out
        self.metrics = metrics  # CloudWatch's client, when settings.metrics_namespace names where to write
        self._reports_registered = False

    def run(self) -> RunResult:
        """Sync; always writes a report, and re-raises a failure after reporting it. Refuses at once, with no
        report, while another run holds the source's lock."""
        env, now = self.env, datetime.now(UTC)
        result = RunResult(env.settings.source_id, new_run_id(now), env.settings.database, now,
                           workspace_id=env.settings.workspace_id, emr_cluster_id=emr_cluster_id(),
                           s3_bucket=lake_bucket(env.layout.lake))
        env.lock.run_id = result.run_id
        with env.lock.held(now) as taken_over:
            if taken_over:
                env.progress(f"lock: took over the expired lock of {taken_over}")
            try:
                with ThreadPoolExecutor(1, thread_name_prefix="segment-lake-catalog") as background:
                    try:
                        self._stages(result, background)
                    finally:
                        env.progress.close()
            except BaseException as error:
                self._fail(result, error)
                self._put_metrics(result)
                raise
        self._put_metrics(result)
        return result

    def _put_metrics(self, result: RunResult) -> None:
        if self.metrics is not None and self.env.settings.metrics_namespace:
            put_metrics(self.metrics, self.env.settings.metrics_namespace, result, self.env.progress)

    def _stages(self, result: RunResult, background: ThreadPoolExecutor) -> None:
        """The stages; the report takes its counts from them as they finish (a failed run's report has those of the
        stages it completed). The catalog work runs beside Spark's: the embedded metastore starts while Spark
        parses, and the tables are registered while they are written (a reader sees their new partitions empty for
        a moment, never a row twice)."""
        env = self.env
        with env.progress.stage("discover") as done:
            finish_unfinished(env.storage, env.layout, env.progress, env.lock.check, env.catalog)
            run = discover(env, result.run_id, result.start_time)
            done(run.summary())
        result.add(run)
        env.lock.run_id = run.run_id
        reports_ready = background.submit(self._register_reports, result)
        if not run.manifest.files:
            reports_ready.result()
            file_report(env, result)
            return
        database_ready = background.submit(ensure_database, env.catalog, env.settings)
        parsed = self._stage(result, "parse", parse, run, f"reading {count(len(run.manifest.files), 'file')}")
        deduped = self._stage(result, "dedup", dedup, parsed)
        database_ready.result()
        inferred = self._stage(result, "infer", infer, deduped)
        changes, record, database = table_changes(env, inferred), env.state.registered(), env.settings.database
        pending = unregistered(database, changes, inferred.catalog, record)
        if env.settings.table_format == iceberg_tables.FORMAT:
            # through Spark's Iceberg catalog, whichever catalog holds them, before the write: publish commits into
            # the tables; every table the run writes is in the source's record first
            prefix = env.settings.table_name_prefix
            iceberg_tables.record_tables(env.storage, env.layout, {
                change.table[len(prefix):]: f"{database}.{change.table}" for change in changes})
            run_all(iceberg_tables.register, [(env.spark, database, change.table, change.columns, change.keys,
                                               change.location, env.settings.hidden_hours) for change in pending],
                    iceberg_tables.threads(env.settings.catalog), "segment-lake-register")
            registered = background.submit(lambda: None)
        else:
            registered = background.submit(env.catalog.register, database, pending, inferred.catalog)
        written = self._stage(result, "write", write, inferred,
                              f"casting and writing {count(len(inferred.schemas), 'table')} as Parquet")
        published = self._stage(result, "publish", publish, written)
        with env.progress.stage("catalog") as done:
            registered.result()
            if recorded(database, record, changes, inferred.catalog) != record:
                env.state.record_registered(recorded(database, record, changes, inferred.catalog))
            reports_ready.result()
            records = record_changes(env, published)
            if records:
                env.catalog.register(database, records, inferred.catalog)
            done(f"{count(len(inferred.schemas) + len(records), 'table')} up to date")
        # reported before the state advances: a crash in between redoes the run, which rewrites this same report,
        # so the finished reports count every landed event once
        file_report(env, result)
        with env.progress.stage("state") as done:
            env.lock.check()
            env.state.prune_duplicates(result.start_time - timedelta(days=DEDUP_WINDOW_DAYS))
            env.state.finish(run.manifest)
            done(f"{count(len(run.manifest.files), 'file')} processed by run {run.run_id}")
        deduped.duplicates.unpersist()

    def _stage(self, result: RunResult, name: str, stage, previous, doing: str | None = None):
        """One stage over the record before it, as a progress stage (``doing`` says what it starts); the report takes
        the figures of the record it returns."""
        with self.env.progress.stage(name, doing) as done:
            record = stage(self.env, previous)
            done(record.summary())
        result.add(record)
        return record

    def _fail(self, result: RunResult, error: BaseException) -> None:
        """Reports the failure (what ended Spark's JVM, or the signal that stopped the run, or the error) and raises
        what the user should see, or returns to re-raise ``error``."""
        env = self.env
        died = jvm_failure(error, jvm_exit_code(env.spark, error), self.driver_memory)
        # a signal to the whole process group may have ended the JVM too: then it is what the report says
        stopped = self._interrupted() if interrupt.received() and died is None else None
        result.status = "failed"
        result.error_code, result.error = classify(died or stopped or error)
        if died is None and not self._reports_registered:  # so that the failure shows in sync_reports too
            try:
                self._register_reports(result)
            except Exception as problem:  # the report must not hide the sync's own failure
                env.progress(f"report: could not register it in {REPORTS_DATABASE}: {problem}")
        file_report(env, result, spark_alive=died is None)
        if died:
            raise died from error
        if stopped:
            raise stopped from None

    def _interrupted(self) -> interrupt.Interrupted:
        """What a signal left: the run it began, which the next sync redoes, or nothing."""
        try:
            begun = self.env.state.pending()
        except Exception:  # noqa: BLE001 - the state cannot be read now; the next sync reads it
            return interrupt.Interrupted(interrupt.received(), "the next `segment-lake sync` finishes or redoes what "
                                                               "this one began, nothing is lost")
        return interrupt.Interrupted(interrupt.received(), (
            f"run {begun.run_id} of source {self.env.settings.source_id} is unfinished; the next `segment-lake sync` "
            f"redoes it, nothing is lost") if begun else "no run was begun")

    def _register_reports(self, result: RunResult) -> None:
        register_reports(self.env.catalog, self.env.layout, result.run_id, result.start_time)
        self._reports_registered = True

    def told(self, result: RunResult) -> list[str]:
        return told(self.env, result)
