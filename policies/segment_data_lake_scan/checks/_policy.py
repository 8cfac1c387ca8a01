"""Helpers shared by this module's checkov checks."""
from __future__ import annotations

import json
from typing import Any


def value(conf: dict[str, Any], key: str) -> Any:
    """An attribute of a resource; checkov wraps most of them in a one-element list."""
    found = conf.get(key)
    while isinstance(found, list) and len(found) == 1:
        found = found[0]
    return found


def as_list(item: Any) -> list[Any]:
    if item is None:
        return []
    return item if isinstance(item, list) else [item]


def document(conf: dict[str, Any], key: str) -> dict[str, Any] | None:
    """A JSON document attribute (policy, configuration), or None when it is not literal JSON."""
    raw = value(conf, key)
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def statements(policy: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in as_list(policy.get("Statement")) if isinstance(s, dict)]
