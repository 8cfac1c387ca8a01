"""Partition projection (opt-in, Glue): a projected table's parameters follow Athena's documented rules and project
every partition folder the sync wrote; the catalog then costs one object per table and no request per hour, a
run widens the ranges only when it writes outside them, and compaction, whose location switch such a table cannot
follow, leaves it alone and says so."""
import json
import re
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from fault_proxy import FaultProxy
from lake_events import event
from sync_harness import Lake

from segment_lake.catalog import TableChange, same_location
from segment_lake.catalog.projection import is_projected, outside, projection_parameters, widened_ranges
from segment_lake.compaction import Compaction
from segment_lake_contract import DATE_PARTITIONS

CLI = str(Path(sys.executable).with_name("segment-lake"))
TABLES = 200
COLUMNS = (("id", "string"), ("received_at", "timestamp"))
# Athena's rules (partition-projection-supported-types, -setting-up): the types, an integer range of two whole numbers,
# a date range of two dates in the format or NOW[+-]<n><unit>, the units a date interval may take
TYPES = {"enum", "integer", "date", "injected"}
UNITS = {"YEARS", "MONTHS", "WEEKS", "DAYS", "HOURS", "MINUTES", "SECONDS", "MILLISECONDS"}
RELATIVE = re.compile(r"NOW(?:([+-]\d+)(YEARS|MONTHS|WEEKS|DAYS|HOURS|MINUTES|SECONDS))?")
JAVA_TO_PYTHON = {"yyyy": "%Y", "MM": "%m", "dd": "%d", "HH": "%H"}


def projected_values(parameters: dict, keys: list[str], today: date) -> dict[str, list[str]]:
    """The values Athena projects for each key, checking each parameter against the documented rules."""
    assert parameters["projection.enabled"] == "true"
    values = {}
    for key in keys:
        kind = parameters[f"projection.{key}.type"]
        assert kind in TYPES
        low, high = (bound.strip() for bound in parameters[f"projection.{key}.range"].split(","))
        if kind == "integer":
            digits = int(parameters.get(f"projection.{key}.digits", "1"))
            assert digits > 0 and int(low) <= int(high)
            values[key] = [str(n).zfill(digits) for n in range(int(low), int(high) + 1)]
        else:
            form = parameters[f"projection.{key}.format"]
            assert parameters[f"projection.{key}.interval.unit"] in UNITS and int(parameters[f"projection.{key}.interval"]) > 0
            python = form
            for java, strf in JAVA_TO_PYTHON.items():
                python = python.replace(java, strf)
            bounds = [relative_day(b, today) if RELATIVE.fullmatch(b) else datetime.strptime(b, python).date()
                      for b in (low, high)]
            values[key] = [date.fromordinal(d).strftime(python) for d in range(bounds[0].toordinal(), bounds[1].toordinal() + 1)]
    return values


def relative_day(bound: str, today: date) -> date:
    """NOW, or NOW[+-]<n>DAYS, as a day (the only units the sync writes; others are not needed here)."""
    offset, unit = RELATIVE.fullmatch(bound).groups()
    assert unit in (None, "DAYS"), bound
    return today + timedelta(days=int(offset or 0))


def projected_folder(parameters: dict, values: dict[str, str]) -> str:
    template = parameters["storage.location.template"]
    for key, value in values.items():
        template = template.replace("${" + key + "}", value)
    assert "${" not in template
    return template


TODAY = date(2024, 1, 2)
# per layout: the partitions a run wrote (the last of them tomorrow: a clock a little ahead), those of a later run of
# earlier events, and those of corrupt receivedAt (years 1 and 9999, and a week ahead), which no range may take
WRITTEN = {
    "day_hour": ([("2023-12-31", "23"), ("2024-01-03", "00")], [("2022-06-01", "01")],
                 [("0001-01-01", "00"), ("9999-12-31", "23"), ("2024-01-09", "00")]),
    "year_month_day_hour": ([("2023", "12", "31", "23"), ("2024", "01", "03", "00")], [("2022", "06", "01", "01")],
                            [("0001", "01", "01", "00"), ("9999", "12", "31", "23")]),
    "year_month_day": ([("2023", "12", "31"), ("2024", "01", "03")], [("2022", "06", "01")],
                       [("0001", "01", "01"), ("9999", "12", "31")]),
    "day": ([("2023-12-31",), ("2024-01-03",)], [("2022-06-01",)], [("0001-01-01",), ("2024-01-09",)])}


