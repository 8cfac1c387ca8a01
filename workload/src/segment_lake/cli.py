"""``segment-lake``: sync Segment events into the lake, generate realistic raw events, and query a local lake
with Spark SQL."""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC

from segment_lake_contract import DATE_PARTITIONS, DEFAULT_OLDER_THAN_HOURS, DEFAULT_TARGET_FILE_MB, METRICS_NAMESPACE

from . import interrupt
from .emr_node import on_emr
from .errors import SparkDied, classify, missing_input


@dataclass(frozen=True)
class Option:
    """One command-line option, declared once and added to every command that takes it."""

    names: tuple[str, ...]
    settings: dict

    def add_to(self, command: argparse.ArgumentParser) -> None:
        command.add_argument(*self.names, **self.settings)


def option(*names: str, **settings) -> Option:
    return Option(names, settings)


@dataclass(frozen=True)
class OneOf:
    """Options of which a command takes at most one."""

    options: tuple[Option, ...]

    def add_to(self, command: argparse.ArgumentParser) -> None:
        group = command.add_mutually_exclusive_group()
        for declared in self.options:
            group.add_argument(*declared.names, **declared.settings)


def _day(text: str):
    from datetime import date

    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid day {text!r}: use YYYY-MM-DD, for example 2024-01-02") from None


LAKE_HELP = "lake root (local path, file://, s3:// or s3a://)"
SOURCE_ID = option("--source-id", required=True, help="Segment source id")
LAKE = option("--lake", required=True, help=LAKE_HELP)
VERBOSE = option("--verbose", action="store_true", help="show Spark's warnings too (default: its errors only)")
AWS_REGION = option("--aws-region", help="region of the Glue catalog (default: AWS_REGION or boto3's configuration)")
WINDOW = (option("--from", dest="replay_from", required=True, type=_day, help="first day, YYYY-MM-DD (UTC)"),
          option("--to", dest="replay_to", required=True, type=_day, help="last day, YYYY-MM-DD (UTC)"))
USERS = (option("--user-id", action="append", default=[], metavar="ID", help="a userId (repeat for more)"),
         option("--anonymous-id", action="append", default=[], metavar="ID", help="an anonymousId (repeat for more)"))
WAIT_FOR_LOCK = option("--wait-for-lock", type=int, default=0, metavar="MINUTES",
                       help="while another run holds the source's lock, wait up to this long for it (default 0: "
                            "refuse at once)")
# where the source's tables are registered and how they are named and partitioned
NAMING = (
    option("--source-slug", help="source slug; names the default database"),
    option("--glue-database", help="database of the tables (default: the source slug in lower case, "
                                   "'_' for other characters; else the source id)"),
    option("--table-prefix", default="", help="prefix of every table name, e.g. ios_"),
    option("--date-partition", default="day_hour", choices=list(DATE_PARTITIONS),
           help="partition layout by receivedAt (default day_hour)"),
    option("--catalog", choices=["local", "glue"], default="glue" if on_emr() else "local",
           help="local: Spark's metastore inside the lake folder; glue: AWS Glue (default on EMR)"),
    AWS_REGION)
SYNC = (
    SOURCE_ID,
    option("--input", required=True, help="raw events: newline-delimited JSON, optionally .gz, in any folder "
                                          "structure (local path, file://, s3:// or s3a://)"),
    LAKE, *NAMING,
    option("--workspace-id", help="Segment workspace id, copied into the report"),
    option("--max-records-per-file", type=int, default=5_000_000,
           help="split a partition's file beyond this many rows (default 5,000,000)"),
    option("--max-columns-per-table", type=int, default=5_000,
           help="a table takes no new column beyond this many; the values of the columns it could not take go to "
                "segment_discards (default 5,000)"),
    option("--max-tables-per-source", type=int, default=10_000,
           help="no new table beyond this many of the source; the events of the tables it could not create are "
                "rejected with the reason (default 10,000; Glue holds 200,000 per database)"),
    option("--driver-memory", help="Spark's heap in local mode, e.g. 4g (default: SEGMENT_LAKE_DRIVER_MEMORY, "
                                   "else 40%% of this machine's memory, at most 2g)"),
    option("--cores", type=int, help="cores Spark uses in local mode (default: SEGMENT_LAKE_CORES, else all)"),
    WAIT_FOR_LOCK,
    option("--if-busy", choices=["fail", "skip"], default="fail",
           help="when another run still holds the source's lock (after --wait-for-lock): fail (default, exit 1), or "
                "skip: say so and exit 0, for a scheduled sync whose next run does the work"),
    option("--metrics-namespace", default=METRICS_NAMESPACE if on_emr() else "", metavar="NAMESPACE",
           help=f"write the run's figures as CloudWatch metrics of the source in this namespace, in --aws-region "
                f"(default on EMR: {METRICS_NAMESPACE}; elsewhere '', none)"),
    option("--partition-projection", action="store_true",
           help="Glue tables this run creates get Athena partition projection instead of one Glue partition per "
                "hour; only Athena then sees their partitions (docs/lake-format.md, Partition projection)"),
    VERBOSE)


