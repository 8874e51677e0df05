"""Mutual exclusion under load: several "hosts" (mounts), many processes."""

import os
import time

import pytest

from harness import wait_for, wait_no_entries
from sections import Sections


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_mutual_exclusion_three_hosts_twelve_processes(mount, scratch):
    hosts, per_host, cycles = 3, 4, 5
    ms = [mount() for _ in range(hosts)]
    os.mkdir(ms[0].p("L"))
    dirs = [m.p("L") for m in ms]
    for d in dirs:
        wait_for(lambda: os.path.isdir(d), 5, "%s to appear" % d)
    secs = Sections(scratch)
    for h in range(hosts):
        for j in range(per_host):
            wid = "h%dp%d" % (h, j)
            secs.start(os.path.join(dirs[h], "w" + wid), wid, "w", cycles)
    done = secs.wait(150)
    report = secs.check()
    total = hosts * per_host * cycles
    assert sorted(done.values()) == [(cycles, 0)] * (hosts * per_host), done
    assert len(report.sections) == total, \
        "%d sections logged, %d done" % (len(report.sections), total)
    for d in dirs:
        wait_no_entries(d)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_readers_and_writers_two_hosts(mount, scratch):
    cycles = 5
    ms = [mount(), mount()]
    os.mkdir(ms[0].p("RW"))
    dirs = [m.p("RW") for m in ms]
    for d in dirs:
        wait_for(lambda: os.path.isdir(d), 5, "%s to appear" % d)
    secs = Sections(scratch)
    for h in range(2):
        for j in range(3):
            secs.start(os.path.join(dirs[h], "w"), "h%dw%d" % (h, j), "w",
                       cycles)
            secs.start(os.path.join(dirs[h], "r"), "h%dr%d" % (h, j), "r",
                       cycles)
    secs.wait(150)
    report = secs.check()        # no writer overlaps anything
    assert len(report.sections) == 12 * cycles
    assert sum(s.exclusive for s in report.sections) == 6 * cycles
    assert report.max_shared >= 2, "shared locks never overlapped"
    for d in dirs:
        wait_no_entries(d)


def test_interrupts_racing_grants_never_leave_a_holder_without_entry(mount, zkc):
    """Signals hit waiters while a release grants them all (shared): each
    open either fails with EINTR or holds the lock with its entry in place;
    an interrupt that comes after the grant leaves the grant alone."""
    import signal
    from harness import SHARED, lockdir, start_waiter, take
    m = mount()
    d = lockdir(m)
    zl = m.zkpath("L")
    bad = []
    for rnd in range(3):
        h = take(d, "h%d" % rnd)
        rs = [start_waiter(d, "r%d_%d" % (rnd, i), SHARED, handle=["SIGUSR1"])
              for i in range(20)]
        h.release()
        t_end = time.monotonic() + 0.3
        while time.monotonic() < t_end:
            for r in rs:
                try:
                    os.kill(r.pid, signal.SIGUSR1)
                except ProcessLookupError:
                    pass
        for r in rs:
            r.poll_status(10)
        kids = set(zkc.get_children(zl))
        bad += [(rnd, r.entry) for r in rs if r.state == "granted" and r.entry not in kids]
        assert all(r.state in ("granted", "error EINTR") for r in rs), [r.state for r in rs]
        for r in rs:
            if r.state == "granted":
                r.release()
        wait_no_entries(d)
    assert not bad, "granted without an entry: %r" % bad
