"""Deterministic, realistic raw Segment events in the S3 destination's layout.

``segment-logs/<source>/<day-epoch-ms>/<n>.gz``: gzip files of newline-delimited JSON, each file
holding the events Segment received in one slice of an hour. The same options and seed give the same
bytes, however many processes write them (gzip headers carry no name and no time).

What the events look like:
- track events over ``event_names`` distinct names drawn Zipf-skewed (a few names are most of the
  traffic, as in real sources), plus identify, page, screen, group and alias;
- analytics.js-style (``context.page``, ``userAgent``) and mobile-style (``context.app``,
  ``context.device``, ``context.os``) contexts;
- properties of every JSON type, with nesting and arrays; each event name has its own property set,
  and some properties change type between events (``value`` is a number or a numeric string);
- a share of duplicates (an event delivered again with its messageId and another receivedAt) and of
  malformed lines.
"""
from __future__ import annotations

import bisect
import concurrent.futures
import functools
import gzip
import io
import json
import os
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .errors import InvalidSettings
from .options import flag

_OBJECTS = ["Order", "Product", "Cart", "Checkout", "Coupon", "Promotion", "Video", "Article", "Account", "Subscription",
            "Payment", "Invoice", "Search", "Filter", "Wishlist", "Review", "Message", "Notification", "Trial", "Plan",
            "Report", "Dashboard", "File", "Folder", "Team", "Invite", "Ticket", "Course", "Lesson", "Playlist",
            "Podcast", "Booking", "Ride", "Delivery", "Address", "Profile", "Badge", "Level", "Reward", "Referral"]
_ACTIONS = ["Viewed", "Clicked", "Added", "Removed", "Started", "Completed", "Updated", "Deleted", "Shared", "Created",
            "Opened", "Closed", "Submitted", "Failed", "Applied", "Denied", "Entered", "Exited", "Downloaded",
            "Uploaded", "Renamed", "Archived", "Restored", "Scheduled", "Cancelled"]
_PROPERTY_POOL = [  # (key, kind) pairs an event name draws its properties from
    ("productId", "sku"), ("sku", "sku"), ("category", "word"), ("name", "title"), ("brand", "word"),
    ("variant", "word"), ("price", "money"), ("quantity", "count"), ("coupon", "maybe_word"), ("position", "count"),
    ("url", "url"), ("imageUrl", "url"), ("currency", "currency"), ("revenue", "money"), ("tax", "money"),
    ("shipping", "money"), ("discount", "money"), ("total", "money"), ("orderId", "id"), ("checkoutId", "id"),
    ("step", "count"), ("paymentMethod", "word"), ("query", "title"), ("results", "count"), ("duration", "seconds"),
    ("percentComplete", "ratio"), ("sessionId", "id"), ("title", "title"), ("author", "title"), ("tags", "tags"),
    ("items", "items"), ("value", "changing"), ("label", "word"), ("isTrial", "bool"), ("plan", "word"),
    ("seats", "count"), ("dueAt", "time"), ("createdAt", "time"), ("rating", "ratio"), ("metadata", "nested"),
    ("location", "geo"), ("dimensions", "dims"), ("flags", "bools"), ("note", "maybe_word"), ("externalId", "bigid"),
]
_WORDS = ["red", "blue", "basic", "premium", "sale", "spring", "winter", "outdoor", "kids", "classic", "eco", "pro"]
_TITLES = ["Getting started", "Weekly digest", "Summer collection", "Release notes", "Top picks", "How it works"]
_CURRENCIES = ["USD", "EUR", "GBP", "JPY"]
_PAGES = ["/", "/pricing", "/docs", "/blog/launch", "/cart", "/checkout", "/account", "/search"]
_BROWSERS = ["Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
             "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15",
             "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0"]
_DEVICES = [("iOS", "17.2", "Apple", "iPhone15,2", "ios"), ("Android", "14", "Google", "Pixel 8", "android"),
            ("iOS", "16.7", "Apple", "iPad13,4", "ios")]
_MALFORMED = ['{"type":"track","event":"Order Completed","messageId":"trunc', "not json at all", "[1,2,3]",
              '{"messageId":"no-type","receivedAt":"2024-01-02T00:00:00Z"}', '{"type":"click","messageId":"x"}',
              '{"type":"track","messageId":"no-event","receivedAt":"2024-01-02T00:00:00Z"}']
_OTHER_TYPES = [("identify", 12), ("page", 14), ("screen", 6), ("group", 2), ("alias", 1)]


