"""The AWS Glue Data Catalog through boto3. Writes only what changed: columns are appended with
SkipArchive (Glue keeps at most 100,000 versions of a table) and partitions are created only
when missing, in batches Glue accepts.

Every call is a round trip (tens of milliseconds), so a run's cost is counted in calls: one GetTables pass for the
run's tables, then for each table one BatchCreatePartition for a new hour (a new table: CreateTable too; new columns:
GetTable and UpdateTable; an hour that already existed: a BatchGetPartition of those), with the tables on a pool of
threads under botocore's adaptive retries (a throttled account slows the run down instead of failing it). A projected
table (projection.py) has no partitions in Glue: a run sends it nothing but new columns and wider ranges."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from ..pool import ROUND_TRIP_THREADS, run_all
from . import TableChange, TableInfo
from .projection import is_projected, outside, projection_parameters, widened_ranges

STORAGE = {
    "parquet": {
        "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                      "Parameters": {"serialization.format": "1"}},
    },
    # one JSON object per line, as Athena reads it
    "json": {
        "InputFormat": "org.apache.hadoop.mapred.TextInputFormat",
        "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe", "Parameters": {}},
    },
}
# update_table accepts only these keys of what get_table returns.
TABLE_INPUT_KEYS = ("Name", "Description", "Owner", "Retention", "StorageDescriptor", "PartitionKeys", "TableType",
                    "Parameters", "ViewOriginalText", "ViewExpandedText", "TargetTable")
GET_BATCH, CREATE_BATCH, UPDATE_BATCH = 1000, 100, 100


def glue_location(uri: str) -> str:
    """Glue readers (Athena, EMR) expect s3:// locations even when Spark wrote through s3a://."""
    return "s3://" + uri.split("://", 1)[1] if uri.startswith(("s3a://", "s3n://")) else uri


