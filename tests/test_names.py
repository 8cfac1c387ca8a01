"""Database and table names as Segment documents them; names an earlier version gave are refused, not forked."""
import pytest

pytestmark = [pytest.mark.fast, pytest.mark.spark, pytest.mark.aws]


@pytest.mark.parametrize("slug_or_id,prefix,database,table", [
    ("iOS Prod", "ios", "ios_prod", "ios_identify"), ("web-app", "web_", "web_app", "web_identify"),
    ("Src9", "", "src9", "identify"), ("shop__eu", "x1", "shop__eu", "x1_identify"),
])
def test_names_as_segment_documents_them(spark, glue_client, tmp_path, slug_or_id, prefix, database, table):
    from segment_lake.catalog.glue import GlueCatalog
    from segment_lake.settings import SyncSettings
    from segment_lake.sync import Sync

    _one_event(tmp_path)
    settings = SyncSettings(source_id="n1", source_slug=slug_or_id, input_uri=str(tmp_path / "input"),
                            lake_uri=str(tmp_path / "lake"), table_prefix=prefix, catalog="glue")
    result = Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()
    assert (result.database, [t.table_name for t in result.tables]) == (database, [table])
    assert glue_client.get_table(DatabaseName=database, Name=table)["Table"]["StorageDescriptor"]["Location"].endswith(
        "/segment_type=identify")



def test_names_of_an_earlier_version_are_refused_not_forked(spark, glue_client, tmp_path):
    from segment_lake.catalog.glue import GlueCatalog
    from segment_lake.errors import InvalidSettings
    from segment_lake.settings import SyncSettings
    from segment_lake.sync import Sync

    _one_event(tmp_path)
    glue_client.create_database(DatabaseInput={"Name": "i_os_legacy"})  # how "iOS Legacy" was named before
    settings = SyncSettings(source_id="n2", source_slug="iOS Legacy", input_uri=str(tmp_path / "input"),
                            lake_uri=str(tmp_path / "lake"), catalog="glue")
    with pytest.raises(InvalidSettings, match="has database 'i_os_legacy'.*pass --glue-database i_os_legacy"):
        Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()
    assert "ios_legacy" not in {d["Name"] for d in glue_client.get_databases()["DatabaseList"]}

    glue_client.create_database(DatabaseInput={"Name": "prefixed"})
    glue_client.create_table(DatabaseName="prefixed", TableInput={  # prefix "mob", joined bare
        "Name": "mobidentify", "StorageDescriptor": {"Columns": [{"Name": "traits_age", "Type": "bigint"}]}})
    settings = SyncSettings(source_id="n3", glue_database="prefixed", table_prefix="mob",
                            input_uri=str(tmp_path / "input"), lake_uri=str(tmp_path / "lake2"), catalog="glue")
    with pytest.raises(InvalidSettings, match="has 'mobidentify'.*without the '_' after prefix 'mob'.*'mob_identify'"):
        Sync(spark, settings, GlueCatalog(glue_client), progress=lambda line: None).run()
    assert [t["Name"] for t in glue_client.get_tables(DatabaseName="prefixed")["TableList"]] == ["mobidentify"]



def _one_event(tmp_path):
    import json

    day = tmp_path / "input" / "1704153600000"
    day.mkdir(parents=True, exist_ok=True)
    line = {"type": "identify", "messageId": "a", "receivedAt": "2024-01-02T05:00:00Z", "traits": {"age": 1}}
    (day / "1.json").write_text(json.dumps(line) + "\n")

