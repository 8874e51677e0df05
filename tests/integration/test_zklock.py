"""zklock(1), the flock(1)-like tool: exit codes, -n/-w/-s, the child's
environment and descriptors, --verbose, --list, lost locks, bad input.

The tool is $ZKLOCK, else the `zklock` next to the daemon ($ZKLOCKFS, so
build/asan/zklock goes with build/asan/zklockfs), else <repo>/build/zklock.
Every zklock runs in its own session through harness.spawn(), so teardown
kills it and its command by process group; a process the command started
that a test watches is held through a pidfd (Descendant) and killed through
it at teardown, wherever it went (setsid).
"""

import contextlib
import errno
import fcntl
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import termios
import time
import uuid

import pytest

import harness
import zkclient
from harness import (lock_state, SLOW, GRANT_TIMEOUT, Lines, entries, getxattr_str, lockdir,
                     parse_entry, parse_kv, read_file, seq_of, spawn,
                     start_waiter, take, wait_for, wait_no_entries)

EX_USAGE, EX_NOINPUT, EX_LOST = 64, 66, 75
RUN_TIMEOUT = 20 * SLOW          # bound on any zklock that should finish
# zklock(1) -w: after SECONDS of waiting it gives up; the interrupted open's
# answer and zklock's exit may take this much more on a loaded 2-core
# machine (doubled under sanitizers)
GIVE_UP = 1.0 * SLOW

def waiting_in_open(pid):
    """Whether process pid is asleep in an open() (its lock request: the
    FUSE request the daemon answers once the lock is granted)."""
    return harness.asleep_in(pid, harness.OPEN_SYSCALLS)


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

    def __init__(self, tool, *args, env=None):
        self.argv = [tool] + [str(a) for a in args]
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.t0 = time.monotonic()
        # stderr to a file: a grandchild that outlives zklock keeps no
        # pipe open that .finish() would wait on
        self._err = tempfile.TemporaryFile()
        self.proc = spawn(self.argv, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=self._err,
                          env=full_env)
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


def zk(tool, *args, timeout=RUN_TIMEOUT, env=None):
    """Run zklock to completion: (rc, stdout, stderr)."""
    r = Run(tool, *args, env=env)
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


# --- exit status ----------------------------------------------------------------

def test_command_status_passes_through(mount, zklock):
    m = mount()
    d = m.p("L")
    assert zk(zklock, d, "true")[0] == 0
    assert zk(zklock, d, "sh", "-c", "exit 7")[0] == 7
    assert zk(zklock, d, "-c", "exit 3")[0] == 3
    assert zk(zklock, "-c", "exit 4", d)[0] == 4
    assert zk(zklock, "--command", "exit 5", d)[0] == 5
    # killed by a signal: 128+N, like flock(1) and shells
    assert zk(zklock, d, "sh", "-c", "kill -USR1 $$")[0] == 128 + signal.SIGUSR1
    assert zk(zklock, d, "sh", "-c", "kill -KILL $$")[0] == 128 + signal.SIGKILL
    # the command's own options are its own
    rc, out, _ = zk(zklock, d, "echo", "-n", "-s", "-w", "x")
    assert (rc, out) == (0, "-s -w x")
    wait_no_entries(d)


def test_command_not_found_or_not_executable(mount, zklock, scratch):
    m = mount()
    d = m.p("L")
    rc, _, err = zk(zklock, d, "/nonexistent/zklock-no-such-command")
    assert rc == 127
    assert "zklock-no-such-command" in err
    assert zk(zklock, d, "zklock-no-such-command-in-path")[0] == 127
    f = os.path.join(scratch, "not-executable")
    with open(f, "w") as fh:
        fh.write("#!/bin/sh\nexit 0\n")
    os.chmod(f, 0o644)
    assert zk(zklock, d, f)[0] == 126
    wait_no_entries(d)


def test_lock_is_released_when_zklock_ends(mount, zklock, scratch):
    m = mount()
    d = m.p("L")
    go = os.path.join(scratch, "go")
    r = Run(zklock, "-N", "me", d, "sh", "-c",
            'echo in; i=0; while [ ! -e "$1" ] && [ $i -lt 400 ]; do '
            'sleep 0.05; i=$((i+1)); done', "sh", go)
    assert r.expect_line() == "in"
    e = wait_entry_of(d, "me")
    assert lock_state(os.path.join(d, e)) == "held"
    assert getxattr_str(d, harness.XATTR_HOLDERS) == e
    # holder data: the daemon names zklock itself as the holder
    kv = parse_kv(read_file(os.path.join(d, e)))
    assert kv["pid"] == str(r.pid)
    open(go, "w").close()
    assert r.finish() == 0
    wait_no_entries(d)


# --- -n, -E, -w -------------------------------------------------------------------

def test_nonblock_conflict_exit_codes(mount, zklock):
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    rc, _, err = zk(zklock, "-n", d, "echo", "ran")
    assert rc == 1 and "ran" not in err
    assert zk(zklock, "-n", "-E", "9", d, "true")[0] == 9
    assert zk(zklock, "--nonblock", "--conflict-exit-code", "0", d, "false")[0] == 0
    assert zk(zklock, "-w", "0", d, "true")[0] == 1
    rc, out, err = zk(zklock, "-n", "--verbose", d, "echo", "ran")
    assert rc == 1 and out == ""
    assert "failed to get lock" in err
    assert entries(d) == [h.entry]
    h.release()
    # free again: -n takes it at once
    rc, out, _ = zk(zklock, "-n", d, "echo", "ran")
    assert (rc, out) == (0, "ran\n")
    wait_no_entries(d)


