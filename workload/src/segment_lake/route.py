"""Routing: an event's table is the table prefix plus its type (``track_<event>`` for a track),
and its date partition comes from its receivedAt, in UTC (``contract.DATE_PARTITIONS``).
``jvm/ParseLines.java`` applies it."""
from __future__ import annotations

from segment_lake_contract import DATE_PARTITIONS


def partition_keys(date_partition: str) -> list[str]:
    return [key for key, _ in DATE_PARTITIONS[date_partition]]


def partition_path(keys: list[str], values: tuple[str, ...]) -> str:
    return "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))


def partition_values(path: str) -> tuple[str, ...]:
    """The values of a partition path, in key order: ``day=2024-01-02/hr=03`` -> (2024-01-02, 03)."""
    return tuple(part.split("=", 1)[1] for part in path.split("/"))
