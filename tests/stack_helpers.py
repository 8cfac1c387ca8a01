"""Look-ups in a synthesized stack (cdk.tf.json as a dict)."""
from __future__ import annotations

import json
import re

_REFERENCE = re.compile(r"\$\{(resource\.)?([a-z0-9_]+)\.([A-Za-z0-9_-]+)\.([a-z0-9_]+)\}")


def resources(stack: dict, rtype: str) -> dict[str, dict]:
    return stack.get("resource", {}).get(rtype, {})


def only(stack: dict, rtype: str) -> dict:
    found = list(resources(stack, rtype).values())
    assert len(found) == 1, f"expected one {rtype}, found {len(found)}"
    return found[0]


def named(stack: dict, rtype: str, path_part: str) -> dict:
    """The resource of ``rtype`` whose construct path contains ``path_part``."""
    found = [r for r in resources(stack, rtype).values() if path_part in r["//"]["metadata"]["path"]]
    assert len(found) == 1, f"expected one {rtype} at *{path_part}*, found {len(found)}"
    return found[0]


def policy(resource: dict, key: str = "policy") -> dict:
    return json.loads(resource[key])


def statement(document: dict, sid: str) -> dict:
    found = [s for s in document["Statement"] if s.get("Sid") == sid]
    assert len(found) == 1, f"no statement {sid}"
    return found[0]


def as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def resolve(stack: dict, value):
    """``value`` with every ``${type.name.attribute}`` that names a literal in the stack's own
    configuration replaced by that literal (references to computed attributes stay as they are)."""
    if isinstance(value, dict):
        return {key: resolve(stack, item) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(stack, item) for item in value]
    if not isinstance(value, str):
        return value

    def literal(match: re.Match) -> str:
        _, rtype, name, attribute = match.groups()
        found = resources(stack, rtype).get(name, {}).get(attribute)
        return resolve(stack, found) if isinstance(found, str) else match.group(0)

    return _REFERENCE.sub(literal, value)


def small_lake_props(**overrides):
    """The props of a one-source lake on a placeholder bucket and subnet, with ``overrides``."""
    from segment_data_lake import (
        DataLakeBucketProps,
        DataLakeRolesProps,
        EmrClusterProps,
        EmrSecurityProps,
        SegmentDataLakeProps,
        SegmentSource,
    )

    return SegmentDataLakeProps(**{
        "bucket": DataLakeBucketProps(bucket_name="acme-lake", manage_lifecycle=True),
        "access": DataLakeRolesProps(external_ids=["ws1"]),
        "cluster": EmrClusterProps(security=EmrSecurityProps(subnet_id="subnet-0123456789abcdef0")),
        "sources": [SegmentSource(source_id="src0001", slug="web")], **overrides})


def synth_small_lake(name: str, **overrides) -> dict:
    """A stack holding only the lake of ``small_lake_props(**overrides)``, synthesized; an override may be a function
    of the stack (for a prop that brings a piece: ``lambda stack: DataLakeAlerts.from_topic_arn(stack, ...)``)."""
    from cdktf import App, TerraformStack, Testing

    from segment_data_lake import SegmentDataLake
    from segment_data_lake.aws import AwsProvider

    stack = TerraformStack(App(), name)
    AwsProvider(stack, "aws", region="us-east-1")
    SegmentDataLake(stack, "Lake", props=small_lake_props(**{
        name: value(stack) if callable(value) else value for name, value in overrides.items()}))
    return json.loads(Testing.synth(stack))
