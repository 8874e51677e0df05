"""zklock(1) and its command: what the command sees (environment,
descriptors, --verbose, signals passed on or kept, stop and continue while
waiting, the terminal), a lost lock ending it (exit 75), a zklock nested
in the command of one of the same lock, --confirm ("are we still the
leader?"), and the command's process tree: nothing started under the lock
outlives it.

The options, the lock directory, --list and bad input are in
test_zklock.py; how a test runs zklock (Run, zk(), Descendant, the
teardown fixtures) in zklockrun.py.
"""

import contextlib
import errno
import fcntl
import os
import re
import signal
import subprocess
import termios
import time

import pytest

import harness
from harness import (lock_state, SLOW, GRANT_TIMEOUT, Lines, entries, getxattr_str, lockdir,
                     parse_entry, parse_kv, seq_of, spawn,
                     start_waiter, take, wait_for, wait_no_entries)
from zklockrun import (EX_LOST, RUN_TIMEOUT, Descendant, Run, no_sanitizer_report,
                       wait_entry_of, wait_waiting_in_open, zk)
from zklockrun import kill_descendants, no_sanitizer_report_from_any_zklock  # noqa: F401 (autouse)


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


def test_the_command_holds_the_lock_through_zklock_fd(mount, zklock):
    """The command inherits the lock's descriptor, and no other of the
    mount: ZKLOCK_FD names it (the file it opened in $ZKLOCK_DIR: the
    kernel knows it by the name opened, the entry by its full name)."""
    m = mount()
    d = m.p("L")
    rc, out, err = zk(zklock, d, "sh", "-c",
                      'test -e "$ZKLOCK_ENTRY" && echo HELD; echo "$ZKLOCK_DIR"; '
                      'readlink "/proc/$$/fd/$ZKLOCK_FD"; '
                      'for f in /proc/$$/fd/*; do readlink "$f" || :; done')
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "HELD"
    assert os.path.dirname(lines[2]) == lines[1], lines
    assert [t for t in lines[3:] if t.startswith(m.path)] == [lines[2]], lines


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


# -n and -w: the zklock started keeps the bound around the one that takes
# the lock (tools/zklock/bound.h); signals and a SIGKILL reach the command
# all the same
BOUNDS = [pytest.param([], id="unbounded"), pytest.param(["-w", "30"], id="w"),
          pytest.param(["-n"], id="n")]


@pytest.mark.parametrize("bound", BOUNDS)
def test_forwards_sigterm_to_the_command(mount, zklock, bound):
    m = mount()
    d = m.p("L")
    r = Run(zklock, *bound, "-N", "fw", d, "sh", "-c",
            'trap "echo got-term; exit 5" TERM; echo ready; '
            'i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; exit 1')
    assert r.expect_line() == "ready"
    os.kill(r.pid, signal.SIGTERM)
    assert r.finish() == 5
    assert "got-term" in r.out
    wait_no_entries(d)


@pytest.mark.parametrize("bound", BOUNDS)
def test_killed_zklock_releases_and_terminates_the_command(mount, zklock,
                                                          scratch, bound):
    m = mount()
    d = m.p("L")
    mark = os.path.join(scratch, "got-term")
    r = Run(zklock, *bound, "-N", "k9", d, "sh", "-c",
            'trap "touch \"$1\"; exit 0" TERM; echo ready; '
            'i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done',
            "sh", mark)
    assert r.expect_line() == "ready"
    wait_entry_of(d, "k9")
    os.kill(r.pid, signal.SIGKILL)
    r.proc.wait(RUN_TIMEOUT)
    wait_no_entries(d)                   # went with the command, told by SIGTERM
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


# --- a lost lock ---------------------------------------------------------------------------------

def test_lost_lock_kills_the_command_at_once(mount, zklock):
    """Another host may hold the lock from the loss on: the command's tree
    gets SIGKILL at once, whatever --kill-after says (no SIGTERM it could
    trap and run on through), and zklock exits 75 saying why."""
    m1, m2 = mount(), mount()
    d = m1.p("L")
    r = Run(zklock, "--kill-after", "60", "-N", "victim", d, "sh", "-c",
            'trap "echo got-term; exit 3" TERM; echo $$; '
            'i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done')
    child = int(r.expect_line())
    e = wait_entry_of(d, "victim")
    d2 = m2.p("L")
    wait_for(lambda: e in os.listdir(d2), 5, "the entry on mount 2")
    w = Run(zklock, "-N", "next", d2, "echo", "next-ran")
    wait_entry_of(d, "next")
    os.unlink(os.path.join(d2, e))                    # break the lock
    assert r.finish() == EX_LOST, r.err
    assert "got-term" not in r.out
    assert "sent SIGKILL" in r.err and "SIGTERM" not in r.err, r.err
    assert "lost" in r.err and "its entry was deleted by someone else" in r.err, r.err
    assert not os.path.exists("/proc/%d" % child)
    assert w.finish() == 0 and w.out == "next-ran\n"
    wait_no_entries(d)


# --- nested: a zklock inside the command of a zklock of the same lock ----------------

def test_nested_zklock_of_the_same_lock_runs_at_once(mount, zklock):
    """A script under zklock that itself runs zklock on the same lock would
    wait on its own parent forever: the command holds the lock through the
    descriptor zklock left it (ZKLOCK_FD), so the inner one runs its command
    at once (shared under exclusive too), and makes no entry of its own."""
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


