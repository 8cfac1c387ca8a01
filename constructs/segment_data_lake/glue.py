"""Glue databases of the sources and Lake Formation grants."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from constructs import Construct

import segment_data_lake_policies as policies
from segment_lake_contract import DATA_PREFIX, REPORTS_DATABASE

from . import validation
from .account import AwsAccount
from .aws import (
    GlueCatalogDatabase,
    IamPolicy,
    IamRole,
    IamRolePolicyAttachment,
    LakeformationPermissions,
    LakeformationPermissionsDatabase,
    LakeformationPermissionsDataLocation,
    LakeformationPermissionsTable,
    LakeformationResource,
)
from .bucket import LakeBucket
from .refs import IRole
from .sources import SegmentSource, validate_sources
from .tagging import with_vendor_tag

# What the sync's Glue calls need from Lake Formation: GetDatabase, GetTables, GetTable, GetPartitions and
# BatchGetPartition need DESCRIBE; CreateTable needs CREATE_TABLE on the database (and DATA_LOCATION_ACCESS on a
# registered location); UpdateTable, BatchCreatePartition and BatchUpdatePartition need ALTER on the table.
SYNC_DATABASE_PERMISSIONS = ("CREATE_TABLE", "DESCRIBE")
SYNC_TABLE_PERMISSIONS = ("ALTER", "DESCRIBE")
READ_DATABASE_PERMISSIONS = ("DESCRIBE",)
READ_TABLE_PERMISSIONS = ("DESCRIBE", "SELECT")


@dataclass(frozen=True)
class GlueCatalogProps:
    """Props of :class:`GlueCatalog`.

    :param sources: the Segment sources whose databases these are.
    :param create_glue_databases: create each source's Glue database here rather than letting the first
        sync create it.
    :param lake_formation: govern the lake with Lake Formation: the roles that run the sync get what it
        uses (``grant_sync``) and ``lake_formation_readers`` read (``grant_read``); needs
        ``create_glue_databases`` (a grant needs its database), and the deploying principal must be a Lake
        Formation administrator. In hybrid access mode Lake Formation enforces the grants only for principals
        opted in (``aws_lakeformation_opt_in``); IAM permissions keep working for the others.
    :param lake_formation_readers: roles that read the lake (analysts, Athena; ``IamRole`` or
        :meth:`DataLakeRoles.from_role_name`): ``DESCRIBE`` on the
        databases, ``SELECT`` and ``DESCRIBE`` on their tables: Lake Formation grants only, which Athena honours for
        a principal opted in to Lake Formation; one that is not is judged by IAM alone and needs S3, Glue and KMS
        permissions too. :meth:`SegmentDataLake.grant_read` gives a role of the stack both.
    :param register_bucket: with ``lake_formation``, register the lake bucket with Lake Formation (hybrid
        access mode, so principals that IAM lets read it keep reading it) under ``registration_role``, which the
        roles' ``DATA_LOCATION_ACCESS`` grants need. False when the whole bucket is registered already.
    :param registration_role: the role Lake Formation assumes to read and write the registered bucket for
        the principals it vends credentials to (Athena's queries of an opted-in principal, EMR). Default: a new
        role, ``SegmentDataLakeLakeFormationRole<suffix>``, that Lake Formation (and Glue, as Lake Formation's
        documentation asks) may assume, which may read and
        write ``segment-data/`` and use the lake's keys (not the service-linked role: Lake Formation's
        documentation asks for a role of your own for locations encrypted with a customer managed KMS key, as every
        file the cluster writes is, and for locations EMR reads). A brought role needs the same, and whoever
        applies the stack ``iam:PassRole`` on it.
    :param name_suffix: appended to the created registration role's and policy's names, e.g. ``-prod``.
    :param create_reports_database: with ``lake_formation``, create the sync reports' database
        (``__segment_datalake``), which its grants need. One per account: False for a second lake in the
        account, or where it exists already (or ``terraform import`` it).
    """

    sources: Sequence[SegmentSource]
    create_glue_databases: bool = False
    lake_formation: bool = False
    lake_formation_readers: Sequence[IRole] = ()
    register_bucket: bool = True
    create_reports_database: bool = True
    registration_role: IRole | None = None
    name_suffix: str = ""

    def __post_init__(self) -> None:
        validate_sources(self.sources)
        validation.role_arns([role.arn for role in self.lake_formation_readers], "lake_formation_readers")
        validation.name_suffix(self.name_suffix)
        if self.registration_role is not None:
            validation.role_arns([self.registration_role.arn], "registration_role")
            if not (self.lake_formation and self.register_bucket):
                validation.fail("registration_role is set but this stack registers no bucket with Lake Formation: "
                                "remove it, or set lake_formation=True and register_bucket=True")
        if self.lake_formation and not self.create_glue_databases:
            validation.fail("lake_formation=True grants on the sources' Glue databases, which must exist first: "
                            "set create_glue_databases=True")
        if self.lake_formation_readers and not self.lake_formation:
            validation.fail("lake_formation_readers is set but lake_formation is False: set lake_formation=True to grant them")


class GlueCatalog(Construct):
    """Optionally creates each source's Glue database; with Lake Formation, registers the lake bucket, creates the
    reports' database and grants each principal only what it uses (``grant_sync``, ``grant_read``).

    Attributes: ``database_names`` (the sources' databases, distinct, in source order), ``databases``
    (name to ``GlueCatalogDatabase``, empty unless created), ``location`` (the ``LakeformationResource`` or
    ``None``), ``registration_role`` and ``registration_policy`` (created, else ``None``), ``grants``,
    ``sync_prerequisites`` (the location, its role's policy and the grants: what a sync under Lake Formation uses).

    ``key_arns``: the KMS keys the lake's files are encrypted with (the cluster's, the bucket's), which the created
    registration role may use.
    """

    def __init__(self, scope: Construct, id: str, *, props: GlueCatalogProps, bucket: LakeBucket,
                 account: AwsAccount | None = None, key_arns: Sequence[str] = ()) -> None:
        super().__init__(scope, id)
        self.props = props
        self.bucket_arn = bucket_arn = bucket.bucket_arn
        self.database_names = list(dict.fromkeys(source.database for source in props.sources))
        self.databases: dict[str, GlueCatalogDatabase] = {}
        self.grants: list[LakeformationPermissions] = []
        self.location: LakeformationResource | None = None
        self.registration_role: IamRole | None = None
        self.registration_policy: IamPolicy | None = None
        self._registration: list = []
        self._principals: dict[str, str] = {}  # grants' name -> role ARN
        if props.create_glue_databases:
            for name in self.database_names:
                self.databases[name] = GlueCatalogDatabase(
                    self, f"Database-{name}", name=name, description="Segment Data Lakes tables of one or more sources")
        if not props.lake_formation:
            return
        self._account = AwsAccount.of(self, account)
        if props.create_reports_database:
            self.databases[REPORTS_DATABASE] = GlueCatalogDatabase(
                self, "ReportsDatabase", name=REPORTS_DATABASE, description="Segment Data Lakes sync reports")
        if props.register_bucket:
            role = props.registration_role or self._registration_role(bucket_arn, key_arns)
            self.location = LakeformationResource(self, "BucketLocation", arn=bucket_arn, role_arn=role.arn,
                                                  hybrid_access_enabled=True, depends_on=self._registration or None)
        for index, role in enumerate(props.lake_formation_readers):
            self.grant_read(f"Reader{index}", role)

    @property
    def sync_prerequisites(self) -> list:
        return [*self._registration, *filter(None, [self.location]), *self.grants]

    def _registration_role(self, bucket_arn: str, key_arns: Sequence[str]) -> IamRole:
        """The role Lake Formation registers the bucket with: the lake's files under ``segment-data/``, its keys."""
        tags = with_vendor_tag({})
        suffix = self.props.name_suffix
        self.registration_role = IamRole(
            self, "RegistrationRole", name=f"SegmentDataLakeLakeFormationRole{suffix}", tags=tags,
            description="Assumed by Lake Formation to read and write the data lake's registered bucket",
            assume_role_policy=policies.render_json("lake-formation-trust"))
        self.registration_policy = IamPolicy(
            self, "RegistrationPolicy", name=f"SegmentDataLakeLakeFormationPolicy{suffix}", tags=tags,
            policy=policies.render_json("lake-formation-location", bucket_arn=bucket_arn,
                                                objects=f"{bucket_arn}/{DATA_PREFIX}*", key_arns=list(key_arns)))
        self._registration.append(IamRolePolicyAttachment(self, "RegistrationPolicyAttachment",
                                                          role=self.registration_role.name,
                                                          policy_arn=self.registration_policy.arn))
        return self.registration_role

    def grant_sync(self, id: str, role: IRole, *, drop_tables: bool = False) -> None:
        """Lets ``role`` run the sync under Lake Formation: create tables pointing into the bucket, read and alter
        them and their partitions, in the sources' databases and the reports' one; with ``drop_tables``, drop them
        too (Segment's own sync does). ``id`` names the grants (keep it stable: a grant renamed is replaced, and for
        a moment not held)."""
        self._require_lake_formation(id, role.arn)
        self.grants.append(LakeformationPermissions(
            self, f"{id}-DataLocation", principal=role.arn, permissions=["DATA_LOCATION_ACCESS"],
            data_location=LakeformationPermissionsDataLocation(arn=self.bucket_arn),
            depends_on=[self.location] if self.location else None))
        tables = [*SYNC_TABLE_PERMISSIONS, *(["DROP"] if drop_tables else [])]
        self._grant(id, role.arn, [*self.database_names, REPORTS_DATABASE], SYNC_DATABASE_PERMISSIONS, tables)

    def grant_read(self, id: str, role: IRole) -> None:
        """Lets ``role`` see and query every table of the lake's databases; ``id`` names the grants."""
        self._require_lake_formation(id, role.arn)
        self._grant(id, role.arn, [*self.database_names, REPORTS_DATABASE], READ_DATABASE_PERMISSIONS,
                    READ_TABLE_PERMISSIONS)

    def _grant(self, grantee: str, role_arn: str, databases: Sequence[str], on_database: Sequence[str],
               on_tables: Sequence[str]) -> None:
        catalog_id = self._account.account_id
        for database in databases:
            depends = [self.databases[database]] if database in self.databases else None
            self.grants.append(LakeformationPermissions(
                self, f"{grantee}-Database-{database}", principal=role_arn, permissions=list(on_database),
                database=LakeformationPermissionsDatabase(name=database, catalog_id=catalog_id), depends_on=depends))
            self.grants.append(LakeformationPermissions(
                self, f"{grantee}-Tables-{database}", principal=role_arn, permissions=list(on_tables),
                table=LakeformationPermissionsTable(database_name=database, wildcard=True, catalog_id=catalog_id),
                depends_on=depends))

    def _require_lake_formation(self, name: str, role_arn: str) -> None:
        if not self.props.lake_formation:
            validation.fail("a Lake Formation grant on a GlueCatalog without lake_formation=True: set it")
        if role_arn in self._principals.values() or name in self._principals:
            validation.fail(f"{role_arn!r} (grants {name!r}) is granted twice in Lake Formation: grant each role once, "
                            f"each under a name of its own")
        self._principals[name] = role_arn
