"""The storage port: every read and write of the lake's files goes through a ``LakeStorage``, DataFrame writes and
the tables' writer included, so that tests can record each write and fail at any one (tests/recording_environment.py).
``HadoopStorage`` reaches them through Hadoop's FileSystem, so the same code reaches local paths, ``file://``,
``s3://`` on EMR and ``s3a://`` anywhere Spark runs."""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol
from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from . import iceberg_tables
from .errors import InsufficientPermissions
from .iceberg_tables import DataFile, Maintenance
from .parquet_tables import TablePlan, WrittenFile, write_parquet_tables
from .pool import run_all
from .uris import is_hidden, shown


def _s3_without_spark():
    """boto3's S3 client at the endpoint the environment names (tests, MinIO), else AWS's."""
    import boto3

    return boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"))


def write_text_without_spark(uri: str, text: str) -> None:
    """Write a small file without Spark's JVM (to report a sync whose JVM died): local paths with
    Python, ``s3://`` and ``s3a://`` with boto3."""
    parsed = urlparse(uri)
    if parsed.scheme in ("s3", "s3a"):
        _s3_without_spark().put_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"),
                                                             Body=text.encode("utf-8"))
        return
    os.makedirs(os.path.dirname(parsed.path), exist_ok=True)
    with open(parsed.path, "w", encoding="utf-8") as file:
        file.write(text)


