"""Issue 39's writer choice, measured: Spark's Iceberg writer (one append per table), Iceberg's add_files procedure
and Iceberg's append API (committing the files of a Parquet job) against the Parquet write of all tables in one job,
side by side in one local Spark, on two axes (many tables of few rows; one table of many rows). Tables are
identity-partitioned by day and hr, format v2, in the embedded catalog.

    python bench/iceberg_writers.py WORK_DIR .cache/jars/iceberg-spark-runtime-3.5_2.12-1.10.2.jar,\
        .cache/jars/iceberg-jackson-2.15.2.jar 100 2000 500000      # tables, rows a table, rows of the one table

Prints the seconds of each variant, two trials each.
"""
import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

_SCRIPT = Path(__file__).resolve().parents[1] / "workload" / "local" / "iceberg_jars.py"
_spec = importlib.util.spec_from_file_location("iceberg_jars", _SCRIPT)
iceberg_jars = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(iceberg_jars)


def session(work: str, jars: str) -> SparkSession:
    """A local Spark with Iceberg's session catalog on an embedded metastore."""
    builder = (SparkSession.builder.master("local[2]").config("spark.jars", jars)
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1").config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "2g").config("spark.sql.shuffle.partitions", "8")
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in iceberg_jars.local_catalog_settings(work).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


COLUMNS = ("message_id string, received_at timestamp, " + ", ".join(f"c{c} string" for c in range(12)) + ", "
           + ", ".join(f"n{c} double" for c in range(6)) + ", day string, hr string")


def events(spark: SparkSession, tables: int, rows: int) -> DataFrame:
    """``rows`` events for each of ``tables`` tables (column ``tbl``), 20 columns, over one day's hours; cached."""
    df = spark.range(tables * rows).select(
        (F.col("id") % tables).cast("int").alias("tbl"), F.concat(F.lit("m"), F.col("id")).alias("message_id"),
        (F.lit(1704153600) + F.col("id") % 86400).cast("timestamp").alias("received_at"),
        *[F.concat(F.lit(f"v{c}-"), (F.col("id") % 997)).alias(f"c{c}") for c in range(12)],
        *[(F.col("id") * c % 1000).cast("double").alias(f"n{c}") for c in range(6)])
    df = (df.withColumn("day", F.date_format("received_at", "yyyy-MM-dd"))
          .withColumn("hr", F.date_format("received_at", "HH")).cache())
    df.count()
    return df


def seconds(fn) -> float:
    started = time.monotonic()
    fn()
    return round(time.monotonic() - started, 1)


def axis(spark: SparkSession, work: str, name: str, tables: int, rows: int, out: dict) -> None:
    df = events(spark, tables, rows)
    names = [f"lake.{name}_{t}" for t in range(tables)]

    def create():
        for table in names:
            spark.sql(f"create table if not exists {table} ({COLUMNS}) using iceberg partitioned by (day, hr) "
                      "tblproperties ('format-version'='2')")

    def parquet_one_job():
        shutil.rmtree(f"{work}/pq", ignore_errors=True)
        df.repartition("tbl", "day", "hr").write.partitionBy("tbl", "day", "hr").parquet(f"{work}/pq")

    def iceberg_per_table():
        for t, table in enumerate(names):
            (df.where(F.col("tbl") == t).drop("tbl").writeTo(table)
             .option("snapshot-property.segment-run-id", "bench").append())

    def add_files():
        for t, table in enumerate(names):
            spark.sql(f"CALL spark_catalog.system.add_files(table => '{table}', "
                      f"source_table => '`parquet`.`{work}/pq/tbl={t}`', check_duplicate_files => false)")

    def append_api():
        """Each table's files of the Parquet job committed by Iceberg's Java API: one append per table, each file's
        metrics read from its footer (as add_files does), the run id in the snapshot's summary."""
        jvm = spark._jvm
        iceberg = jvm.org.apache.iceberg
        for t, table in enumerate(names):
            loaded = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
            metrics_config = iceberg.MetricsConfig.forTable(loaded)
            mapping = iceberg.mapping.MappingUtil.create(loaded.schema())
            append = loaded.newAppend()
            root = Path(work, "pq", f"tbl={t}")
            for path in sorted(root.glob("day=*/hr=*/*.parquet")):
                data = loaded.io().newInputFile(str(path))
                metrics = iceberg.parquet.ParquetUtil.fileMetrics(data, metrics_config, mapping)
                append.appendFile(iceberg.DataFiles.builder(loaded.spec()).withInputFile(data)
                                  .withPartitionPath(str(path.parent.relative_to(root)))
                                  .withFormat(iceberg.FileFormat.PARQUET).withMetrics(metrics).build())
            append.set("segment-run-id", "bench").commit()

    out[f"{name}: iceberg create {tables} tables"] = [seconds(create)]
    variants = {"parquet, one job for all tables": parquet_one_job,
                "iceberg writeTo().append() per table": iceberg_per_table,
                "iceberg add_files per table (after the parquet job)": add_files,
                "iceberg append API per table (after the parquet job)": append_api}
    for _ in range(2):  # alternated: both trials see the same machine
        for variant, fn in variants.items():
            out.setdefault(f"{name}: {variant}", []).append(seconds(fn))
    df.unpersist()


def main() -> None:
    work, jars = sys.argv[1], sys.argv[2]
    tables, rows, one_table_rows = map(int, sys.argv[3:6])
    spark = session(work, jars)
    spark.sql("create database if not exists lake")
    out: dict = {}
    axis(spark, work, "tables", tables, rows, out)
    axis(spark, work, "events", 1, one_table_rows, out)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
