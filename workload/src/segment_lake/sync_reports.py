"""The sync reports as a table, as Segment keeps them: ``__segment_datalake.sync_reports``, one JSON object per
line, partitioned by source_id, day and run_id over the folders the reports are written in (LakeLayout.report),
in whichever catalog the sync uses. Athena reads it; ``segment-lake history`` reads the files themselves."""
from __future__ import annotations

from datetime import datetime

from .catalog import Catalog, TableChange
from .contract import REPORTS_DATABASE
from .layout import LakeLayout, report_day
from .report import REPORT_COLUMNS, REPORT_KEYS

REPORTS_TABLE = "sync_reports"


def reports_table(layout: LakeLayout, run_id: str, start_time: datetime) -> TableChange:
    """The table, with the partition of a run's report."""
    return TableChange(REPORTS_TABLE, REPORT_COLUMNS, REPORT_KEYS, ((layout.source_id, report_day(start_time), run_id),),
                       layout.reports, format="json",
                       partition_locations=(layout.report(run_id, start_time).rsplit("/", 1)[0],))


def register_reports(catalog: Catalog, layout: LakeLayout, run_id: str, start_time: datetime) -> None:
    """Creates the database and table when missing and adds the partition of a run's report (all sources share
    them: a create another source's sync made first is no failure)."""
    catalog.ensure_database(REPORTS_DATABASE)
    catalog.register(REPORTS_DATABASE, [reports_table(layout, run_id, start_time)])
