"""With ZooKeeper SIGSTOPped, each command an operator runs ends within one
session timeout plus a second in all, whatever runs beside it in the same
directory; zklock -n and -w within their own bounds, saying the time they
took; and a holder reads its own entry from the mount's tables once the
silence is declared (docs/SPEC.md, "When ZooKeeper is away, or the daemon
stops").  Each row's time goes to the figures."""

import os
import re
import time

import pytest

import harness
from harness import SLOW, lockdir, spawn, take
from test_outage import fig, run as timed

TIMEOUT = 2.0
# Holds the lock file argv[1], told of a loss rather than ended, until killed.
TELL_HOLD = r'''
import fcntl, sys, time
f = open(sys.argv[1], "a+")
fcntl.ioctl(f, 0x5a06)              # ZKLFS_IOC_TELL (abi/zklockfs.h)
fcntl.flock(f, fcntl.LOCK_EX)
time.sleep(600)
'''
LATE = 0.25 * SLOW


ROWS = ["ls-lockdir", "stat-revalidated", "ls-plain", "ls-l-plain",
        "flock-n-lockfile", "flock-w-lockfile", "zklock-n-behind-mkdir",
        "zklock-w-behind-mkdir", "zklock-n-behind-mkdir-into-a-file", "mkdirs", "ten-at-once", "holder-reads-its-own",
        "lockfile-held-here"]


@pytest.mark.parametrize("row", ROWS)
def test_each_command_ends_within_its_bound(mount, zk, zklock, request, scratch, row):
    lf = row.endswith("lockfile") or row == "lockfile-held-here"
    zkl = "zklock" in row
    m = mount(session_timeout=int((6.0 if zkl else TIMEOUT) * 1000),
              opts=("lockfiles",) if lf else ())
    d = lockdir(m)
    held = []
    beside = []
    if lf:
        f = os.path.join(d, "job")
        open(f, "w").close()
    if row == "lockfile-held-here":
        # a holder that handles a loss itself (ZKLFS_IOC_TELL): its
        # descriptor stays open through the silence
        held = [harness.spawn([harness.PY, "-c", TELL_HOLD, f])]
        harness.wait_for(lambda: os.getxattr(f, "user.zklockfs.queue").count(b"\n") == 1,
                         5, "the lock file held")
        time.sleep(1.5)             # the kernel's entry cache times out
    elif row in ("ls-lockdir", "holder-reads-its-own"):
        held = [take(d, "h%d" % i, harness.SHARED) for i in range(3)]
    elif row in ("ls-plain", "ls-l-plain"):
        for i in range(4):
            os.mkdir(os.path.join(d, "sub%d" % i))
    elif row == "stat-revalidated":
        os.mkdir(os.path.join(d, "sub"))
        os.stat(os.path.join(d, "sub"))
        time.sleep(1.5)             # the kernel's entry cache times out
    zk.suspend()
    try:
        if "behind-mkdir" in row:
            beside = [spawn(["mkdir", os.path.join(d, "beside")])]
            time.sleep(0.3)
        t0 = time.monotonic()
        if row == "ls-lockdir":
            rc, out, took = timed(["ls", d])
        elif row == "stat-revalidated":
            rc, out, took = timed(["stat", os.path.join(d, "sub")])
        elif row == "ls-plain":
            rc, out, took = timed(["ls", d])
        elif row == "ls-l-plain":
            rc, out, took = timed(["ls", "-l", d])
        elif row == "flock-n-lockfile":
            rc, out, took = timed(["flock", "-n", f, "true"])
        elif row == "flock-w-lockfile":
            rc, out, took = timed(["flock", "-w", "1", f, "true"])
        elif row == "zklock-n-behind-mkdir":
            rc, out, took = timed([zklock, "-n", os.path.join(d, "x"), "true"])
        elif row == "zklock-w-behind-mkdir":
            rc, out, took = timed([zklock, "-w", "1", os.path.join(d, "x"), "true"])
        elif row == "zklock-n-behind-mkdir-into-a-file":
            # stdout and stderr a file, as under cron: nothing to stand in
            log = os.path.join(scratch, "log")
            rc, _, took = timed(["sh", "-c", '"$1" -n "$2" true >"$3" 2>&1', "-", zklock,
                                 os.path.join(d, "x"), log])
            with open(log) as lf:
                out = lf.read()
        elif row == "holder-reads-its-own":
            # once the mount has declared the silence (it logs it), a
            # holder's entry is read from the mount's tables: by path
            # (stat, its state xattr) and through its descriptor, at once
            harness.wait_for(lambda: harness.log_has(m, "nothing heard from ZooKeeper"),
                             TIMEOUT + 1.0 + LATE, "the mount to declare the silence")
            t0 = time.monotonic()
            e = os.path.join(d, held[0].entry)
            script = "stat %s >/dev/null && getfattr --absolute-names -n user.zklockfs.state --only-values %s" % (e, e)
            rc, out, took = timed(["sh", "-c", script])
            ans = held[0].cmd("getxattr user.zklockfs.state")
            out += " / by descriptor: " + ans
            assert rc == 0 and ans.startswith("ok "), out
        elif row == "lockfile-held-here":
            # what the mount has open is looked up from its tables, and a
            # try fails at once once the silence is declared
            harness.wait_for(lambda: harness.log_has(m, "nothing heard from ZooKeeper"),
                             TIMEOUT + 1.0 + LATE, "the mount to declare the silence")
            t0 = time.monotonic()
            rc, out, took = timed(["stat", "-c", "%F", f])
            assert rc == 0 and out.startswith("regular"), out
            rc, out, took = timed(["flock", "-n", f, "true"])
            assert rc != 0 and "Connection timed out" in out, out
            took = time.monotonic() - t0
            assert took <= 0.5 + LATE, took
        elif row == "mkdirs":
            ps = [spawn(["mkdir", os.path.join(d, "m%d" % i)]) for i in range(5)]
            for p in ps:
                p.wait(60)
            rc, out, took = 0, "", time.monotonic() - t0
        elif row == "ten-at-once":
            ps = [spawn(["ls", "-l", d]) for i in range(4)]
            ps += [spawn(["mkdir", os.path.join(d, "n%d" % i)]) for i in range(3)]
            ps += [spawn([zklock, "-n", os.path.join(d, "z%d" % i), "true"]) for i in range(3)]
            for p in ps:
                p.wait(60)
            rc, out, took = 0, "", time.monotonic() - t0
        took = time.monotonic() - t0
        for p in beside:
            p.wait(60)
        tb = time.monotonic() - t0
    finally:
        zk.resume()
    for h in held:
        if isinstance(h, harness.Locker):
            h.release()
        else:
            h.kill()
            h.wait(10)
    fig(request, "%s: %.2f s (beside %.2f s) rc %s %s" % (row, took, tb, rc, out.strip()[:200]))
    if zkl:
        bound = 1.0 if "-n-" in row else 2.0
        assert took <= bound + LATE, "%s took %.2f s" % (row, took)
        said = float(re.search(r"within ([0-9.]+) s", out).group(1))
        assert took - 0.3 <= said <= took, (said, took, out)
    else:
        assert took <= TIMEOUT + 1.0 + LATE, "%s took %.2f s" % (row, took)
