"""The lake's input: the role Segment's "AWS S3 with IAM Role Support" destination assumes to write raw events."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from constructs import Construct

import segment_data_lake_policies as policies

from . import validation
from .aws import IamPolicy, IamRole, IamRolePolicyAttachment
from .bucket import LakeBucket
from .tagging import with_vendor_tag

SEGMENT_S3_INTEGRATION_ROLE = "arn:aws:iam::595280932656:role/segment-s3-integration-production-access"


@dataclass(frozen=True)
class SegmentS3DestinationProps:
    """Props of :class:`SegmentS3Destination`.

    :param workspace_id: your Segment workspace id; Segment presents it as ``sts:ExternalId``. Required.
    :param principal: the IAM principal of Segment's S3 destination (default: Segment's documented
        production role).
    :param name_suffix: appended to the role and policy names, e.g. ``-prod``.
    :param tags: tags of the role and policy; ``vendor=segment`` is always added.
    """

    workspace_id: str
    principal: str = SEGMENT_S3_INTEGRATION_ROLE
    name_suffix: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validation.external_ids([self.workspace_id])
        validation.principal_arns([self.principal], "principal")
        validation.name_suffix(self.name_suffix)
        validation.tags(self.tags)


class SegmentS3Destination(Construct):
    """The role to enter in Segment's AWS S3 destination settings: trusted only by Segment's S3
    integration principal presenting your workspace id, and allowed only to put objects (and their ACL,
    as Segment's documented policy has it) under ``segment-logs/`` of the lake bucket, plus the bucket
    key through ``grant_key_use``.

    Attributes: ``role``, ``role_arn``, ``policy``.
    """

    def __init__(self, scope: Construct, id: str, *, props: SegmentS3DestinationProps, bucket: LakeBucket) -> None:
        super().__init__(scope, id)
        self.props = props
        bucket_arn = bucket.bucket_arn
        self._tags = tags = with_vendor_tag(props.tags)
        self.role = IamRole(
            self, "Role", name=f"SegmentS3DestinationRole{props.name_suffix}",
            description="Assumed by Segment's S3 destination, with your workspace id as external id, to write segment-logs/",
            assume_role_policy=policies.render_json("s3-destination-trust", principal=props.principal,
                                                            workspace_id=props.workspace_id),
            tags=tags,
        )
        self.role_arn = self.role.arn
        self.policy = IamPolicy(self, "Policy", name=f"SegmentS3DestinationPolicy{props.name_suffix}",
                                policy=policies.render_json("s3-destination-permissions", bucket_arn=bucket_arn),
                                tags=tags)
        IamRolePolicyAttachment(self, "PolicyAttachment", role=self.role.name, policy_arn=self.policy.arn)

    def grant_key_use(self, key_arn: str) -> IamPolicy:
        """Lets Segment encrypt what it writes with the bucket's KMS key."""
        policy = IamPolicy(self, "KeyPolicy", name=f"SegmentS3DestinationKeyPolicy{self.props.name_suffix}",
                           policy=policies.render_json("key-use", key_arn=key_arn), tags=self._tags)
        IamRolePolicyAttachment(self, "KeyPolicyAttachment", role=self.role.name, policy_arn=policy.arn)
        return policy
