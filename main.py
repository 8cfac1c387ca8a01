"""The cdktf app: one stack with a Segment data lake, configured by environment variables.

    SEGMENT_LAKE_BUCKET       existing bucket name (created with SEGMENT_LAKE_CREATE_BUCKET=1)
    SEGMENT_LAKE_MANAGE_LIFECYCLE  1: the lake's lifecycle rules replace the existing bucket's; 0: they are left
                              alone (required with an existing SEGMENT_LAKE_BUCKET)
    SEGMENT_LAKE_SUBNET_ID    subnet of the EMR cluster
    SEGMENT_LAKE_PRIVATE_SUBNET  1 (default): the subnet has no route to an internet gateway; 0: it is public
    SEGMENT_WORKSPACE_IDS     comma-separated Segment workspace ids (the external ids)
    SEGMENT_WORKSPACE_ID      the workspace of the sources, named in sync reports (needed with several ids)
    SEGMENT_SOURCES           comma-separated source_id:slug pairs
    SEGMENT_LAKE_SUFFIX       suffix of IAM role names, e.g. -prod
    SEGMENT_REGION            us (default) or eu: the region of the Segment workspace, whose principals Segment uses
    SEGMENT_LAKE_BUNDLE       the sync app's bundle (default: the one `make bundle` builds into the package)
    SEGMENT_LAKE_SYNC_RUNNER  who runs the syncs: self (default, this module's schedules) or segment
    SEGMENT_LAKE_CLUSTER_MODE always_on (default: one cluster between syncs) or transient (a cluster per tick)
    SEGMENT_LAKE_LAKE_FORMATION=1  create the Glue databases and govern them with Lake Formation
    AWS_REGION                region of the provider

The defaults are placeholders so that `python main.py` synthesizes out of the box.
"""
from __future__ import annotations

import os
from pathlib import Path

from cdktf import App, LocalBackend, TerraformStack
from constructs import Construct

from segment_data_lake import (
    DataLakeBucketProps,
    DataLakeOutputs,
    DataLakeRolesProps,
    EmrClusterProps,
    EmrSecurityProps,
    SegmentDataLake,
    SegmentDataLakeProps,
    SegmentSource,
)
from segment_data_lake.aws import AwsProvider

STACK_NAME = "segment-data-lake"


def sources_from(text: str) -> list[SegmentSource]:
    pairs = [item.split(":", 1) for item in text.split(",") if item.strip()]
    if any(len(pair) != 2 for pair in pairs):
        raise SystemExit(f"SEGMENT_SOURCES={text!r}: write comma-separated source_id:slug pairs")
    return [SegmentSource(source_id=source_id.strip(), slug=slug.strip()) for source_id, slug in pairs]


def flag(env: dict[str, str], name: str, default: bool) -> bool:
    value = env.get(name)
    if value is None:
        return default
    if value not in ("0", "1"):
        raise SystemExit(f"{name}={value!r}: use 1 or 0")
    return value == "1"


def manage_lifecycle(env: dict[str, str]) -> bool | None:
    """Whether the lake's lifecycle rules replace an existing bucket's: the user's choice (the placeholder bucket's
    are managed, so that the stack synthesizes out of the box)."""
    if env.get("SEGMENT_LAKE_CREATE_BUCKET") == "1":
        return None
    chosen = env.get("SEGMENT_LAKE_MANAGE_LIFECYCLE")
    if chosen is None and "SEGMENT_LAKE_BUCKET" in env:
        raise SystemExit(f"SEGMENT_LAKE_BUCKET={env['SEGMENT_LAKE_BUCKET']} exists already: set "
                         f"SEGMENT_LAKE_MANAGE_LIFECYCLE=1 to replace its lifecycle rules with the lake's, or 0 to "
                         f"leave them")
    return chosen != "0"


class DataLakeStack(TerraformStack):
    def __init__(self, scope: Construct, id: str, env: dict[str, str]) -> None:
        super().__init__(scope, id)
        AwsProvider(self, "aws", region=env.get("AWS_REGION", "us-west-2"))
        # state next to cdktf.json, by a relative path (terraform runs in cdktf.out/stacks/<stack>/)
        LocalBackend(self, path=f"../../../terraform.{id}.tfstate")
        self.lake = SegmentDataLake(self, "SegmentDataLake", props=SegmentDataLakeProps(
            bucket=DataLakeBucketProps(bucket_name=env.get("SEGMENT_LAKE_BUCKET", "my-company-segment-data-lake"),
                                       create_bucket=env.get("SEGMENT_LAKE_CREATE_BUCKET") == "1",
                                       manage_lifecycle=manage_lifecycle(env)),
            access=DataLakeRolesProps(external_ids=env.get("SEGMENT_WORKSPACE_IDS", "my-workspace-id").split(","),
                                      name_suffix=env.get("SEGMENT_LAKE_SUFFIX", ""),
                                      segment_region=env.get("SEGMENT_REGION", "us")),
            cluster=EmrClusterProps(security=EmrSecurityProps(
                subnet_id=env.get("SEGMENT_LAKE_SUBNET_ID", "subnet-0123456789abcdef0"),
                private_subnet=flag(env, "SEGMENT_LAKE_PRIVATE_SUBNET", True))),
            sources=sources_from(env.get("SEGMENT_SOURCES", "9aQ1bC2dE3:web_app")),
            workspace_id=env.get("SEGMENT_WORKSPACE_ID"),
            sync_runner=env.get("SEGMENT_LAKE_SYNC_RUNNER", "self"),
            cluster_mode=env.get("SEGMENT_LAKE_CLUSTER_MODE", "always_on"),
            bundle_path=Path(env["SEGMENT_LAKE_BUNDLE"]) if env.get("SEGMENT_LAKE_BUNDLE") else None,
            create_glue_databases=env.get("SEGMENT_LAKE_LAKE_FORMATION") == "1",
            lake_formation=env.get("SEGMENT_LAKE_LAKE_FORMATION") == "1",
        ))
        DataLakeOutputs(self, "Outputs", lakes=[self.lake])


def main() -> None:
    app = App()
    DataLakeStack(app, STACK_NAME, dict(os.environ))
    app.synth()


if __name__ == "__main__":
    main()
