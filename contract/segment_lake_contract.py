"""The lake's names, shared by the sync and the CDKTF constructs (no Spark here, so the constructs can
import it): date partitions, the slug of event and key names, database and table-prefix names, and
the patterns of the names a user passes. ``jvm/ParseEvent.java`` applies the same slug to every
event (a test holds the two to the same answers)."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# date partition option -> partition keys and the receivedAt pattern (java.time) of each
DATE_PARTITIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "day_hour": (("day", "yyyy-MM-dd"), ("hr", "HH")),
    "year_month_day_hour": (("year", "yyyy"), ("month", "MM"), ("day", "dd"), ("hr", "HH")),
    "year_month_day": (("year", "yyyy"), ("month", "MM"), ("day", "dd")),
    "day": (("day", "yyyy-MM-dd"),),
}

# table format option: Hive-style Parquet folders, one catalog partition an hour (Segment's, the default), or
# Apache Iceberg v2 tables, one commit a table and run
TABLE_FORMATS = ("parquet", "iceberg")

# how a new Iceberg table is partitioned: by identity on the date partition's keys (columns of the table, so that
# WHERE day = ... prunes, as in the Parquet layout), or by Iceberg's hidden hours(received_at), with no key columns
# (WHERE received_at ... prunes; the date partition must have an hour)
ICEBERG_PARTITIONINGS = ("keys", "hours")


def hourly(date_partition: str) -> bool:
    """Whether a date partition's finest key is the hour."""
    return DATE_PARTITIONS[date_partition][-1][1] == "HH"


HOURLY_DATE_PARTITIONS = tuple(name for name in DATE_PARTITIONS if hourly(name))


@dataclass(frozen=True)
class NamePattern:
    """What a name must look like (a regular expression, matched whole), and what to tell a user who passes
    another."""

    pattern: str
    what: str
    advice: str

    def matches(self, value: object) -> bool:
        return isinstance(value, str) and re.fullmatch(self.pattern, value) is not None


SOURCE_ID = NamePattern(r"[A-Za-z0-9]{1,64}", "source id", "use the Segment source id, letters and digits only")
GLUE_DATABASE = NamePattern(r"[a-z0-9_]{1,255}", "Glue database name", "use lower-case letters, digits and '_'")
TABLE_PREFIX = NamePattern(r"([a-z0-9][a-z0-9_]{0,49})?", "table prefix",
                           "use lower-case letters, digits and '_', for example 'ios_'")

# A boundary before an upper-case letter that follows a lower-case letter or digit
# (productId), and inside runs of capitals before a capitalized word (HTMLPage).
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=1 << 16)  # the same keys recur in every event
def slug(text: str) -> str:
    """An event or key name as a table or column name: split camelCase, lower-case, turn every run of
    other characters into ``_``, trim ``_`` (``productId`` -> ``product_id``)."""
    return _NOT_ALNUM.sub("_", _CAMEL_BOUNDARY.sub("_", text).lower()).strip("_")


def database_name(source_slug: str) -> str:
    """A source slug (or id) names its database as Segment does: lower-cased, every run of characters other
    than letters, digits and ``_`` turned into ``_``, no camelCase split (``iOS Prod`` -> ``ios_prod``)."""
    return re.sub(r"[^a-z0-9_]+", "_", source_slug.lower()).strip("_")


def join_prefix(prefix: str) -> str:
    """Segment's ``<prefix>_<event type>``: a prefix that already ends in ``_`` gets no second one."""
    return prefix if not prefix or prefix.endswith("_") else prefix + "_"


# The lake bucket's top-level prefixes. Each role's S3 policy is written from these (who may write
# where), so a prefix is named here once for the sync, the constructs and the checks.
DATA_PREFIX = "segment-data/"  # tables, reports and the sync's state: the sync writes
STAGE_PREFIX = "segment-stage/"  # a run's files before they are published: the sync writes, a rule expires
RAW_PREFIX = "segment-logs/"  # the raw events Segment's S3 destination writes: the sync only reads
# Below DATA_PREFIX: the folders a reader of the lake reads (each source's tables, discarded values and, in its
# state, record of duplicates; the sync reports), and the sync's state
TABLES_PREFIX = DATA_PREFIX + "data/"
DISCARDS_PREFIX = DATA_PREFIX + "discards/"
REPORTS_PREFIX = DATA_PREFIX + "reports/"
STATE_PREFIX = DATA_PREFIX + "state/"
DUPLICATES_FOLDER = "duplicates"  # in each source's state folder
LOGS_PREFIX = "logs/"  # EMR's logs, pushed by the nodes
APP_PREFIX = "segment-lake-app/"  # the sync app's releases: written by terraform only, run by every step
# Where the constructs put each replay cluster's template (``<prefix><cluster name>.json`` in the lake
# bucket): the EMR RunJobFlow request of the cluster and each source's replay step, without the window,
# which `segment-lake replay-on-emr` fills in. Written by terraform only.
REPLAY_TEMPLATES_PREFIX = "segment-lake-replay/"
# The Glue database of the sync reports, shared by every source (Segment's name).
REPORTS_DATABASE = "__segment_datalake"
REPLAY_TEMPLATE_FORMAT = 1


# The names of the lake's EMR steps and replay clusters: what the EMR console shows, and what the alerts' rules hear
# them by. A step of a source ends its name with step_name_end (the rule matches that suffix); a replay cluster
# starts its name with replay_cluster_prefix.
def step_name_end(source_id: str) -> str:
    return f" ({source_id})"


def step_name(command: str, source_slug: str, source_id: str, window: str = "") -> str:
    """``segment-lake sync web (src1)``; a replay's with its window: ``segment-lake replay web 2024-01-01..2024-01-31
    (src1)``."""
    return f"segment-lake {command} {source_slug}{f' {window}' if window else ''}{step_name_end(source_id)}"


def replay_cluster_prefix(cluster_name: str) -> str:
    return f"{cluster_name} "


def replay_cluster_name(cluster_name: str, source_slug: str, window: str) -> str:
    return f"{replay_cluster_prefix(cluster_name)}{source_slug} {window}"

# Two events with one messageId are duplicates when received at most this many days apart (the sync keeps the first).
DEDUP_WINDOW_DAYS = 7
# The CloudWatch namespace the syncs write their figures to (metrics.py) and the stack's alarms and IAM name; one
# dimension, the source.
METRICS_NAMESPACE = "SegmentDataLake"
METRICS_DIMENSION = "SourceId"
# A run's outcome, counted apart for scheduled syncs and replays: the no-sync alarm watches SyncsFinished alone, so
# that a replay cannot hide a schedule that stopped.
SYNCS_FINISHED, SYNCS_FAILED = "SyncsFinished", "SyncsFailed"
REPLAYS_FINISHED, REPLAYS_FAILED = "ReplaysFinished", "ReplaysFailed"
METRICS_NAMESPACE_NAME = NamePattern(r"[A-Za-z0-9._/#-][A-Za-z0-9._/#: -]{0,254}", "CloudWatch namespace",
                                     "use up to 255 letters, digits and . _ / # : - or spaces, not starting with ':'")

# Compaction's defaults: Segment advises files of about 256 MB for Athena and Spark, and a partition a day old
# takes no more events from a sync.
DEFAULT_TARGET_FILE_MB = 256
DEFAULT_OLDER_THAN_HOURS = 24
