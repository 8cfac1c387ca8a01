"""The lake's Apache Iceberg tables (``--table-format iceberg``): made with the Parquet lake's columns plus the
partition keys (strings, inside each file), partitioned by identity on those keys (or, with ``--iceberg-partitioning
hours``, by Iceberg's hidden ``hours(received_at)``, without the keys), format v2, and readable by name
(the table's name mapping: the sync's files carry no Iceberg field ids). A run's files, written by the same job as a
Parquet lake's (parquet_tables.py), are committed per table in one snapshot whose summary names the run, so a redone
run finds which tables it already committed (docs/performance.md, Writing Iceberg tables)."""
from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark.sql import SparkSession

from segment_lake_contract import HOURLY_DATE_PARTITIONS

from .errors import InvalidSettings
from .pool import ROUND_TRIP_THREADS

FORMAT = "iceberg"  # the table format setting's value, and TableChange's format
RUN_PROPERTY = "segment-run-id"
DELETION_PROPERTY = "segment-deletion-id"
NAME_MAPPING = "schema.name-mapping.default"

# Iceberg beside Hive's tables in Spark's session catalog, and its SQL (DELETE, the procedures). On an embedded
# metastore Iceberg needs its schema made at first use, and Hive's table lock off: with it, CREATE TABLE retried for
# minutes, then left a table nobody could load; one run per source holds a lock of its own. The metastore also
# compares each column's type with the one at its position before: a column added before the keys moves them.
LOCAL_SESSION_SETTINGS = {
    "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
    "spark.sql.catalog.spark_catalog.type": "hive",
    "spark.hadoop.hive.metastore.schema.verification": "false",
    "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
    "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
    "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes": "false",
}


# On EMR, Iceberg (the iceberg-defaults classification the constructs set) beside Glue's Hive tables: Spark's session
# catalog over Iceberg's GlueCatalog, which marks each table table_type=ICEBERG and keeps a version id per commit.
# Files through Hadoop's file system rather than Iceberg's own S3 client, so that EMRFS encrypts the metadata with the
# security configuration's key, as it does the sync's data files; no archive of every commit's table version in Glue.
GLUE_SESSION_SETTINGS = {
    "spark.sql.extensions": LOCAL_SESSION_SETTINGS["spark.sql.extensions"],
    "spark.sql.catalog.spark_catalog": LOCAL_SESSION_SETTINGS["spark.sql.catalog.spark_catalog"],
    "spark.sql.catalog.spark_catalog.catalog-impl": "org.apache.iceberg.aws.glue.GlueCatalog",
    "spark.sql.catalog.spark_catalog.io-impl": "org.apache.iceberg.hadoop.HadoopFileIO",
    "spark.sql.catalog.spark_catalog.glue.skip-archive": "true",
}


def session_settings(embedded: bool) -> dict[str, str]:
    """Iceberg's settings for a session over the lake's ``embedded`` metastore, else over Glue: the region and the
    endpoint (SEGMENT_LAKE_GLUE_ENDPOINT) the sync's own Glue client takes, as the AWS SDK v2 under Iceberg reads
    neither AWS_DEFAULT_REGION nor that variable."""
    if embedded:
        return LOCAL_SESSION_SETTINGS
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    endpoint = os.environ.get("SEGMENT_LAKE_GLUE_ENDPOINT")
    return {**GLUE_SESSION_SETTINGS, **({"spark.sql.catalog.spark_catalog.client.region": region} if region else {}),
            **({"spark.sql.catalog.spark_catalog.glue.endpoint": endpoint} if endpoint else {})}


GLUE_CATALOG_CLASS = "org/apache/iceberg/aws/glue/GlueCatalog.class"


