"""Starts a replay on a temporary EMR cluster, from the template the constructs keep in the lake bucket
(``segment-lake-replay/<cluster name>.json``, written by ``ReplayCluster``): the lake cluster's roles,
security configuration, sizes and app release, with one step, this source's replay of the window. The
cluster ends when the step does, whether it succeeded or failed."""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from segment_lake_contract import REPLAY_TEMPLATE_FORMAT, REPLAY_TEMPLATES_PREFIX, replay_cluster_name, step_name

from .errors import InvalidSettings
from .options import flag
from .settings import ReplayWindow


@dataclass(frozen=True)
class ReplayOnEmrSettings:
    """Which source's window to replay, from which lake bucket's template."""

    lake: str = field(metadata=flag("the lake bucket, s3://<bucket>/"))
    source_id: str = field(metadata=flag("Segment source id"))
    replay: ReplayWindow = field(default_factory=ReplayWindow)
    cluster_name: str | None = field(default=None, metadata=flag(
        "the replay cluster's name", default_help="the bucket's only one"))
    aws_region: str | None = field(default=None, metadata=flag(
        "region of the lake", default_help="AWS_REGION or boto3's configuration"))
    dry_run: bool = field(default=False, metadata=flag("print the RunJobFlow request instead of sending it"))

    @property
    def bucket(self) -> str:
        parsed = urlparse(self.lake)
        if parsed.scheme not in ("s3", "s3a") or not parsed.netloc:
            raise InvalidSettings(f"--lake {self.lake!r} is not in S3: a replay on EMR needs the lake bucket, "
                                  f"e.g. s3://my-segment-data-lake/ (on one machine, run `segment-lake replay`)")
        return parsed.netloc


def load_template(s3, bucket: str, cluster_name: str | None) -> dict[str, Any]:
    """The template named ``cluster_name``, or the bucket's only one."""
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=REPLAY_TEMPLATES_PREFIX).get("Contents", [])
    names = sorted(item["Key"][len(REPLAY_TEMPLATES_PREFIX):-len(".json")] for item in listed
                   if item["Key"].endswith(".json"))
    if not names:
        raise InvalidSettings(f"no replay cluster template in s3://{bucket}/{REPLAY_TEMPLATES_PREFIX}: deploy the lake "
                              f"with replay_cluster=ReplayClusterProps() (SegmentDataLakeProps) first")
    if cluster_name is None and len(names) > 1:
        raise InvalidSettings(f"s3://{bucket}/ has replay clusters {', '.join(names)}: pass --cluster-name")
    name = cluster_name or names[0]
    if name not in names:
        raise InvalidSettings(f"no replay cluster {name!r} in s3://{bucket}/{REPLAY_TEMPLATES_PREFIX}: "
                              f"pass one of {', '.join(names)}")
    body = s3.get_object(Bucket=bucket, Key=f"{REPLAY_TEMPLATES_PREFIX}{name}.json")["Body"].read()
    template = json.loads(body)
    if template.get("format") != REPLAY_TEMPLATE_FORMAT:
        raise InvalidSettings(f"replay cluster template {name!r} has format {template.get('format')!r}, this "
                              f"segment-lake reads {REPLAY_TEMPLATE_FORMAT}: use the release the lake was deployed with")
    return template


def replay_request(template: dict[str, Any], source_id: str, window: ReplayWindow) -> dict[str, Any]:
    """The RunJobFlow request of a cluster that replays ``source_id`` over the ``window``."""
    sources = template["sources"]
    if source_id not in sources:
        raise InvalidSettings(f"source {source_id!r} is not among the lake's sources ({', '.join(sorted(sources))}): "
                              f"pass one of them, or add it to the lake's sources and deploy")
    if not window:
        raise InvalidSettings("a replay needs both --from and --to")
    source = sources[source_id]
    step = copy.deepcopy(source["step"])
    step["Name"] = step_name("replay", source["slug"], source_id, str(window))
    step["HadoopJarStep"]["Args"] += ["--from", window.first.isoformat(), "--to", window.last.isoformat()]
    request = copy.deepcopy(template["run_job_flow"])
    request["Name"] = replay_cluster_name(request["Name"], source["slug"], str(window))
    request["Steps"] = [step]
    return request


def start(emr, request: dict[str, Any]) -> str:
    """Starts the cluster; returns its id."""
    return emr.run_job_flow(**request)["JobFlowId"]
