"""Runs syncs in-process against a chosen catalog and lake, and reads what they wrote."""
from __future__ import annotations

import json
from dataclasses import dataclass

from iceberg_readers import iceberg_rows
from recording_environment import DyingCatalog, DyingStorage

from segment_lake.catalog import table_columns
from segment_lake.catalog.glue import GlueCatalog
from segment_lake.catalog.local import LocalCatalog
from segment_lake.layout import LakeLayout
from segment_lake.names import DUPLICATES_TABLE
from segment_lake.settings import SyncSettings
from segment_lake.state import SourceState
from segment_lake.storage import HadoopStorage, LakeStorage
from segment_lake.sync import Sync
from segment_lake_contract import join_prefix


@dataclass
class Lake:
    spark: object
    catalog: object
    kind: str  # local, glue or s3
    lake_uri: str
    input_uri: str
    source_id: str
    database: str
    table_prefix: str = ""
    date_partition: str = "day_hour"
    table_format: str = "parquet"  # iceberg needs a session with Iceberg (iceberg_readers.spark_with_iceberg)
    iceberg_partitioning: str = "keys"

    def settings(self) -> SyncSettings:
        return SyncSettings(source_id=self.source_id, input_uri=self.input_uri, lake_uri=self.lake_uri,
                            glue_database=self.database, table_prefix=self.table_prefix,
                            date_partition=self.date_partition, table_format=self.table_format,
                            iceberg_partitioning=self.iceberg_partitioning,
                            catalog="local" if self.kind == "local" else "glue")

    def sync(self, boundaries=None):
        """One sync; with ``boundaries`` (recording_environment.Boundaries) its storage and catalog writes pass
        through them."""
        storage, catalog = HadoopStorage(self.spark), self.catalog
        if boundaries:
            storage, catalog = DyingStorage(storage, boundaries, self.spark), DyingCatalog(catalog, boundaries)
        return Sync(self.spark, self.settings(), catalog, progress=lambda line: None, storage=storage).run()

    @property
    def storage(self) -> LakeStorage:
        return HadoopStorage(self.spark)

    def columns(self, table):
        return table_columns(self.catalog, self.database, table)

    @property
    def layout(self) -> LakeLayout:
        return LakeLayout(self.lake_uri, self.source_id)

    def location(self, table):
        return self.layout.table(table[len(join_prefix(self.table_prefix)):])

    def rows(self, table, keys=("day", "hr")):
        """Every row of ``table``, read from its files with the catalog's schema (an Iceberg table's live files,
        by pyiceberg), as dicts."""
        if self.table_format == "iceberg":
            return iceberg_rows(self.location(table))
        columns = self.columns(table)
        schema = ", ".join(f"`{n}` {t}" for n, t in columns) + "".join(f", `{k}` string" for k in keys)
        location = self.location(table)
        frame = self.spark.read.schema(schema).option("basePath", location).parquet(location)
        return sorted((row.asDict() for row in frame.collect()), key=lambda r: (r["message_id"], str(r["received_at"])))

    def discards(self):
        location = self.layout.discards
        frame = self.spark.read.option("basePath", location).parquet(location)
        return sorted((r.asDict() for r in frame.collect()), key=lambda r: (r["message_id"], r["column_name"]))

    def duplicates(self):
        """The dropped duplicates' record, read with the catalog's schema, as dicts."""
        location = SourceState(self.storage, self.layout.state).duplicates_uri
        schema = ", ".join(f"`{n}` {t}" for n, t in self.columns(join_prefix(self.table_prefix) + DUPLICATES_TABLE))
        rows = self.spark.read.schema(schema).parquet(location).collect()
        return sorted((r.asDict() for r in rows), key=lambda r: (r["run_id"], r["message_id"]))

    def rejected(self):
        location = self.layout.rejected
        return sorted((r.asDict() for r in self.spark.read.json(location).collect()), key=lambda r: r["reason"])

    def report(self, result):
        text = self.storage.read_text(self.layout.report(result.run_id, result.start_time))
        return [json.loads(line) for line in text.splitlines()]

    def parquet_files(self, uri):
        return [f.uri for f in self.storage.list_files(uri) if f.uri.endswith(".parquet")]

    def data_files(self, table):
        return self.parquet_files(self.location(table))


def make_catalog(kind, spark, glue_client):
    return LocalCatalog(spark) if kind == "local" else GlueCatalog(glue_client)
