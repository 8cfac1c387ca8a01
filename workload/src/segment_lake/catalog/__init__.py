"""Where tables are registered: Spark's own Hive metastore (local) or the AWS Glue Data Catalog.

A run reads its tables once and registers them in one call; the embedded metastore does each in one batch, Glue
in about one request per table and hour on a pool of threads (glue.py)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote

from ..route import partition_path


@dataclass(frozen=True)
class TableChange:
    """What a run registers for one table: its columns in order (the catalog appends those it lacks;
    it never reorders or retypes one), its partition keys (strings), the partitions the run wrote
    (values in key order), the table's location and its format (``parquet``, ``json``: one object per
    line, or ``iceberg``: an Apache Iceberg table, whose partitions its commits add, iceberg_tables.py). A
    partition's folder is ``<key>=<value>/...`` below the location, unless ``partition_locations`` names each one's."""

    table: str
    columns: tuple[tuple[str, str], ...]
    keys: tuple[str, ...]
    partitions: tuple[tuple[str, ...], ...]
    location: str
    format: str = "parquet"
    partition_locations: tuple[str, ...] = ()

    def partition_location(self, index: int) -> str:
        if self.partition_locations:
            return self.partition_locations[index]
        return "/".join([self.location.rstrip("/"), partition_path(list(self.keys), self.partitions[index])])


@dataclass(frozen=True)
class TableInfo:
    """What a catalog holds of a table: its data columns (name, type) in order, its location, when the catalog made it
    (a table dropped and made again under its name is another), and in Glue its storage descriptor but for columns
    and location (the table's format, which its new partitions take) and its parameters (projection.py), its
    table format (``parquet`` for every table of the Hive layout, or ``iceberg``), and whether an Iceberg table is
    partitioned by the hour of received_at, without key columns (``--iceberg-partitioning hours``)."""

    columns: list[tuple[str, str]]
    location: str
    created: str = ""
    storage: dict | None = None
    parameters: dict[str, str] | None = None
    table_format: str = "parquet"
    hidden_hours: bool = False


class Catalog(Protocol):
    def database_exists(self, database: str) -> bool:
        """Whether the database exists."""

    def ensure_database(self, database: str) -> bool:
        """Create the database when missing; True when it was created."""

    def tables_columns(self, database: str, tables: list[str]) -> dict[str, list[tuple[str, str]] | None]:
        """Each table's data columns (name, type) in order, or None when the table does not exist."""

    def describe_tables(self, database: str, tables: list[str]) -> dict[str, TableInfo | None]:
        """Each table's columns and location, or None when the table does not exist."""

    def partitions(self, database: str, table: str) -> set[tuple[str, ...]]:
        """The values of every partition the table has."""

    def register(self, database: str, changes: list[TableChange],
                 known: Mapping[str, TableInfo | None] | None = None) -> None:
        """Create the missing tables (EXTERNAL, in their format), append the columns they lack and add the
        partitions they lack. ``known``: tables (None: missing) as the run read them, not read again."""

    def partition_locations(self, database: str, table: str) -> dict[tuple[str, ...], str]:
        """Every partition's values and location."""

    def set_partition_locations(self, database: str, table: str, keys: tuple[str, ...],
                                locations: dict[tuple[str, ...], str]) -> None:
        """Points each existing partition (by its values) at another location; a reader sees one or the other."""


def location_key(uri: str) -> str:
    """A folder's URI without what varies between spellings of the same place: the scheme (s3://, s3a://; file:/,
    file:///), percent-encoding and slashes at either end."""
    return unquote(uri.split(":", 1)[1] if re.match(r"^[a-z0-9]+:", uri) else uri).strip("/")


def same_location(one: str, other: str) -> bool:
    return location_key(one) == location_key(other)


def table_columns(catalog: Catalog, database: str, table: str) -> list[tuple[str, str]] | None:
    return catalog.tables_columns(database, [table])[table]
