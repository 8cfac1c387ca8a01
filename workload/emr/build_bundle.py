"""Builds the sync app's bundle for EMR: one zip that every sync step installs on the master node.

    python workload/emr/build_bundle.py --wheels DIR --output FILE.zip [--app DIR]

The zip holds ``run-sync.sh`` (the step), ``step_entry.py`` (what spark-submit runs) and ``site/``:
the ``segment_lake`` package from ``workload/src``, the ``segment_lake_contract`` module from ``contract/``
and the runtime wheels of ``runtime.lock``, unpacked.
It needs no network and no build backend, and it is reproducible: the same sources and wheels give
the same bytes (entries sorted, timestamps from SOURCE_DATE_EPOCH or 1980-01-01, fixed modes), so
its content hash changes only when the app or its pins do. Wheels are checked against the lock's hashes.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import time
import zipfile
from pathlib import Path

EMR_DIR = Path(__file__).resolve().parent
APP_DIR = EMR_DIR.parent / "src" / "segment_lake"
CONTRACT = EMR_DIR.parent.parent / "contract" / "segment_lake_contract.py"  # the app's naming rules (../contract)
LOCK = EMR_DIR / "runtime.lock"
SCRIPTS = ("run-sync.sh", "step_entry.py")
_ZIP_EPOCH = 315532800  # 1980-01-01, the earliest time a zip entry can hold
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})$")


class BundleError(RuntimeError):
    """The bundle cannot be built from what was given."""


def pinned_wheels(lock: Path, wheels_dir: Path) -> list[Path]:
    """The wheel of every pin in ``lock``, found in ``wheels_dir`` and checked against its hash."""
    found = []
    for line in lock.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _PIN.match(line)
        if not match:
            raise BundleError(f"{lock}: {line!r} is not 'name==version --hash=sha256:<hex>': "
                              f"pin every runtime wheel with its hash")
        name, version, digest = match.groups()
        stem = re.sub(r"[-_.]+", "_", name).lower()
        candidates = [p for p in wheels_dir.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
        if not candidates:
            raise BundleError(f"no wheel of {name}=={version} in {wheels_dir}: "
                              f"run `make bundle`, which downloads the pins of {lock.name}")
        wheel = next((p for p in candidates if hashlib.sha256(p.read_bytes()).hexdigest() == digest), None)
        if wheel is None:
            raise BundleError(f"{candidates[0]} does not match the hash pinned in {lock}: delete it and run `make bundle` again")
        if not wheel.name.endswith("-none-any.whl"):
            raise BundleError(f"{wheel.name} is not a pure-Python wheel: the bundle unpacks wheels for any EMR architecture")
        found.append(wheel)
    return found


def _entries(app_dir: Path, wheels: list[Path]) -> dict[str, tuple[bytes, int]]:
    """Every file of the bundle: path in the zip -> (bytes, mode)."""
    entries: dict[str, tuple[bytes, int]] = {}
    for script in SCRIPTS:
        entries[script] = ((EMR_DIR / script).read_bytes(), 0o755 if script.endswith(".sh") else 0o644)
    for path in sorted(app_dir.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            entries[f"site/segment_lake/{path.relative_to(app_dir).as_posix()}"] = (path.read_bytes(), 0o644)
    entries[f"site/{CONTRACT.name}"] = (CONTRACT.read_bytes(), 0o644)
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    entries[f"site/{info.filename}"] = (archive.read(info), 0o644)
    return entries


def build(output: Path, wheels_dir: Path, app_dir: Path = APP_DIR, lock: Path = LOCK) -> str:
    """Writes the bundle to ``output`` (atomically) and returns its sha256."""
    epoch = max(int(os.environ.get("SOURCE_DATE_EPOCH", _ZIP_EPOCH)), _ZIP_EPOCH)
    stamp = time.gmtime(epoch)[:6]
    entries = _entries(app_dir, pinned_wheels(lock, wheels_dir))
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.{os.getpid()}.partial")
    with zipfile.ZipFile(partial, "w") as archive:
        for name in sorted(entries):
            data, mode = entries[name]
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | mode) << 16
            info.create_system = 3  # Unix, so unzip applies the modes
            archive.writestr(info, data, compresslevel=9)
    os.replace(partial, output)
    return hashlib.sha256(output.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, required=True, help="folder holding the wheels pinned in runtime.lock")
    parser.add_argument("--output", type=Path, required=True, help="the zip to write")
    parser.add_argument("--app", type=Path, default=APP_DIR, help="the segment_lake package to bundle (default: this checkout's)")
    args = parser.parse_args(argv)
    try:
        digest = build(args.output, args.wheels, app_dir=args.app)
    except BundleError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{args.output} sha256:{digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
