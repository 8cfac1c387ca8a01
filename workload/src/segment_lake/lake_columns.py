"""Column rules every writer of the lake's files shares (the sync, compaction and user deletion): which of Segment's
fields are always timestamps, and the Parquet settings of each file. No imports from the package: every layer may
use it."""

# Segment's timestamp fields are timestamps whatever a run's values look like.
ALWAYS_TIMESTAMP = ("timestamp", "original_timestamp", "sent_at", "received_at")

# A column whose every value differs (an event's id and times) gains nothing from a Parquet dictionary
# but costs a hash lookup per value until Parquet gives up on it: a fifth of a sync's CPU at 1M events.
NO_DICTIONARY = ("message_id",) + ALWAYS_TIMESTAMP
PARQUET_SETTINGS = {f"parquet.enable.dictionary#{column}": "false" for column in NO_DICTIONARY}

# An Iceberg table's files (iceberg_tables.py) hold timestamps as Iceberg's spec does, INT64 microseconds, not as
# Spark's default INT96, which Iceberg readers other than Spark's need not read.
ICEBERG_PARQUET_SETTINGS = {**PARQUET_SETTINGS, "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}
