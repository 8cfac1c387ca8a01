"""Two lakes in one stack, production and staging: each with its own bucket, roles (``name_suffix``),
cluster and schedules. With several lakes in a stack, every lake's outputs start with its construct id
(``prod_emr_cluster_id``, ``staging_emr_cluster_id``)."""
from cdktf import App, LocalBackend, TerraformStack
from constructs import Construct

from segment_data_lake import (
    DataLakeBucketProps,
    DataLakeOutputs,
    DataLakeRolesProps,
    EmrClusterProps,
    EmrSecurity,
    EmrSecurityProps,
    IKey,
    SegmentDataLake,
    SegmentDataLakeProps,
    SegmentSource,
)
from segment_data_lake.aws import AwsProvider

STACK_NAME = "staging-and-prod"


def lake_props(environment: str, subnet_id: str, bucket_key: IKey | None = None) -> SegmentDataLakeProps:
    return SegmentDataLakeProps(
        bucket=DataLakeBucketProps(bucket_name=f"acme-segment-lake-{environment}", create_bucket=True,
                                   kms_key=bucket_key),
        access=DataLakeRolesProps(external_ids=[f"acme{environment}workspace"], name_suffix=f"-{environment}"),
        cluster=EmrClusterProps(security=EmrSecurityProps(subnet_id=subnet_id), name=f"segment-data-lake-{environment}"),
        sources=[SegmentSource(source_id=f"Web{environment.capitalize()}123", slug=f"acme-web-{environment}")],
    )


class StagingAndProdStack(TerraformStack):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        AwsProvider(self, "aws", region="us-east-1")
        # state next to cdktf.json, by a relative path (terraform runs in cdktf.out/stacks/<stack>/)
        LocalBackend(self, path=f"../../../terraform.{id}.tfstate")
        # production's bucket encrypts with a customer managed key (nothing outside the account writes to it)
        self.prod = SegmentDataLake(self, "Prod", props=lake_props(
            "prod", "subnet-0a1b2c3d4e5f60718",
            bucket_key=EmrSecurity.from_key_arn(
                self, "ProdBucketKey", "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab")))
        self.staging = SegmentDataLake(self, "Staging", props=lake_props("staging", "subnet-0f1e2d3c4b5a69788"))
        # both lakes' outputs, each named after its lake: prod_emr_cluster_id, staging_emr_cluster_id, ...
        DataLakeOutputs(self, "Outputs", lakes=[self.prod, self.staging])


def build(app: App) -> TerraformStack:
    return StagingAndProdStack(app, STACK_NAME)


if __name__ == "__main__":
    app = App()
    build(app)
    app.synth()
