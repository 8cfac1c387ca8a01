"""Glue databases of the sources and Lake Formation grants."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from constructs import Construct

from segment_lake_contract import REPORTS_DATABASE

from . import validation
from .account import AwsAccount
from .aws import (
    GlueCatalogDatabase,
    LakeformationPermissions,
    LakeformationPermissionsDatabase,
    LakeformationPermissionsDataLocation,
    LakeformationPermissionsTable,
    LakeformationResource,
)
from .bucket import LakeBucket, arn_of
from .sources import SegmentSource, validate_sources

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
        uses (``grant_sync``) and ``lake_formation_role_arns`` read (``grant_read``); needs
        ``create_glue_databases`` (a grant needs its database), and the deploying principal must be a Lake
        Formation administrator. In hybrid access mode Lake Formation enforces the grants only for principals
        opted in (``aws_lakeformation_opt_in``); IAM permissions keep working for the others.
    :param lake_formation_role_arns: IAM role ARNs that read the lake (analysts, Athena): ``DESCRIBE`` on the
        databases, ``SELECT`` and ``DESCRIBE`` on their tables.
    :param register_bucket: with ``lake_formation``, register the lake bucket with Lake Formation (hybrid
        access mode, so principals that IAM lets read it keep reading it; the service-linked role, which cannot
        use a customer managed KMS key: register it yourself with a role that can), which the roles'
        ``DATA_LOCATION_ACCESS`` grants need. False when the whole bucket is registered already.
    :param create_reports_database: with ``lake_formation``, create the sync reports' database
        (``__segment_datalake``), which its grants need. One per account: False for a second lake in the
        account, or where it exists already (or ``terraform import`` it).
    """

    sources: Sequence[SegmentSource]
    create_glue_databases: bool = False
    lake_formation: bool = False
    lake_formation_role_arns: Sequence[str] = ()
    register_bucket: bool = True
    create_reports_database: bool = True

    def __post_init__(self) -> None:
        validate_sources(self.sources)
        validation.role_arns(self.lake_formation_role_arns, "lake_formation_role_arns")
        if self.lake_formation and not self.create_glue_databases:
            validation.fail("lake_formation=True grants on the sources' Glue databases, which must exist first: "
                            "set create_glue_databases=True")
        if self.lake_formation_role_arns and not self.lake_formation:
            validation.fail("lake_formation_role_arns is set but lake_formation is False: set lake_formation=True to grant them")


class GlueCatalog(Construct):
    """Optionally creates each source's Glue database; with Lake Formation, registers the lake bucket, creates the
    reports' database and grants each principal only what it uses (``grant_sync``, ``grant_read``).

    Attributes: ``database_names`` (the sources' databases, distinct, in source order), ``databases``
    (name to ``GlueCatalogDatabase``, empty unless created), ``location`` (the ``LakeformationResource`` or
    ``None``), ``grants``.
    """

    def __init__(self, scope: Construct, id: str, *, props: GlueCatalogProps, bucket: LakeBucket,
                 account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props = props
        self.bucket_arn = bucket_arn = arn_of(bucket, lambda: AwsAccount.of(self, account).partition)
        self.database_names = list(dict.fromkeys(source.database for source in props.sources))
        self.databases: dict[str, GlueCatalogDatabase] = {}
        self.grants: list[LakeformationPermissions] = []
        self.location: LakeformationResource | None = None
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
            self.location = LakeformationResource(self, "BucketLocation", arn=bucket_arn, use_service_linked_role=True,
                                                  hybrid_access_enabled=True)
        for index, role_arn in enumerate(props.lake_formation_role_arns):
            self.grant_read(role_arn, name=f"Reader{index}")

    def grant_sync(self, role_arn: str, *, name: str, drop_tables: bool = False) -> None:
        """Lets ``role_arn`` run the sync under Lake Formation: create tables pointing into the bucket, read and
        alter them and their partitions, in the sources' databases and the reports' one; with ``drop_tables``,
        drop them too (Segment's own sync does). ``name`` names the grants (keep it stable: a grant renamed is
        replaced, and for a moment not held)."""
        self._require_lake_formation(role_arn, name)
        self.grants.append(LakeformationPermissions(
            self, f"{name}-DataLocation", principal=role_arn, permissions=["DATA_LOCATION_ACCESS"],
            data_location=LakeformationPermissionsDataLocation(arn=self.bucket_arn),
            depends_on=[self.location] if self.location else None))
        tables = [*SYNC_TABLE_PERMISSIONS, *(["DROP"] if drop_tables else [])]
        self._grant(name, role_arn, [*self.database_names, REPORTS_DATABASE], SYNC_DATABASE_PERMISSIONS, tables)

    def grant_read(self, role_arn: str, *, name: str) -> None:
        """Lets ``role_arn`` see and query every table of the lake's databases; ``name`` names the grants."""
        self._require_lake_formation(role_arn, name)
        self._grant(name, role_arn, [*self.database_names, REPORTS_DATABASE], READ_DATABASE_PERMISSIONS,
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

    def _require_lake_formation(self, role_arn: str, name: str) -> None:
        if not self.props.lake_formation:
            validation.fail("a Lake Formation grant on a GlueCatalog without lake_formation=True: set it")
        if role_arn in self._principals.values() or name in self._principals:
            validation.fail(f"{role_arn!r} (grants {name!r}) is granted twice in Lake Formation: grant each role once, "
                            f"each under a name of its own")
        self._principals[name] = role_arn
