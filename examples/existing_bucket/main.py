"""The common case: an existing bucket and an existing subnet, one source."""
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

STACK_NAME = "existing-bucket"


class ExistingBucketStack(TerraformStack):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        AwsProvider(self, "aws", region="us-west-2")
        # state next to cdktf.json, by a relative path (terraform runs in cdktf.out/stacks/<stack>/)
        LocalBackend(self, path=f"../../../terraform.{id}.tfstate")
        self.lake = SegmentDataLake(self, "Lake", props=SegmentDataLakeProps(
            bucket=DataLakeBucketProps(bucket_name="acme-segment-data-lake", manage_lifecycle=True),
            access=DataLakeRolesProps(external_ids=["acmeworkspace123"], name_suffix="-prod"),
            cluster=EmrClusterProps(security=EmrSecurityProps(subnet_id="subnet-0a1b2c3d4e5f60718")),
            sources=[SegmentSource(source_id="Kq8dV1bX2c", slug="acme_web")],
            tags={"team": "data"},
        ))
        DataLakeOutputs(self, "Outputs", lakes=[self.lake])  # what to enter in Segment's settings


def build(app: App) -> TerraformStack:
    return ExistingBucketStack(app, STACK_NAME)


if __name__ == "__main__":
    app = App()
    build(app)
    app.synth()
