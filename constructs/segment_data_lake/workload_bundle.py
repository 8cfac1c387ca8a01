"""Builds the sync app's bundle: its wheel, the wheels it needs on EMR, the bootstrap and step scripts.

Runs at synth time. The output is reproducible (fixed wheel timestamps, cached
dependency downloads), so the content-addressed S3 key only changes when the app does.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKLOAD_DIR = REPO_ROOT / "workload"
CACHE_DIR = REPO_ROOT / ".cache"
# 1980-01-01, the earliest time a zip entry can hold.
_REPRODUCIBLE_EPOCH = "315532800"


class BundleBuildError(RuntimeError):
    """The workload bundle could not be built."""


def _run(command: list[str], what: str) -> None:
    env = dict(os.environ, SOURCE_DATE_EPOCH=_REPRODUCIBLE_EPOCH, PIP_DISABLE_PIP_VERSION_CHECK="1")
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise BundleBuildError(f"{what} failed: {_cause(result.stderr)} (command: {' '.join(command)})")


def _cause(stderr: str) -> str:
    """The line of a failed build's output that names its cause: pip ends with "See above for details",
    so the first line reading like an error, else the last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.lower().startswith(("error:", "error ")) and "see above" not in line.lower():
            return line
    return lines[-1] if lines else "no output"


def dependency_wheels(requirements: Path) -> Path:
    """Wheels for ``requirements`` for CPython 3.11 on x86_64 Linux, downloaded once and cached."""
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    target = CACHE_DIR / "emr-wheels" / digest
    if not (target / ".complete").exists():
        shutil.rmtree(target, ignore_errors=True)
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
              "--python-version", "3.11", "--implementation", "cp", "--platform", "manylinux2014_x86_64",
              "--dest", str(target), "--requirement", str(requirements)],
             f"downloading the EMR wheels listed in {requirements}")
        (target / ".complete").touch()
    return target


@functools.cache
def build_bundle(workload_dir: Path = WORKLOAD_DIR, out_dir: Path | None = None) -> Path:
    """A folder holding ``wheels/``, ``bootstrap.sh`` and ``step_entry.py``; built once per process."""
    out_dir = out_dir or CACHE_DIR / "workload-bundle"
    shutil.rmtree(out_dir, ignore_errors=True)
    wheels = out_dir / "wheels"
    wheels.mkdir(parents=True)
    # Build from a copy so the build leaves nothing in the source tree.
    source = CACHE_DIR / "workload-source"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(workload_dir, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
          "--wheel-dir", str(wheels), str(source)], f"building the sync app wheel from {workload_dir}")
    shutil.rmtree(source)
    for wheel in dependency_wheels(workload_dir / "emr" / "requirements.txt").glob("*.whl"):
        shutil.copy2(wheel, wheels / wheel.name)
    for script in ("bootstrap.sh", "step_entry.py"):
        shutil.copy2(workload_dir / "emr" / script, out_dir / script)
    return out_dir