@pytest.mark.parametrize("date_partition", list(DATE_PARTITIONS))
def test_the_parameters_follow_athenas_rules_and_project_every_written_folder(date_partition):
    layout, (written, earlier, corrupt) = DATE_PARTITIONS[date_partition], WRITTEN[date_partition]
    keys = [key for key, _ in layout]
    location = "s3://lake/segment-data/data/src/segment_type=page"
    parameters = projection_parameters(layout, location, written + corrupt, TODAY)
    assert outside(layout, written + corrupt, TODAY) == corrupt  # named to the user, left out of the ranges
    projected = projected_values(parameters, keys, TODAY)
    assert all(len(values) <= 24 * 366 * 15 for values in projected.values())  # hours since 2011, not since year 1
    for values in written:
        assert all(value in projected[key] for key, value in zip(keys, values, strict=True))
        assert projected_folder(parameters, dict(zip(keys, values, strict=True))) == \
            location + "/" + "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
    # a later run of earlier events widens the ranges and keeps what they held; none narrows them
    wider = {**parameters, **widened_ranges(layout, earlier, parameters, TODAY)}
    widened = projected_values(wider, keys, TODAY)
    assert all(set(projected[key]) <= set(widened[key]) and earlier[0][i] in widened[key] for i, key in enumerate(keys))
    assert widened_ranges(layout, written, wider, TODAY) == {}
    # a range given relative to NOW is its owner's: the sync leaves it
    if layout[0][1] == "yyyy-MM-dd":
        owned = {**parameters, f"projection.{keys[0]}.range": "NOW-2YEARS,NOW"}
        assert widened_ranges(layout, earlier, owned, TODAY) == {}


@pytest.fixture
def glue_through_proxy(aws_endpoint, glue_client, monkeypatch):
    from segment_lake.catalog.glue import GlueCatalog

    proxy, said = FaultProxy(aws_endpoint), []
    monkeypatch.setenv("SEGMENT_LAKE_GLUE_ENDPOINT", proxy.start())
    yield proxy, GlueCatalog(region="us-east-1", date_layout=DATE_PARTITIONS["day_hour"], project_new_tables=True,
                             say=said.append), said
    proxy.stop()


def changes(day: str, hour: str, columns=COLUMNS) -> list[TableChange]:
    return [TableChange(f"t{i:04d}", columns, ("day", "hr"), ((day, hour),), f"s3a://lake/segment-data/data/src/t{i:04d}")
            for i in range(TABLES)]


@pytest.mark.aws
def test_projected_tables_cost_one_object_each_and_no_request_an_hour(glue_through_proxy, glue_client):
    proxy, catalog, said = glue_through_proxy
    database = "projected"
    catalog.ensure_database(database)
    first = changes("2024-01-02", "05")
    proxy.operations.clear()
    catalog.register(database, first, {change.table: None for change in first})
    assert proxy.operations == {"glue:CreateTable": TABLES}

    def known():
        return catalog.describe_tables(database, [change.table for change in first])

    found = known()  # each run's GetTables pass
    proxy.operations.clear()
    catalog.register(database, changes("2024-01-03", "06"), found)  # a later hour and day: inside the ranges
    assert not proxy.operations
    catalog.register(database, changes("2024-01-03", "07", (*COLUMNS, ("plan", "string")))[:5], found)
    assert proxy.operations == {"glue:GetTable": 5, "glue:UpdateTable": 5}  # only the new column

    found = known()
    proxy.operations.clear()
    catalog.register(database, changes("2023-12-30", "23")[:3], found)  # a replay of older events widens the range
    assert proxy.operations == {"glue:GetTable": 3, "glue:UpdateTable": 3}

    proxy.operations.clear()
    catalog.register(database, changes("0001-01-01", "00")[3:5], known())  # corrupt receivedAt: said, not projected
    assert proxy.operations == {"glue:GetTables": 1}
    assert said == [f"catalog: projected.t000{n} projects no partition before 2011 or after tomorrow, so Athena does "
                    f"not read 1 of the run's (day=0001-01-01/hr=00): their events have a corrupt receivedAt; they "
                    f"stay in the lake's folders" for n in (3, 4)]

    tables = {t["Name"]: t for page in glue_client.get_paginator("get_tables").paginate(DatabaseName=database)
              for t in page["TableList"]}
    assert len(tables) == TABLES and all(is_projected(t["Parameters"]) for t in tables.values())
    assert all(not glue_client.get_partitions(DatabaseName=database, TableName=name)["Partitions"] for name in tables)
    widened, kept = tables["t0000"], tables["t0100"]
    assert widened["Parameters"]["projection.day.range"] == "2023-12-30,NOW+1DAYS"
    assert kept["Parameters"]["projection.day.range"] == "2024-01-02,NOW+1DAYS"
    assert [c["Name"] for c in widened["StorageDescriptor"]["Columns"]] == ["id", "received_at", "plan"]
    assert widened["Parameters"]["storage.location.template"] == \
        "s3://lake/segment-data/data/src/t0000/day=${day}/hr=${hr}"