@dataclass(frozen=True)
class Command:
    """A subcommand: what it does (its help and description), the options it takes, in order, and how it runs."""

    name: str
    run: Callable[[argparse.Namespace], int]
    help: str
    description: str
    options: tuple[Option | OneOf, ...]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="segment-lake", description=__doc__.replace("``", ""))
    commands = top.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        sub = commands.add_parser(command.name, help=command.help, description=command.description)
        for declared in command.options:
            declared.add_to(sub)
    return top


def _catalog(spark, settings, args: argparse.Namespace):
    """The catalog the settings name: the lake's embedded metastore, or Glue in ``--aws-region``."""
    from .catalog.glue import GlueCatalog
    from .catalog.local import LocalCatalog

    if settings.catalog == "local":
        return LocalCatalog(spark)
    from .progress import stderr_sink

    return GlueCatalog(region=args.aws_region, date_layout=DATE_PARTITIONS[settings.date_partition],
                       project_new_tables=getattr(settings, "partition_projection", False), say=stderr_sink)


def run_sync(args: argparse.Namespace) -> int:
    from .lock import SourceBusy
    from .metrics import cloudwatch_client
    from .session import build_session
    from .settings import SyncSettings
    from .sync import Sync

    settings = SyncSettings(
        source_id=args.source_id, input_uri=args.input, lake_uri=args.lake, source_slug=args.source_slug,
        glue_database=args.glue_database, table_prefix=args.table_prefix, date_partition=args.date_partition,
        catalog=args.catalog, max_records_per_file=args.max_records_per_file,
        max_columns_per_table=args.max_columns_per_table, max_tables_per_source=args.max_tables_per_source,
        workspace_id=args.workspace_id, replay_from=getattr(args, "replay_from", None),
        replay_to=getattr(args, "replay_to", None), lock_wait_minutes=args.wait_for_lock,
        metrics_namespace=args.metrics_namespace or None, partition_projection=args.partition_projection)
    local_input = _local_path(settings.input_uri)
    if local_input is not None and not os.path.exists(local_input):  # before Spark starts or the lake is touched
        raise missing_input(settings.input_uri)
    spark = build_session(f"segment-lake sync {settings.source_id}", settings.lake_uri,
                          local_catalog=settings.catalog == "local", memory=args.driver_memory, task_slots=args.cores,
                          verbose=args.verbose, record_classes=True)  # a sync loads nearly every class
    sync = Sync(spark, settings, _catalog(spark, settings, args),
                metrics=cloudwatch_client(args.aws_region) if settings.metrics_namespace else None)
    try:
        result = sync.run()
    except SourceBusy as busy:
        if args.if_busy != "skip":
            raise
        print(f"skipped {settings.source_id}: {busy}")
        return 0
    print(f"{'replayed' if settings.replay_from else 'synced'} {settings.source_id}: read {result.read_count}, "
          f"landed {result.row_count}, "
          f"duplicates {result.duplicate_count}, rejected {result.rejected_count}, "
          f"discarded values {result.discarded_value_count}, tables {len(result.tables)}"
          + (f", suppressed {result.suppressed_count}" if result.suppressed_count else ""))
    for line in sync.where(result):
        print(f"  {line}")
    return 0


