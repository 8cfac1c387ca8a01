"""``segment-lake``: sync Segment events into the lake, generate realistic raw events, and query a local lake
with Spark SQL."""
from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlparse

import boto3

from .compaction import Compaction
from .deletion import UserDeletion
from .errors import InvalidQuery, InvalidSettings, missing_input
from .generate import GenerateOptions, generate
from .history import plot_history, read_history, render_table, success_share
from .layout import old_reports
from .metrics import cloudwatch_client
from .options import Options
from .recovery import describe, reset
from .replay_on_emr import ReplayOnEmrSettings, load_template, replay_request, start
from .runner import NO_WAIT, Runner, outcome
from .settings import (
    CompactionSettings,
    DeletionSettings,
    HistorySettings,
    LakeSettings,
    QuerySettings,
    SessionOptions,
    StateSettings,
    SuppressSettings,
    SyncSettings,
)
from .sql_statements import sql_statements
from .state import SourceState, require_known_source
from .suppression import SuppressionList
from .sync import Sync
from .sync_reports import move_old_reports

SOURCE = ("source_id",)  # a command on one source needs its id, though a lake's settings need none
WINDOW = ("first", "last")  # a replay's days


@dataclass(frozen=True)
class Command:
    """A subcommand: its help and description, the options of its settings, and its work. A Spark command (``spark``)
    also takes the session's options and runs its work on a Runner; its lake must exist unless it ``creates`` it."""

    name: str
    help: str
    description: str
    options: Options
    work: Callable
    spark: bool = True
    creates: bool = False  # a sync makes the lake
    catalog: bool = False  # the lake's embedded metastore is the catalog in local mode

    def add_to(self, commands) -> None:
        sub = commands.add_parser(self.name, help=self.help, description=self.description)
        for declared in (self.options, *([Options(SessionOptions)] if self.spark else [])):
            declared.add_to(sub)

    def run(self, args: argparse.Namespace) -> int:
        settings = self.options.build(args)
        if not self.spark:
            lines = self.work(settings)
            print("\n".join(lines))
            return 0
        if not self.creates:
            settings.require_lake()  # the command would otherwise create an empty lake folder
        runner = Runner(self.name, settings, Options(SessionOptions).build(args), uses_catalog=self.catalog,
                        reads_only=self.name == "sql", record_classes=self.creates)  # a sync loads nearly every class
        return runner.run(self.work, getattr(settings, "lock", NO_WAIT))


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="segment-lake", description=__doc__.replace("``", ""))
    commands = top.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        command.add_to(commands)
    return top


def sync(run: Runner) -> list[str]:
    settings: SyncSettings = run.settings
    local_input = urlparse(settings.input_uri).path if settings.input_uri.startswith("file:") else None
    if local_input is not None and not os.path.exists(local_input):  # before Spark starts or the lake is touched
        raise missing_input(settings.input_uri)
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
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql import functions as F

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
    require_known_source(run.storage, run.layout)
    with run.locked("delete-users") as lock:  # named to a sync refused meanwhile
        deletion = UserDeletion(run.spark, run.storage, run.layout, progress=run.progress, check=lock.check)
        return deletion.run(settings.users.user_ids, settings.users.anonymous_ids).told(run.layout)


def state(run: Runner) -> list[str]:
    settings: StateSettings = run.settings
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
    catalog = run.catalog()
    if not catalog.database_exists(settings.database):
        raise InvalidSettings(f"no database {settings.database!r} in the {settings.catalog} catalog: pass the "
                              f"--source-slug or --glue-database the syncs of {settings.source_id} use")
    with run.locked("compact", settings.lock) as lock:
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


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "aws_region", None):  # every AWS client of the command (S3's too), unless one is configured
        os.environ.setdefault("AWS_DEFAULT_REGION", args.aws_region)
    return outcome(lambda: COMMANDS[args.command].run(args))


