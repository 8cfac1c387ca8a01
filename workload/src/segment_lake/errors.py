"""Errors a sync reports, each with the error code of Segment's sync reports."""
from __future__ import annotations


class SyncError(Exception):
    """A sync failed; ``code`` is ``insufficient_permissions``, ``invalid_settings`` or ``internal``."""

    code = "internal"


class InvalidSettings(SyncError):
    code = "invalid_settings"


class InsufficientPermissions(SyncError):
    code = "insufficient_permissions"


_DENIED_MARKERS = ("AccessDenied", "AccessDeniedException", "403 Forbidden", "Status Code: 403", "UnauthorizedOperation",
                   "not authorized")


def classify(error: BaseException) -> tuple[str, str]:
    """(error_code, one-line message naming what to fix) for any failure of a sync."""
    if isinstance(error, SyncError):
        return error.code, str(error)
    text = " ".join(str(error).split())
    if any(marker in text for marker in _DENIED_MARKERS):
        return InsufficientPermissions.code, (
            f"access denied: {text[:300]}; give the EMR instance role access to the bucket and the Glue catalog")
    return SyncError.code, f"{type(error).__name__}: {text[:500]}"
