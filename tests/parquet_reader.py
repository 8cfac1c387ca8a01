"""An independent reader of the lake's files: pyarrow, reading them as docs/querying.md tells a user to (Parquet
INT96 timestamps in microseconds, the partition keys from the folders' names as strings), for the tests that must
not trust the engine that wrote them (Spark)."""
from __future__ import annotations

import re
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

FORMAT = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))
_TYPES = {"string": pa.string(), "bigint": pa.int64(), "boolean": pa.bool_(), "timestamp": pa.timestamp("us"),
          "double": pa.float64()}


def arrow_type(hive_type: str) -> pa.DataType:
    """The Arrow type of a catalog (Hive) column type."""
    decimal = re.fullmatch(r"decimal\((\d+),(\d+)\)", hive_type)
    return pa.decimal128(int(decimal[1]), int(decimal[2])) if decimal else _TYPES[hive_type]


def filesystem(uri: str, endpoint: str | None = None) -> tuple[pafs.FileSystem, str]:
    """The file system of a lake URI (``file:`` or ``s3a://`` on ``endpoint``, moto's) and the path in it."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return pafs.LocalFileSystem(), parsed.path
    return (pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", access_key="testing", secret_key="testing",
                              region="us-east-1"), f"{parsed.netloc}{parsed.path}")


def read_rows(uri: str, columns: list[tuple[str, str]], keys=("day", "hr"), endpoint: str | None = None) -> list[dict]:
    """Every row of the table folder ``uri``, read with the catalog's ``columns`` (a file written before a column
    was added has it null) and the partition ``keys`` from the folder names, as dicts in message_id order."""
    fs, path = filesystem(uri, endpoint)
    key_fields = [(key, pa.string()) for key in keys]
    schema = pa.schema([(name, arrow_type(kind)) for name, kind in columns] + key_fields)
    dataset = ds.dataset(path, format=FORMAT, filesystem=fs, schema=schema,
                         partitioning=ds.partitioning(pa.schema(key_fields), flavor="hive"))
    return sorted(dataset.to_table().to_pylist(), key=lambda r: (r["message_id"], str(r["received_at"])))


def file_schemas(uri: str, endpoint: str | None = None) -> dict[str, pq.ParquetSchema]:
    """The Parquet schema (names and physical types, in the file's order) of each data file below ``uri``, by its
    path relative to ``uri``."""
    fs, path = filesystem(uri, endpoint)
    files = [info.path for info in fs.get_file_info(pafs.FileSelector(path, recursive=True))
             if info.path.endswith(".parquet")]
    schemas = {}
    for file in sorted(files):
        with fs.open_input_file(file) as stream:
            schemas[file[len(path):].lstrip("/")] = pq.ParquetFile(stream).schema
    return schemas


def column_values(files: list[str], column: str = "message_id") -> list:
    """The string ``column`` of every row of the Parquet ``files`` (file: URIs), in one read."""
    paths = [urlparse(uri).path for uri in files]
    dataset = ds.dataset(paths, format=FORMAT, schema=pa.schema([(column, pa.string())]))
    return dataset.to_table(columns=[column]).column(column).to_pylist()
