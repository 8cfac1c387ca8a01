"""Delivers the sync app to the cluster: a content-addressed bundle in the bucket and a bootstrap action."""
from __future__ import annotations

from pathlib import Path

from cdktf import AssetType, TerraformAsset
from constructs import Construct

from .aws import S3Object
from .emr import BootstrapAction
from .workload_bundle import build_bundle

APP_PREFIX = "segment-lake-app"
INSTALL_DIR = "/opt/segment-lake"
STEP_ENTRY = f"{INSTALL_DIR}/step_entry.py"


class WorkloadDelivery(Construct):
    """Uploads the bundle built from ``workload/`` under ``segment-lake-app/<hash>/``.

    Attributes: ``asset``, ``bundle_object``, ``bootstrap_object``,
    ``bundle_uri``, ``bootstrap_action`` (give it to :class:`DataLakeCluster`),
    ``step_entry`` (the script a sync step runs with spark-submit).
    """

    def __init__(self, scope: Construct, id: str, *, bucket_name: str, bundle_dir: Path | None = None) -> None:
        super().__init__(scope, id)
        bundle_dir = bundle_dir or build_bundle()
        self.asset = TerraformAsset(self, "Bundle", path=str(bundle_dir), type=AssetType.ARCHIVE)
        prefix = f"{APP_PREFIX}/{self.asset.asset_hash}"
        self.bundle_object = S3Object(self, "BundleObject", bucket=bucket_name, key=f"{prefix}/bundle.zip",
                                      source=self.asset.path, content_type="application/zip")
        self.bootstrap_object = S3Object(self, "BootstrapObject", bucket=bucket_name, key=f"{prefix}/bootstrap.sh",
                                         content=(bundle_dir / "bootstrap.sh").read_text(),
                                         content_type="text/x-shellscript")
        self.bundle_uri = f"s3://{bucket_name}/{self.bundle_object.key}"
        self.bootstrap_action = BootstrapAction(
            name="install-segment-lake-sync",
            path=f"s3://{bucket_name}/{self.bootstrap_object.key}",
            args=[self.bundle_uri],
        )
        self.step_entry = STEP_ENTRY
