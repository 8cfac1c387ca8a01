"""Tags every data lake resource carries."""
from __future__ import annotations

from collections.abc import Mapping

VENDOR_TAG = {"vendor": "segment"}
# AmazonEMRServicePolicy_v2 only acts on resources that carry this tag.
EMR_MANAGED_POLICY_TAG = {"for-use-with-amazon-emr-managed-policies": "true"}


def with_vendor_tag(user_tags: Mapping[str, str] | None, *extra: Mapping[str, str]) -> dict[str, str]:
    """User tags plus the fixed ones; vendor=segment wins over any user value."""
    merged = dict(user_tags or {})
    for more in extra:
        merged.update(more)
    merged.update(VENDOR_TAG)
    return merged
