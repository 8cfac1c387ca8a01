"""Marks, by address, the resources whose checkov findings the policy scan may accept
(``segment_data_lake_scan/accepted-skips.json``). The marks go into the synthesized stack itself, under a comment
key (``//``) that Terraform ignores, so the scan accepts a documented skip only for a resource these
constructs made, never for every resource of a type (a user's own bucket keeps its findings)."""
from __future__ import annotations

import weakref

from .aws import TerraformResource, TerraformStack

MARKS_KEY = "segment_data_lake_scan"

_MARKED: weakref.WeakKeyDictionary[TerraformStack, dict[str, list[str]]] = weakref.WeakKeyDictionary()


def mark(resource: TerraformResource, role: str) -> None:
    """Record ``resource`` under ``role`` (the ``applies_to`` of the skips it may take)."""
    stack = TerraformStack.of(resource)
    roles = _MARKED.setdefault(stack, {})
    roles.setdefault(role, []).append(f"{resource.terraform_resource_type}.{stack.get_logical_id(resource)}")
    stack.add_override(f"//.{MARKS_KEY}.{role}", list(roles[role]))
