"""Look-ups in a synthesized stack (cdk.tf.json as a dict)."""
from __future__ import annotations

import json


def resources(stack: dict, rtype: str) -> dict[str, dict]:
    return stack.get("resource", {}).get(rtype, {})


def only(stack: dict, rtype: str) -> dict:
    found = list(resources(stack, rtype).values())
    assert len(found) == 1, f"expected one {rtype}, found {len(found)}"
    return found[0]


def named(stack: dict, rtype: str, path_part: str) -> dict:
    """The resource of ``rtype`` whose construct path contains ``path_part``."""
    found = [r for r in resources(stack, rtype).values() if path_part in r["//"]["metadata"]["path"]]
    assert len(found) == 1, f"expected one {rtype} at *{path_part}*, found {len(found)}"
    return found[0]


def policy(resource: dict, key: str = "policy") -> dict:
    return json.loads(resource[key])


def statement(document: dict, sid: str) -> dict:
    found = [s for s in document["Statement"] if s.get("Sid") == sid]
    assert len(found) == 1, f"no statement {sid}"
    return found[0]


def as_list(value) -> list:
    return value if isinstance(value, list) else [value]
