"""Running zklock(1) in the tests of the tool (test_zklock.py,
test_zklock_command.py): Run (one zklock process), zk() (one run to
completion), the entry a run made (wait_entry_of), whether a run waits in
its open(), its exit codes and time bounds, and Descendant (a process the
command started).

The tool is $ZKLOCK, else the `zklock` next to the daemon ($ZKLOCKFS, so
build/asan/zklock goes with build/asan/zklockfs), else <repo>/build/zklock.
Every zklock runs in its own session through harness.spawn(), so teardown
kills it and its command by process group; a process the command started
that a test watches is held through a pidfd (Descendant) and killed through
it at teardown, wherever it went (setsid). The autouse fixtures that do so
and that look for a sanitizer report of every run, kill_descendants and
no_sanitizer_report_from_any_zklock, act in a test module that imports them
by name, as both do.
"""

import os
import select
import signal
import subprocess
import tempfile
import time

import pytest

import harness
from harness import (SLOW, GRANT_TIMEOUT, Lines, entries, parse_entry, spawn,
                     wait_for)

EX_USAGE, EX_NOINPUT, EX_LOST = 64, 66, 75
RUN_TIMEOUT = 20 * SLOW          # bound on any zklock that should finish
# zklock(1) -w: after SECONDS of waiting it gives up; the interrupted open's
# answer and zklock's exit may take this much more on a loaded 2-core
# machine (doubled under sanitizers)
GIVE_UP = 1.0 * SLOW

def waiting_in_open(pid):
    """Whether zklock pid is asleep in an open() (its lock request: the
    FUSE request the daemon answers once the lock is granted): itself, or
    with -n or -w the child that takes the lock while it keeps the bound
    (tools/zklock/bound.h)."""
    return any(harness.asleep_in(p, harness.OPEN_SYSCALLS)
               for p in [pid] + worker_of(pid))


def worker_of(pid):
    """The children of zklock pid: with -n or -w, the zklock that takes the
    lock and runs the command (else, once it runs, the command)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def wait_waiting_in_open(r):
    wait_for(lambda: waiting_in_open(r.pid) or not r.running(), GRANT_TIMEOUT,
             "zklock %d asleep in open() (/proc/PID/syscall, stat)" % r.pid)
    assert r.running(), "zklock exited: %s" % r._stderr_now()


def no_sanitizer_report(err):
    for mk in harness.SANITIZER_MARKERS:
        assert mk not in err, "sanitizer report from zklock:\n" + err


_RUNS = []        # this test's Run objects
_DESCENDANTS = []  # this test's Descendant objects


class Descendant:
    """A process that a command started under zklock, by the pid it printed,
    held through a pidfd: the test sees it end, and teardown kills it if it
    outlived zklock, never a process that got its pid later."""

    def __init__(self, pid):
        self.pid = pid
        self.fd = os.pidfd_open(pid)
        _DESCENDANTS.append(self)

    def gone(self):
        """Whether it has ended (a pidfd polls readable then)."""
        return bool(select.select([self.fd], [], [], 0)[0])

    def kill(self):
        if self.fd >= 0:
            try:
                signal.pidfd_send_signal(self.fd, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(self.fd)
            self.fd = -1


@pytest.fixture(autouse=True)
def kill_descendants():
    """Kill what a test's command left running: it may be in another
    session (setsid), where killing zklock's process group misses it."""
    del _DESCENDANTS[:]
    yield
    for g in _DESCENDANTS:
        g.kill()
    del _DESCENDANTS[:]


@pytest.fixture(autouse=True)
def no_sanitizer_report_from_any_zklock():
    """Show the sanitizer report of a zklock whose output the test never
    collected: one that died early shows up in its test only as a missing
    line of another."""
    del _RUNS[:]
    yield
    for r in _RUNS:
        if not r._err.closed:
            assert not any(mk in r._stderr_now() for mk in harness.SANITIZER_MARKERS), \
                "sanitizer report from zklock %r:\n%s" % (r.argv, r._stderr_now())
    del _RUNS[:]


class Run:
    """A zklock process: started at once, in its own session, registered
    for teardown. stdout is a pipe read with deadlines (.lines); .finish()
    sets .rc, .out, .err and .elapsed."""

    def __init__(self, tool, *args, env=None, pass_fds=()):
        self.argv = [tool] + [str(a) for a in args]
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.t0 = time.monotonic()
        # stderr to a file: a grandchild that outlives zklock keeps no
        # pipe open that .finish() would wait on
        self._err = tempfile.TemporaryFile()
        self.proc = spawn(self.argv, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=self._err,
                          env=full_env, pass_fds=pass_fds)
        self.pid = self.proc.pid
        self.lines = Lines(self.proc.stdout)
        self.out = ""
        self.err = ""
        self.rc = None
        self.elapsed = None
        _RUNS.append(self)

    def expect_line(self, timeout=GRANT_TIMEOUT):
        line = self.lines.readline(timeout)
        assert line is not None, "zklock %r: stdout closed; stderr: %s" % (
            self.argv, self._stderr_now())
        return line

    def _stderr_now(self):
        self._err.seek(0)
        return self._err.read().decode("utf-8", "replace")

    def running(self):
        return self.proc.poll() is None

    def finish(self, timeout=RUN_TIMEOUT):
        """Wait for exit; collect output; return the exit status."""
        try:
            self.out = self.lines.rest(self.proc, timeout)
        except TimeoutError:
            raise AssertionError("zklock %r still running after %.0fs"
                                 % (self.argv, timeout))
        self.rc = self.proc.wait()
        self.elapsed = time.monotonic() - self.t0
        self.err = self._stderr_now()
        self._err.close()
        no_sanitizer_report(self.err)
        return self.rc


def zk(tool, *args, timeout=RUN_TIMEOUT, env=None, pass_fds=()):
    """Run zklock to completion: (rc, stdout, stderr); @pass_fds stay open
    in it."""
    r = Run(tool, *args, env=env, pass_fds=pass_fds)
    r.finish(timeout)
    return r.rc, r.out, r.err


def new_entries(d, before, name):
    return [e for e in entries(d) if e not in before and parse_entry(e)[0] == name]


def wait_entry_of(d, name, before=(), timeout=GRANT_TIMEOUT):
    """The one entry with NAME `name` that appeared in d (not in before)."""
    found = wait_for(lambda: new_entries(d, set(before), name), timeout,
                     "an entry for %s in %s (now %r)" % (name, d, entries(d)))
    assert len(found) == 1, found
    return found[0]
