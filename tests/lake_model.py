"""The lake contract (docs/lake-format.md) as a plain-Python model, written from that page and not from the sync's
code: given the raw lines of successive runs, the tables (columns and types) and every row and
discarded value the lake should hold. Tests compare a real sync against it value by value."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

ALWAYS_TIMESTAMP = ("timestamp", "original_timestamp", "sent_at", "received_at")
KEYS = ("day", "hr")
_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d+))?)?"
                   r" ?(?:([Zz])|([+-])(\d\d)(?::?(\d\d))?)?")


def timestamp(text: str) -> datetime | None:
    """An RFC 3339 date-time (T, t or space; Z, z, an offset or none; any fraction) in UTC, naive."""
    match = _TIME.fullmatch(text)
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, _, sign, off_h, off_m = match.groups()
    try:
        local = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0),
                         int((fraction or "0")[:6].ljust(6, "0")))
        offset = timedelta(hours=int(off_h or 0), minutes=int(off_m or 0)) * (-1 if sign == "-" else 1)
        return (local - offset) if offset < timedelta(hours=24) else None
    except (ValueError, OverflowError):
        return None


def slug(text: str) -> str:
    """camelCase split, lower-cased, runs of other characters than a-z and 0-9 turned into _, _ trimmed."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"([A-Z])([A-Z][a-z])", r"\1_\2", text)
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _json_text(value) -> str:
    """An array as compact JSON, numbers as written."""
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _json_text(v) for k, v in value.items()) + "}"
    if isinstance(value, Decimal):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


@dataclass
class Value:
    kind: str  # boolean, bigint, decimal(38,6), timestamp or string
    value: object
    text: str  # as the event had it
    path: str = ""  # the keys that led to it, joined with '.'


def kind_of(raw) -> Value:
    if isinstance(raw, bool):
        return Value("boolean", raw, "true" if raw else "false")
    if isinstance(raw, int) and -2**63 <= raw < 2**63:
        return Value("bigint", raw, str(raw))
    if isinstance(raw, (int, Decimal)):
        number = Decimal(raw)
        digits = number.adjusted() + 1
        return Value("string" if digits > 32 else "decimal(38,6)", number, str(raw))
    if isinstance(raw, list):
        return Value("string", _json_text(raw), _json_text(raw))
    moment = timestamp(raw)
    return Value("timestamp", moment, raw) if moment else Value("string", raw, raw)


def flatten(event: dict, prefix: str = "", path: str = "") -> tuple[dict[str, Value], list[tuple[str, str, str]]]:
    """Columns in key order (first non-null value of colliding keys), and the (column, text, reason) discarded."""
    columns: dict[str, Value] = {}
    paths: dict[str, str] = {}
    discards: list[tuple[str, str, str]] = []
    for key, raw in event.items():
        name, key_path = (f"{prefix}_{slug(key)}" if prefix else slug(key)), (f"{path}.{key}" if path else key)
        if isinstance(raw, dict):
            nested, dropped = flatten(raw, name, key_path)
            items = [(column, value, value.path) for column, value in nested.items()]
            discards += dropped
        else:
            items = [] if raw is None else [(name, kind_of(raw), key_path)]
        for column, value, value_path in items:
            if column in columns:
                discards.append((column, value.text, f"key '{value_path}' names the same column as '{paths[column]}'"))
            else:
                columns[column], paths[column] = value, value_path
                value.path = value_path
    return columns, discards


def least_upper_bound(kinds: set[str]) -> str:
    if len(kinds) == 1:
        return next(iter(kinds))
    return "decimal(38,6)" if kinds <= {"bigint", "decimal(38,6)"} else "string"


def cast(value: Value, target: str):
    """The value in a column of type ``target``, or None when that would lose something."""
    if target == "string":
        return value.text
    if target == "timestamp":
        return value.value if value.kind == "timestamp" else None
    if target == "boolean":
        if value.kind == "boolean":
            return value.value
        return {"true": True, "false": False}.get(value.text.strip().lower()) if value.kind == "string" else None
    if value.kind not in ("bigint", "decimal(38,6)", "string"):
        return None
    try:
        number = Decimal(value.text.strip())
    except InvalidOperation:
        return None
    if target == "bigint":
        return int(number) if number == number.to_integral_value() and -2**63 <= number < 2**63 else None
    rounded = number.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)
    return rounded if rounded.adjusted() < 32 else None


@dataclass
class Lake:
    """What the lake holds after the runs given to ``sync``."""

    columns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    rows: dict[str, list[dict]] = field(default_factory=dict)
    discards: list[dict] = field(default_factory=list)
    duplicates: list[dict] = field(default_factory=list)
    kept: dict[str, list[tuple[datetime, str]]] = field(default_factory=dict)  # id -> (receivedAt, run)

    def sync(self, files: dict[str, list[str]], run: str) -> None:
        """One run, named ``run``, over ``files`` (name -> raw lines)."""
        events = []
        for name in sorted(files):
            for line_number, line in enumerate(files[name]):
                event = json.loads(line, parse_float=Decimal)
                received = timestamp(event["receivedAt"])
                table = slug(event["type"]) if event["type"] != "track" else "track_" + slug(event["event"])
                events.append((received, name, line_number, table, event))
        landed = []
        for received, file, _, table, event in sorted(events, key=lambda e: e[:3]):
            earlier = self.kept.setdefault(str(event["messageId"]), [])
            near = sorted((abs(received - at), at, by) for at, by in earlier if abs(received - at) <= timedelta(days=7))
            if near:  # a duplicate of the nearest kept event
                self.duplicates.append({"message_id": str(event["messageId"]), "received_at": received,
                                        "table_name": table, "file": file, "run_id": run,
                                        "original_run_id": near[0][2], "original_received_at": near[0][1]})
            else:
                earlier.append((received, run))
                landed.append((received, table, event))
        observed: dict[str, dict[str, list]] = {}
        for _, table, event in sorted(landed, key=lambda e: (e[0], str(e[2]["messageId"]))):
            columns, _ = flatten(event)
            for column, value in columns.items():
                if column not in KEYS:
                    observed.setdefault(table, {}).setdefault(column, []).append(value.kind)
        for table, seen in observed.items():
            known = self.columns.setdefault(table, [])
            names = {name for name, _ in known}
            known += [(column, "timestamp" if column in ALWAYS_TIMESTAMP else least_upper_bound(set(kinds)))
                      for column, kinds in seen.items() if column not in names]
        for received, table, event in landed:
            columns, collided = flatten(event)
            types = dict(self.columns[table])
            row = {}
            for column, value in columns.items():
                if column in KEYS:
                    self._discard(table, column, event, received, value.text, "column name is a partition key of the table")
                    continue
                row[column] = cast(value, types[column])
                if row[column] is None:
                    self._discard(table, column, event, received, value.text,
                                  f"cannot be stored in a {types[column]} column without loss")
            for column, text, reason in collided:
                self._discard(table, column, event, received, text, reason)
            self.rows.setdefault(table, []).append(
                {**row, "day": f"{received:%Y-%m-%d}", "hr": f"{received:%H}"})

    def _discard(self, table, column, event, received, text, reason):
        self.discards.append({"table_name": table, "column_name": column, "message_id": str(event["messageId"]),
                              "received_at": received, "value": text, "reason": reason})

    def table_rows(self, table: str) -> list[dict]:
        """Every row with every column of the table (None where an event had no value)."""
        names = [name for name, _ in self.columns[table]] + list(KEYS)
        return sorted(({name: row.get(name) for name in names} for row in self.rows[table]),
                      key=lambda r: (r["message_id"], str(r["received_at"])))


