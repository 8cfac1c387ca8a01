"""Raw Segment events that exercise every rule of the lake contract, in two runs."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

LONG_KEY = "x" * 251
T0 = "2024-01-02T03:04:05.000Z"


def event(kind, message_id, received_at, **fields):
    return {"type": kind, "messageId": message_id, "receivedAt": received_at, **fields}


RUN1_PLAIN = [
    event("track", "m1", T0, event="Order Completed", userId="u1", timestamp="2024-01-02T03:04:00Z",
          sentAt="2024-01-02T03:04:01Z", originalTimestamp="2024-01-02T03:03:59Z",
          context={"page": {"url": "https://shop.example/cart"}}, integrations={"All": True},
          properties={"revenue": 19.99, "quantity": 2, "productId": "p1", "tags": ["x", "y"], "coupon": None,
                      "shippedAt": "2024-01-05T00:00:00Z", "flag": True}),
    event("track", "m2", "2024-01-02T04:00:00Z", event="order_completed", userId="u2",
          properties={"revenue": 5, "quantity": 1, "flag": "yes"}),
    event("identify", "m3", "2024-01-02T05:00:00Z", userId="u1", traits={"email": "ada@example.com", "age": 30,
                                                                          "vip": True}),
    event("identify", "m3", "2024-01-02T05:00:09Z", userId="u1", traits={"email": "late@example.com"}),
    "",
    "not json",
    "[1]",
    json.dumps({"messageId": "r1", "receivedAt": T0}),
    json.dumps(event("click", "r2", T0)),
    json.dumps(event("track", "r3", T0)),
]
RUN1_GZIP = [
    event("page", "m5", "2024-01-02T06:00:00Z", name="Home", properties={"big": 10**40}),
    event("screen", "m6", "2024-01-02T06:10:00Z", name="Settings"),
    event("group", "m7", "2024-01-02T06:20:00Z", groupId="g1", traits={"employees": 250}),
    event("alias", "m8", "2024-01-02T06:30:00Z", previousId="anon-1", userId="u1"),
    event("track", "m9", "2024-01-02T07:00:00Z", event="101 Account Update"),
    event("track", "m10", "2024-01-02T07:10:00Z", event="Order Completed",
          properties={"productId": "A", "product_id": "B", LONG_KEY: 1}),
    event("identify", "m11", "2024-01-02T07:20:00Z", userId="u3", timestamp="yesterday"),
    event("page", "m12", "2024-01-02T07:30:00Z", day="Monday"),
    json.dumps({"type": "identify", "receivedAt": T0}),
    json.dumps({"type": "identify", "messageId": "r5"}),
]
RUN2 = [
    event("track", "m1", "2024-01-03T00:00:00Z", event="Order Completed", properties={"revenue": 1}),  # dup
    event("identify", "m3", "2024-01-20T00:00:00Z", userId="u1", traits={"email": "again@example.com"}),  # > 7 days
    event("identify", "m20", "2024-01-03T01:00:00Z", userId="u4", traits={"age": "31"}),
    event("identify", "m21", "2024-01-03T01:10:00Z", userId="u5", traits={"age": "old"}),
    event("track", "m22", "2024-01-03T02:00:00Z", event="Order Completed",
          properties={"revenue": 7.5, "giftWrap": True, "note": "thanks"}),
    event("page", "m23", "2024-01-03T03:00:00Z", properties={"big": 5}),
    event("screen", "m24", "2024-01-03T04:00:00Z", name="A"),
    event("screen", "m24", "2024-01-03T04:00:01Z", name="B"),
]


def _lines(items):
    return "".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in items)


def write_run1(input_dir: Path, source_id: str) -> None:
    day = input_dir / "segment-logs" / source_id / "1704153600000"
    day.mkdir(parents=True, exist_ok=True)
    (day / "a.json").write_text(_lines(RUN1_PLAIN))
    deep = day / "nested" / "deeper"
    deep.mkdir(parents=True, exist_ok=True)
    (deep / "b.json.gz").write_bytes(gzip.compress(_lines(RUN1_GZIP).encode()))


def write_run2(input_dir: Path, source_id: str) -> None:
    day = input_dir / "segment-logs" / source_id / "1704240000000"
    day.mkdir(parents=True, exist_ok=True)
    (day / "c.json").write_text(_lines(RUN2))


RUN1_COUNTS = {"read_count": 19, "rejected_count": 7, "duplicate_count": 1, "row_count": 11}
RUN2_COUNTS = {"read_count": 8, "rejected_count": 0, "duplicate_count": 2, "row_count": 6}
