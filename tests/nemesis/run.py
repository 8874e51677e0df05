#!/usr/bin/env python3
"""make nemesis: SECONDS of random faults, several at once, against three
ZooKeeper servers forming one ensemble and three "hosts" that mount it,
while clients on each host take the same locks in every way the product
offers; then the checker's verdict (checker.py), which reads only the
history the clients, the fencing resource and this runner logged.

    run.py [--seconds N] [--seed S] [--at-once K] [--load N] [--keep]

Each server and host is a network namespace of its own (cluster.py,
net.py).  The faults (Faults.draw): a host cut off from every server; a
server cut off from everyone (any, the leader, or the one a host is
connected to); a partition that leaves one server with some hosts and the
other two with the rest; a slow link (h3's delay proxy); a daemon paused
(SIGSTOP) or killed (kill -9, then mounted again); a server paused or
killed and started again (any, the leader, or a host's).  Up to K (3) at
once; each heals after 2 to 25 s (the session timeout is 10 s), the next
comes 1 to 8 s later.  The seed and each fault are printed; a run is
replayed by its seed as far as the real world allows (the faults' kinds,
targets, lengths and gaps come from it; which server leads, and the
clients' timing, do not).

With --load N, each host also runs N busy clients (client.py busy), the
i-th of every host on a lock of its own, W<i>: sections of 1-20 ms one
after another, so the mount's session pool grows (many locks wait behind
one session's pace) while the faults land; the runner logs the sessions
each plain mount opened and closed.

The last line is the checker's verdict; the exit status is 0 only when it
found no overlap, fencing violation or leftover.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import cluster                     # noqa: E402
import mounts                      # noqa: E402

SESSION_MS = 10000
BOUND = 10.0            # liveness: a lock is held again within the session timeout + this
LONGEST_SECTION = 30.0  # client.py


class History:
    """The runner's own events (runner.jsonl), from any thread."""

    def __init__(self, path):
        self.f = open(path, "a")
        self.mu = threading.Lock()

    def add(self, **e):
        e.setdefault("t", time.monotonic())
        with self.mu:
            self.f.write(json.dumps(e) + "\n")
            self.f.flush()


def say(msg):
    print("nemesis: " + msg, flush=True)


def watch_stalls(hist, stop):
    """Log the runner's own stalls: a 10 ms sleep that took far longer."""
    last = time.monotonic()
    while not stop.is_set():
        time.sleep(0.01)
        now = time.monotonic()
        if now - last > 0.25:
            hist.add(ev="stall", t=last, gap=now - last)
        last = now


def busy_locks(load):
    return ["W%d" % i for i in range(load)]


def start_clients(hosts, work, seed, sock, load=0):
    zklock = mounts.zklock_binary()
    procs = []
    env = dict(os.environ, ZKLOCK=zklock)
    for h in hosts:
        p, f = h.plain.path, h.files.path
        busy = [("busy", os.path.join(p, w), w, h.tag(h.plain)) for w in busy_locks(load)]
        for kind, lock, name, tag in [("zklock", os.path.join(p, "L1"), "L1", h.tag(h.plain)),
                                      ("raw", os.path.join(p, "L1"), "L1", h.tag(h.plain)),
                                      ("reader", os.path.join(p, "L1"), "L1", h.tag(h.plain)),
                                      ("flock", os.path.join(f, "f", "job.lock"), "job",
                                       h.tag(h.files)),
                                      ("fencer", os.path.join(p, "L2"), "L2",
                                       h.tag(h.plain))] + busy:
            client = "%s-%s" % (kind if kind != "busy" else "busy" + name, h.name)
            argv = [sys.executable, os.path.join(HERE, "client.py"), kind,
                    os.path.join(work, client + ".jsonl"), client, tag, lock, name,
                    str(seed * 100 + len(procs))] + ([sock] if kind == "fencer" else [])
            procs.append(subprocess.Popen(argv, env=env, cwd="/", stdin=subprocess.DEVNULL,
                                          start_new_session=True))
    return procs


def stop_group(p):
    """End a process and everything it started (its own session), by its pid."""
    try:
        os.killpg(p.pid, signal.SIGCONT)
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        pass


class Fault:
    """One fault: what it claims (no two faults hold one process at once),
    how it starts and heals, and what the history learns of it."""

    def __init__(self, kind, target, length, claims, inject, heal, cut_hosts=(),
                 frozen=None):
        self.kind, self.target, self.length = kind, target, length
        self.claims = set(claims)
        self.inject, self.heal = inject, heal
        self.cut_hosts = list(cut_hosts)   # hosts cut off from a quorum by it
        self.frozen = frozen               # the mount whose daemon it stops or kills


