"""Mistakes that would land rows no query sees, or merge sources, are refused with one line naming the fix."""
import pytest
from lake_events import write_run1
from sync_harness import Lake, make_catalog

from segment_lake.discover import other_sources
from segment_lake.errors import InvalidSettings
from segment_lake.layout import owning_source

pytestmark = [pytest.mark.spark, pytest.mark.aws]


def test_folders_of_other_sources_are_found_where_a_source_folder_stands():
    day = "1704153600000"
    assert other_sources([f"{day}/a.json", f"{day}/nested/b.json.gz", "loose.json"], "src1") == []
    assert other_sources([f"src1/{day}/a.json"], "src1") == []  # the source's own folder, one level up
    assert other_sources([f"src1/{day}/a.json", f"src2/{day}/a.json", f"x/src3/{day}/b.gz"], "src1") == ["src2", "src3"]
    assert owning_source("s3://b/segment-data/data/src7/segment_type=identify") == "src7"
    assert owning_source("file:/l/segment-data/state/src7/duplicates") == "src7"
    assert owning_source("s3://elsewhere/tables/identify") is None


def test_an_input_one_folder_too_high_is_refused(spark, tmp_path):
    for source in ("src1", "src2"):
        write_run1(tmp_path / "input", source)
    lake = Lake(spark, make_catalog("local", spark, None), "local", f"file://{tmp_path}/lake",
                f"file://{tmp_path}/input/segment-logs", "src1", database="too_high")
    with pytest.raises(InvalidSettings) as refused:
        lake.sync()
    assert str(refused.value) == (
        f"--input 'file://{tmp_path}/input/segment-logs' holds the folders of other sources (src2), not only the day "
        f"folders of source src1: pass the folder of src1's events, file://{tmp_path}/input/segment-logs/src1")
    assert not lake.storage.list_files(lake.layout.tables)  # nothing landed


@pytest.mark.parametrize("kind", ["local", "glue"])
def test_a_second_source_in_the_same_database_without_a_prefix_is_refused(spark, glue_client, tmp_path, kind):
    database = f"shared_by_mistake_{kind}"
    lakes = {}
    for source in ("src1", "src2"):
        write_run1(tmp_path / "input", source)
        lakes[source] = Lake(spark, make_catalog(kind, spark, glue_client), kind, f"file://{tmp_path}/lake",
                             f"file://{tmp_path}/input/segment-logs/{source}", source, database)
    assert lakes["src1"].sync().status == "finished"
    with pytest.raises(InvalidSettings) as refused:
        lakes["src2"].sync()
    message = str(refused.value)
    assert message.startswith(f"table {database}.") and " holds source src1's rows (" in message, message
    assert message.endswith("not source src2's: give each source its own --glue-database (or --source-slug), or a "
                            "--table-prefix"), message
    # with a prefix, the second source's tables are its own
    prefixed = Lake(spark, lakes["src2"].catalog, kind, f"file://{tmp_path}/lake", lakes["src2"].input_uri, "src2",
                    database, table_prefix="two_")
    assert prefixed.sync().status == "finished"
    assert prefixed.columns("two_identify") and lakes["src1"].columns("identify")
