"""The Segment sources a data lake syncs, and their validation."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import segment_lake_contract as contract

from . import validation

DATE_PARTITIONS = tuple(contract.DATE_PARTITIONS)


@dataclass(frozen=True)
class SegmentSource:
    """One Segment source whose events land in the lake.

    :param source_id: the Segment source id (letters and digits), used in S3 paths.
    :param slug: the source slug; names the default Glue database and the schedule.
    :param glue_database: Glue database of the source's tables (default: the slug,
        with characters Glue does not allow turned into ``_``).
    :param table_prefix: starts every table name, joined with ``_`` as Segment does
        (``ios`` gives ``ios_identify``; ``ios_`` the same); required and distinct when
        sources share a database.
    :param date_partition: ``day_hour`` (default), ``year_month_day_hour``,
        ``year_month_day`` or ``day``.
    :param partition_projection: the event tables the syncs create get Athena partition
        projection: Glue holds one object per table instead of one per table and hour, and
        a sync makes no Glue request for a new hour. Only Athena sees their partitions
        (Spark and Hive on EMR, Redshift Spectrum and Glue jobs see none), and compaction
        leaves them alone (default False; docs/lake-format.md, Partition projection).
    :param table_format: ``parquet`` (default): Segment's layout, Hive-style folders with a Glue partition per
        table and hour; ``iceberg``: Apache Iceberg v2 tables in Glue, one commit per table and run, partitions in
        the tables' own metadata (the cluster then runs EMR's Iceberg; docs/lake-format.md, Iceberg tables). All of
        a source's tables are of one format: a sync refuses a table of the other.
    :param iceberg_partitioning: how the syncs partition a new Iceberg table: ``keys`` (default), by identity on the
        date partition's keys, which are columns (``WHERE day = ...`` prunes, as in the Parquet layout); ``hours``,
        by Iceberg's hidden ``hours(received_at)``, with no key columns (``WHERE received_at ...`` prunes; needs a
        date partition by the hour). A table keeps the partitioning it was made with.
    """

    source_id: str
    slug: str
    glue_database: str | None = None
    table_prefix: str = ""
    date_partition: str = "day_hour"
    partition_projection: bool = False
    table_format: str = "parquet"
    iceberg_partitioning: str = "keys"

    def __post_init__(self) -> None:
        validation.matches_name(self.source_id, contract.SOURCE_ID)
        validation.matches(self.slug, r"[a-z0-9][a-z0-9_-]{0,99}", "source slug",
                           "use lower-case letters, digits, '-' or '_', starting with a letter or digit")
        if self.glue_database is not None:
            validation.matches_name(self.glue_database, contract.GLUE_DATABASE)
        validation.matches_name(self.table_prefix, contract.TABLE_PREFIX)
        validation.one_of(self.date_partition, DATE_PARTITIONS, "date partition")
        validation.one_of(self.table_format, contract.TABLE_FORMATS, "table format")
        if self.table_format == "iceberg" and self.partition_projection:
            validation.fail(f"source {self.source_id}: partition_projection is for the Parquet layout's Glue "
                            "partitions, and an Iceberg table keeps its partitions in its own metadata: leave it out")
        validation.one_of(self.iceberg_partitioning, contract.ICEBERG_PARTITIONINGS, "Iceberg partitioning")
        if self.iceberg_partitioning == "hours" and self.table_format != "iceberg":
            validation.fail(f"source {self.source_id}: iceberg_partitioning='hours' partitions Iceberg tables: "
                            "set table_format='iceberg', or leave it out")
        if self.iceberg_partitioning == "hours" and not contract.hourly(self.date_partition):
            validation.fail(f"source {self.source_id}: iceberg_partitioning='hours' puts each file in the hour of its "
                            f"rows, and date_partition={self.date_partition!r} writes a file a day: use "
                            f"{' or '.join(map(repr, contract.HOURLY_DATE_PARTITIONS))}")

    @property
    def database(self) -> str:
        return self.glue_database or contract.database_name(self.slug)

    @property
    def table_name_prefix(self) -> str:
        """What the sync starts table names with (``segment_lake_contract.join_prefix``)."""
        return contract.join_prefix(self.table_prefix)


def validate_sources(sources: Iterable[SegmentSource]) -> list[SegmentSource]:
    """Sources are unique and never write the same table of a shared database."""
    sources = list(sources)
    if not sources:
        validation.fail("sources is empty: add at least one SegmentSource(source_id=..., slug=...)")
    for kind, key, fix in (
            ("source id", lambda s: s.source_id, "list each source once"),
            # two sources of one slug would name one database and one set of tables
            ("source slug", lambda s: s.slug, "give each source its own slug (Segment's source slugs are unique)")):
        seen: set[str] = set()
        for source in sources:
            if key(source) in seen:
                validation.fail(f"{kind} {key(source)!r} is used by two sources: {fix}")
            seen.add(key(source))
    by_database: dict[str, list[SegmentSource]] = defaultdict(list)
    for source in sources:
        by_database[source.database].append(source)
    for database, sharing in by_database.items():
        if len(sharing) < 2:
            continue
        prefixes = [s.table_name_prefix for s in sharing]  # "ios" and "ios_" name the same tables
        if "" in prefixes or len(set(prefixes)) != len(prefixes):
            names = ", ".join(f"{s.slug} (prefix {s.table_prefix!r})" for s in sharing)
            validation.fail(f"sources {names} share Glue database {database!r}: give each a distinct non-empty table_prefix")
    return sources
