"""Nothing a user or an event names can make the sync write outside its own paths: source ids, slugs,
databases and prefixes are validated, and table names from events are slugs (here, through the JVM's slug)."""
import posixpath
from datetime import UTC, datetime
from urllib.parse import urlparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segment_lake.errors import InvalidSettings
from segment_lake.layout import LakeLayout
from segment_lake.settings import SyncSettings
from segment_lake_contract import slug

pytestmark = pytest.mark.spark

HOSTILE = st.one_of(
    st.sampled_from(["..", "../..", "../../etc/passwd", "/", "/abs", "a/b", "a\\b", ".", "x\x00y", "x\ny", "\u202e",
                     "%2e%2e%2f", "~root", "a/../../b", " ", ""]),
    st.text(min_size=0, max_size=40))


def inside(uri: str, lake: str) -> bool:
    path = urlparse(uri).path
    return (posixpath.normpath(path) == path.rstrip("/") and path.startswith(urlparse(lake).path + "/")
            and not any(ord(c) < 32 for c in path))


@settings(max_examples=300, deadline=None)
@given(source_id=HOSTILE, database=HOSTILE, prefix=HOSTILE, slug_source=HOSTILE)
def test_settings_refuse_what_would_leave_the_lake(source_id, database, prefix, slug_source):
    lake = "file:///data/lake"
    try:
        settings_ = SyncSettings(source_id=source_id, input_uri="file:///data/in", lake_uri=lake, glue_database=database or None,
                                 table_prefix=prefix, source_slug=slug_source or None)
    except InvalidSettings:
        return
    layout = LakeLayout(settings_.lake_uri, settings_.source_id)
    run = "20240101T000000Z-abcdef12"
    for uri in (layout.tables, layout.table("identify"), layout.discards_of_run(run), layout.rejected_of_run(run),
                layout.state, layout.stage(run), layout.report(run, datetime(2024, 1, 1, tzinfo=UTC))):
        assert inside(uri, lake), uri
    assert "/" not in settings_.database and ".." not in settings_.database
    assert "/" not in settings_.table_name_prefix and ".." not in settings_.table_name_prefix


@settings(max_examples=300, deadline=None)
@given(event_name=HOSTILE)
def test_a_table_named_by_an_event_is_a_slug_that_stays_in_the_lake(event_name):
    table = slug(event_name)
    assert all(c.isascii() and (c.isalnum() or c == "_") for c in table)
    assert inside(LakeLayout("file:///data/lake", "src1").table("track_" + table), "file:///data/lake")


def test_the_jvm_slugs_event_names_as_the_contract_does(spark):
    from segment_lake.jvm_code import load_class

    load_class(spark, "ParseEvent")
    jvm_slug = spark.sparkContext._jvm.segmentlake.ParseEvent.slug
    for name in ["../../etc/passwd", "/abs", "a\\b", "x\x00y", "Order Completed", "\u202eevil", "..", "日本語"]:
        assert jvm_slug(name) == slug(name), name