@dataclass(frozen=True)
class GenerateOptions:
    """What to generate; every count is exact and every choice follows ``seed``."""

    output: Path = field(metadata=flag("folder to write segment-logs/ into"))
    events: int = field(default=100_000, metadata=flag("lines per source, duplicates and malformed included"))
    sources: int = field(default=1, metadata=flag("number of sources, src0001..."))
    hours: int = field(default=2, metadata=flag("hours of events", exclusive="span",
                                                default_help="2, one scheduled sync's window"))
    days: int | None = field(default=None, metadata=flag("days of events (instead of --hours)", exclusive="span"))
    start: datetime = field(default=datetime(2024, 1, 2, tzinfo=UTC), metadata=flag(
        "first hour received, YYYY-MM-DDTHH in UTC"))
    event_names: int = field(default=50, metadata=flag("distinct track event names, Zipf-skewed"))
    files_per_hour: int = field(default=4, metadata=flag("gzip files per hour per source"))
    duplicate_rate: float = field(default=0.01, metadata=flag("share of lines that repeat an earlier messageId"))
    malformed_rate: float = field(default=0.001, metadata=flag("share of malformed lines"))
    track_share: float = 0.65
    seed: int = field(default=1, metadata=flag("seed of every random choice"))

    def __post_init__(self) -> None:
        if isinstance(self.start, str):  # as given on the command line
            try:
                object.__setattr__(self, "start", datetime.strptime(self.start, "%Y-%m-%dT%H").replace(tzinfo=UTC))
            except ValueError:
                raise InvalidSettings(f"invalid --start {self.start!r}: use YYYY-MM-DDTHH, for example 2024-01-02T00") from None
        if self.days is not None:
            object.__setattr__(self, "hours", self.days * 24)
        for name in ("events", "sources", "hours", "event_names", "files_per_hour"):
            if getattr(self, name) < 1:
                raise InvalidSettings(f"--{name.replace('_', '-')} must be at least 1, not {getattr(self, name)}")
        if self.event_names > len(_OBJECTS) * len(_ACTIONS):
            raise InvalidSettings(f"--event-names {self.event_names} is more than the {len(_OBJECTS) * len(_ACTIONS)} "
                             f"names the generator can make")
        for name in ("duplicate_rate", "malformed_rate", "track_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise InvalidSettings(f"--{name.replace('_', '-')} must be between 0 and 1, not {getattr(self, name)}")
        if self.files_per_hour > 3600:
            raise InvalidSettings(f"--files-per-hour must be at most 3600, not {self.files_per_hour}")

    @property
    def slices(self) -> int:
        """Files per source: one per slice of an hour."""
        return self.hours * self.files_per_hour


def event_name_list(count: int) -> list[str]:
    """``count`` distinct event names, most common first."""
    names = [f"{obj} {action}" for action in _ACTIONS for obj in _OBJECTS]
    return names[:count]


def _zipf_cumulative(count: int, exponent: float = 1.1) -> list[float]:
    weights = [1 / (rank ** exponent) for rank in range(1, count + 1)]
    total, running, cumulative = sum(weights), 0.0, []
    for weight in weights:
        running += weight
        cumulative.append(running / total)
    return cumulative


def _property_sets(names: list[str], seed: int) -> dict[str, list[tuple[str, str]]]:
    """Each event name's own properties: 4 to 12 drawn from the pool, fixed by the name and the seed."""
    sets = {}
    for name in names:
        rng = random.Random(f"{seed}:{name}")
        sets[name] = rng.sample(_PROPERTY_POOL, rng.randint(4, 12))
    return sets


def _below(rng: random.Random, n: int) -> int:
    """A uniform integer in [0, n): ``random()`` only, which is faster than ``randrange`` and stable across Pythons."""
    return int(rng.random() * n)


def _between(rng: random.Random, low: int, high: int) -> int:
    return low + _below(rng, high - low)


def _pick(rng: random.Random, items: list):
    return items[int(rng.random() * len(items))]


def _changing(rng: random.Random):
    """The same property as a number, a numeric string or a decimal."""
    choice = _below(rng, 10)
    return str(_below(rng, 100)) if choice == 0 else (_below(rng, 100) + 0.5 if choice == 1 else _below(rng, 100))


# property kind -> a value of it
_VALUES = {
    "sku": lambda rng: f"sku-{_below(rng, 5000):05d}",
    "word": lambda rng: _pick(rng, _WORDS),
    "maybe_word": lambda rng: None if rng.random() < 0.3 else _pick(rng, _WORDS),
    "title": lambda rng: _pick(rng, _TITLES),
    "money": lambda rng: round(rng.uniform(1, 500), 2),
    "count": lambda rng: _between(rng, 1, 20),
    "url": lambda rng: f"https://shop.example{_pick(rng, _PAGES)}?ref={_below(rng, 100)}",
    "currency": lambda rng: _pick(rng, _CURRENCIES),
    "id": lambda rng: f"{rng.getrandbits(48):012x}",
    "bigid": lambda rng: rng.getrandbits(62),
    "seconds": lambda rng: _between(rng, 1, 3600),
    "ratio": lambda rng: round(rng.random(), 3),
    "tags": lambda rng: rng.sample(_WORDS, _below(rng, 4)),
    "items": lambda rng: [{"sku": f"sku-{_below(rng, 5000):05d}", "price": round(rng.uniform(1, 99), 2),
                           "quantity": _between(rng, 1, 4)} for _ in range(_between(rng, 1, 4))],
    "changing": _changing,
    "bool": lambda rng: rng.random() < 0.5,
    "bools": lambda rng: {"beta": rng.random() < 0.2, "darkMode": rng.random() < 0.5},
    "time": lambda rng: f"2024-0{1 + _below(rng, 9)}-{10 + _below(rng, 19)}T{10 + _below(rng, 14)}:00:00.000Z",
    "nested": lambda rng: {"source": _pick(rng, _WORDS),
                           "campaign": {"id": _below(rng, 1000), "name": _pick(rng, _TITLES)}},
    "geo": lambda rng: {"lat": round(rng.uniform(-90, 90), 6), "lon": round(rng.uniform(-180, 180), 6)},
    "dims": lambda rng: {"width": _between(rng, 100, 2000), "height": _between(rng, 100, 2000), "unit": "px"},
}

_DAY_MS = 86_400_000


def _iso(ms: int) -> str:
    """Epoch milliseconds as Segment writes times (``2024-01-02T03:04:05.678Z``)."""
    day, rest = divmod(ms, _DAY_MS)
    seconds, millis = divmod(rest, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{_day_text(day)}T{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}Z"


@functools.lru_cache(maxsize=4096)
def _day_text(day: int) -> str:
    return (datetime(1970, 1, 1) + timedelta(days=day)).strftime("%Y-%m-%d")


def _context(rng: random.Random, mobile: bool) -> dict:
    common = {"ip": f"203.0.113.{_between(rng, 1, 255)}", "locale": _pick(rng, ["en-US", "de-DE", "fr-FR", "ja-JP"]),
              "timezone": _pick(rng, ["Europe/Berlin", "America/New_York", "Asia/Tokyo"])}
    if not mobile:
        page = _pick(rng, _PAGES)
        return {**common, "library": {"name": "analytics.js", "version": "4.1.0"},
                "page": {"path": page, "referrer": "https://www.example.org/", "search": "",
                         "title": _pick(rng, _TITLES), "url": f"https://shop.example{page}"},
                "userAgent": _pick(rng, _BROWSERS),
                "campaign": {"name": "spring", "source": "newsletter", "medium": "email"} if rng.random() < 0.1 else {}}
    os_name, os_version, maker, model, library = _pick(rng, _DEVICES)
    return {**common, "library": {"name": f"analytics-{library}", "version": "4.3.1"},
            "app": {"name": "Shop", "version": "5.12.0", "build": str(_between(rng, 500, 600)),
                    "namespace": "com.example.shop"},
            "device": {"id": f"{rng.getrandbits(64):016x}", "manufacturer": maker, "model": model,
                       "type": library, "adTrackingEnabled": rng.random() < 0.4},
            "os": {"name": os_name, "version": os_version},
            "screen": {"width": _pick(rng, [390, 412, 820]), "height": _pick(rng, [844, 915, 1180]), "density": 3},
            "network": {"wifi": rng.random() < 0.6, "carrier": _pick(rng, ["T-Mobile", "Vodafone", None])}}


class _Source:
    """The events of one source; each slice of time draws from its own seeded generator, so slices can be
    written in parallel and still give the same bytes."""

    def __init__(self, options: GenerateOptions, index: int) -> None:
        self.source_id = f"src{index:04d}"
        self.names = event_name_list(options.event_names)
        self.cumulative = _zipf_cumulative(len(self.names))
        self.properties = _property_sets(self.names, options.seed)
        other_weight = sum(w for _, w in _OTHER_TYPES)
        running = options.track_share
        self.type_cumulative = [running]
        for _, weight in _OTHER_TYPES:
            running += (1 - options.track_share) * weight / other_weight
            self.type_cumulative.append(running)
        self.rng = random.Random()

    def event(self, n: str, received: int, names: list[int]) -> dict:
        """Event ``n``; a track takes the next name of ``names`` while any is left, then a Zipf-skewed one."""
        rng = self.rng
        kind_index = min(bisect.bisect(self.type_cumulative, rng.random()), len(_OTHER_TYPES))
        kind = "track" if kind_index == 0 else _OTHER_TYPES[kind_index - 1][0]
        mobile = rng.random() < 0.4
        sent = received - 50 - _below(rng, 4950)
        timestamp = sent - _below(rng, 2000)
        user = _below(rng, 20_000)
        event = {"anonymousId": f"anon-{user:06d}-{_below(rng, 3)}", "channel": "mobile" if mobile else "client",
                 "context": _context(rng, mobile), "integrations": {"All": True} if rng.random() < 0.9 else {},
                 "messageId": f"{self.source_id}-{n}", "originalTimestamp": _iso(timestamp),
                 "receivedAt": _iso(received), "sentAt": _iso(sent), "timestamp": _iso(timestamp), "type": kind,
                 "userId": f"user-{user:06d}" if rng.random() < 0.7 else None, "version": 2}
        if kind == "track":
            rank = names.pop() if names else min(bisect.bisect(self.cumulative, rng.random()), len(self.names) - 1)
            name = self.names[rank]
            event["event"] = name
            event["properties"] = {key: _VALUES[value_kind](rng) for key, value_kind in self.properties[name]}
        elif kind in ("identify", "group"):
            traits = {"email": f"user{user}@example.com", "plan": _pick(rng, ["free", "pro", "enterprise"]),
                      "logins": _between(rng, 1, 500), "address": {"city": _pick(rng, ["Berlin", "Austin", "Osaka"]),
                                                                 "country": _pick(rng, ["DE", "US", "JP"])},
                      "createdAt": _iso(timestamp - (1 + _below(rng, 899)) * _DAY_MS)}
            event["traits"] = traits
            if kind == "group":
                event["groupId"] = f"group-{_below(rng, 500):04d}"
        elif kind in ("page", "screen"):
            event["name"] = _pick(rng, _TITLES)
            event["properties"] = {"path": _pick(rng, _PAGES), "referrer": "", "title": _pick(rng, _TITLES),
                                   "loadTime": _between(rng, 20, 4000) / 1000}
        else:
            event["previousId"] = f"anon-{user:06d}-0"
        return event


def _gzip_bytes(text: str) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=1) as out:
        out.write(text.encode("utf-8"))
    return buffer.getvalue()


def generate(options: GenerateOptions, workers: int | None = None) -> list[Path]:
    """Writes every source's files (one per slice of time, in parallel processes); returns their paths."""
    tasks = [(options, source, index) for source in range(1, options.sources + 1) for index in range(options.slices)]
    workers = workers or os.cpu_count() or 1
    if workers == 1:
        return [_write_slice(*task) for task in tasks]
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_write_slice, *zip(*tasks, strict=True)))


