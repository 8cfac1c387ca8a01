"""The constructs as a user gets them: `pip install <checkout>` (not editable) into a fresh virtualenv, then
used from an app of the user's own outside the checkout, with no network."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import REPO
from terraform_cli import PLUGIN_DIR, run_terraform

pytestmark = pytest.mark.constructs

# A consumer with its own VPC (flow logs to its central log bucket, default group closed) and subnet, the
# lake wired to them, and an output of its own.
CONSUMER_APP = '''
from cdktf import App, TerraformOutput, TerraformStack
from segment_data_lake import (DataLakeBucketProps, DataLakeOutputs, DataLakeRolesProps, EmrClusterProps, EmrSecurityProps,
                               SegmentDataLake, SegmentDataLakeProps, SegmentSource)
from segment_data_lake.aws import AwsProvider, DefaultSecurityGroup, FlowLog, Subnet, Vpc

app = App()
stack = TerraformStack(app, "consumer")
AwsProvider(stack, "aws", region="eu-west-1")
vpc = Vpc(stack, "Vpc", cidr_block="10.8.0.0/16", enable_dns_hostnames=True)
DefaultSecurityGroup(stack, "ClosedDefault", vpc_id=vpc.id)
FlowLog(stack, "FlowLog", vpc_id=vpc.id, traffic_type="ALL", log_destination_type="s3",
        log_destination="arn:aws:s3:::consumer-central-logs/vpc/")
subnet = Subnet(stack, "Private", vpc_id=vpc.id, cidr_block="10.8.1.0/24",
                tags={"for-use-with-amazon-emr-managed-policies": "true"})
lake = SegmentDataLake(stack, "Lake", props=SegmentDataLakeProps(
    bucket=DataLakeBucketProps(bucket_name="consumer-segment-lake", create_bucket=True),
    access=DataLakeRolesProps(external_ids=["consumerws01"], name_suffix="-consumer"),
    cluster=EmrClusterProps(security=EmrSecurityProps(subnet_id=subnet.id)),
    sources=[SegmentSource(source_id="Cons123456", slug="consumer_web")],
))
DataLakeOutputs(stack, "LakeOutputs", lakes=[lake])
TerraformOutput(stack, "lake_cluster", value=lake.cluster.cluster_id)
app.synth()
'''


def readme_example() -> str:
    """The first Python block of the README's "Using the constructs", verbatim."""
    section = REPO.joinpath("README.md").read_text().split("## Using the constructs", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def readme_scan_example() -> tuple[list[str], str]:
    """The commands and the skips file of docs/constructs.md's "Scanning (yours too)", verbatim."""
    section = REPO.joinpath("docs", "constructs.md").read_text().split("## Scanning (yours too)", 1)[1].split("\n## ", 1)[0]
    commands = re.search(r"```sh\n(.*?)```", section, re.S).group(1).strip().splitlines()
    return commands, re.search(r"```json\n(.*?)```", section, re.S).group(1)


def _run(args, cwd, **kwargs):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, **kwargs)


