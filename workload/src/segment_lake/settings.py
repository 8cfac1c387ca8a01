"""What one sync is asked to do, validated before Spark starts."""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date
from urllib.parse import urlparse

from segment_lake_contract import (
    DATE_PARTITIONS,
    GLUE_DATABASE,
    METRICS_NAMESPACE_NAME,
    SOURCE_ID,
    TABLE_PREFIX,
    NamePattern,
    database_name,
    join_prefix,
)

from .errors import InvalidSettings
from .layout import LakeLayout
from .storage import normalize_uri

URI_SCHEMES = ("file", "s3", "s3a")
CATALOGS = ("local", "glue")


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
class LakeSettings:
    """A command on a lake: its root, and the source it concerns (None: every source of the lake)."""

    lake_uri: str
    source_id: str | None = None

    def __post_init__(self) -> None:
        if self.source_id is not None:
            _check(self.source_id, SOURCE_ID)
        object.__setattr__(self, "lake_uri", _uri(self.lake_uri, "--lake"))

    @property
    def layout(self) -> LakeLayout:
        return LakeLayout(self.lake_uri, self.source_id)

    def require_lake(self, given: str) -> None:
        """Refuses a local lake folder that does not exist (a command would otherwise create an empty one), naming it
        as the user ``given`` it."""
        path = urlparse(self.lake_uri).path if self.lake_uri.startswith("file:") else None
        if path is not None and not os.path.isdir(path):
            raise InvalidSettings(f"no lake at {given!r}: pass the --lake the syncs write to")


@dataclass(frozen=True)
class SourceSettings(LakeSettings):
    """A command on one source's tables: how they are named, partitioned and catalogued. ``database`` defaults to
    the source slug's name, else the source id's."""

    source_slug: str | None = None
    glue_database: str | None = None
    table_prefix: str = ""
    date_partition: str = "day_hour"
    catalog: str = "local"

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


@dataclass(frozen=True, kw_only=True)
class SyncSettings(SourceSettings):
    """One sync (or replay) of one source."""

    input_uri: str
    max_records_per_file: int = 5_000_000
    max_columns_per_table: int = 5_000
    max_tables_per_source: int = 10_000
    workspace_id: str | None = None
    replay_from: date | None = None  # a replay: the raw events received from this day to ``replay_to``, both in UTC
    replay_to: date | None = None
    lock_wait_minutes: int = 0  # while another run holds the source's lock, wait this long for it before refusing
    metrics_namespace: str | None = None  # CloudWatch namespace of the run's metrics (metrics.py); None: none
    partition_projection: bool = False  # Glue tables the run creates are projected (catalog/projection.py)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "input_uri", _uri(self.input_uri, "--input"))
        if self.max_records_per_file < 1:
            raise InvalidSettings(f"max records per file {self.max_records_per_file} must be at least 1")
        if self.max_columns_per_table < 1:
            raise InvalidSettings(f"max columns per table {self.max_columns_per_table} must be at least 1")
        if self.max_tables_per_source < 1:
            raise InvalidSettings(f"max tables per source {self.max_tables_per_source} must be at least 1")
        if self.metrics_namespace:
            _check(self.metrics_namespace, METRICS_NAMESPACE_NAME)
        if self.partition_projection and self.catalog != "glue":
            raise InvalidSettings("--partition-projection is read by Athena from Glue tables only: pass --catalog glue, "
                                  "or leave it out (the local catalog registers every partition)")
        if self.lock_wait_minutes < 0:
            raise InvalidSettings(f"--wait-for-lock {self.lock_wait_minutes} must be 0 or more minutes")
        if (self.replay_from is None) != (self.replay_to is None):
            raise InvalidSettings("a replay needs both --from and --to")
        if self.replay_from and self.replay_from > self.replay_to:
            raise InvalidSettings(f"--from {self.replay_from} is after --to {self.replay_to}: swap them")
