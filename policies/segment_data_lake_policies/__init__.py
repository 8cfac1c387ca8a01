"""The policy documents the constructs attach (IAM roles' trust and permissions, the bucket's, the keys' and the
alert topic's), kept readable as JSON beside this module (package data), and their rendering.

Templates hold ``{{name}}`` placeholders. A string that is exactly one
placeholder may take a list (for example several external ids); otherwise the
value is spliced into the string. Values may be Terraform tokens.
"""
from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

TEMPLATES = resources.files(__name__)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def _fill(node: Any, values: dict[str, Any], template: str) -> Any:
    if isinstance(node, dict):
        return {key: _fill(item, values, template) for key, item in node.items()}
    if isinstance(node, list):
        return [_fill(item, values, template) for item in node]
    if not isinstance(node, str):
        return node

    def lookup(name: str) -> Any:
        if name not in values:
            raise KeyError(f"policy template {template} needs a value for {{{{{name}}}}}")
        return values[name]

    whole = _PLACEHOLDER.fullmatch(node)
    if whole:
        return lookup(whole.group(1))
    return _PLACEHOLDER.sub(lambda m: str(lookup(m.group(1))), node)


def render(template: str, **values: Any) -> dict[str, Any]:
    """The policy document of ``<template>.json`` with placeholders filled."""
    document = json.loads((TEMPLATES / f"{template}.json").read_text())
    return _fill(document, values, template)


def render_json(template: str, **values: Any) -> str:
    return json.dumps(render(template, **values), indent=2)
