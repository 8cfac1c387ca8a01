"""``segment-lake``: sync Segment events into the lake, generate realistic raw events, and query a local lake
with Spark SQL."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from .generate import GenerateOptions
from .options import Options
from .outcome import outcome
from .replay_on_emr import ReplayOnEmrSettings
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
    work: str  # its function in commands.py
    spark: bool = True
    creates: bool = False  # a sync makes the lake
    catalog: bool = False  # the lake's embedded metastore is the catalog in local mode
    reads_only: bool = False  # writes nothing: opens a copy of a metastore its user may not write

    def add_to(self, commands) -> None:
        sub = commands.add_parser(self.name, help=self.help, description=self.description)
        for declared in (self.options, *([Options(SessionOptions)] if self.spark else [])):
            declared.add_to(sub)

    def run(self, args: argparse.Namespace) -> int:
        # the work (and Spark with it) is imported only now: parsing, --help and the EMR step script, which parses
        # before spark-submit puts Spark's Python on the path, stay without it
        from . import commands
        from .runner import Runner

        settings, work = self.options.build(args), getattr(commands, self.work)
        if not self.spark:
            print("\n".join(work(settings)))
            return 0
        if not self.creates:
            settings.require_lake()  # the command would otherwise create an empty lake folder
        runner = Runner(self.name, settings, Options(SessionOptions).build(args), uses_catalog=self.catalog,
                        reads_only=self.reads_only, record_classes=self.creates)  # a sync loads nearly every class
        return runner.run(work, settings.lock_wait)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="segment-lake", description=__doc__.replace("``", ""))
    commands = top.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        command.add_to(commands)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "aws_region", None):  # every AWS client of the command (S3's too), unless one is configured
        os.environ.setdefault("AWS_DEFAULT_REGION", args.aws_region)
    return outcome(lambda: COMMANDS[args.command].run(args))


COMMANDS = {command.name: command for command in (
    Command("sync", "land new raw events of one source in the lake",
            "Land the raw Segment events not yet processed as Parquet tables, registered in the catalog, deduplicated "
            "by messageId.", Options(SyncSettings, without=WINDOW, required=SOURCE), "sync", creates=True, catalog=True),
    Command("replay", "land again the raw events received in a window of days, without duplicates",
            "Land the raw events of the day folders (Segment's <day-epoch-ms>) from --from to --to, whether synced "
            "before or not, as a sync lands them: each event at most once, so what the lake already has is dropped as "
            "a duplicate. The report says replay: true.", Options(SyncSettings, required=(*SOURCE, *WINDOW)), "sync",
            creates=True, catalog=True),
    Command("replay-on-emr", "start a temporary EMR cluster that replays a window of days and then terminates",
            "Start a cluster from the lake's replay cluster template (ReplayCluster in the constructs): the lake "
            "cluster's roles, security configuration and app release, one step that runs `segment-lake replay` for "
            "the source and window, terminated by EMR when the step ends. The regular cluster keeps its schedule; the "
            "replay waits for a running sync of the source to finish.",
            Options(ReplayOnEmrSettings, required=WINDOW), "replay_on_emr", spark=False),
    Command("generate", "write realistic raw Segment events for tests and benchmarks",
            "Write deterministic, realistic raw Segment events in the S3 destination's layout "
            "(segment-logs/<source>/<day-epoch-ms>/<n>.gz). The same options and seed give the same bytes.",
            Options(GenerateOptions), "generate_events", spark=False),
    Command("suppress", "list, add or remove users whose events the sync drops",
            "A source's suppressed users: the sync leaves out (and counts) the new events of these user ids and "
            "anonymous ids. It does not delete what the lake already has: segment-lake delete-users does.",
            Options(SuppressSettings, required=SOURCE), "suppress"),
    Command("delete-users", "delete every row of users from a source's lake, and suppress them",
            "Remove every row of these user ids and anonymous ids from every table of the source, its discarded values "
            "and its duplicates' record, rewriting only the files that hold them (each file is replaced whole: a "
            "reader sees it before or after, never both). The ids are suppressed first, so later syncs and replays do "
            "not land them again. The raw input (segment-logs/) is not touched.",
            Options(DeletionSettings, required=SOURCE), "delete_users"),
    Command("compact", "merge the small files of a source's past hours (or days) into fewer, larger ones",
            "Merge the files of each hour (or day) that no sync adds to any more (ended --older-than hours ago) into "
            "as few as --target-file-mb allows, with the same rows. Readers see the old files or the merged ones (the "
            "catalog points at the merged files while the partition's folder changes); takes the source's lock; a "
            "crash is finished by the next compact or sync. Pass the naming options the syncs use. Writes a report "
            "with the file counts.", Options(CompactionSettings, required=SOURCE), "compact", catalog=True),
    Command("state", "show a source's sync state, or drop its unfinished run",
            "show: the finished runs, the files processed and the unfinished run (if any). reset: drop the unfinished "
            "run (what its attempts published first), so that the next sync starts afresh over every unprocessed "
            "file.", Options(StateSettings, required=SOURCE), "state"),
    Command("history", "show recent syncs: rows, duplicates, rejections, duration",
            "Show the recent syncs of a lake from their reports, as a table, with the share of syncs that finished "
            "over the last 30 days (of every source of the lake, or of --source-id).", Options(HistorySettings),
            "history"),
    Command("move-reports", "once: file a lake's older sync reports by source, as the sync_reports table's keys",
            "Move the sync reports written before they were filed as the table's partition keys, from "
            "reports/day=<day>/source=<source>/run_id=<run>/ to reports/source_id=<source>/day=<day>/run_id=<run>/. "
            "Then drop the sync_reports table (external: its files stay), let a sync recreate it, and run MSCK REPAIR "
            "TABLE __segment_datalake.sync_reports to bring the older reports back.",
            Options(LakeSettings, only=("lake_uri",)), "move_reports"),
    Command("sql", "run Spark SQL queries against a local lake's catalog",
            "Run Spark SQL statements against the embedded catalog of a local lake, in one Spark start: each argument "
            "is a statement, and -f FILE adds a file's statements (ended by ';'). Each result is printed as "
            "tab-separated lines, a blank line between two.", Options(QuerySettings, without=SOURCE), "sql", catalog=True,
            reads_only=True),
)}
