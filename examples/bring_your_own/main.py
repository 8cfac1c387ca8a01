"""A lake inside a platform team's account: the bucket, the EMR roles and instance profile, and the EMR security
configuration, its KMS key and the EMR-managed security groups exist already (made and governed elsewhere), so the
lake brings them and creates none of them. The lake's policies are attached
to the brought roles; the bucket is left exactly as it is (expire its segment-stage/ yourself). Analysts read the
lake and a data team runs its commands (``grant_read``, ``grant_read_write``)."""
import json

from cdktf import App, LocalBackend, TerraformStack
from constructs import Construct

from segment_data_lake import (
    DataLakeAlerts,
    DataLakeAlertsProps,
    DataLakeBucket,
    DataLakeOutputs,
    DataLakeRoles,
    DataLakeRolesProps,
    EmrClusterProps,
    EmrSecurity,
    EmrSecurityProps,
    SegmentDataLake,
    SegmentDataLakeProps,
    SegmentSource,
)
from segment_data_lake.aws import AwsProvider, DataAwsCallerIdentity, IamRole

STACK_NAME = "bring-your-own"


def sso_trust(account_id: str) -> str:
    """A role that people sign in to through the company's identity provider (SAML)."""
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": "sts:AssumeRoleWithSAML",
        "Principal": {"Federated": f"arn:aws:iam::{account_id}:saml-provider/acme-sso"},
        "Condition": {"StringEquals": {"SAML:aud": "https://signin.aws.amazon.com/saml"}}}]})


class BringYourOwnStack(TerraformStack):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        AwsProvider(self, "aws", region="us-west-2")
        # state next to cdktf.json, by a relative path (terraform runs in cdktf.out/stacks/<stack>/)
        LocalBackend(self, path=f"../../../terraform.{id}.tfstate")
        account_id = DataAwsCallerIdentity(self, "Caller").account_id
        # every brought piece in one shape: a from_* of the construct that would otherwise create it
        self.lake = SegmentDataLake(self, "Lake", props=SegmentDataLakeProps(
            bucket=DataLakeBucket.from_bucket_name(self, "PlatformBucket", "acme-platform-data-lake"),
            access=DataLakeRolesProps(
                external_ids=["acmeworkspace123"], name_suffix="-platform",
                emr_service_role=DataLakeRoles.from_role_name(self, "PlatformEmrService", "platform-emr-service"),
                emr_instance_role=DataLakeRoles.from_role_name(self, "PlatformEmrNodes", "platform-emr-nodes"),
                emr_instance_profile=DataLakeRoles.from_instance_profile_name(self, "PlatformEmrNodesProfile",
                                                                              "platform-emr-nodes")),
            cluster=EmrClusterProps(security=EmrSecurityProps(
                subnet_id="subnet-0a1b2c3d4e5f60718",
                security_configuration=EmrSecurity.from_security_configuration_name(
                    self, "PlatformSecurityConfiguration", "platform-emr-encrypted"),
                cluster_key=EmrSecurity.from_key_arn(
                    self, "PlatformEmrKey", f"arn:aws:kms:us-west-2:{account_id}:key/8d3f1c2a-5b6e-4f70-9a81-2c3d4e5f6a7b"),
                managed_security_groups=EmrSecurity.from_security_group_ids(
                    self, "PlatformEmrGroups", master="sg-0a1b2c3d4e5f60001", core_task="sg-0a1b2c3d4e5f60002",
                    service_access="sg-0a1b2c3d4e5f60003"))),
            sources=[SegmentSource(source_id="Kq8dV1bX2c", slug="acme_web")],
            # the platform's on-call topic (its policy lets EventBridge and CloudWatch publish)
            alerts=DataLakeAlertsProps(topic=DataLakeAlerts.from_topic_arn(
                self, "PlatformOncall", f"arn:aws:sns:us-west-2:{account_id}:platform-oncall")),
        ))
        DataLakeOutputs(self, "Outputs", lakes=[self.lake])
        # the analysts' role reads the lake (Athena, Spark); the data team's runs compact and delete-users from outside
        self.analysts = IamRole(self, "Analysts", name="acme-lake-analysts", assume_role_policy=sso_trust(account_id))
        self.lake.grant_read("Analysts", self.analysts)
        self.data_team = IamRole(self, "DataTeam", name="acme-lake-data-team", assume_role_policy=sso_trust(account_id))
        self.lake.grant_read_write("DataTeam", self.data_team)


def build(app: App) -> TerraformStack:
    return BringYourOwnStack(app, STACK_NAME)


if __name__ == "__main__":
    app = App()
    build(app)
    app.synth()
