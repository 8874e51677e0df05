#!/usr/bin/env python3
"""make nemesis: SECONDS of random faults against three "hosts" that mount
one ZooKeeper, while clients on each take the same locks in every way the
product offers; then the checker's verdict (checker.py), which reads only
the history the clients, the fencing resource and this runner logged.

    run.py [--seconds N] [--seed S] [--keep]

This is the first step of the suite: one fault at a time, one server, and
each host's network a loopback proxy (tests/integration/faultproxy.py: a
partition is a proxy that stops forwarding and keeps both sockets open,
never a reset).  The faults: a host cut off, ZooKeeper paused (SIGSTOP),
a daemon paused, a daemon killed (kill -9, then mounted again), ZooKeeper
killed and restarted.  Each heals after 2 to 25 s (the session timeout is
10 s).  The seed and each fault are printed; a run is replayed by its seed
as far as the real world allows (the faults' kinds, targets, lengths and
gaps come from it; the clients' timing does not).

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

import faultproxy                  # noqa: E402
import mounts                      # noqa: E402
import zkserver                    # noqa: E402

SESSION_MS = 10000
BOUND = 10.0            # liveness: a lock is held again within the session timeout + this
LONGEST_SECTION = 30.0  # client.py
ROOT = "/nemesis"


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


class Host:
    def __init__(self, i, zk, logdir):
        self.name = "h%d" % i
        self.proxy = faultproxy.FaultProxy(zk.host, zk.port).start()
        connect = self.proxy.hostport + ROOT
        self.plain = mounts.Mount(zk, ROOT, logdir, session_timeout=SESSION_MS,
                                  connect=connect, label=self.name + "-plain")
        self.files = mounts.Mount(zk, ROOT, logdir, session_timeout=SESSION_MS,
                                  opts=("lockfiles",), connect=connect,
                                  label=self.name + "-files")
        self.plain.start()
        self.files.start()

    def tag(self, m):
        return "%s/%s" % (self.name, "plain" if m is self.plain else "files")


def start_clients(hosts, work, seed, sock):
    zklock = mounts.zklock_binary()
    procs = []
    env = dict(os.environ, ZKLOCK=zklock)
    for h in hosts:
        p, f = h.plain.path, h.files.path
        for kind, lock, name, tag in (("zklock", os.path.join(p, "L1"), "L1", h.tag(h.plain)),
                                      ("raw", os.path.join(p, "L1"), "L1", h.tag(h.plain)),
                                      ("reader", os.path.join(p, "L1"), "L1", h.tag(h.plain)),
                                      ("flock", os.path.join(f, "f", "job.lock"), "job",
                                       h.tag(h.files)),
                                      ("fencer", os.path.join(p, "L2"), "L2", h.tag(h.plain))):
            client = "%s-%s" % (kind, h.name)
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


class Faults:
    """One fault at a time (run_one()): injected, then healed."""

    KINDS = ("partition", "zk-pause", "daemon-pause", "daemon-kill", "zk-kill")

    def __init__(self, rng, zk, hosts, hist):
        self.rng, self.zk, self.hosts, self.hist = rng, zk, hosts, hist

    @staticmethod
    def kill_daemon(m):
        """kill -9 the daemon of @m and clear its dead mount."""
        m.kill(signal.SIGKILL)
        m.proc.wait(30)
        mounts.fusermount(m.path, lazy=True)

    def run_one(self, deadline):
        kind = self.rng.choice(self.KINDS)
        h = self.rng.choice(self.hosts)
        m = self.rng.choice((h.plain, h.files))
        length = self.rng.uniform(2, 25)
        gap = self.rng.uniform(1, 5)
        target = {"partition": h.name, "zk-pause": "zk", "zk-kill": "zk"}.get(kind, h.tag(m))
        inject, heal = {        # each kind: how it starts, how it heals
            "partition": (h.proxy.blackhole, h.proxy.heal),
            "zk-pause": (self.zk.suspend, self.zk.resume),
            "daemon-pause": (lambda: os.kill(m.pid, signal.SIGSTOP),
                             lambda: os.kill(m.pid, signal.SIGCONT)),
            "daemon-kill": (lambda: self.kill_daemon(m), m.start),
            "zk-kill": (self.zk.kill9, self.zk.restart),
        }[kind]
        t0 = time.monotonic()
        say("%.1f s: %s of %s for %.1f s" % (t0 - self.start, kind, target, length))
        inject()
        time.sleep(min(length, max(0.0, deadline - time.monotonic())))
        heal()
        healed = time.monotonic()
        self.hist.add(ev="fault", t=t0, kind=kind, target=target, until=healed)
        if kind in ("daemon-pause", "daemon-kill"):
            # a daemon stopped or gone ends no one: its holders run on
            # (docs/SPEC.md); a killed one's until their section ends
            self.hist.add(ev="frozen", t=t0, host=h.tag(m),
                          until=healed + (LONGEST_SECTION if kind == "daemon-kill" else 0))
        time.sleep(gap)
        return healed


def leftovers(zk, hist):
    """Entries left in ZooKeeper once every mount is gone."""
    c = zk.client()
    try:
        for lock in ("L1", "L2", "f/job.lock"):
            for kid in c.get_children(ROOT + "/" + lock):
                hist.add(ev="leftover", what="entry %s/%s/%s" % (ROOT, lock, kid))
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the run's directory")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 1 << 31)
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="zklockfs-nemesis-")
    say("seed %d, %.0f s, history in %s" % (seed, a.seconds, work))
    hist = History(os.path.join(work, "runner.jsonl"))
    stop = threading.Event()
    threading.Thread(target=watch_stalls, args=(hist, stop), daemon=True).start()
    zk = zkserver.ZooKeeperServer(os.path.join(work, "zk"))
    hosts, procs, resource, status = [], [], None, 1
    try:
        zk.start()
        hosts = [Host(i, zk, work) for i in (1, 2, 3)]
        for d in ("L1", "L2"):
            os.mkdir(os.path.join(hosts[0].plain.path, d))
        os.mkdir(os.path.join(hosts[0].files.path, "f"))
        open(os.path.join(hosts[0].files.path, "f", "job.lock"), "w").close()
        sock = os.path.join(work, "resource.sock")
        resource = subprocess.Popen([sys.executable, os.path.join(HERE, "resource.py"), sock,
                                     os.path.join(work, "resource.jsonl")],
                                    start_new_session=True)
        while not os.path.exists(sock):
            time.sleep(0.01)
        procs = start_clients(hosts, work, seed, sock)
        faults = Faults(rng, zk, hosts, hist)
        faults.start = time.monotonic()
        deadline = faults.start + a.seconds
        last_heal = faults.start
        while time.monotonic() < deadline:
            last_heal = faults.run_one(deadline)
        # liveness: everything healed, the clients go on for the session
        # timeout and the bound, and each lock must be held again
        time.sleep(max(0.0, last_heal + SESSION_MS / 1000.0 + BOUND + 2 - time.monotonic()))
        hist.add(ev="end", session_timeout=SESSION_MS / 1000.0, bound=BOUND)
        for p in procs:
            stop_group(p)
        procs = []
        for h in hosts:
            for m in (h.plain, h.files):
                try:
                    rc = m.umount()
                except AssertionError as e:
                    rc = str(e)
                if rc != 0:
                    hist.add(ev="leftover", what="%s: the daemon ended with %s"
                             % (h.tag(m), rc))
                if mounts.mount_entry(m.path):
                    hist.add(ev="leftover", what="%s: still mounted" % h.tag(m))
                if mounts.sanitizer_report(m.logpath):
                    hist.add(ev="leftover", what="%s: a sanitizer report" % h.tag(m))
        leftovers(zk, hist)
        stop.set()
        r = subprocess.run([sys.executable, os.path.join(HERE, "checker.py"), work])
        status = r.returncode
    finally:
        stop.set()
        for p in procs:
            stop_group(p)
        if resource is not None:
            stop_group(resource)
        for h in hosts:
            for m in (h.plain, h.files):
                m.cleanup()
            h.proxy.stop()
        zk.stop()
        if status == 0 and not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            say("history kept in %s" % work)
    return status


if __name__ == "__main__":
    sys.exit(main())