def local_jars_hold_glue_catalog() -> bool:
    """Whether SEGMENT_LAKE_ICEBERG_JARS hold Iceberg's Glue catalog and the AWS SDK's Glue client it calls (the
    Spark runtime jar holds the catalog without the SDK; workload/local/iceberg_jars.py --glue-jar writes one with
    both), so that a local Spark can keep Iceberg tables in Glue."""
    names: set[str] = set()
    catalog = b""
    for jar in filter(os.path.isfile, (j.strip() for j in os.environ.get("SEGMENT_LAKE_ICEBERG_JARS", "").split(","))):
        if not zipfile.is_zipfile(jar):  # holds nothing: the refusal names the jar to set
            continue
        with zipfile.ZipFile(jar) as read:
            names.update(read.namelist())
            if not catalog and GLUE_CATALOG_CLASS in names:
                catalog = read.read(GLUE_CATALOG_CLASS)
    # a client class where the catalog's field type names it (a shading may have moved the SDK)
    clients = (name.removesuffix(".class") for name in names if name.endswith("/awssdk/services/glue/GlueClient.class"))
    return any(b"L%s;" % client.encode() in catalog for client in clients)


def local_jars() -> list[str]:
    """Iceberg's jars for a local Spark (EMR brings its own): set-up names them in SEGMENT_LAKE_ICEBERG_JARS."""
    jars = [jar.strip() for jar in os.environ.get("SEGMENT_LAKE_ICEBERG_JARS", "").split(",") if jar.strip()]
    missing = [jar for jar in jars if not os.path.isfile(jar)]
    if not jars or missing:
        raise InvalidSettings(f"Iceberg tables need Iceberg's jars for local Spark ({', '.join(missing) or 'none named'}"
                              "): run `make setup`, or set SEGMENT_LAKE_ICEBERG_JARS to the comma-separated jars")
    return jars


def recorded_tables(storage, layout) -> dict[str, str]:
    """The source's Iceberg tables: each one's folder name and its catalog name (``database.table``), as the syncs
    recorded them in the source's state before making them (``record_tables``); none for a Parquet source."""
    uri = layout.state_files.iceberg_tables_uri
    return parse_record(storage.read_text(uri), uri) if storage.exists(uri) else {}


def parse_record(text: str, uri: str) -> dict[str, str]:
    """The record at ``uri`` (folder name -> ``database.table``), from its ``text``."""
    try:
        record = json.loads(text)
    except ValueError as error:
        record = error
    if not isinstance(record, dict) or not all(isinstance(v, str) for v in record.values()):
        raise InvalidSettings(f"{uri} is not a record of the source's Iceberg tables ({str(record)[:80]}): restore it "
                              "(a JSON object: each table's folder name -> its database.table)")
    return record


def record_tables(storage, layout, tables: dict[str, str]) -> None:
    """Adds ``tables`` (folder name -> ``database.table``) to the source's record, before they are made: whatever
    finds the source's Iceberg tables later (a deletion, a redo, a reset) reads this one file."""
    recorded = recorded_tables(storage, layout)
    if {**recorded, **tables} != recorded:
        storage.write_text(layout.state_files.iceberg_tables_uri, json.dumps({**recorded, **tables}, sort_keys=True))


def iceberg_table_folders(storage, layout) -> list[str]:
    """The folder names of the source's Iceberg tables: those recorded, and any other whose folder holds Iceberg's
    ``metadata`` folder (a table a sync made but has not written since it recorded tables)."""
    recorded = recorded_tables(storage, layout)
    return sorted({*recorded, *(name for name in layout.table_folders(storage)
                                if name not in recorded and storage.exists(f"{layout.table(name)}/metadata"))})


def tables_committed_by(storage, layout, run_id: str) -> list[str]:
    """The folders of the source's Iceberg tables whose newest metadata holds a snapshot of ``run_id``: read from the
    metadata files themselves, so without Iceberg's jars and whatever the catalog."""
    found = []
    for name in iceberg_table_folders(storage, layout):
        metadata = [f.uri for f in storage.list_files(f"{layout.table(name)}/metadata")
                    if f.uri.endswith(".metadata.json")]
        snapshots = json.loads(storage.read_text(max(metadata))).get("snapshots", []) if metadata else []
        if any(s.get("summary", {}).get(RUN_PROPERTY) == run_id for s in snapshots):
            found.append(name)
    return found


