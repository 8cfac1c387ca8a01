"""Write: a run's tables in one Spark job into the run's stage folder (publish.py then moves them into the lake),
through the storage port's table writer (parquet_tables.py), and the record of its dropped duplicates."""
from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from .parquet_tables import DUPLICATES, TablePlan, WrittenFile
from .records import Inferred, Written
from .storage import LakeStorage
from .uris import join

if TYPE_CHECKING:
    from .environment import SyncEnvironment


def write_duplicates(duplicates: DataFrame, count: int, stage_uri: str, storage: LakeStorage) -> list[WrittenFile]:
    """Write the record of a run's ``count`` dropped duplicates as one Parquet file below ``stage_uri``."""
    folder = join(stage_uri, DUPLICATES)
    storage.write_frame(duplicates.coalesce(1), folder)
    return [WrittenFile(DUPLICATES, None, None, f.uri, count) for f in storage.list_files(folder)
            if f.uri.endswith(".parquet")]


def write(env: SyncEnvironment, inferred: Inferred) -> Written:
    """Writes every table and the discards in one job, and the duplicates' record, into the run's stage folder."""
    schemas, deduped = inferred.schemas, inferred.deduped
    stage = env.layout.stage(inferred.run.run_id)
    env.storage.delete(stage, recursive=True)  # a crashed attempt's files
    # a table keeps the partitioning it was made with; a new one takes the run's
    known = inferred.catalog
    hidden_hours = frozenset(table for table in schemas
                             if (known[table].hidden_hours if known.get(table) else env.settings.hidden_hours))
    plan = TablePlan({table: list(schema.columns) for table, schema in schemas.items()}, env.keys, stage,
                     env.settings.max_records_per_file, env.settings.max_columns_per_table, env.settings.table_format,
                     hidden_hours)
    files = env.storage.write_tables(deduped.accepted, plan)
    if deduped.duplicate_count:
        files += write_duplicates(deduped.duplicates.drop("_row"), deduped.duplicate_count, stage, env.storage)
    return Written(inferred, files)
