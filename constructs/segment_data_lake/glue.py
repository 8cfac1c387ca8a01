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
        Formation administrator.
    :param lake_formation_role_arns: IAM role ARNs that read the lake (analysts, Athena): ``DESCRIBE`` on the
        databases, ``SELECT`` and ``DESCRIBE`` on their tables.
    :param register_bucket: with ``lake_formation``, register the lake bucket with Lake Formation (hybrid
        access mode, so principals that IAM lets read it keep reading it; the service-linked role), which the
        roles' ``DATA_LOCATION_ACCESS`` grants need. False when the bucket is registered already.
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

    def __init__(self, scope: Construct, id: str, *, props: GlueCatalogProps, bucket_arn: str,
                 account: AwsAccount | None = None) -> None:
        super().__init__(scope, id)
        self.props = props
        self.bucket_arn = bucket_arn
        self.database_names = list(dict.fromkeys(source.database for source in props.sources))
        self.databases: dict[str, GlueCatalogDatabase] = {}
        self.grants: list[LakeformationPermissions] = []
        self.location: LakeformationResource | None = None
        self._principals: list[str] = []
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
        for role_arn in props.lake_formation_role_arns:
            self.grant_read(role_arn)

    def grant_sync(self, role_arn: str, *, drop_tables: bool = False) -> None:
        """Lets ``role_arn`` run the sync under Lake Formation: create tables pointing into the bucket, read and
        alter them and their partitions, in the sources' databases and the reports' one; with ``drop_tables``,
        drop them too (Segment's own sync does)."""
        self._require_lake_formation()
        index = self._principal_index(role_arn)
        self.grants.append(LakeformationPermissions(
            self, f"DataLocation{index}", principal=role_arn, permissions=["DATA_LOCATION_ACCESS"],
            data_location=LakeformationPermissionsDataLocation(arn=self.bucket_arn),
            depends_on=[self.location] if self.location else None))
        tables = [*SYNC_TABLE_PERMISSIONS, *(["DROP"] if drop_tables else [])]
        self._grant(index, role_arn, [*self.database_names, REPORTS_DATABASE], SYNC_DATABASE_PERMISSIONS, tables)

    def grant_read(self, role_arn: str) -> None:
        """Lets ``role_arn`` see and query every table of the lake's databases."""
        self._require_lake_formation()
        self._grant(self._principal_index(role_arn), role_arn, [*self.database_names, REPORTS_DATABASE],
                    READ_DATABASE_PERMISSIONS, READ_TABLE_PERMISSIONS)

    def _grant(self, index: int, role_arn: str, databases: Sequence[str], on_database: Sequence[str],
               on_tables: Sequence[str]) -> None:
        catalog_id = self._account.account_id
        for name in databases:
            depends = [self.databases[name]] if name in self.databases else None
            self.grants.append(LakeformationPermissions(
                self, f"Database{index}-{name}", principal=role_arn, permissions=list(on_database),
                database=LakeformationPermissionsDatabase(name=name, catalog_id=catalog_id), depends_on=depends))
            self.grants.append(LakeformationPermissions(
                self, f"Tables{index}-{name}", principal=role_arn, permissions=list(on_tables),
                table=LakeformationPermissionsTable(database_name=name, wildcard=True, catalog_id=catalog_id),
                depends_on=depends))

    def _principal_index(self, role_arn: str) -> int:
        """A stable index per principal, for the grants' construct ids; a principal is granted once."""
        if role_arn in self._principals:
            validation.fail(f"{role_arn!r} is granted twice in Lake Formation: list each role once")
        self._principals.append(role_arn)
        return len(self._principals) - 1

    def _require_lake_formation(self) -> None:
        if not self.props.lake_formation:
            validation.fail("a Lake Formation grant on a GlueCatalog without lake_formation=True: set it")