@dataclass(frozen=True)
class DataFile:
    """A file of a run for an Iceberg table: where it is, its partition's folder (``day=2024-01-02/hr=03``), and the
    hour its rows were received in when the date partition is by the hour (its start, UTC)."""

    uri: str
    partition: str
    hour: datetime | None = None


# the hidden partition of ``--iceberg-partitioning hours``: Iceberg's hour transform, whose values count hours since
# 1970 (UTC), of the column every event has; the folders of the files Iceberg itself writes are named for it
# (``received_at_hour=2024-03-04-10``: Iceberg names a partition field <column>_hour)
HIDDEN_HOURS_SOURCE = "received_at"
HIDDEN_HOURS_FOLDER = f"{HIDDEN_HOURS_SOURCE}_hour"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def threads(catalog: str) -> int:
    """How many tables of a ``catalog`` (the catalog setting) a run makes or commits at once: several in Glue, which
    takes concurrent changes to different tables, each waiting on several requests (a commit reads the table before
    and after its update, and every new file's footer for its metrics); one in an embedded metastore, whose changes
    wait on no network (several were not measured there)."""
    return ROUND_TRIP_THREADS if catalog == "glue" else 1


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def create_statement(database: str, table: str, columns: Iterable[tuple[str, str]], keys: Iterable[str],
                     location: str, hidden_hours: bool = False) -> str:
    """CREATE TABLE of an Iceberg table: ``columns`` (name, Spark type) then the partition ``keys`` (strings),
    partitioned by identity on the keys, or with ``hidden_hours`` by the hour of received_at and without them, with
    its name mapping (``created_mapping``); the files Iceberg itself writes (a deletion's, a compaction's) go to
    partition folders below the table's too (``day=.../hr=...``, or ``received_at_hour=...``: HIDDEN_HOURS_FOLDER),
    not below ``data/``."""
    keys = list(keys)
    names = [name for name, _ in columns if name not in keys] + ([] if hidden_hours else keys)
    kinds = {**dict(columns), **{key: "string" for key in keys}}
    partitioning = f"hours({_quoted(HIDDEN_HOURS_SOURCE)})" if hidden_hours else ", ".join(map(_quoted, keys))
    return (f"CREATE TABLE {_quoted(database)}.{_quoted(table)} "
            f"({', '.join(f'{_quoted(name)} {kinds[name]}' for name in names)}) USING iceberg "
            f"PARTITIONED BY ({partitioning}) LOCATION '{location}' "
            f"TBLPROPERTIES ('format-version' = '2', 'write.data.path' = '{location}', "
            f"'{NAME_MAPPING}' = '{created_mapping(names)}')")


def created_mapping(names: list[str]) -> str:
    """The name mapping of a new table of flat ``names``: Iceberg numbers a new table's columns 1, 2, ... in order
    (``register`` checks it), so the mapping is part of the CREATE rather than a commit of its own."""
    return json.dumps([{"field-id": number, "names": [name]} for number, name in enumerate(names, 1)])


def _activated(spark: SparkSession):
    """Makes ``spark`` the active session of this thread's JVM thread, and returns the JVM. The active session is a
    thread's own, and table names resolve through it: on a pool's thread (``threads``) without it, a table was not
    found."""
    jvm = spark.sparkContext._jvm
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
    return jvm


def _table(spark: SparkSession, database: str, table: str):
    return _activated(spark).org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession,
                                                                                  f"{database}.{table}")


def map_names(spark: SparkSession, database: str, table: str) -> None:
    """Gives a table its name mapping from its schema; Iceberg extends it with every column added later."""
    iceberg = spark.sparkContext._jvm.org.apache.iceberg
    loaded = _table(spark, database, table)
    mapping = iceberg.mapping.NameMappingParser.toJson(iceberg.mapping.MappingUtil.create(loaded.schema()))
    loaded.updateProperties().set(NAME_MAPPING, mapping).commit()


