"""The embedded catalog: Spark's Hive metastore (Derby) kept inside the lake folder."""
from __future__ import annotations

from pyspark.sql import SparkSession

from ..route import partition_path


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class LocalCatalog:
    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def _table(self, database: str, table: str) -> str:
        return f"{_quote(database)}.{_quote(table)}"

    def table_columns(self, database, table):
        name = self._table(database, table)
        if not self.spark.catalog.tableExists(name):
            return None
        return [(c.name, c.dataType) for c in self.spark.catalog.listColumns(name) if not c.isPartition]

    def ensure_database(self, database):
        if self.spark.catalog.databaseExists(database):
            return False
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quote(database)}")
        return True

    def create_table(self, database, table, columns, partition_keys, location):
        data = ", ".join(f"{_quote(n)} {t}" for n, t in columns)
        keys = ", ".join(f"{_quote(k)} string" for k in partition_keys)
        self.spark.sql(f"CREATE EXTERNAL TABLE {self._table(database, table)} ({data}) PARTITIONED BY ({keys}) "
                       f"STORED AS PARQUET LOCATION {_literal(location)}")

    def add_columns(self, database, table, columns):
        added = ", ".join(f"{_quote(n)} {t}" for n, t in columns)
        self.spark.sql(f"ALTER TABLE {self._table(database, table)} ADD COLUMNS ({added})")

    def add_partitions(self, database, table, partition_keys, partitions, location):
        existing = {row[0] for row in self.spark.sql(f"SHOW PARTITIONS {self._table(database, table)}").collect()}
        missing = [values for values in partitions if partition_path(partition_keys, values) not in existing]
        if missing:
            specs = " ".join(
                "PARTITION (" + ", ".join(f"{_quote(k)}={_literal(v)}" for k, v in zip(partition_keys, values)) + ") "
                f"LOCATION {_literal(location.rstrip('/') + '/' + partition_path(partition_keys, values))}"
                for values in missing)
            self.spark.sql(f"ALTER TABLE {self._table(database, table)} ADD IF NOT EXISTS {specs}")
        return len(missing)