def read_text_without_spark(uri: str) -> str | None:
    """A small file's text without Spark's JVM (to decide how to open the session), or None when it does not exist:
    local paths with Python, ``s3://`` and ``s3a://`` with boto3."""
    parsed = urlparse(uri)
    if parsed.scheme in ("s3", "s3a"):
        client = _s3_without_spark()
        try:
            return client.get_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))["Body"].read().decode("utf-8")
        except client.exceptions.NoSuchKey:
            return None
    try:
        with open(parsed.path, encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        return None


# files copied at once on S3: at 30 ms a request, 1,000 files take about 2 s (one after another: 30 s)
COPY_THREADS = 16
S3_SCHEMES = ("s3", "s3a", "s3n")


def bucket_and_key(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    return parsed.netloc, parsed.path.lstrip("/")


# what a copy takes over from its source: S3 encrypts a copy by the request (or the bucket's default), not the source
ENCRYPTION = ("ServerSideEncryption", "SSEKMSKeyId", "BucketKeyEnabled")  # HeadObject's fields, CopyObject's arguments
COPY_LIMIT = "larger than the maximum allowable size"  # CopyObject takes up to 5 GB


def _copy_object(client, source: str, target: str, encryption: dict) -> None:
    """One server-side copy (over 5 GB, a multipart copy), encrypted as ``encryption`` says; a refusal names the
    object and the actions."""
    from botocore.exceptions import ClientError  # boto3 is imported only by a lake on S3

    (source_bucket, source_key), (bucket, key) = bucket_and_key(source), bucket_and_key(target)
    try:
        client.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": source_bucket, "Key": source_key}, **encryption)
    except ClientError as error:
        code, message = error.response.get("Error", {}).get("Code"), error.response.get("Error", {}).get("Message") or ""
        if code == "InvalidRequest" and COPY_LIMIT in message:
            client.copy({"Bucket": source_bucket, "Key": source_key}, bucket, key, ExtraArgs=encryption)
            return
        if code in ("AccessDenied", "403"):
            actions = "s3:GetObject and s3:PutObject"
            raise InsufficientPermissions(
                f"access denied to {actions} (CopyObject) on {key} from {source_key}: {message or code}; give the EMR "
                f"instance role {actions} on the lake bucket's objects (and the use of their KMS key)") from error
        raise


@dataclass(frozen=True)
class FileInfo:
    uri: str
    size: int


@dataclass(frozen=True)
class FrameWrite:
    """How a DataFrame is written: its format, Spark's save mode, the columns of its partition folders and the
    writer's options (such as lake_columns.PARQUET_SETTINGS)."""

    format: str = "parquet"
    mode: str = "errorifexists"
    partition_by: tuple[str, ...] = ()
    options: Mapping[str, object] = field(default_factory=dict)


PARQUET = FrameWrite()
OVERWRITE = FrameWrite(mode="overwrite")


class LakeStorage(Protocol):
    """The lake's files. Reads first, then the writes (``WRITES``), each a step a crash can fall between."""

    def exists(self, uri: str) -> bool: ...

    def list_files(self, uri: str) -> list[FileInfo]:
        """Every data file below ``uri`` (recursively), sorted; none when it does not exist."""

    def glob(self, pattern: str) -> list[str]:
        """The paths matching a Hadoop glob (``*``, ``{a,b}``), sorted; none when nothing matches."""

    def list_folders(self, uri: str) -> list[str]:
        """The names of the folders right below ``uri``; none when it does not exist."""

    def size(self, uri: str) -> int | None:
        """The file's size in bytes, or None when it does not exist."""

    def parquet_footer(self, uri: str) -> tuple[StructType, int]:
        """The Spark schema a Parquet file was written with (or for another writer's, its schema as Spark reads it)
        and its rows, from its footer (without a Spark job)."""

    def from_spark_uri(self, spark_uri: str) -> str:
        """A file named as Spark's input_file_name() names it (a percent-encoded URI) as ``list_files`` names it."""

    def read_text(self, uri: str) -> str: ...

    def write_text(self, uri: str, text: str) -> None:
        """Write (or replace) a small file so that readers, and a run after a kill, see all of it or none."""

    def write_frame(self, frame: DataFrame, uri: str, how: FrameWrite = PARQUET) -> None:
        """Write a DataFrame's files into the folder ``uri``, as ``how`` says."""

    def write_tables(self, events: DataFrame, plan: TablePlan) -> list[WrittenFile]:
        """Write a run's tables, as ``plan`` says, below its stage folder (the table format's writer)."""

    def replace(self, source: str, target: str) -> None:
        """Replace the file ``target`` with the file ``source`` so that a reader sees the old bytes or the new."""

    def copy(self, source: str, target: str) -> None:
        """Copy a file over ``target``; ``source`` stays."""

    def delete(self, uri: str, recursive: bool = False) -> None: ...

    def publish_files(self, moves: list[tuple[str, str]]) -> None:
        """Put each (source, target) file at its target, replacing it, for a caller that deletes the sources next."""

    def move(self, source: str, target: str) -> None:
        """Move a file, replacing ``target``; creates the parent folder."""

    def commit_table(self, database: str, table: str, files: list[DataFile], run_id: str) -> bool:
        """Commit an Iceberg table's ``files`` (in place already) in one snapshot of ``run_id``, unless the table has
        one: then False (iceberg_tables.py)."""

    def maintain_table(self, table: str, partitions: list[tuple[str, ...]], target_bytes: int,
                       expire_before: datetime) -> Maintenance:
        """Compact an Iceberg table (``database.table``): merge the files of ``partitions``, expire the snapshots
        before ``expire_before`` and remove orphan files (iceberg_tables.maintain)."""

    def delete_rows(self, table: str, keys_uri: str, deletion_id: str) -> bool:
        """Delete the rows of an Iceberg table (``database.table``) keyed by the files at ``keys_uri`` in one
        snapshot of ``deletion_id``, unless the table has one: then False (iceberg_tables.py)."""


READS = ("exists", "list_files", "glob", "list_folders", "size", "parquet_footer", "from_spark_uri", "read_text")
WRITES = ("write_text", "write_frame", "write_tables", "replace", "copy", "delete", "publish_files", "move",
          "commit_table", "delete_rows", "maintain_table")


class HadoopStorage:
    """LakeStorage through Hadoop's FileSystem in Spark's JVM (and boto3 for S3's server-side copies)."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark  # Iceberg's commits go through its catalog
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        # resolved once: py4j looks up every dotted name on the whole class path, each time
        self._path_class = self._jvm.org.apache.hadoop.fs.Path
        self._s3_clients: dict[str | None, object] = {}  # by endpoint (None: AWS's)

    def _path(self, uri: str):
        return self._path_class(uri)

    def _fs(self, uri: str):
        return self._path(uri).getFileSystem(self._conf)

    def exists(self, uri: str) -> bool:
        return self._fs(uri).exists(self._path(uri))

    def list_files(self, uri: str) -> list[FileInfo]:
        """Every data file below ``uri`` (recursively), sorted; none when it does not exist."""
        if not self.exists(uri):
            return []
        found = []
        iterator = self._fs(uri).listFiles(self._path(uri), True)
        while iterator.hasNext():
            status = iterator.next()
            path = status.getPath()
            if not any(is_hidden(part) for part in path.toUri().getPath().split("/")[-1:]):
                found.append(FileInfo(path.toString(), status.getLen()))
        return sorted(found, key=lambda f: f.uri)

    def glob(self, pattern: str) -> list[str]:
        """The paths matching a Hadoop glob (``*``, ``{a,b}``), sorted; none when nothing matches."""
        return sorted(status.getPath().toString() for status in self._fs(pattern).globStatus(self._path(pattern)) or [])

    def list_folders(self, uri: str) -> list[str]:
        """The names of the folders right below ``uri`` (one listing; on S3 one request per 1,000); none when it
        does not exist."""
        if not self.exists(uri):
            return []
        return sorted(status.getPath().getName() for status in self._fs(uri).listStatus(self._path(uri))
                      if status.isDirectory())

    def size(self, uri: str) -> int | None:
        """The file's size in bytes, or None when it does not exist."""
        try:
            return self._fs(uri).getFileStatus(self._path(uri)).getLen()
        except Exception as error:  # py4j wraps FileNotFoundException
            if "FileNotFoundException" in str(error):
                return None
            raise

    def parquet_footer(self, uri: str) -> tuple[StructType, int]:
        """The Spark schema a Parquet file was written with and its rows, from its footer (without a Spark job); for a
        file Iceberg wrote (a compaction's, a deletion's), which keeps no Spark schema, its Parquet schema as Spark
        reads it."""
        jvm = self._jvm
        footer = jvm.org.apache.parquet.hadoop.ParquetFileReader.readFooter(self._conf, self._path(uri))
        written = footer.getFileMetaData().getKeyValueMetaData().get("org.apache.spark.sql.parquet.row.metadata")
        if written is None:
            converter = jvm.org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter(
                jvm.org.apache.spark.sql.internal.SQLConf.get())
            written = converter.convert(footer.getFileMetaData().getSchema()).json()
        return StructType.fromJson(json.loads(written)), sum(block.getRowCount() for block in footer.getBlocks())

    def from_spark_uri(self, spark_uri: str) -> str:
        """A file named as Spark's input_file_name() names it (a percent-encoded URI) as ``list_files`` names it."""
        return self._path_class(self._jvm.java.net.URI.create(spark_uri)).toString()

    def read_text(self, uri: str) -> str:
        stream = self._fs(uri).open(self._path(uri))
        try:
            return self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()

    def write_text(self, uri: str, text: str) -> None:
        """Write (or replace) a small file so that readers, and a run after a kill, see all of it or none: on S3
        one PUT; on a local disk a file beside it, renamed over it."""
        fs, path = self._fs(uri), self._path(uri)
        if fs.getScheme() != "file":
            self._write(fs, path, text)
            return
        temporary = self._path_class(path.getParent(), f".{path.getName()}.{uuid.uuid4().hex}.tmp")
        self._write(fs.getRawFileSystem(), temporary, text)
        self._rename_over(fs, temporary, path)

    def write_frame(self, frame: DataFrame, uri: str, how: FrameWrite = PARQUET) -> None:
        (frame.write.format(how.format).mode(how.mode).options(**how.options).partitionBy(*how.partition_by)
         .save(uri))

    def write_tables(self, events: DataFrame, plan: TablePlan) -> list[WrittenFile]:
        return write_parquet_tables(events, plan)

    def replace(self, source: str, target: str) -> None:
        """Replace the file ``target`` with the file ``source`` so that a reader sees the old bytes or the new, never
        neither: on a local disk a rename over it; elsewhere (S3) a copy over the same key, which S3 makes visible
        at once, then ``source`` is removed. Repeatable while ``source`` exists."""
        fs, path = self._fs(target), self._path(target)
        if fs.getScheme() == "file":
            self._rename_over(fs, self._path(source), path)
            return
        self.copy(source, target)
        self.delete(source)

    def copy(self, source: str, target: str) -> None:
        """Copy a file over ``target`` (on S3 through this process); ``source`` stays."""
        jvm = self._jvm.org.apache.hadoop.fs
        if not jvm.FileUtil.copy(self._fs(source), self._path(source), self._fs(target), self._path(target), False, True,
                                 self._conf):
            raise OSError(f"could not copy {source} to {target}")

    @staticmethod
    def _rename_over(fs, source, target) -> None:
        """One rename of the raw file system (without Hadoop's .crc files, whose two renames would not be one)."""
        raw = fs.getRawFileSystem()
        raw.delete(fs.getChecksumFile(target), False)  # an old checksum would not match the new bytes
        if not raw.rename(source, target):
            raise OSError(f"could not replace {target}")
        raw.delete(fs.getChecksumFile(source), False)

    @staticmethod
    def _write(fs, path, text: str) -> None:
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def delete(self, uri: str, recursive: bool = False) -> None:
        if self.exists(uri):
            self._fs(uri).delete(self._path(uri), recursive)

    def publish_files(self, moves: list[tuple[str, str]]) -> None:
        """Puts each (source, target) file at its target, replacing it, for a caller that deletes the sources' folder
        next. On S3, which has no rename (s3a's costs 10 to 20 requests of probes, a copy and deletes), one
        server-side copy each, in a pool of ``COPY_THREADS``, with no existence or folder probe (S3 has no folders),
        encrypted as the staged files are (one HEAD of the first): the sources stay until their folder is deleted, so
        a publish cut short is repeated whole. On a local disk a rename each, by this process (through Spark's JVM,
        four calls a file: 5 ms)."""
        scheme = urlparse(moves[0][1]).scheme if moves else ""
        if scheme == "file":
            for source, target in moves:
                os.makedirs(os.path.dirname(shown(target)), exist_ok=True)
                os.replace(shown(source), shown(target))
            return
        if scheme not in S3_SCHEMES:
            for source, target in moves:
                self.move(source, target)
            return
        client = self._s3(bucket_and_key(moves[0][1])[0])
        # the staged files are encrypted as their writer (EMRFS under the cluster's key, or s3a) was told to: one HEAD
        # reads how, and every copy asks for the same
        source_bucket, source_key = bucket_and_key(moves[0][0])
        head = client.head_object(Bucket=source_bucket, Key=source_key)
        encryption = {field: head[field] for field in ENCRYPTION if head.get(field)}
        run_all(_copy_object, [(client, source, target, encryption) for source, target in moves], COPY_THREADS,
                "segment-lake-publish")

    def _s3(self, bucket: str):
        """boto3's S3 client, at the endpoint Spark's s3a uses for ``bucket`` when one is set (tests, MinIO)."""
        endpoint = self._conf.get(f"fs.s3a.bucket.{bucket}.endpoint") or self._conf.get("fs.s3a.endpoint")
        endpoint = endpoint if endpoint and "://" in endpoint else None
        if endpoint not in self._s3_clients:
            import boto3
            from botocore.config import Config

            path_style = (self._conf.get("fs.s3a.path.style.access") or "").lower() == "true"
            # the region: the CLI's --aws-region (AWS_DEFAULT_REGION), or boto3's configuration; an unreachable
            # endpoint fails in seconds, not a minute a try
            self._s3_clients[endpoint] = boto3.client("s3", endpoint_url=endpoint, config=Config(
                max_pool_connections=COPY_THREADS, retries={"mode": "standard", "max_attempts": 10}, connect_timeout=10,
                s3={"addressing_style": "path"} if path_style else None))
        return self._s3_clients[endpoint]

    def move(self, source: str, target: str) -> None:
        """Move a file, replacing ``target``; creates the parent folder."""
        fs = self._fs(target)
        if fs.exists(self._path(target)):
            fs.delete(self._path(target), False)
        fs.mkdirs(self._path(target).getParent())
        if not fs.rename(self._path(source), self._path(target)):
            raise OSError(f"could not move {source} to {target}")

    def commit_table(self, database: str, table: str, files: list[DataFile], run_id: str) -> bool:
        return iceberg_tables.commit(self._spark, database, table, files, run_id)

    def delete_rows(self, table: str, keys_uri: str, deletion_id: str) -> bool:
        return iceberg_tables.delete_rows(self._spark, table, keys_uri, deletion_id)

    def maintain_table(self, table: str, partitions: list[tuple[str, ...]], target_bytes: int,
                       expire_before: datetime) -> Maintenance:
        return iceberg_tables.maintain(self._spark, table, partitions, target_bytes, expire_before)
