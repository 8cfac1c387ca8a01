"""Parse raw lines into events (or rejections with a reason), as a DataFrame of one row per line."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from .flatten import flatten_event
from .slug import slug
from .values import parse_timestamp

SEGMENT_TYPES = ("track", "identify", "page", "screen", "group", "alias")

PARSED_SCHEMA = T.StructType([
    T.StructField("file", T.StringType()),
    T.StructField("reason", T.StringType()),  # set for rejected lines
    T.StructField("raw", T.StringType()),  # the line, kept for rejected lines only
    T.StructField("segment_type", T.StringType()),
    T.StructField("_message_id", T.StringType()),
    T.StructField("_received_at", T.TimestampType()),
    T.StructField("fields", T.MapType(T.StringType(), T.StringType())),
    T.StructField("columns", T.ArrayType(T.StringType())),
    T.StructField("discards", T.ArrayType(T.StructType([
        T.StructField("column", T.StringType()),
        T.StructField("value", T.StringType()),
        T.StructField("reason", T.StringType()),
    ]))),
])


@dataclass
class ParsedLine:
    reason: str | None = None
    segment_type: str | None = None
    message_id: str | None = None
    received_at: datetime | None = None
    fields: dict[str, str] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)
    discards: list[tuple[str, str, str]] = field(default_factory=list)


def _rejected(reason: str) -> ParsedLine:
    return ParsedLine(reason=reason)


def segment_type_of(event: dict) -> tuple[str | None, str | None]:
    """(segment_type, None) or (None, reason): ``track_<slug of event>`` for tracks, else the type."""
    kind = event.get("type")
    if not isinstance(kind, str) or not kind:
        return None, "no type"
    kind = kind.lower()
    if kind not in SEGMENT_TYPES:
        return None, f"unknown type {event['type']!r}"
    if kind != "track":
        return kind, None
    name = event.get("event")
    if not isinstance(name, str) or not name.strip():
        return None, "track without event"
    if not slug(name):
        return None, f"track event name {name!r} has no letters or digits"
    return f"track_{slug(name)}", None


def parse_line(line: str) -> ParsedLine:
    """One line of newline-delimited JSON: an accepted event or a rejection with its reason."""
    try:
        event = json.loads(line, parse_float=Decimal)
    except ValueError as error:
        return _rejected(f"not JSON: {error.args[0].split(':')[0]}")
    if not isinstance(event, dict):
        return _rejected("not a JSON object")
    segment_type, reason = segment_type_of(event)
    if reason:
        return _rejected(reason)
    message_id = event.get("messageId")
    if message_id is None or message_id == "" or isinstance(message_id, (dict, list, bool)):
        return _rejected("no messageId")
    received_at = parse_timestamp(event.get("receivedAt")) if isinstance(event.get("receivedAt"), str) else None
    if received_at is None:
        return _rejected("no parseable receivedAt")
    flat = flatten_event(event)
    return ParsedLine(None, segment_type, str(message_id), received_at, flat.fields, flat.columns, flat.discards)


def _parse_partition(rows):
    for row in rows:
        parsed = parse_line(row.value)
        if parsed.reason:
            yield (row.file, parsed.reason, row.value, None, None, None, None, None, None)
        else:
            yield (row.file, None, None, parsed.segment_type, parsed.message_id, parsed.received_at,
                   parsed.fields, parsed.columns, parsed.discards)


def parse_lines(lines: DataFrame) -> DataFrame:
    """``lines`` (value, file) -> one row per line in ``PARSED_SCHEMA``; blank lines are not events.

    The event's own messageId and receivedAt are ``_message_id`` and ``_received_at``: the
    flattened ``message_id`` and ``received_at`` columns are data like any other."""
    non_blank = lines.where("trim(value) != ''")
    return lines.sparkSession.createDataFrame(non_blank.rdd.mapPartitions(_parse_partition), PARSED_SCHEMA)
