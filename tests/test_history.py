"""Sync history: the reports read back as one summary per run, the table ``segment-lake history`` prints, the
share of finished syncs over 30 days, and the chart."""
from datetime import UTC, datetime, timedelta

import pytest

from segment_lake.catalog.local import LocalCatalog
from segment_lake.history import SyncSummary, history_figure, plot_history, read_history, render_table, success_share
from segment_lake.layout import LakeLayout
from segment_lake.report import RunResult, TableResult, render
from segment_lake.storage import HadoopStorage
from segment_lake.sync_reports import REPORTS_TABLE, move_old_reports, register_reports
from segment_lake_contract import REPORTS_DATABASE

pytestmark = pytest.mark.spark

NOW = datetime(2024, 3, 1, 12, tzinfo=UTC)


def _summary(start, status="finished", source="s1", rows=10, seconds=75.0):
    return SyncSummary(source, f"run-{start:%d%H}", start, start + timedelta(seconds=seconds), status,
                       None if status == "finished" else "internal", rows, 1, 2, 3, 4)


def test_success_share_counts_the_runs_of_the_last_30_days():
    runs = [_summary(NOW - timedelta(days=40), "failed"), _summary(NOW - timedelta(days=29)),
            _summary(NOW - timedelta(days=2), "failed"), _summary(NOW - timedelta(hours=1))]
    assert success_share(runs, NOW) == (2, 3)
    assert success_share([], NOW) == (0, 0)


def test_the_table_aligns_numbers_right_and_names_the_error_code():
    runs = [_summary(NOW, rows=1234567), _summary(NOW + timedelta(hours=2), "failed", seconds=4)]
    assert render_table(runs, with_source=False).splitlines() == [
        "start (UTC)          status                  rows  duplicates  rejected  discarded values  new columns  duration",
        "2024-03-01 12:00:00  finished           1,234,567           1         2                 3            4     1m15s",
        "2024-03-01 14:00:00  failed (internal)         10           1         2                 3            4        4s"]
    assert render_table(runs, with_source=True).splitlines()[1].startswith("s1      2024-03-01 12:00:00  finished")


def _write_report(storage, lake, source_id, start, status="finished", rows=0, new_columns=()):
    run = RunResult(source_id, f"{start:%Y%m%dT%H%M%SZ}-0000", "db", start, start + timedelta(seconds=30), status,
                    error_code=None if status == "finished" else "insufficient_permissions", row_count=rows,
                    tables=[TableResult("identify", "db", rows, new_columns=list(new_columns)),
                            TableResult("page", "db", 0, new_columns=["a"])])
    storage.write_text(LakeLayout(lake, source_id).report(run.run_id, start), render(run))
    return run


def test_read_history_one_summary_per_run_of_a_source_or_of_all(spark, tmp_path):
    storage, lake = HadoopStorage(spark), f"file://{tmp_path}"
    reports = LakeLayout(lake, "s1").reports
    assert read_history(spark, storage, reports) == []  # no lake reports yet
    old = _write_report(storage, lake, "s1", NOW - timedelta(days=40), "failed")
    first = _write_report(storage, lake, "s1", NOW - timedelta(days=1), rows=5, new_columns=["x", "y"])
    _write_report(storage, lake, "s2", NOW, rows=7)
    mine = read_history(spark, storage, reports, "s1")
    assert [(s.run_id, s.status, s.error_code, s.rows, s.new_columns, s.seconds) for s in mine] == [
        (old.run_id, "failed", "insufficient_permissions", 0, 1, 30.0), (first.run_id, "finished", None, 5, 3, 30.0)]
    assert [s.source_id for s in read_history(spark, storage, reports)] == ["s1", "s1", "s2"]
    assert read_history(spark, storage, reports, "nosuch") == []


def test_the_plot_draws_every_source(tmp_path):
    runs = [_summary(NOW + timedelta(hours=2 * i), "failed" if i == 3 else "finished", source=f"s{i % 2}",
                     rows=100 * i) for i in range(8)]
    plot_history(runs, str(tmp_path / "history.png"))
    image = (tmp_path / "history.png").read_bytes()
    assert image[:8] == b"\x89PNG\r\n\x1a\n" and len(image) > 10_000


def test_one_sync_is_plotted_on_an_hour_not_on_years():
    import matplotlib.pyplot as plt

    figure = history_figure([_summary(NOW)])
    low, high = figure.axes[1].get_xlim()  # in days
    plt.close(figure)
    assert abs((high - low) * 24 - 1) < 0.01


def test_msck_repair_rebuilds_the_reports_table_from_its_folders(spark, tmp_path):
    """The folders are named and ordered as the table's keys: a dropped (or new) table gets every report back."""
    storage, lake, catalog = HadoopStorage(spark), f"file://{tmp_path}", LocalCatalog(spark)
    table = f"{REPORTS_DATABASE}.{REPORTS_TABLE}"
    spark.sql(f"DROP TABLE IF EXISTS {table}")  # the test session's metastore is shared: start from none
    try:
        runs = [_write_report(storage, lake, source, NOW - timedelta(days=days))
                for source, days in (("s1", 3), ("s1", 1), ("s2", 1))]
        for run in runs:
            register_reports(catalog, LakeLayout(lake, run.source_id), run.run_id, run.start_time)
        registered = catalog.partitions(REPORTS_DATABASE, REPORTS_TABLE)
        assert len(registered) == 3
        spark.sql(f"DROP TABLE {table}")  # external: the reports stay
        register_reports(catalog, LakeLayout(lake, "s2"), runs[2].run_id, runs[2].start_time)  # the next sync
        assert len(catalog.partitions(REPORTS_DATABASE, REPORTS_TABLE)) == 1
        spark.sql(f"MSCK REPAIR TABLE {table}")
        assert catalog.partitions(REPORTS_DATABASE, REPORTS_TABLE) == registered
        assert spark.sql(f"select count(*) from {table} where type = 'source'").first()[0] == 3
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_move_reports_files_older_reports_as_the_tables_keys(spark, tmp_path):
    storage, lake = HadoopStorage(spark), f"file://{tmp_path}"
    reports = LakeLayout(lake, "s1").reports
    run = _write_report(storage, lake, "s1", NOW)
    old = f"{reports}/day=2024-02-01/source=s0/run_id=20240201T000000Z-0000/report.json"
    storage.write_text(old, storage.read_text(LakeLayout(lake, "s1").report(run.run_id, NOW)).replace("s1", "s0"))
    assert move_old_reports(storage, reports) == 1
    assert sorted(path.name for path in (tmp_path / "segment-data" / "reports").iterdir()) == ["source_id=s0",
                                                                                               "source_id=s1"]
    assert storage.exists(f"{reports}/source_id=s0/day=2024-02-01/run_id=20240201T000000Z-0000/report.json")
    assert [s.source_id for s in read_history(spark, storage, reports)] == ["s0", "s1"]
    assert move_old_reports(storage, reports) == 0
    # the command: on a lake of any source (it takes no --source-id), and refusing one that is not there
    from segment_lake import cli

    assert cli.main(["move-reports", "--lake", str(tmp_path)]) == 0
    assert cli.main(["move-reports", "--lake", str(tmp_path / "nowhere")]) == 1
