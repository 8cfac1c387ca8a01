"""Find the input files no earlier successful sync of the source processed, and read their lines."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from .jvm_code import load_class
from .storage import FileInfo, LakeStorage


def new_files(storage: LakeStorage, input_uri: str, processed: set[str]) -> list[FileInfo]:
    """Files below ``input_uri`` (any folder structure, ``.gz`` or plain) not in ``processed``, sorted."""
    return [f for f in storage.list_files(input_uri) if f.uri not in processed]


def read_lines(spark: SparkSession, files: list[str], sizes: list[int]) -> DataFrame:
    """(value, file, unreadable): one row per line, gzip files decompressed by their ``.gz`` extension, in
    tasks of about equal bytes (``sizes``). A file that breaks off (truncated or corrupt, or removed since it
    was listed) gives its lines up to the fault and one row with a null value and ``unreadable`` saying
    where and why (``jvm/ReadFiles.java``)."""
    load_class(spark, "ReadFiles")
    stage = spark.sparkContext._jvm.segmentlake.ReadFiles.stage
    return DataFrame(stage(spark._jsparkSession, list(files), [int(size) for size in sizes]), spark)
