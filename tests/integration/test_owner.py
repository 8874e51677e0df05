"""Who owns a lock (docs/SPEC.md, "Taking and giving back a lock"): the
open file description that took it, never a thread or a process. A new
entry always queues, whoever asks: a second open by the thread that holds
the lock, two tasks of one thread pool, two threads; only dup(2), fork(2)
and a passed descriptor share a hold (test_locking.py). A process that
waits behind its own entry is told in the daemon's log and marked by
`zklock --list`."""

import concurrent.futures
import os
import subprocess
import threading

import pytest

from harness import (GRANT_TIMEOUT, NOT_GRANTED_WAIT, SHARED, WRITE, entries,
                     lock_state, lockdir, log_has, start_waiter, take, wait_for)


def reopen(h, d, name, flags):
    """A second open of lock `d` by the thread of locker `h`: the answer."""
    return h.cmd("open %d %s" % (flags, os.path.join(d, name).encode().hex()))


@pytest.mark.parametrize("held,asked", [(WRITE, WRITE), (WRITE, SHARED),
                                        (SHARED, WRITE)],
                         ids=["exclusive-exclusive", "exclusive-shared",
                              "shared-exclusive"])
def test_second_open_by_the_holding_thread_queues(mount, held, asked):
    """The thread that holds a lock opens it again: a new entry that queues
    behind its own, as a second descriptor's flock does on a local file
    (O_NONBLOCK: EAGAIN, and nothing is left), never the held entry handed
    out again, never EDEADLK."""
    m = mount()
    d = lockdir(m)
    h = take(d, "a", held)
    assert reopen(h, d, "b", asked | os.O_NONBLOCK) == "error EAGAIN"
    wait_for(lambda: entries(d) == [h.entry], GRANT_TIMEOUT, "no second entry")
    assert lock_state(os.path.join(d, h.entry)) == "held"
    h.release()


def test_shared_over_shared_by_the_same_thread_is_a_second_reader(mount):
    """Two shared opens exclude nobody: the second is a reader of its own,
    granted beside the first, and each entry goes with its descriptor."""
    m = mount()
    d = lockdir(m)
    h = take(d, "a", SHARED)
    ans = reopen(h, d, "b", SHARED)
    assert ans.startswith("ok "), ans
    wait_for(lambda: len(entries(d)) == 2, GRANT_TIMEOUT, "two entries")
    h.ok("close %s" % ans.split()[1])
    wait_for(lambda: entries(d) == [h.entry], GRANT_TIMEOUT, "the second to go")
    h.release()


@pytest.mark.parametrize("workers", [1, 4])
def test_pool_tasks_exclude_each_other(mount, workers):
    """A pool runs unrelated tasks on one OS thread: task 1 takes the lock
    and hands its descriptor back, task 2 (on the same thread with one
    worker) must wait until that descriptor is closed."""
    m = mount()
    d = lockdir(m)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        fd = pool.submit(os.open, os.path.join(d, "t1"), WRITE).result(GRANT_TIMEOUT)
        second = pool.submit(os.open, os.path.join(d, "t2"), WRITE)
        try:
            with pytest.raises(concurrent.futures.TimeoutError):
                second.result(NOT_GRANTED_WAIT)
        finally:
            os.close(fd)
        fd2 = second.result(GRANT_TIMEOUT)
        assert lock_state(fd2) == "held"
        os.close(fd2)


def test_a_process_waiting_behind_itself_is_told_and_marked(mount, zklock):
    """One process holds the lock through one descriptor and opens it again
    from another thread: that open waits (as locally) until the first is
    closed; the daemon logs one notice naming the process, and zklock
    --list marks the waiter "waiting-self"."""
    m = mount()
    d = lockdir(m)
    fd = os.open(os.path.join(d, "first"), WRITE)
    got = []
    t = threading.Thread(target=lambda: got.append(
        os.open(os.path.join(d, "second"), WRITE)))
    t.start()
    try:
        wait_for(lambda: len(entries(d)) == 2, GRANT_TIMEOUT, "the second entry")
        wait_for(lambda: log_has(m, r"process %d waits for \S+ behind its own "
                                    r"entry" % os.getpid()),
                 GRANT_TIMEOUT, "the notice")
        out = subprocess.run([zklock, "--list", d], capture_output=True,
                             text=True, timeout=GRANT_TIMEOUT)
        rows = [line.split() for line in out.stdout.splitlines()[1:]]
        assert [r[1] for r in rows] == ["held", "waiting-self"], out.stdout
        assert not got, "the second open did not wait"
    finally:
        os.close(fd)
    t.join(GRANT_TIMEOUT)
    assert got and lock_state(got[0]) == "held"
    os.close(got[0])


def test_waiters_of_other_processes_are_not_marked(mount, zklock):
    """Only a waiter whose own process holds ahead of it is marked."""
    m = mount()
    d = lockdir(m)
    h = take(d, "a")
    w = start_waiter(d, "w")
    out = subprocess.run([zklock, "--list", d], capture_output=True, text=True,
                         timeout=GRANT_TIMEOUT)
    assert [r.split()[1] for r in out.stdout.splitlines()[1:]] == \
        ["held", "waiting"], out.stdout
    assert not log_has(m, r"behind its own entry")
    h.release()
    w.wait_granted()
    w.release()
