"""What a command is asked to do, validated before Spark starts. Each field a user sets carries its command-line
option's help (options.py): its default and help are written here only."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date
from urllib.parse import urlparse

from segment_lake_contract import (
    DATE_PARTITIONS,
    DEFAULT_OLDER_THAN_HOURS,
    DEFAULT_TARGET_FILE_MB,
    GLUE_DATABASE,
    HOURLY_DATE_PARTITIONS,
    ICEBERG_PARTITIONINGS,
    METRICS_NAMESPACE,
    METRICS_NAMESPACE_NAME,
    SOURCE_ID,
    TABLE_FORMATS,
    TABLE_PREFIX,
    NamePattern,
    database_name,
    hourly,
    join_prefix,
)

from .emr_node import on_emr
from .errors import InvalidSettings
from .layout import LakeLayout, metastore_dir
from .options import flag
from .uris import normalize_uri

URI_SCHEMES = ("file", "s3", "s3a")
CATALOGS = ("local", "glue")
LAKE_HELP = "lake root (local path, file://, s3:// or s3a://)"


def _check(value: str, name: NamePattern) -> None:
    if not name.matches(value):
        raise InvalidSettings(f"invalid {name.what} {value!r}: {name.advice}")


def _uri(value: str, what: str) -> str:
    if not value:
        raise InvalidSettings(f"{what} is empty: pass a local path or a file://, s3:// or s3a:// URI")
    scheme = value.split("://", 1)[0] if "://" in value else "file"
    if scheme not in URI_SCHEMES:
        raise InvalidSettings(f"unsupported {what} {value!r}: use a local path or a file://, s3:// or s3a:// URI")
    return normalize_uri(value)


@dataclass(frozen=True)
class SessionOptions:
    """How a command's Spark runs (session.py validates and applies them)."""

    verbose: bool = field(default=False, metadata=flag("show Spark's warnings too (default: its errors only)"))
    driver_memory: str | None = field(default=None, metadata=flag(
        "Spark's heap in local mode, e.g. 4g", default_help="SEGMENT_LAKE_DRIVER_MEMORY, else 40%% of this machine's "
                                                           "memory, at most 2g"))
    cores: int | None = field(default=None, metadata=flag(
        "cores Spark uses in local mode", default_help="SEGMENT_LAKE_CORES, else all"))


@dataclass(frozen=True)
class LockWait:
    """What a command does while another run holds the source's lock: wait up to ``minutes``, then fail or skip."""

    minutes: int = field(default=0, metadata=flag(
        "while another run holds the source's lock, wait up to this long for it", name="--wait-for-lock",
        metavar="MINUTES", default_help="0: refuse at once"))
    if_busy: str = field(default="fail", metadata=flag(
        "when another run still holds the source's lock (after --wait-for-lock): fail (exit 1), or skip: say so and "
        "exit 0, for a scheduled run whose next run does the work", choices=("fail", "skip")))

    def __post_init__(self) -> None:
        if self.minutes < 0:
            raise InvalidSettings(f"--wait-for-lock {self.minutes} must be 0 or more minutes")

    @property
    def seconds(self) -> int:
        return self.minutes * 60


@dataclass(frozen=True)
class ReplayWindow:
    """A replay's days: the raw events received from ``first`` to ``last``, both in UTC. Neither: no replay."""

    first: date | None = field(default=None, metadata=flag("first day, YYYY-MM-DD (UTC)", name="--from"))
    last: date | None = field(default=None, metadata=flag("last day, YYYY-MM-DD (UTC)", name="--to"))

    def __post_init__(self) -> None:
        if (self.first is None) != (self.last is None):
            raise InvalidSettings("a replay needs both --from and --to")
        if self.first and self.first > self.last:
            raise InvalidSettings(f"--from {self.first} is after --to {self.last}: swap them")

    def __bool__(self) -> bool:
        return self.first is not None

    def __str__(self) -> str:
        return f"{self.first}..{self.last}"


