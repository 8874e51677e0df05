"""Mutual exclusion under load: several "hosts" (mounts), many processes."""

import os
import subprocess
import time

import pytest

from harness import PY, spawn, wait_for, wait_no_entries

WORKER = r'''
import os, sys, time
lockpath, counter, log, wid, n, mode = sys.argv[1:7]
n = int(n)
flags = os.O_CREAT | (os.O_RDONLY if mode == "r" else os.O_WRONLY)
def log_line(what):
    lf = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.write(lf, ("%s %s %d\n" % (what, wid, time.monotonic_ns())).encode())
    os.close(lf)
for i in range(n):
    fd = os.open(lockpath, flags)
    if mode == "r":
        log_line("renter")
        time.sleep(0.03)
        log_line("rexit")
    else:
        log_line("enter")
        with open(counter) as f:
            v = int(f.read())
        time.sleep(0.02)
        with open(counter, "w") as f:
            f.write(str(v + 1))
        log_line("exit")
    os.close(fd)
'''


def _counter_and_log(scratch):
    """A counter file holding 0 and an empty enter/exit log, in @scratch."""
    counter = os.path.join(scratch, "counter")
    log = os.path.join(scratch, "log")
    with open(counter, "w") as f:
        f.write("0")
    open(log, "w").close()
    return counter, log


def _run_workers(specs, deadline_s):
    """specs: list of argv tails; returns after all exit (or fails)."""
    procs = [spawn([PY, "-c", WORKER] + list(a), stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE) for a in specs]
    deadline = time.monotonic() + deadline_s
    failures = []
    for p, a in zip(procs, specs):
        try:
            _, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            failures.append("worker %s did not finish in time" % a[3])
            continue
        if p.returncode != 0:
            failures.append("worker %s rc=%d: %s" % (a[3], p.returncode,
                                                     err.decode()[-500:]))
    assert not failures, "\n".join(failures)


def _parse(log):
    with open(log) as f:
        return [(w, i, int(t)) for w, i, t in (line.split() for line in f)]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_mutual_exclusion_three_hosts_twelve_processes(mount, scratch):
    hosts, per_host, cycles = 3, 4, 5
    ms = [mount() for _ in range(hosts)]
    os.mkdir(ms[0].p("L"))
    dirs = [m.p("L") for m in ms]
    for d in dirs:
        wait_for(lambda: os.path.isdir(d), 5, "%s to appear" % d)
    counter, log = _counter_and_log(scratch)

    specs = []
    for h in range(hosts):
        for j in range(per_host):
            wid = "h%dp%d" % (h, j)
            specs.append([os.path.join(dirs[h], "w" + wid), counter, log, wid,
                          str(cycles), "w"])
    _run_workers(specs, 150)

    total = hosts * per_host * cycles
    with open(counter) as f:
        assert int(f.read()) == total, "lost updates: mutual exclusion broken"
    events = _parse(log)
    assert len(events) == 2 * total
    last_exit = None
    for k in range(0, len(events), 2):
        (w1, i1, t1), (w2, i2, t2) = events[k], events[k + 1]
        assert (w1, w2) == ("enter", "exit") and i1 == i2, \
            "overlap at log line %d: %r %r" % (k + 1, events[k], events[k + 1])
        assert t1 < t2
        if last_exit is not None:
            assert t1 > last_exit, "enter at line %d before previous exit" % (k + 1)
        last_exit = t2
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
    counter, log = _counter_and_log(scratch)
    specs = []
    for h in range(2):
        for j in range(3):
            specs.append([os.path.join(dirs[h], "w"), counter, log,
                          "h%dw%d" % (h, j), str(cycles), "w"])
            specs.append([os.path.join(dirs[h], "r"), counter, log,
                          "h%dr%d" % (h, j), str(cycles), "r"])
    _run_workers(specs, 150)

    with open(counter) as f:
        assert int(f.read()) == 6 * cycles
    events = _parse(log)
    assert len(events) == 2 * 12 * cycles
    # intervals per (worker, cycle)
    open_, intervals = {}, []
    for what, wid, t in events:
        if what in ("enter", "renter"):
            open_[wid] = t
        else:
            intervals.append((open_.pop(wid), t, wid, what == "exit"))
    assert not open_
    intervals.sort()
    max_readers = 0
    for i, (s1, e1, w1, x1) in enumerate(intervals):
        concurrent = 1
        for s2, e2, w2, x2 in intervals[i + 1:]:
            if s2 >= e1:
                break
            assert not (x1 or x2), "%s and %s overlap and one is a writer" % (w1, w2)
            concurrent += 1
        max_readers = max(max_readers, concurrent)
    assert max_readers >= 2, "shared locks never overlapped"
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
