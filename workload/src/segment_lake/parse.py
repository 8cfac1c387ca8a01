"""Parse raw lines into events (or rejections with a reason) inside Spark's JVM, route each event
to its table and date partition, and shuffle them once by table and partition.

The parser is ``jvm/ParseEvent.java`` and the stage ``jvm/ParseLines.java`` (see jvm_code.py).
An event's flattened fields travel as one binary value (``jvm/FieldCodec.java``);
``segment_lake_decode_fields(fields)`` shows them as a map of kind-tagged text.
"""
from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from segment_lake_contract import DATE_PARTITIONS

from .jvm_code import load_class

DECODE = "segment_lake_decode_fields"
ENCODE = "segment_lake_encode_fields"
FIELD = "segment_lake_field"


def register_codec(spark: SparkSession) -> None:
    """Make ``segment_lake_decode_fields(binary)`` (column -> kind-tagged text, in key order), its
    inverse ``segment_lake_encode_fields(map)`` and ``segment_lake_field(binary, column)`` (one field's text)
    callable in ``spark``."""
    jvm = spark.sparkContext._jvm
    # the session's function registry, not spark.catalog: that would start the Hive metastore
    if spark._jsparkSession.sessionState().functionRegistry().functionExists(
            jvm.org.apache.spark.sql.catalyst.FunctionIdentifier(FIELD)):
        return
    load_class(spark, "FieldCodec")
    udf = spark._jsparkSession.udf()
    # registerJavaFunction needs generic signatures, which Janino does not write: register instances
    udf.register(DECODE, jvm.segmentlake.FieldCodec.Decode(),
                 jvm.org.apache.spark.sql.types.DataType.fromJson(T.MapType(T.StringType(), T.StringType()).json()))
    udf.register(ENCODE, jvm.segmentlake.FieldCodec.Encode(),
                 jvm.org.apache.spark.sql.types.DataType.fromJson(T.BinaryType().json()))
    udf.register(FIELD, jvm.segmentlake.FieldCodec.Field(),
                 jvm.org.apache.spark.sql.types.DataType.fromJson(T.StringType().json()))


def parse_lines(lines: DataFrame, table_prefix: str, date_partition: str, tasks: int) -> DataFrame:
    """``lines`` (value, file, unreadable; see discover.read_lines) -> one row per non-blank line (and one per
    file's unreadable rest, rejected with its reason), in ``tasks`` partitions grouped by table
    and date partition: ``_row`` (unique, in line order within a file), file, reason and raw (for
    rejected lines), table, partition (``day=2024-01-02/hr=03``), the event's own messageId and
    receivedAt as ``_message_id`` and ``_received_at`` (the flattened ``message_id`` and
    ``received_at`` columns are data like any other), fields (binary) and discards."""
    spark = lines.sparkSession
    register_codec(spark)
    stage = spark.sparkContext._jvm.segmentlake.ParseLines.stage
    return DataFrame(stage(spark._jsparkSession, lines.select("value", "file", "unreadable")._jdf, table_prefix,
                           json.dumps(DATE_PARTITIONS[date_partition]), tasks), spark)