def test_timeout_gives_up_and_leaves_no_entry(mount, zklock):
    """-w SECONDS: zklock gives up after SECONDS of waiting, not before
    (counted from before it started, so its start-up only adds), and within
    GIVE_UP after (counted from when its entry was seen: its wait had begun
    by then)."""
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    # then fractions, long form, own conflict code
    for opts, w, name, rc in ((["-w", "1"], 1.0, "late", 1),
                              (["--timeout", "0.5", "-E", "42"], 0.5,
                               "later", 42)):
        r = Run(zklock, *opts, "-N", name, d, "echo", "ran")
        wait_entry_of(d, name)
        waiting_since = time.monotonic()
        assert r.finish() == rc
        ended = r.t0 + r.elapsed
        assert r.elapsed >= w - 0.01, "-w %s gave up %.2f s after zklock " \
            "started" % (w, r.elapsed)
        assert ended - waiting_since <= w + GIVE_UP, "-w %s: still waiting " \
            "%.2f s after its entry was seen (bound %.2f s)" \
            % (w, ended - waiting_since, w + GIVE_UP)
        assert r.out == ""
        assert entries(d) == [h.entry]
    h.release()
    wait_no_entries(d)


def test_timeout_holder_releases_in_time(mount, zklock):
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    r = Run(zklock, "-w", str(10 * SLOW), "-N", "patient", d, "echo", "ran")
    e = wait_entry_of(d, "patient")
    assert lock_state(os.path.join(d, e)) == "waiting"
    wait_waiting_in_open(r)
    h.release()
    assert r.finish() == 0
    assert r.out == "ran\n"
    wait_no_entries(d)


def test_signal_while_waiting_ends_the_wait(mount, zklock):
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    for sig in (signal.SIGTERM, signal.SIGINT):
        r = Run(zklock, "-N", "w", d, "echo", "ran")
        e = wait_entry_of(d, "w")
        os.kill(r.pid, sig)
        assert r.finish() == 128 + sig
        assert r.out == ""
        harness.wait_gone(d, e)
    assert entries(d) == [h.entry]
    h.release()


# --- shared -------------------------------------------------------------------------

def test_shared_holders_run_together_exclusive_waits(mount, zklock, scratch):
    m = mount()
    d = m.p("L")
    # each reader announces itself, then waits (bounded) for the other one and
    # for "go": both can only get there if both hold the lock at once
    script = ('touch "$S/in.$1"; i=0; '
              'while [ ! -e "$S/in.$2" ]; do '
              '  i=$((i+1)); [ $i -gt 300 ] && exit 9; sleep 0.05; done; '
              'echo "$ZKLOCK_MODE together"; '
              'while [ ! -e "$S/go" ]; do '
              '  i=$((i+1)); [ $i -gt 600 ] && exit 8; sleep 0.05; done; '
              'rm "$S/in.$1"')
    env = {"S": scratch}
    a = Run(zklock, "-s", "-N", "ra", d, "sh", "-c", script, "sh", "a", "b", env=env)
    b = Run(zklock, "--shared", "-N", "rb", d, "sh", "-c", script, "sh", "b", "a",
            env=env)
    assert a.expect_line() == "shared together"
    assert b.expect_line() == "shared together"
    x = Run(zklock, "-x", "-N", "wx", d, "sh", "-c",
            'ls "$S"/in.* >/dev/null 2>&1 && echo readers-left; echo exclusive',
            env=env)
    e = wait_entry_of(d, "wx")
    assert lock_state(os.path.join(d, e)) == "waiting"
    wait_waiting_in_open(x)
    open(os.path.join(scratch, "go"), "w").close()   # the readers leave
    assert a.finish() == 0
    assert b.finish() == 0
    assert x.finish() == 0
    assert x.out == "exclusive\n"
    wait_no_entries(d)


# --- the lock directory ---------------------------------------------------------------

