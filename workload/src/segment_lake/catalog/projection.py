"""Partition projection: an event table whose date partitions Athena computes from the table's parameters instead of
reading them from Glue, so the catalog holds one object per table, not one per table and hour.

Only Athena reads these parameters: Spark and Hive on EMR, Redshift Spectrum and Glue jobs see such a table without
partitions (docs/lake-format.md, Partition projection). Whether a table is projected is its own parameter, set when
the sync creates it; a run then only widens the year and date ranges to the partitions it wrote.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

ENABLED = "projection.enabled"
# formats of the date partitions' keys (segment_lake_contract.DATE_PARTITIONS) with a fixed range of two digits
FIXED = {"MM": (1, 12), "dd": (1, 31), "HH": (0, 23)}


def is_projected(parameters: Mapping[str, str] | None) -> bool:
    return (parameters or {}).get(ENABLED, "").strip().lower() == "true"


def projection_parameters(layout: Sequence[tuple[str, str]], location: str, partitions: Sequence[Sequence[str]],
                          current: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parameters that project partitions of ``layout`` ((key, Java date format), in order) at ``key=value/...``
    below ``location``, with ranges that hold both ``partitions`` (values in key order) and the ranges ``current``
    (the table's parameters) already holds. A ``yyyy-MM-dd`` key is a date up to the query's day (NOW), a year an
    integer range, a month, day or hour a fixed range of two digits."""
    current = current or {}
    parameters = {ENABLED: "true", "storage.location.template": "/".join(
        [location.rstrip("/")] + [f"{key}=${{{key}}}" for key, _ in layout])}
    for index, (key, form) in enumerate(layout):
        values = [partition[index] for partition in partitions]
        held = current.get(f"projection.{key}.range", "")
        if "," in held:
            values += [bound.strip() for bound in held.split(",") if bound.strip() != "NOW"]
        if form == "yyyy-MM-dd":
            parameters.update({f"projection.{key}.type": "date", f"projection.{key}.format": form,
                               f"projection.{key}.range": f"{min(values, default='NOW')},NOW",
                               f"projection.{key}.interval": "1", f"projection.{key}.interval.unit": "DAYS"})
        elif form == "yyyy":  # a table made with no partitions (none here) gets its range with its first year
            parameters.update({f"projection.{key}.type": "integer", f"projection.{key}.digits": "4",
                               **({f"projection.{key}.range": f"{min(values)},{max(values)}"} if values else {})})
        else:
            low, high = FIXED[form]
            parameters.update({f"projection.{key}.type": "integer", f"projection.{key}.digits": "2",
                               f"projection.{key}.range": f"{low:02d},{high:02d}"})
    return parameters


def changed_parameters(layout: Sequence[tuple[str, str]], location: str, partitions: Sequence[Sequence[str]],
                       current: Mapping[str, str]) -> dict[str, str]:
    """The projection parameters of a projected table (``current``: its parameters) that a run's ``partitions`` change;
    empty when its ranges hold them already."""
    wanted = projection_parameters(layout, location, partitions, current)
    return {key: value for key, value in wanted.items() if current.get(key) != value}
