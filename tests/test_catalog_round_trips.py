"""Glue's cost counted in requests: a 1,000-table source registers about one request per table and hour, whatever
the run, and the catalog holds what registering one table after another held; the source's record of what it
registered spares a second run of the hour every request."""
import pytest
from fault_proxy import FaultProxy

from segment_lake.catalog import TableChange, TableInfo
from segment_lake.catalog.registered import recorded, unregistered

pytestmark = [pytest.mark.aws]

TABLES = 1000
COLUMNS = (("id", "string"), ("received_at", "timestamp"))


def changes(hour: str, columns=COLUMNS, tables=TABLES) -> list[TableChange]:
    return [TableChange(f"t{i:04d}", columns, ("day", "hr"), (("2024-01-02", hour),),
                        f"s3a://lake/segment-data/data/src/t{i:04d}") for i in range(tables)]


def known(changes: list[TableChange], columns) -> dict[str, TableInfo]:
    """The tables as a run that read them would know them (made at some time, in the format's storage)."""
    return {change.table: TableInfo(list(columns), change.location, "2024-01-02 00:00:00") for change in changes}


def glue_state(client, database: str) -> dict:
    """Every table's columns and location, and every partition's location and columns."""
    state = {}
    for page in client.get_paginator("get_tables").paginate(DatabaseName=database):
        for table in page["TableList"]:
            descriptor = table["StorageDescriptor"]
            partitions = {
                tuple(p["Values"]): (p["StorageDescriptor"]["Location"],
                                     [(c["Name"], c["Type"]) for c in p["StorageDescriptor"]["Columns"]],
                                     p["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"])
                for partition_page in client.get_paginator("get_partitions").paginate(
                    DatabaseName=database, TableName=table["Name"]) for p in partition_page["Partitions"]}
            state[table["Name"]] = ([(c["Name"], c["Type"]) for c in descriptor["Columns"]], descriptor["Location"],
                                    partitions)
    return state


def expected_state(runs: list[list[TableChange]]) -> dict:
    """What registering the runs' changes one table after another leaves: each table with its columns and the columns
    runs appended, each partition a run wrote at its folder with the table's columns of that run."""
    state = {}
    for run in runs:
        for change in run:
            columns, location, partitions = state.get(change.table, ([], "s3://" + change.location.split("://")[1], {}))
            columns = columns + [column for column in change.columns if column not in columns]
            for index, values in enumerate(change.partitions):
                partitions[values] = ("s3://" + change.partition_location(index).split("://")[1], columns,
                                      "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe")
            state[change.table] = (columns, location, partitions)
    return state


@pytest.fixture
def glue_through_proxy(aws_endpoint, glue_client, monkeypatch):
    from segment_lake.catalog.glue import GlueCatalog

    proxy = FaultProxy(aws_endpoint)
    monkeypatch.setenv("SEGMENT_LAKE_GLUE_ENDPOINT", proxy.start())
    yield proxy, GlueCatalog(region="us-east-1")
    proxy.stop()


def test_a_thousand_tables_cost_one_request_per_table_and_hour(glue_through_proxy, glue_client):
    proxy, catalog = glue_through_proxy
    database = "round_trips"
    catalog.ensure_database(database)
    proxy.operations.clear()

    first = changes("05")  # the first sync: every table new, as the run read the catalog (infer's GetTables pass)
    catalog.register(database, first, {change.table: None for change in first})
    assert proxy.operations == {"glue:CreateTable": TABLES, "glue:BatchCreatePartition": TABLES}

    hourly = changes("06")  # the next hour's sync: known tables (as its GetTables pass read them), a new partition each
    found = catalog.describe_tables(database, [change.table for change in hourly])
    proxy.operations.clear()
    catalog.register(database, hourly, found)
    assert proxy.operations == {"glue:BatchCreatePartition": TABLES}

    proxy.operations.clear()
    wider = (*COLUMNS, ("plan", "string"))  # of 100 tables redoing an hour that exists, ten gain a column
    redone = changes("06", wider, tables=10) + changes("06", tables=100)[10:]
    catalog.register(database, redone, known(redone, COLUMNS))
    assert proxy.operations == {"glue:BatchCreatePartition": 100, "glue:BatchGetPartition": 100,
                                "glue:GetTable": 10, "glue:UpdateTable": 10, "glue:BatchUpdatePartition": 10}

    proxy.operations.clear()
    catalog.register(database, changes("07")[:3])  # nothing known: one GetTables pass (moto answers it in one page)
    assert proxy.operations == {"glue:GetTables": 1, "glue:BatchCreatePartition": 3}

    assert glue_state(glue_client, database) == expected_state([first, hourly, redone, changes("07")[:3]])


def test_the_record_of_registered_partitions_skips_what_the_catalog_holds():
    run = [TableChange(name, COLUMNS, ("day", "hr"), (("2024-01-02", "05"), ("2024-01-02", "06")), f"s3a://l/{name}")
           for name in ("a", "b", "new")]
    found = {**known(run[:2], COLUMNS), "new": None}
    record = recorded("db", {}, run, found)
    assert unregistered("db", run, found, {}) == run  # nothing recorded: everything is registered
    assert unregistered("db", run, found, record) == [run[2]]  # a table the run found missing is always registered
    # a table the recording run made is known by name until the next run that finds it records its creation time
    made = {**found, "new": TableInfo(list(COLUMNS), "s3a://l/new", "2024-01-02 05:00:00")}
    assert unregistered("db", run, made, record) == []
    assert recorded("db", record, run, made)["new"]["table"] == "db.new made 2024-01-02 05:00:00"
    later = [TableChange("a", COLUMNS, ("day", "hr"), (("2024-01-02", "06"), ("2024-01-02", "07")), "s3a://l/a"),
             TableChange("b", (*COLUMNS, ("plan", "string")), ("day", "hr"), (("2024-01-02", "06"),), "s3a://l/b")]
    assert unregistered("db", later, found, record) == [
        TableChange("a", COLUMNS, ("day", "hr"), (("2024-01-02", "07"),), "s3a://l/a"),  # only the new hour
        later[1]]  # a new column reaches every partition the run wrote
    # the record is not trusted for another table: its columns changed since (another writer), it was dropped and made
    # again (another creation time), or it is another database's
    assert unregistered("db", run[:1], {"a": TableInfo([COLUMNS[0]], "s3a://l/a", "2024-01-02 00:00:00")}, record) == run[:1]
    assert unregistered("db", run[:1], {"a": TableInfo(list(COLUMNS), "s3a://l/a", "2024-02-01 00:00:00")}, record) == run[:1]
    assert unregistered("other", run[:1], found, record) == run[:1]
    assert recorded("db", record, later, found)["a"]["partitions"] == [["2024-01-02", "06"], ["2024-01-02", "07"]]
    assert recorded("db", record, later, found)["b"]["columns"] != record["b"]["columns"]