@pytest.mark.parametrize("fd", ["", "0", "other-lock"])
def test_a_zklock_without_the_locks_descriptor_queues(mount, zklock, fd):
    """Only the lock's own descriptor makes a zklock nested: ZKLOCK_* copied
    into another process's environment (no ZKLOCK_FD, one that names a
    descriptor that is no lock, or one of another lock) is no claim, and
    such a zklock queues as anyone does (here, -n: it is held)."""
    m = mount()
    d = m.p("L")
    r = Run(zklock, d, "sh", "-c", 'echo "$ZKLOCK_ENTRY"; sleep 60')
    other = None
    try:
        entry = r.expect_line().strip()
        env = {"ZKLOCK_DIR": d, "ZKLOCK_ENTRY": entry, "ZKLOCK_MODE": "exclusive",
               "ZKLOCK_FD": fd}
        pass_fds = ()
        if fd == "other-lock":
            os.mkdir(m.p("M"))
            other = os.open(m.p("M/mine"), os.O_CREAT | os.O_WRONLY)
            env["ZKLOCK_FD"] = str(other)
            pass_fds = (other,)
        rc, _, err = zk(zklock, "-n", d, "true", env=env, pass_fds=pass_fds)
        assert rc == 1, err                 # busy: it did not run inside
        if fd:
            assert "this zklock queued as any other" in err, err
    finally:
        if other is not None:
            os.close(other)
        os.killpg(r.pid, signal.SIGTERM)
        r.finish()


# --- --confirm: "are we still the leader?" ---------------------------------------

def test_confirm_in_the_command_says_held_then_lost(mount, zklock, zkc, scratch):
    """zklock --confirm, run by the command, asks ZooKeeper (fsync of
    $ZKLOCK_FD: a round trip on the entry's session) whether its lock still
    holds:
    0 while it does; 75 once another client deleted the entry, and zklock
    ends with 75 too.  zklock itself is stopped meanwhile: awake, it
    would SIGKILL the command at the loss before it could ask."""
    m = mount()
    d = m.p("L")
    go = os.path.join(scratch, "go")
    script = ('echo "$ZKLOCK_ENTRY"; %s --confirm; echo "a=$?"; '
              'while [ ! -e %s ]; do sleep 0.05; done; %s --confirm; echo "b=$?"; '
              'sleep 300' % (zklock, go, zklock))
    r = Run(zklock, d, "sh", "-c", script)
    entry = r.expect_line().strip()
    assert r.expect_line().strip() == "a=0"
    os.kill(r.pid, signal.SIGSTOP)
    try:
        zkc.delete(m.zkpath("L/" + os.path.basename(entry)))
        open(go, "w").close()
        assert r.expect_line().strip() == "b=75"
    finally:
        os.kill(r.pid, signal.SIGCONT)
    assert r.finish() == 75, r.err
    assert "the lock is not held" in r.err, r.err
    wait_no_entries(d)


def test_confirm_acts_only_through_the_locks_descriptor(mount, zklock):
    """--confirm asks through the descriptor zklock left its command
    (ZKLOCK_FD), never by an entry's name: the mount has no confirmation
    by name (ENODATA), and --confirm without that descriptor is a usage
    error (64), whatever ZKLOCK_ENTRY says."""
    m = mount()
    d = m.p("L")
    r = Run(zklock, d, "sh", "-c", 'echo "$ZKLOCK_ENTRY"; sleep 60')
    try:
        entry = r.expect_line().strip()
        with pytest.raises(OSError) as e:
            os.getxattr(entry, "user.zklockfs.confirm")
        assert e.value.errno == errno.ENODATA
        assert getxattr_str(entry, "user.zklockfs.state") == "held"
        rc, _, err = zk(zklock, "--confirm", env={"ZKLOCK_ENTRY": entry, "ZKLOCK_FD": ""})
        assert rc == 64 and "ZKLOCK_FD does not name an open descriptor" in err, err
        rc, _, err = zk(zklock, "--confirm", env={"ZKLOCK_ENTRY": entry,
                                                   "ZKLOCK_FD": "0"})   # /dev/null
        assert rc == 64 and "is not a zklockfs lock" in err, err
    finally:
        os.killpg(r.pid, signal.SIGTERM)
        r.finish()
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
    wait_no_entries(d)


def test_lost_lock_kills_a_grandchild_that_ignores_sigterm(mount, zklock):
    """The command's child ignores SIGTERM: a loss gives it SIGKILL at
    once, not after --kill-after, and only then does zklock exit."""
    m1, m2 = mount(), mount()
    d = m1.p("L")
    r = Run(zklock, "--kill-after", "60", "-N", "deaf", d, "sh", "-c",
            '(trap "" TERM; exec sleep 300) & echo $!; wait')
    g = Descendant(int(r.expect_line()))
    break_lock(m2, d, "deaf")
    assert r.finish() == EX_LOST, r.err
    assert g.gone(), "the grandchild that ignores SIGTERM outlived the lock"
    assert "SIGKILL" in r.err
    wait_no_entries(d)


def test_a_waiter_whose_mount_stops_says_so(mount, zklock):
    """zklock waiting when the daemon stops: the mount went away, said as
    such (69), not the errno's raw text with a path that is gone."""
    m = mount()
    d = m.p("L")
    h = Run(zklock, "-N", "holder", d, "sh", "-c", "echo ready; exec sleep 300")
    assert h.expect_line() == "ready"
    w = Run(zklock, "-N", "waiter", d, "echo", "ran")
    wait_entry_of(d, "waiter")
    m.kill(signal.SIGTERM)
    assert w.finish() == 69, w.err
    assert "the mount went away while waiting" in w.err and w.out == "", w.err
    assert "endpoint" not in w.err and "abort" not in w.err, w.err
    h.finish()


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
