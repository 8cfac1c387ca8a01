"""``segment-lake history``: recent syncs from their reports, as a table, the share that finished over 30 days,
and optionally a chart of rows and duration per sync. The reports are read as files (LakeLayout.report), so
the history works on any lake, whichever catalog it uses."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .errors import InvalidSettings
from .layout import report_folder
from .report import REPORT_COLUMNS
from .storage import LakeStorage
from .uris import join

SUCCESS_WINDOW = timedelta(days=30)


@dataclass(frozen=True)
class SyncSummary:
    """One run, from its report's source line (and the new columns of its table lines)."""

    source_id: str
    run_id: str
    start: datetime
    finish: datetime
    status: str
    error_code: str | None
    rows: int
    duplicates: int
    rejected: int
    discarded_values: int
    new_columns: int
    replay: bool = False

    @property
    def seconds(self) -> float:
        return (self.finish - self.start).total_seconds()


def read_history(spark: SparkSession, storage: LakeStorage, reports_uri: str,
                 source_id: str | None = None) -> list[SyncSummary]:
    """Every attempt's summary (a run redone after a failure or an interruption has several), oldest first (of one
    source, or of all)."""
    if not storage.exists(reports_uri):
        return []
    pattern = join(report_folder(reports_uri, source_id or "*", "*", "*"), "*.json")  # every attempt's report
    schema = ", ".join(f"`{name}` {kind}" for name, kind in (*REPORT_COLUMNS, ("source_id", "string"),
                                                             ("run_id", "string")))
    from pyspark.errors import AnalysisException

    try:
        lines = spark.read.schema(schema).json(pattern).withColumn("_attempt", F.input_file_name())
        runs = lines.groupBy("source_id", "run_id", "_attempt").agg(
            *(F.max(F.when(F.col("type") == "source", F.col(name))).alias(name) for name in (
                "start_time", "finish_time", "status", "error_code", "row_count", "duplicate_count",
                "rejected_count", "discarded_value_count", "replay")),
            F.sum(F.when(F.col("type") == "event", F.size("new_columns")).otherwise(0)).alias("new_columns"))
        rows = runs.collect()
    except AnalysisException as error:  # no report matches the pattern
        if "PATH_NOT_FOUND" in str(error):
            return []
        raise
    summaries = [SyncSummary(
        row["source_id"], row["run_id"], datetime.fromisoformat(row["start_time"]),
        datetime.fromisoformat(row["finish_time"]), row["status"], row["error_code"], row["row_count"] or 0,
        row["duplicate_count"] or 0, row["rejected_count"] or 0, row["discarded_value_count"] or 0,
        row["new_columns"] or 0, bool(row["replay"])) for row in rows if row["start_time"]]
    return sorted(summaries, key=lambda s: (s.start, s.finish, s.source_id, s.run_id))


def success_share(summaries: list[SyncSummary], now: datetime) -> tuple[int, int]:
    """(finished, all) of the runs started in the 30 days before ``now``."""
    recent = [s for s in summaries if now - SUCCESS_WINDOW <= s.start <= now]
    return sum(s.status == "finished" for s in recent), len(recent)


def render_table(summaries: list[SyncSummary], with_source: bool) -> str:
    """The runs as an aligned text table, one line each."""
    header = (["source"] if with_source else []) + ["start (UTC)", "status", "rows", "duplicates", "rejected",
                                                     "discarded values", "new columns", "duration"]
    lines = [header]
    for s in summaries:
        status = s.status if not s.error_code else f"{s.status} ({s.error_code})"
        lines.append(([s.source_id] if with_source else []) + [
            f"{s.start:%Y-%m-%d %H:%M:%S}", status + (" replay" if s.replay else ""), f"{s.rows:,}",
            f"{s.duplicates:,}", f"{s.rejected:,}", f"{s.discarded_values:,}", f"{s.new_columns:,}",
            _duration(s.seconds)])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    numeric = {header.index(name) for name in ("rows", "duplicates", "rejected", "discarded values", "new columns",
                                                "duration")}
    return "\n".join("  ".join(cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
                               for i, cell in enumerate(line)).rstrip() for line in lines)


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def plot_history(summaries: list[SyncSummary], path: str) -> None:
    """Rows landed and duration per sync over time, failed syncs in red, as a PNG."""
    figure = history_figure(summaries)  # checks that matplotlib is there
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=100)
    plt.close(figure)


def history_figure(summaries: list[SyncSummary]):
    """The figure ``plot_history`` saves."""
    try:
        import matplotlib
    except ImportError:
        raise InvalidSettings("--plot needs matplotlib: pip install 'segment-lake[plot]'") from None
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    figure, (rows_axis, time_axis) = plt.subplots(2, 1, sharex=True, figsize=(10, 6))
    sources = sorted({s.source_id for s in summaries})
    for source in sources:
        runs = [s for s in summaries if s.source_id == source]
        for axis, value in ((rows_axis, lambda s: s.rows), (time_axis, lambda s: s.seconds)):
            line, = axis.plot([s.start for s in runs], [value(s) for s in runs], marker=".", alpha=0.7, label=source)
            failed = [s for s in runs if s.status != "finished"]
            axis.scatter([s.start for s in failed], [value(s) for s in failed], color="tab:red", zorder=3)
    rows_axis.set_ylabel("rows landed")
    time_axis.set_ylabel("duration (s)")
    time_axis.set_xlabel("sync start (UTC); failed syncs in red")
    if len(sources) > 1:
        rows_axis.legend(title="source", fontsize="small")
    first, last = min(s.start for s in summaries), max(s.start for s in summaries)
    if last - first < timedelta(hours=1):  # one sync (or a few close together): an hour around them, not years
        middle = first + (last - first) / 2
        time_axis.set_xlim(middle - timedelta(minutes=30), middle + timedelta(minutes=30))
    figure.suptitle("Syncs of " + (sources[0] if len(sources) == 1 else f"{len(sources)} sources"))
    figure.autofmt_xdate()
    return figure
