"""Two sources (web and iOS) sharing one Glue database, kept apart by table prefixes."""
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

STACK_NAME = "shared-database"


class SharedDatabaseStack(TerraformStack):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        AwsProvider(self, "aws", region="eu-west-1")
        # state next to cdktf.json, by a relative path (terraform runs in cdktf.out/stacks/<stack>/)
        LocalBackend(self, path=f"../../../terraform.{id}.tfstate")
        self.lake = SegmentDataLake(self, "Lake", props=SegmentDataLakeProps(
            bucket=DataLakeBucketProps(bucket_name="acme-segment-lake-eu", manage_lifecycle=True),
            access=DataLakeRolesProps(external_ids=["acmeworkspace123"]),
            cluster=EmrClusterProps(security=EmrSecurityProps(subnet_id="subnet-0f1e2d3c4b5a69788")),
            sources=[
                SegmentSource(source_id="Web1234567", slug="acme-web", glue_database="acme", table_prefix="web_"),
                SegmentSource(source_id="Ios1234567", slug="acme-ios", glue_database="acme", table_prefix="ios_",
                              date_partition="year_month_day_hour"),
            ],
            create_glue_databases=True,
        ))
        DataLakeOutputs(self, "Outputs", lakes=[self.lake])


def build(app: App) -> TerraformStack:
    return SharedDatabaseStack(app, STACK_NAME)


if __name__ == "__main__":
    app = App()
    build(app)
    app.synth()
