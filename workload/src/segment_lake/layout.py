"""Every path of the lake, in one place. Below the lake root:

    segment-data/data/<source>/segment_type=<type>/<date partition>/part-<run>-<n>.snappy.parquet
    segment-data/discards/<source>/run_id=<run>/          values the sync could not keep
    segment-data/rejected/<source>/run_id=<run>/          lines that are not events
    segment-data/reports/source_id=<source>/day=<day>/run_id=<run>/report.json
    segment-data/deletions/<source>/<deletion>.json       what each user deletion removed
    segment-data/compactions/<source>/<compaction>.json   what each compaction merged
    segment-data/state/<source>/pending.json, processed/run_id=<run>.json (merged-<compaction>.json once
                               compacted), landed/run_id=<run>/ and landed-compacted/<compaction>/ (named by
                               landed-compacted.json): the ids landed,
                               duplicates/part-<run>-<n>.snappy.parquet (the dedup window's),
                               lock.json, suppressed.json, deletion.json and deletion-stage/ (an unfinished
                               deletion's journal and rewritten files), compaction.json and
                               compaction-stage/ (an unfinished compaction's journal and merged files)
    segment-data/metastore/                                the embedded catalog (local lakes)
    segment-stage/<source>/<run>/                          a run's files before they are published
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlparse

from segment_lake_contract import (
    DATA_PREFIX,
    DISCARDS_PREFIX,
    DUPLICATES_FOLDER,
    REPORTS_PREFIX,
    STAGE_PREFIX,
    STATE_PREFIX,
    TABLES_PREFIX,
)

from .uris import join

DATA, STAGE = DATA_PREFIX.rstrip("/"), STAGE_PREFIX.rstrip("/")
TABLE_FOLDER = "segment_type="  # a table's folder, named for its event type (the table's name without a prefix)


# A data file's name says what wrote it (a run or a compaction: ids that sort by time) and its place among that
# writer's files, so a redo overwrites its own files and a file sorts by its writer.
WRITER_OF_FILE = r"/part-(\d{8}T\d{6}Z-[0-9a-f]{8})-[^/]*$"  # the writer's id, as a regular expression's group 1


def data_file_name(writer: str, index: int) -> str:
    return f"part-{writer}-{index:05d}.snappy.parquet"


def file_name(uri: str) -> str:
    return uri.rsplit("/", 1)[-1]


def written_by(uri: str, writer: str) -> bool:
    return file_name(uri).startswith(f"part-{writer}-")


def written_before(uri: str, writer_prefix: str) -> bool:
    """Whether the file's writer sorts before ``writer_prefix`` (an id, or its leading time)."""
    return file_name(uri) < f"part-{writer_prefix}"


RUN_FOLDER = "run_id="  # a run's folder (or file) among other runs': run_id=<run>


def run_folder(run_id: str) -> str:
    return f"{RUN_FOLDER}{run_id}"


def run_of_name(name: str) -> str | None:
    """The run whose folder (``run_id=<run>``) or processed list (``run_id=<run>.json``) is named ``name``, or
    None for another name."""
    return name[len(RUN_FOLDER):].removesuffix(".json") if name.startswith(RUN_FOLDER) else None


@dataclass(frozen=True)
class RunOutputs:
    """Where a run's outputs go: folders of the run's own, and folders it shares with other runs, where its files
    are named by the run (layout.data_file_name); and its stage, before they are published."""

    discards: str
    landed: str
    rejected: str
    duplicates: str  # shared
    tables: str  # shared: the source's tables, its files in their partitions
    stage: str

    @property
    def own_folders(self) -> tuple[str, ...]:
        return self.landed, self.discards, self.rejected

    @property
    def shared_folders(self) -> tuple[str, ...]:
        return self.tables, self.duplicates


def table_of_folder(folder: str) -> str | None:
    """The table (without prefix) whose folder is named ``folder``, or None for another folder."""
    return folder[len(TABLE_FOLDER):] if folder.startswith(TABLE_FOLDER) else None


@dataclass(frozen=True)
class LakeLayout:
    lake: str  # the lake root URI
    source_id: str

    @property
    def source_roots(self) -> tuple[str, str]:
        """The folders with one folder per source of the lake: its tables', and its state's."""
        return join(self.lake, TABLES_PREFIX), join(self.lake, STATE_PREFIX)

    @property
    def tables(self) -> str:
        """The folder of every table of the source."""
        return join(self.lake, TABLES_PREFIX, self.source_id)

    def table(self, segment_type: str) -> str:
        return join(self.tables, f"{TABLE_FOLDER}{segment_type}")

    def table_of_name(self, table_name: str, prefix: str) -> str:
        """The folder of the catalog's table ``table_name``, named with the source's table ``prefix``."""
        return self.table(table_name[len(prefix):])

    def table_folders(self, storage) -> list[str]:
        """The source's tables in the lake, by their folders: their names without the table prefix."""
        return [name for name in map(table_of_folder, storage.list_folders(self.tables)) if name is not None]

    @property
    def discards(self) -> str:
        return join(self.lake, DISCARDS_PREFIX, self.source_id)

    def discards_of_run(self, run_id: str) -> str:
        return join(self.discards, run_folder(run_id))

    @property
    def rejected(self) -> str:
        return join(self.lake, DATA, "rejected", self.source_id)

    def rejected_of_run(self, run_id: str) -> str:
        return join(self.rejected, run_folder(run_id))

    def report(self, run_id: str, start_time: datetime) -> str:
        return join(report_folder(self.reports, self.source_id, report_day(start_time), run_id), "report.json")

    def failed_attempt_report(self, run_id: str, start_time: datetime, finish_time: str) -> str:
        """Where the report of a failed (or interrupted) attempt goes when a redo of its run writes ``report``."""
        stamp = re.sub(r"[^0-9]", "", finish_time)[:20]
        return join(report_folder(self.reports, self.source_id, report_day(start_time), run_id), f"attempt-{stamp}.json")

    @property
    def reports(self) -> str:
        return join(self.lake, REPORTS_PREFIX)

    def deletion_report(self, deletion_id: str) -> str:
        return join(self.lake, DATA, "deletions", self.source_id, f"{deletion_id}.json")

    def compaction_report(self, compaction_id: str) -> str:
        return join(self.lake, DATA, "compactions", self.source_id, f"{compaction_id}.json")

    @property
    def state(self) -> str:
        return join(self.lake, STATE_PREFIX, self.source_id)

    @property
    def state_files(self) -> StateLayout:
        return StateLayout(self.state)

    @property
    def lock(self) -> str:
        return self.state_files.lock_uri

    def stage(self, run_id: str) -> str:
        return join(self.lake, STAGE, self.source_id, run_id)

    def run_outputs(self, run_id: str) -> RunOutputs:
        files = self.state_files
        return RunOutputs(self.discards_of_run(run_id), files.landed_run_uri(run_id), self.rejected_of_run(run_id),
                          files.duplicates_uri, self.tables, self.stage(run_id))


