"""Apache Iceberg for local Spark from PyPI packages alone (workload/local/iceberg_jars.py, run by make setup): the
relocated Jackson names only the relocated package, and a Spark given the two jars keeps an Iceberg table beside a
Parquet one in the embedded Hive catalog, with a snapshot tagged by its run; files of Spark's Parquet writer committed
through Iceberg's append API read back the same in Spark and in pyiceberg."""
import json
import os
import subprocess
import sys
import zipfile
from datetime import UTC, datetime

import pytest
from conftest import REPO, load_module
from pyiceberg.table import StaticTable

iceberg_jars = load_module(REPO / "workload" / "local" / "iceberg_jars.py", "iceberg_jars")
JARS = [REPO / ".cache" / "jars" / iceberg_jars.RUNTIME, REPO / ".cache" / "jars" / iceberg_jars.JACKSON_JAR]


@pytest.mark.fast
def test_relocation_moves_every_name_of_jacksons_package_and_nothing_else():
    [databind] = [jar for jar in iceberg_jars.pyspark_jackson_jars() if "jackson-databind" in jar]
    with zipfile.ZipFile(databind) as jar:
        original = jar.read("com/fasterxml/jackson/databind/ObjectMapper.class")
    relocated = iceberg_jars.relocate_class(original)
    assert relocated[:10] == original[:10]  # magic, version and the constant pool's size
    assert relocated.count(b"com/fasterxml/jackson/") == relocated.count(iceberg_jars.RELOCATED) > 100
    assert relocated.count(b"java/lang/Object") == original.count(b"java/lang/Object")
    # each relocated text grew by the prefix, and only those: the pool's indices and the code after it are untouched
    grown = len(iceberg_jars.RELOCATED) - len(iceberg_jars.PACKAGE)
    assert len(relocated) - len(original) == grown * original.count(b"com/fasterxml/jackson/") + grown * original.count(
        b"com.fasterxml.jackson.")
    assert relocated.endswith(original[-200:])
    assert iceberg_jars.relocated_name("com/fasterxml/jackson/core/JsonFactory.class") == \
        "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactory.class"
    assert iceberg_jars.relocated_name("META-INF/services/com.fasterxml.jackson.core.JsonFactory") == \
        "META-INF/services/org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactory"
    assert iceberg_jars.relocated_name("META-INF/versions/9/module-info.class") is None
    with pytest.raises(ValueError, match="not a class file"):
        iceberg_jars.relocate_class(b"PK\x03\x04")