class GlueCatalog:
    def __init__(self, client=None, catalog_id: str | None = None, region: str | None = None,
                 threads: int = ROUND_TRIP_THREADS, date_layout: tuple[tuple[str, str], ...] = (),
                 project_new_tables: bool = False, say: Callable[[str], None] = lambda line: None) -> None:
        """``threads``: tables registered at once. ``date_layout``: the keys and formats of the event tables' date
        partitions (segment_lake_contract.DATE_PARTITIONS); the tables partitioned so that are projected when
        ``project_new_tables`` and the sync creates them, and when made so. ``say``: where a projected table's
        partitions that its ranges leave out are named."""
        if client is None:
            import boto3
            from botocore.config import Config

            # throttling and 5xx are retried with exponential backoff and jitter (up to 20 s apart); adaptive: the
            # client's threads share one request rate, which a throttle lowers
            client = boto3.client("glue", region_name=region, endpoint_url=os.environ.get("SEGMENT_LAKE_GLUE_ENDPOINT") or None,
                                  config=Config(retries={"mode": "adaptive", "max_attempts": 10},
                                                max_pool_connections=threads))
        self.glue, self.threads = client, threads
        self.date_layout, self.project_new_tables, self.say = tuple(date_layout), project_new_tables, say
        self._catalog = {"CatalogId": catalog_id} if catalog_id else {}

    def tables_columns(self, database, tables):
        return {table: info and info.columns for table, info in self.describe_tables(database, tables).items()}

    def describe_tables(self, database, tables):
        """One get_tables page per 100 tables of the database, instead of one call per table."""
        found, keys = {}, {key for key, _ in self.date_layout}
        try:
            for page in self.glue.get_paginator("get_tables").paginate(DatabaseName=database, **self._catalog):
                for table in page["TableList"]:
                    descriptor = table["StorageDescriptor"]
                    # how Iceberg's GlueCatalog marks its tables, whose columns hold the partition keys too, unless
                    # the table is partitioned by the hour of received_at (--iceberg-partitioning hours)
                    iceberg = table.get("Parameters", {}).get("table_type", "").upper() == "ICEBERG"
                    names = {c["Name"] for c in descriptor["Columns"]}
                    found[table["Name"]] = TableInfo(
                        [(c["Name"], c["Type"]) for c in descriptor["Columns"]
                         if not (iceberg and c["Name"] in keys)], descriptor.get("Location", ""),
                        str(table.get("CreateTime", "")),
                        {k: v for k, v in descriptor.items() if k not in ("Columns", "Location")},
                        table.get("Parameters", {}), "iceberg" if iceberg else "parquet",
                        hidden_hours=iceberg and not keys & names)
        except self.glue.exceptions.EntityNotFoundException:  # no database yet
            pass
        return {table: found.get(table) for table in tables}

    def register(self, database, changes: list[TableChange], known: Mapping[str, TableInfo | None] | None = None):
        """``known``: the tables the run already read (None: missing), which are not read again."""
        known = dict(known or {})
        unknown = [change.table for change in changes if change.table not in known]
        if unknown:
            known.update(self.describe_tables(database, unknown))
        run_all(self._register, [(database, change, known[change.table]) for change in changes], self.threads,
                "segment-lake-glue")

    def _register(self, database, change: TableChange, info: TableInfo | None):
        today = datetime.now(UTC).date()
        if info is None:
            if self.create_table(database, change, today):
                if self.projected(change, None):
                    self._left_out(database, change, today)
                else:
                    self._create_partitions(database, change, change.columns)  # a new table has none to read first
                return
            info = self.describe_tables(database, [change.table])[change.table]  # another sync created it meanwhile
        known = {name for name, _ in info.columns}
        appended = [(n, t) for n, t in change.columns if n not in known]
        projected = self.projected(change, info)
        parameters = {}
        if projected:
            parameters = widened_ranges(self.date_layout, change.partitions, info.parameters or {}, today)
            self._left_out(database, change, today)
        if appended or parameters:
            self.update_table(database, change.table, appended, parameters)
        if not projected:
            self.add_partitions(database, change, [*info.columns, *appended], info.storage)

    def projected(self, change: TableChange, info: TableInfo | None) -> bool:
        """Whether the table's partitions are projected: a table made so, or one this catalog creates while it
        projects new tables; only tables of the date layout at their own ``key=value`` folders."""
        if change.partition_locations or not self.date_layout or change.keys != tuple(k for k, _ in self.date_layout):
            return False
        return self.project_new_tables if info is None else is_projected(info.parameters)

    def _left_out(self, database, change: TableChange, today):
        left = outside(self.date_layout, change.partitions, today)
        if left:
            folders = ", ".join("/".join(f"{k}={v}" for k, v in zip(change.keys, values, strict=True))
                                for values in left[:3])
            self.say(f"catalog: {database}.{change.table} projects no partition before 2011 or after tomorrow, so "
                     f"Athena does not read {len(left)} of the run's ({folders}{', ...' if len(left) > 3 else ''}): "
                     f"their events have a corrupt receivedAt; they stay in the lake's folders")

    def partition_locations(self, database, table):
        return {tuple(p["Values"]): p["StorageDescriptor"]["Location"]
                for page in self.glue.get_paginator("get_partitions").paginate(
                    DatabaseName=database, TableName=table, **self._catalog)
                for p in page["Partitions"]}

    def set_partition_locations(self, database, table, keys, locations):
        """Each partition at its new location, with the table's column list (as ``add_partitions`` keeps it)."""
        columns = self.glue.get_table(DatabaseName=database, Name=table, **self._catalog)["Table"]["StorageDescriptor"]["Columns"]
        wanted = [list(values) for values in locations]
        for start in range(0, len(wanted), UPDATE_BATCH):
            chunk = wanted[start:start + UPDATE_BATCH]
            found = self._get_partitions(database, table, chunk)
            if len(found) != len(chunk):
                raise RuntimeError(f"Glue has {len(found)} of {len(chunk)} partitions of "
                                   f"{database}.{table} to point elsewhere: they were removed meanwhile")
            self._update_partitions(database, table, [
                (p, {"Location": glue_location(locations[tuple(p["Values"])]), "Columns": columns}) for p in found])

    def _update_partitions(self, database, table, updates: list[tuple[dict, dict]]):
        """Applies each (partition as Glue returned it, its storage descriptor's changed keys), in batches."""
        for start in range(0, len(updates), UPDATE_BATCH):
            entries = [{"PartitionValueList": p["Values"], "PartitionInput": {
                "Values": p["Values"], "StorageDescriptor": {**p["StorageDescriptor"], **changed}}}
                for p, changed in updates[start:start + UPDATE_BATCH]]
            result = self.glue.batch_update_partition(DatabaseName=database, TableName=table, Entries=entries,
                                                      **self._catalog)
            if result.get("Errors"):
                detail = result["Errors"][0]["ErrorDetail"]
                raise RuntimeError(f"Glue refused to update partitions of {database}.{table}: {detail.get('ErrorCode')}: "
                                   f"{detail.get('ErrorMessage')}")

    def partitions(self, database, table):
        pages = self.glue.get_paginator("get_partitions").paginate(DatabaseName=database, TableName=table,
                                                                    **self._catalog)
        return {tuple(p["Values"]) for page in pages for p in page["Partitions"]}

    def database_exists(self, database):
        try:
            self.glue.get_database(Name=database, **self._catalog)
            return True
        except self.glue.exceptions.EntityNotFoundException:
            return False

    def ensure_database(self, database):
        try:
            self.glue.get_database(Name=database, **self._catalog)
            return False
        except self.glue.exceptions.EntityNotFoundException:
            try:
                self.glue.create_database(DatabaseInput={"Name": database}, **self._catalog)
            except self.glue.exceptions.AlreadyExistsException:  # another source's sync made it first
                return False
            return True

    def create_table(self, database, change: TableChange, today=None) -> bool:
        """Creates the table; False when another sync created it meanwhile (sync_reports is shared by all sources).
        ``today`` (UTC): the end of a projected table's ranges."""
        try:
            self._create_table(database, change, today or datetime.now(UTC).date())
        except self.glue.exceptions.AlreadyExistsException:
            return False
        return True

    def _create_table(self, database, change: TableChange, today):
        projection = projection_parameters(self.date_layout, glue_location(change.location), change.partitions,
                                           today) if self.projected(change, None) else {}
        self.glue.create_table(DatabaseName=database, **self._catalog, TableInput={
            "Name": change.table,
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"EXTERNAL": "TRUE", "classification": change.format, **projection},
            "PartitionKeys": [{"Name": k, "Type": "string"} for k in change.keys],
            "StorageDescriptor": {"Columns": [{"Name": n, "Type": t} for n, t in change.columns],
                                  "Location": glue_location(change.location), **STORAGE[change.format]},
        })

    def update_table(self, database, table, columns: list[tuple[str, str]], parameters: Mapping[str, str] | None = None):
        """Appends ``columns`` to the table's and sets ``parameters`` among its own."""
        current = self.glue.get_table(DatabaseName=database, Name=table, **self._catalog)["Table"]
        table_input = {k: current[k] for k in TABLE_INPUT_KEYS if k in current}
        descriptor = dict(table_input["StorageDescriptor"])
        descriptor["Columns"] = list(descriptor["Columns"]) + [{"Name": n, "Type": t} for n, t in columns]
        table_input["StorageDescriptor"] = descriptor
        table_input["Parameters"] = {**table_input.get("Parameters", {}), **(parameters or {})}
        self.glue.update_table(DatabaseName=database, TableInput=table_input, SkipArchive=True, **self._catalog)

    def add_partitions(self, database, change: TableChange, columns: list[tuple[str, str]],
                       storage: dict | None = None) -> int:
        """Creates the partitions the table lacks, and gives those it has the table's ``columns``: Hive's SerDe
        reads a partition through its own column list, and would read a column a later run added to its files as
        NULL (Athena maps columns by name and is not affected). Creates first and reads back only the partitions
        Glue already had: a run's new hour is one call. ``storage``: the table's storage descriptor but for columns
        and location, which new partitions take (default: the format's, as ``create_table`` writes it). Returns how
        many it created."""
        table, existed = change.table, self._create_partitions(database, change, columns, storage)
        found = []
        for start in range(0, len(existed), GET_BATCH):
            found += self._get_partitions(database, table, [list(values) for values in existed[start:start + GET_BATCH]])
        listed = [{"Name": name, "Type": kind} for name, kind in columns]
        stale = [p for p in found
                 if [(c["Name"], c["Type"]) for c in p["StorageDescriptor"].get("Columns", [])] != list(map(tuple, columns))]
        self._update_partitions(database, table, [(p, {"Columns": listed}) for p in stale])
        return len(change.partitions) - len(existed)

    def _get_partitions(self, database, table, wanted: list[list[str]], attempts: int = 10) -> list[dict]:
        """The partitions of these values that exist, asking again for those Glue left unprocessed (throttled)."""
        found = []
        for attempt in range(attempts):
            result = self.glue.batch_get_partition(DatabaseName=database, TableName=table, **self._catalog,
                                                   PartitionsToGet=[{"Values": values} for values in wanted])
            found += result.get("Partitions", [])
            wanted = [key["Values"] for key in result.get("UnprocessedKeys", [])]
            if not wanted:
                return found
            time.sleep(min(20.0, 0.1 * 2 ** attempt))
        raise RuntimeError(f"Glue left {len(wanted)} partitions of {database}.{table} unread after {attempts} attempts: "
                           f"it is throttling the account; the next sync registers them")

    def _create_partitions(self, database, change: TableChange, columns, storage: dict | None = None) -> list[tuple[str, ...]]:
        """Creates the change's partitions with ``columns`` and ``storage`` (default: the format's); returns the
        values of those Glue already had."""
        existed, storage = [], storage or STORAGE[change.format]
        for start in range(0, len(change.partitions), CREATE_BATCH):
            inputs = [{"Values": list(change.partitions[index]), "StorageDescriptor": {
                **storage, "Columns": [{"Name": n, "Type": t} for n, t in columns],
                "Location": glue_location(change.partition_location(index))}}
                for index in range(start, min(start + CREATE_BATCH, len(change.partitions)))]
            result = self.glue.batch_create_partition(DatabaseName=database, TableName=change.table,
                                                      PartitionInputList=inputs, **self._catalog)
            for error in result.get("Errors", []):
                if error["ErrorDetail"].get("ErrorCode") != "AlreadyExistsException":
                    detail = error["ErrorDetail"]
                    raise RuntimeError(f"Glue refused partitions of {database}.{change.table}: {detail.get('ErrorCode')}: "
                                       f"{detail.get('ErrorMessage')}")
                existed.append(tuple(error["PartitionValues"]))
        return existed
