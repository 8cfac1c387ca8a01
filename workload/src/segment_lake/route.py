"""Routing: an event's table is the table prefix plus its type (``track_<event>`` for a track),
and its date partition comes from its receivedAt, in UTC (``contract.DATE_PARTITIONS``).
``jvm/ParseLines.java`` applies it."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from segment_lake_contract import DATE_PARTITIONS


def partition_keys(date_partition: str) -> list[str]:
    return [key for key, _ in DATE_PARTITIONS[date_partition]]


def partition_path(keys: list[str], values: tuple[str, ...]) -> str:
    return "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))


def partition_values(path: str) -> tuple[str, ...]:
    """The values of a partition path, in key order: ``day=2024-01-02/hr=03`` -> (2024-01-02, 03)."""
    return tuple(part.split("=", 1)[1] for part in path.split("/"))


def partition_span(keys: Sequence[tuple[str, str]], values: Sequence[str]) -> tuple[datetime, timedelta] | None:
    """When a partition's time begins (UTC) and how long it lasts, from its keys with their patterns
    (``DATE_PARTITIONS``, or their day-level part) and its values; None when the values are not a time."""
    parts = dict(zip((pattern for _, pattern in keys), values, strict=True))
    try:
        if "yyyy-MM-dd" in parts:
            start = datetime.strptime(parts["yyyy-MM-dd"], "%Y-%m-%d")
        else:
            start = datetime(int(parts["yyyy"]), int(parts["MM"]), int(parts["dd"]))
        if "HH" in parts:
            return start.replace(hour=int(parts["HH"]), tzinfo=UTC), timedelta(hours=1)
        return start.replace(tzinfo=UTC), timedelta(days=1)
    except (KeyError, ValueError):
        return None
