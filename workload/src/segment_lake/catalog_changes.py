"""The catalog stage's input: what a run changes in the catalog, as TableChanges: its tables (columns, partitions,
folder), and the source's records of discarded values and duplicates when the run added to them."""
from __future__ import annotations

from typing import TYPE_CHECKING

from segment_lake_contract import HOURLY_DATE_PARTITIONS, hourly

from .catalog import TableChange
from .dedup import DUPLICATE_COLUMNS
from .errors import InvalidSettings
from .names import DISCARDS_TABLE, DUPLICATES_TABLE
from .parquet_tables import DISCARD_COLUMNS
from .records import Inferred, Published
from .route import partition_values

if TYPE_CHECKING:
    from .environment import SyncEnvironment


def table_changes(env: SyncEnvironment, inferred: Inferred) -> list[TableChange]:
    """The run's tables with their schemas and the partitions its events fall in, in the source's table format:
    refused, before anything is written, when a table of the source is already of the other format, or partitioned
    by the hour of received_at while the date partition writes a file a day."""
    chosen, date_partition = env.settings.table_format, env.settings.date_partition
    for table, info in inferred.catalog.items():
        if info is not None and table in inferred.schemas and info.table_format != chosen:
            raise other_format(f"{env.settings.database}.{table}", info.table_format)
        if info is not None and table in inferred.schemas and info.hidden_hours and not hourly(date_partition):
            raise InvalidSettings(f"table {env.settings.database}.{table} is partitioned by the hour of received_at, "
                                  f"and --date-partition {date_partition} writes a file a day: use "
                                  f"{' or '.join(HOURLY_DATE_PARTITIONS)}")
    return [TableChange(table, schema.columns, tuple(env.keys),
                        tuple(partition_values(path) for path in inferred.observed.partitions[table]),
                        env.table_location(table), env.settings.table_format)
            for table, schema in inferred.schemas.items()]


def other_format(table: str, table_format: str) -> InvalidSettings:
    """The refusal of a sync in another format than ``table``'s (``database.table``), ``table_format``."""
    return InvalidSettings(f"table {table} is in the {table_format} format, and all of a source's tables share one: "
                           f"sync it with --table-format {table_format}")


def record_changes(env: SyncEnvironment, published: Published) -> list[TableChange]:
    """The discards table (partitioned by run) and the duplicates table, when the run added to them."""
    prefix, records, run_id = env.settings.table_name_prefix, [], published.run.run_id
    duplicate_count = published.written.inferred.deduped.duplicate_count
    if published.discarded_value_count:
        records.append(TableChange(prefix + DISCARDS_TABLE, DISCARD_COLUMNS, ("run_id",), ((run_id,),),
                                   env.layout.discards))
    if duplicate_count:
        records.append(TableChange(prefix + DUPLICATES_TABLE, DUPLICATE_COLUMNS, (), (), env.state.duplicates_uri))
    return records