@functools.lru_cache(maxsize=16)
def _source(options: GenerateOptions, index: int) -> _Source:
    return _Source(options, index)


def _write_slice(options: GenerateOptions, source_index: int, index: int) -> Path:
    """One file: the events received in slice ``index`` of the source's time range."""
    source = _source(options, source_index)
    rng = source.rng
    rng.seed(f"{options.seed}:{source_index}:{index}")
    slice_ms = 3_600_000 // options.files_per_hour
    slice_start = int(options.start.timestamp() * 1000) + index * slice_ms
    count = options.events // options.slices + (1 if index < options.events % options.slices else 0)
    # every name appears: slice i starts its tracks with names i, i + slices, ... before drawing by rank
    names = list(range(index, len(source.names), options.slices))[::-1]
    lines, recent = [], []
    for n in range(count):
        roll = rng.random()
        if roll < options.malformed_rate:
            lines.append(_pick(rng, _MALFORMED))
            continue
        received = slice_start + _below(rng, slice_ms)
        if roll < options.malformed_rate + options.duplicate_rate and recent:
            # the same event delivered again (a client retry): same messageId, another receivedAt
            event = dict(_pick(rng, recent), receivedAt=_iso(received))
        else:
            # unique across seeds and times: a second batch (another --seed or --start) adds new events
            event = source.event(f"{options.seed}-{slice_start}-{n:07d}", received, names)
            if len(recent) < 64:
                recent.append(event)
            else:
                recent[_below(rng, 64)] = event
        lines.append(json.dumps(event, separators=(",", ":")))
    folder = options.output / "segment-logs" / source.source_id / str(slice_start - slice_start % _DAY_MS)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{index:05d}.gz"
    path.write_bytes(_gzip_bytes("\n".join(lines) + "\n"))
    return path