def register(spark: SparkSession, database: str, table: str, columns: Iterable[tuple[str, str]], keys: Iterable[str],
             location: str, hidden_hours: bool = False) -> None:
    """Makes the table when missing (with its name mapping; partitioned as ``create_statement`` says), else appends
    the ``columns`` it lacks, in order. A table keeps the partitioning it was made with."""
    keys = list(keys)
    _activated(spark)
    if not spark.catalog.tableExists(f"{database}.{table}"):
        spark.sql(create_statement(database, table, columns, keys, location, hidden_hours))
        fields = _table(spark, database, table).schema().columns()
        numbered = json.dumps([{"field-id": fields.get(i).fieldId(), "names": [fields.get(i).name()]}
                               for i in range(fields.size())])
        if numbered != created_mapping([fields.get(i).name() for i in range(fields.size())]):
            map_names(spark, database, table)  # another numbering than expected: the mapping from the schema
        return
    present = [name for name in spark.table(f"{_quoted(database)}.{_quoted(table)}").columns if name not in keys]
    missing = [(name, kind) for name, kind in columns if name not in present and name not in keys]
    if missing:
        # each after the one before it, so that the keys stay last, as in the Parquet lake's tables
        after = [present[-1], *(name for name, _ in missing[:-1])]
        added = [f"{_quoted(name)} {kind} AFTER {_quoted(previous)}"
                 for (name, kind), previous in zip(missing, after, strict=True)]
        spark.sql(f"ALTER TABLE {_quoted(database)}.{_quoted(table)} ADD COLUMNS ({', '.join(added)})")


def partitioning(spark: SparkSession, database: str, table: str) -> tuple[set[str], bool]:
    """The table's partition key columns (those it is partitioned by identity on), and whether it is partitioned by
    the hour of received_at instead (``--iceberg-partitioning hours``)."""
    loaded = _table(spark, database, table)
    fields = loaded.spec().fields()
    return ({loaded.schema().findColumnName(fields.get(i).sourceId()) for i in range(fields.size())
             if fields.get(i).transform().isIdentity()}, _by_hour(loaded.spec()))


def _by_hour(spec) -> bool:
    fields = spec.fields()
    return fields.size() == 1 and str(fields.get(0).transform()) == "hour"


def _partition_path(spec, file: DataFile, table: str) -> str:
    """``file``'s partition as the table's ``spec`` names it: its folder's keys, or the hour of received_at."""
    fields = spec.fields()
    if not _by_hour(spec):
        return file.partition
    if file.hour is None:  # the catalog stage refuses such a run before it writes (catalog_changes.table_changes)
        raise InvalidSettings(f"table {table} is partitioned by the hour of received_at, and this run's files are a "
                              f"day each ({file.partition}): sync it with --date-partition "
                              f"{' or '.join(HOURLY_DATE_PARTITIONS)}")
    return f"{fields.get(0).name()}={int((file.hour - EPOCH).total_seconds()) // 3600}"


def hour_span(values: tuple) -> tuple[datetime, timedelta] | None:
    """The hour a partition of hidden hours(received_at) covers, from its values (``partition_files``); None for a
    partition by keys."""
    if len(values) == 1 and isinstance(values[0], int):
        return EPOCH + timedelta(hours=values[0]), timedelta(hours=1)
    return None


def _snapshots(table) -> list:
    """The snapshots (every one retention keeps) of ``table``, a loaded Iceberg table: Iceberg's Java objects."""
    iterator, snapshots = table.snapshots().iterator(), []
    while iterator.hasNext():
        snapshots.append(iterator.next())
    return snapshots


def _summary_values(table, key: str) -> set[str]:
    """The values of ``key`` in the summaries of the snapshots of ``table``, a loaded Iceberg table."""
    values = {snapshot.summary().get(key) for snapshot in _snapshots(table)}
    return {value for value in values if value}