def lake_bucket(lake: str) -> str | None:
    """The bucket of a lake on S3 (None for a local lake)."""
    return lake.split("://", 1)[1].split("/", 1)[0] if lake.startswith(("s3://", "s3a://")) else None


class StateLayout:
    """The files of one source's sync state, below its state folder (``LakeLayout.state``)."""

    def __init__(self, root: str) -> None:
        self.root = root

    @property
    def pending_uri(self) -> str:
        """The unfinished run's manifest."""
        return join(self.root, "pending.json")

    @property
    def processed_uri(self) -> str:
        """One manifest per finished run (``merged-<compaction>.json`` once compacted)."""
        return join(self.root, "processed")

    def processed_run_uri(self, run_id: str) -> str:
        return join(self.processed_uri, f"{run_folder(run_id)}.json")

    @property
    def landed_uri(self) -> str:
        """The ids each run landed, a folder per run."""
        return join(self.root, "landed")

    def landed_run_uri(self, run_id: str) -> str:
        return join(self.landed_uri, run_folder(run_id))

    @property
    def landed_generations_uri(self) -> str:
        """The landed ids compaction merged, a folder per generation."""
        return join(self.root, "landed-compacted")

    @property
    def landed_generation_uri(self) -> str:
        """Which generation is current."""
        return join(self.root, "landed-compacted.json")

    @property
    def duplicates_uri(self) -> str:
        """The dedup window's record of dropped duplicates."""
        return join(self.root, DUPLICATES_FOLDER)

    @property
    def suppressed_uri(self) -> str:
        return join(self.root, "suppressed.json")

    @property
    def registered_uri(self) -> str:
        """What the last runs registered in the catalog (catalog/registered.py)."""
        return join(self.root, "registered.json")

    @property
    def iceberg_tables_uri(self) -> str:
        """The source's Iceberg tables, by folder and catalog name (iceberg_tables.record_tables)."""
        return join(self.root, "iceberg-tables.json")

    @property
    def deletion_uri(self) -> str:
        """An unfinished deletion's journal."""
        return join(self.root, "deletion.json")

    @property
    def deletion_stage_uri(self) -> str:
        """An unfinished deletion's rewritten files."""
        return join(self.root, "deletion-stage")

    @property
    def compaction_uri(self) -> str:
        """An unfinished compaction's journal."""
        return join(self.root, "compaction.json")

    @property
    def compaction_stage_uri(self) -> str:
        """An unfinished compaction's merged files."""
        return join(self.root, "compaction-stage")

    @property
    def lock_uri(self) -> str:
        return join(self.root, "lock.json")


# A report's folders, named and ordered as the sync_reports table's partition keys, so that MSCK REPAIR TABLE (or
# Glue's crawler) rebuilds the table from the folders.
REPORT_KEYS = ("source_id", "day", "run_id")
# Before: Segment's own layout, whose folder names and order the table's keys cannot follow (segment-lake move-reports)
OLD_REPORT = re.compile(r"/day=([^/]+)/source=([^/]+)/run_id=([^/]+)/report\.json$")


def old_reports(reports_uri: str) -> str:
    """The glob of the reports filed in Segment's layout (OLD_REPORT)."""
    return join(reports_uri, "day=*", "source=*", "run_id=*", "report.json")


def owning_source(location: str) -> str | None:
    """The source whose folder ``location`` is (``.../segment-data/data/<source>/...``, or its discards' or state's),
    or None."""
    match = re.search(rf"/{re.escape(DATA)}/(?:data|discards|state)/([^/]+)/", location.rstrip("/") + "/")
    return match.group(1) if match else None


def report_folder(reports_uri: str, source_id: str, day: str, run_id: str) -> str:
    """The folder of a run's report (``*`` globs a part)."""
    return join(reports_uri, *(f"{key}={value}" for key, value in zip(REPORT_KEYS, (source_id, day, run_id), strict=True)))


def report_day(start_time: datetime) -> str:
    """The day, in UTC, a run's report is filed under."""
    return start_time.astimezone(UTC).strftime("%Y-%m-%d")


def metastore_dir(lake_uri: str) -> str:
    """The embedded catalog's local folder, inside a local lake."""
    return os.path.join(urlparse(lake_uri).path, DATA, "metastore")
