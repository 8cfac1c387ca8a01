"""What every command on a lake does around its own work, written once: it refuses a lake folder that is not there,
starts one Spark session when the work first needs it, opens the catalog the settings name, holds the source's lock
(waiting, failing or skipping as asked), says progress on stderr and prints the work's report lines on stdout."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property

from segment_lake_contract import DATE_PARTITIONS

from . import iceberg_tables, session
from .catalog import Catalog
from .catalog.glue import GlueCatalog
from .catalog.local import LocalCatalog
from .layout import LakeLayout
from .lock import SourceBusy, SourceLock, source_lock
from .progress import stderr_sink
from .settings import LakeSettings, LockWait, SessionOptions, SourceSettings
from .storage import HadoopStorage, LakeStorage, read_text_without_spark

NO_WAIT = LockWait()


class Runner:
    """One command's run over ``settings``; ``uses_catalog`` starts Spark with the lake's embedded metastore when the
    settings name the local catalog."""

    def __init__(self, command: str, settings: LakeSettings, options: SessionOptions, *, uses_catalog: bool = False,
                 reads_only: bool = False, record_classes: bool = False) -> None:
        self.command, self.settings, self.session_options = command, settings, options
        self.uses_catalog, self.reads_only, self.record_classes = uses_catalog, reads_only, record_classes
        self.iceberg = isinstance(settings, SourceSettings) and settings.table_format == "iceberg"

    @property
    def name(self) -> str:
        return " ".join(filter(None, ("segment-lake", self.command, self.settings.source_id)))

    @property
    def layout(self) -> LakeLayout:
        return self.settings.layout

    @cached_property
    def spark(self):
        options = self.session_options
        return session.build_session(self.name, self.settings.lake_uri,
                             local_catalog=self.uses_catalog and self._catalog_kind == "local",
                             memory=options.driver_memory, task_slots=options.cores, verbose=options.verbose,
                             reads_only=self.reads_only, record_classes=self.record_classes,
                             iceberg=self.iceberg)

    @property
    def _catalog_kind(self) -> str:
        """The settings' catalog; for a command without one, the lake's embedded metastore for a local lake, else
        the cluster's (Glue)."""
        return getattr(self.settings, "catalog", "local" if self.settings.lake_uri.startswith("file:") else "glue")

    def open_recorded_iceberg_tables(self) -> None:
        """Opens the session, before its first use, with Iceberg and the catalog of the source's Iceberg tables when
        its state records some (read without Spark): for a command that may change them (a deletion, a reset that
        finishes one, a compaction), whatever its flags."""
        if "spark" in self.__dict__:
            raise RuntimeError("open_recorded_iceberg_tables after the session started")
        if self.recorded_iceberg_tables():
            self.uses_catalog = self.iceberg = True

    def recorded_iceberg_tables(self) -> dict[str, str]:
        """The source's record of its Iceberg tables (iceberg_tables.recorded_tables), read without Spark."""
        uri = self.layout.state_files.iceberg_tables_uri
        text = read_text_without_spark(uri)
        return iceberg_tables.parse_record(text, uri) if text is not None else {}

    @cached_property
    def storage(self) -> LakeStorage:
        return HadoopStorage(self.spark)

    def catalog(self) -> Catalog:
        """The catalog the settings name: the lake's embedded metastore, or Glue in their region."""
        settings: SourceSettings = self.settings  # type: ignore[assignment]
        if settings.catalog == "local":
            return LocalCatalog(self.spark)
        return GlueCatalog(region=settings.aws_region, date_layout=DATE_PARTITIONS[settings.date_partition],
                           project_new_tables=settings.projects_new_tables, say=stderr_sink)

    @contextmanager
    def locked(self, holder: str, wait: LockWait = NO_WAIT) -> Iterator[SourceLock]:
        """Holds the source's lock for a ``with`` block, naming ``holder`` to a run refused meanwhile."""
        lock = source_lock(self.spark, self.layout, wait_seconds=wait.seconds)
        lock.run_id = holder
        with lock.held():
            yield lock

    @staticmethod
    def progress(line: str) -> None:
        print(f"segment-lake: {line}", file=sys.stderr)

    def run(self, work: Callable[[Runner], list[str]], wait: LockWait = NO_WAIT) -> int:
        """Runs ``work`` and prints its lines; while another run holds the source's lock, fails or (``if_busy``
        skip) says so and succeeds, for a scheduled run whose next run does the work."""
        try:
            lines = work(self)
        except SourceBusy as busy:
            if wait.if_busy != "skip":
                raise
            lines = [f"skipped {self.settings.source_id}: {busy}"]
        for line in lines:
            print(line)
        return 0
