"""Alerts (alerts.py), as synthesized: the topic and its key, the rules for failed steps and clusters of the lake, each
source's alarm for syncs that stopped finishing, and who may publish to the topic (judged by the IAM evaluator
against the topic's policy). That the sync writes the alarm's metric: test_metrics."""
import json
import random
from datetime import UTC, date, datetime, timedelta

import pytest
from aws_calls import ACCOUNT, REGION
from cloudwatch_alarm import Alarm
from iam_evaluator import Request, allowed
from role_policies import resolve as resolve_arns
from stack_helpers import named, only, policy, resources, synth_small_lake

from segment_lake_contract import METRICS_DIMENSION, METRICS_NAMESPACE

pytestmark = pytest.mark.constructs

TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:segment-data-lake-alerts"


def _pattern(stack: dict, part: str) -> dict:
    end = {"StepFailed": "-step-failed", "ClusterFailed": "-cluster-failed"}[part]
    [rule] = [r for r in resources(stack, "aws_cloudwatch_event_rule").values() if r["name"].endswith(end)]
    return json.loads(rule["event_pattern"])


def test_failed_steps_and_clusters_of_the_lake_are_published_to_its_topic(synthesized):
    for name in ("segment-data-lake", "transient"):
        stack = synthesized.stacks[name]
        steps = _pattern(stack, "StepFailed")
        assert steps == {"source": ["aws.emr"], "detail-type": ["EMR Step Status Change"],
                         "detail": {"state": ["FAILED"], "name": [{"suffix": " (9aQ1bC2dE3)"}]}}
        targets = resources(stack, "aws_cloudwatch_event_target").values()
        assert len(targets) == 2 and all(t["arn"].startswith("${aws_sns_topic.") for t in targets)
        assert stack["output"]["alerts_topic_arn"]["value"].startswith("${aws_sns_topic.")
    clusters = _pattern(synthesized.stacks["segment-data-lake"], "ClusterFailed")["detail"]
    cluster = next(iter(resources(synthesized.stacks["segment-data-lake"], "aws_emr_cluster")))
    assert clusters == {"state": ["TERMINATED_WITH_ERRORS"], "clusterId": [f"${{aws_emr_cluster.{cluster}.id}}"]}
    # transient clusters have no id before they start: they are matched by the names the schedules give them
    clusters = _pattern(synthesized.stacks["transient"], "ClusterFailed")["detail"]
    sent = {json.loads(s["target"]["input"])["Name"] for s in resources(synthesized.stacks["transient"],
                                                                         "aws_scheduler_schedule").values()}
    assert clusters["state"] == ["TERMINATED_WITH_ERRORS"] and set(clusters["name"]) == sent


def matches(pattern, value) -> bool:
    """EventBridge's matching of one event field (a list of exact values, {"prefix"} and {"suffix"}) or of an
    object ({"$or": [...]} and nested fields), as its content-filtering rules document them."""
    if isinstance(pattern, dict):
        alternatives = pattern.get("$or")
        fields = {key: item for key, item in pattern.items() if key != "$or"}
        return all(key in value and matches(item, value[key]) for key, item in fields.items()) and (
            alternatives is None or any(matches(alternative, value) for alternative in alternatives))
    return any(value == entry if not isinstance(entry, dict) else
               value.startswith(entry["prefix"]) if "prefix" in entry else value.endswith(entry["suffix"])
               for entry in pattern)


def _event(detail_type: str, detail: dict) -> dict:
    return {"source": "aws.emr", "detail-type": detail_type, "detail": detail}