def run_generate(args: argparse.Namespace) -> int:
    from datetime import datetime
    from pathlib import Path

    from .errors import InvalidSettings
    from .generate import GenerateOptions, generate

    try:
        start = datetime.strptime(args.start, "%Y-%m-%dT%H").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidSettings(f"invalid --start {args.start!r}: use YYYY-MM-DDTHH, for example 2024-01-02T00") from None
    span = {"hours": args.days * 24} if args.days is not None else {"hours": args.hours} if args.hours is not None else {}
    try:
        options = GenerateOptions(
            output=Path(args.output), events=args.events, sources=args.sources, **span, start=start,
            event_names=args.event_names, files_per_hour=args.files_per_hour, duplicate_rate=args.duplicate_rate,
            malformed_rate=args.malformed_rate, seed=args.seed)
    except ValueError as error:
        raise InvalidSettings(str(error)) from None
    files = generate(options)
    print(f"generated {args.events * args.sources} lines in {len(files)} files under {Path(args.output) / 'segment-logs'}")
    return 0


def run_sql(args: argparse.Namespace) -> int:
    from .errors import InvalidQuery, InvalidSettings
    from .layout import metastore_dir
    from .session import build_session
    from .settings import LakeSettings

    statements = [*args.query, *(s for path in args.file for s in sql_statements(_read_file(path)))]
    if not statements:
        raise InvalidSettings("sql needs a statement: pass it as an argument, or -f FILE")
    lake = LakeSettings(args.lake).lake_uri
    if not os.path.isdir(metastore_dir(lake)):  # Spark would create an empty metastore there and answer from it
        raise InvalidSettings(f"no lake at {args.lake!r} (no {os.path.relpath(metastore_dir(lake))}): pass the --lake "
                              f"a local sync wrote to")
    spark = build_session("segment-lake sql", lake, verbose=args.verbose, reads_only=True)
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql import functions as F

    for number, statement in enumerate(statements):
        try:
            frame = spark.sql(statement)
        except (AnalysisException, ParseException) as error:  # the query's fault, not the lake's
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            which = f"statement {number + 1}: " if len(statements) > 1 else ""
            raise InvalidQuery(f"{which}{first}: fix the query (`show tables in <database>` lists the tables)") from None
        if number:
            print()
        print("\t".join(frame.columns))
        # rendered by Spark, as its own SQL shell does: a Python datetime cannot hold every year a timestamp can
        texts = frame.toDF(*(f"c{i}" for i in range(len(frame.columns))))
        for row in texts.select([F.col(c).cast("string") for c in texts.columns]).collect():
            print("\t".join("" if v is None else v for v in row))
    return 0


def _read_file(path: str) -> str:
    from .errors import InvalidSettings

    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError as error:
        raise InvalidSettings(f"cannot read -f {path!r}: {error.strerror}") from None


def sql_statements(text: str) -> list[str]:
    """The statements of ``text``, each ended by ';' outside quotes and comments, stripped; empty ones dropped."""
    statements, current, quote, index = [], [], None, 0
    while index < len(text):
        char = text[index]
        if quote:
            current.append(char)
            if char == "\\" and quote != "`" and index + 1 < len(text):
                current.append(text[index + 1])
                index += 1
            elif char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
            current.append(char)
        elif text.startswith(("--", "/*"), index):  # a comment: to the end of its line, or past its */
            line_comment = text.startswith("--", index)
            end = text.find("\n" if line_comment else "*/", index + 2)
            index = len(text) if end < 0 else end + (0 if line_comment else 2)
            continue
        elif char == ";":
            statements.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        index += 1
    statements.append("".join(current).strip())
    return [statement for statement in statements if statement]


def run_suppress(args: argparse.Namespace) -> int:
    from .errors import InvalidSettings
    from .lock import source_lock
    from .state import SourceState
    from .storage import LakeStorage
    from .suppression import SuppressionList

    ids = args.user_id + args.anonymous_id
    if args.action != "list" and not ids:
        raise InvalidSettings(f"suppress {args.action} needs at least one --user-id or --anonymous-id")
    if any(not value for value in ids):
        raise InvalidSettings("an empty --user-id or --anonymous-id matches no event: pass the id")
    spark, settings = _lake_session(args, "segment-lake suppress", args.source_id)
    storage, layout = LakeStorage(spark), settings.layout
    suppression = SuppressionList(storage, SourceState(storage, layout.state).suppressed_uri)
    if args.action != "list":
        with source_lock(spark, layout).held():  # never beside a running sync or deletion
            change = suppression.add if args.action == "add" else suppression.remove
            changed = change(args.user_id, args.anonymous_id)
        print(f"{'added' if args.action == 'add' else 'removed'} {changed} of {len(ids)} ids"
              + (" (the others were already listed)" if args.action == "add" and changed < len(ids) else "")
              + (" (the others were not listed)" if args.action == "remove" and changed < len(ids) else ""))
    listed = suppression.read()
    for kind, label in (("user_ids", "user id"), ("anonymous_ids", "anonymous id")):
        for value, added in getattr(listed, kind).items():
            print(f"{label}\t{value}\tsince {added}")
    if not listed:
        print(f"{settings.source_id}: no suppressed users")
    return 0