@dataclass(frozen=True)
class UserIds:
    """The users a command concerns: Segment's userId and anonymousId values."""

    user_ids: tuple[str, ...] = field(default=(), metadata=flag(
        "a userId (repeat for more)", name="--user-id", metavar="ID"))
    anonymous_ids: tuple[str, ...] = field(default=(), metadata=flag(
        "an anonymousId (repeat for more)", name="--anonymous-id", metavar="ID"))

    def __post_init__(self) -> None:
        if any(not value for value in self.all):
            raise InvalidSettings("an empty --user-id or --anonymous-id matches no event: pass the id")

    @property
    def all(self) -> tuple[str, ...]:
        return self.user_ids + self.anonymous_ids

    def require(self, command: str) -> None:
        if not self.all:
            raise InvalidSettings(f"{command} needs at least one --user-id or --anonymous-id")


@dataclass(frozen=True)
class LakeSettings:
    """A command on a lake: its root, and the source it concerns (None: every source of the lake)."""

    lake_uri: str = field(metadata=flag(LAKE_HELP, name="--lake"))
    source_id: str | None = field(default=None, metadata=flag("Segment source id"))
    given_lake: str = field(init=False, repr=False, compare=False)  # as the user wrote it, to name it back

    def __post_init__(self) -> None:
        if self.source_id is not None:
            _check(self.source_id, SOURCE_ID)
        object.__setattr__(self, "given_lake", self.lake_uri)
        object.__setattr__(self, "lake_uri", _uri(self.lake_uri, "--lake"))

    @property
    def layout(self) -> LakeLayout:
        return LakeLayout(self.lake_uri, self.source_id)

    @property
    def lock_wait(self) -> LockWait:
        """How the command waits while another run holds the source's lock: not at all, unless it takes
        --wait-for-lock (a sync, a compaction)."""
        return LockWait()

    def require_lake(self) -> None:
        """Refuses a local lake folder that does not exist (a command would otherwise create an empty one), naming it
        as the user gave it."""
        path = urlparse(self.lake_uri).path if self.lake_uri.startswith("file:") else None
        if path is not None and not os.path.isdir(path):
            raise InvalidSettings(f"no lake at {self.given_lake!r}: pass the --lake the syncs write to")


@dataclass(frozen=True)
class SourceSettings(LakeSettings):
    """A command on one source's tables: how they are named, partitioned and catalogued. ``database`` defaults to
    the source slug's name, else the source id's."""

    source_slug: str | None = field(default=None, metadata=flag("source slug; names the default database"))
    glue_database: str | None = field(default=None, metadata=flag(
        "database of the tables", default_help="the source slug in lower case, '_' for other characters; else the "
                                               "source id"))
    table_prefix: str = field(default="", metadata=flag("prefix of every table name, e.g. ios_"))
    date_partition: str = field(default="day_hour", metadata=flag("partition layout by receivedAt",
                                                                  choices=tuple(DATE_PARTITIONS)))
    table_format: str = field(default="parquet", metadata=flag(
        "parquet: Hive-style folders, one catalog partition an hour, as Segment's lakes; iceberg: Apache Iceberg v2 "
        "tables, one commit a table and run (docs/lake-format.md)", choices=TABLE_FORMATS))
    catalog: str = field(default_factory=lambda: "glue" if on_emr() else "local", metadata=flag(
        "local: Spark's metastore inside the lake folder; glue: AWS Glue", choices=CATALOGS,
        default_help="glue on EMR, else local"))
    aws_region: str | None = field(default=None, metadata=flag(
        "region of the Glue catalog and the metrics", default_help="AWS_REGION or boto3's configuration"))

    def __post_init__(self) -> None:
        if self.source_id is None:
            raise InvalidSettings("a source id is needed: pass --source-id")
        super().__post_init__()
        if self.glue_database is not None:
            _check(self.glue_database, GLUE_DATABASE)
        _check(self.table_prefix, TABLE_PREFIX)
        if self.date_partition not in DATE_PARTITIONS:
            raise InvalidSettings(f"unknown date partition {self.date_partition!r}: use one of {', '.join(DATE_PARTITIONS)}")
        if self.catalog not in CATALOGS:
            raise InvalidSettings(f"unknown catalog {self.catalog!r}: use local or glue")
        if self.table_format not in TABLE_FORMATS:
            raise InvalidSettings(f"unknown table format {self.table_format!r}: use parquet or iceberg")
        if self.table_format == "iceberg" and self.catalog == "glue" and not on_emr():
            from .iceberg_tables import local_jars_hold_glue_catalog

            if not local_jars_hold_glue_catalog():  # Iceberg's Spark runtime lacks the AWS SDK (docs/lake-format.md)
                raise InvalidSettings(
                    "Iceberg tables in Glue need Iceberg's Glue catalog with the AWS SDK v2: run this on EMR (its own "
                    "Iceberg), set SEGMENT_LAKE_ICEBERG_JARS to the jar `make setup` writes "
                    "(.cache/jars/iceberg-glue-runtime-1.9.0.jar), or use --catalog local")
        if self.catalog == "local" and not self.lake_uri.startswith("file:"):
            raise InvalidSettings(f"--catalog local keeps its metastore in the lake folder, so it needs a local --lake, "
                                  f"not {self.lake_uri!r}: use --catalog glue")
        if not database_name(self.database_name_source):
            raise InvalidSettings(f"source slug {self.source_slug!r} has no letters or digits: pass --glue-database")

    @property
    def database_name_source(self) -> str:
        return self.source_slug or self.source_id

    @property
    def database(self) -> str:
        return self.glue_database or database_name(self.database_name_source)

    @property
    def table_name_prefix(self) -> str:
        """What table names start with: the prefix joined with ``_`` (``ios`` -> ``ios_track_page_viewed``)."""
        return join_prefix(self.table_prefix)

    @property
    def projects_new_tables(self) -> bool:
        """Whether the Glue tables the command creates get Athena partition projection (a sync's option)."""
        return False


