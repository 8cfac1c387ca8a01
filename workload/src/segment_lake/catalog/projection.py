"""Partition projection: an event table whose date partitions Athena computes from the table's parameters instead of
reading them from Glue, so the catalog holds one object per table, not one per table and hour.

Only Athena reads these parameters: Spark and Hive on EMR, Redshift Spectrum and Glue jobs see such a table without
partitions (docs/lake-format.md, Partition projection). Whether a table is projected is its own parameter, set when
the sync creates it. A run then only widens the year and date ranges to the partitions it wrote, and never narrows
them (nor touches a range given relative to NOW, which its owner manages). Ranges stay within the hours Segment can
have received events (2011 to tomorrow, UTC): a partition outside them (a corrupt receivedAt) would make Athena
enumerate millions of hours for every query, so it stays in the lake, unprojected, and the run says so.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta

ENABLED = "projection.enabled"
EARLIEST = date(2011, 1, 1)  # Segment received no event before
# formats of the date partitions' keys (segment_lake_contract.DATE_PARTITIONS) with a fixed range of two digits
FIXED = {"MM": (1, 12), "dd": (1, 31), "HH": (0, 23)}


def is_projected(parameters: Mapping[str, str] | None) -> bool:
    return (parameters or {}).get(ENABLED, "").strip().lower() == "true"


def outside(layout: Sequence[tuple[str, str]], partitions: Sequence[Sequence[str]],
            today: date) -> list[tuple[str, ...]]:
    """The ``partitions`` (values of ``layout``'s keys) dated before 2011 or after tomorrow."""
    late = today + timedelta(days=1)
    found = []
    for values in partitions:
        for (_, form), value in zip(layout, values, strict=True):
            if (form == "yyyy-MM-dd" and not EARLIEST.isoformat() <= value <= late.isoformat()) or (
                    form == "yyyy" and not EARLIEST.year <= int(value) <= late.year):
                found.append(tuple(values))
                break
    return found


def projection_parameters(layout: Sequence[tuple[str, str]], location: str, partitions: Sequence[Sequence[str]],
                          today: date) -> dict[str, str]:
    """The parameters of a new table that project partitions of ``layout`` ((key, Java date format), in order) at
    ``key=value/...`` below ``location``, with ranges that hold ``partitions`` (values in key order) but those
    ``outside``. A ``yyyy-MM-dd`` key is a date up to the query's next day (NOW+1DAYS: a clock a little ahead), a year
    an integer range, a month, day or hour a fixed range of two digits."""
    parameters = {ENABLED: "true", "storage.location.template": "/".join(
        [location.rstrip("/")] + [f"{key}=${{{key}}}" for key, _ in layout])}
    for key, form in layout:
        if form == "yyyy-MM-dd":
            parameters.update({f"projection.{key}.type": "date", f"projection.{key}.format": form,
                               f"projection.{key}.interval": "1", f"projection.{key}.interval.unit": "DAYS"})
        else:
            parameters.update({f"projection.{key}.type": "integer", f"projection.{key}.digits": str(len(form))})
            if form in FIXED:
                parameters[f"projection.{key}.range"] = ",".join(f"{bound:02d}" for bound in FIXED[form])
    return {**parameters, **widened_ranges(layout, partitions, {}, today)}


def widened_ranges(layout: Sequence[tuple[str, str]], partitions: Sequence[Sequence[str]],
                   current: Mapping[str, str], today: date) -> dict[str, str]:
    """The year and date ranges of a projected table (``current``: its parameters) that ``partitions`` widen; empty
    when its ranges hold them (a range relative to NOW is its owner's and is left as it is)."""
    excluded = set(outside(layout, partitions, today))
    inside = [values for values in partitions if tuple(values) not in excluded]
    changed = {}
    for index, (key, form) in enumerate(layout):
        name = f"projection.{key}.range"
        held = [bound.strip() for bound in current.get(name, "").split(",") if bound.strip()]
        values = [values[index] for values in inside]
        if form not in ("yyyy-MM-dd", "yyyy") or not values or any(b.startswith("NOW") for b in held[:1]):
            continue
        low = min([*values, *held[:1]])
        if form == "yyyy-MM-dd":
            wanted = f"{low},NOW+1DAYS"
        else:
            wanted = f"{low},{max([*values, *held[1:2]])}"
        if current.get(name) != wanted:
            changed[name] = wanted
    return changed