class Faults:
    """Faults at random, up to MAX_AT_ONCE of them at a time, each healed by
    a thread of its own after its length."""

    KINDS = ("host-cut", "server-cut", "partition", "slow-link", "daemon-pause",
             "daemon-kill", "zk-pause", "zk-kill")
    MAX_AT_ONCE = 3

    def __init__(self, rng, cluster, hist, at_once):
        self.rng, self.c, self.hist, self.at_once = rng, cluster, hist, at_once
        self.active = []
        self.mu = threading.Condition()
        self.start = time.monotonic()
        self.last_heal = self.start

    def pick_server(self):
        """A server: any, the leader, or the one a host is connected to
        (the draws are the seed's; who leads is the world's)."""
        how, m, h = self.rng.choice(("any", "leader", "holder's")), \
            self.rng.choice(self.c.servers), self.rng.choice(self.c.hosts)
        found = self.c.leader() if how == "leader" else \
            self.c.server_of(h) if how == "holder's" else m
        return how, found or m

    def draw(self):
        rng, c = self.rng, self.c
        kind = rng.choice(self.KINDS)
        length = rng.uniform(2, 25)
        h = rng.choice(c.hosts)
        m = rng.choice((h.plain, h.files))
        how, s = self.pick_server()
        net = c.net
        name = "%s@%.3f" % (kind, time.monotonic())

        def cut(target, pairs, cut_hosts=()):
            """A fault of the network: @pairs of nodes hear nothing of each other."""
            return Fault(kind, target, length, (), lambda: net.set_cut(name, pairs),
                         lambda: net.set_cut(name, ()), cut_hosts=cut_hosts)
        if kind == "host-cut":
            return cut(h.name, {(h.node, x.node) for x in c.servers}, [h.name])
        if kind == "server-cut":
            return cut("%s (%s)" % (s.node, how),
                       {(s.node, x) for x in net.nodes if x not in ("ctl", s.node)})
        if kind == "partition":
            # one server alone with some hosts, the other two with the rest:
            # a minority partition for the first hosts, a majority for the rest
            minority = [x for x in c.hosts if rng.random() < 0.5]
            side = {s.node} | {x.node for x in minority}
            return cut("{%s} | rest" % ",".join(sorted(side)),
                       {(a, b) for a in side for b in net.nodes if b != "ctl" and b not in side},
                       [x.name for x in minority])
        if kind == "slow-link":
            delay = rng.uniform(0.2, 3.0)
            return Fault(kind, "%s, %.2f s each way" % (cluster.SLOW_HOST, delay), length,
                         ("delay",), lambda: c.set_delay(delay), lambda: c.set_delay(0))
        if kind == "daemon-pause":
            return Fault(kind, h.tag(m), length, (h.tag(m),),
                         lambda: os.kill(m.pid, signal.SIGSTOP),
                         lambda: os.kill(m.pid, signal.SIGCONT), frozen=(h.tag(m), 0))
        if kind == "daemon-kill":
            # a killed daemon's holders run on until their section ends
            return Fault(kind, h.tag(m), length, (h.tag(m),), lambda: kill_daemon(m),
                         lambda: remount(m), frozen=(h.tag(m), LONGEST_SECTION))
        if kind == "zk-pause":
            return Fault(kind, "%s (%s)" % (s.node, how), length, (s.node,),
                         lambda: os.kill(s.pid, signal.SIGSTOP),
                         lambda: os.kill(s.pid, signal.SIGCONT))
        return Fault(kind, "%s (%s)" % (s.node, how), length, (s.node,),
                     lambda: c.kill_server(s), lambda: c.start_server(s))

    def claimed(self):
        return set().union(*(f.claims for f in self.active)) if self.active else set()

    def run(self, f, deadline):
        t0 = time.monotonic()
        say("%.1f s: %s of %s for %.1f s" % (t0 - self.start, f.kind, f.target, f.length))
        try:
            f.inject()
            time.sleep(min(f.length, max(0.0, deadline - time.monotonic())))
            if f.heal() is False:
                self.hist.add(ev="leftover", what="%s of %s: did not heal"
                              % (f.kind, f.target))
        except Exception as e:          # the run goes on; the verdict fails
            self.hist.add(ev="leftover", what="%s of %s: %r" % (f.kind, f.target, e))
        healed = time.monotonic()
        self.hist.add(ev="fault", t=t0, kind=f.kind, target=f.target, until=healed)
        for h in f.cut_hosts:
            self.hist.add(ev="cut", t=t0, host=h, until=healed)
        if f.frozen:
            # a daemon stopped or gone ends no one (docs/SPEC.md)
            self.hist.add(ev="frozen", t=t0, host=f.frozen[0], until=healed + f.frozen[1])
        with self.mu:
            self.active.remove(f)
            self.last_heal = max(self.last_heal, healed)
            self.mu.notify_all()

    def run_all(self, deadline):
        """Faults until @deadline, then wait until each has healed."""
        while time.monotonic() < deadline:
            f = self.draw()
            gap = self.rng.uniform(1, 8)
            with self.mu:
                while len(self.active) >= self.at_once and time.monotonic() < deadline:
                    self.mu.wait(0.2)
                if time.monotonic() >= deadline:
                    break
                if f.claims & self.claimed():
                    f = None        # that process is already taken: skip this draw
                else:
                    self.active.append(f)
            if f is not None:
                threading.Thread(target=self.run, args=(f, deadline), daemon=True).start()
            time.sleep(min(gap, max(0.0, deadline - time.monotonic())))
        with self.mu:
            while self.active:
                self.mu.wait(1)
        return self.last_heal


