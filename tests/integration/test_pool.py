"""The default mount's ZooKeeper sessions: one at rest, more (up to 8)
while locks in different directories wait behind one session's pace, given
back once idle, and never while anything of a lock lives on them: an entry
held or waiting keeps its session, so the server never drops it under its
holder, and nothing is left behind."""

import os
import sys
import time

from harness import kill9, spawn, start_waiter, take, tcp_peers, wait_for

METRICS = "user.zklockfs.metrics"
SESSION_MS = 2000       # the session timeout, the least idle time there is
IDLE_MS = 2000          # -o sessions_idle: an idle extra session closes then
LOAD = 16               # processes, each cycling a lock of its own
HELD = 6                # locks held while the load stops

# one process: open(O_CREAT) and close() in its own lock, as fast as it can
CYCLER = r"""
import os, sys
d = sys.argv[1]
while True:
    os.close(os.open(os.path.join(d, "w"), os.O_CREAT | os.O_WRONLY))
"""


def figures(m):
    """zklockfs_sessions and the opened/closed counters, from the metrics."""
    text = os.getxattr(m.path, METRICS).decode()
    out = {}
    for line in text.splitlines():
        for name in ("sessions", "sessions_opened_total", "sessions_closed_total"):
            if line.startswith("zklockfs_%s " % name):
                out[name] = int(line.split()[1])
    return out


def open_sessions(m):
    return figures(m)["sessions"]


def load(m, n):
    """n cyclers in directories c0..c<n-1>; their Popen objects."""
    procs = []
    for i in range(n):
        d = m.p("c%d" % i)
        os.makedirs(d, exist_ok=True)
        procs.append(spawn([sys.executable, "-c", CYCLER, d]))
    return procs


def stop(procs):
    for p in procs:
        kill9(p)


def no_entries_left(zkc, root, dirs):
    left = {d: zkc.get_children(root + "/" + d) for d in dirs}
    return {d: kids for d, kids in left.items() if kids}


def test_one_session_at_rest(mount, zk):
    m = mount()
    os.makedirs(m.p("a"))
    os.close(os.open(m.p("a/w"), os.O_CREAT | os.O_WRONLY))
    assert open_sessions(m) == 1
    assert len(tcp_peers(m.pid, zk.port)) == 1


def test_grows_under_load_and_shrinks_when_idle(mount, zk, zkc):
    m = mount(opts=["sessions_idle=%d" % IDLE_MS], session_timeout=SESSION_MS)
    procs = load(m, LOAD)
    wait_for(lambda: open_sessions(m) >= 4, 60, "at least 4 sessions under load")
    wait_for(lambda: len(tcp_peers(m.pid, zk.port)) >= 4, 10,
             "at least 4 connections under load")
    stop(procs)
    wait_for(lambda: open_sessions(m) == 1, 30, "back to one session once idle")
    wait_for(lambda: len(tcp_peers(m.pid, zk.port)) == 1, 10, "one connection")
    f = figures(m)
    assert f["sessions_closed_total"] == f["sessions_opened_total"] - 1
    # every cycler was killed between an open and a close, at worst: its
    # entry went with its close; none is left on a closed session
    assert no_entries_left(zkc, m.root, ["c%d" % i for i in range(LOAD)]) == {}
    # and the pool grows again
    procs = load(m, LOAD)
    wait_for(lambda: open_sessions(m) >= 2, 60, "a second session, again")
    stop(procs)


def test_session_holding_or_waiting_is_kept(mount, zk, zkc):
    a = mount(opts=["sessions_idle=%d" % IDLE_MS], session_timeout=SESSION_MS)
    b = mount()
    procs = load(a, LOAD)
    wait_for(lambda: open_sessions(a) >= 4, 60, "at least 4 sessions under load")
    # locks taken while the pool is wide: spread over its sessions
    holders = []
    for i in range(HELD):
        os.makedirs(a.p("h%d" % i))
        holders.append(take(a.p("h%d" % i), "me"))
    os.makedirs(b.p("w"))
    blocker = take(b.p("w"), "first")
    waiter = start_waiter(a.p("w"), "second")
    stop(procs)

    def owners():
        paths = ["%s/h%d/%s" % (a.root, i, holders[i].entry) for i in range(HELD)]
        paths.append("%s/w/%s" % (a.root, waiter.entry))
        stats = [zkc.exists(p) for p in paths]
        assert all(stats), "an entry went with its session: %r" % [
            p for p, s in zip(paths, stats) if not s]
        return {s.ephemeralOwner for s in stats}

    # the pool gives back every session but those with an entry (and the
    # first one, which it always keeps)
    seen = []
    try:
        wait_for(lambda: seen.append((figures(a), len(owners()))) or
                 open_sessions(a) <= len(owners()) + 1, 30,
                 "only the sessions with entries left open")
    except AssertionError as e:
        raise AssertionError("%s; last seen (figures, owners): %r" % (e, seen[-1]))
    # and keeps them: no entry ends while three idle times pass
    time.sleep(3 * IDLE_MS / 1000)
    assert len(owners()) <= open_sessions(a) <= len(owners()) + 1
    for h in holders:
        assert h.alive(), "%r ended" % h
    waiter.assert_waiting(0.1)
    blocker.release()
    waiter.wait_granted()
    for h in holders + [waiter]:
        h.release()
    wait_for(lambda: open_sessions(a) == 1, 30, "one session once all is let go")
    dirs = ["h%d" % i for i in range(HELD)] + ["w"] + ["c%d" % i for i in range(LOAD)]
    assert no_entries_left(zkc, a.root, dirs) == {}


def test_fixed_sessions_never_close(mount, zk):
    m = mount(opts=["sessions=3", "sessions_idle=%d" % IDLE_MS], session_timeout=SESSION_MS)
    wait_for(lambda: len(tcp_peers(m.pid, zk.port)) == 3, 5, "3 connections")
    procs = load(m, 4)
    wait_for(lambda: figures(m)["sessions_opened_total"] == 3, 5, "3 opened")
    stop(procs)
    time.sleep(3 * IDLE_MS / 1000)
    assert open_sessions(m) == 3 and figures(m)["sessions_opened_total"] == 3
    assert len(tcp_peers(m.pid, zk.port)) == 3
