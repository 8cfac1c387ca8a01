"""Shared fixtures. The AWS provider costs ~20 s to import and a synthesis of every stack about 35 CPU-s, so every
stack the tests inspect is synthesized once per session (by one of xdist's workers, for all), into one output folder,
which tests read and do not change."""
from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from iceberg_readers import spark_with_iceberg, spark_with_iceberg_in_glue

REPO = Path(__file__).resolve().parents[1]


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
    "staging-and-prod": REPO / "examples" / "staging_and_prod" / "main.py",
    "bring-your-own": REPO / "examples" / "bring_your_own" / "main.py",
    # main.py again, where Segment runs the syncs (the only stack with a vendor role)
    "segment-runs": REPO / "main.py",
    # main.py again, governed by Lake Formation
    "lake-formation": REPO / "main.py",
    # main.py again, with a transient cluster per tick instead of the always-on cluster
    "transient": REPO / "main.py",
}


@dataclass
class Synthesized:
    outdir: Path
    stacks: dict[str, dict]

    def stack_dir(self, name: str) -> Path:
        return self.outdir / "stacks" / name


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory, worker_id) -> Synthesized:
    # the folder of this session's temporary folders, which xdist's workers share
    shared = tmp_path_factory.getbasetemp()
    shared = shared if worker_id == "master" else shared.parent
    outdir = shared / "cdktf.out"
    with open(shared / "cdktf.out.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a worker that comes second waits for the first one's synthesis
        if not outdir.is_dir():
            shutil.rmtree(shared / "cdktf.out.partial", ignore_errors=True)  # a worker's that died synthesizing
            _synthesize(shared / "cdktf.out.partial")
            (shared / "cdktf.out.partial").rename(outdir)  # whole or not there
    stacks = {name: json.loads((outdir / "stacks" / name / "cdk.tf.json").read_text()) for name in APPS}
    return Synthesized(outdir, stacks)


def _synthesize(outdir: Path) -> None:
    from cdktf import App

    app = App(outdir=str(outdir))
    for name, path in APPS.items():
        module = load_module(path, f"app_{name.replace('-', '_')}")
        if name == "segment-data-lake":
            module.DataLakeStack(app, name, {})
        elif name == "segment-runs":
            module.DataLakeStack(app, name, {"SEGMENT_LAKE_SYNC_RUNNER": "segment"})
        elif name == "lake-formation":
            module.DataLakeStack(app, name, {"SEGMENT_LAKE_LAKE_FORMATION": "1"})
        elif name == "transient":
            module.DataLakeStack(app, name, {"SEGMENT_LAKE_CLUSTER_MODE": "transient"})
        else:
            module.build(app)
    app.synth()


@pytest.fixture(scope="session")
def lake(synthesized) -> dict:
    """The project's own stack (main.py with its defaults)."""
    return synthesized.stacks["segment-data-lake"]


# modules whose tests need a Spark that opens with Iceberg: test_contract_on_iceberg.py runs them in a pytest of its own
ICEBERG_SESSION_MODULES = ("test_iceberg_partitioning.py",)
# and one whose Spark's Iceberg keeps its tables in Glue (the local endpoint's): test_iceberg_on_emr.py runs it
ICEBERG_IN_GLUE_MODULE = "test_iceberg_in_glue.py"
collect_ignore = ([] if spark_with_iceberg() else list(ICEBERG_SESSION_MODULES)) + (
    [] if spark_with_iceberg_in_glue() else [ICEBERG_IN_GLUE_MODULE])


# ---- the sync app: one Spark session (with the s3a jars) and one local AWS endpoint per test session

JARS = [REPO / ".cache" / "jars" / "hadoop-aws-3.3.1.jar", REPO / ".cache" / "jars" / "aws-java-sdk-bundle-1.11.901.jar"]


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from segment_lake.session import build_session

    jars = os.environ.get("SEGMENT_LAKE_SPARK_JARS") or ",".join(map(str, JARS))
    for jar in jars.split(","):
        assert Path(jar).is_file(), f"{jar} is missing: run `make setup` to extract the s3a jars"
    os.environ["SEGMENT_LAKE_SPARK_JARS"] = jars
    metastore_lake = tmp_path_factory.mktemp("metastore-lake")
    # a run of the tests on Iceberg tables (test_contract_on_iceberg.py starts it) opens Spark with Iceberg; one of
    # Iceberg in Glue, with Iceberg's Glue catalog (SEGMENT_LAKE_GLUE_ENDPOINT says where, before the JVM starts)
    glue = spark_with_iceberg_in_glue()
    session = build_session("segment-lake tests", f"file://{metastore_lake}", local_catalog=not glue,
                            iceberg=spark_with_iceberg() or glue)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def aws_endpoint():
    """moto's server on 127.0.0.1: S3 and Glue for the AWS paths."""
    import socket

    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture(scope="session")
def s3a(spark, aws_endpoint):
    """Points Spark's s3a filesystem at the local endpoint; returns a function that makes a bucket."""
    import boto3

    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in {"fs.s3a.endpoint": aws_endpoint, "fs.s3a.path.style.access": "true",
                       "fs.s3a.connection.ssl.enabled": "false", "fs.s3a.access.key": "testing",
                       "fs.s3a.secret.key": "testing", "fs.s3a.change.detection.mode": "none"}.items():
        conf.set(key, value)
    s3 = boto3.client("s3", endpoint_url=aws_endpoint, region_name="us-east-1")

    def make_bucket(name: str):
        s3.create_bucket(Bucket=name)
        return s3

    return make_bucket


@pytest.fixture(scope="session")
def glue_client(aws_endpoint):
    import boto3

    return boto3.client("glue", endpoint_url=aws_endpoint, region_name="us-east-1")


# ---- make test runs the suite on several workers (pytest-xdist, --dist loadgroup), the timing tests after

# the modules that take longest (CPU seconds on 2 cores, 2026-11-27): handed out first, so that no worker is left
# running one alone at the end
SLOWEST = ("test_kills", "test_deploy_rehearsal", "test_iceberg_on_emr", "test_iceberg_lake", "test_sync_cli",
           "test_compaction", "test_installed_package", "test_class_archive", "test_contract_on_iceberg",
           "test_least_privilege", "test_deletion",
           "test_hostile_input", "test_faults", "test_policy_scan")


# the modules that build stacks in their own process (about 100 s of tests in all, and test_iceberg_on_emr's pytest of
# Iceberg in Glue): on one worker, the one that imports the AWS provider for them (16 CPU-s; they import it inside
# their tests, not at collection, which every worker does). test_iceberg_on_emr among the slowest: the group goes first
BUILD_STACKS = ("test_alerts", "test_bring_your_own", "test_bucket", "test_emr", "test_glue_and_outputs", "test_grants",
                "test_iam", "test_iceberg_on_emr", "test_network", "test_plan_checks", "test_replay_cluster",
                "test_transient_clusters", "test_validation", "test_workload_and_schedules")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config, items):
    """On xdist's workers: a module whose fixtures are made once per module keeps its tests on one worker (one xdist
    group); the tests of other modules go to whichever worker is free. The slowest modules come first."""
    for item in items:  # make test's timing run collects only the files that say so (the Makefile's TIMING_FILES)
        if item.get_closest_marker("timing") and "mark.timing" not in item.path.read_text():
            raise pytest.UsageError(f"{item.nodeid} is marked timing where make test's timing run would not find it: "
                                    "mark it with pytest.mark.timing in its own file")
    if not hasattr(config, "workerinput"):  # a run in one process keeps the files' order
        return
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        scopes = {definition.scope for definitions in item._fixtureinfo.name2fixturedefs.values()
                  for definition in definitions}
        if module in BUILD_STACKS:
            item.add_marker(pytest.mark.xdist_group("build-stacks"))
        elif scopes & {"module", "class", "package"}:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    rank = {name: index for index, name in enumerate(SLOWEST)}
    items.sort(key=lambda item: rank.get(item.module.__name__.rsplit(".", 1)[-1], len(SLOWEST)))