def test_lock_directory_is_created_if_missing(mount, zklock):
    m = mount()
    d = m.p("a", "b", "c")
    rc, out, _ = zk(zklock, d + "/", "sh", "-c", 'echo "$ZKLOCK_DIR"')
    assert rc == 0
    assert out == d + "\n"
    assert os.path.isdir(d)
    # relative, from inside the mount
    r = subprocess.run([zklock, "x/y", "sh", "-c", 'echo "$ZKLOCK_DIR"'],
                       cwd=m.p("a"), capture_output=True, timeout=RUN_TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == m.p("a", "x", "y") + "\n"
    wait_no_entries(d)


def test_not_a_zklockfs_directory(mount, zklock, scratch):
    m = mount()
    rc, _, err = zk(zklock, scratch, "true")
    assert rc == EX_NOINPUT
    assert "zklockfs" in err
    # nothing is created on a file system that is not zklockfs
    rc, _, _ = zk(zklock, os.path.join(scratch, "sub", "dir"), "true")
    assert rc == EX_NOINPUT
    assert os.listdir(scratch) == []
    assert zk(zklock, "--list", scratch)[0] == EX_NOINPUT
    assert zk(zklock, "--list", m.p("missing"))[0] == EX_NOINPUT
    # an entry is not a lock directory
    os.mkdir(m.p("L"))
    h = take(m.p("L"), "h")
    assert zk(zklock, m.p("L", h.entry), "true")[0] == EX_NOINPUT
    assert zk(zklock, m.p("L", h.entry, "sub"), "true")[0] == EX_NOINPUT
    h.release()


def test_holders_growing_between_size_and_read(mount, zklock):
    """zklock reads an xattr in two calls, its size then its value. When the
    lock directory's holders were empty at the first call and a holder came
    before the second, that second call (size 0) was a size query again and
    zklock wrote past its buffer (an ASan report in the plain suite's
    sanitized run; CI caught it as a shared-lock test that hung). Another
    process takes and gives back the lock without pause meanwhile."""
    m = mount()
    d = m.p("L")
    os.mkdir(d)
    flipper = spawn([sys.executable, "-c", FLIP, os.path.join(d, "f")],
                    stdout=subprocess.PIPE)
    try:
        assert Lines(flipper.stdout).readline(GRANT_TIMEOUT) == "flipping"
        busy, runs = 0, 60 if SLOW > 1 else 120
        for _ in range(runs):
            rc, _, err = zk(zklock, "-n", "-N", "z", d, "true")
            assert rc in (0, 1), err          # 1: busy, as flock -n
            busy += rc
        assert flipper.poll() is None
    finally:
        flipper.kill()
        flipper.wait()
    print("figure: zklock -n against a lock taken and given back without "
          "pause: %d of %d found it busy" % (busy, runs))
    wait_no_entries(d)


FLIP = """
import os, sys
print("flipping", flush=True)
while True:
    os.close(os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY))
"""


def test_holders_past_the_kernels_64_kib(mount, zklock, zkc):
    """zklock proves a directory is zklockfs by its holders xattr. When the
    list passes the kernel's 64 KiB limit for an xattr value, reading it
    fails (E2BIG): zklock took that for an error and gave up (exit 66)."""
    m = mount()
    d = m.p("L")
    os.mkdir(d)
    name = m.zkpath("L") + "/" + "r" * 200 + "-read-lock-"   # another client's
    for _ in range(330):                                     # shared holders
        zkc.create(name, mode=zkclient.EPHEMERAL_SEQUENTIAL)
    with pytest.raises(OSError) as ei:
        os.getxattr(d, harness.XATTR_HOLDERS)
    assert ei.value.errno == errno.E2BIG             # so it is past 64 KiB
    rc, out, err = zk(zklock, "-s", "-N", "me", d, "echo", "in")
    assert (rc, out) == (0, "in\n"), err


# --- what the command sees ---------------------------------------------------------------

def test_child_environment(mount, zklock):
    m = mount()
    d = m.p("L")
    show = ('echo "DIR=$ZKLOCK_DIR"; echo "ENTRY=$ZKLOCK_ENTRY"; '
            'echo "TOKEN=$ZKLOCK_TOKEN"; echo "MODE=$ZKLOCK_MODE"; '
            'test -f "$ZKLOCK_ENTRY" && echo EXISTS; '
            'getfattr --only-values -n user.zklockfs.state "$ZKLOCK_ENTRY"; echo')
    for flag, mode, marker in (("-x", "exclusive", "-lock-"),
                               ("-s", "shared", "-read-lock-")):
        rc, out, err = zk(zklock, flag, "-N", "envtest", d, "sh", "-c", show)
        assert rc == 0, err
        kv = parse_kv(out.encode())
        assert kv["DIR"] == d
        assert kv["MODE"] == mode
        assert os.path.dirname(kv["ENTRY"]) == d
        name, mk, seq = parse_entry(os.path.basename(kv["ENTRY"]))
        assert (name, mk) == ("envtest", marker)
        czxid, tseq = kv["TOKEN"].split()
        assert int(czxid) > 0 and int(tseq) == seq
        assert "EXISTS" in out
        assert "held" in out
    wait_no_entries(d)


def test_default_entry_name_is_the_host_name(mount, zklock):
    m = mount()
    d = m.p("L")
    rc, out, _ = zk(zklock, d, "sh", "-c", 'basename "$ZKLOCK_ENTRY"')
    assert rc == 0
    host = os.uname().nodename
    expect = host if (host and "/" not in host
                      and not re.search(r"\d{10}$", host)) else "zklock"
    assert parse_entry(out.strip())[0] == expect


def test_child_does_not_inherit_the_lock_descriptor(mount, zklock):
    m = mount()
    d = m.p("L")
    rc, out, err = zk(zklock, d, "sh", "-c",
                      'test -e "$ZKLOCK_ENTRY" && echo HELD; '
                      'for f in /proc/$$/fd/*; do readlink "$f" || :; done')
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "HELD"
    assert not [t for t in lines[1:] if t.startswith(m.path)], lines


def test_verbose(mount, zklock):
    m = mount()
    d = m.p("L")
    rc, out, err = zk(zklock, "--verbose", d, "echo", "hi")
    assert rc == 0 and out == "hi\n"
    assert re.search(r"^zklock: getting lock took \d+\.\d{6} seconds$", err, re.M), err
    assert re.search(r"^zklock: executing echo$", err, re.M), err
    rc, _, err = zk(zklock, "--verbose", d, "-c", "true")
    assert rc == 0
    assert re.search(r"^zklock: executing true$", err, re.M), err


def test_forwards_sigterm_to_the_command(mount, zklock):
    m = mount()
    d = m.p("L")
    r = Run(zklock, "-N", "fw", d, "sh", "-c",
            'trap "echo got-term; exit 5" TERM; echo ready; '
            'i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; exit 1')
    assert r.expect_line() == "ready"
    os.kill(r.pid, signal.SIGTERM)
    assert r.finish() == 5
    assert "got-term" in r.out
    wait_no_entries(d)


def test_killed_zklock_releases_and_terminates_the_command(mount, zklock,
                                                          scratch):
    m = mount()
    d = m.p("L")
    mark = os.path.join(scratch, "got-term")
    r = Run(zklock, "-N", "k9", d, "sh", "-c",
            'trap "touch \"$1\"; exit 0" TERM; echo ready; '
            'i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done',
            "sh", mark)
    assert r.expect_line() == "ready"
    wait_entry_of(d, "k9")
    os.kill(r.pid, signal.SIGKILL)
    r.proc.wait(RUN_TIMEOUT)
    wait_no_entries(d)                   # the lock went with zklock
    wait_for(lambda: os.path.exists(mark), 5 * SLOW,
             "the command to get SIGTERM (PR_SET_PDEATHSIG)")


def _sigmask(status, field):
    for line in status.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1], 16)
    raise AssertionError("no %s in %r" % (field, status))


