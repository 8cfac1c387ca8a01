"""CloudWatch's evaluation of a metric alarm, for the tests: moto stores an alarm but never evaluates it, so when
the no-sync alarm fires is proven here, from its synthesized definition, under the rules CloudWatch documents
("Configuring how CloudWatch alarms treat missing data"):

- CloudWatch retrieves more data points than the alarm's evaluation periods: its evaluation range.
- With no data point missing from the range, it judges the most recent ``evaluation_periods`` of them.
- With some missing but at least ``evaluation_periods`` present, it judges the most recent data points that exist,
  however far back in the range, and ignores how the alarm treats missing data.
- With fewer present, it adds as few missing data points as it needs, each treated as the alarm says
  (``breaching``, ``notBreaching``); with none present, ``breaching`` is ALARM, ``notBreaching`` OK, ``missing``
  INSUFFICIENT_DATA and ``ignore`` the state it had.
- The alarm is in ALARM when ``datapoints_to_alarm`` of the judged data points breach.

The size of the evaluation range is not a fixed rule of CloudWatch's documentation, so callers judge every size
from ``evaluation_periods`` up. The alarm is judged at the ends of its periods, on whole periods: CloudWatch's
handling of a period still filling is not modelled. Metric math: ``FILL(m, value)`` gives every period of the range
``value`` where ``m`` has none; a metric with no data point at all in the range gives none (the least CloudWatch promises).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_COMPARE = {"LessThanThreshold": lambda v, t: v < t, "LessThanOrEqualToThreshold": lambda v, t: v <= t,
            "GreaterThanThreshold": lambda v, t: v > t, "GreaterThanOrEqualToThreshold": lambda v, t: v >= t}
_FILL = re.compile(r"^FILL\((\w+), *([0-9.]+)\)$")


@dataclass(frozen=True)
class Alarm:
    namespace: str
    metric_name: str
    dimensions: dict
    statistic: str
    period: int
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float
    comparison: str
    treat_missing_data: str
    fill: float | None  # FILL's value, for an alarm on FILL(metric, value)

    @classmethod
    def of(cls, config: dict) -> Alarm:
        """The alarm of an ``aws_cloudwatch_metric_alarm``'s configuration: on one metric, or on ``FILL`` of one."""
        fill = None
        if "metric_query" in config:
            queries = {query["id"]: query for query in config["metric_query"]}
            [returned] = [query for query in queries.values() if query.get("return_data")]
            match = _FILL.match(returned.get("expression", ""))
            assert match, f"only FILL(metric, value) is modelled, not {returned}"
            fill = float(match[2])
            metric = queries[match[1]]["metric"]
            metric = dict(metric, statistic=metric["stat"])
        else:
            metric = config
        evaluation = config["evaluation_periods"]
        return cls(metric["namespace"], metric["metric_name"], dict(metric.get("dimensions", {})),
                   metric["statistic"], metric["period"], evaluation, config.get("datapoints_to_alarm", evaluation),
                   float(config["threshold"]), config["comparison_operator"], config.get("treat_missing_data", "missing"),
                   fill)

    def period_values(self, data: list[dict], first: int, last: int) -> list[float | None]:
        """The alarm's statistic over each period from ``first`` to ``last`` (index of period = seconds // period),
        of the PutMetricData data points that are its metric's; None where there is none."""
        assert self.statistic == "Sum", "only Sum is modelled"
        sums: dict[int, float] = {}
        for datum in data:
            dimensions = {d["Name"]: d["Value"] for d in datum["Dimensions"]}
            if (datum["Namespace"], datum["MetricName"], dimensions) == (self.namespace, self.metric_name,
                                                                          self.dimensions):
                index = int(datum["Timestamp"].timestamp()) // self.period
                sums[index] = sums.get(index, 0.0) + datum["Value"]
        values = [sums.get(index) for index in range(first, last + 1)]
        if self.fill is not None and any(v is not None for v in values):
            values = [self.fill if v is None else v for v in values]
        return values

    def state(self, data: list[dict], now: int, range_periods: int, previous: str = "OK") -> str:
        """The alarm's state when evaluated at ``now`` (seconds, a period's end), over the ``range_periods`` whole
        periods before it."""
        assert range_periods >= self.evaluation_periods
        last = now // self.period - 1
        values = self.period_values(data, last - range_periods + 1, last)
        present = [v for v in values if v is not None]
        breaches = lambda judged: sum(_COMPARE[self.comparison](v, self.threshold) for v in judged)  # noqa: E731
        if not present:
            return {"breaching": "ALARM", "notBreaching": "OK", "missing": "INSUFFICIENT_DATA",
                    "ignore": previous}[self.treat_missing_data]
        if len(present) >= self.evaluation_periods:
            judged = (values if len(present) == len(values) else present)[-self.evaluation_periods:]
            count = breaches(judged)
        else:
            assert self.treat_missing_data in ("breaching", "notBreaching"), "partial 'missing'/'ignore' not modelled"
            filled = self.evaluation_periods - len(present)
            count = breaches(present) + (filled if self.treat_missing_data == "breaching" else 0)
        return "ALARM" if count >= self.datapoints_to_alarm else "OK"
