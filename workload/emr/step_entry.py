"""What an EMR step runs: ``spark-submit /opt/segment-lake/step_entry.py sync ...``.

spark-submit puts EMR's pyspark on the path; the sync itself was installed for
python3.11 by the bootstrap action.
"""
from segment_lake.cli import main

raise SystemExit(main())
