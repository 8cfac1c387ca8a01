"""The work of each ``segment-lake`` command (cli.py declares them): each takes its Runner, or its settings when it
runs no Spark, and returns the lines it prints."""
from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from urllib.parse import urlparse

import boto3
from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import functions as F

from . import iceberg_tables
from .catalog_changes import other_format
from .compaction import Compaction
from .deletion import UserDeletion
from .errors import InvalidQuery, InvalidSettings, missing_input
from .generate import GenerateOptions, generate
from .history import plot_history, read_history, render_table, success_share
from .layout import old_reports
from .metrics import cloudwatch_client
from .recovery import describe, reset
from .replay_on_emr import ReplayOnEmrSettings, load_template, replay_request, start
from .runner import Runner
from .settings import (
    CompactionSettings,
    DeletionSettings,
    HistorySettings,
    QuerySettings,
    StateSettings,
    SuppressSettings,
    SyncSettings,
)
from .sql_statements import sql_statements
from .state import SourceState, require_known_source
from .suppression import SuppressionList
from .sync import Sync
from .sync_reports import move_old_reports


def sync(run: Runner) -> list[str]:
    settings: SyncSettings = run.settings
    local_input = urlparse(settings.input_uri).path if settings.input_uri.startswith("file:") else None
    if local_input is not None and not os.path.exists(local_input):  # before Spark starts or the lake is touched
        raise missing_input(settings.input_uri)
    if settings.table_format != iceberg_tables.FORMAT and settings.lake_uri.startswith("file:"):
        # a local lake's record is a file: read before Spark starts (the catalog stage refuses it too, after the
        # parse, and on S3 alone, where reading it would cost every Parquet run a request)
        tables = run.recorded_iceberg_tables()
        if tables:
            raise other_format(min(tables.values()), iceberg_tables.FORMAT)
    metrics = cloudwatch_client(settings.aws_region) if settings.metrics_namespace else None
    job = Sync(run.spark, settings, run.catalog(), metrics=metrics)
    return job.told(job.run())


def generate_events(options: GenerateOptions) -> list[str]:
    files = generate(options)
    return [f"generated {options.events * options.sources} lines in {len(files)} files under "
            f"{options.output / 'segment-logs'}"]


def sql(run: Runner) -> list[str]:
    settings: QuerySettings = run.settings
    statements = [*settings.queries, *(s for path in settings.files for s in sql_statements(_read_file(path)))]
    if not statements:
        raise InvalidSettings("sql needs a statement: pass it as an argument, or -f FILE")
    lines = []
    for number, statement in enumerate(statements):
        try:
            frame = run.spark.sql(statement)
        except (AnalysisException, ParseException) as error:  # the query's fault, not the lake's
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            which = f"statement {number + 1}: " if len(statements) > 1 else ""
            raise InvalidQuery(f"{which}{first}: fix the query (`show tables in <database>` lists the tables)") from None
        # rendered by Spark, as its own SQL shell does: a Python datetime cannot hold every year a timestamp can
        texts = frame.toDF(*(f"c{i}" for i in range(len(frame.columns))))
        rows = texts.select([F.col(c).cast("string") for c in texts.columns]).collect()
        lines += [*([""] if number else []), "\t".join(frame.columns),
                  *("\t".join("" if v is None else v for v in row) for row in rows)]
    return lines


def _read_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError as error:
        raise InvalidSettings(f"cannot read -f {path!r}: {error.strerror}") from None


def suppress(run: Runner) -> list[str]:
    settings: SuppressSettings = run.settings
    users, lines = settings.users, []
    suppression = SuppressionList(run.storage, SourceState(run.storage, run.layout.state).suppressed_uri)
    if settings.action != "list":
        with run.locked("suppress"):  # never beside a running sync or deletion
            change = suppression.add if settings.action == "add" else suppression.remove
            changed = change(list(users.user_ids), list(users.anonymous_ids))
        done, others = {"add": ("added", "already listed"), "remove": ("removed", "not listed")}[settings.action]
        lines.append(f"{done} {changed} of {len(users.all)} ids"
                     + (f" (the others were {others})" if changed < len(users.all) else ""))
    return lines + suppression.read().told(settings.source_id)