def test_command_gets_the_signal_state_zklock_got(mount, zklock):
    m = mount()
    d = m.p("L")
    bit = 1 << (signal.SIGINT - 1)
    rc, out, _ = zk(zklock, d, "cat", "/proc/self/status")
    assert rc == 0
    assert _sigmask(out, "SigBlk") == 0
    assert not _sigmask(out, "SigIgn") & bit
    # started with SIGINT ignored (as `cmd &` in a script does): stays so
    r = subprocess.run([zklock, d, "cat", "/proc/self/status"],
                       capture_output=True, timeout=RUN_TIMEOUT,
                       preexec_fn=lambda: (harness.default_signals(),
                                           signal.signal(signal.SIGINT,
                                                         signal.SIG_IGN)))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert _sigmask(out, "SigBlk") == 0
    assert _sigmask(out, "SigIgn") & bit


def test_stop_and_continue_while_waiting(mount, zklock):
    """zklock(1): a stop signal (Ctrl-Z) interrupts the wait (its entry
    goes); after SIGCONT zklock queues again, at the back, and runs the
    command once granted."""
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    r = Run(zklock, "-N", "stopped", d, "echo", "ran")
    e1 = wait_entry_of(d, "stopped")
    wait_waiting_in_open(r)
    os.kill(r.pid, signal.SIGSTOP)
    wait_for(lambda: harness.proc_state(r.pid) == "T", GRANT_TIMEOUT,
             "zklock to stop (state T in /proc/%d/stat)" % r.pid)
    harness.wait_gone(d, e1)        # the interrupted wait left no entry
    other = start_waiter(d, "other")   # comes while zklock is stopped
    assert harness.proc_state(r.pid) == "T" and entries(d) == [h.entry, other.entry]
    os.kill(r.pid, signal.SIGCONT)
    e2 = wait_entry_of(d, "stopped")
    assert seq_of(e2) > seq_of(other.entry), \
        "queued again, but not at the back: %r" % entries(d)
    wait_waiting_in_open(r)
    h.release()
    other.wait_granted()
    assert lock_state(os.path.join(d, e2)) == "waiting"
    other.release()
    assert r.finish() == 0 and r.out == "ran\n"
    wait_no_entries(d)


# The command: block SIGINT, say ready, report every SIGINT as (si_code, si_pid).
SIGINT_WATCHER = r"""
import signal, sys, time
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
print("ready", flush=True)
seen, end = [], time.monotonic() + 10
while time.monotonic() < end:
    i = signal.sigtimedwait({signal.SIGINT}, 0.1)
    if i:
        seen.append((i.si_code, i.si_pid))
        end = min(end, time.monotonic() + 1.0)
print("seen %r" % seen, flush=True)
sys.exit(len(seen))
"""