@dataclass(frozen=True, kw_only=True)
class SyncSettings(SourceSettings):
    """One sync (or replay) of one source."""

    input_uri: str = field(metadata=flag(
        "raw events: newline-delimited JSON, optionally .gz, in any folder structure (local path, file://, s3:// or "
        "s3a://)", name="--input"))
    workspace_id: str | None = field(default=None, metadata=flag("Segment workspace id, copied into the report"))
    max_records_per_file: int = field(default=5_000_000, metadata=flag(
        "split a partition's file beyond this many rows"))
    max_columns_per_table: int = field(default=5_000, metadata=flag(
        "a table takes no new column beyond this many; the values of the columns it could not take go to "
        "segment_discards"))
    max_tables_per_source: int = field(default=10_000, metadata=flag(
        "no new table beyond this many of the source; the events of the tables it could not create are rejected "
        "with the reason (Glue holds 200,000 per database)"))
    lock: LockWait = field(default_factory=LockWait)
    metrics_namespace: str | None = field(
        default_factory=lambda: METRICS_NAMESPACE if on_emr() else None, metadata=flag(
            "write the run's figures as CloudWatch metrics of the source in this namespace, in --aws-region",
            metavar="NAMESPACE", default_help=f"{METRICS_NAMESPACE} on EMR; elsewhere none"))
    partition_projection: bool = field(default=False, metadata=flag(
        "Glue tables this run creates get Athena partition projection instead of one Glue partition per hour; only "
        "Athena then sees their partitions (docs/lake-format.md, Partition projection)"))
    iceberg_partitioning: str = field(default="keys", metadata=flag(
        "how a new Iceberg table is partitioned: keys: by identity on the date partition's keys, which are columns "
        "(WHERE day = ... prunes); hours: by Iceberg's hidden hours(received_at), no key columns (WHERE received_at "
        "... prunes; needs a date partition by the hour). A table keeps the partitioning it was made with",
        choices=ICEBERG_PARTITIONINGS))
    replay: ReplayWindow = field(default_factory=ReplayWindow)

    @property
    def lock_wait(self) -> LockWait:
        return self.lock

    @property
    def hidden_hours(self) -> bool:
        """New Iceberg tables are partitioned by Iceberg's hidden hours(received_at)."""
        return self.iceberg_partitioning == "hours"

    @property
    def projects_new_tables(self) -> bool:
        return self.partition_projection

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "input_uri", _uri(self.input_uri, "--input"))
        object.__setattr__(self, "metrics_namespace", self.metrics_namespace or None)
        if self.max_records_per_file < 1:
            raise InvalidSettings(f"max records per file {self.max_records_per_file} must be at least 1")
        if self.max_columns_per_table < 1:
            raise InvalidSettings(f"max columns per table {self.max_columns_per_table} must be at least 1")
        if self.max_tables_per_source < 1:
            raise InvalidSettings(f"max tables per source {self.max_tables_per_source} must be at least 1")
        if self.metrics_namespace:
            _check(self.metrics_namespace, METRICS_NAMESPACE_NAME)
        if self.partition_projection and self.table_format == "iceberg":
            raise InvalidSettings("--partition-projection is for the Parquet layout's Glue partitions; an Iceberg "
                                  "table keeps its partitions in its own metadata: leave it out")
        if self.iceberg_partitioning not in ICEBERG_PARTITIONINGS:
            raise InvalidSettings(f"unknown Iceberg partitioning {self.iceberg_partitioning!r}: use keys or hours")
        if self.hidden_hours and self.table_format != "iceberg":
            raise InvalidSettings("--iceberg-partitioning hours is how Iceberg tables are partitioned: pass "
                                  "--table-format iceberg, or leave it out")
        if self.hidden_hours and not hourly(self.date_partition):
            raise InvalidSettings(f"--iceberg-partitioning hours puts each file in the hour of its rows, and "
                                  f"--date-partition {self.date_partition} writes a file a day: use "
                                  f"{' or '.join(HOURLY_DATE_PARTITIONS)}")
        if self.partition_projection and self.catalog != "glue":
            raise InvalidSettings("--partition-projection is read by Athena from Glue tables only: pass --catalog glue, "
                                  "or leave it out (the local catalog registers every partition)")