@pytest.mark.spark
@pytest.mark.aws
def test_a_synced_lake_is_projected_and_compaction_leaves_it_alone(spark, tmp_path, glue_client):
    from segment_lake.catalog.glue import GlueCatalog

    catalog = GlueCatalog(glue_client, date_layout=DATE_PARTITIONS["day_hour"], project_new_tables=True)
    lake = Lake(spark, catalog, "glue", f"file://{tmp_path}/lake", f"file://{tmp_path}/input", "proj1", "projected_lake")
    folder = tmp_path / "input" / "1704153600000"
    folder.mkdir(parents=True)
    for n in range(3):  # three syncs: three small files in each closed partition
        (folder / f"{n}.json").write_text("".join(json.dumps(e) + "\n" for e in [
            event("page", f"p{n}", f"2024-01-02T01:0{n}:00Z", userId="u1"),
            event("identify", f"i{n}", f"2024-01-02T02:0{n}:00Z", userId="u2")]))
        lake.sync()
    for table in ("page", "identify"):
        parameters = glue_client.get_table(DatabaseName=lake.database, Name=table)["Table"]["Parameters"]
        assert not glue_client.get_partitions(DatabaseName=lake.database, TableName=table)["Partitions"]
        projected = projected_values(parameters, ["day", "hr"], datetime.now(UTC).date())
        for uri in lake.data_files(table):  # Athena's folders hold every file the syncs wrote
            day, hour = re.search(r"/day=([^/]+)/hr=([^/]+)/", uri).groups()
            assert day in projected["day"] and hour in projected["hr"]
            assert same_location(uri.rsplit("/", 1)[0], projected_folder(parameters, {"day": day, "hr": hour}))
    # a later sync of older events (through the source's registration record) widens the range
    older = tmp_path / "input" / "1704067200000"
    older.mkdir()
    (older / "0.json").write_text(json.dumps(event("page", "old", "2024-01-01T05:00:00Z", userId="u1")) + "\n")
    lake.sync()
    assert glue_client.get_table(DatabaseName=lake.database, Name="page")["Table"]["Parameters"][
        "projection.day.range"] == "2024-01-01,NOW+1DAYS"
    before = {table: sorted(lake.data_files(table)) for table in ("page", "identify")}

    said = []
    report = Compaction(spark, lake.storage, catalog, lake.layout, lake.database, "", "day_hour",
                        progress=said.append).run(0, 256)
    assert report.partitions_compacted == 0
    assert {table: sorted(lake.data_files(table)) for table in before} == before
    assert any("2 tables with partition projection left as they are (identify, page)" in line for line in said)


def test_the_local_catalog_refuses_projection_in_one_line(tmp_path):
    (tmp_path / "input").mkdir()
    result = subprocess.run([CLI, "sync", "--source-id", "src1", "--input", str(tmp_path / "input"), "--lake",
                             str(tmp_path / "lake"), "--partition-projection"], capture_output=True, text=True)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "segment-lake: error (invalid_settings): --partition-projection is read by Athena from Glue tables only: pass "
        "--catalog glue, or leave it out (the local catalog registers every partition)")
    assert not (tmp_path / "lake").exists()
