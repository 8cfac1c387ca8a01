"""An event's flattened fields travel through the stages as one binary value (``jvm/FieldCodec.java``); these SQL
functions read and write it."""
from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import types as T

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
