"""Two independent readers of an Iceberg table, from its newest metadata file alone: pyiceberg (`StaticTable`) and
DuckDB's `iceberg_scan` (DuckDB 1.5.5 with its extension wheels, which make setup installs apart in
$SEGMENT_LAKE_DUCKDB_ICEBERG, so DuckDB reads in a process of its own). Rows compare as sorted JSON."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC
from pathlib import Path
from urllib.parse import urlparse

# set to iceberg for a run of tests whose Spark opens with Iceberg on the embedded catalog (test_contract_on_iceberg.py
# starts one), to iceberg-glue for one whose Spark opens with Iceberg's Glue catalog (test_iceberg_on_emr.py's)
TESTS_TABLE_FORMAT = "SEGMENT_LAKE_TEST_TABLE_FORMAT"


def spark_with_iceberg() -> bool:
    return os.environ.get(TESTS_TABLE_FORMAT) == "iceberg"


def spark_with_iceberg_in_glue() -> bool:
    return os.environ.get(TESTS_TABLE_FORMAT) == "iceberg-glue"


def newest_metadata(folder: Path) -> Path:
    """A table's newest metadata file (Iceberg numbers them in order: 00000-..., 00001-...)."""
    return max((folder / "metadata").glob("*.metadata.json"))


def comparable(rows: list[dict]) -> list[str]:
    """Rows as sorted JSON, timestamps as UTC instants whatever their Parquet type."""
    def value(v):  # a naive timestamp (Parquet's INT96, pyarrow's) is UTC
        if hasattr(v, "astimezone"):
            return (v if v.tzinfo else v.replace(tzinfo=UTC)).timestamp()
        return v
    return sorted(json.dumps({k: value(v) for k, v in row.items()}, sort_keys=True, default=str) for row in rows)


def pyiceberg_table(folder: Path):
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(str(newest_metadata(folder)))


def iceberg_rows(uri: str) -> list[dict]:
    """The rows of the Iceberg table at ``uri`` (a ``file:`` folder) as pyiceberg reads them, timestamps as naive UTC
    (as the Parquet lake's readers give them), in (message_id, received_at) order."""
    rows = pyiceberg_table(Path(urlparse(uri).path)).scan().to_arrow().to_pylist()
    rows = [{k: v.astimezone(UTC).replace(tzinfo=None) if getattr(v, "tzinfo", None) else v for k, v in row.items()}
            for row in rows]
    return sorted(rows, key=lambda r: (r["message_id"], str(r["received_at"])))


def duckdb_rows(folders: list[Path]) -> list[list[str]]:
    """Each table's rows as DuckDB reads them (comparable), in one process for all the tables."""
    packages = os.environ.get("SEGMENT_LAKE_DUCKDB_ICEBERG", "")
    assert os.path.isdir(packages), "SEGMENT_LAKE_DUCKDB_ICEBERG names no folder: run the tests through make test"
    result = subprocess.run([sys.executable, __file__, *(str(newest_metadata(f)) for f in folders)],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([packages, str(Path(__file__).parent)])})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def _scan(metadata_files: list[str]) -> list[list[str]]:
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg

    assert duckdb.__version__ == "1.5.5", duckdb.__version__  # the extensions' own version, not the project's
    connection = duckdb.connect()
    for extension, name in ((duckdb_extension_avro, "avro"), (duckdb_extension_iceberg, "iceberg")):  # avro first
        [path] = Path(extension.__file__).parent.glob(f"extensions/*/{name}.duckdb_extension")
        connection.execute(f"LOAD '{path}'")
    tables = []
    for metadata in metadata_files:
        cursor = connection.execute("SELECT * FROM iceberg_scan(?)", [metadata])
        names = [column[0] for column in cursor.description]
        tables.append(comparable([dict(zip(names, row, strict=True)) for row in cursor.fetchall()]))
    return tables


if __name__ == "__main__":
    print(json.dumps(_scan(sys.argv[1:])))
