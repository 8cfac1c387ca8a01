"""Seeded samples of the crash harnesses (make soak runs the long ones): whole sync processes killed at random
moments, and deaths at each kind of write of storage and catalog; after a re-run the lake equals one synced
without a crash."""
import crash_points
import pytest
from kill_harness import run_trials

from segment_lake.catalog.glue import GlueCatalog

pytestmark = [pytest.mark.spark, pytest.mark.aws]


# the moments are drawn within a reference sync's duration on the same machine, and every check holds wherever a kill
# lands (a kill after the end counts too): with the others, on whatever load they make. Ten tables, not make soak's 55:
# what a kill hits is the subject here, not how many tables (this test alone here: 224 -> 178 CPU-s). One trial, not
# two (make test's largest cost after the Iceberg lake: 146 CPU-s in a clean clone's run): seed 7 draws it two kills
# before the run that finishes, so a kill still lands on a lake a killed run left
def test_syncs_killed_at_random_moments_land_every_event_exactly_once(tmp_path):
    summary = run_trials(tmp_path, trials=1, events=10_000, seed=7, event_names=5)
    print(summary)
    assert summary["trials"] == 1 and summary["kills"] == 2 and summary["events"] > 7_500


# deaths at the Nth write, whatever the machine's load: with the others
def test_a_death_at_each_kind_of_write_then_a_rerun_lands_every_event_exactly_once(spark, glue_client, tmp_path):
    summary = crash_points.run_trials(spark, tmp_path, trials=8, events=1500, seed=3, shape=crash_points.SMALL,
                                      catalogs={"glue": lambda spark, database: GlueCatalog(glue_client)})
    print(summary)
    assert summary["trials"] == 8 and summary["crash_points"] == 8 and summary["writes_per_sync"] > 10
    assert {point.split(" ", 1)[0] for point in summary["covered"]} == {"before", "after", "half"}
