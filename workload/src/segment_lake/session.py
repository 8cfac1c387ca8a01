"""The Spark session: local mode on a laptop, YARN under spark-submit on EMR, with the embedded
Hive metastore (Derby) inside a local lake, or Glue."""
from __future__ import annotations

import os
import sys
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from .jvm_code import compiled_jar


def metastore_dir(lake_uri: str) -> str:
    return os.path.join(urlparse(lake_uri).path, "segment-data", "metastore")


def _under_spark_submit() -> bool:
    # spark-submit starts the Python driver with a gateway to its JVM.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(app_name: str, lake_uri: str | None = None, local_catalog: bool = True) -> SparkSession:
    """A session for ``app_name``; with a local ``lake_uri`` and ``local_catalog``, its metastore lives in the lake."""
    builder = SparkSession.builder.appName(app_name)
    if not _under_spark_submit():
        # Python workers must import this package: run them on this interpreter.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        cores = os.environ.get("SEGMENT_LAKE_CORES", "*")
        builder = (builder.master(f"local[{cores}]")
                   # the sync's classes, from the start: the local file system below is one of them
                   .config("spark.driver.extraClassPath", compiled_jar())
                   .config("spark.hadoop.fs.file.impl", "segmentlake.LocalFileSystem")
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", os.environ.get("SEGMENT_LAKE_SHUFFLE_PARTITIONS", "8"))
                   .config("spark.driver.memory", os.environ.get("SEGMENT_LAKE_DRIVER_MEMORY", "2g")))
    builder = (builder.config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.parquet.compression.codec", "snappy")
               .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
               # type inference aggregates (table, column) pairs: keep it in a hash map, not a sort
               .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "65536")
               # timestamps are proleptic Gregorian, as java.time and Athena read them
               .config("spark.sql.parquet.int96RebaseModeInWrite", "CORRECTED")
               .config("spark.sql.parquet.datetimeRebaseModeInWrite", "CORRECTED")
               .config("spark.ui.showConsoleProgress", "false"))
    jars = os.environ.get("SEGMENT_LAKE_SPARK_JARS")
    if jars:
        builder = builder.config("spark.jars", jars)
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:  # a local S3 endpoint (tests, MinIO): path-style requests, plain HTTP
        builder = (builder.config("spark.hadoop.fs.s3a.endpoint", endpoint)
                   .config("spark.hadoop.fs.s3a.path.style.access", "true")
                   .config("spark.hadoop.fs.s3a.connection.ssl.enabled", str(endpoint.startswith("https")).lower())
                   .config("spark.hadoop.fs.s3a.aws.credentials.provider",
                           "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"))
    if local_catalog and lake_uri and lake_uri.startswith("file:"):
        store = metastore_dir(lake_uri)
        os.makedirs(store, exist_ok=True)
        builder = (builder.enableHiveSupport()
                   .config("spark.sql.warehouse.dir", os.path.join(store, "warehouse"))
                   .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                           f"jdbc:derby:;databaseName={os.path.join(store, 'metastore_db')};create=true")
                   .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={store}"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SEGMENT_LAKE_LOG_LEVEL", "ERROR"))
    return spark
