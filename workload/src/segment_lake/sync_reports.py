"""The sync reports as a table, as Segment keeps them: ``__segment_datalake.sync_reports``, one JSON object per
line, partitioned by source_id, day and run_id over the folders the reports are written in (LakeLayout.report,
named and ordered as the keys, so MSCK REPAIR TABLE rebuilds it), in whichever catalog the sync uses. Athena reads
it; ``segment-lake history`` reads the files themselves."""
from __future__ import annotations

from datetime import datetime

from segment_lake_contract import REPORTS_DATABASE

from .catalog import Catalog, TableChange
from .layout import OLD_REPORT, REPORT_KEYS, LakeLayout, old_reports, report_day, report_folder
from .report import REPORT_COLUMNS
from .storage import LakeStorage
from .uris import join

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


def move_old_reports(storage: LakeStorage, reports_uri: str) -> int:
    """Moves the reports of Segment's layout (``day=/source=/run_id=``) to the table's (``source_id=/day=/run_id=``),
    and removes the day folders they leave empty; returns how many moved. Run once; a second run finds none."""
    old = storage.glob(old_reports(reports_uri))
    for uri in old:
        day, source_id, run_id = OLD_REPORT.search(uri).groups()
        storage.move(uri, join(report_folder(reports_uri, source_id, day, run_id), "report.json"))
    for day_folder in {uri.rsplit("/source=", 1)[0] for uri in old}:
        if not storage.list_files(day_folder):
            storage.delete(day_folder, recursive=True)
    return len(old)
