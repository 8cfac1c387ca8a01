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

# Stored bytes (gzipped input, Parquet ids) per task of a shuffle that a run's size bounds (the parse's, dedup's), up to
# the session's shuffle partitions. Every stage after a shuffle runs one task per partition, and a task costs 10-20 ms
# however few its rows: the 19 sample lines ran 78 tasks, 43 with the parse so, 14 with dedup too
# (docs/performance.md). 2 MB of gzipped events is about 13,000; a run of 16 MB or more gets every partition.
STORED_BYTES_PER_TASK = 2 << 20


def shuffle_tasks(stored_bytes: int, partitions: int) -> int:
    """The tasks of a shuffle of what ``stored_bytes`` hold: one per STORED_BYTES_PER_TASK, 1 to ``partitions``."""
    return max(1, min(partitions, -(-stored_bytes // STORED_BYTES_PER_TASK)))


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

    def shuffle_tasks(self, stored_bytes: int) -> int:
        """The tasks of a shuffle of ``stored_bytes``, up to the session's shuffle partitions."""
        return shuffle_tasks(stored_bytes, int(self.spark.conf.get("spark.sql.shuffle.partitions")))

    def table_location(self, table: str) -> str:
        """The folder of a table, named with the run's prefix."""
        return self.layout.table_of_name(table, self.settings.table_name_prefix)
