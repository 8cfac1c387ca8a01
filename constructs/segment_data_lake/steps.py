"""The lake's EMR steps: each command line built by one function from the contract's prefixes, and the step that
carries it (a scheduled sync or compaction, or a replay)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import segment_lake_contract as contract

from .sources import SegmentSource

# A scheduled sync that finds the source's previous one still running leaves the work to the next tick; a compaction
# (whose cluster may start while a sync runs) and a replay wait for the sync's lock, in minutes.
LOCK_BEHAVIOUR = {
    "sync": ("--if-busy", "skip"),
    "compact": ("--wait-for-lock", "120"),
    "replay": ("--wait-for-lock", "180"),
}
# the commands that read the raw events, and take their source's naming and reporting options
READS_RAW_EVENTS = ("sync", "replay")


def step_command(command: str, source: SegmentSource, bucket_name: str, region: str,
                 workspace_id: str | None = None) -> list[str]:
    """The ``segment-lake`` command line of ``command`` (``sync``, ``compact`` or ``replay``) for ``source``, on the
    lake in ``bucket_name``: its raw events under the contract's raw prefix, the naming options every step of the
    source shares, and how it meets a busy source; ``workspace_id`` goes into a sync's or replay's reports."""
    bucket = f"s3://{bucket_name}/"
    args = [command, "--source-id", source.source_id, "--source-slug", source.slug]
    if command in READS_RAW_EVENTS:
        args += ["--input", f"{bucket}{contract.RAW_PREFIX}{source.source_id}/"]
    args += ["--lake", bucket, "--glue-database", source.database, "--date-partition", source.date_partition,
             "--catalog", "glue", "--aws-region", region]
    if source.table_prefix:
        args += ["--table-prefix", source.table_prefix]
    if command in READS_RAW_EVENTS:
        args += ["--workspace-id", workspace_id] if workspace_id else []
        args += ["--partition-projection"] if source.partition_projection else []
    # a compaction of Iceberg tables runs Iceberg's procedures: its session opens with Iceberg too
    args += ["--table-format", source.table_format] if source.table_format != "parquet" else []
    hidden = command in READS_RAW_EVENTS and source.iceberg_partitioning != "keys"
    args += ["--iceberg-partitioning", source.iceberg_partitioning] if hidden else []
    return [*args, *LOCK_BEHAVIOUR[command]]


def step(command: str, source: SegmentSource, jar: str, args: Sequence[str],
         action_on_failure: str = "CONTINUE") -> dict[str, Any]:
    """One step of the lake (EMR API field names). A failed scheduled one is retried by the next tick; the cluster
    goes on with the other sources' steps."""
    return {"Name": contract.step_name(command, source.slug, source.source_id), "ActionOnFailure": action_on_failure,
            "HadoopJarStep": {"Jar": jar, "Args": list(args)}}
