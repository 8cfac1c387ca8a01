"""Flatten one Segment event into columns: nested objects joined with ``_``, names slugged.

``context.page.url`` -> ``context_page_url``, ``messageId`` -> ``message_id``.
Arrays stay whole (as JSON text). Pure: no Spark here.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .slug import slug
from .values import encode, json_text

MAX_COLUMN_NAME = 250


@dataclass
class Flattened:
    """The columns of one event in the order their keys appear, and what could not become a column."""

    fields: dict[str, str] = field(default_factory=dict)  # column -> kind-tagged text
    columns: list[str] = field(default_factory=list)  # columns in key order (nulls included)
    # (column or key path, raw value as JSON text, reason) of values kept out of the row
    discards: list[tuple[str, str, str]] = field(default_factory=list)


def _leaves(obj: dict, path: tuple[str, ...]):
    for key, value in obj.items():
        here = path + (str(key),)
        if isinstance(value, dict) and value:
            yield from _leaves(value, here)
        elif not isinstance(value, dict):
            yield here, value


@functools.lru_cache(maxsize=1 << 16)  # the same key paths recur in every event
def column_of(path: tuple[str, ...]) -> tuple[str | None, str | None]:
    """(column, None) for a key path, or (None, why it cannot be a column)."""
    parts = [slug(part) for part in path]
    if not all(parts):
        return None, "key has no letters or digits to name a column"
    column = "_".join(parts)
    if len(column) > MAX_COLUMN_NAME:
        return None, f"column name longer than {MAX_COLUMN_NAME} characters"
    return column, None


def flatten_event(event: dict) -> Flattened:
    """Columns of ``event``. When keys slug to the same column, the first non-null value in key
    order wins and later ones are discarded with their key path; over-long names are discarded."""
    out = Flattened()
    sources: dict[str, tuple[str, ...]] = {}
    for path, value in _leaves(event, ()):
        column, problem = column_of(path)
        encoded = encode(value)
        if problem:
            if encoded is not None:
                out.discards.append((".".join(path), _raw(value), problem))
            continue
        if column not in sources:
            out.columns.append(column)
        if encoded is None:
            sources.setdefault(column, path)
            continue
        if column in out.fields:
            out.discards.append((column, _raw(value), f"key {'.'.join(path)!r} names the same column as "
                                                      f"{'.'.join(sources[column])!r}"))
            continue
        sources[column] = path
        out.fields[column] = encoded
    return out


def _raw(value) -> str:
    return value if isinstance(value, str) else json_text(value)