@dataclass(frozen=True, kw_only=True)
class CompactionSettings(SourceSettings):
    """One compaction of a source's closed partitions."""

    older_than_hours: float = field(default=DEFAULT_OLDER_THAN_HOURS, metadata=flag(
        "only partitions whose hour (or day) ended this long ago", name="--older-than", metavar="HOURS"))
    target_file_mb: int = field(default=DEFAULT_TARGET_FILE_MB, metadata=flag(
        "size of the merged files", metavar="N"))
    lock: LockWait = field(default_factory=LockWait)

    @property
    def lock_wait(self) -> LockWait:
        return self.lock

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.older_than_hours < 0 or self.target_file_mb < 1:
            raise InvalidSettings(f"invalid --older-than {self.older_than_hours:g} or --target-file-mb "
                                  f"{self.target_file_mb}: pass 0 or more hours and 1 or more MB")


@dataclass(frozen=True)
class UsersSettings(LakeSettings):
    """A command on some users of one source."""

    users: UserIds = field(default_factory=UserIds)


@dataclass(frozen=True)
class DeletionSettings(UsersSettings):
    def __post_init__(self) -> None:
        super().__post_init__()
        self.users.require("delete-users")


@dataclass(frozen=True, kw_only=True)
class SuppressSettings(UsersSettings):
    action: str = field(metadata=flag("list the suppressed users, or add or remove these", name="action",
                                      choices=("list", "add", "remove")))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.action != "list":
            self.users.require(f"suppress {self.action}")


@dataclass(frozen=True, kw_only=True)
class StateSettings(LakeSettings):
    action: str = field(metadata=flag("show the state, or reset: drop the unfinished run", name="action",
                                      choices=("show", "reset")))


@dataclass(frozen=True)
class HistorySettings(LakeSettings):
    """Which recent syncs ``history`` shows, and where it draws them."""

    last: int = field(default=20, metadata=flag("how many recent syncs to list"))
    plot: str | None = field(default=None, metadata=flag(
        "also draw rows and duration per sync over time into FILE.png", metavar="FILE.png"))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.last < 1:
            raise InvalidSettings(f"invalid --last {self.last}: pass how many syncs to list, 1 or more")


@dataclass(frozen=True)
class QuerySettings(LakeSettings):
    """Statements for ``sql``: given as arguments, and from files of statements each ended by ';'."""

    queries: tuple[str, ...] = field(default=(), metadata=flag(
        'for example "select count(*) from web_app.identify"', name="query"))
    files: tuple[str, ...] = field(default=(), metadata=flag(
        "a file of statements, each ended by ';' (may be given more than once)", name="--file", short="-f",
        metavar="FILE"))
    catalog = "local"  # sql reads the embedded metastore of a local lake

    def require_lake(self) -> None:
        """Refuses a folder without a local sync's metastore: Spark would create an empty one and answer from it."""
        if not os.path.isdir(metastore_dir(self.lake_uri)):
            raise InvalidSettings(f"no lake at {self.given_lake!r} (no {os.path.relpath(metastore_dir(self.lake_uri))}): "
                                  f"pass the --lake a local sync wrote to")
