"""The lake's S3 bucket: an existing one by name, or a new one with secure defaults."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
from .refs import IKey, stack_account
from .scan_marks import mark
from .tagging import with_vendor_tag

# Created buckets are versioned; old versions of rewritten objects go after 30 days.
NONCURRENT_VERSION_DAYS = 30
RESERVED_RULE_IDS = ("segment-stage-expiration", "abort-incomplete-multipart-uploads", "expire-noncurrent-versions")


@dataclass(frozen=True)
class LakeLifecycleProps:
    """Props of :class:`LakeLifecycle`.

    :param stage_expiration_days: days after which objects under ``segment-stage/`` expire (a run's files before
        they are published; a crashed run leaves some there).
    :param abort_incomplete_multipart_days: days after which incomplete multipart uploads are aborted.
    :param noncurrent_version_days: days after which old versions of rewritten or deleted objects expire, in a
        versioned bucket (default: none; a bucket :class:`DataLakeBucket` creates is versioned, and gets 30).
    :param extra_rules: more ``S3BucketLifecycleConfigurationRule`` rules for the bucket's lifecycle configuration,
        which replaces every rule the bucket had, so list yours here.
    """

    stage_expiration_days: int = 14
    abort_incomplete_multipart_days: int = 7
    noncurrent_version_days: int | None = None
    extra_rules: Sequence[S3BucketLifecycleConfigurationRule] = ()

    def __post_init__(self) -> None:
        validation.at_least(self.stage_expiration_days, 1, "stage_expiration_days")
        validation.at_least(self.abort_incomplete_multipart_days, 1, "abort_incomplete_multipart_days")
        if self.noncurrent_version_days is not None:
            validation.at_least(self.noncurrent_version_days, 1, "noncurrent_version_days")
        ids = [rule.id for rule in self.extra_rules]
        if any(not rule_id for rule_id in ids) or len(set(ids)) != len(ids):
            validation.fail(f"extra lifecycle rules ids {ids!r}: give every rule a unique non-empty 'id'")
        for rule_id in ids:
            if rule_id in RESERVED_RULE_IDS:
                validation.fail(f"extra lifecycle rule id {rule_id!r} is used by the data lake: pick another id")


@dataclass(frozen=True)
class DataLakeBucketProps:
    """Props of :class:`DataLakeBucket`.

    :param bucket_name: name of the lake bucket (existing, or to create).
    :param create_bucket: create the bucket with secure defaults (public access
        block, default encryption, owner-enforced ownership, TLS-only policy,
        versioning). Default ``False``: use an existing bucket, as Segment's module does.
    :param manage_lifecycle: give the bucket the lake's lifecycle rules (:class:`LakeLifecycle`). For an existing
        bucket this is a choice you must make: True replaces every lifecycle rule the bucket has (S3 keeps one
        lifecycle configuration per bucket; the plan shows the rules that go), False leaves them alone (then expire
        ``segment-stage/`` yourself). A created bucket's are always managed.
    :param lifecycle: the lifecycle rules' settings (:class:`LakeLifecycleProps`).
    :param kms_key: encrypt new objects with this KMS key instead of SSE-S3 (created buckets only): a ``KmsKey`` of
        the stack, or :meth:`EmrSecurity.from_key_arn`.
    :param extra_policy_statements: more statements for a created bucket's policy (IAM JSON as dicts), for
        example the log delivery grants AWS adds when a VPC flow log writes here: the policy replaces
        the bucket's whole policy, so statements added outside Terraform are removed on the next apply.
    :param force_destroy: let ``terraform destroy`` delete a created bucket that still holds objects.
    :param tags: tags for a created bucket; ``vendor=segment`` is always added.
    """

    bucket_name: str
    create_bucket: bool = False
    manage_lifecycle: bool | None = None
    lifecycle: LakeLifecycleProps = field(default_factory=LakeLifecycleProps)
    kms_key: IKey | None = None
    extra_policy_statements: Sequence[Mapping] = ()
    force_destroy: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validation.bucket_name(self.bucket_name)
        validation.tags(self.tags)
        for statement in self.extra_policy_statements:
            if not isinstance(statement, Mapping) or statement.get("Effect") not in ("Allow", "Deny") \
                    or not statement.get("Sid"):
                validation.fail(f"extra policy statement {statement!r}: give each a 'Sid' and an 'Effect' of Allow or Deny")
        if self.extra_policy_statements and not self.create_bucket:
            validation.fail("extra_policy_statements is set for an existing bucket: its policy is yours to manage, or "
                            "set create_bucket=True")
        if self.kms_key is not None and not self.create_bucket:
            validation.fail("kms_key is set for an existing bucket: set the bucket's encryption yourself (and bring "
                            "the bucket with DataLakeBucket.from_bucket_name(..., kms_key=)), or set create_bucket=True")
        if self.create_bucket and self.manage_lifecycle is False:
            validation.fail(f"manage_lifecycle=False for bucket {self.bucket_name!r}, which this stack creates: a "
                            f"created bucket gets the lake's lifecycle rules; remove manage_lifecycle")
        if not self.create_bucket and self.manage_lifecycle is None:
            validation.fail(f"bucket {self.bucket_name!r} exists already (create_bucket=False): set "
                            f"manage_lifecycle=True to replace its lifecycle rules with the lake's, or False to leave "
                            f"them as they are")
        if self.manage_lifecycle is False and self.lifecycle != LakeLifecycleProps():
            validation.fail("lifecycle is set but manage_lifecycle is False: remove it, or set manage_lifecycle=True")


class LakeBucket(Protocol):
    """What the constructs need of the lake's bucket (as aws-cdk's ``IBucket``): a :class:`DataLakeBucket`, or a
    :class:`BucketRef` from :meth:`DataLakeBucket.from_bucket_name`."""

    bucket_name: str
    bucket_arn: str
    kms_key_arn: str | None
    policy: S3BucketPolicy | None


class BucketRef(Construct):
    """A lake bucket this module neither creates nor configures (its lifecycle, encryption and policy are yours):
    what the other constructs need of it. Made by :meth:`DataLakeBucket.from_bucket_name`.

    Expire ``segment-stage/`` yourself, or give it :class:`LakeLifecycle`.

    Attributes: ``bucket_name``, ``bucket_arn`` (in the stack's partition), ``kms_key_arn`` (the key it encrypts new
    objects with; None: SSE-S3), ``policy`` (None: not this module's, nothing waits for it).
    """

    def __init__(self, scope: Construct, id: str, *, bucket_name: str, kms_key: IKey | None = None) -> None:
        validation.bucket_name(bucket_name)
        super().__init__(scope, id)
        self.bucket_name = bucket_name
        self.bucket_arn = f"arn:{stack_account(self).partition}:s3:::{bucket_name}"
        self.kms_key_arn = kms_key.arn if kms_key else None
        self.policy = None


class LakeLifecycle(Construct):
    """The lake's lifecycle rules on its bucket: ``segment-stage/`` expires, aborted multipart uploads go, old
    versions expire (``noncurrent_version_days``), and ``extra_rules``. S3 keeps one lifecycle configuration per
    bucket, so this replaces every rule the bucket had. :class:`DataLakeBucket` makes one unless
    ``manage_lifecycle=False``; give one to a :class:`BucketRef` to manage a brought bucket's rules.

    Attribute: ``configuration`` (the ``S3BucketLifecycleConfiguration``).
    """

    def __init__(self, scope: Construct, id: str, *, bucket: LakeBucket, props: LakeLifecycleProps) -> None:
        super().__init__(scope, id)
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
        if props.noncurrent_version_days is not None:
            rules.append(S3BucketLifecycleConfigurationRule(
                id="expire-noncurrent-versions", status="Enabled", filter=everything,
                noncurrent_version_expiration=[S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration(
                    noncurrent_days=props.noncurrent_version_days)],
            ))
        self.configuration = S3BucketLifecycleConfiguration(self, "Rules", bucket=bucket.bucket_name,
                                                            rule=[*rules, *props.extra_rules])


class DataLakeBucket(Construct):
    """The lake bucket (created with secure defaults, or an existing one adopted) and its :class:`LakeLifecycle`.

    Attributes: ``bucket_name``, ``bucket_arn`` (``arn:<partition>:s3:::<name>``), ``kms_key_arn``,
    ``bucket`` (the ``S3Bucket`` when created, else ``None``), ``policy`` (its ``S3BucketPolicy`` when created, else
    ``None``: a service that checks the bucket's policy when it is configured, such as a VPC flow log delivering to
    the bucket, should depend on it), ``lifecycle`` (its :class:`LakeLifecycle`; ``None`` with
    ``manage_lifecycle=False``).
    """

    def __init__(self, scope: Construct, id: str, *, props: DataLakeBucketProps, partition: str) -> None:
        super().__init__(scope, id)
        self.props = props
        self.kms_key_arn = props.kms_key.arn if props.kms_key else None
        self.bucket: S3Bucket | None = None
        self.policy: S3BucketPolicy | None = None
        lifecycle = props.lifecycle
        if props.create_bucket:
            self.bucket = self._create(props)
            self.bucket_name = self.bucket.bucket
            self.bucket_arn = self.bucket.arn
            self._secure(props)
            if lifecycle.noncurrent_version_days is None:
                lifecycle = replace(lifecycle, noncurrent_version_days=NONCURRENT_VERSION_DAYS)
        else:
            self.bucket_name = props.bucket_name
            self.bucket_arn = f"arn:{partition}:s3:::{props.bucket_name}"
        self.lifecycle = (LakeLifecycle(self, "Lifecycle", bucket=self, props=lifecycle)
                          if props.manage_lifecycle is not False else None)

    @staticmethod
    def from_bucket_name(scope: Construct, id: str, bucket_name: str, *, kms_key: IKey | None = None) -> BucketRef:
        """An existing bucket, brought as it is: :class:`SegmentDataLake` (``bucket=``) configures nothing on it, not
        even its lifecycle rules (it still writes the app's releases and the replay templates into it). ``kms_key``:
        the key it encrypts new objects with, which the lake's roles are granted (none: SSE-S3)."""
        return BucketRef(scope, id, bucket_name=bucket_name, kms_key=kms_key)

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
        by_default = (S3EncryptionByDefault(sse_algorithm="aws:kms", kms_master_key_id=self.kms_key_arn)
                      if self.kms_key_arn else S3EncryptionByDefault(sse_algorithm="AES256"))
        S3BucketServerSideEncryptionConfiguration(
            self, "Encryption", bucket=bucket,
            rule=[S3BucketServerSideEncryptionConfigurationRule(
                apply_server_side_encryption_by_default=by_default, bucket_key_enabled=bool(self.kms_key_arn))],
        )
        # Versioning lets an accidental overwrite or delete be undone; the
        # lifecycle's expiration of segment-stage/ keeps old versions bounded.
        S3BucketVersioning(self, "Versioning", bucket=bucket,
                           versioning_configuration=S3BucketVersioningVersioningConfiguration(status="Enabled"))
        document = policies.render("bucket-tls-only", bucket_arn=self.bucket_arn)
        document["Statement"] += [dict(statement) for statement in props.extra_policy_statements]
        self.policy = S3BucketPolicy(self, "TlsOnly", bucket=bucket, policy=json.dumps(document, indent=2))