def run_delete_users(args: argparse.Namespace) -> int:
    from .deletion import UserDeletion
    from .errors import InvalidSettings
    from .lock import source_lock
    from .progress import count
    from .state import require_known_source
    from .storage import LakeStorage, shown

    ids = args.user_id + args.anonymous_id
    if not ids:
        raise InvalidSettings("delete-users needs at least one --user-id or --anonymous-id")
    if any(not value for value in ids):
        raise InvalidSettings("an empty --user-id or --anonymous-id matches no event: pass the id")
    spark, settings = _lake_session(args, "segment-lake delete-users", args.source_id)
    storage, layout = LakeStorage(spark), settings.layout
    require_known_source(storage, layout)
    lock = source_lock(spark, layout)
    lock.run_id = "delete-users"  # named to a sync refused meanwhile
    with lock.held():
        deletion = UserDeletion(spark, storage, layout, progress=lambda line: print(f"segment-lake: {line}", file=sys.stderr),
                                check=lock.check)
        report = deletion.run(tuple(args.user_id), tuple(args.anonymous_id))
    print(f"deleted {count(report.rows_deleted, 'row')} of {count(len(ids), 'id')} from "
          f"{count(len(report.tables), 'table')} ({count(report.files_rewritten, 'file')} rewritten, "
          f"{report.files_removed} removed), with {count(report.discarded_values_deleted, 'discarded value')} and "
          f"{count(report.duplicates_deleted, 'recorded duplicate')}; the ids are suppressed")
    examined = report.examined
    print(f"  searched: {count(examined['rows'], 'row')} in {count(examined['files'], 'file')} of "
          f"{count(examined['tables'], 'table')}")
    print(f"  report: {shown(layout.deletion_report(report.deletion_id))}")
    return 0


def _lake_session(args: argparse.Namespace, name: str, source_id: str | None = None):
    """A session for a command on an existing lake (no catalog), and the lake's settings."""
    from .session import build_session
    from .settings import LakeSettings

    settings = LakeSettings(args.lake, source_id)
    settings.require_lake(args.lake)
    return build_session(name, settings.lake_uri, local_catalog=False, verbose=args.verbose), settings


def run_state(args: argparse.Namespace) -> int:
    from .lock import source_lock
    from .recovery import describe, reset
    from .state import SourceState
    from .storage import LakeStorage

    spark, settings = _lake_session(args, "segment-lake state", args.source_id)
    storage, layout = LakeStorage(spark), settings.layout
    state = SourceState(storage, layout.state)
    if args.action == "reset":
        with source_lock(spark, layout).held():  # never under a running sync
            dropped = reset(storage, layout, state)
        print(f"dropped unfinished run {dropped}: the next sync starts a new run over every unprocessed file"
              if dropped else "no unfinished run: nothing to reset")
    for line in describe(state):
        print(f"{settings.source_id}: {line}")
    return 0


def run_history(args: argparse.Namespace) -> int:
    from datetime import datetime

    from .errors import InvalidSettings
    from .history import plot_history, read_history, render_table, success_share
    from .layout import old_reports
    from .storage import LakeStorage

    if args.last < 1:
        raise InvalidSettings(f"invalid --last {args.last}: pass how many syncs to list, 1 or more")
    spark, settings = _lake_session(args, "segment-lake history", args.source_id)
    reports, storage = settings.layout.reports, LakeStorage(spark)
    if storage.glob(old_reports(reports)):
        print(f"segment-lake: {args.lake} also has reports filed as reports/day=.../source=.../, which history does not "
              f"read: file them with `segment-lake move-reports --lake {args.lake}`", file=sys.stderr)
    summaries = read_history(spark, storage, reports, args.source_id)
    if not summaries:
        raise InvalidSettings(f"no sync reports{' of source ' + args.source_id if args.source_id else ''} in "
                              f"{args.lake!r}: pass the --lake (and --source-id) the syncs write to")
    print(render_table(summaries[-args.last:], with_source=args.source_id is None))
    finished, total = success_share(summaries, datetime.now(UTC))
    print(f"finished over the last 30 days: {finished} of {total} syncs"
          + (f" ({finished / total:.0%})" if total else ""))
    if args.plot:
        plot_history(summaries, args.plot)
        print(f"plot: {args.plot}")
    return 0


