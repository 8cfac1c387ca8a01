"""The embedded catalog: Spark's Hive metastore (Derby) kept inside the lake folder, read and
written in batches by ``jvm/HiveTables.java``."""
from __future__ import annotations

import json
from urllib.parse import unquote

from pyspark.sql import SparkSession

from .. import iceberg_tables
from ..jvm_code import load_class
from . import TableChange, TableInfo


class LocalCatalog:
    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def _tables(self):
        load_class(self.spark, "HiveTables")
        return self.spark.sparkContext._jvm.segmentlake.HiveTables

    def database_exists(self, database):
        # starts the metastore (seconds) through the shared state: through the session catalog, its start
        # would hold a lock that planning any query waits for, and the sync starts it while a job runs
        self.spark._jsparkSession.sharedState().externalCatalog()
        return self.spark.catalog.databaseExists(database)

    def ensure_database(self, database):
        if self.database_exists(database):
            return False
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS `{database.replace('`', '``')}`")
        return True

    def tables_columns(self, database, tables):
        return {table: info and info.columns for table, info in self.describe_tables(database, tables).items()}

    def describe_tables(self, database, tables):
        if not self.spark.catalog.databaseExists(database):
            return {table: None for table in tables}
        found = json.loads(self._tables().describe(self.spark._jsparkSession, database, json.dumps(list(tables))))
        return {table: None if info is None else self._table_info(database, table, info)
                for table, info in found.items()}

    def _table_info(self, database, table, info) -> TableInfo:
        """The catalog's columns but an Iceberg table's partition keys (its metadata knows them)."""
        if not info["iceberg"]:
            return TableInfo([tuple(column) for column in info["columns"]], info["location"], info["created"])
        keys, hidden_hours = iceberg_tables.partitioning(self.spark, database, table)
        return TableInfo([tuple(column) for column in info["columns"] if column[0] not in keys], info["location"],
                         info["created"], table_format=iceberg_tables.FORMAT, hidden_hours=hidden_hours)

    def partitions(self, database, table):
        specs = self.spark.sql(f"SHOW PARTITIONS `{database.replace('`', '``')}`.`{table.replace('`', '``')}`")
        return {tuple(unquote(part.split("=", 1)[1]) for part in row[0].split("/")) for row in specs.collect()}

    def partition_locations(self, database, table):
        found = json.loads(self._tables().partitionLocations(self.spark._jsparkSession, database, table))
        return {tuple(values): location for values, location in found}

    def set_partition_locations(self, database, table, keys, locations):
        self._tables().setPartitionLocations(self.spark._jsparkSession, database, table, json.dumps(
            [[list(values), location] for values, location in locations.items()]))

    def register(self, database, changes: list[TableChange], known=None):
        if changes:  # one batch in the JVM, which reads the tables itself: ``known`` saves nothing here
            self._tables().register(self.spark._jsparkSession, database, json.dumps([
                {"table": c.table, "columns": c.columns, "keys": c.keys, "partitions": c.partitions,
                 "location": c.location, "format": c.format, "partition_locations": c.partition_locations}
                for c in changes]))

