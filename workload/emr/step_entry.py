"""What a sync step runs: ``spark-submit <release>/step_entry.py sync ...`` (see run-sync.sh).

spark-submit puts EMR's pyspark on the path; run-sync.sh puts this release's ``site/`` (the sync and
boto3) on PYTHONPATH, and the cluster's spark-env runs it with python3.11.
"""
from segment_lake.cli import main

raise SystemExit(main())