def data_files(spark: SparkSession, table: str) -> int:
    """How many data files the current snapshot of ``table`` (``database.table``) holds, from its summary."""
    snapshot = _table(spark, *table.split(".", 1)).currentSnapshot()
    return int(snapshot.summary().get("total-data-files") or 0) if snapshot else 0


def committed_runs(spark: SparkSession, database: str, table: str) -> set[str]:
    """The runs whose files the table holds a snapshot of."""
    return _summary_values(_table(spark, database, table), RUN_PROPERTY)


@contextmanager
def _commit_properties(spark: SparkSession, properties: dict[str, str]) -> Iterator[None]:
    """Iceberg's extra snapshot properties for the SQL commands run inside: Iceberg reads them from a variable of
    the JVM thread that commits (CommitMetadata's), and py4j runs this Python thread's calls on one JVM thread."""
    jvm = spark.sparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    field = jvm.java.lang.Class.forName("org.apache.iceberg.spark.CommitMetadata", True, loader) \
        .getDeclaredField("COMMIT_PROPERTIES")
    field.setAccessible(True)
    values = jvm.java.util.HashMap()
    for key, value in properties.items():
        values.put(key, value)
    field.get(None).set(values)
    try:
        yield
    finally:
        field.get(None).remove()


def delete_rows(spark: SparkSession, table: str, keys_uri: str, deletion_id: str) -> bool:
    """Deletes the rows of ``table`` (``database.table``) whose message_id and received_at are a row of the Parquet
    files at ``keys_uri``, copy-on-write (Iceberg's default: the files holding them are written again without them),
    in one snapshot naming ``deletion_id``; False, changing nothing, when a snapshot of the deletion is there."""
    database, name = table.split(".", 1)
    if deletion_id in _summary_values(_table(spark, database, name), DELETION_PROPERTY):
        return False
    spark.read.parquet(keys_uri).createOrReplaceTempView("segment_deleted_rows")
    try:
        with _commit_properties(spark, {DELETION_PROPERTY: deletion_id}):
            spark.sql(f"MERGE INTO {_quoted(database)}.{_quoted(name)} AS t USING segment_deleted_rows AS d "
                      "ON t.message_id = d.message_id AND t.received_at <=> d.received_at WHEN MATCHED THEN DELETE")
    finally:
        spark.catalog.dropTempView("segment_deleted_rows")
    return True


def commit(spark: SparkSession, database: str, table: str, files: list[DataFile], run_id: str) -> bool:
    """Commits ``files`` to the table in one snapshot naming ``run_id``, with each file's column metrics from its
    footer; False, committing nothing, when a snapshot of the run is already there."""
    loaded = _table(spark, database, table)
    if run_id in _summary_values(loaded, RUN_PROPERTY):
        return False
    iceberg = spark.sparkContext._jvm.org.apache.iceberg
    names = iceberg.mapping.NameMappingParser.fromJson(loaded.properties().get(NAME_MAPPING))
    metrics_config, spec = iceberg.MetricsConfig.forTable(loaded), loaded.spec()
    append = loaded.newAppend()
    for file in files:
        data = loaded.io().newInputFile(file.uri)
        append.appendFile(iceberg.DataFiles.builder(spec).withInputFile(data)
                          .withPartitionPath(_partition_path(spec, file, f"{database}.{table}"))
                          .withFormat(iceberg.FileFormat.PARQUET)
                          .withMetrics(iceberg.parquet.ParquetUtil.fileMetrics(data, metrics_config, names)).build())
    append.set(RUN_PROPERTY, run_id).commit()
    return True


# A file no snapshot names may be one another engine's commit (Athena's UPDATE, say) is still writing: Iceberg's
# procedure refuses to remove those younger than a day
ORPHAN_AGE = timedelta(hours=24)


