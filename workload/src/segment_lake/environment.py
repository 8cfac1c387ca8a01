"""What a sync works with, made once and handed to every stage: Spark, the settings, the lake's storage and catalog,
the source's layout, state and lock, and where progress goes. Tests hand in storage and catalogs that record their
writes or fail at one on purpose (tests/crash_points.py)."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession

from .catalog import Catalog
from .layout import LakeLayout
from .lock import SourceLock
from .progress import Progress
from .route import partition_keys
from .settings import SyncSettings
from .state import SourceState
from .storage import LakeStorage


@dataclass(frozen=True)
class SyncEnvironment:
    spark: SparkSession
    settings: SyncSettings
    catalog: Catalog
    storage: LakeStorage
    layout: LakeLayout
    state: SourceState
    lock: SourceLock
    progress: Progress

    @property
    def keys(self) -> list[str]:
        """The date partition's keys (``day``, ``hr``)."""
        return partition_keys(self.settings.date_partition)

    @property
    def shuffle_partitions(self) -> int:
        return int(self.spark.conf.get("spark.sql.shuffle.partitions"))

    def table_location(self, table: str) -> str:
        """The folder of a table, named with the run's prefix."""
        return self.layout.table_of_name(table, self.settings.table_name_prefix)
