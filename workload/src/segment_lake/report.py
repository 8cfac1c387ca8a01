"""Report: the sync report, one JSON object per line in the columns of Segment's sync_reports, written where
LakeLayout.report says; and where a run left what a user looks at next."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .landed_index import from_micros
from .names import DISCARDS_TABLE, DUPLICATES_TABLE
from .records import Deduped, Inferred, Parsed, Published, Run, Written
from .storage import write_text_without_spark
from .uris import relative_path, shown

if TYPE_CHECKING:
    from .environment import SyncEnvironment

# The columns of the sync_reports table (Hive types): Segment's, then this project's counts. Its partition keys
# (layout.REPORT_KEYS) name the folders a report is written in, so they are not data columns: source_id and day, as
# Segment's, and run_id, so that each report is a partition's only file (Spark reads no deeper than a partition's
# folder).
REPORT_COLUMNS = (
    ("type", "string"), ("workspace_id", "string"), ("start_time", "string"),
    ("finish_time", "string"), ("duration_mins", "bigint"), ("status", "string"), ("error", "string"),
    ("error_code", "string"), ("table_name", "string"), ("database", "string"), ("partitions", "array<string>"),
    ("new_columns", "array<string>"), ("row_count", "bigint"), ("is_new", "boolean"), ("replay", "boolean"),
    ("replay_from", "string"), ("replay_to", "string"), ("emr_cluster_id", "string"), ("s3_bucket", "string"),
    ("read_count", "bigint"), ("duplicate_count", "bigint"), ("rejected_count", "bigint"),
    ("discarded_value_count", "bigint"), ("suppressed_count", "bigint"))


@dataclass
class TableResult:
    table_name: str
    database: str
    row_count: int = 0
    partitions: list[str] = field(default_factory=list)
    new_columns: list[str] = field(default_factory=list)
    is_new: bool = False


@dataclass
class RunResult:
    source_id: str
    run_id: str
    database: str
    start_time: datetime
    finish_time: datetime | None = None
    status: str = "finished"
    error: str | None = None
    error_code: str | None = None
    read_count: int = 0
    row_count: int = 0
    duplicate_count: int = 0
    rejected_count: int = 0
    discarded_value_count: int = 0
    suppressed_count: int = 0  # events of suppressed users, left out
    tables: list[TableResult] = field(default_factory=list)
    workspace_id: str | None = None
    emr_cluster_id: str | None = None
    s3_bucket: str | None = None
    replay: tuple[str, str] | None = None  # a replay's first and last day
    newest_received_at: datetime | None = None  # of the events the run read (for the freshness metric)

    def add(self, record: Run | Parsed | Deduped | Inferred | Written | Published) -> None:
        """Takes the figures of a finished stage's record (records.py): a failed run's report has those of the
        stages it finished."""
        match record:
            case Run():
                self.run_id, self.replay = record.run_id, record.manifest.replay
                self.start_time = datetime.fromisoformat(record.manifest.start_time)
            case Parsed():
                self.read_count, self.rejected_count = record.read_count, record.rejected_count
                self.suppressed_count = record.suppressed_count
                self.newest_received_at = from_micros(record.span[1]) if record.span else None
            case Deduped():
                self.duplicate_count, self.row_count = record.duplicate_count, record.row_count
            case Inferred():  # the events of tables over the source's limit are rejected
                self.rejected_count += record.refused_count
                self.row_count = record.deduped.row_count
            case Written():  # its files count once published
                pass
            case Published():
                inferred = record.written.inferred
                self.discarded_value_count = record.discarded_value_count
                self.tables = [TableResult(
                    table_name=table, database=self.database, row_count=sum(record.partitions[table].values()),
                    partitions=sorted(record.partitions[table]), new_columns=list(schema.new_columns),
                    is_new=inferred.existing[table] is None) for table, schema in inferred.schemas.items()]


def _time(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if moment else None


def report_lines(run: RunResult) -> list[dict]:
    """The source line, then one event line per table."""
    finish = run.finish_time or datetime.now(UTC)
    common = {
        "workspace_id": run.workspace_id, "source_id": run.source_id, "run_id": run.run_id,
        "start_time": _time(run.start_time), "finish_time": _time(finish),
        "duration_mins": int((finish - run.start_time).total_seconds() // 60), "status": run.status,
        "error": run.error, "error_code": run.error_code, "replay": run.replay is not None,
        "replay_from": run.replay[0] if run.replay else None, "replay_to": run.replay[1] if run.replay else None,
        "emr_cluster_id": run.emr_cluster_id, "s3_bucket": run.s3_bucket,
    }
    source = {"type": "source", **common, "table_name": None, "database": run.database,
              "partitions": sorted({p for t in run.tables for p in t.partitions}),
              "new_columns": [], "row_count": run.row_count, "is_new": any(t.is_new for t in run.tables),
              "read_count": run.read_count, "duplicate_count": run.duplicate_count,
              "rejected_count": run.rejected_count, "discarded_value_count": run.discarded_value_count,
              "suppressed_count": run.suppressed_count}
    events = [{"type": "event", **common, "table_name": t.table_name, "database": t.database,
               "partitions": t.partitions, "new_columns": t.new_columns, "row_count": t.row_count,
               "is_new": t.is_new} for t in sorted(run.tables, key=lambda t: t.table_name)]
    return [source, *events]


def render(run: RunResult) -> str:
    return "".join(json.dumps(line, sort_keys=True) + "\n" for line in report_lines(run))


def file_report(env: SyncEnvironment, result: RunResult, spark_alive: bool = True) -> None:
    """Writes the run's report (without Spark when its JVM died); a failure to write it is said, never raised, so
    that it does not hide the sync's own failure."""
    result.finish_time = datetime.now(UTC)
    uri = env.layout.report(result.run_id, result.start_time)
    if spark_alive:
        try:
            _keep_failed_attempt(env, result)
        except Exception as error:  # the attempt's own report matters more than the one before it
            env.progress(f"report: could not keep the earlier attempt's report: {error}")
    try:
        (env.storage.write_text if spark_alive else write_text_without_spark)(uri, render(result))
    except Exception as error:
        env.progress(f"report: could not write the report: {error}")
        return
    env.progress(f"report: {relative_path(uri, env.layout.lake)}")


