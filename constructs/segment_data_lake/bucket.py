"""The lake's S3 bucket: an existing one by name, or a new one with secure defaults."""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from constructs import Construct

import segment_data_lake_policies as policies
from segment_lake_contract import STAGE_PREFIX

from . import validation
from .aws import (
    S3Bucket,
    S3BucketLifecycleConfiguration,
    S3BucketLifecycleConfigurationRule,
    S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload,
    S3BucketLifecycleConfigurationRuleExpiration,
    S3BucketLifecycleConfigurationRuleFilter,
    S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration,
    S3BucketOwnershipControls,
    S3BucketOwnershipControlsRule,
    S3BucketPolicy,
    S3BucketPublicAccessBlock,
    S3BucketServerSideEncryptionConfiguration,
    S3BucketServerSideEncryptionConfigurationRule,
    S3BucketVersioning,
    S3BucketVersioningVersioningConfiguration,
    S3EncryptionByDefault,
)
from .scan_marks import mark
from .tagging import with_vendor_tag

# Created buckets are versioned; old versions of rewritten objects go after 30 days.
NONCURRENT_VERSION_DAYS = 30
RESERVED_RULE_IDS = ("segment-stage-expiration", "abort-incomplete-multipart-uploads", "expire-noncurrent-versions")


@dataclass(frozen=True)
class DataLakeBucketProps:
    """Props of :class:`DataLakeBucket`.

    :param bucket_name: name of the lake bucket (existing, or to create).
    :param create_bucket: create the bucket with secure defaults (public access
        block, default encryption, owner-enforced ownership, TLS-only policy,
        versioning). Default ``False``: use an existing bucket, as Segment's module does.
    :param manage_lifecycle: give the bucket the lake's lifecycle rules (``segment-stage/`` expiry, aborted
        multipart uploads, and ``extra_lifecycle_rules``). For an existing bucket this is a choice you must make:
        True replaces every lifecycle rule the bucket has (S3 keeps one lifecycle configuration per bucket; the
        plan shows the rules that go), False leaves them alone (then expire ``segment-stage/`` yourself). A created
        bucket's are always managed.
    :param stage_expiration_days: days after which objects under ``segment-stage/`` expire.
    :param abort_incomplete_multipart_days: days after which incomplete multipart uploads are aborted.
    :param extra_lifecycle_rules: more ``S3BucketLifecycleConfigurationRule`` rules
        for the bucket's lifecycle configuration. The
        configuration replaces every rule the bucket had, so list yours here.
    :param kms_key_arn: encrypt new objects with this KMS key instead of SSE-S3 (created buckets only).
    :param extra_policy_statements: more statements for a created bucket's policy (IAM JSON as dicts), for
        example the log delivery grants AWS adds when a VPC flow log writes here: the policy replaces
        the bucket's whole policy, so statements added outside Terraform are removed on the next apply.
    :param force_destroy: let ``terraform destroy`` delete a created bucket that still holds objects.
    :param tags: tags for a created bucket; ``vendor=segment`` is always added.
    """

    bucket_name: str
    create_bucket: bool = False
    manage_lifecycle: bool | None = None
    stage_expiration_days: int = 14
    abort_incomplete_multipart_days: int = 7
    extra_lifecycle_rules: Sequence[S3BucketLifecycleConfigurationRule] = ()
    kms_key_arn: str | None = None
    extra_policy_statements: Sequence[Mapping] = ()
    force_destroy: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validation.bucket_name(self.bucket_name)
        validation.at_least(self.stage_expiration_days, 1, "stage_expiration_days")
        validation.at_least(self.abort_incomplete_multipart_days, 1, "abort_incomplete_multipart_days")
        validation.tags(self.tags)
        ids = [rule.id for rule in self.extra_lifecycle_rules]
        if any(not rule_id for rule_id in ids) or len(set(ids)) != len(ids):
            validation.fail(f"extra_lifecycle_rules ids {ids!r}: give every rule a unique non-empty 'id'")
        for rule_id in ids:
            if rule_id in RESERVED_RULE_IDS:
                validation.fail(f"extra lifecycle rule id {rule_id!r} is used by the data lake: pick another id")
        for statement in self.extra_policy_statements:
            if not isinstance(statement, Mapping) or statement.get("Effect") not in ("Allow", "Deny") \
                    or not statement.get("Sid"):
                validation.fail(f"extra policy statement {statement!r}: give each a 'Sid' and an 'Effect' of Allow or Deny")
        if self.extra_policy_statements and not self.create_bucket:
            validation.fail("extra_policy_statements is set for an existing bucket: its policy is yours to manage, or "
                            "set create_bucket=True")
        if self.kms_key_arn is not None and not self.create_bucket:
            validation.fail("kms_key_arn is set for an existing bucket: set the bucket's encryption yourself, "
                            "or set create_bucket=True")
        if self.create_bucket and self.manage_lifecycle is False:
            validation.fail(f"manage_lifecycle=False for bucket {self.bucket_name!r}, which this stack creates: a "
                            f"created bucket gets the lake's lifecycle rules; remove manage_lifecycle")
        if not self.create_bucket and self.manage_lifecycle is None:
            validation.fail(f"bucket {self.bucket_name!r} exists already (create_bucket=False): set "
                            f"manage_lifecycle=True to replace its lifecycle rules with the lake's, or False to leave "
                            f"them as they are")
        if self.manage_lifecycle is False and self.extra_lifecycle_rules:
            validation.fail("extra_lifecycle_rules is set but manage_lifecycle is False: remove them, or set "
                            "manage_lifecycle=True")


