"""Alerts: what tells an on-call that the lake's syncs fail or stopped, on one SNS topic (created or brought).

- an EventBridge rule for the lake's EMR steps that fail (every source's sync, compaction and replay step);
- an EventBridge rule for the lake's clusters that end with errors (the always-on cluster, or the transient ones, and
  the replay clusters);
- a CloudWatch alarm per source when no scheduled sync of it finished within a window (a source whose syncs stopped,
  or whose metrics cannot be written, alarms; a quiet source's syncs still finish; a replay does not count).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from constructs import Construct

import segment_data_lake_policies as policies
from segment_lake_contract import (
    METRICS_DIMENSION,
    METRICS_NAMESPACE,
    SYNCS_FINISHED,
    replay_cluster_prefix,
    step_name_end,
)

from . import validation
from .account import AwsAccount
from .aws import (
    CloudwatchEventRule,
    CloudwatchEventTarget,
    CloudwatchMetricAlarm,
    CloudwatchMetricAlarmMetricQuery,
    CloudwatchMetricAlarmMetricQueryMetric,
    KmsKey,
    SnsTopic,
    SnsTopicPolicy,
)
from .emr import DataLakeCluster
from .refs import ITopic, TopicRef
from .replay_cluster import ReplayCluster
from .sources import SegmentSource, validate_sources
from .tagging import with_vendor_tag
from .transient_clusters import TransientClusters

_RATE = re.compile(r"rate\((\d+) (minute|hour|day)s?\)")
_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
# CloudWatch evaluates an alarm over at most 7 days (1 day for a period under an hour)
_LONGEST_WINDOW_SECONDS = 7 * 86400
_SHORT_PERIODS_WINDOW_SECONDS = 86400
# the no-sync alarm's period: at most an hour, and at least three to a window
_LONGEST_PERIOD_SECONDS = 3600
_FEWEST_PERIODS = 3
# the window of a schedule with no fixed interval (cron, at) unless stale_after_minutes says otherwise
CRON_WINDOW_MINUTES = 1440
EVENT_PATTERN_CHARACTERS = 2048  # EventBridge's default quota


def schedule_interval_minutes(expression: str) -> int | None:
    """The minutes between two runs of a ``rate(...)`` expression; None for ``cron(...)`` and ``at(...)``."""
    rate = _RATE.fullmatch(expression)
    return int(rate.group(1)) * _SECONDS[rate.group(2)] // 60 if rate else None


@dataclass(frozen=True)
class DataLakeAlertsProps:
    """Props of :class:`DataLakeAlerts`.

    :param topic: an SNS topic of yours to publish to (:meth:`DataLakeAlerts.from_topic_arn`, or an ``SnsTopic`` of
        the stack; default: a new one, ``segment-data-lake-alerts``,
        encrypted with a key of its own). A brought topic's policy must let ``events.amazonaws.com`` and
        ``cloudwatch.amazonaws.com`` publish to it (and its key, if it has one, let them use it).
    :param stale_after_intervals: the alarm of a source fires when none of its syncs finished within this many
        schedule intervals (default 3: two missed or failed syncs in a row, with room for a slow one).
    :param stale_after_minutes: the alarm's window in minutes, instead of ``stale_after_intervals`` (default for a
        ``cron(...)`` schedule, which has no fixed interval: 1,440, a day). At most 7 days.
    :param tags: tags of the topic, its key, the rules and the alarms; ``vendor=segment`` is always added.
    """

    topic: ITopic | None = None
    stale_after_intervals: int = 3
    stale_after_minutes: int | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.topic is not None and (isinstance(self.topic, str) or not hasattr(self.topic, "arn")):
            validation.fail(f"alerts topic {self.topic!r} is not a topic: pass DataLakeAlerts.from_topic_arn(scope, id, "
                            f"arn), or an SnsTopic of the stack")
        validation.at_least(self.stale_after_intervals, 1, "stale_after_intervals")
        if self.stale_after_minutes is not None:
            validation.at_least(self.stale_after_minutes, 1, "stale_after_minutes")
        validation.tags(self.tags)

    def window_seconds(self, schedule_expression: str) -> int:
        """The alarm's window: ``stale_after_minutes``, or ``stale_after_intervals`` times the schedule's interval."""
        minutes = self.stale_after_minutes
        if minutes is None:
            interval = schedule_interval_minutes(schedule_expression)
            minutes = CRON_WINDOW_MINUTES if interval is None else self.stale_after_intervals * interval
        if minutes * 60 > _LONGEST_WINDOW_SECONDS:
            validation.fail(f"an alarm window of {minutes} minutes is longer than CloudWatch evaluates "
                            f"({_LONGEST_WINDOW_SECONDS // 60} minutes): set alerts stale_after_minutes (or "
                            f"stale_after_intervals) lower")
        if alarm_period_seconds(minutes * 60) < 3600 and minutes * 60 > _SHORT_PERIODS_WINDOW_SECONDS:
            validation.fail(f"an alarm window of {minutes} minutes is longer than a day and not whole hours, which "
                            f"CloudWatch cannot evaluate in periods under an hour: make stale_after_minutes (or the "
                            f"schedule's interval) whole hours")
        return minutes * 60


def alarm_period_seconds(window_seconds: int) -> int:
    """The period of the no-sync alarm: the longest of whole minutes, at most an hour, that divides the window into
    at least three periods (a window of one period would alarm at the first clock hour without a sync, however
    recent the last one)."""
    fits = [p for p in range(60, _LONGEST_PERIOD_SECONDS + 1, 60)
            if window_seconds % p == 0 and window_seconds // p >= _FEWEST_PERIODS]
    return max(fits, default=60)


class DataLakeAlerts(Construct):
    """The SNS topic (created or brought), the EventBridge rules that publish the lake's failed steps and failed
    clusters to it (``replay``'s clusters too), and each source's alarm for syncs that stopped finishing (from the
    metrics each sync writes in the ``SegmentDataLake`` namespace), which publishes its changes (alarm and OK) to it.

    The alarm sums the source's ``SyncsFinished`` in periods of an hour (or less: whole minutes that divide the window
    into at least three), fills
    the periods without one with 0 (``FILL``), and fires when every period of the window is 0: between one period
    before and one period after the window has passed since the last finished sync. Without the filling, CloudWatch
    would judge the most recent periods that hold a data point, however old, and a source that stopped syncing would
    stay OK for days. A source with no data point at all in the range is missing data, which breaches.

    Attributes: ``topic_arn``, ``topic`` and ``topic_key`` (the created ones; None when brought), ``topic_policy``
    (None when brought),
    ``step_failed_rule``, ``cluster_failed_rule``, ``alarms`` (dict source id to ``CloudwatchMetricAlarm``).
    """

    def __init__(self, scope: Construct, id: str, *, props: DataLakeAlertsProps, sources: Sequence[SegmentSource],
                 schedule_expression: str, cluster: DataLakeCluster | TransientClusters, name_suffix: str = "",
                 replay: ReplayCluster | None = None, account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        validate_sources(sources)
        validation.name_suffix(name_suffix)
        self.props = props
        window = props.window_seconds(schedule_expression)
        account = AwsAccount.of(self, account)
        tags = with_vendor_tag(props.tags)
        name = f"segment-data-lake{name_suffix}"
        self.topic = self.topic_key = self.topic_policy = None
        if props.topic is None:
            self.topic_key = KmsKey(
                self, "TopicKey", description=f"Encrypts the alerts of {name}", enable_key_rotation=True,
                deletion_window_in_days=30, tags=tags,
                policy=policies.render_json("alerts-key", partition=account.partition,
                                                    account_id=account.account_id))
            self.topic = SnsTopic(self, "Topic", name=f"{name}-alerts", kms_master_key_id=self.topic_key.arn, tags=tags)
        self.topic_arn = (props.topic or self.topic).arn

        # each step of the lake ends its name with its source's id; whole names would outgrow an event pattern's
        # 2,048 characters at a dozen sources
        steps = [{"suffix": step_name_end(source.source_id)} for source in sources]
        replays = [{"prefix": replay_cluster_prefix(replay.props.name)}] if replay else []
        if isinstance(cluster, TransientClusters):
            clusters = {"name": [cluster.cluster_name("sync"), cluster.cluster_name("compact"), *replays]}
        elif replays:
            clusters = {"$or": [{"clusterId": [cluster.cluster_id]}, {"name": replays}]}
        else:
            clusters = {"clusterId": [cluster.cluster_id]}
        self.step_failed_rule = self._rule("StepFailed", f"{name}-step-failed", "A sync, compaction or replay step of "
                                           "the data lake failed", "EMR Step Status Change",
                                           {"state": ["FAILED"], "name": steps}, tags)
        self.cluster_failed_rule = self._rule("ClusterFailed", f"{name}-cluster-failed", "A cluster of the data lake "
                                              "ended with errors", "EMR Cluster State Change",
                                              {"state": ["TERMINATED_WITH_ERRORS"], **clusters}, tags)
        period = alarm_period_seconds(window)
        self.alarms: dict[str, CloudwatchMetricAlarm] = {}
        for source in sources:
            finished = CloudwatchMetricAlarmMetricQueryMetric(
                namespace=METRICS_NAMESPACE, metric_name=SYNCS_FINISHED, dimensions={METRICS_DIMENSION: source.source_id},
                period=period, stat="Sum")
            self.alarms[source.source_id] = CloudwatchMetricAlarm(
                self, f"NoSync-{source.source_id}", alarm_name=f"{name}-no-sync-{source.slug}",
                alarm_description=f"No sync of Segment source {source.slug} ({source.source_id}) finished in the last "
                                  f"{window // 60} minutes: see its EMR steps and segment-lake history",
                metric_query=[
                    CloudwatchMetricAlarmMetricQuery(id="finished", metric=finished, return_data=False),
                    CloudwatchMetricAlarmMetricQuery(id="finished_or_zero", expression="FILL(finished, 0)",
                                                     label="Syncs finished", return_data=True)],
                evaluation_periods=window // period, datapoints_to_alarm=window // period, threshold=1,
                comparison_operator="LessThanThreshold", treat_missing_data="breaching", actions_enabled=True,
                alarm_actions=[self.topic_arn], ok_actions=[self.topic_arn], tags=tags)
        if self.topic is not None:
            alarm_arns = f"arn:{account.partition}:cloudwatch:{account.region}:{account.account_id}:alarm:{name}-no-sync-*"
            self.topic_policy = SnsTopicPolicy(self, "TopicPolicy", arn=self.topic.arn, policy=policies.render_json(
                "alerts-topic", topic_arn=self.topic.arn, account_id=account.account_id, alarm_arns=alarm_arns,
                rule_arns=[self.step_failed_rule.arn, self.cluster_failed_rule.arn]))

    @staticmethod
    def from_topic_arn(scope: Construct, id: str, topic_arn: str) -> TopicRef:
        """An SNS topic of yours, by ARN (``topic``)."""
        return TopicRef(scope, id, topic_arn=topic_arn)

    def _rule(self, id: str, name: str, description: str, detail_type: str, detail: dict,
              tags: dict[str, str]) -> CloudwatchEventRule:
        pattern = json.dumps({"source": ["aws.emr"], "detail-type": [detail_type], "detail": detail})
        if len(pattern) > EVENT_PATTERN_CHARACTERS:
            validation.fail(f"the lake's sources make rule {name}'s event pattern "
                            f"{len(pattern)} characters, over EventBridge's {EVENT_PATTERN_CHARACTERS}: split the "
                            f"sources over two lakes (each with its own name_suffix)")
        rule = CloudwatchEventRule(self, id, name=name, description=description, tags=tags, event_pattern=pattern)
        CloudwatchEventTarget(self, f"{id}Target", rule=rule.name, arn=self.topic_arn, target_id="alerts-topic")
        return rule
