"""``python -m segment_data_lake_scan cdktf.out``: see the package's docstring."""
from . import main

raise SystemExit(main())