def test_the_rules_hear_the_steps_and_clusters_actually_submitted(synthesized):
    """Every step the schedules send, and the step and cluster that `segment-lake replay-on-emr` starts from the
    template (its window in their names), fail into the rules; a step or cluster of something else does not."""
    from segment_data_lake import ReplayClusterProps
    from segment_lake.replay_on_emr import replay_request
    from segment_lake.settings import ReplayWindow

    stacks = {"complete": synthesized.stacks["complete"], "transient": synthesized.stacks["transient"],
              "transient-replay": synth_small_lake("transient-replay", cluster_mode="transient",
                                                   replay_cluster=ReplayClusterProps())}
    for name, stack in stacks.items():
        step_rule, cluster_rule = _pattern(stack, "StepFailed"), _pattern(stack, "ClusterFailed")
        requests = [json.loads(s["target"]["input"]) for s in resources(stack, "aws_scheduler_schedule").values()]
        steps = [step["Name"] for request in requests for step in request["Steps"]]
        clusters = [{"name": request["Name"]} for request in requests if "Instances" in request]
        clusters += [{"clusterId": cluster_id, "name": "the always-on cluster"}
                     for cluster_id in {request["JobFlowId"] for request in requests if "JobFlowId" in request}]
        templates = [json.loads(o["content"]) for o in resources(stack, "aws_s3_object").values()
                     if "run_job_flow" in o.get("content", "")]
        for template in templates:
            for source_id in template["sources"]:
                replay = replay_request(template, source_id, ReplayWindow(date(2024, 1, 1), date(2024, 1, 31)))
                steps.append(replay["Steps"][0]["Name"])
                clusters.append({"name": replay["Name"], "clusterId": "j-REPLAY0001"})
        assert len(steps) >= 2 and clusters and (templates or name == "transient"), name
        for step in steps:
            assert matches(step_rule, _event("EMR Step Status Change", {"state": "FAILED", "name": step})), step
            assert not matches(step_rule, _event("EMR Step Status Change", {"state": "COMPLETED", "name": step}))
        for cluster in clusters:
            failed = {"state": "TERMINATED_WITH_ERRORS", "clusterId": "j-OTHER", **cluster}
            assert matches(cluster_rule, _event("EMR Cluster State Change", failed)), (name, cluster)
        other = {"state": "TERMINATED_WITH_ERRORS", "clusterId": "j-OTHER", "name": "nightly-etl"}
        assert not matches(cluster_rule, _event("EMR Cluster State Change", other))
        assert not matches(step_rule, _event("EMR Step Status Change", {"state": "FAILED", "name": "etl (other)"}))


def test_each_source_alarms_when_no_sync_finished_for_three_intervals(synthesized):
    alarm = only(synthesized.stacks["segment-data-lake"], "aws_cloudwatch_metric_alarm")
    metric = Alarm.of(alarm)
    assert (metric.namespace, metric.metric_name, metric.dimensions, metric.fill) == (
        METRICS_NAMESPACE, "SyncsFinished", {METRICS_DIMENSION: "9aQ1bC2dE3"}, 0)
    # hours with no finished sync count as 0, so an hour of six without one is judged, not skipped
    assert (metric.statistic, metric.period, metric.evaluation_periods, metric.datapoints_to_alarm) == (
        "Sum", 3600, 6, 6)
    assert (alarm["comparison_operator"], alarm["threshold"]) == ("LessThanThreshold", 1)
    assert alarm["treat_missing_data"] == "breaching"  # no metric at all is a sync that did not finish
    assert alarm["alarm_actions"] == alarm["ok_actions"] and alarm["actions_enabled"] is True
    complete = resources(synthesized.stacks["complete"], "aws_cloudwatch_metric_alarm").values()
    assert {Alarm.of(a).evaluation_periods * Alarm.of(a).period for a in complete} == {3 * 3600}  # rate(1 hour)
    assert {a["alarm_name"] for a in complete} == {"segment-data-lake-complete-no-sync-acme_web",
                                                   "segment-data-lake-complete-no-sync-acme_backend"}


