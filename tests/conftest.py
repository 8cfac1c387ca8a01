"""Shared fixtures. The AWS provider costs ~20 s to import, so every stack the
tests inspect is synthesized once per session, into one output folder."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# Stack name -> file that defines it; main.py is the project's own app.
APPS = {
    "segment-data-lake": REPO / "main.py",
    "existing-bucket": REPO / "examples" / "existing_bucket" / "main.py",
    "complete": REPO / "examples" / "complete" / "main.py",
    "shared-database": REPO / "examples" / "shared_database" / "main.py",
}


@dataclass
class Synthesized:
    outdir: Path
    stacks: dict[str, dict]

    def stack_dir(self, name: str) -> Path:
        return self.outdir / "stacks" / name


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory) -> Synthesized:
    from cdktf import App

    outdir = tmp_path_factory.mktemp("cdktf.out")
    app = App(outdir=str(outdir))
    for name, path in APPS.items():
        module = load_module(path, f"app_{name.replace('-', '_')}")
        if name == "segment-data-lake":
            module.DataLakeStack(app, name, {})
        else:
            module.build(app)
    app.synth()
    stacks = {name: json.loads((outdir / "stacks" / name / "cdk.tf.json").read_text()) for name in APPS}
    return Synthesized(outdir, stacks)


@pytest.fixture(scope="session")
def lake(synthesized) -> dict:
    """The project's own stack (main.py with its defaults)."""
    return synthesized.stacks["segment-data-lake"]
