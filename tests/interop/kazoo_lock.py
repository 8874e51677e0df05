#!/usr/bin/python3
"""One kazoo lock contender, driven over stdin/stdout, for
tests/integration/test_interop.py. Run with Debian's /usr/bin/python3
(python3-kazoo).

    kazoo_lock.py [--kind lock|read|write|compat] [--identifier ID] HOSTS PATH

--kind: lock   kazoo.recipe.lock.Lock (nodes <uuid>__lock__N; sees only
               __lock__ contenders)
        write  WriteLock (__lock__; also waits for __rlock__ readers)
        read   ReadLock (__rlock__; waits only for __lock__ writers)
        compat Lock whose nodes are <uuid>-lock-N and which also reads
               -lock- contenders (extra_lock_patterns), so that it, Curator's
               InterProcessMutex and zklockfs (naming=curator) all share one
               queue. Curator orders children by the number after "lock-"
               and would misplace kazoo's own <uuid>__lock__N nodes.

Prints "ready" once connected. Commands, one a line on stdin:
  acquire SECONDS   -> "acquired" | "timeout" | "error ..."  (asynchronous:
                       other commands are answered while it waits)
  release           -> "released" | "error ..."
  contenders        -> "contenders <JSON list>"  (Lock.contenders(): the data
                       of each contender's node, in kazoo's order)
  node              -> "node <our node name or ->"
  cycle N PAUSE_MS LOGFILE TAG
                    -> N times: acquire, append "enter TAG\\n" to LOGFILE,
                       sleep, append "exit TAG\\n", release; then "cycled N"
  quit (or EOF)     -> stops the client (its session and nodes go), "bye"
Exit status 3 (with "error kazoo ...") when kazoo cannot be imported.
"""

import argparse
import json
import logging
import os
import queue
import sys
import threading
import time

_out_lock = threading.Lock()


def say(line):
    with _out_lock:
        sys.stdout.write(line.replace("\n", " ") + "\n")
        sys.stdout.flush()


try:
    from kazoo.client import KazooClient
    from kazoo.exceptions import LockTimeout
    from kazoo.recipe.lock import Lock, ReadLock, WriteLock
except ImportError as e:          # the test turns this into a SKIP
    say("error kazoo not importable: %s" % e)
    sys.exit(3)


class CompatLock(Lock):
    _NODE_NAME = "-lock-"


def append(path, line):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="lock",
                    choices=("lock", "read", "write", "compat"))
    ap.add_argument("--identifier", default=None)
    ap.add_argument("hosts")
    ap.add_argument("path")
    a = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    client = KazooClient(hosts=a.hosts, timeout=10.0)
    try:
        client.start(timeout=20)
    except Exception as e:
        say("error not connected to %s: %s" % (a.hosts, e))
        sys.exit(4)
    ident = a.identifier or "kazoo-%d" % os.getpid()
    if a.kind == "compat":
        lock = CompatLock(client, a.path, ident, extra_lock_patterns=("-lock-",))
    else:
        cls = {"lock": Lock, "read": ReadLock, "write": WriteLock}[a.kind]
        lock = cls(client, a.path, ident)

    # acquire/release/cycle run in order on one worker thread
    jobs = queue.Queue()

    def worker():
        while True:
            job = jobs.get()
            if job is None:
                return
            try:
                job()
            except Exception as e:
                say("error %s: %s" % (type(e).__name__, e))

    t = threading.Thread(target=worker, daemon=True)
    t.start()

    def do_acquire(seconds):
        try:
            ok = lock.acquire(timeout=seconds)
        except LockTimeout:
            ok = False
        say("acquired" if ok else "timeout")

    def do_release():
        lock.release()
        say("released")

    def do_cycle(n, pause, logfile, tag):
        for i in range(n):
            if not lock.acquire(timeout=60):
                say("error cycle %d: acquire timed out" % i)
                return
            try:
                append(logfile, "enter %s\n" % tag)
                time.sleep(pause)
                append(logfile, "exit %s\n" % tag)
            finally:
                lock.release()
        say("cycled %d" % n)

    say("ready")
    for raw in sys.stdin:
        w = raw.split()
        if not w:
            continue
        c = w[0]
        try:
            if c == "acquire":
                s = float(w[1])
                jobs.put(lambda s=s: do_acquire(s))
            elif c == "release":
                jobs.put(do_release)
            elif c == "contenders":
                say("contenders " + json.dumps(lock.contenders()))
            elif c == "node":
                say("node %s" % (lock.node or "-"))
            elif c == "cycle":
                args = (int(w[1]), int(w[2]) / 1000.0, w[3], w[4])
                jobs.put(lambda args=args: do_cycle(*args))
            elif c == "quit":
                break
            else:
                say("error unknown command %s" % c)
        except Exception as e:
            say("error %s: %s" % (type(e).__name__, e))
    try:
        client.stop()
        client.close()
    except Exception:
        pass
    say("bye")
    os._exit(0)


if __name__ == "__main__":
    main()