def test_only_the_lakes_rules_and_alarms_may_publish_to_its_topic(synthesized):
    stack = synthesized.stacks["segment-data-lake"]
    topic = only(stack, "aws_sns_topic")
    assert topic["kms_master_key_id"].startswith("${aws_kms_key.")  # encrypted, with a key that lets them publish
    key = policy(named(stack, "aws_kms_key", "Alerts/TopicKey"))
    [services] = [s for s in key["Statement"] if "Service" in s["Principal"]]
    assert set(services["Principal"]["Service"]) == {"events.amazonaws.com", "cloudwatch.amazonaws.com"}
    assert set(services["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    document = [json.loads(resolve_arns(stack, only(stack, "aws_sns_topic_policy")["policy"]))]
    rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/segment-data-lake-"
    alarm = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:segment-data-lake-no-sync-web_app"
    for principal, source, expected in (
            ("events.amazonaws.com", rule + "step-failed", True),
            ("events.amazonaws.com", rule + "cluster-failed", True),
            ("events.amazonaws.com", rule + "someone-elses", False),
            ("cloudwatch.amazonaws.com", alarm, True),
            ("cloudwatch.amazonaws.com", f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:billing", False),
            ("s3.amazonaws.com", rule + "step-failed", False)):
        request = Request("sns:Publish", TOPIC, {"aws:SourceArn": source, "aws:SourceAccount": ACCOUNT}, principal)
        assert allowed(document, request) == expected, (principal, source)


def test_a_brought_topic_gets_the_rules_and_alarms_and_no_policy_of_ours():
    from segment_data_lake import DataLakeAlerts, DataLakeAlertsProps

    theirs = f"arn:aws:sns:{REGION}:{ACCOUNT}:platform-oncall"
    synthesized = synth_small_lake("brought-topic", cluster_mode="transient", schedule_expression="cron(0 * * * ? *)",
                                   alerts=lambda stack: DataLakeAlertsProps(
                                       topic=DataLakeAlerts.from_topic_arn(stack, "Theirs", theirs),
                                       stale_after_minutes=180))
    assert not resources(synthesized, "aws_sns_topic") and not resources(synthesized, "aws_sns_topic_policy")
    assert {t["arn"] for t in resources(synthesized, "aws_cloudwatch_event_target").values()} == {theirs}
    alarm = only(synthesized, "aws_cloudwatch_metric_alarm")
    assert alarm["alarm_actions"] == [theirs] and Alarm.of(alarm).evaluation_periods * 3600 == 180 * 60


def test_alert_props_are_checked_at_construction():
    from segment_data_lake import DataLakeAlertsProps, DataLakeConfigError

    assert DataLakeAlertsProps().window_seconds("cron(0 3 * * ? *)") == 86400  # no fixed interval: a day
    assert DataLakeAlertsProps(stale_after_minutes=300).window_seconds("cron(0 */2 * * ? *)") == 18000
    with pytest.raises(DataLakeConfigError, match="an alarm window of 12960 minutes is longer than CloudWatch "
                                                  "evaluates .10080 minutes."):
        DataLakeAlertsProps().window_seconds("rate(3 days)")
    with pytest.raises(DataLakeConfigError, match="alerts topic 'platform-oncall' is not a topic: pass "
                                                  "DataLakeAlerts.from_topic_arn"):
        DataLakeAlertsProps(topic="platform-oncall")
    assert DataLakeAlertsProps(stale_after_intervals=2).window_seconds("rate(30 minutes)") == 3600


# what each service takes in a name, as its API reference gives it
NAME_RULES = {
    ("aws_iam_role", "name"): r"[\w+=,.@-]{1,64}", ("aws_iam_policy", "name"): r"[\w+=,.@-]{1,128}",
    ("aws_scheduler_schedule_group", "name"): r"[0-9a-zA-Z._-]{1,64}",
    ("aws_scheduler_schedule", "name"): r"[0-9a-zA-Z._-]{1,64}", ("aws_sns_topic", "name"): r"[A-Za-z0-9_-]{1,256}",
    ("aws_cloudwatch_event_rule", "name"): r"[.\-_A-Za-z0-9]{1,64}",
    ("aws_cloudwatch_metric_alarm", "alarm_name"): r"[ -~]{1,255}",
}


def test_one_name_rule_for_every_name_the_suffix_ends():
    """name_suffix takes what IAM, EventBridge Scheduler, SNS and EventBridge all accept, so no name is refused at
    apply time: '+', '=', ',', '.' and '@' (IAM's) are refused at synthesis."""
    import re

    from segment_data_lake import DataLakeConfigError, DataLakeRolesProps

    for suffix in (".prod", "-prod@eu", "+1", "a=b", "x,y"):
        with pytest.raises(DataLakeConfigError, match=f"invalid name suffix '{re.escape(suffix)}': use up to 20 "
                                                      f"letters, digits, '-' or '_'"):
            DataLakeRolesProps(external_ids=["ws1"], name_suffix=suffix)
    stack = synth_small_lake("suffixed", access=DataLakeRolesProps(external_ids=["ws1"], name_suffix="-Prod_eu2"))
    checked = 0
    for (rtype, attribute), pattern in NAME_RULES.items():
        for config in resources(stack, rtype).values():
            assert re.fullmatch(pattern, config[attribute]) and "-Prod_eu2" in config[attribute], config[attribute]
            checked += 1
    assert checked >= 12


# ---- when the no-sync alarm fires: its definition judged under CloudWatch's rules (cloudwatch_alarm.py), against
# the metrics the sync itself writes (segment_lake.metrics) on four timelines

HOUR = 3600
T0 = datetime(2024, 1, 1, tzinfo=UTC).timestamp()  # the timelines' start, in seconds since 1970 as CloudWatch's


def _run(source_id: str, finished_at: float, *, replay: bool = False) -> list[dict]:
    """What the sync (or a replay) of ``source_id`` that finished at ``finished_at`` (seconds after T0) writes."""
    from segment_lake.metrics import metric_data
    from segment_lake.report import RunResult

    finished = datetime.fromtimestamp(T0 + finished_at, UTC)
    run = RunResult(source_id, "run", "db", finished - timedelta(minutes=5), row_count=10,
                    replay=("2024-01-01", "2024-01-02") if replay else None)
    return [dict(datum, Namespace=METRICS_NAMESPACE) for datum in metric_data(run, finished)]


def _syncs(source_id: str, interval: int, until: float, seed: int = 7) -> tuple[list[dict], float]:
    """Scheduled syncs every ``interval`` seconds from an odd start, each taking 2% to 40% of the interval, until
    ``until``; and when the last one finished."""
    rng, data, finished, start = random.Random(seed), [], 0.0, 1234.0
    while start < until:
        finished = start + rng.uniform(0.02, 0.4) * interval
        data += _run(source_id, finished)
        start += interval
    return data, finished


def _states(alarm: Alarm, data: list[dict], start: float, end: float, range_periods: int) -> list[tuple[int, str]]:
    """(time after T0, state) at every period's end from ``start`` to ``end``."""
    first = int((T0 + start) // alarm.period + 1) * alarm.period
    return [(now - T0, alarm.state(data, now, range_periods)) for now in range(first, int(T0 + end), alarm.period)]


@pytest.fixture(scope="module")
def twenty_minutes() -> dict:
    """A lake synced every 20 minutes: a window of one hour, in periods of 20 minutes."""
    return synth_small_lake("twenty-minutes", schedule_expression="rate(20 minutes)")


def _alarms(synthesized, twenty_minutes) -> list[tuple[Alarm, str, int]]:
    """Each alarm of the main stack (rate(2 hours)), examples/complete (rate(1 hour)) and a lake synced every 20
    minutes: with its source and its schedule's interval (the window is three intervals)."""
    found = []
    for stack, interval in ((synthesized.stacks["segment-data-lake"], 2 * HOUR),
                            (synthesized.stacks["complete"], HOUR), (twenty_minutes, HOUR // 3)):
        for config in resources(stack, "aws_cloudwatch_metric_alarm").values():
            alarm = Alarm.of(config)
            found.append((alarm, alarm.dimensions[METRICS_DIMENSION], interval))
    return found


def _ranges(alarm: Alarm) -> range:
    return range(alarm.evaluation_periods, 3 * alarm.evaluation_periods + 6)


def test_the_no_sync_alarm_stays_ok_while_syncs_finish(synthesized, twenty_minutes):
    for alarm, source, interval in _alarms(synthesized, twenty_minutes):
        data, _ = _syncs(source, interval, 4 * 86400)
        for range_periods in _ranges(alarm):
            states = _states(alarm, data, 4 * HOUR, 4 * 86400, range_periods)
            assert {state for _, state in states} == {"OK"}, (source, range_periods)


def test_the_no_sync_alarm_fires_within_a_window_and_a_period_of_the_last_sync(synthesized, twenty_minutes):
    """Whatever came before: two days of regular syncs, then none; not before the window (less a period) has
    passed, as a slow sync must not page anyone."""
    for alarm, source, interval in _alarms(synthesized, twenty_minutes):
        window = 3 * interval
        data, last = _syncs(source, interval, 2 * 86400)
        for range_periods in _ranges(alarm):
            states = _states(alarm, data, last, last + window + 4 * alarm.period, range_periods)
            assert all(state == "OK" for now, state in states if now < last + window - alarm.period)
            late = [state for now, state in states if now >= last + window + alarm.period]
            assert late and set(late) == {"ALARM"}, (source, range_periods, states)


def test_a_source_that_never_synced_alarms_at_once(synthesized, twenty_minutes):
    for alarm, _, _ in _alarms(synthesized, twenty_minutes):
        for range_periods in _ranges(alarm):
            assert {state for _, state in _states(alarm, [], 0, 86400, range_periods)} == {"ALARM"}


def test_a_replay_does_not_hide_a_schedule_that_stopped(synthesized, twenty_minutes):
    """A replay writes its own outcome (ReplaysFinished): the alarm fires as if it had not run."""
    for alarm, source, interval in _alarms(synthesized, twenty_minutes):
        window = 3 * interval
        data, last = _syncs(source, interval, 2 * 86400)
        data += _run(source, last + window / 2, replay=True)
        for range_periods in _ranges(alarm):
            states = _states(alarm, data, last, last + window + 4 * alarm.period, range_periods)
            late = [state for now, state in states if now >= last + window + alarm.period]
            assert late and set(late) == {"ALARM"}, (source, range_periods, states)


def test_the_model_sees_why_a_one_period_alarm_fired_days_late():
    """The alarm as it was (one period of the whole window, no FILL) stayed OK while an older data point lay in the
    evaluation range: the control that shows the rules above are the ones that matter."""
    old = Alarm.of({"namespace": METRICS_NAMESPACE, "metric_name": "SyncsFinished", "statistic": "Sum",
                    "dimensions": {METRICS_DIMENSION: "src1"}, "period": 6 * HOUR, "evaluation_periods": 1,
                    "threshold": 1, "comparison_operator": "LessThanThreshold", "treat_missing_data": "breaching"})
    data, last = _syncs("src1", 2 * HOUR, 2 * 86400)
    states = _states(old, data, last, last + 86400, range_periods=5)
    assert [state for now, state in states if now >= last + 12 * HOUR][:2] == ["OK", "OK"]