def test_a_wheel_installed_in_a_fresh_virtualenv_synthesizes_validates_and_scans(tmp_path):
    # the checkout as git has it, plus the bundle `make bundle` built: what `pip install <checkout>` sees
    source = tmp_path / "checkout"
    files = _run(["git", "ls-files", "-z"], REPO).stdout.split("\0")
    for name in [f for f in files if f] + ["constructs/segment_data_lake/app/segment-lake-app.zip"]:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], tmp_path).returncode == 0
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path).stdout.strip())
    # The wheel goes in as a user installs it; its dependencies (cdktf and the 600 MB provider) are borrowed
    # from this project's environment instead of being installed again. A plain path entry: the project's
    # own editable installs there are not activated, so only the wheel provides the constructs.
    (site / "borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # `pip install <checkout>/contract <checkout>`: pip builds the wheels in an isolated environment (setuptools
    # from the index); the sync app (workload/) goes in too, to be uninstalled below
    install = _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(source / "contract"), str(source),
                    str(source / "workload")], tmp_path)
    assert install.returncode == 0, install.stderr
    shutil.rmtree(source)  # nothing may reach back into the checkout
    # where the names resolve, found without running the packages (importing the constructs loads the AWS provider,
    # 26 CPU-s; the synths below import them)
    where = _run([str(python), "-c", "from importlib.util import find_spec; print(find_spec('segment_data_lake').origin);"
                  "print(find_spec('segment_lake_contract').origin)"], tmp_path)
    assert where.stdout.split() == [str(site / "segment_data_lake" / "__init__.py"),
                                    str(site / "segment_lake_contract.py")], where.stderr
    # one distribution owns segment_lake: uninstalling the sync app leaves the constructs whole, and the other way
    assert _run([str(python), "-m", "pip", "uninstall", "--quiet", "--yes", "segment-lake"], tmp_path).returncode == 0
    gone = _run([str(python), "-c", "import segment_lake"], tmp_path)
    assert gone.returncode == 1 and "No module named 'segment_lake'" in gone.stderr
    installed_before = sorted(str(p) for p in (site / "segment_data_lake").rglob("*") if "__pycache__" not in p.parts)

    apps = {"consumer": CONSUMER_APP, "readme": readme_example()}
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path),
           "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": _run(["node", "-p", "process.versions.node.split('.')[0]"],
                                                                   tmp_path).stdout.strip()}
    synths = {}
    for name, code in apps.items():  # two synths at once, with no network at all (unshare -n)
        (tmp_path / name).mkdir()
        (tmp_path / name / "app.py").write_text(code)
        synths[name] = subprocess.Popen(["unshare", "-n", str(python), "app.py"], cwd=tmp_path / name, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for name, synth in synths.items():
        _, stderr = synth.communicate(timeout=600)
        assert synth.returncode == 0, f"{name}: {stderr}"
        assert "end-of-life" not in stderr
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == ["app.py", "cdktf.out"], name
    # synth wrote nothing into the installed package
    assert sorted(str(p) for p in (site / "segment_data_lake").rglob("*") if "__pycache__" not in p.parts) == installed_before

    for name, stack_name in (("consumer", "consumer"), ("readme", "lake")):
        stack_dir = tmp_path / name / "cdktf.out" / "stacks" / stack_name
        stack = json.loads((stack_dir / "cdk.tf.json").read_text())
        assert stack["resource"]["aws_scheduler_schedule"], name
        # the consumer keeps the always-on cluster; the README's example starts a transient one per tick
        assert ("aws_emr_cluster" in stack["resource"]) == (name == "consumer"), name
        init = run_terraform(["init", "-backend=false", "-input=false", f"-plugin-dir={PLUGIN_DIR}"], stack_dir)
        assert init.returncode == 0, init.stderr
        validate = json.loads(run_terraform(["validate", "-json"], stack_dir).stdout)
        assert validate["valid"] is True, (name, validate["diagnostics"])
        if name == "readme":  # the consumer's stack: by the documented commands below
            scan = _run([str(python), "-m", "segment_data_lake_scan", str(tmp_path / name / "cdktf.out")], tmp_path)
            assert scan.returncode == 0, scan.stdout + scan.stderr
            assert "checkov passed" in scan.stderr and " 0 findings" in scan.stderr
    # the documented scan of a user's own stack (docs/constructs.md), verbatim, with the scan the wheel installed
    commands, skips = readme_scan_example()
    (tmp_path / "consumer" / "my-skips.json").write_text(skips)
    (tmp_path / "consumer" / "my-findings.json").write_text("[]")
    for command in commands:
        scanned = subprocess.run(command, shell=True, cwd=tmp_path / "consumer", capture_output=True, text=True,
                                 timeout=600, env=dict(env, PATH=f"{venv / 'bin'}:{env['PATH']}"))
        assert scanned.returncode == 0 and "scan passed" in scanned.stderr, (command, scanned.stdout + scanned.stderr)
        assert "checkov passed" in scanned.stderr and " 0 findings" in scanned.stderr, (command, scanned.stderr)
    # the constructs' distribution uninstalled, the sync app (installed again) still imports
    wheel = _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir",
                  str(tmp_path / "wheels"), str(REPO / "workload")], tmp_path)
    assert wheel.returncode == 0, wheel.stderr
    for step in (["install", "--no-deps", *map(str, (tmp_path / "wheels").glob("*.whl"))],
                 ["uninstall", "--yes", "segment-data-lake-cdktf"]):
        assert _run([str(python), "-m", "pip", *step, "--quiet"], tmp_path).returncode == 0, step
    app = _run([str(python), "-c", "import segment_lake.cli, segment_lake.layout"], tmp_path)
    assert app.returncode == 0, app.stderr
    consumer = json.loads((tmp_path / "consumer" / "cdktf.out" / "stacks" / "consumer" / "cdk.tf.json").read_text())
    assert next(iter(consumer["resource"]["aws_emr_cluster"].values()))["ec2_attributes"]["subnet_id"].startswith(
        "${aws_subnet.")
    assert "lake_cluster" in consumer["output"] and "emr_cluster_id" in consumer["output"]