@contextlib.contextmanager
def on_a_terminal(argv):
    """Run argv (a shell that runs zklock) as the leader of a new session
    whose controlling terminal, a new pseudo-terminal, is its stdin. Yields
    (master, out): the terminal's other end, to type into, and the Lines of
    argv's stdout. Leaving the block normally, argv must exit 0 with no
    sanitizer report on its stderr; both ends of the terminal are closed
    however the block is left."""
    master, slave = os.openpty()
    try:
        p = spawn(argv, stdin=slave, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE,
                  preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        yield master, Lines(p.stdout)
        assert p.wait(RUN_TIMEOUT) == 0
        no_sanitizer_report(p.stderr.read().decode("utf-8", "replace"))
    finally:
        os.close(master)
        os.close(slave)


def test_terminal_ctrl_c_reaches_the_command_once(mount, zklock):
    """^C on a terminal signals the whole foreground process group: zklock
    must not send the command a second SIGINT of its own."""
    m = mount()
    d = m.p("L")
    # a non-interactive shell owns the terminal; zklock and the command
    # are in its (foreground) process group, as in a script run from it
    shell = ["sh", "-c", 'trap : INT; "$0" "$@"; echo "rc=$?"',
             zklock, d, harness.PY, "-c", SIGINT_WATCHER]
    with on_a_terminal(shell) as (master, out):
        assert out.readline(GRANT_TIMEOUT) == "ready"
        os.write(master, b"\x03")
        seen = out.readline(RUN_TIMEOUT)
        assert seen == "seen [(128, 0)]", seen      # SI_KERNEL, from the tty
        assert out.readline(RUN_TIMEOUT) == "rc=1"
    wait_no_entries(d)


# --- --list --------------------------------------------------------------------------------

def parse_list(out):
    lines = out.splitlines()
    assert lines and lines[0].split() == ["POS", "STATE", "KIND", "ENTRY", "HOST",
                                          "PID", "AGE", "SINCE", "LIMIT", "CMD"], out
    rows = [ln.split(None, 9) for ln in lines[1:]]
    for r in rows:
        assert len(r) == 10, out
    return rows


def test_list_shows_the_queue(mount, zklock, zkc):
    m1, m2 = mount(), mount()
    d1 = m1.p("L")
    os.mkdir(d1)
    d2 = m2.p("L")
    wait_for(lambda: os.path.isdir(d2), 5, "L on mount 2")
    rc, out, _ = zk(zklock, "--list", d1)
    assert rc == 0 and parse_list(out) == []

    holder = Run(zklock, "-N", "alpha", d1, "sh", "-c", "echo in; exec sleep 60")
    assert holder.expect_line() == "in"
    ea = wait_entry_of(d1, "alpha")
    w1 = Run(zklock, "-N", "beta", d2, "true")           # other mount
    eb = wait_entry_of(d1, "beta")
    w2 = Run(zklock, "-s", "-N", "gamma", d1, "true")
    eg = wait_entry_of(d1, "gamma")
    c = zkc.create(m1.zkpath("L") + "/_c_%s-lock-" % uuid.uuid4(), b"",
                   zkclient.EPHEMERAL_SEQUENTIAL)
    ec = c.rsplit("/", 1)[1]
    wait_for(lambda: ec in os.listdir(d1), 5, "the curator entry")
    os.mkdir(os.path.join(d1, "subdir"))                 # not a row

    host = parse_kv(read_file(os.path.join(d1, ea)))["host"]
    for d in (d1, d2):
        rc, out, err = zk(zklock, "--list", d)
        assert rc == 0, err
        rows = parse_list(out)
        assert [r[3] for r in rows] == [ea, eb, eg, ec], out
        assert [r[0] for r in rows] == ["1", "2", "3", "4"]
        assert [r[1] for r in rows] == ["held", "waiting", "waiting", "waiting"]
        assert [r[2] for r in rows] == ["exclusive", "exclusive", "shared",
                                        "exclusive"]
        assert [r[4] for r in rows] == [host, host, host, "-"]
        assert [r[5] for r in rows] == [str(holder.pid), str(w1.pid),
                                        str(w2.pid), "-"]
        for r in rows:
            assert re.match(r"^(\d+s|\d+m\d+s|\d+h\d+m|\d+d\d+h)$", r[6]), r
        # aligned: every column starts at the same offset in each line
        lines = out.splitlines()
        starts = [lines[0].index(h) for h in ("STATE", "KIND", "ENTRY")]
        for ln in lines[1:]:
            for s in starts:
                assert ln[s - 1] == " " and ln[s] != " ", out

    # the queue moves on: the holder ends, beta then gamma run, curator waits
    os.kill(holder.pid, signal.SIGTERM)
    assert holder.finish() == 128 + signal.SIGTERM
    assert w1.finish() == 0
    assert w2.finish() == 0
    rows = parse_list(zk(zklock, "--list", d1)[1])
    assert [(r[3], r[1]) for r in rows] == [(ec, "held")]
    zkc.delete(c)


def test_list_prints_no_raw_control_byte(mount, zklock, zkc):
    """Whatever a holder writes (its descriptor's data) or a ZooKeeper
    client writes in its entry, --list prints no C0/C1 control, ESC or byte that is not
    UTF-8 raw: the 8-bit CSI 0x9b, raw or as UTF-8, is a terminal escape."""
    m = mount()
    d = lockdir(m)
    fd = os.open(os.path.join(d, "evil"), os.O_CREAT | os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"host=\x9b31mevil\x1b]0;title\x07\xc2\x9b2J\n"
                     b"pid=\x1b[2J\x85\xff\n")
        os.fsync(fd)
        c = zkc.create(m.zkpath("L") + "/_c_x-lock-", b"host=caf\xc3\xa9\x9b\n",
                       zkclient.EPHEMERAL_SEQUENTIAL)
        ec = c.rsplit("/", 1)[1]
        wait_for(lambda: ec in os.listdir(d), 5, "the client's entry")
        r = subprocess.run([zklock, "--list", d], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=RUN_TIMEOUT)
    finally:
        os.close(fd)
    out = r.stdout
    assert r.returncode == 0, r.stderr
    no_sanitizer_report(r.stderr.decode("utf-8", "replace"))
    bad = re.search(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", out)
    assert not bad, "a raw control byte in --list: %r" % out
    text = out.decode("utf-8")              # and nothing that is not UTF-8
    assert not re.search("[\x80-\x9f]", text), text
    assert "\\x9b31mevil\\x1b]0;title\\x07\\xc2\\x9b2J" in text, text
    assert "\\x1b[2J\\x85\\xff" in text, text
    assert "caf\u00e9\\x9b" in text, text   # printable UTF-8 stays
    zkc.delete(c)


# --- a lost lock ---------------------------------------------------------------------------------

def test_lost_lock_terminates_the_command(mount, zklock):
    m1, m2 = mount(), mount()
    d = m1.p("L")
    r = Run(zklock, "-N", "victim", d, "sh", "-c",
            'trap "echo got-term; exit 3" TERM; echo ready; '
            'i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done')
    assert r.expect_line() == "ready"
    e = wait_entry_of(d, "victim")
    d2 = m2.p("L")
    wait_for(lambda: e in os.listdir(d2), 5, "the entry on mount 2")
    w = Run(zklock, "-N", "next", d2, "echo", "next-ran")
    wait_entry_of(d, "next")
    t0 = time.monotonic()
    os.unlink(os.path.join(d2, e))                    # break the lock
    assert r.finish() == EX_LOST, r.err
    assert time.monotonic() - t0 <= 5 * SLOW
    assert "got-term" in r.out
    assert "lost" in r.err and "its entry was deleted by someone else" in r.err, r.err
    assert w.finish() == 0 and w.out == "next-ran\n"
    wait_no_entries(d)


def test_lost_lock_sigkill_after_grace(mount, zklock):
    m1, m2 = mount(), mount()
    d = m1.p("L")
    r = Run(zklock, "--kill-after", "1", "-N", "stubborn", d, "sh", "-c",
            'trap "" TERM; echo $$; '
            'i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done')
    child = int(r.expect_line())
    e = wait_entry_of(d, "stubborn")
    d2 = m2.p("L")
    wait_for(lambda: e in os.listdir(d2), 5, "the entry on mount 2")
    t0 = time.monotonic()
    os.unlink(os.path.join(d2, e))
    assert r.finish() == EX_LOST, r.err
    took = time.monotonic() - t0
    assert 0.9 <= took <= 1 + 5 * SLOW, "took %.2fs" % took
    assert "SIGKILL" in r.err
    assert not os.path.exists("/proc/%d" % child)
    wait_no_entries(d)


# --- nested: a zklock inside the command of a zklock of the same lock ----------------

def test_nested_zklock_of_the_same_lock_runs_at_once(mount, zklock):
    """A script under zklock that itself runs zklock on the same lock would
    wait on its own parent forever: the tree holds the lock, and the mount
    confirms it, so the inner one runs its command at once (shared under
    exclusive too), and makes no entry of its own."""
    m = mount()
    d = m.p("L")
    inner = ('%s %s sh -c "echo inner-x"; %s -s %s sh -c "echo inner-s; '
             'ls %s | wc -l"' % (zklock, d, zklock, d, d))
    rc, out, err = zk(zklock, "-w", "20", d, "sh", "-c", inner, timeout=30)
    assert rc == 0, err
    assert out.split() == ["inner-x", "inner-s", "1"], (out, err)
    wait_no_entries(d)


def test_nested_exclusive_under_shared_is_refused_at_once(mount, zklock):
    m = mount()
    d = m.p("L")
    rc, out, err = zk(zklock, "-s", d, "sh", "-c",
                      '%s -w 20 %s true; echo "inner=$?"' % (zklock, d), timeout=30)
    assert rc == 0 and "inner=1" in out.split(), (out, err)
    assert "held shared by the zklock this runs under" in err, err


def test_zklock_environment_of_another_tree_takes_the_lock(mount, zklock):
    """ZKLOCK_* in the environment is a claim, checked against the mount:
    a process outside the holder's tree that inherits or forges it waits
    for the lock as anyone does (here, -n: it is held)."""
    m = mount()
    d = m.p("L")
    r = Run(zklock, d, "sh", "-c", 'echo "$ZKLOCK_ENTRY"; sleep 60')
    try:
        entry = r.expect_line().strip()
        env = {"ZKLOCK_DIR": d, "ZKLOCK_ENTRY": entry, "ZKLOCK_MODE": "exclusive"}
        rc, _, err = zk(zklock, "-n", d, "true", env=env)
        assert rc == 1, err                 # busy: it did not run inside
    finally:
        os.killpg(r.pid, signal.SIGTERM)
        r.finish()


# --- --confirm: "are we still the leader?" ---------------------------------------

def test_confirm_in_the_command_says_held_then_lost(mount, zklock, zkc, scratch):
    """zklock --confirm, run by the command, asks ZooKeeper (a round trip
    on the entry's session) whether the lock of $ZKLOCK_ENTRY still holds:
    0 while it does; 75 once another client deleted the entry (the
    command ignores the SIGTERM of the loss, to ask), and zklock ends
    with 75 too."""
    m = mount()
    d = m.p("L")
    go = os.path.join(scratch, "go")
    script = ('trap "" TERM; echo "$ZKLOCK_ENTRY"; %s --confirm; echo "a=$?"; '
              'while [ ! -e %s ]; do sleep 0.05; done; %s --confirm; echo "b=$?"'
              % (zklock, go, zklock))
    r = Run(zklock, "-k", "3", d, "sh", "-c", script)
    entry = r.expect_line().strip()
    assert r.expect_line().strip() == "a=0"
    zkc.delete(m.zkpath("L/" + os.path.basename(entry)))
    open(go, "w").close()
    assert r.expect_line().strip() == "b=75"
    assert r.finish() == 75, r.err
    assert "the lock is not held" in r.err, r.err
    wait_no_entries(d)


def test_confirm_is_only_for_the_holders_process_tree(mount, zklock):
    """Anyone may read an entry's state, but only the holder and the
    processes it started may ask for a confirmation (each is a round trip
    on the ensemble): others get EPERM, and --confirm outside a zklock
    command is a usage error."""
    m = mount()
    d = m.p("L")
    r = Run(zklock, d, "sh", "-c", 'echo "$ZKLOCK_ENTRY"; sleep 60')
    try:
        entry = r.expect_line().strip()
        with pytest.raises(OSError) as e:
            os.getxattr(entry, "user.zklockfs.confirm")
        assert e.value.errno == errno.EPERM
        assert getxattr_str(entry, "user.zklockfs.state") == "held"
        rc, _, err = zk(zklock, "--confirm", env={"ZKLOCK_ENTRY": entry})
        assert rc == 75 and "not held by a zklock this process runs under" in err, err
    finally:
        os.killpg(r.pid, signal.SIGTERM)
        r.finish()
    env = dict(os.environ)
    env.pop("ZKLOCK_ENTRY", None)
    rc, _, err = zk(zklock, "--confirm", env={"ZKLOCK_ENTRY": ""})
    assert rc == 64 and "ZKLOCK_ENTRY is not set" in err, err
    assert zk(zklock, "--confirm", d)[0] == 64


# --- the command's process tree: nothing started under the lock outlives it ---------------

def break_lock(m2, d, name):
    """Delete the entry of `name` in d (on mount 1) through mount 2: the lock
    is lost."""
    e = wait_entry_of(d, name)
    d2 = m2.p(os.path.basename(d))
    wait_for(lambda: e in os.listdir(d2), 5, "the entry on mount 2")
    os.unlink(os.path.join(d2, e))


def test_lost_lock_ends_a_background_grandchild(mount, zklock):
    """consul lock's bug (hashicorp/consul#2022): when the lock was lost,
    zklock sent SIGTERM to the command (its pid) and exited 75 at once; what
    the command had started in the background ran on without the lock."""
    m1, m2 = mount(), mount()
    d = m1.p("L")
    r = Run(zklock, "-N", "bg", d, "sh", "-c", 'sleep 300 & echo $!; wait')
    g = Descendant(int(r.expect_line()))
    break_lock(m2, d, "bg")
    assert r.finish() == EX_LOST, r.err
    assert g.gone(), "the background sleep outlived the lock"
    assert "SIGKILL" not in r.err        # it got SIGTERM, not the grace's end
    wait_no_entries(d)


def test_lost_lock_sigkills_a_grandchild_that_ignores_sigterm(mount, zklock):
    """The command dies of the SIGTERM; its child, which ignores SIGTERM,
    gets SIGKILL after --kill-after, and only then does zklock exit."""
    m1, m2 = mount(), mount()
    d = m1.p("L")
    r = Run(zklock, "--kill-after", "1", "-N", "deaf", d, "sh", "-c",
            '(trap "" TERM; exec sleep 300) & echo $!; wait')
    g = Descendant(int(r.expect_line()))
    break_lock(m2, d, "deaf")
    t0 = time.monotonic()
    assert r.finish() == EX_LOST, r.err
    took = time.monotonic() - t0
    assert g.gone(), "the grandchild that ignores SIGTERM outlived the lock"
    assert 0.9 <= took <= 1 + 5 * SLOW, "took %.2fs" % took
    assert "SIGKILL" in r.err
    wait_no_entries(d)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=["SIGTERM", "SIGINT", "SIGHUP"])
def test_signal_to_zklock_ends_the_whole_tree(mount, zklock, sig):
    """zklock passes SIGTERM/SIGINT/SIGHUP on to every process of the tree
    (it sent them to the command alone) and exits once all are gone. A
    background job of sh ignores SIGINT: it is ended when the shell has
    exited, as a leftover."""
    m = mount()
    d = m.p("L")
    r = Run(zklock, "-N", "sig", d, "sh", "-c", 'sleep 300 & echo $!; wait')
    g = Descendant(int(r.expect_line()))
    os.kill(r.pid, sig)
    assert r.finish() == 128 + sig, r.err
    assert g.gone(), "the background sleep outlived zklock"
    wait_no_entries(d)


def test_what_the_command_leaves_behind_ends_before_the_lock_goes(mount,
                                                                  zklock,
                                                                  scratch):
    """A command that exits leaving a daemon (double fork, setsid, SIGTERM
    ignored): zklock, the daemon's subreaper, sends it SIGTERM, SIGKILL after
    --kill-after, and only then gives the lock back and exits with the
    command's status. The next holder finds the daemon gone."""
    m = mount()
    d = m.p("L")
    go = os.path.join(scratch, "go")
    os.mkfifo(go)
    # $(...) returns once the daemon has said its pid and let go of the
    # pipe; the command exits when the test has the daemon's pidfd
    r = Run(zklock, "--kill-after", "1", "-N", "left", d, "sh", "-c",
            'pid=$( ( (trap "" TERM; exec setsid sh -c '
            '\'echo $$; exec sleep 300 >/dev/null\') & ) ); '
            'echo "$pid"; read go <"$1"; exit 7', "sh", go)
    g = Descendant(int(r.expect_line()))
    nxt = Run(zklock, "-N", "next", d, "echo", "granted")
    wait_entry_of(d, "next")
    with open(go, "w") as f:             # the command is reading it
        f.write("go\n")
    assert nxt.expect_line() == "granted"
    assert g.gone(), "the next holder got the lock while the daemon ran"
    assert r.finish() == 7, r.err
    assert r.elapsed >= 0.9, "took %.2fs" % r.elapsed
    assert "left 1 process" in r.err and "SIGKILL" in r.err, r.err
    assert nxt.finish() == 0
    wait_no_entries(d)


def test_command_reads_the_terminal(mount, zklock):
    """The command stays in zklock's process group, the terminal's
    foreground group: it reads the terminal (in a group of its own it would
    be stopped by SIGTTIN)."""
    m = mount()
    d = m.p("L")
    shell = ["sh", "-c", '"$0" "$@"; echo "rc=$?"', zklock, d,
             "sh", "-c", 'echo ready; read x; echo "got $x"']
    with on_a_terminal(shell) as (master, out):
        assert out.readline(GRANT_TIMEOUT) == "ready"
        os.write(master, b"hello\n")
        assert out.readline(RUN_TIMEOUT) == "got hello"
        assert out.readline(RUN_TIMEOUT) == "rc=0"
    wait_no_entries(d)


# --- usage ---------------------------------------------------------------------------------------

def bad_values(opt, *values):
    """The argument lists `OPT VALUE {d} true`, one per refused value."""
    return [[opt, v, "{d}", "true"] for v in values]


@pytest.mark.parametrize("args", [
    [],
    ["{d}"],
    ["-x"],
    ["--bogus", "{d}", "true"],
    *bad_values("-w", "abc", "-1", "nan"),
    *bad_values("-E", "256", "x"),
    *bad_values("--kill-after", "soon"),
    ["{d}", "-c"],
    ["{d}", "-c", "true", "extra"],
    ["-c", "true", "{d}", "extra"],
    ["--list"],
    ["--list", "{d}", "ls"],
    *bad_values("-N", "a/b", "", "..", "host1234567890",
                "db-read",                  # would read as shared
                "x" * 240,
                "ctl\x01char"),             # refused by zklockfs
    ["", "true"],
])
def test_usage_errors(mount, zklock, args):
    m = mount()
    d = m.p("L")
    rc, out, err = zk(zklock, *[a.format(d=d) for a in args])
    assert rc == EX_USAGE, (rc, out, err)
    assert err.strip(), "no message"
    assert not os.path.exists(d) or entries(d) == []


def test_help_and_version(zklock):
    rc, out, _ = zk(zklock, "--help")
    assert rc == 0 and "--list" in out and "Usage" in out
    rc, out, _ = zk(zklock, "-V")
    assert rc == 0 and out.startswith("zklock")


def test_limit_makes_a_semaphore_like_consul_lock_n(mount, zklock):
    """-L N: the directory zklock makes is a semaphore of N holders (set if
    it has none); a directory with another limit is refused (66)."""
    m = mount()
    d = os.path.join(m.path, "sem")
    rc, out, err = zk(zklock, "-L", "2", d, "echo", "ran")
    assert (rc, out) == (0, "ran\n"), err
    assert os.getxattr(d, "user.zklockfs.limit") == b"2"
    h1 = take(d, "h1")
    rc, out, _ = zk(zklock, "-n", "-L", "2", d, "echo", "second")
    assert (rc, out) == (0, "second\n")          # one of two places left
    h2 = take(d, "h2")
    assert zk(zklock, "-n", "-L", "2", d, "true")[0] == 1
    rc, _, err = zk(zklock, "-L", "3", d, "true")
    assert rc == 66 and "a semaphore of 2 holders, not 3" in err
    assert zk(zklock, "-L", "0", d, "true")[0] == 64
    h1.release()
    h2.release()


def test_a_semaphore_is_refused_without_its_limit(mount, zklock):
    """A name someone else made first may carry a limit that lets several
    "exclusive" holders in at once: without -L, zklock refuses a semaphore
    (66), saying which -L would share it; with it, it runs."""
    m = mount()
    d = lockdir(m, "made-first")
    os.setxattr(d, "user.zklockfs.limit", b"1000")
    rc, out, err = zk(zklock, d, "echo", "ran")
    assert (rc, out) == (66, ""), err
    assert "a semaphore of 1000 holders" in err and "-L 1000" in err
    assert entries(d) == []
    rc, out, err = zk(zklock, "-L", "1000", d, "echo", "ran")
    assert (rc, out) == (0, "ran\n"), err


# --- revocation ---------------------------------------------------------------------

WAIT_FOR_SIGNAL = (
    "import signal, sys\n"
    "def on(sig, frame):\n"
    "    print('got', signal.Signals(sig).name, flush=True); sys.exit(0)\n"
    "for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP):\n"
    "    signal.signal(s, on)\n"
    "print('in', flush=True)\n"
    "signal.pause()\n")


@pytest.mark.parametrize("opts, sig", [((), "SIGUSR1"),
                                        (("--on-revoke=usr2",), "SIGUSR2"),
                                        (("--on-revoke", "1"), "SIGHUP")])
def test_a_request_to_let_go_reaches_the_command(mount, zklock, opts, sig):
    """setfattr user.zklockfs.revoke on zklock's entry: zklock passes it on
    to its command as SIGUSR1 (or --on-revoke's signal), once; the lock is
    still held until the command ends."""
    m = mount()
    d = m.p("L")
    r = Run(zklock, *opts, "-N", "me", d, harness.PY, "-c", WAIT_FOR_SIGNAL)
    assert r.expect_line() == "in"
    e = wait_entry_of(d, "me")
    os.setxattr(os.path.join(d, e), "user.zklockfs.revoke", b"1")
    assert r.expect_line() == "got " + sig
    assert r.finish() == 0
    assert "asked to let go" in r.err
    wait_no_entries(d)


def test_on_revoke_takes_a_signal(zklock):
    rc, _, err = zk(zklock, "--on-revoke=NOPE", "/tmp", "true")
    assert rc == 64 and "invalid signal" in err
    assert zk(zklock, "--on-revoke=0", "/tmp", "true")[0] == 64


@pytest.mark.parametrize("sig", ["STOP", "SIGSTOP", "19", "sigtstp", "TTIN",
                                 "SIGTTOU"])
def test_on_revoke_refuses_a_stop_signal(zklock, sig):
    """A stopped command keeps its lock, frozen: a revocation must ask it
    to let go, never stop it."""
    rc, _, err = zk(zklock, "--on-revoke=" + sig, "/tmp", "true")
    assert rc == 64, (rc, err)
    assert "would stop the command" in err, err


def test_another_user_without_allow_other_is_pointed_to_it(mount, zklock):
    """A user who is not the mount's owner gets EACCES from a mount without
    allow_other: zklock says why, naming the option."""
    m = mount()
    os.mkdir(m.p("d"))
    r = subprocess.run(harness.as_user(65534) + [zklock, m.p("d"), "true"],
                       capture_output=True, text=True, timeout=GRANT_TIMEOUT, cwd="/")
    assert r.returncode == 66 and "allow_other" in r.stderr, r