def kill_daemon(m):
    """kill -9 the daemon of @m and clear its dead mount."""
    m.kill(signal.SIGKILL)
    m.proc.wait(30)
    mounts.fusermount(m.path, lazy=True)


def remount(m, timeout=120.0):
    """Mount @m again, as its service manager would: a daemon that finds no
    server within its session timeout exits 1, and is started again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return m.start()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            mounts.fusermount(m.path, lazy=True)
            time.sleep(1)


def leftovers(c, hist, load):
    """Entries left in ZooKeeper once every mount is gone."""
    with c.client() as zk:
        for lock in ["L1", "L2", "f/job.lock"] + busy_locks(load):
            for kid in zk.get_children(cluster.ROOT + "/" + lock):
                hist.add(ev="leftover", what="entry %s/%s/%s" % (cluster.ROOT, lock, kid))


def pools(c, hist):
    """The sessions each plain mount opened and closed (its pool)."""
    for h in c.hosts:
        try:
            text = os.getxattr(h.plain.path, "user.zklockfs.metrics").decode()
        except OSError:
            continue
        got = dict(line.split() for line in text.splitlines()
                   if line.startswith(("zklockfs_sessions_opened_total ",
                                       "zklockfs_sessions_closed_total ")))
        hist.add(ev="pool", host=h.tag(h.plain),
                 opened=int(got.get("zklockfs_sessions_opened_total", 0)),
                 closed=int(got.get("zklockfs_sessions_closed_total", 0)))
        say("%s: sessions opened %s, closed %s" % (
            h.tag(h.plain), got.get("zklockfs_sessions_opened_total", "?"),
            got.get("zklockfs_sessions_closed_total", "?")))


def unmount_all(c, hist):
    for h in c.hosts:
        for m in (h.plain, h.files):
            try:
                rc = m.umount()
            except AssertionError as e:
                rc = str(e)
            if rc != 0:
                hist.add(ev="leftover", what="%s: the daemon ended with %s" % (h.tag(m), rc))
            if mounts.mount_entry(m.path):
                hist.add(ev="leftover", what="%s: still mounted" % h.tag(m))
            if mounts.sanitizer_report(m.logpath):
                hist.add(ev="leftover", what="%s: a sanitizer report" % h.tag(m))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--at-once", type=int, default=Faults.MAX_AT_ONCE,
                    help="most faults at one time (1: one at a time)")
    ap.add_argument("--load", type=int, default=0,
                    help="busy clients per host, each cycling a lock of its own")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory")
    a = ap.parse_args()
    for sig in (signal.SIGTERM, signal.SIGHUP):     # end as ^C does: clean up first
        signal.signal(sig, lambda n, _f: sys.exit(128 + n))
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 1 << 31)
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="zklockfs-nemesis-")
    say("seed %d, %.0f s, up to %d faults at once, history in %s"
        % (seed, a.seconds, a.at_once, work))
    hist = History(os.path.join(work, "runner.jsonl"))
    stop = threading.Event()
    c = cluster.Cluster(work, work, SESSION_MS)
    procs, resource, status = [], None, 1
    try:
        c.start()       # the runner's thread is in the ctl namespace from here
        threading.Thread(target=watch_stalls, args=(hist, stop), daemon=True).start()
        h1 = c.hosts[0]
        for d in ["L1", "L2"] + busy_locks(a.load):
            os.mkdir(os.path.join(h1.plain.path, d))
        os.mkdir(os.path.join(h1.files.path, "f"))
        open(os.path.join(h1.files.path, "f", "job.lock"), "w").close()
        sock = os.path.join(work, "resource.sock")
        resource = subprocess.Popen([sys.executable, os.path.join(HERE, "resource.py"), sock,
                                     os.path.join(work, "resource.jsonl")],
                                    start_new_session=True)
        while not os.path.exists(sock):
            time.sleep(0.01)
        procs = start_clients(c.hosts, work, seed, sock, a.load)
        faults = Faults(rng, c, hist, a.at_once)
        last_heal = faults.run_all(faults.start + a.seconds)
        # liveness: everything healed, the clients go on for the session
        # timeout and the bound, and each lock must be held again
        time.sleep(max(0.0, last_heal + SESSION_MS / 1000.0 + BOUND + 2 - time.monotonic()))
        hist.add(ev="end", session_timeout=SESSION_MS / 1000.0, bound=BOUND)
        for p in procs:
            stop_group(p)
        procs = []
        pools(c, hist)
        unmount_all(c, hist)
        leftovers(c, hist, a.load)
        stop.set()
        r = subprocess.run([sys.executable, os.path.join(HERE, "checker.py"), work])
        status = r.returncode
    finally:
        stop.set()
        for p in procs:
            stop_group(p)
        if resource is not None:
            stop_group(resource)
        c.stop()
        if status == 0 and not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            say("history kept in %s" % work)
    return status


if __name__ == "__main__":
    sys.exit(main())
