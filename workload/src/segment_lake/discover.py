"""Find the input files no earlier successful sync of the source processed, and read their lines."""
from __future__ import annotations

from datetime import UTC, date, datetime

from pyspark.sql import DataFrame, SparkSession

from .jvm_code import load_class
from .storage import FileInfo, LakeStorage, relative_path

DAY_MS = 86_400_000


def new_files(storage: LakeStorage, input_uri: str, processed: set[str]) -> list[FileInfo]:
    """Files below ``input_uri`` (any folder structure, ``.gz`` or plain) not in ``processed``, sorted."""
    return [f for f in storage.list_files(input_uri) if f.uri not in processed]


def received_day(path: str) -> date | None:
    """The day of the first folder of ``path`` named as Segment's S3 destination names a day, its first millisecond
    since the epoch (``1704153600000/...`` is 2024-01-02); None when no folder is."""
    for folder in path.split("/")[:-1]:
        if folder.isdigit() and len(folder) == 13 and int(folder) % DAY_MS == 0:
            return datetime.fromtimestamp(int(folder) / 1000, UTC).date()
    return None


def other_sources(relative_paths: list[str], source_id: str) -> list[str]:
    """The folders that stand where a source's folder stands in Segment's S3 destination layout
    (``<source>/<day-epoch-ms>/...``), other than ``source_id``'s: an input one folder too high holds them."""
    found = set()
    for path in relative_paths:
        folders = path.split("/")[:-1]
        day = next((i for i, folder in enumerate(folders) if received_day(folder + "/x")), None)
        if day and folders[day - 1] != source_id:
            found.add(folders[day - 1])
    return sorted(found)


def replay_files(storage: LakeStorage, input_uri: str, first: date, last: date) -> list[FileInfo]:
    """Files below ``input_uri`` in the day folders from ``first`` to ``last``, processed or not, sorted."""
    chosen = []
    for info in storage.list_files(input_uri):
        day = received_day(relative_path(info.uri, input_uri))
        if day is not None and first <= day <= last:
            chosen.append(info)
    return chosen


def read_lines(spark: SparkSession, files: list[str], sizes: list[int]) -> DataFrame:
    """(value, file, unreadable): one row per line, gzip files decompressed by their ``.gz`` extension, in
    tasks of about equal bytes (``sizes``). A file that breaks off (truncated or corrupt, or removed since it
    was listed) gives its lines up to the fault and one row with a null value and ``unreadable`` saying
    where and why (``jvm/ReadFiles.java``)."""
    load_class(spark, "ReadFiles")
    stage = spark.sparkContext._jvm.segmentlake.ReadFiles.stage
    return DataFrame(stage(spark._jsparkSession, list(files), [int(size) for size in sizes]), spark)
