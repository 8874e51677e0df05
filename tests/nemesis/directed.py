#!/usr/bin/env python3
"""Directed scenarios on the nemesis's cluster: one fault at one chosen
moment, where the random runs found a rule that must hold.

    directed.py SCENARIO      prints its figures; exit 0 when the rule held

It enters network namespaces of its own (cluster.py), so a test runs it
as a process of its own (test_directed.py).

minority-follower
    A host's daemon knows only one server, a follower, and holds a lock;
    another host waits for it.  The follower and the host are cut off
    from the rest: the follower goes on serving reads until it notices
    its leader is gone, syncLimit ticks later (5 s here), while the
    leader, which alone expires sessions, stopped hearing of the host's
    session at the cut.  The holder must be told its lock is lost before
    the other host is granted it: a ping the follower answers alone is
    not a sign of life.
"""

import os
import select
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import cluster                     # noqa: E402
import mounts                      # noqa: E402

SESSION_MS = 10000


def say(msg):
    print("directed: " + msg, flush=True)


def minority_follower(c, logdir):
    leader = c.leader()
    follower = next(m for m in c.servers if m is not leader)
    h1, h2 = c.hosts
    m = mounts.Mount(None, cluster.ROOT, logdir, session_timeout=SESSION_MS,
                     connect=follower.hostport + cluster.ROOT, wrap=c.net.wrap(h1.node),
                     label="h1-follower").start()
    try:
        os.mkdir(m.p("L"))
        fd = os.open(m.p("L", "a"), os.O_CREAT | os.O_WRONLY, 0o644)
        times = {}

        def waiter():
            fd2 = os.open(h2.plain.p("L", "b"), os.O_CREAT | os.O_WRONLY, 0o644)
            times["granted"] = time.monotonic()
            os.close(fd2)
        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        deadline = time.monotonic() + 20
        while len(os.listdir(m.p("L"))) < 2:     # b's entry made: it waits
            assert time.monotonic() < deadline, "the other host's entry never came"
            time.sleep(0.02)
        side = {h1.node, follower.node}
        pairs = {(a, b) for a in side for b in c.net.nodes if b != "ctl" and b not in side}
        t_cut = time.monotonic()
        c.net.set_cut("minority", pairs)
        p = select.poll()
        p.register(fd, 0)       # POLLERR|POLLHUP: lost (POLLPRI is doubt)
        ev = p.poll(4 * SESSION_MS)
        t_err = time.monotonic()
        t.join(4 * SESSION_MS / 1000.0)
        c.net.set_cut("minority", ())
        os.close(fd)
        say("leader s%d, the host's server s%d (a follower); after the cut: the holder "
            "told %.2f s, the other host granted %s" % (
                leader.myid, follower.myid, t_err - t_cut,
                "%.2f s" % (times["granted"] - t_cut) if "granted" in times else "never"))
        if not ev or not ev[0][1] & select.POLLERR:
            say("FAILED: the holder was never told (poll: %r)" % ev)
            return False
        if "granted" in times and times["granted"] <= t_err:
            say("FAILED: the holder was told %.2f s after the other host held the lock"
                % (t_err - times["granted"]))
            return False
        return "granted" in times
    finally:
        m.cleanup()


SCENARIOS = {"minority-follower": (minority_follower, dict(hosts=2, sync_limit=10))}


def main(argv):
    if len(argv) != 2 or argv[1] not in SCENARIOS:
        print("usage: directed.py %s" % "|".join(SCENARIOS), file=sys.stderr)
        return 2
    fn, kw = SCENARIOS[argv[1]]
    work = tempfile.mkdtemp(prefix="zklockfs-directed-")
    c = cluster.Cluster(work, work, SESSION_MS, **kw)
    try:
        c.start()
        ok = fn(c, work)
    finally:
        c.stop()
    say("%s: %s (logs in %s)" % (argv[1], "ok" if ok else "FAILED", work))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
