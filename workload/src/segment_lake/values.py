"""One JSON value as a kind-tagged text, the form the parse stage hands to Spark.

The first character is the kind the value suggests on its own: ``b`` boolean,
``i`` integer within int64, ``d`` other number fitting decimal(38,6), ``t``
ISO-8601 date-time, ``s`` anything else (other strings, arrays as JSON text,
numbers too large for decimal(38,6)). A ``t`` value carries the UTC form Spark
casts and, after a separator, the original text that a string column keeps.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal

TIMESTAMP_SEPARATOR = "\x1f"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# decimal(38,6) keeps 32 digits before the point.
DECIMAL_INTEGER_DIGITS = 32

_ISO_DATETIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$")


def parse_timestamp(text: str) -> datetime | None:
    """An ISO-8601 date-time (with or without zone, up to nanoseconds) as an aware UTC datetime, else None."""
    if not isinstance(text, str) or len(text) < 16 or not text[:4].isdigit():  # cheap test before the regex
        return None
    match = _ISO_DATETIME.match(text.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micros)
    except ValueError:
        return None
    if zone and zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
        if hours > 23 or minutes > 59:
            return None
        moment = moment.replace(tzinfo=timezone(sign * timedelta(hours=hours, minutes=minutes)))
    else:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        return None


def utc_text(moment: datetime) -> str:
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
            f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{moment.microsecond:06d}")


class _JsonText(json.JSONEncoder):
    def default(self, value):
        if isinstance(value, Decimal):
            return float(value) if not value == value.to_integral_value() else int(value)
        return super().default(value)


def json_text(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, cls=_JsonText)


def _number(value: Decimal | int) -> str:
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return f"i{value}"
        value = Decimal(value)
    if not value.is_finite():
        return f"s{value}"
    if value.adjusted() >= DECIMAL_INTEGER_DIGITS:
        return f"s{value}"
    return f"d{value}"


def encode(value) -> str | None:
    """The kind-tagged text of a JSON scalar or array; None for JSON null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "btrue" if value else "bfalse"
    if isinstance(value, (int, Decimal)):
        return _number(value)
    if isinstance(value, float):  # only when the caller parsed floats as float
        return _number(Decimal(repr(value)))
    if isinstance(value, str):
        moment = parse_timestamp(value)
        if moment is not None:
            return f"t{utc_text(moment)}{TIMESTAMP_SEPARATOR}{value}"
        return f"s{value}"
    return f"s{json_text(value)}"
