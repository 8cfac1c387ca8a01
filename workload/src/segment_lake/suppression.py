"""Suppressed users of a source: their user ids and anonymous ids, kept in the lake
(``state/<source>/suppressed.json``, each id with the time it was added). The sync drops their new events and
counts them; ``segment-lake delete-users`` adds the users it deletes, so that no later sync or replay of the same
raw events lands them again."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import Column
from pyspark.sql import functions as F

from .field_codec import FIELD
from .storage import LakeStorage

KINDS = {"user_ids": "user_id", "anonymous_ids": "anonymous_id"}  # list -> the flattened field it matches


@dataclass(frozen=True)
class Suppressed:
    """Ids by kind (``user_ids``, ``anonymous_ids``), each with the time it was added (ISO 8601)."""

    user_ids: dict[str, str] = field(default_factory=dict)
    anonymous_ids: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.user_ids or self.anonymous_ids)

    def told(self, source_id: str) -> list[str]:
        """What ``segment-lake suppress`` prints: each id, with its kind and when it was added."""
        return [f"{label}\t{value}\tsince {added}"
                for kind, label in (("user_ids", "user id"), ("anonymous_ids", "anonymous id"))
                for value, added in getattr(self, kind).items()] or [f"{source_id}: no suppressed users"]

    def to_json(self) -> str:
        return json.dumps({kind: dict(sorted(getattr(self, kind).items())) for kind in KINDS}, indent=1) + "\n"

    @staticmethod
    def from_json(text: str) -> Suppressed:
        data = json.loads(text)
        return Suppressed(**{kind: dict(data.get(kind, {})) for kind in KINDS})


def is_suppressed(suppressed: Suppressed) -> Column:
    """True for an event (a parsed row: its ``fields``) of a suppressed user or anonymous id."""
    matches = [F.expr(f"{FIELD}(fields, '{column}')").isin(list(getattr(suppressed, kind)))
               for kind, column in KINDS.items() if getattr(suppressed, kind)]
    if not matches:
        return F.lit(False)
    either = matches[0]
    for match in matches[1:]:
        either = either | match
    return F.coalesce(either, F.lit(False))


class SuppressionList:
    """The source's list; changes are made under the source's lock (the caller holds it)."""

    def __init__(self, storage: LakeStorage, uri: str) -> None:
        self.storage = storage
        self.uri = uri

    def read(self) -> Suppressed:
        if not self.storage.exists(self.uri):
            return Suppressed()
        return Suppressed.from_json(self.storage.read_text(self.uri))

    def add(self, user_ids: list[str], anonymous_ids: list[str], now: datetime | None = None) -> int:
        """Adds the ids not yet listed; returns how many were new."""
        return self._change(user_ids, anonymous_ids, (now or datetime.now(UTC)).isoformat())

    def remove(self, user_ids: list[str], anonymous_ids: list[str]) -> int:
        """Removes the ids listed; returns how many were."""
        return self._change(user_ids, anonymous_ids, None)

    def _change(self, user_ids: list[str], anonymous_ids: list[str], added: str | None) -> int:
        current = self.read()
        lists = {kind: dict(getattr(current, kind)) for kind in KINDS}
        changed = 0
        for kind, ids in (("user_ids", user_ids), ("anonymous_ids", anonymous_ids)):
            for value in ids:
                if added is not None and value not in lists[kind]:
                    lists[kind][value] = added
                    changed += 1
                elif added is None and lists[kind].pop(value, None) is not None:
                    changed += 1
        if changed:
            self.storage.write_text(self.uri, Suppressed(**lists).to_json())
        return changed
