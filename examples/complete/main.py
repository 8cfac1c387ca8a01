"""Everything created here: the bucket, a VPC whose private subnet reaches AWS only
through VPC endpoints, the lake with Glue databases and Lake Formation grants."""
from cdktf import App, LocalBackend, TerraformStack
from constructs import Construct

from segment_data_lake import (
    DataLakeBucketProps,
    DataLakeOutputs,
    DataLakeRolesProps,
    EmrClusterProps,
    EmrSecurityProps,
    LakeLifecycleProps,
    ManagedScaling,
    ReplayClusterProps,
    SegmentDataLake,
    SegmentDataLakeProps,
    SegmentSource,
)
from segment_data_lake.aws import (
    AwsProvider,
    DataAwsCallerIdentity,
    DefaultSecurityGroup,
    FlowLog,
    RouteTable,
    RouteTableAssociation,
    SecurityGroup,
    SecurityGroupEgress,
    SecurityGroupIngress,
    Subnet,
    Vpc,
    VpcEndpoint,
)
from segment_data_lake.tagging import EMR_MANAGED_POLICY_TAG

STACK_NAME = "complete"
REGION = "us-east-1"
VPC_CIDR = "10.40.0.0/16"
# What a cluster without internet access calls: S3 through a gateway, the rest through interfaces.
INTERFACE_ENDPOINTS = ("sts", "glue", "elasticmapreduce", "kms", "logs", "monitoring")


FLOW_LOG_PREFIX = "logs/vpc-flow/"


def flow_log_delivery(bucket_name: str, account_id: str) -> list[dict]:
    """The statements AWS would add to the bucket policy for VPC flow log delivery: written here, since
    the lake's bucket policy replaces the bucket's whole policy."""
    source = {"StringEquals": {"aws:SourceAccount": account_id},
              "ArnLike": {"aws:SourceArn": f"arn:aws:logs:{REGION}:{account_id}:*"}}
    delivery = {"Service": "delivery.logs.amazonaws.com"}
    return [
        {"Sid": "AWSLogDeliveryWrite", "Effect": "Allow", "Principal": delivery, "Action": "s3:PutObject",
         "Resource": f"arn:aws:s3:::{bucket_name}/{FLOW_LOG_PREFIX}AWSLogs/{account_id}/*",
         "Condition": {**source, "StringEquals": {**source["StringEquals"],
                                                   "s3:x-amz-acl": "bucket-owner-full-control"}}},
        {"Sid": "AWSLogDeliveryAclCheck", "Effect": "Allow", "Principal": delivery,
         "Action": ["s3:GetBucketAcl", "s3:ListBucket"], "Resource": f"arn:aws:s3:::{bucket_name}", "Condition": source},
    ]


class PrivateNetwork(Construct):
    """A VPC with one private subnet and the endpoints EMR needs there."""

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        tags = dict(EMR_MANAGED_POLICY_TAG, vendor="segment")
        self.vpc = Vpc(self, "Vpc", cidr_block=VPC_CIDR, enable_dns_support=True, enable_dns_hostnames=True,
                       tags=dict(tags, Name="segment-data-lake"))
        DefaultSecurityGroup(self, "DefaultSecurityGroup", vpc_id=self.vpc.id)  # no rules: nothing may use it
        self.subnet = Subnet(self, "PrivateSubnet", vpc_id=self.vpc.id, cidr_block="10.40.1.0/24",
                             availability_zone=f"{REGION}a", map_public_ip_on_launch=False,
                             tags=dict(tags, Name="segment-data-lake-private"))
        routes = RouteTable(self, "PrivateRoutes", vpc_id=self.vpc.id, tags=tags)
        RouteTableAssociation(self, "PrivateRoutesAssociation", subnet_id=self.subnet.id, route_table_id=routes.id)
        VpcEndpoint(self, "S3Endpoint", vpc_id=self.vpc.id, service_name=f"com.amazonaws.{REGION}.s3",
                    vpc_endpoint_type="Gateway", route_table_ids=[routes.id], tags=tags)
        endpoint_group = SecurityGroup(
            self, "EndpointSecurityGroup", name="segment-data-lake-endpoints", vpc_id=self.vpc.id,
            description="HTTPS from the VPC to the AWS service endpoints",
            ingress=[SecurityGroupIngress(description="HTTPS from the VPC", from_port=443, to_port=443,
                                          protocol="tcp", cidr_blocks=[VPC_CIDR])],
            egress=[SecurityGroupEgress(description="Replies within the VPC", from_port=0, to_port=0,
                                        protocol="-1", cidr_blocks=[VPC_CIDR])],
            tags=tags,
        )
        for service in INTERFACE_ENDPOINTS:
            VpcEndpoint(self, f"{service}Endpoint", vpc_id=self.vpc.id, service_name=f"com.amazonaws.{REGION}.{service}",
                        vpc_endpoint_type="Interface", private_dns_enabled=True, subnet_ids=[self.subnet.id],
                        security_group_ids=[endpoint_group.id], tags=tags)


