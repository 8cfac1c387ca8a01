"""terraform validate on every synthesized stack, offline from the provider mirror; `make synth`."""
import json
import shutil
import subprocess

import pytest
from conftest import APPS, REPO
from terraform_cli import PLUGIN_DIR, run_terraform

pytestmark = pytest.mark.constructs


def run(args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", sorted(APPS))
def test_stack_passes_terraform_validate(synthesized, name, tmp_path):
    stack_dir = tmp_path / name  # init writes beside the stack: not into the folder the other tests read
    shutil.copytree(synthesized.stack_dir(name), stack_dir)
    init = run_terraform(["init", "-backend=false", "-input=false", f"-plugin-dir={PLUGIN_DIR}"], stack_dir)
    assert init.returncode == 0, init.stderr
    validate = run_terraform(["validate", "-json"], stack_dir)
    report = json.loads(validate.stdout)
    assert report["valid"] is True, report["diagnostics"]
    assert report["error_count"] == 0


def test_make_synth_writes_the_stack_without_the_cdktf_cli():
    result = run(["make", "--no-print-directory", "synth"], REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    stack = json.loads((REPO / "cdktf.out" / "stacks" / "segment-data-lake" / "cdk.tf.json").read_text())
    assert "aws_emr_cluster" in stack["resource"]
    assert json.loads((REPO / "cdktf.json").read_text())["app"] == "python main.py"


def test_the_makefile_silences_jsiis_node_banner():
    """jsii prints a banner about the Node version on every synth unless told which major version to accept."""
    result = run(["make", "-s", "--no-print-directory", "--eval", "jsii-banner: ; @$(PY) -c 'import cdktf'",
                  "jsii-banner"], REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "end-of-life" not in result.stderr and "Node" not in result.stderr, result.stderr[:500]


def test_state_lives_by_a_relative_path_and_is_never_committed(synthesized):
    for name, stack in synthesized.stacks.items():
        path = stack["terraform"]["backend"]["local"]["path"]
        assert path == f"../../../terraform.{name}.tfstate", name  # next to cdktf.json, from any machine
    ignored = (REPO / ".gitignore").read_text().split()
    assert "*.tfstate" in ignored and "*.tfstate.*" in ignored
