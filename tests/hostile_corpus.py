"""Hostile input, kept with the tests: files and lines that try to crash, lose or corrupt what a sync lands.
Each line is named by its messageId (or, for lines that cannot have one, by its position) so a test can say
what became of it."""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

T = "2024-01-02T03:04:05Z"
TEN_MB = 10 * 1024 * 1024
OVER_LINE_LIMIT = 16 * 1024 * 1024 + 1


def event(message_id: str, **fields) -> str:
    return json.dumps({"type": "track", "event": "Hostile", "messageId": message_id, "receivedAt": T, **fields})


def raw_event(message_id: str, properties: str) -> str:
    """An event whose properties are JSON text Python would not write (NaN, numbers of any length, any depth)."""
    return ('{"type":"track","event":"Hostile","messageId":"' + message_id + '","receivedAt":"' + T
            + '","properties":' + properties + "}")


def nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


# receivedAt forms: RFC 3339 variants land; the others are rejected, never guessed
LANDING_TIMES = {"2024-01-02T03:04:05Z": "2024-01-02 03:04:05", "2024-01-02T03:04:05.123456789Z": "2024-01-02 03:04:05.123456",
                 "2024-01-02 03:04:05": "2024-01-02 03:04:05", "2024-01-02T03:04:05+05:30": "2024-01-01 21:34:05",
                 "2024-01-02t03:04:05.1-08:00": "2024-01-02 11:04:05.1", "2024-01-02T03:04": "2024-01-02 03:04:00",
                 "9999-12-31T23:59:59Z": "9999-12-31 23:59:59", "1969-07-20T20:17:40Z": "1969-07-20 20:17:40",
                 "0001-01-01T00:00:00Z": "0001-01-01 00:00:00", "1899-12-31T23:59:59.999Z": "1899-12-31 23:59:59.999"}
REJECTED_TIMES = ["2024-01-02", "1704164645", "Tue, 02 Jan 2024 03:04:05 GMT", "02/01/2024 03:04:05", "2024-W01-2",
                  "2024-13-01T00:00:00Z", "2024-02-30T00:00:00Z", "10000-01-01T00:00:00Z"]


def lines() -> dict[str, str]:
    """name -> line."""
    found = {
        "ten_mb": event("ten_mb", properties={"blob": "x" * TEN_MB}),
        "over_limit": event("over_limit", properties={"blob": "y" * OVER_LINE_LIMIT}),
        "array": "[1, 2]", "number": "42", "string": '"text"', "null": "null", "true": "true",
        "nan": raw_event("nan", '{"a":NaN,"b":Infinity,"c":-Infinity}'),
        "huge_int": event("huge_int", properties={"n": 2**70, "m": -(2**70)}),
        "beyond_decimal": raw_event("beyond_decimal",
                                    '{"d":123456789012345678901234567890123456789.5,"e":1e40,"f":0.1234567891}'),
        "thousand_digits": raw_event("thousand_digits", '{"d":' + "9" * 1001 + "}"),
        "deep_200": event("deep_200", properties=nested(200)),
        "deep_1500": raw_event("deep_1500", '{"k":' * 1500 + "1" + "}" * 1500),
        "wide": event("wide", event="Wide", properties={f"p{i}": i for i in range(20_000)}),
        "keys": event("keys", properties={"": 1, "!!!": 2, "\U0001f600": 3, "k" * 300: 4, "a b": 5, "a_b": 6, "aB": 7}),
        "slugless": event("slugless", event="!!! ???"),
        "emoji_name": event("emoji_name", event="\U0001f600"),
        "epoch_received": json.dumps({"type": "track", "event": "Hostile", "messageId": "epoch_received",
                                      "receivedAt": 1704164645000}),
    }
    kinds = [1, "s", True, 1.5, {"x": 1}, [1], None, "2024-01-01T00:00:00Z", 2**70, "NaN"]
    for i in range(20):  # one property of another type in every event
        found[f"flip{i}"] = event(f"flip{i}", event="Flip", properties={"v": kinds[i % len(kinds)]})
    for i, at in enumerate(LANDING_TIMES):
        found[f"time{i}"] = event(f"time{i}", event="Times", receivedAt=at, properties={"at": at})
    for i, at in enumerate(REJECTED_TIMES):
        found[f"bad_time{i}"] = event(f"bad_time{i}", event="Times", receivedAt=at)
    return found


def write(root: Path, seed: int = 1) -> Path:
    """The corpus as a source's input folder below ``root``; returns the folder."""
    folder = root / "segment-logs" / "hostile" / "1704153600000"
    folder.mkdir(parents=True)
    (folder / "lines.json.gz").write_bytes(gzip.compress(("\n".join(lines().values()) + "\n").encode()))
    whole = gzip.compress("\n".join(event(f"cut{i}") for i in range(2000)).encode())
    (folder / "truncated.json.gz").write_bytes(whole[: len(whole) // 2])
    (folder / "zero.json.gz").write_bytes(b"")
    (folder / "zero.json").write_bytes(b"")
    garbage = random.Random(seed).randbytes(5000)
    (folder / "garbage.json.gz").write_bytes(garbage)
    (folder / "garbage.json").write_bytes(garbage.replace(b"\n", b" ").replace(b"\r", b" "))  # one line
    (folder / "latin1.json").write_bytes(event("latin1").encode()[:-1] + b', "name": "caf\xe9 \xff\xfe"}\n')
    return folder
