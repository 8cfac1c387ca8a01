"""Whether this process runs on a node of an EMR cluster, and which: EMR writes the cluster's id on every node."""
from __future__ import annotations

import json
import os

EMR_INFO = "/mnt/var/lib/info/job-flow.json"


def on_emr() -> bool:
    return os.path.exists(EMR_INFO)


def emr_cluster_id() -> str | None:
    """The cluster's id, when running there (else $EMR_CLUSTER_ID, if set)."""
    try:
        with open(EMR_INFO) as info:
            return json.load(info).get("jobFlowId")
    except (OSError, ValueError):
        return os.environ.get("EMR_CLUSTER_ID")