# A Spark of its own (the workers' sessions have other jars): an embedded catalog with Iceberg's session catalog over
# it and the settings Iceberg needs there (iceberg_jars.local_catalog_settings)
SCRIPT = """
import glob, json, sys
from pyspark.sql import SparkSession
work, jars, java_options, settings = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
builder = (SparkSession.builder.master("local[2]").config("spark.jars", jars)
           .config("spark.driver.extraJavaOptions", java_options).config("spark.ui.enabled", "false")
           .config("spark.sql.session.timeZone", "UTC"))
for key, value in settings.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sql("create database web")
spark.sql(f"create table web.pages (message_id string, received_at timestamp, day string, hr string) using iceberg "
          f"partitioned by (day, hr) location '{work}/data/src1/pages' tblproperties ('format-version'='2')")
rows = spark.createDataFrame([("m1", "2024-01-02 03:00:00", "2024-01-02", "03"), ("m2", "2024-01-02 04:00:00",
                              "2024-01-02", "04")], "message_id string, received_at string, day string, hr string")
rows = rows.selectExpr("message_id", "cast(received_at as timestamp) as received_at", "day", "hr")
rows.writeTo("web.pages").option("snapshot-property.segment-run-id", "run-1").append()
spark.sql("delete from web.pages where message_id = 'm1'")
spark.sql("create table web.plain (a int) using parquet")

# The sync's way to Iceberg (iceberg_tables.py): Spark's Parquet writer writes a run's files (no field ids,
# microsecond timestamps, day and hr inside), one commit per table and run names the run, readers find the columns
# by the table's name mapping, which Iceberg extends when a column is added; a redone run commits nothing twice
from segment_lake import iceberg_tables
spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
spark.sql(iceberg_tables.create_statement("web", "screens", [("message_id", "string"), ("received_at", "timestamp"),
                                          ("day", "string")], ["day", "hr"], f"{work}/data/src1/screens"))
iceberg_tables.map_names(spark, "web", "screens")


def write(run, rows, ddl):
    folder = f"{work}/stage/{run}"
    frame = spark.createDataFrame(rows, ddl)
    frame.withColumn("received_at", frame.received_at.cast("timestamp")).coalesce(1).write.parquet(folder)
    return [iceberg_tables.DataFile(path, f"day={rows[0][2]}/hr={rows[0][3]}")
            for path in glob.glob(f"{folder}/*.parquet")]


committed = [iceberg_tables.commit(spark, "web", "screens", write(
    "run-1", [("s1", "2024-01-02 03:00:00", "2024-01-02", "03")],
    "message_id string, received_at string, day string, hr string"), "run-1")]
spark.sql("alter table web.screens add columns (screen string)")
files = write("run-2", [("s2", "2024-01-02 04:10:00", "2024-01-02", "04", "home")],
              "message_id string, received_at string, day string, hr string, screen string")
committed += [iceberg_tables.commit(spark, "web", "screens", files, "run-2") for _ in range(2)]  # then a redo
print(json.dumps({
    "screens": [[r.message_id, str(r.received_at), r.day, r.hr, r.screen] for r in spark.sql(
        "select * from web.screens order by message_id").collect()],
    "screens_runs": [r.run for r in spark.sql(
        "select summary['segment-run-id'] as run from web.screens.snapshots order by committed_at").collect()],
    "committed": committed,
    "screens_metadata": spark.sql("select file from web.screens.metadata_log_entries order by timestamp desc")
    .first().file,
    "rows": [r.message_id + " " + r.day + " " + r.hr for r in spark.sql("select * from web.pages").collect()],
    "snapshots": [[r.operation, r.run] for r in spark.sql(
        "select operation, summary['segment-run-id'] as run from web.pages.snapshots order by committed_at").collect()],
    "tables": sorted(r.tableName for r in spark.sql("show tables in web").collect()),
    "provider": spark.sql("describe table extended web.pages").where("col_name = 'Provider'").first().data_type}))
"""


@pytest.mark.spark
def test_a_local_spark_with_the_two_jars_writes_and_deletes_in_an_iceberg_table(tmp_path):
    for jar in JARS:
        assert jar.is_file(), f"{jar} is missing: run `make setup`"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), ",".join(map(str, JARS)),
                           os.environ.get("SEGMENT_LAKE_JAVA_OPTIONS", ""),
                           json.dumps(iceberg_jars.local_catalog_settings(str(tmp_path)))],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    screens_metadata = found.pop("screens_metadata")
    assert found == {"rows": ["m2 2024-01-02 04"], "snapshots": [["append", "run-1"], ["delete", None]],
                     "tables": ["pages", "plain", "screens"], "provider": "iceberg",
                     "screens": [["s1", "2024-01-02 03:00:00", "2024-01-02", "03", None],
                                 ["s2", "2024-01-02 04:10:00", "2024-01-02", "04", "home"]],
                     "screens_runs": ["run-1", "run-2"],  # one snapshot a run: the mapping and the column are metadata
                     "committed": [True, True, False]}
    # an independent reader, from the metadata file alone: the same rows, the timestamps as UTC instants
    read = StaticTable.from_metadata(screens_metadata)
    assert read.scan().to_arrow().sort_by("message_id").to_pylist() == [
        {"message_id": "s1", "received_at": datetime(2024, 1, 2, 3, tzinfo=UTC), "day": "2024-01-02", "hr": "03",
         "screen": None},
        {"message_id": "s2", "received_at": datetime(2024, 1, 2, 4, 10, tzinfo=UTC), "day": "2024-01-02", "hr": "04",
         "screen": "home"}]
    assert read.scan(row_filter="hr = '04'").to_arrow().column("message_id").to_pylist() == ["s2"]
    table = tmp_path / "data" / "src1" / "pages"
    assert list((table / "metadata").glob("*.metadata.json"))
    assert sorted(p.relative_to(table / "data").as_posix() for p in (table / "data").glob("day=*/hr=*")) == [
        "day=2024-01-02/hr=03", "day=2024-01-02/hr=04"]
