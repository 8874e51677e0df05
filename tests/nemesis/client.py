#!/usr/bin/env python3
"""One nemesis client: takes one lock, in one of the ways the product
offers, again and again until killed, and logs each critical section's
heartbeats (tests/nemesis/checker.py says the format) to its own file
outside the mount.

    client.py KIND LOG CLIENT HOST LOCKPATH LOCKNAME SEED [RESOURCE]

KIND:
  zklock   `zklock -w 30 LOCKPATH beat.py ...`: the command beats (class zklock)
  flock    `flock LOCKPATH beat.py ...` on a lockfiles mount (class end)
  raw      open(LOCKPATH/NAME, O_CREAT|O_WRONLY), beats while it polls its
           descriptor: POLLERR ends the section at once (class tell)
  reader   the same, O_RDONLY: a shared holder (class tell)
  fencer   the raw holder, sending each beat as a write to the fencing
           resource (a unix datagram socket RESOURCE) with its token
  busy     the raw holder, with sections of 1-20 ms one after another: a
           busy host's load, many locks cycled at once (run.py --load)

A section lasts 50-500 ms, or (two in five) 5-30 s: past the session
timeout, so that faults land inside sections, as they do in a leader's.  Errors (the mount gone, ZooKeeper
silent) end the section; the client waits a moment and goes on.
"""

import fcntl
import json
import os
import random
import select
import socket
import subprocess
import sys
import time

ZKLFS_IOC_TOKEN = 0x80405a02
ZKLFS_IOC_TELL = 0x5a06
HERE = os.path.dirname(os.path.abspath(__file__))


def length(rng):
    return rng.uniform(5, 30) if rng.random() < 0.4 else rng.uniform(0.05, 0.5)


def beat(log, client, sec, lock, mode, cls, host):
    e = dict(ev="beat", t=time.monotonic(), client=client, sec=sec, lock=lock, mode=mode,
             cls=cls, host=host)
    log.write(json.dumps(e) + "\n")
    log.flush()


def token_of(fd):
    buf = bytearray(64)
    fcntl.ioctl(fd, ZKLFS_IOC_TOKEN, buf)
    return [int(x) for x in bytes(buf).split(b"\0", 1)[0].split()]


def raw_section(log, a, sec, rng, mode, resource=None, dur=None):
    """One section through an entry's descriptor, of @dur seconds (None:
    length()): (ok)."""
    flags = (os.O_WRONLY if mode == "x" else os.O_RDONLY) | os.O_CREAT
    try:
        fd = os.open(os.path.join(a.lockpath, a.client), flags, 0o644)
    except OSError:
        return False
    sock = None
    try:
        token = token_of(fd) if resource else None
        if resource:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.settimeout(2)
        p = select.poll()
        p.register(fd, select.POLLPRI)
        until = time.monotonic() + (length(rng) if dur is None else dur)
        while time.monotonic() < until:
            if any(ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL)
                   for _, ev in p.poll(0)):
                return True             # lost: the section ends at its last beat
            beat(log, a.client, sec, a.lockname, mode, "tell", a.host)
            if sock is not None:
                sock.sendto(json.dumps(dict(client=a.client, sec=sec, lock=a.lockname,
                                            token=token)).encode(), resource)
            time.sleep(0.005)
        return True
    except OSError:
        return False
    finally:
        if sock is not None:
            sock.close()
        os.close(fd)


def command_section(log, a, sec, rng, argv):
    dur = length(rng)
    beat_argv = [sys.executable, os.path.join(HERE, "beat.py"), a.log, a.client, str(sec),
                 a.lockname, "x", a.cls, a.host, "%.3f" % dur]
    r = subprocess.run(argv + beat_argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


class Args:
    pass


def main():
    a = Args()
    a.kind, a.log, a.client, a.host, a.lockpath, a.lockname, seed = sys.argv[1:8]
    resource = sys.argv[8] if len(sys.argv) > 8 else None
    rng = random.Random(int(seed))
    a.cls = {"zklock": "zklock", "flock": "end"}.get(a.kind, "tell")
    zklock = os.environ.get("ZKLOCK", "zklock")
    sec = 0
    with open(a.log, "a") as log:
        while True:
            sec += 1
            if a.kind == "zklock":
                ok = command_section(log, a, sec, rng, [zklock, "-w", "30", a.lockpath])
            elif a.kind == "flock":
                ok = command_section(log, a, sec, rng, ["flock", "-w", "30", a.lockpath])
            elif a.kind == "busy":
                ok = raw_section(log, a, sec, rng, "x", dur=rng.uniform(0.001, 0.02))
            else:
                ok = raw_section(log, a, sec, rng, "s" if a.kind == "reader" else "x",
                                 resource if a.kind == "fencer" else None)
            if a.kind != "busy" or not ok:
                time.sleep(rng.uniform(0, 0.05) if ok else 0.5)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
