"""The four IAM roles of the data lake, each with a least-privilege policy."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from constructs import Construct

from . import policy_documents, validation
from .account import AwsAccount
from .aws import IamInstanceProfile, IamPolicy, IamRole, IamRolePolicyAttachment
from .tagging import with_vendor_tag

SEGMENT_PRODUCTION_ROLE = "arn:aws:iam::595280932656:role/segment-datalakes-production-access"


@dataclass(frozen=True)
class DataLakeRolesProps:
    """Props of :class:`DataLakeRoles`.

    :param external_ids: values the vendor must present as ``sts:ExternalId``
        (your Segment workspace id or ids). Required.
    :param vendor_principals: IAM principals allowed to assume the vendor role
        (default: Segment's production Data Lakes role).
    :param name_suffix: appended to every role and policy name, e.g. ``-prod``.
    :param tags: tags for every role; ``vendor=segment`` is always added.
    """

    external_ids: Sequence[str]
    vendor_principals: Sequence[str] = (SEGMENT_PRODUCTION_ROLE,)
    name_suffix: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validation.external_ids(self.external_ids)
        validation.principal_arns(self.vendor_principals, "vendor_principals")
        validation.name_suffix(self.name_suffix)
        validation.tags(self.tags)


class DataLakeRoles(Construct):
    """Vendor role, EMR service role, EMR instance profile (and role), autoscaling role.

    Attributes: ``vendor_role``, ``emr_service_role``, ``emr_instance_role``,
    ``emr_instance_profile``, ``emr_autoscaling_role``, their ``*_policy``, and ``attachments`` (every
    policy attachment: a cluster must wait for them, or it starts without its permissions).
    :meth:`grant_key_use` lets the nodes and the vendor read and write with a KMS key.
    """

    def __init__(self, scope: Construct, id: str, *, props: DataLakeRolesProps, bucket_arn: str,
                 account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props = props
        self.account = AwsAccount.of(self, account)
        arn_parts = {"partition": self.account.partition, "region": self.account.region,
                     "account_id": self.account.account_id}
        self._tags = with_vendor_tag(props.tags)
        self.attachments: list[IamRolePolicyAttachment] = []

        self.emr_service_role = self._role("EmrServiceRole", "SegmentEMRServiceRole", "emr-service-trust", arn_parts,
                                           "Used by Amazon EMR to run the data lake cluster")
        self.attachments.append(IamRolePolicyAttachment(
            self, "EmrServiceManagedPolicy", role=self.emr_service_role.name,
            policy_arn=f"arn:{self.account.partition}:iam::aws:policy/service-role/AmazonEMRServicePolicy_v2",
        ))

        self.emr_instance_role = self._role("EmrInstanceRole", "SegmentEMRInstanceProfileRole", "emr-instance-trust",
                                            {}, "Assumed by the data lake cluster's nodes")
        self.emr_instance_profile = IamInstanceProfile(
            self, "EmrInstanceProfile", name=f"SegmentEMRInstanceProfile{props.name_suffix}",
            role=self.emr_instance_role.name, tags=self._tags,
        )
        self.emr_instance_policy = self._attach(
            self.emr_instance_role, "EmrInstancePolicy", "SegmentEMRInstanceProfilePolicy", "emr-instance-permissions",
            dict(arn_parts, bucket_arn=bucket_arn),
        )
        # AmazonEMRServicePolicy_v2 may pass only roles named EMR_EC2_DefaultRole.
        self.emr_service_pass_role_policy = self._attach(
            self.emr_service_role, "EmrServicePassRolePolicy", "SegmentEMRServicePassRolePolicy",
            "emr-service-pass-role", {"instance_role_arn": self.emr_instance_role.arn},
        )

        self.emr_autoscaling_role = self._role("EmrAutoscalingRole", "SegmentEMRAutoscalingRole", "autoscaling-trust",
                                               arn_parts, "Used by EMR to resize the data lake cluster")
        self.emr_autoscaling_policy = self._attach(
            self.emr_autoscaling_role, "EmrAutoscalingPolicy", "SegmentEMRAutoscalingPolicy",
            "autoscaling-permissions", arn_parts,
        )

        self.vendor_role = self._role(
            "VendorRole", "SegmentDataLakeRole", "vendor-trust",
            {"vendor_principals": list(props.vendor_principals), "external_ids": list(props.external_ids)},
            "Assumed by Segment, with your workspace id as external id, to run syncs",
        )
        self.vendor_policy = self._attach(
            self.vendor_role, "VendorPolicy", "SegmentDataLakePolicy", "vendor-permissions",
            dict(arn_parts, bucket_arn=bucket_arn, emr_role_arns=[
                self.emr_service_role.arn, self.emr_instance_role.arn, self.emr_autoscaling_role.arn]),
        )

    def grant_key_use(self, id: str, key_arn: str) -> IamPolicy:
        """Lets the nodes and the vendor role decrypt and generate data keys with ``key_arn`` (the
        cluster's key, or the bucket's default key): without it they cannot read or write the lake."""
        policy = IamPolicy(self, f"{id}Policy", name=f"SegmentDataLake{id}Policy{self.props.name_suffix}",
                           policy=policy_documents.render_json("key-use", key_arn=key_arn), tags=self._tags)
        for role in (self.emr_instance_role, self.vendor_role):
            self.attachments.append(IamRolePolicyAttachment(self, f"{id}-{role.node.id}", role=role.name,
                                                            policy_arn=policy.arn))
        return policy

    def _role(self, id: str, name: str, trust: str, values: dict, description: str) -> IamRole:
        return IamRole(self, id, name=f"{name}{self.props.name_suffix}", description=description,
                       assume_role_policy=policy_documents.render_json(trust, **values), tags=self._tags)

    def _attach(self, role: IamRole, id: str, name: str, template: str, values: dict) -> IamPolicy:
        policy = IamPolicy(self, id, name=f"{name}{self.props.name_suffix}",
                           policy=policy_documents.render_json(template, **values), tags=self._tags)
        self.attachments.append(IamRolePolicyAttachment(self, f"{id}Attachment", role=role.name, policy_arn=policy.arn))
        return policy
