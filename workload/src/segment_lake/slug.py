"""Slugs for table and column names: ``productId`` -> ``product_id``, ``101 Account Update`` -> ``101_account_update``."""
from __future__ import annotations

import functools
import re

# A boundary before an upper-case letter that follows a lower-case letter or digit
# (productId), and inside runs of capitals before a capitalized word (HTMLPage).
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=1 << 16)  # the same keys recur in every event
def slug(text: str) -> str:
    """Split camelCase, lower-case, turn every run of other characters into ``_``, trim ``_``."""
    return _NOT_ALNUM.sub("_", _CAMEL_BOUNDARY.sub("_", text).lower()).strip("_")
