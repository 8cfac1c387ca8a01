"""Where tables are registered: Spark's own Hive metastore (local) or the AWS Glue Data Catalog."""
from __future__ import annotations

from typing import Protocol


class Catalog(Protocol):
    def table_columns(self, database: str, table: str) -> list[tuple[str, str]] | None:
        """Data columns (name, type) in order, or None when the table does not exist."""

    def ensure_database(self, database: str) -> bool:
        """Create the database when missing; True when it was created."""

    def create_table(self, database: str, table: str, columns: list[tuple[str, str]], partition_keys: list[str],
                     location: str) -> None:
        """An EXTERNAL Parquet table partitioned by ``partition_keys`` (strings)."""

    def add_columns(self, database: str, table: str, columns: list[tuple[str, str]]) -> None:
        """Append columns at the end; existing columns are never reordered or retyped."""

    def add_partitions(self, database: str, table: str, partition_keys: list[str],
                       partitions: list[tuple[str, ...]], location: str) -> int:
        """Register the partitions that are missing (values in key order); returns how many were added."""
