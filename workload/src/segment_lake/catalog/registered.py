"""What the catalog already holds of the source's tables, as the source's state remembers it: for each table, the
partitions the last run that wrote it registered and the columns it gave them. A run registers only what the record
does not show (a second run within the hour sends Glue nothing for a table with no new column), and records what it
registered once the catalog has taken it. A table dropped meanwhile is registered again (the run finds it missing); a
partition dropped by hand comes back with the next run that writes it and is not in the record."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace

from . import TableChange

Record = dict[str, dict]  # table -> {"columns": digest, "partitions": [[value, ...], ...]}


def columns_digest(columns) -> str:
    return hashlib.sha256(json.dumps([list(column) for column in columns]).encode()).hexdigest()[:16]


def unregistered(changes: list[TableChange], known: Mapping[str, list[tuple[str, str]] | None],
                 record: Record) -> list[TableChange]:
    """``changes`` without the partitions the record shows registered with the columns the table has (``known``, as
    the run read the catalog); a table left with no partition and no new column is left out."""
    kept = []
    for change in changes:
        entry, columns = record.get(change.table), known.get(change.table)
        if (entry is None or columns is None or list(map(tuple, columns)) != list(change.columns)
                or entry["columns"] != columns_digest(change.columns)):
            kept.append(change)
            continue
        done = set(map(tuple, entry["partitions"]))
        left = [index for index, values in enumerate(change.partitions) if values not in done]
        if left:
            kept.append(replace(change, partitions=tuple(change.partitions[i] for i in left),
                                partition_locations=tuple(change.partition_locations[i] for i in left)
                                if change.partition_locations else ()))
    return kept


def recorded(record: Record, changes: list[TableChange]) -> Record:
    """The record once ``changes`` are registered: each of their tables with its partitions and columns."""
    return {**record, **{change.table: {"columns": columns_digest(change.columns),
                                        "partitions": sorted(map(list, change.partitions))} for change in changes}}