def run_move_reports(args: argparse.Namespace) -> int:
    from .storage import LakeStorage
    from .sync_reports import move_old_reports

    spark, settings = _lake_session(args, "segment-lake move-reports")
    moved = move_old_reports(LakeStorage(spark), settings.layout.reports)
    print(f"moved {moved} report{'' if moved == 1 else 's'} to reports/source_id=.../day=.../run_id=.../")
    return 0


def run_compact(args: argparse.Namespace) -> int:
    from .compaction import Compaction
    from .errors import InvalidSettings
    from .lock import source_lock
    from .session import build_session
    from .settings import SourceSettings
    from .storage import LakeStorage

    if args.older_than < 0 or args.target_file_mb < 1:
        raise InvalidSettings(f"invalid --older-than {args.older_than} or --target-file-mb {args.target_file_mb}: "
                              f"pass 0 or more hours and 1 or more MB")
    if args.wait_for_lock < 0:
        raise InvalidSettings(f"--wait-for-lock {args.wait_for_lock} must be 0 or more minutes")
    settings = SourceSettings(args.lake, args.source_id, source_slug=args.source_slug, glue_database=args.glue_database,
                              table_prefix=args.table_prefix, date_partition=args.date_partition, catalog=args.catalog)
    settings.require_lake(args.lake)
    spark = build_session(f"segment-lake compact {settings.source_id}", settings.lake_uri,
                          local_catalog=settings.catalog == "local", verbose=args.verbose)
    catalog = _catalog(spark, settings, args)
    storage, layout = LakeStorage(spark), settings.layout
    if not catalog.database_exists(settings.database):
        raise InvalidSettings(f"no database {settings.database!r} in the {settings.catalog} catalog: pass the "
                              f"--source-slug or --glue-database the syncs of {settings.source_id} use")
    lock = source_lock(spark, layout, wait_seconds=args.wait_for_lock * 60)
    lock.run_id = "compact"
    with lock.held():
        report = Compaction(spark, storage, catalog, layout, settings.database, settings.table_name_prefix,
                            settings.date_partition, check=lock.check,
                            progress=lambda line: print(f"segment-lake: {line}", file=sys.stderr)
                            ).run(args.older_than, args.target_file_mb)
    print(f"compacted {settings.source_id}: {report.partitions_compacted} partitions, "
          f"{report.merged_files_before} files merged into {report.merged_files_after}; data files of the "
          f"source: {report.files_before} before, {report.files_after} after")
    state, index, done = report.state, report.state.landed_index, []
    if state.processed_lists_merged:
        done.append(f"{state.processed_lists_merged} processed lists merged into one")
    if index.runs_merged:
        done.append(f"landed index: {index.runs_merged} runs merged, {index.ids_after} of {index.ids_before} ids "
                    f"kept (received from {index.horizon})")
    if done:
        print(f"  state: {'; '.join(done)}")
    if report.partitions_compacted:
        print(f"  report: {layout.compaction_report(report.compaction_id)}")
    return 0


def run_replay_on_emr(args: argparse.Namespace) -> int:
    import json

    import boto3

    from .replay_on_emr import load_template, replay_request, start, template_bucket

    bucket = template_bucket(args.lake)
    session = boto3.session.Session(region_name=args.aws_region)
    template = load_template(session.client("s3"), bucket, args.cluster_name)
    request = replay_request(template, args.source_id, args.replay_from, args.replay_to)
    if args.dry_run:
        print(json.dumps(request, indent=2))
        return 0
    cluster_id = start(session.client("emr"), request)
    print(f"started {cluster_id} ({request['Name']}): it replays {args.source_id} from {args.replay_from} to "
          f"{args.replay_to} and terminates; follow it with `aws emr describe-cluster --cluster-id {cluster_id}`, "
          f"its report is in the lake's sync history")
    return 0


