"""Critical sections: processes that take one lock over and over, and the
check that no two of them ever held it at once (test_stress.py,
test_faults.py).

Each worker is a child process (harness.spawn) that, per cycle, opens
LOCKPATH with O_CREAT (O_WRONLY: exclusive, "w"; O_RDONLY: shared, "r"),
appends one line to a shared log, works, appends another, and closes:

    enter  WID T_NS      an exclusive section began (the open returned)
    exit   WID T_NS      ... ended (logged before the close that releases)
    renter WID T_NS      a shared section began
    rexit  WID T_NS      ... ended
    fail   WID T_NS ERR  an open failed (only with keep_going)

T_NS is CLOCK_MONOTONIC (time.monotonic_ns(), the clock of the test's
time.monotonic()). Each line is one write(2) with O_APPEND, so the log's
order is the order the sections really began and ended: a section's exit
line is written before the close that lets the next holder in, whose enter
line is written after its open returned. An exclusive section reads a
counter file, sleeps a little (to widen any race) and writes it back + 1:
an overlap would lose an update.

check() reads the log in order and fails at the first line where an
exclusive section overlaps another section of any kind; it also fails when
the counter disagrees with the number of exclusive sections.
"""

import collections
import os
import subprocess
import time

from harness import PY, spawn, wait_for

WORKER = r'''
import errno, os, sys, time
lockpath, counter, log, wid, mode, cycles, stopfile, keep_going = sys.argv[1:9]
cycles, keep_going = int(cycles), keep_going == "1"
flags = os.O_CREAT | (os.O_RDONLY if mode == "r" else os.O_WRONLY)
def log_line(what, extra=""):
    lf = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.write(lf, ("%s %s %d%s\n" % (what, wid, time.monotonic_ns(), extra)).encode())
    os.close(lf)
n = failed = 0
while (n < cycles) if cycles else (n == 0 or not os.path.exists(stopfile)):
    try:
        fd = os.open(lockpath, flags)
    except OSError as e:
        if not keep_going:
            raise
        failed += 1
        log_line("fail", " " + errno.errorcode.get(e.errno, str(e.errno)))
        time.sleep(0.05)            # pacing: not a busy loop of failures
        continue
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
    n += 1
print(n, failed)
'''

Section = collections.namedtuple("Section", "wid exclusive enter exit")
Failure = collections.namedtuple("Failure", "wid t err")


class Report:
    """What check() found: .sections (Section, in the order they began),
    .failures (Failure), .max_shared (most shared sections at once)."""

    def __init__(self, sections, failures, max_shared):
        self.sections = sections
        self.failures = failures
        self.max_shared = max_shared

    def since(self, t, prefix=""):
        """Sections that began after time.monotonic() value t, by workers
        whose id starts with prefix."""
        t_ns = int(t * 1e9)
        return [s for s in self.sections
                if s.enter > t_ns and s.wid.startswith(prefix)]


class Sections:
    """A set of workers sharing one counter, one log and one stop file, in
    the directory `scratch`."""

    def __init__(self, scratch):
        self.counter = os.path.join(scratch, "counter")
        self.log = os.path.join(scratch, "log")
        self.stopfile = os.path.join(scratch, "stop")
        with open(self.counter, "w") as f:
            f.write("0")
        open(self.log, "w").close()
        self.workers = []           # (wid, Popen)

    def start(self, lockpath, wid, mode="w", cycles=0, keep_going=False):
        """A worker doing `cycles` sections on lockpath (0: until stop(),
        at least one). keep_going: a failed open is logged ("fail") and
        tried again, instead of ending the worker with an error."""
        assert " " not in wid
        p = spawn([PY, "-c", WORKER, lockpath, self.counter, self.log, wid,
                   mode, str(cycles), self.stopfile,
                   "1" if keep_going else "0"],
                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE)
        self.workers.append((wid, p))
        return p

    def stop(self):
        """Workers started with cycles=0 end after their current section."""
        open(self.stopfile, "w").close()

    def wait(self, timeout):
        """Wait (at most `timeout` s in all) for every worker to exit 0;
        return {wid: (sections done, failed opens)}."""
        deadline = time.monotonic() + timeout
        done, problems = {}, []
        for wid, p in self.workers:
            try:
                out, err = p.communicate(
                    timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                problems.append("worker %s did not finish within %.0f s"
                                % (wid, timeout))
                continue
            if p.returncode != 0:
                problems.append("worker %s exited %d: %s" % (
                    wid, p.returncode, err.decode("utf-8", "replace")[-500:]))
                continue
            n, failed = out.split()
            done[wid] = (int(n), int(failed))
        assert not problems, "\n".join(problems)
        return done

    def lines(self):
        """The log's complete lines so far, split into fields."""
        with open(self.log) as f:
            text = f.read()
        return [ln.split() for ln in text.split("\n")[:-1]]

    def check(self, finished=True):
        """Walk the log in order: fail at the first line where an exclusive
        section overlaps another one (exclusive or shared); with finished
        (every worker has exited), also when a section never ended or the
        counter does not equal the number of exclusive sections. Returns a
        Report."""
        writer, readers = None, {}
        sections, failures, max_shared = [], [], 0
        last_end = None
        for k, f in enumerate(self.lines(), 1):
            what, wid, t = f[0], f[1], int(f[2])
            where = "log line %d %r" % (k, " ".join(f))
            if what == "fail":
                failures.append(Failure(wid, t, f[3]))
            elif what == "enter":
                assert writer is None and not readers, \
                    "%s: an exclusive section began while %s held the " \
                    "lock" % (where, writer and writer[0] or sorted(readers))
                assert last_end is None or t > last_end, \
                    "%s: began before the previous section ended" % where
                writer = (wid, t)
            elif what == "exit":
                assert writer is not None and writer[0] == wid, \
                    "%s: exit without its enter (holder: %r)" % (where, writer)
                sections.append(Section(wid, True, writer[1], t))
                last_end = t
                writer = None
            elif what == "renter":
                assert writer is None, "%s: a shared section began while " \
                    "%s held the lock exclusively" % (where, writer[0])
                assert wid not in readers, where
                readers[wid] = t
                max_shared = max(max_shared, len(readers))
            elif what == "rexit":
                assert wid in readers, "%s: rexit without renter" % where
                sections.append(Section(wid, False, readers.pop(wid), t))
                last_end = max(last_end or t, t)
            else:
                raise AssertionError("%s: what is this?" % where)
        if finished:
            assert writer is None and not readers, \
                "sections that never ended: %r %r" % (writer, readers)
            with open(self.counter) as f:
                total = int(f.read())
            excl = sum(1 for s in sections if s.exclusive)
            assert total == excl, "lost updates: the counter is %d after " \
                "%d exclusive sections" % (total, excl)
        sections.sort(key=lambda s: s.enter)
        return Report(sections, failures, max_shared)

    def wait_sections(self, want, timeout, since=None, what="sections"):
        """Wait until want(report) is true, report being check(finished=
        False) of the log so far (so an overlap fails at once); return
        that report."""
        got = []

        def cond():
            r = self.check(finished=False)
            got[:] = [r]
            return want(r)
        try:
            wait_for(cond, timeout, what, interval=0.05)
        except AssertionError as e:
            if not got or "timed out" not in str(e):
                raise
            r = got[0]
            raise AssertionError(
                "%s; %d sections in all%s, failed opens: %r" % (
                    e, len(r.sections),
                    "" if since is None else
                    ", %d begun after t=%.2f" % (len(r.since(since)), since),
                    r.failures[:10]))
        return got[0]
