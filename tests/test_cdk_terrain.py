"""The constructs on CDK Terrain (cdktn, cdktf's community fork), through the one import seam
(segment_data_lake/aws.py): the complete example, written for cdktn as its users write it, synthesizes the same
resources as on cdktf.

cdktn-provider-aws 24.12.0 pins hashicorp/aws 6.56.0 and the offline mirror holds only 5.100.0, so terraform
validates the cdktn stack against 5.100.0's schema (its version requirement overridden): what could not run here is
a validate, plan or apply with provider 6.56.0."""
import json
import os
import subprocess
import sys

import pytest
from conftest import REPO
from terraform_cli import PLUGIN_DIR, run_terraform

pytestmark = pytest.mark.constructs

SYNTH = """
import importlib.util, sys
from cdktn import App
spec = importlib.util.spec_from_file_location("complete_on_cdktn", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
app = App(outdir=sys.argv[2])
module.build(app)
app.synth()
import segment_data_lake.aws as seam
print(seam.CDK)
"""


@pytest.fixture(scope="module")
def on_cdktn(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("cdktn")
    example = (REPO / "examples" / "complete" / "main.py").read_text()
    assert "from cdktf import " in example
    app = work / "main.py"
    app.write_text(example.replace("from cdktf import ", "from cdktn import "))  # what a cdktn user writes
    env = {k: v for k, v in os.environ.items() if k != "SEGMENT_LAKE_CDK"}  # chosen by the app's own import
    done = subprocess.run([sys.executable, "-c", SYNTH, str(app), str(work / "out")], env=env, cwd=work,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["cdktn"]
    return {"dir": work / "out" / "stacks" / "complete",
            "stack": json.loads((work / "out" / "stacks" / "complete" / "cdk.tf.json").read_text())}


def test_the_complete_example_synthesizes_the_same_resources_on_cdktn(on_cdktn, synthesized):
    ours, theirs = synthesized.stacks["complete"], on_cdktn["stack"]
    for block in ("resource", "data", "output", "locals"):
        assert theirs.get(block) == ours.get(block), block
    # only the provider's pinned version (and the CDK's own metadata) differ
    assert theirs["terraform"]["required_providers"]["aws"]["version"] == "6.56.0"
    assert ours["terraform"]["required_providers"]["aws"]["version"] == "5.100.0"
    assert theirs["provider"] == ours["provider"]


def test_the_cdktn_stack_validates_against_the_mirrored_provider(on_cdktn):
    stack = on_cdktn["stack"]
    stack["terraform"]["required_providers"]["aws"]["version"] = "5.100.0"  # the only one the mirror has
    (on_cdktn["dir"] / "cdk.tf.json").write_text(json.dumps(stack))
    init = run_terraform(["init", "-backend=false", "-input=false", f"-plugin-dir={PLUGIN_DIR}"], on_cdktn["dir"])
    assert init.returncode == 0, init.stderr
    report = json.loads(run_terraform(["validate", "-json"], on_cdktn["dir"]).stdout)
    assert report["valid"] is True and report["error_count"] == 0, report["diagnostics"]