class LakeBucket(Protocol):
    """What the constructs need of the lake's bucket (as aws-cdk's ``IBucket``): a :class:`DataLakeBucket`, or a
    :class:`LakeBucketRef` from :meth:`DataLakeBucket.from_bucket_name`."""

    bucket_name: str
    bucket_arn: str | None
    kms_key_arn: str | None


def arn_of(bucket: LakeBucket, partition: Callable[[], str]) -> str:
    """The bucket's ARN: a brought one's is in ``partition()`` (the stack's) unless it names its own."""
    return bucket.bucket_arn or f"arn:{partition()}:s3:::{bucket.bucket_name}"


@dataclass(frozen=True)
class LakeBucketRef:
    """A lake bucket this module neither creates nor configures (its lifecycle, encryption and policy are yours):
    what the other constructs need of it. Make one with :meth:`DataLakeBucket.from_bucket_name`; a
    :class:`DataLakeBucket` has the same attributes.

    Expire ``segment-stage/`` yourself (a run's files before they are published; a crashed run leaves some there).

    :param bucket_name: the bucket's name.
    :param bucket_arn: its ARN (none: in the partition of the stack's provider, filled in by the lake).
    :param kms_key_arn: the KMS key it encrypts new objects with (none: SSE-S3); the roles get its use.
    """

    bucket_name: str
    bucket_arn: str | None = None
    kms_key_arn: str | None = None
    policy = None  # not this module's: nothing waits for it

    def in_partition(self, partition: str) -> LakeBucketRef:
        """This bucket with its ARN, in ``partition`` unless it has one."""
        return self if self.bucket_arn else replace(self, bucket_arn=f"arn:{partition}:s3:::{self.bucket_name}")


