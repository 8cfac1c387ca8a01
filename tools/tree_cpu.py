"""The CPU seconds of a command and every process it starts, those reparented away included (a command's JVM outlives
its Python parent, so `time` misses it): this process becomes their subreaper and reaps them all.

    python tools/tree_cpu.py segment-lake sync --source-id ... --input ... --lake ...
"""
import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36

ctypes.CDLL("libc.so.6").prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
started = time.monotonic()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL if os.environ.get("QUIET") else None)
while True:  # the orphans, reparented to this process
    try:
        os.wait()
    except ChildProcessError:
        break
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"rc={code} wall={time.monotonic() - started:.1f}s cpu={used.ru_utime + used.ru_stime:.1f}s "
      f"(user {used.ru_utime:.1f} sys {used.ru_stime:.1f})", file=sys.stderr)
