"""The fastest honest DuckDB equivalent of one sync, for `make bench` to compare against.

    python bench/duckdb_equivalent.py --input DIR --output DIR

Reads the gzipped JSON files below DIR directly (one `read_json`, lines that are not JSON objects skipped by
DuckDB's own `ignore_errors`), flattens properties, context and traits into columns (`unnest(..., recursive :=
true)`), names each event's table as the sync does (its type, or track_<event> in snake case), and writes Parquet
partitioned by table, day and hour of receivedAt, in UTC.

It does less than the sync, so its time is a floor the sync is measured against:
- the schema is the one DuckDB detects from the first SAMPLE_LINES lines of each file; keys it did not see there are
  dropped, not added as columns. DuckDB refuses to detect a schema over a sample holding a line that is valid JSON
  but not an object (generated input has `[1,2,3]` lines, as real input can), and a larger sample meets one;
- one schema for every table (each table's files carry every table's columns, nulls where an event lacks them);
- no dedup, no discards, no catalog and no exactly-once state.
"""
from __future__ import annotations

import argparse
import os

import duckdb

SAMPLE_LINES = 100
TABLE = ("CASE WHEN type = 'track' THEN 'track_' || trim(regexp_replace(lower(regexp_replace(event, "
         "'([a-z0-9])([A-Z])', '\\1_\\2', 'g')), '[^a-z0-9]+', '_', 'g'), '_') ELSE type END")
FLATTENED = ("properties", "context", "traits")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    events = (f"read_json('{os.path.join(args.input, '**', '*.gz')}', format = 'newline_delimited', records = true, "
              f"union_by_name = true, ignore_errors = true, sample_size = {SAMPLE_LINES})")
    present = {row[0] for row in connection.execute(f"DESCRIBE SELECT * FROM {events}").fetchall()}
    nested = [column for column in FLATTENED if column in present]
    flatten = "".join(f", unnest({column}, recursive := true)" for column in nested)
    rest = f"* EXCLUDE ({', '.join(nested)})" if nested else "*"
    connection.execute(f"""
        COPY (
            SELECT {rest}{flatten}, {TABLE} AS "table", strftime(receivedAt, '%Y-%m-%d') AS day,
                   strftime(receivedAt, '%H') AS hr
            FROM {events}
            WHERE type IS NOT NULL AND messageId IS NOT NULL AND receivedAt IS NOT NULL
        ) TO '{args.output}' (FORMAT parquet, COMPRESSION snappy, PARTITION_BY ("table", day, hr))""")


if __name__ == "__main__":
    main()
