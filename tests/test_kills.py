"""A seeded sample of the kill harness (make soak runs the long one): whole sync processes killed at random
moments, re-run, and the lake equal to one synced without kills."""
from kill_harness import run_trials


def test_syncs_killed_at_random_moments_land_every_event_exactly_once(spark, tmp_path):
    summary = run_trials(spark, tmp_path, trials=2, events=20_000, seed=7)
    print(summary)
    assert summary["trials"] == 2 and summary["kills"] >= 2 and summary["events"] > 15_000
