"""The IAM roles of the data lake, each with a least-privilege policy: what each may do is written from the lake's
prefixes (``segment_lake_contract``) and databases, so no role can write where it only reads."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from constructs import Construct

import segment_data_lake_policies as policies
from segment_lake_contract import APP_PREFIX, DATA_PREFIX, LOGS_PREFIX, RAW_PREFIX, REPORTS_DATABASE, STAGE_PREFIX

from . import validation
from .account import AwsAccount
from .aws import IamInstanceProfile, IamPolicy, IamRole, IamRolePolicyAttachment
from .bucket import LakeBucket
from .refs import IInstanceProfile, InstanceProfileRef, IRole, RoleRef
from .tagging import with_vendor_tag

# The principals Segment's Data Lakes assume the vendor role as, by the region of the Segment workspace, as Segment's
# manual-setup documentation gives them: a US workspace's three roles of account 294048959147, an EU workspace's one
# role of account 595280932656 (the one Segment's Terraform module trusts).
SEGMENT_PRINCIPALS = {
    "us": ("arn:aws:iam::294048959147:role/customer-datalakes-prod-admin",
           "arn:aws:iam::294048959147:role/datalakes-aws-worker",
           "arn:aws:iam::294048959147:role/datalakes-customer-service"),
    "eu": ("arn:aws:iam::595280932656:role/segment-datalakes-production-access",),
}
SEGMENT_PRODUCTION_ROLE = SEGMENT_PRINCIPALS["eu"][0]  # the EU workspaces' principal (the default before segment_region)


@dataclass(frozen=True)
class DataLakeRolesProps:
    """Props of :class:`DataLakeRoles`.

    :param external_ids: values the vendor must present as ``sts:ExternalId``
        (your Segment workspace id or ids). Required.
    :param segment_region: the region of your Segment workspace, ``"us"`` (default) or ``"eu"``: which of Segment's
        principals may assume the vendor role (``SEGMENT_PRINCIPALS``).
    :param vendor_principals: IAM principals allowed to assume the vendor role instead (default: Segment's
        principals for ``segment_region``).
    :param name_suffix: appended to every role and policy name, e.g. ``-prod``.
    :param vendor_role: create the role Segment assumes to run syncs (only where Segment runs them:
        :class:`SegmentDataLake` sets it from ``sync_runner``).
    :param emr_service_role: bring the EMR service role (:meth:`DataLakeRoles.from_role_name`, or an ``IamRole`` of
        the stack), with ``AmazonEMRServicePolicy_v2`` attached: none is created, and the lake's policy passing the
        nodes' role to EC2 is attached to it. Default: created.
    :param emr_instance_role: bring the role of the EMR nodes (the same way): none is created, and the nodes' policy
        is attached to it. Default: created.
    :param emr_instance_profile: bring the instance profile of the EMR nodes
        (:meth:`DataLakeRoles.from_instance_profile_name`), which must hold ``emr_instance_role``. Default: created
        (for the brought role, if one is).
    :param tags: tags for every role; ``vendor=segment`` is always added.
    """

    external_ids: Sequence[str]
    segment_region: str = "us"
    vendor_principals: Sequence[str] | None = None
    name_suffix: str = ""
    vendor_role: bool = False
    emr_service_role: IRole | None = None
    emr_instance_role: IRole | None = None
    emr_instance_profile: IInstanceProfile | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def principals(self) -> list[str]:
        """Who may assume the vendor role: ``vendor_principals``, or Segment's for ``segment_region``."""
        chosen = self.vendor_principals
        return list(SEGMENT_PRINCIPALS[self.segment_region] if chosen is None else chosen)

    def __post_init__(self) -> None:
        validation.external_ids(self.external_ids)
        validation.one_of(self.segment_region, SEGMENT_PRINCIPALS, "segment_region")
        if self.vendor_principals is not None:
            validation.principal_arns(self.vendor_principals, "vendor_principals")
        validation.name_suffix(self.name_suffix)
        validation.tags(self.tags)
        for name in ("emr_service_role", "emr_instance_role", "emr_instance_profile"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, str) or not hasattr(value, "arn")):
                validation.fail(f"{name} {value!r} is not a role: pass DataLakeRoles.from_role_name(scope, id, name) "
                                f"(from_instance_profile_name for a profile), or an IamRole of the stack")
        if self.emr_instance_profile and not self.emr_instance_role:
            validation.fail(f"emr_instance_profile {self.emr_instance_profile.name!r} is brought without its role: "
                            f"set emr_instance_role to the role the profile holds")


