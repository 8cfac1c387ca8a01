"""Checks run at construction time; each failure is one line naming the bad value and the fix."""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping

from .aws import Token


class DataLakeConfigError(ValueError):
    """A prop of a data lake construct has a value that cannot be deployed."""


def fail(message: str) -> None:
    raise DataLakeConfigError(message)


def is_token(value: object) -> bool:
    """True for values only known at apply time (references to other resources)."""
    return isinstance(value, str) and Token.is_unresolved(value)


_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def bucket_name(name: str) -> str:
    if is_token(name):
        return name
    problem = None
    if not isinstance(name, str) or not _BUCKET_NAME.match(name):
        problem = "use 3-63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit"
    elif ".." in name or ".-" in name or "-." in name:
        problem = "remove adjacent dots and dot-hyphen pairs"
    elif name.startswith(("xn--", "sthree-", "amzn-s3-demo-")) or name.endswith(("-s3alias", "--ol-s3", "--x-s3")):
        problem = "avoid the prefixes and suffixes S3 reserves"
    else:
        try:
            ipaddress.ip_address(name)
            problem = "use a name, not an IP address"
        except ValueError:
            pass
    if problem:
        fail(f"invalid S3 bucket name {name!r}: {problem}")
    return name


# sts:ExternalId allows these characters, 2 to 1224 of them.
_EXTERNAL_ID = re.compile(r"^[\w+=,.@:/-]{2,1224}$")


def external_ids(ids: Iterable[str]) -> list[str]:
    if isinstance(ids, str):  # list("ws123") would be five one-letter ids
        fail(f"external_ids={ids!r} is a string: pass a list, external_ids=[{ids!r}]")
    ids = list(ids or [])
    if not ids:
        fail("external_ids is empty: pass your Segment workspace id(s) so only your workspace can assume the role")
    for value in ids:
        if is_token(value):
            continue
        if not isinstance(value, str) or not _EXTERNAL_ID.match(value):
            fail(f"invalid external id {value!r}: use 2-1224 characters of letters, digits and +=,.@:/-_ "
                 f"(your Segment workspace id)")
    if len(set(ids)) != len(ids):
        fail(f"external_ids {ids!r} repeats a value: list each workspace id once")
    return ids


_ROLE_OR_ACCOUNT_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:(root|role/[\w+=,.@/-]+|user/[\w+=,.@/-]+)$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")


def principal_arns(arns: Iterable[str], what: str) -> list[str]:
    arns = list(arns or [])
    if not arns:
        fail(f"{what} is empty: name at least one IAM principal ARN")
    for arn in arns:
        if not is_token(arn) and not _ROLE_OR_ACCOUNT_ARN.match(str(arn)):
            fail(f"invalid {what} entry {arn!r}: use an IAM role, user or account root ARN such as "
                 f"arn:aws:iam::123456789012:role/name")
    return arns


def role_arns(arns: Iterable[str], what: str) -> list[str]:
    arns = list(arns or [])
    for arn in arns:
        if not is_token(arn) and not _ROLE_ARN.match(str(arn)):
            fail(f"invalid {what} entry {arn!r}: Lake Formation needs an IAM role ARN such as "
                 f"arn:aws:iam::123456789012:role/name, not an instance profile name")
    return arns


# What every name the suffix ends takes: IAM's roles and policies, EventBridge Scheduler's groups and schedules, SNS's
# topics, EventBridge's rules and CloudWatch's alarms (SNS and Scheduler refuse IAM's +=,.@).
NAME_SUFFIX = r"[A-Za-z0-9_-]{0,20}"


def name_suffix(suffix: str) -> str:
    return matches(suffix or "", NAME_SUFFIX, "name suffix",
                   "use up to 20 letters, digits, '-' or '_' (for example '-prod'): the names of IAM, EventBridge "
                   "Scheduler, SNS and EventBridge all take these")


def cidr_block(block: str, what: str) -> str:
    if is_token(block):
        return block
    try:
        ipaddress.IPv4Network(block)
    except (TypeError, ValueError):
        fail(f"invalid {what} entry {block!r}: use an IPv4 CIDR block such as 10.0.0.0/16 or 0.0.0.0/0")
    return block


def cluster_name(name: str) -> str:
    return matches(name, r"[\w .-]{1,256}", "cluster name", "use letters, digits, spaces, '.', '-' or '_'")


def iam_name(name: str, what: str) -> str:
    """A role's or instance profile's name, without a path."""
    return matches(name, r"[\w+=,.@-]{1,64}", what, "use the name (up to 64 letters, digits or +=,.@-_), not an ARN or a path")


_RELEASE_LABEL = re.compile(r"^emr-(\d+)\.(\d+)\.(\d+)$")


def release_label(label: str) -> str:
    match = _RELEASE_LABEL.match(label or "")
    if not match:
        fail(f"unknown EMR release label format {label!r}: use emr-MAJOR.MINOR.PATCH, for example emr-7.13.0")
    if (int(match.group(1)), int(match.group(2))) < (7, 1):
        fail(f"EMR release {label!r} is too old: the sync needs Spark 3.5 and Python 3.11 (emr-7.1.0 or newer), "
             f"use emr-7.13.0")
    return label


def at_least(value: int, minimum: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        fail(f"{what} is {value!r}: it must be a whole number of at least {minimum}")
    return value


def not_above(low: int, high: int, low_name: str, high_name: str) -> None:
    if low > high:
        fail(f"{low_name} ({low}) is greater than {high_name} ({high}): raise {high_name} or lower {low_name}")


def one_of(value: str, choices: Iterable[str], what: str) -> str:
    choices = list(choices)
    if value not in choices:
        fail(f"unknown {what} {value!r}: use one of {', '.join(choices)}")
    return value


def matches(value: str, pattern: str, what: str, advice: str) -> str:
    if is_token(value):
        return value
    if not isinstance(value, str) or not re.fullmatch(pattern, value):
        fail(f"invalid {what} {value!r}: {advice}")
    return value


def matches_name(value: str, name) -> str:
    """``value`` when it is a token or matches ``name`` (a ``segment_lake_contract.NamePattern``)."""
    return matches(value, name.pattern, name.what, name.advice)


def schedule_expression(expression: str) -> str:
    return matches(expression,
                   r"rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(.+\)|at\(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\)",
                   "schedule expression", "use rate(2 hours), cron(0 */2 * * ? *) or at(yyyy-mm-ddThh:mm:ss)")


def tags(user_tags: Mapping[str, str] | None) -> dict[str, str]:
    user_tags = dict(user_tags or {})
    for key, value in user_tags.items():
        if not isinstance(key, str) or not 1 <= len(key) <= 128 or key.startswith("aws:"):
            fail(f"invalid tag key {key!r}: use 1-128 characters not starting with 'aws:'")
        if not isinstance(value, str) or len(value) > 256:
            fail(f"invalid value {value!r} for tag {key!r}: use a string of at most 256 characters")
    return user_tags
