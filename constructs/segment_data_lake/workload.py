"""Delivers the sync app to the cluster's steps: its bundle and step script in the bucket, content-addressed.

The cluster installs nothing: each step fetches the release it names (``run-sync.sh``), so a new
release changes only what the schedules submit, in place, and never replaces the cluster.
"""
from __future__ import annotations

import hashlib
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from constructs import Construct

from segment_lake_contract import APP_PREFIX

from . import validation
from .aws import AssetType, S3Object, TerraformAsset, TerraformResourceLifecycle
from .bucket import LakeBucket

BUNDLE_NAME = "segment-lake-app.zip"
STEP_SCRIPT = "run-sync.sh"
# What a bundle must hold: the step, what spark-submit runs, and the sync itself.
_BUNDLE_ENTRIES = (STEP_SCRIPT, "step_entry.py", "site/segment_lake/cli.py", "site/segment_lake_contract.py")
# command-runner.jar runs this on the master node: fetch the release's step script, run it with the
# step's arguments ($0 is the script's URI). Nothing to install on the cluster, no extra IAM grant.
STEP_LAUNCHER = ('set -eu; script=$(mktemp); trap \'rm -f "$script"\' EXIT; '
                 'aws s3 cp --only-show-errors "$0" "$script"; bash "$script" "$@"')

# A new release's objects exist before the schedules point at them and the old ones go.
_NEW_RELEASE_FIRST = TerraformResourceLifecycle(create_before_destroy=True)


def release_id(bundle: Path) -> str:
    """The release's id: a digest of the bundle's entries (names, modes, contents), not of the zip's bytes,
    which vary with the zlib that compressed them; so the same sources give the same S3 key anywhere."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(bundle) as archive:
        for info in sorted(archive.infolist(), key=lambda entry: entry.filename):
            digest.update(f"{info.filename}\0{info.external_attr >> 16:o}\0".encode())
            digest.update(hashlib.sha256(archive.read(info)).digest())
    return digest.hexdigest()[:32]


def packaged_bundle() -> Path:
    """The bundle shipped in this package (``make bundle`` puts it there before the package is built)."""
    return Path(str(resources.files("segment_data_lake") / "app" / BUNDLE_NAME))


@dataclass(frozen=True)
class WorkloadDeliveryProps:
    """Props of :class:`WorkloadDelivery`.

    :param bundle_path: the sync app's bundle, as ``make bundle`` builds it (default: the one shipped
        in this package).
    """

    bundle_path: Path | None = None

    def __post_init__(self) -> None:
        path = Path(self.bundle_path) if self.bundle_path is not None else packaged_bundle()
        if not path.is_file():
            how = ("pass the path of one built by `make bundle`" if self.bundle_path is not None else
                   "run `make bundle` in the checkout and reinstall it, or pass bundle_path")
            validation.fail(f"sync app bundle {str(path)!r} does not exist: {how}")
        try:
            with zipfile.ZipFile(path) as archive:
                missing = [entry for entry in _BUNDLE_ENTRIES if entry not in set(archive.namelist())]
                script = "" if missing else archive.read(STEP_SCRIPT).decode()
        except zipfile.BadZipFile:
            missing = list(_BUNDLE_ENTRIES)
        if missing:
            validation.fail(f"{str(path)!r} is not a sync app bundle (no {missing[0]}): build it with `make bundle`")
        if "${" in script or "%{" in script:
            validation.fail(f"{STEP_SCRIPT} in {str(path)!r} holds '${{' or '%{{', which Terraform would read as its own "
                            f"template syntax: write the shell without them")
        object.__setattr__(self, "bundle_path", path)


class WorkloadDelivery(Construct):
    """Uploads the bundle and its step script under ``segment-lake-app/<hash>/``.

    Attributes: ``asset``, ``bundle_object``, ``step_script_object``, ``bundle_uri``,
    ``step_script_uri``, ``step_jar`` and ``step_args()`` (the command-runner step of a sync).
    """

    def __init__(self, scope: Construct, id: str, *, props: WorkloadDeliveryProps, bucket: LakeBucket) -> None:
        super().__init__(scope, id)
        self.props = props
        bucket_name = bucket.bucket_name
        bundle = Path(props.bundle_path)
        self.asset = TerraformAsset(self, "Bundle", path=str(bundle), type=AssetType.FILE)
        prefix = f"{APP_PREFIX}{release_id(bundle)}"
        self.bundle_object = S3Object(self, "BundleObject", bucket=bucket_name, key=f"{prefix}/{BUNDLE_NAME}",
                                      source=self.asset.path, content_type="application/zip",
                                      lifecycle=_NEW_RELEASE_FIRST)
        with zipfile.ZipFile(bundle) as archive:
            script = archive.read(STEP_SCRIPT).decode()
        self.step_script_object = S3Object(self, "StepScriptObject", bucket=bucket_name,
                                           key=f"{prefix}/{STEP_SCRIPT}", content=script,
                                           content_type="text/x-shellscript", lifecycle=_NEW_RELEASE_FIRST)
        self.bundle_uri = f"s3://{bucket_name}/{self.bundle_object.key}"
        self.step_script_uri = f"s3://{bucket_name}/{self.step_script_object.key}"
        self.step_jar = "command-runner.jar"

    def step_args(self, command: list[str]) -> list[str]:
        """The command-runner.jar arguments that run ``segment-lake <command>`` with this release."""
        return ["bash", "-c", STEP_LAUNCHER, self.step_script_uri, self.bundle_uri, *command]
