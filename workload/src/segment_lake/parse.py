"""Parse raw lines into events (or rejections with a reason) inside Spark's JVM.

The parser is ``jvm/ParseEvent.java`` (see jvm_code.py): each line becomes its event's type,
messageId, receivedAt and flattened, kind-tagged fields (see the Java file for the kinds).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .jvm_code import load_class

SEGMENT_TYPES = ("track", "identify", "page", "screen", "group", "alias")
FUNCTION = "segment_lake_parse_event"

DISCARD_TYPE = T.ArrayType(T.StructType([
    T.StructField("column", T.StringType()),
    T.StructField("value", T.StringType()),
    T.StructField("reason", T.StringType()),
]))
PARSED_TYPE = T.StructType([
    T.StructField("reason", T.StringType()),  # set for rejected lines, and then nothing else is
    T.StructField("segment_type", T.StringType()),
    T.StructField("message_id", T.StringType()),
    T.StructField("received_at", T.StringType()),  # UTC, as yyyy-MM-dd HH:mm:ss.ffffff
    # every column in key order, null when only JSON null named it
    T.StructField("fields", T.MapType(T.StringType(), T.StringType())),
    T.StructField("discards", DISCARD_TYPE),
])


def register_parser(spark: SparkSession) -> None:
    """Make ``segment_lake_parse_event(line)`` callable in ``spark`` (and on its executors)."""
    if spark.catalog.functionExists(FUNCTION):
        return
    jvm = spark.sparkContext._jvm
    parser = load_class(spark, "ParseEvent").newInstance()
    # registerJavaFunction needs generic signatures, which Janino does not write: register the instance
    spark._jsparkSession.udf().register(FUNCTION, parser, jvm.org.apache.spark.sql.types.DataType.fromJson(PARSED_TYPE.json()))


def parse_lines(lines: DataFrame) -> DataFrame:
    """``lines`` (value, file) -> one row per non-blank line: file, reason and raw (for rejected
    lines), segment_type, fields, discards, and the event's own messageId and receivedAt
    as ``_message_id`` and ``_received_at`` (the flattened ``message_id`` and ``received_at``
    columns are data like any other)."""
    register_parser(lines.sparkSession)
    parsed = lines.where("trim(value) != ''").select("file", "value", F.expr(f"{FUNCTION}(value)").alias("p"))
    return parsed.select(
        "file", F.col("p.reason").alias("reason"), F.when(F.col("p.reason").isNotNull(), F.col("value")).alias("raw"),
        F.col("p.segment_type").alias("segment_type"), F.col("p.message_id").alias("_message_id"),
        F.col("p.received_at").cast("timestamp").alias("_received_at"),
        F.col("p.fields").alias("fields"), F.col("p.discards").alias("discards"))
