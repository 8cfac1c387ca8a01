"""Calls that each wait on a round trip (a Glue request, an S3 copy), run on a bounded pool of threads."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

# calls that each wait on a round trip, at once, where a caller says no other number: Glue's tables (at 40 ms a call,
# 1,000 tables' new hours are registered in about 3 s; one after another, 40 s) and Iceberg's (iceberg_tables.threads)
ROUND_TRIP_THREADS = 16


def run_all(call: Callable, arguments: Iterable[tuple], threads: int, name: str) -> None:
    """``call(*each)`` for each of ``arguments``, ``threads`` at a time (one: on this thread, in order). The first
    failure cancels the calls not begun (a run that fails does not wait for a thousand more to fail too) and is raised
    once the running ones end; so does an exception on this thread while it waits (pyspark's KeyboardInterrupt)."""
    arguments = list(arguments)
    if threads == 1 or not arguments:
        for each in arguments:
            call(*each)
        return
    with ThreadPoolExecutor(min(threads, len(arguments)), thread_name_prefix=name) as pool:
        futures = [pool.submit(call, *each) for each in arguments]
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        failed = next((future for future in futures if future in done and future.exception()), None)
        if failed:
            pool.shutdown(wait=True, cancel_futures=True)
            raise failed.exception()
