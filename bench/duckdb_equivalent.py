"""The closest honest DuckDB equivalent of one sync, for `make bench` to compare against.

    python bench/duckdb_equivalent.py --input DIR --output DIR

Reads every gzipped JSON file below DIR (types inferred over all lines, bad lines skipped), names
each event's table as the sync does (its type, or track_<event> in snake case), and writes Parquet
partitioned by table, day and hour of receivedAt, in UTC. It does less than the sync: nested
objects stay Parquet structs instead of flattened columns, and there is no dedup, no discards, no
catalog and no exactly-once state. So its time is a floor the sync is measured against.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import duckdb

TABLE = ("CASE WHEN type = 'track' THEN 'track_' || trim(regexp_replace(lower(regexp_replace(event, "
         "'([a-z0-9])([A-Z])', '\\1_\\2', 'g')), '[^a-z0-9]+', '_', 'g'), '_') ELSE type END")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    files = os.path.join(args.input, "**", "*.gz")
    # DuckDB's JSON reader stops at a line that is not an object (the sync rejects those): keep the
    # object lines in a temporary file, then infer one schema over all of them and write
    objects = os.path.join(tempfile.mkdtemp(prefix="duckdb-bench-"), "objects.json")
    try:
        connection.execute(f"""
            COPY (SELECT line FROM read_csv('{files}', columns = {{'line': 'VARCHAR'}}, header = false, delim = '\x01',
                                            quote = '', escape = '', max_line_size = 100000000)
                  WHERE json_valid(line) AND json_type(line) = 'OBJECT')
            TO '{objects}' (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01')""")
        connection.execute(f"""
            COPY (
                SELECT *, {TABLE} AS "table", strftime(receivedAt, '%Y-%m-%d') AS day, strftime(receivedAt, '%H') AS hr
                FROM read_json('{objects}', format = 'newline_delimited', records = true, sample_size = -1,
                               ignore_errors = true)
                WHERE type IS NOT NULL AND messageId IS NOT NULL AND receivedAt IS NOT NULL
            ) TO '{args.output}' (FORMAT parquet, COMPRESSION snappy, PARTITION_BY ("table", day, hr))""")
    finally:
        shutil.rmtree(os.path.dirname(objects))

if __name__ == "__main__":
    main()