def _local_path(uri: str) -> str | None:
    from urllib.parse import urlparse

    return urlparse(uri).path if uri.startswith("file:") else None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "aws_region", None):  # every AWS client of the command (S3's too), unless one is configured
        os.environ.setdefault("AWS_DEFAULT_REGION", args.aws_region)
    interrupt.ENABLED = True
    session = sys.modules.get("segment_lake.session")  # imported only by commands that start Spark
    started = session.started_sessions() if session else 0
    line, jvm_alive = None, True
    try:
        code = COMMANDS[args.command].run(args)
    except Exception as error:  # one line naming what failed; the report has the rest
        if interrupt.received():
            stopped = error if isinstance(error, interrupt.Interrupted) else interrupt.Interrupted(
                interrupt.received(), "what it began, the next run of the command (or a sync) finishes or undoes")
            code, line = stopped.exit_code, f"segment-lake: {stopped}"
        else:
            kind, message = classify(error)
            code, line = 1, f"segment-lake: error ({kind}): {message}"
        jvm_alive = not isinstance(error, SparkDied)
    except KeyboardInterrupt:  # before Spark started (and the handlers with it)
        code, line = 130, "segment-lake: interrupted by SIGINT: nothing was begun"
    # the session this command started ends before its last line (a JVM that died has nothing left to stop)
    if jvm_alive and "segment_lake.session" in sys.modules:
        sys.modules["segment_lake.session"].stop_started_sessions(since=started)
    interrupt.reset()
    _quiet_after_the_end()
    if line:
        print(line, file=sys.stderr)
    return code


def _quiet_after_the_end() -> None:
    """The command's last line is its verdict: what py4j's threads and objects say about a JVM that is gone, as the
    interpreter ends, is not printed after it."""
    import logging
    import threading

    quiet = logging.getLogger("py4j")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    sys.unraisablehook = threading.excepthook = lambda *_: None


SUPPRESS_HELP = ("A source's suppressed users: the sync leaves out (and counts) the new events of these user ids and "
                 "anonymous ids. It does not delete what the lake already has: segment-lake delete-users does.")