COMMANDS = {command.name: command for command in (
    Command("sync", "land new raw events of one source in the lake",
            "Land the raw Segment events not yet processed as Parquet tables, registered in the catalog, deduplicated "
            "by messageId.", Options(SyncSettings, without=WINDOW, required=SOURCE), sync, creates=True, catalog=True),
    Command("replay", "land again the raw events received in a window of days, without duplicates",
            "Land the raw events of the day folders (Segment's <day-epoch-ms>) from --from to --to, whether synced "
            "before or not, as a sync lands them: each event at most once, so what the lake already has is dropped as "
            "a duplicate. The report says replay: true.", Options(SyncSettings, required=(*SOURCE, *WINDOW)), sync,
            creates=True, catalog=True),
    Command("replay-on-emr", "start a temporary EMR cluster that replays a window of days and then terminates",
            "Start a cluster from the lake's replay cluster template (ReplayCluster in the constructs): the lake "
            "cluster's roles, security configuration and app release, one step that runs `segment-lake replay` for "
            "the source and window, terminated by EMR when the step ends. The regular cluster keeps its schedule; the "
            "replay waits for a running sync of the source to finish.",
            Options(ReplayOnEmrSettings, required=WINDOW), replay_on_emr, spark=False),
    Command("generate", "write realistic raw Segment events for tests and benchmarks",
            "Write deterministic, realistic raw Segment events in the S3 destination's layout "
            "(segment-logs/<source>/<day-epoch-ms>/<n>.gz). The same options and seed give the same bytes.",
            Options(GenerateOptions), generate_events, spark=False),
    Command("suppress", "list, add or remove users whose events the sync drops",
            "A source's suppressed users: the sync leaves out (and counts) the new events of these user ids and "
            "anonymous ids. It does not delete what the lake already has: segment-lake delete-users does.",
            Options(SuppressSettings, required=SOURCE), suppress),
    Command("delete-users", "delete every row of users from a source's lake, and suppress them",
            "Remove every row of these user ids and anonymous ids from every table of the source, its discarded values "
            "and its duplicates' record, rewriting only the files that hold them (each file is replaced whole: a "
            "reader sees it before or after, never both). The ids are suppressed first, so later syncs and replays do "
            "not land them again. The raw input (segment-logs/) is not touched.",
            Options(DeletionSettings, required=SOURCE), delete_users),
    Command("compact", "merge the small files of a source's past hours (or days) into fewer, larger ones",
            "Merge the files of each hour (or day) that no sync adds to any more (ended --older-than hours ago) into "
            "as few as --target-file-mb allows, with the same rows. Readers see the old files or the merged ones (the "
            "catalog points at the merged files while the partition's folder changes); takes the source's lock; a "
            "crash is finished by the next compact or sync. Pass the naming options the syncs use. Writes a report "
            "with the file counts.", Options(CompactionSettings, required=SOURCE), compact, catalog=True),
    Command("state", "show a source's sync state, or drop its unfinished run",
            "show: the finished runs, the files processed and the unfinished run (if any). reset: drop the unfinished "
            "run (what its attempts published first), so that the next sync starts afresh over every unprocessed "
            "file.", Options(StateSettings, required=SOURCE), state),
    Command("history", "show recent syncs: rows, duplicates, rejections, duration",
            "Show the recent syncs of a lake from their reports, as a table, with the share of syncs that finished "
            "over the last 30 days (of every source of the lake, or of --source-id).", Options(HistorySettings),
            history),
    Command("move-reports", "once: file a lake's older sync reports by source, as the sync_reports table's keys",
            "Move the sync reports written before they were filed as the table's partition keys, from "
            "reports/day=<day>/source=<source>/run_id=<run>/ to reports/source_id=<source>/day=<day>/run_id=<run>/. "
            "Then drop the sync_reports table (external: its files stay), let a sync recreate it, and run MSCK REPAIR "
            "TABLE __segment_datalake.sync_reports to bring the older reports back.",
            Options(LakeSettings, only=("lake_uri",)), move_reports),
    Command("sql", "run Spark SQL queries against a local lake's catalog",
            "Run Spark SQL statements against the embedded catalog of a local lake, in one Spark start: each argument "
            "is a statement, and -f FILE adds a file's statements (ended by ';'). Each result is printed as "
            "tab-separated lines, a blank line between two.", Options(QuerySettings, without=SOURCE), sql, catalog=True),
)}