class DataLakeBucket(Construct):
    """The lake bucket and its lifecycle rules.

    Attributes: ``bucket_name``, ``bucket_arn`` (``arn:<partition>:s3:::<name>``), ``kms_key_arn``,
    ``bucket`` (the ``S3Bucket`` when created, else ``None``), ``policy`` (its ``S3BucketPolicy`` when created, else
    ``None``: a service that checks the bucket's policy when it is configured, such as a VPC flow log delivering to
    the bucket, should depend on it), ``lifecycle`` (``None`` with ``manage_lifecycle=False``).
    """

    def __init__(self, scope: Construct, id: str, *, props: DataLakeBucketProps, partition: str) -> None:
        super().__init__(scope, id)
        self.props = props
        self.kms_key_arn = props.kms_key_arn
        self.bucket: S3Bucket | None = None
        self.policy: S3BucketPolicy | None = None
        if props.create_bucket:
            self.bucket = self._create(props)
            self.bucket_name = self.bucket.bucket
            self.bucket_arn = self.bucket.arn
            self._secure(props)
        else:
            self.bucket_name = props.bucket_name
            self.bucket_arn = f"arn:{partition}:s3:::{props.bucket_name}"
        self.lifecycle: S3BucketLifecycleConfiguration | None = None
        if props.manage_lifecycle is not False:
            self.lifecycle = S3BucketLifecycleConfiguration(
                self, "Lifecycle", bucket=self.bucket_name, rule=self._lifecycle_rules(props))

    @staticmethod
    def from_bucket_name(bucket_name: str, *, partition: str | None = None,
                         kms_key_arn: str | None = None) -> LakeBucketRef:
        """An existing bucket, brought as it is: :class:`SegmentDataLake` (``bucket=``) configures nothing on it, not
        even its lifecycle rules (it still writes the app's releases and the replay templates into it).
        ``partition``: the ARN's (default: the stack provider's)."""
        validation.bucket_name(bucket_name)
        return LakeBucketRef(bucket_name, f"arn:{partition}:s3:::{bucket_name}" if partition else None, kms_key_arn)

    @staticmethod
    def _lifecycle_rules(props: DataLakeBucketProps) -> list[S3BucketLifecycleConfigurationRule]:
        everything = [S3BucketLifecycleConfigurationRuleFilter(prefix="")]
        rules = [
            S3BucketLifecycleConfigurationRule(
                id="segment-stage-expiration", status="Enabled",
                filter=[S3BucketLifecycleConfigurationRuleFilter(prefix=STAGE_PREFIX)],
                expiration=[S3BucketLifecycleConfigurationRuleExpiration(days=props.stage_expiration_days)],
            ),
            S3BucketLifecycleConfigurationRule(
                id="abort-incomplete-multipart-uploads", status="Enabled", filter=everything,
                abort_incomplete_multipart_upload=[S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload(
                    days_after_initiation=props.abort_incomplete_multipart_days)],
            ),
        ]
        if props.create_bucket:
            rules.append(S3BucketLifecycleConfigurationRule(
                id="expire-noncurrent-versions", status="Enabled", filter=everything,
                noncurrent_version_expiration=[S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration(
                    noncurrent_days=NONCURRENT_VERSION_DAYS)],
            ))
        return [*rules, *props.extra_lifecycle_rules]

    def _create(self, props: DataLakeBucketProps) -> S3Bucket:
        bucket = S3Bucket(self, "Bucket", bucket=props.bucket_name, force_destroy=props.force_destroy,
                          tags=with_vendor_tag(props.tags))
        mark(bucket, "lake_bucket")
        return bucket

    def _secure(self, props: DataLakeBucketProps) -> None:
        bucket = self.bucket_name
        S3BucketPublicAccessBlock(self, "PublicAccessBlock", bucket=bucket, block_public_acls=True,
                                  block_public_policy=True, ignore_public_acls=True, restrict_public_buckets=True)
        S3BucketOwnershipControls(self, "Ownership", bucket=bucket,
                                  rule=S3BucketOwnershipControlsRule(object_ownership="BucketOwnerEnforced"))
        by_default = (S3EncryptionByDefault(sse_algorithm="aws:kms", kms_master_key_id=props.kms_key_arn)
                      if props.kms_key_arn else S3EncryptionByDefault(sse_algorithm="AES256"))
        S3BucketServerSideEncryptionConfiguration(
            self, "Encryption", bucket=bucket,
            rule=[S3BucketServerSideEncryptionConfigurationRule(
                apply_server_side_encryption_by_default=by_default, bucket_key_enabled=bool(props.kms_key_arn))],
        )
        # Versioning lets an accidental overwrite or delete be undone; the
        # lifecycle's expiration of segment-stage/ keeps old versions bounded.
        S3BucketVersioning(self, "Versioning", bucket=bucket,
                           versioning_configuration=S3BucketVersioningVersioningConfiguration(status="Enabled"))
        document = policies.render("bucket-tls-only", bucket_arn=self.bucket_arn)
        document["Statement"] += [dict(statement) for statement in props.extra_policy_statements]
        self.policy = S3BucketPolicy(self, "TlsOnly", bucket=bucket, policy=json.dumps(document, indent=2))