COMMANDS = {command.name: command for command in (
    Command("sync", run_sync, "land new raw events of one source in the lake",
            "Land the raw Segment events not yet processed as Parquet tables, registered in the catalog, deduplicated "
            "by messageId.", SYNC),
    Command("replay", run_sync, "land again the raw events received in a window of days, without duplicates",
            "Land the raw events of the day folders (Segment's <day-epoch-ms>) from --from to --to, whether synced "
            "before or not, as a sync lands them: each event at most once, so what the lake already has is dropped as "
            "a duplicate. The report says replay: true.", (*SYNC, *WINDOW)),
    Command("replay-on-emr", run_replay_on_emr,
            "start a temporary EMR cluster that replays a window of days and then terminates",
            "Start a cluster from the lake's replay cluster template (ReplayCluster in the constructs): the lake "
            "cluster's roles, security configuration and app release, one step that runs `segment-lake replay` for "
            "the source and window, terminated by EMR when the step ends. The regular cluster keeps its schedule; the "
            "replay waits for a running sync of the source to finish.", (
                option("--lake", required=True, help="the lake bucket, s3://<bucket>/"), SOURCE_ID, *WINDOW,
                option("--cluster-name", help="the replay cluster's name (default: the bucket's only one)"),
                option("--aws-region", help="region of the lake (default: AWS_REGION or boto3's configuration)"),
                option("--dry-run", action="store_true", help="print the RunJobFlow request instead of sending it"))),
    Command("generate", run_generate, "write realistic raw Segment events for tests and benchmarks",
            "Write deterministic, realistic raw Segment events in the S3 destination's layout "
            "(segment-logs/<source>/<day-epoch-ms>/<n>.gz). The same options and seed give the same bytes.", (
                option("--output", required=True, help="folder to write segment-logs/ into"),
                option("--events", type=int, default=100_000,
                       help="lines per source, duplicates and malformed included (default 100,000)"),
                option("--sources", type=int, default=1, help="number of sources, src0001... (default 1)"),
                OneOf((option("--hours", type=int, help="hours of events (default 2, one scheduled sync's window)"),
                       option("--days", type=int, help="days of events"))),
                option("--start", default="2024-01-02T00",
                       help="first hour received, YYYY-MM-DDTHH in UTC (default 2024-01-02T00)"),
                option("--event-names", type=int, default=50,
                       help="distinct track event names, Zipf-skewed (default 50)"),
                option("--files-per-hour", type=int, default=4, help="gzip files per hour per source (default 4)"),
                option("--duplicate-rate", type=float, default=0.01,
                       help="share of lines that repeat an earlier messageId (default 0.01)"),
                option("--malformed-rate", type=float, default=0.001,
                       help="share of malformed lines (default 0.001)"),
                option("--seed", type=int, default=1, help="seed of every random choice (default 1)"))),
    Command("suppress", run_suppress, "list, add or remove users whose events the sync drops", SUPPRESS_HELP,
            (option("action", choices=["list", "add", "remove"]), SOURCE_ID, LAKE, *USERS, VERBOSE)),
    Command("delete-users", run_delete_users, "delete every row of users from a source's lake, and suppress them",
            "Remove every row of these user ids and anonymous ids from every table of the source, its discarded values "
            "and its duplicates' record, rewriting only the files that hold them (each file is replaced whole: a "
            "reader sees it before or after, never both). The ids are suppressed first, so later syncs and replays do "
            "not land them again. The raw input (segment-logs/) is not touched.", (SOURCE_ID, LAKE, *USERS, VERBOSE)),
    Command("compact", run_compact,
            "merge the small files of a source's past hours (or days) into fewer, larger ones",
            "Merge the files of each hour (or day) that no sync adds to any more (ended --older-than hours ago) into "
            "as few as --target-file-mb allows, with the same rows. Readers see the old files or the merged ones (the "
            "catalog points at the merged files while the partition's folder changes); takes the source's lock; a "
            "crash is finished by the next compact or sync. Pass the naming options the syncs use. Writes a report "
            "with the file counts.", (
                SOURCE_ID, LAKE,
                option("--older-than", type=float, default=DEFAULT_OLDER_THAN_HOURS, metavar="HOURS",
                       help=f"only partitions whose hour (or day) ended this long ago "
                            f"(default {DEFAULT_OLDER_THAN_HOURS})"),
                option("--target-file-mb", type=int, default=DEFAULT_TARGET_FILE_MB, metavar="N",
                       help=f"size of the merged files (default {DEFAULT_TARGET_FILE_MB})"),
                *NAMING, WAIT_FOR_LOCK, VERBOSE)),
    Command("state", run_state, "show a source's sync state, or drop its unfinished run",
            "show: the finished runs, the files processed and the unfinished run (if any). reset: drop the unfinished "
            "run (what its attempts published first), so that the next sync starts afresh over every unprocessed "
            "file.", (option("action", choices=["show", "reset"]), SOURCE_ID, LAKE, VERBOSE)),
    Command("history", run_history, "show recent syncs: rows, duplicates, rejections, duration",
            "Show the recent syncs of a lake from their reports, as a table, with the share of syncs that finished "
            "over the last 30 days.", (
                LAKE, option("--source-id", help="only this source (default: every source of the lake)"),
                option("--last", type=int, default=20, help="how many recent syncs to list (default 20)"),
                option("--plot", metavar="FILE.png",
                       help="also draw rows and duration per sync over time into FILE.png"),
                VERBOSE)),
    Command("move-reports", run_move_reports,
            "once: file a lake's older sync reports by source, as the sync_reports table's keys",
            "Move the sync reports written before they were filed as the table's partition keys, from "
            "reports/day=<day>/source=<source>/run_id=<run>/ to reports/source_id=<source>/day=<day>/run_id=<run>/. "
            "Then drop the sync_reports table (external: its files stay), let a sync recreate it, and run MSCK REPAIR "
            "TABLE __segment_datalake.sync_reports to bring the older reports back.", (LAKE, VERBOSE)),
    Command("sql", run_sql, "run Spark SQL queries against a local lake's catalog",
            "Run Spark SQL statements against the embedded catalog of a local lake, in one Spark start: each argument "
            "is a statement, and -f FILE adds a file's statements (ended by ';'). Each result is printed as "
            "tab-separated lines, a blank line between two.", (
                option("--lake", required=True, help="local lake root"),
                option("query", nargs="*", help='for example "select count(*) from web_app.identify"'),
                option("-f", "--file", action="append", default=[], metavar="FILE",
                       help="a file of statements, each ended by ';' (may be given more than once)"),
                VERBOSE)),
)}