class CompleteStack(TerraformStack):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        AwsProvider(self, "aws", region=REGION)
        # state next to cdktf.json, by a relative path (terraform runs in cdktf.out/stacks/<stack>/)
        LocalBackend(self, path=f"../../../terraform.{id}.tfstate")
        bucket_name = "acme-segment-data-lake-complete"
        self.network = PrivateNetwork(self, "Network")
        account_id = DataAwsCallerIdentity(self, "Caller").account_id
        self.lake = SegmentDataLake(self, "Lake", props=SegmentDataLakeProps(
            bucket=DataLakeBucketProps(bucket_name=bucket_name, create_bucket=True,
                                       lifecycle=LakeLifecycleProps(stage_expiration_days=7),
                                       extra_policy_statements=flow_log_delivery(bucket_name, account_id)),
            access=DataLakeRolesProps(external_ids=["acmeworkspace123", "acmestaging456"], name_suffix="-complete"),
            workspace_id="acmeworkspace123",
            cluster=EmrClusterProps(
                security=EmrSecurityProps(subnet_id=self.network.subnet.id),
                name="segment-data-lake-complete",
                core_instance_type="m5.2xlarge",
                task_instance_type="m5.2xlarge",
                ebs_volume_size_gb=128,
                managed_scaling=ManagedScaling(minimum_units=2, maximum_units=12, maximum_on_demand_units=4,
                                               maximum_core_units=2),
                termination_protection=True,
            ),
            sources=[
                SegmentSource(source_id="Kq8dV1bX2c", slug="acme_web"),
                SegmentSource(source_id="Zt4mN8pQ1r", slug="acme_backend", date_partition="day"),
            ],
            schedule_expression="rate(1 hour)",
            create_glue_databases=True,
            lake_formation=True,
            # backfills on a temporary cluster of their own: segment-lake replay-on-emr
            replay_cluster=ReplayClusterProps(managed_scaling=ManagedScaling(
                minimum_units=2, maximum_units=20, maximum_on_demand_units=4, maximum_core_units=2)),
            tags={"team": "data", "env": "prod"},
        ))
        DataLakeOutputs(self, "Outputs", lakes=[self.lake])
        # after the bucket (a reference) and its policy, which grants the delivery: AWS checks that policy when the
        # flow log is created, and adds statements of its own to a policy that lacks them
        FlowLog(self, "FlowLog", vpc_id=self.network.vpc.id, traffic_type="ALL", log_destination_type="s3",
                log_destination=f"{self.lake.bucket.bucket_arn}/{FLOW_LOG_PREFIX}", depends_on=[self.lake.bucket.policy])


def build(app: App) -> TerraformStack:
    return CompleteStack(app, STACK_NAME)


if __name__ == "__main__":
    app = App()
    build(app)
    app.synth()
