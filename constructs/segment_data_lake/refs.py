"""Pieces made outside this module, brought by reference, all in one shape (as aws-cdk's ``Bucket.fromBucketName``).

Each reference is made by a ``from_*(scope, id, ...)`` of the construct that would otherwise create the piece
(``DataLakeBucket.from_bucket_name``, ``DataLakeRoles.from_role_name``, ``EmrSecurity.from_key_arn``...), checks its
value at once, synthesizes nothing, and has the attributes of the Terraform resource it stands for (a role's ``name``
and ``arn``, as ``IamRole``; a key's ``arn``, as ``KmsKey``), so a resource made in the same stack can be passed
instead. ARNs built from a name are in the partition and account of the stack's provider.
"""
from __future__ import annotations

from typing import Protocol

from constructs import Construct

from . import validation
from .account import AwsAccount
from .aws import TerraformStack


class IRole(Protocol):
    """A role: an ``IamRole`` of the stack, a ``DataAwsIamRole``, or a :class:`RoleRef`."""

    name: str
    arn: str


class IInstanceProfile(Protocol):
    """An instance profile: an ``IamInstanceProfile`` of the stack, or an :class:`InstanceProfileRef`."""

    name: str
    arn: str


class IKey(Protocol):
    """A KMS key: a ``KmsKey`` of the stack, or a :class:`KeyRef`."""

    arn: str


class ITopic(Protocol):
    """An SNS topic: an ``SnsTopic`` of the stack, or a :class:`TopicRef`."""

    arn: str


def stack_account(scope: Construct) -> AwsAccount:
    """The partition, account and region of the stack's provider, shared by every reference of the stack."""
    return AwsAccount.of(TerraformStack.of(scope), None)


class _IamRef(Construct):
    """An IAM object of this account, without a path, by name: its ``name`` and ``arn``."""

    def __init__(self, scope: Construct, id: str, *, name: str, kind: str) -> None:
        validation.iam_name(name, f"{kind} name")
        super().__init__(scope, id)
        account = stack_account(self)
        self.name = name
        self.arn = f"arn:{account.partition}:iam::{account.account_id}:{kind}/{name}"


class RoleRef(_IamRef):
    """An IAM role of this account, without a path, by name (``DataLakeRoles.from_role_name``).

    Attributes: ``name``, ``arn``.
    """

    def __init__(self, scope: Construct, id: str, *, role_name: str) -> None:
        super().__init__(scope, id, name=role_name, kind="role")


class InstanceProfileRef(_IamRef):
    """An instance profile of this account, without a path, by name (``DataLakeRoles.from_instance_profile_name``).

    Attributes: ``name``, ``arn``.
    """

    def __init__(self, scope: Construct, id: str, *, instance_profile_name: str) -> None:
        super().__init__(scope, id, name=instance_profile_name, kind="instance-profile")


class KeyRef(Construct):
    """A KMS key by its ARN (``EmrSecurity.from_key_arn``): IAM names keys by ARN, so an alias will not do.

    Attribute: ``arn``.
    """

    def __init__(self, scope: Construct, id: str, *, key_arn: str) -> None:
        validation.matches(key_arn, r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[\w-]+", "KMS key ARN",
                           "use the key's ARN, arn:aws:kms:<region>:<account>:key/<id> (not an alias: IAM grants "
                           "name keys by ARN)")
        super().__init__(scope, id)
        self.arn = key_arn


class TopicRef(Construct):
    """An SNS topic by its ARN (``DataLakeAlerts.from_topic_arn``).

    Attribute: ``arn``.
    """

    def __init__(self, scope: Construct, id: str, *, topic_arn: str) -> None:
        validation.matches(topic_arn, r"arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[\w-]{1,256}", "SNS topic ARN",
                           "use the topic's ARN, arn:aws:sns:<region>:<account>:<name>")
        super().__init__(scope, id)
        self.arn = topic_arn


class SecurityConfigurationRef(Construct):
    """An EMR security configuration by name (``EmrSecurity.from_security_configuration_name``).

    Attribute: ``name``.
    """

    def __init__(self, scope: Construct, id: str, *, name: str) -> None:
        validation.matches(name, r"[\w.+=@-]{1,256}", "security configuration name",
                           "use the name of an existing EMR security configuration")
        super().__init__(scope, id)
        self.name = name


class EmrManagedSecurityGroups(Construct):
    """Existing EMR-managed security groups by id (``EmrSecurity.from_security_group_ids``). EMR writes their inbound
    rules, which reference each other; their outbound rules are yours: HTTPS (443) to the AWS services the nodes call
    (S3, Glue, STS, KMS, CloudWatch, EMR), all traffic between the master's and the core/task groups, and, in a private
    subnet, 8443 from the service-access group to both and 9443 from the master to it (what the created groups get:
    docs/constructs.md). Bring distinct groups made for one cluster, in the subnet's VPC, with no ingress from
    0.0.0.0/0, each tagged ``for-use-with-amazon-emr-managed-policies=true`` (``AmazonEMRServicePolicy_v2`` lets EMR
    change only groups with that tag; the plan checks it).

    Attributes: ``master`` (the master node's group), ``core_task`` (the core and task nodes'), ``service_access``
    (through which EMR reaches a cluster in a private subnet; None in a public one).
    """

    def __init__(self, scope: Construct, id: str, *, master: str, core_task: str,
                 service_access: str | None = None) -> None:
        self.master, self.core_task, self.service_access = master, core_task, service_access
        groups = self.by_role()
        for role, group in groups.items():
            validation.matches(group, r"sg-[0-9a-f]{8,17}", f"{role} security group id",
                               "use the id of an existing security group, like sg-0123456789abcdef0")
        if len(set(groups.values())) < len(groups):
            *first, last = groups.values()
            validation.fail(f"the EMR-managed security groups {', '.join(first)} and {last} are not "
                            f"{len(groups)} groups: bring one group for each role")
        super().__init__(scope, id)

    def by_role(self) -> dict[str, str]:
        """Each brought group by its role (no service access in a public subnet)."""
        roles = {"master": self.master, "core_task": self.core_task, "service_access": self.service_access}
        return {role: group for role, group in roles.items() if group is not None}