@dataclass(frozen=True)
class Maintenance:
    """What a compaction did to an Iceberg table: files merged (before, after), and the files removed with the
    snapshots that expired or as orphans (named by no snapshot)."""

    files_merged: int = 0
    files_written: int = 0
    snapshots_expired: int = 0
    files_removed: int = 0


def partition_files(spark: SparkSession, table: str) -> dict[tuple, tuple[int, int]]:
    """How many data files, of how many bytes, each partition (by its values: the keys' strings, or the hour's
    number with hidden hours) of ``table`` (``database.table``) holds now."""
    database, name = table.split(".", 1)
    rows = spark.sql(f"SELECT partition, file_count, total_data_file_size_in_bytes AS size "
                     f"FROM {_quoted(database)}.{_quoted(name)}.partitions").collect()
    return {tuple(row["partition"]): (row["file_count"], row["size"]) for row in rows}


def _partition_filter(keys: list[str], values: tuple) -> str:
    """A filter on the table's columns that selects the partition of ``values`` (``keys`` are its fields' names)."""
    span = hour_span(values)
    if span is None:
        return " AND ".join(f"{_quoted(k)} = '{v}'" for k, v in zip(keys, values, strict=True))
    start, end = (f"TIMESTAMP '{moment:%Y-%m-%d %H:%M:%S}'" for moment in (span[0], span[0] + span[1]))
    return f"{_quoted(HIDDEN_HOURS_SOURCE)} >= {start} AND {_quoted(HIDDEN_HOURS_SOURCE)} < {end}"


def maintain(spark: SparkSession, table: str, partitions: list[tuple[str, ...]], target_bytes: int,
             expire_before: datetime) -> Maintenance:
    """Compacts ``table`` (``database.table``) with Iceberg's procedures, each one commit: the files of each of
    ``partitions`` (by their values) are merged into files of about ``target_bytes``; snapshots older than
    ``expire_before`` expire (the current one stays), and with them the files only they named (a deletion's erased
    rows); files that no snapshot names (orphans) go once ORPHAN_AGE older than that."""
    database, name = table.split(".", 1)
    merged = written = 0
    if partitions:
        keys = [f.name for f in spark.table(f"{_quoted(database)}.{_quoted(name)}.partitions").schema["partition"]
                .dataType.fields]
        where = " OR ".join(f"({_partition_filter(keys, values)})" for values in partitions)
        row = spark.sql(f"CALL spark_catalog.system.rewrite_data_files(table => '{table}', where => \"{where}\", "
                        f"options => map('min-input-files', '2', 'rewrite-all', 'true', "
                        f"'target-file-size-bytes', '{target_bytes}'))").first()
        merged, written = row["rewritten_data_files_count"], row["added_data_files_count"]
    loaded, removed = _table(spark, database, name), 0
    snapshots, current = _snapshots(loaded), loaded.currentSnapshot()  # none in a table made but never written
    # the current snapshot always stays: with no other older than the cut, the procedure (Spark jobs, about 0.7 s a
    # table here) would expire nothing
    cut = expire_before.timestamp() * 1000
    if current and any(s.snapshotId() != current.snapshotId() and s.timestampMillis() < cut for s in snapshots):
        before = f"TIMESTAMP '{expire_before.astimezone(UTC):%Y-%m-%d %H:%M:%S.%f}'"
        removed = spark.sql(f"CALL spark_catalog.system.expire_snapshots(table => '{table}', older_than => {before}, "
                            "retain_last => 1)").first()["deleted_data_files_count"]
    orphans_before = f"TIMESTAMP '{(expire_before - ORPHAN_AGE).astimezone(UTC):%Y-%m-%d %H:%M:%S.%f}'"
    removed += spark.sql(f"CALL spark_catalog.system.remove_orphan_files(table => '{table}', "
                         f"older_than => {orphans_before})").count()
    return Maintenance(merged, written, len(snapshots) - len(_snapshots(_table(spark, database, name))), removed)
