"""Calls on a bounded pool: all run, at most N at once (one: here, in order); the first failure, or an exception here
while they run, stops the calls not begun and is raised."""
import signal
import threading
import time

import pytest

from segment_lake.pool import run_all

pytestmark = [pytest.mark.fast]


def test_every_call_runs_with_at_most_the_pool_at_once():
    running, most, done, lock = [0], [0], [], threading.Lock()

    def call(number):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
            done.append(number)

    run_all(call, [(n,) for n in range(40)], 4, "test")
    assert sorted(done) == list(range(40)) and most[0] == 4
    run_all(call, [], 4, "test")  # nothing to do: no pool


def test_the_first_failure_is_raised_and_the_calls_not_begun_are_not_made():
    begun = []

    def call(number):
        begun.append(number)
        if number == 3:
            raise ValueError("refused 3")
        time.sleep(0.05)

    with pytest.raises(ValueError, match="refused 3"):
        run_all(call, [(n,) for n in range(200)], 2, "test")
    assert 3 in begun and len(begun) < 10


def test_one_thread_runs_the_calls_here_in_order():
    here, order = threading.current_thread(), []
    run_all(lambda number: order.append((number, threading.current_thread() is here)), [(n,) for n in range(5)], 1,
            "test")
    assert order == [(n, True) for n in range(5)]


def test_an_exception_here_while_waiting_stops_the_calls_not_begun():
    """As pyspark's KeyboardInterrupt does on Ctrl-C: raised on this thread, not in a call."""
    begun = []

    def call(number):
        begun.append(number)
        time.sleep(0.05)

    def interrupt(_signum, _frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.12)
        with pytest.raises(KeyboardInterrupt):
            run_all(call, [(n,) for n in range(200)], 2, "test")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(begun) < 20
