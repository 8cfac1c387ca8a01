"""Route events to tables and date partitions (from receivedAt, in UTC)."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# date partition option -> partition keys and the receivedAt format of each
DATE_PARTITIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "day_hour": (("day", "yyyy-MM-dd"), ("hr", "HH")),
    "year_month_day_hour": (("year", "yyyy"), ("month", "MM"), ("day", "dd"), ("hr", "HH")),
    "year_month_day": (("year", "yyyy"), ("month", "MM"), ("day", "dd")),
    "day": (("day", "yyyy-MM-dd"),),
}


def partition_keys(date_partition: str) -> list[str]:
    return [key for key, _ in DATE_PARTITIONS[date_partition]]


def table_name(table_prefix: str, segment_type: str) -> str:
    return f"{table_prefix}{segment_type}"


def route(events: DataFrame, table_prefix: str, date_partition: str) -> DataFrame:
    """Adds ``table`` and the partition key columns."""
    columns: list[Column] = [F.concat(F.lit(table_prefix), F.col("segment_type")).alias("table")]
    columns += [F.date_format("_received_at", fmt).alias(key) for key, fmt in DATE_PARTITIONS[date_partition]]
    return events.select("*", *columns)


def partition_path(keys: list[str], values: tuple[str, ...]) -> str:
    return "/".join(f"{k}={v}" for k, v in zip(keys, values))