def object_arns(bucket_arn: str, prefixes: Sequence[str]) -> list[str]:
    """The ARNs of every object under each prefix of the bucket."""
    return [f"{bucket_arn}/{prefix}*" for prefix in prefixes]


def glue_arns(arn_parts: Mapping[str, str], databases: Sequence[str]) -> list[str]:
    """The catalog, and each database with its tables: Glue authorizes a call on all three."""
    glue = "arn:{partition}:glue:{region}:{account_id}".format(**arn_parts)
    return [f"{glue}:catalog", *(f"{glue}:database/{name}" for name in databases),
            *(f"{glue}:table/{name}/*" for name in databases)]


class DataLakeRoles(Construct):
    """EMR service role, EMR instance profile (and role), and the vendor role when ``props.vendor_role``.

    The nodes read the raw events and the app, and write only ``segment-data/``, ``segment-stage/`` and
    ``logs/``; Glue only in ``glue_databases`` and the sync reports' database (and read ``default``, which
    Spark's and Hive's metastore client looks up). Managed scaling needs no autoscaling role.

    Attributes: ``emr_service_role``, ``emr_instance_role``, ``emr_instance_profile`` (each created, or the one
    brought), ``vendor_role`` (or ``None``), their ``*_policy``, ``databases``
    (those the roles may change), and ``attachments`` (every policy attachment: a cluster must wait for them, or it
    starts without its permissions). :meth:`grant_key_use` lets the nodes and the vendor read and write with a KMS
    key.
    """

    def __init__(self, scope: Construct, id: str, *, props: DataLakeRolesProps, bucket: LakeBucket,
                 glue_databases: Sequence[str], account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props = props
        self.account = AwsAccount.of(self, account)
        bucket_arn = bucket.bucket_arn
        arn_parts = self.account.arn_parts
        self.databases = list(dict.fromkeys([*glue_databases, REPORTS_DATABASE]))
        self._tags = with_vendor_tag(props.tags)
        self.attachments: list[IamRolePolicyAttachment] = []

        self.emr_service_role = (props.emr_service_role
                                 or self._role("EmrServiceRole", "SegmentEMRServiceRole", "emr-service-trust",
                                                 arn_parts, "Used by Amazon EMR to run the data lake cluster"))
        if not props.emr_service_role:  # a brought one has it (a shared role's policy is not this stack's to detach)
            self.attachments.append(IamRolePolicyAttachment(
                self, "EmrServiceManagedPolicy", role=self.emr_service_role.name,
                policy_arn=f"arn:{self.account.partition}:iam::aws:policy/service-role/AmazonEMRServicePolicy_v2",
            ))

        self.emr_instance_role = (props.emr_instance_role
                                  or self._role("EmrInstanceRole", "SegmentEMRInstanceProfileRole",
                                                  "emr-instance-trust", {}, "Assumed by the data lake cluster's nodes"))
        self.emr_instance_profile = (
            props.emr_instance_profile
            or IamInstanceProfile(self, "EmrInstanceProfile", name=f"SegmentEMRInstanceProfile{props.name_suffix}",
                                    role=self.emr_instance_role.name, tags=self._tags))
        self.emr_instance_policy = self._attach(
            self.emr_instance_role, "EmrInstancePolicy", "SegmentEMRInstanceProfilePolicy", "emr-instance-permissions",
            dict(bucket_arn=bucket_arn,
                 # s3a looks up a folder as a key (HEAD segment-data) before listing it
                 read_objects=[*object_arns(bucket_arn, (RAW_PREFIX, APP_PREFIX)),
                               *(f"{bucket_arn}/{prefix.rstrip('/')}" for prefix in (DATA_PREFIX, STAGE_PREFIX))],
                 write_objects=object_arns(bucket_arn, (DATA_PREFIX, STAGE_PREFIX, LOGS_PREFIX)),
                 glue_resources=glue_arns(arn_parts, self.databases),
                 default_database_resources=glue_arns(arn_parts, ["default"])[:2]),
        )
        # AmazonEMRServicePolicy_v2 may pass only roles named EMR_EC2_DefaultRole.
        self.emr_service_pass_role_policy = self._attach(
            self.emr_service_role, "EmrServicePassRolePolicy", "SegmentEMRServicePassRolePolicy",
            "emr-service-pass-role", {"instance_role_arn": self.emr_instance_role.arn},
        )

        self.vendor_role = self.vendor_policy = None
        if props.vendor_role:
            self.vendor_role = self._role(
                "VendorRole", "SegmentDataLakeRole", "vendor-trust",
                {"vendor_principals": props.principals, "external_ids": list(props.external_ids)},
                "Assumed by Segment, with your workspace id as external id, to run syncs",
            )
            self.vendor_policy = self._attach(
                self.vendor_role, "VendorPolicy", "SegmentDataLakePolicy", "vendor-permissions",
                dict(arn_parts, bucket_arn=bucket_arn, glue_resources=glue_arns(arn_parts, self.databases),
                     write_objects=object_arns(bucket_arn, (DATA_PREFIX, STAGE_PREFIX)),
                     **self.pass_role_values()))

    def pass_role_values(self) -> dict[str, str]:
        """The roles a cluster is started with, for a policy's PassRole statements: each may go to its service only."""
        return {"service_role_arn": self.emr_service_role.arn, "instance_role_arn": self.emr_instance_role.arn}

    @staticmethod
    def from_role_name(scope: Construct, id: str, role_name: str) -> RoleRef:
        """A role of this account, without a path, by name: ``emr_service_role`` or ``emr_instance_role``, or a
        grantee of ``grant_*``."""
        return RoleRef(scope, id, role_name=role_name)

    @staticmethod
    def from_instance_profile_name(scope: Construct, id: str, instance_profile_name: str) -> InstanceProfileRef:
        """An instance profile of this account, without a path, by name (``emr_instance_profile``)."""
        return InstanceProfileRef(scope, id, instance_profile_name=instance_profile_name)

    def grant_key_use(self, id: str, key_arn: str) -> IamPolicy:
        """Lets the nodes and the vendor role decrypt and generate data keys with ``key_arn`` (the
        cluster's key, or the bucket's default key): without it they cannot read or write the lake."""
        policy = IamPolicy(self, f"{id}Policy", name=f"SegmentDataLake{id}Policy{self.props.name_suffix}",
                           policy=policies.render_json("key-use", key_arn=key_arn), tags=self._tags)
        for role_id, role in (("EmrInstanceRole", self.emr_instance_role), ("VendorRole", self.vendor_role)):
            if role is not None:
                self.attachments.append(IamRolePolicyAttachment(self, f"{id}-{role_id}", role=role.name,
                                                                policy_arn=policy.arn))
        return policy

    def _role(self, id: str, name: str, trust: str, values: dict, description: str) -> IamRole:
        return IamRole(self, id, name=f"{name}{self.props.name_suffix}", description=description,
                       assume_role_policy=policies.render_json(trust, **values), tags=self._tags)

    def _attach(self, role: IamRole, id: str, name: str, template: str, values: dict) -> IamPolicy:
        policy = IamPolicy(self, id, name=f"{name}{self.props.name_suffix}",
                           policy=policies.render_json(template, **values), tags=self._tags)
        self.attachments.append(IamRolePolicyAttachment(self, f"{id}Attachment", role=role.name, policy_arn=policy.arn))
        return policy
