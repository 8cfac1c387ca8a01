"""Alerts (alerts.py), as synthesized: the topic and its key, the rules for failed steps and clusters of the lake, each
source's alarm for syncs that stopped finishing, and who may publish to the topic (judged by the IAM evaluator
against the topic's policy). That the sync writes the alarm's metric: test_metrics."""
import json

import pytest
from aws_calls import ACCOUNT, REGION
from iam_evaluator import Request, allowed
from role_policies import resolve as resolve_arns
from stack_helpers import named, only, policy, resources, synth_small_lake

from segment_lake_contract import METRICS_DIMENSION, METRICS_NAMESPACE

pytestmark = pytest.mark.constructs

TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:segment-data-lake-alerts"


def _pattern(stack: dict, part: str) -> dict:
    return json.loads(named(stack, "aws_cloudwatch_event_rule", f"Alerts/{part}")["event_pattern"])


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


def test_every_step_of_the_lake_ends_its_name_as_the_rule_matches(synthesized):
    """The sync, compaction and replay steps each end with " (<source id>)", the suffix the step rule matches."""
    stack = synthesized.stacks["complete"]
    suffixes = [entry["suffix"] for entry in _pattern(stack, "StepFailed")["detail"]["name"]]
    names = [step["Name"] for s in resources(stack, "aws_scheduler_schedule").values()
             for step in json.loads(s["target"]["input"])["Steps"]]
    names += [source["step"]["Name"] for source in json.loads(named(stack, "aws_s3_object", "Replay")["content"])[
        "sources"].values()]
    assert len(names) == 6  # two sources: sync, compaction and replay each
    assert all(any(name.endswith(suffix) for suffix in suffixes) for name in names), (names, suffixes)


def test_each_source_alarms_when_no_sync_finished_for_three_intervals(synthesized):
    alarm = only(synthesized.stacks["segment-data-lake"], "aws_cloudwatch_metric_alarm")
    assert (alarm["namespace"], alarm["metric_name"], alarm["dimensions"]) == (
        METRICS_NAMESPACE, "SyncsFinished", {METRICS_DIMENSION: "9aQ1bC2dE3"})
    assert (alarm["statistic"], alarm["period"], alarm["evaluation_periods"]) == ("Sum", 3 * 2 * 3600, 1)
    assert (alarm["comparison_operator"], alarm["threshold"]) == ("LessThanThreshold", 1)
    assert alarm["treat_missing_data"] == "breaching"  # no metric at all is a sync that did not finish
    assert alarm["alarm_actions"] == alarm["ok_actions"] and alarm["actions_enabled"] is True
    complete = resources(synthesized.stacks["complete"], "aws_cloudwatch_metric_alarm").values()
    assert {a["period"] for a in complete} == {3 * 3600}  # rate(1 hour)
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
    from segment_data_lake import DataLakeAlertsProps

    theirs = f"arn:aws:sns:{REGION}:{ACCOUNT}:platform-oncall"
    synthesized = synth_small_lake("brought-topic", cluster_mode="transient", schedule_expression="cron(0 * * * ? *)",
                                   alerts=DataLakeAlertsProps(topic_arn=theirs, stale_after_minutes=180))
    assert not resources(synthesized, "aws_sns_topic") and not resources(synthesized, "aws_sns_topic_policy")
    assert {t["arn"] for t in resources(synthesized, "aws_cloudwatch_event_target").values()} == {theirs}
    alarm = only(synthesized, "aws_cloudwatch_metric_alarm")
    assert alarm["alarm_actions"] == [theirs] and alarm["period"] == 180 * 60


def test_alert_props_are_checked_at_construction():
    from segment_data_lake import DataLakeAlertsProps, DataLakeConfigError

    assert DataLakeAlertsProps().window_seconds("cron(0 3 * * ? *)") == 86400  # no fixed interval: a day
    assert DataLakeAlertsProps(stale_after_minutes=300).window_seconds("cron(0 */2 * * ? *)") == 18000
    with pytest.raises(DataLakeConfigError, match="an alarm window of 12960 minutes is longer than CloudWatch "
                                                  "evaluates .10080 minutes."):
        DataLakeAlertsProps().window_seconds("rate(3 days)")
    with pytest.raises(DataLakeConfigError, match="alerts topic_arn"):
        DataLakeAlertsProps(topic_arn="platform-oncall")
    assert DataLakeAlertsProps(stale_after_intervals=2).window_seconds("rate(30 minutes)") == 3600


def test_alert_names_take_only_what_sns_and_eventbridge_allow():
    """name_suffix may hold characters IAM names take ('.', '@', ...) but SNS topic and EventBridge rule names do not."""
    from segment_data_lake import DataLakeRolesProps

    stack = synth_small_lake("dotted-suffix", access=DataLakeRolesProps(external_ids=["ws1"], name_suffix=".prod@eu"))
    assert only(stack, "aws_sns_topic")["name"] == "segment-data-lake-prod-eu-alerts"
    names = [rule["name"] for rule in resources(stack, "aws_cloudwatch_event_rule").values()]
    assert sorted(names) == ["segment-data-lake-prod-eu-cluster-failed", "segment-data-lake-prod-eu-step-failed"]