def _keep_failed_attempt(env: SyncEnvironment, result: RunResult) -> None:
    """A redo's report takes the run's report name; a failed (or interrupted) attempt's report is kept beside it,
    so the history and sync_reports show every attempt (a finished one redone after a crash is just rewritten)."""
    uri = env.layout.report(result.run_id, result.start_time)
    if not env.storage.exists(uri):
        return
    earlier = json.loads(env.storage.read_text(uri).splitlines()[0])
    if earlier.get("status") == "failed":
        env.storage.move(uri, env.layout.failed_attempt_report(result.run_id, result.start_time,
                                                               earlier["finish_time"]))


def told(env: SyncEnvironment, result: RunResult) -> list[str]:
    """What ``segment-lake sync`` prints: the run's figures, then where it left what a user looks at next (its
    report, and the rejected lines, duplicates and discarded values it recorded, when it recorded any)."""
    database, prefix, run = env.settings.database, env.settings.table_name_prefix, result.run_id
    lines = [f"{'replayed' if result.replay else 'synced'} {result.source_id}: read {result.read_count}, landed "
             f"{result.row_count}, duplicates {result.duplicate_count}, rejected {result.rejected_count}, discarded "
             f"values {result.discarded_value_count}, tables {len(result.tables)}"
             + (f", suppressed {result.suppressed_count}" if result.suppressed_count else ""),
             f"  report: {shown(env.layout.report(run, result.start_time))}"]
    if result.rejected_count:
        lines.append(f"  rejected lines: {shown(env.layout.rejected_of_run(run))}/")
    if result.duplicate_count:
        lines.append(f"  duplicates: {database}.{prefix}{DUPLICATES_TABLE} where run_id = '{run}'")
    if result.discarded_value_count:
        lines.append(f"  discarded values: {database}.{prefix}{DISCARDS_TABLE} where run_id = '{run}'")
    return lines
