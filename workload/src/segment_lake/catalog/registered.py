"""What the catalog already holds of the source's tables, as the source's state remembers it: for each table, the
partitions the last run that wrote it registered and the columns it gave them. A run registers only what the record
does not show (a second run within the hour sends Glue nothing for a table with no new column), and records what it
registered once the catalog has taken it. An entry holds for the table it was made for (database, name and the time the
catalog made it; a table the recording run made itself, by database and name until the next run records its time): a
table dropped meanwhile, or dropped and made again, is registered again. A partition dropped by
hand comes back with the next run that writes it and is not in the record."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace

from . import TableChange, TableInfo

Record = dict[str, dict]  # table -> {"table": identity, "columns": digest, "partitions": [[value, ...], ...]}


def columns_digest(columns) -> str:
    return hashlib.sha256(json.dumps([list(column) for column in columns]).encode()).hexdigest()[:16]


def identity(database: str, table: str, info: TableInfo | None) -> str:
    """The table an entry holds for; one the recording run made itself is known by name (its creation time is read
    by the next run that finds it, and recorded then)."""
    return f"{database}.{table} made {info.created if info else 'by the run'}"


def unregistered(database: str, changes: list[TableChange], known: Mapping[str, TableInfo | None],
                 record: Record) -> list[TableChange]:
    """``changes`` without the partitions the record shows registered, in this same table, with the columns the table
    has (``known``: the tables as the run read them); a table left with no partition and no new column is left out."""
    kept = []
    for change in changes:
        entry, info = record.get(change.table), known.get(change.table)
        if (entry is None or info is None or entry["table"] not in (identity(database, change.table, info),
                                                                   identity(database, change.table, None))
                or list(map(tuple, info.columns)) != list(change.columns)
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


def recorded(database: str, record: Record, changes: list[TableChange], known: Mapping[str, TableInfo | None]) -> Record:
    """The record once ``changes`` are registered: each of their tables with its partitions and columns."""
    return {**record, **{change.table: {
        "table": identity(database, change.table, known.get(change.table)), "columns": columns_digest(change.columns),
        "partitions": sorted(map(list, change.partitions))} for change in changes}}
