"""Errors a sync reports, each with the error code of Segment's sync reports."""
from __future__ import annotations

import re

from . import interrupt


class SyncError(Exception):
    """A sync failed; ``code`` is ``insufficient_permissions``, ``invalid_settings`` or ``internal``."""

    code = "internal"


class InvalidSettings(SyncError):
    code = "invalid_settings"


class InsufficientPermissions(SyncError):
    code = "insufficient_permissions"


class InvalidQuery(SyncError):
    """``segment-lake sql`` was given a statement Spark cannot run (not a sync error: no report has it)."""

    code = "invalid_query"


def missing_input(uri: str) -> InvalidSettings:
    return InvalidSettings(f"input {uri} does not exist: check --input (Segment writes segment-logs/<source-id>/ in the bucket)")


OOM_EXIT_CODE = 52  # SparkExitCode.OOM: Spark exits its JVM when a task runs out of memory


class SparkDied(SyncError):
    """Spark's JVM ran out of memory or exited; nothing more can run in this process."""


def jvm_failure(error: BaseException, exit_code: int | None, memory: str | None) -> SparkDied | None:
    """The failure to report when Spark's JVM ran out of memory or exited (``exit_code``), else None."""
    if exit_code == OOM_EXIT_CODE or "java.lang.OutOfMemoryError" in _text(error):
        return SparkDied(f"Spark's JVM ran out of memory (java.lang.OutOfMemoryError) with a {memory or 'default'} heap: "
                         f"run again with a larger --driver-memory (or SEGMENT_LAKE_DRIVER_MEMORY); "
                         f"the next sync redoes this run")
    if exit_code is not None:
        return SparkDied(f"Spark's JVM exited with code {exit_code} (see its lines above): "
                         f"the next sync redoes this run")
    return None


def _text(error: BaseException) -> str:
    try:
        return " ".join(str(error).split())
    except Exception:  # py4j's errors ask the JVM for their text, and it may be gone
        return ""


_DENIED_MARKERS = ("AccessDenied", "AccessDeniedException", "403 Forbidden", "Status Code: 403", "UnauthorizedOperation",
                   "not authorized", "Permission denied")


def _denied_request(error: BaseException) -> str | None:
    """An AWS API call refused for lack of permission (botocore's ClientError), named by action and message
    (AWS's message names the principal, the action and the resource)."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code", "")
    if code not in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "Forbidden", "403"):
        return None
    action = getattr(error, "operation_name", None) or "an AWS action"
    message = " ".join((response.get("Error", {}).get("Message") or code).split())
    return f"access denied to {action}: {message[:400]}; give the EMR instance role this action on this resource"


# s3a's words for what it was doing -> the IAM action the call needs
_S3A_ACTIONS = (("copy", "s3:GetObject and s3:PutObject"), ("delete", "s3:DeleteObject"), ("list", "s3:ListBucket"),
                ("put", "s3:PutObject"), ("upload", "s3:PutObject"), ("multipart", "s3:PutObject"),
                ("", "s3:GetObject"))
_S3A_DENIED = re.compile(r"AccessDeniedException: (?P<path>(?:s3a?://)?[^:]+): (?P<operation>.+?) on (?:s3a?://)?[^:]*: "
                         r"(?:\S*AmazonS3Exception: )?(?P<message>[^;(]*)")


def _denied_s3a_call(text: str) -> str | None:
    """An s3a (or EMRFS) call refused with a 403, named by the action it needs and the object."""
    found = _S3A_DENIED.search(text)
    if not found:
        return None
    operation = found["operation"].strip()
    action = next(action for word, action in _S3A_ACTIONS if word in operation.lower())
    return (f"access denied to {action} ({operation}) on {found['path'].strip()}: {found['message'].strip()}; "
            f"give the EMR instance role {action} on the lake bucket's objects")


def classify(error: BaseException) -> tuple[str, str]:
    """(error_code, one-line message naming what to fix) for any failure of a sync."""
    if isinstance(error, SyncError | interrupt.Interrupted):
        return error.code, str(error)
    if interrupt.received():  # Spark's jobs were cancelled: whatever failed, the signal stopped it
        return interrupt.Interrupted.code, str(interrupt.Interrupted(interrupt.received()))
    text = _text(error)
    denied = _denied_request(error)
    if denied:
        return InsufficientPermissions.code, denied
    if isinstance(error, PermissionError):  # a local lake or input this user may not write or read
        return InsufficientPermissions.code, (
            f"permission denied: {error.filename or text}: let the user running the sync read the input and write the lake")
    denied = _denied_s3a_call(text)
    if denied:
        return InsufficientPermissions.code, denied
    if any(marker in text for marker in _DENIED_MARKERS):
        return InsufficientPermissions.code, (
            f"access denied: {text[:300]}; give the EMR instance role access to the bucket and the Glue catalog")
    return SyncError.code, f"{type(error).__name__}: {text[:500]}"