def delete_users(run: Runner) -> list[str]:
    settings: DeletionSettings = run.settings
    run.open_recorded_iceberg_tables()
    require_known_source(run.storage, run.layout)
    with run.locked("delete-users") as lock:  # named to a sync refused meanwhile
        deletion = UserDeletion(run.spark, run.storage, run.layout, progress=run.progress, check=lock.check)
        return deletion.run(settings.users.user_ids, settings.users.anonymous_ids).told(run.layout)


def state(run: Runner) -> list[str]:
    settings: StateSettings = run.settings
    if settings.action == "reset":
        run.open_recorded_iceberg_tables()  # it first finishes an unfinished deletion
    source = SourceState(run.storage, run.layout.state)
    lines = []
    if settings.action == "reset":
        with run.locked("state reset"):  # never under a running sync
            dropped = reset(run.storage, run.layout, source)
        lines.append(f"dropped unfinished run {dropped}: the next sync starts a new run over every unprocessed file"
                     if dropped else "no unfinished run: nothing to reset")
    return lines + [f"{settings.source_id}: {line}" for line in describe(source)]


def history(run: Runner) -> list[str]:
    settings: HistorySettings = run.settings
    reports = run.layout.reports
    if run.storage.glob(old_reports(reports)):
        run.progress(f"{settings.given_lake} also has reports filed as reports/day=.../source=.../, which history "
                     f"does not read: file them with `segment-lake move-reports --lake {settings.given_lake}`")
    summaries = read_history(run.spark, run.storage, reports, settings.source_id)
    if not summaries:
        raise InvalidSettings(f"no sync reports{' of source ' + settings.source_id if settings.source_id else ''} in "
                              f"{settings.given_lake!r}: pass the --lake (and --source-id) the syncs write to")
    finished, total = success_share(summaries, datetime.now(UTC))
    lines = [render_table(summaries[-settings.last:], with_source=settings.source_id is None),
             f"finished over the last 30 days: {finished} of {total} syncs" + (f" ({finished / total:.0%})" if total else "")]
    if settings.plot:
        plot_history(summaries, settings.plot)
        lines.append(f"plot: {settings.plot}")
    return lines


def move_reports(run: Runner) -> list[str]:
    moved = move_old_reports(run.storage, run.layout.reports)
    return [f"moved {moved} report{'' if moved == 1 else 's'} to reports/source_id=.../day=.../run_id=.../"]


def compact(run: Runner) -> list[str]:
    settings: CompactionSettings = run.settings
    run.open_recorded_iceberg_tables()  # Iceberg's procedures need Iceberg's session
    catalog = run.catalog()
    if not catalog.database_exists(settings.database):
        raise InvalidSettings(f"no database {settings.database!r} in the {settings.catalog} catalog: pass the "
                              f"--source-slug or --glue-database the syncs of {settings.source_id} use")
    with run.locked("compact", settings.lock_wait) as lock:
        report = Compaction(run.spark, run.storage, catalog, run.layout, settings.database, settings.table_name_prefix,
                            settings.date_partition, check=lock.check, progress=run.progress
                            ).run(settings.older_than_hours, settings.target_file_mb)
    return report.told(run.layout)


def replay_on_emr(settings: ReplayOnEmrSettings) -> list[str]:
    client = boto3.session.Session(region_name=settings.aws_region).client
    request = replay_request(load_template(client("s3"), settings.bucket, settings.cluster_name), settings.source_id,
                             settings.replay)
    if settings.dry_run:
        return [json.dumps(request, indent=2)]
    cluster_id = start(client("emr"), request)
    return [f"started {cluster_id} ({request['Name']}): it replays {settings.source_id} from {settings.replay.first} "
            f"to {settings.replay.last} and terminates; follow it with `aws emr describe-cluster --cluster-id "
            f"{cluster_id}`, its report is in the lake's sync history"]
