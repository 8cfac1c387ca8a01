"""Find the input files no earlier successful sync of the source processed, and read their lines."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .storage import LakeStorage


def new_files(storage: LakeStorage, input_uri: str, processed: set[str]) -> list[str]:
    """Files below ``input_uri`` (any folder structure, ``.gz`` or plain) not in ``processed``, sorted."""
    return [f.uri for f in storage.list_files(input_uri) if f.uri not in processed]


def read_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """(value, file): one row per line; gzip files are decompressed by their ``.gz`` extension."""
    return spark.read.text(files).select("value", F.input_file_name().alias("file"))
