"""When ZooKeeper stops answering (its server SIGSTOPped): no request of the
mount outlives the session timeout, a signal ends any of them at once,
zklock -n and -w keep their bounds and say why they gave up, and zklock
without them waits through the outage (docs/SPEC.md, "When ZooKeeper is
away, or the daemon stops").

The server is the session's shared one, stopped for the length of one
test and always resumed in a finally clause.
"""

import errno
import os
import select
import signal
import subprocess
import sys
import time

import pytest

import harness
from harness import SLOW, lockdir, spawn, take, wait_for

# A mount whose session timeout no bound below relies on
LONG_SESSION_MS = 10000
# How late a bound may be kept on a loaded 2-core machine (doubled under
# sanitizers): process start-up, the interrupt's round trip
LATE = 0.25 * SLOW


def fig(request, text):
    harness.record_figure(text, request.node.name)


def log(m):
    """The daemon's log so far."""
    with open(m.logpath, "rb") as f:
        return f.read().decode("utf-8", "replace")


def run(argv, timeout=60):
    """Run argv to its end: (status, stderr, seconds)."""
    t0 = time.monotonic()
    p = spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
              stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out.decode() + err.decode(), time.monotonic() - t0


def test_zklock_n_and_w_keep_their_bounds_while_zookeeper_is_stopped(
        mount, zk, zklock, request):
    m = mount(session_timeout=LONG_SESSION_MS)
    d = lockdir(m)
    known = os.path.join(d, "known")
    os.mkdir(known)
    zk.suspend()
    try:
        # a lock seen before (its lookup may be cached) and a new name,
        # whose lookups all wait for the server
        for path in (known, os.path.join(d, "new")):
            rc, err, took_n = run([zklock, "-n", path, "true"])
            assert rc == 1 and "ZooKeeper did not answer within" in err, (rc, err)
            assert took_n <= 1.0 + LATE, "zklock -n took %.2f s" % took_n
            rc, err, took_w = run([zklock, "-w", "2", "-E", "9", path, "true"])
            assert rc == 9 and "ZooKeeper did not answer within" in err, (rc, err)
            assert took_w <= 3.0 + LATE, "zklock -w 2 took %.2f s" % took_w
            fig(request, "ZooKeeper stopped, %s lock: zklock -n %.2f s, -w 2 %.2f s"
                % ("known" if path == known else "new", took_n, took_w))
    finally:
        zk.resume()


def test_zklock_gives_up_on_a_held_lock_naming_its_holder(mount, zklock):
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    rc, err, _ = run([zklock, "-n", d, "true"])
    assert rc == 1 and "held by holder-lock-" in err and "pid" in err, err
    rc, err, _ = run([zklock, "-w", "0.3", d, "true"])
    assert rc == 1 and "held by holder-lock-" in err, err
    h.release()


def test_a_signal_ends_a_request_waiting_for_a_stopped_zookeeper(mount, zk, request):
    """SIGKILL of a process whose stat() the daemon has read already leaves
    it in the kernel until the daemon answers: the daemon answers EINTR at
    the FUSE_INTERRUPT, not when ZooKeeper is back."""
    m = mount(session_timeout=LONG_SESSION_MS)
    d = lockdir(m)
    zk.suspend()
    try:
        p = spawn(["stat", os.path.join(d, "nobody-looked-yet")],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: harness.asleep_in(p.pid, None), 10,
                 "stat asleep in the mount")
        t0 = time.monotonic()
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=LONG_SESSION_MS / 1000.0 * 2)
        took = time.monotonic() - t0
        assert took <= 0.5 + LATE, "a SIGKILLed stat took %.2f s to end" % took
        fig(request, "ZooKeeper stopped: SIGKILL ends a waiting stat() in %.3f s" % took)
    finally:
        zk.resume()


# access(2) of argv[1] through libc, which gives EINTR back where
# os.access() would retry it (PEP 475); with "handle", SIGUSR1 has a
# handler installed with SA_RESTART, as Go's runtime installs its own.
# Prints "ready", then the call's result: "ok" or the errno's name.
RAW_ACCESS = r"""
import ctypes, errno, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)      # PR_SET_PDEATHSIG
if sys.argv[2] == "handle":
    signal.signal(signal.SIGUSR1, lambda signum, frame: None)
    signal.siginterrupt(signal.SIGUSR1, False)
os.write(1, b"ready\n")
rc = libc.access(os.fsencode(sys.argv[1]), 0)
e = ctypes.get_errno() if rc else 0
os.write(1, (errno.errorcode.get(e, str(e)) if rc else "ok").encode() + b"\n")
"""


def raw_access(path, handle):
    """A process in access(2) of path, asleep in the mount: (process, its
    start on the monotonic clock)."""
    p = spawn([sys.executable, "-c", RAW_ACCESS, path, "handle" if handle else "-"],
              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"ready\n"
    t0 = time.monotonic()
    wait_for(lambda: harness.asleep_in(p.pid, None), 10, "access() asleep in the mount")
    return p, t0


def test_a_caught_signal_lets_a_quick_request_finish(mount, zk):
    """A signal the caller catches with SA_RESTART (Go's preemption, a
    SIGCHLD handler) does not fail a request ZooKeeper answers soon: the
    caller gets ZooKeeper's answer, as from a local disk, never EINTR."""
    m = mount(session_timeout=LONG_SESSION_MS)
    d = lockdir(m)
    zk.suspend()
    try:
        p, t0 = raw_access(os.path.join(d, "nobody-looked-yet"), handle=True)
        p.send_signal(signal.SIGUSR1)
        # an EINTR answer comes at the interrupt: within this, or never
        ended, _, _ = select.select([p.stdout], [], [], 0.1)
        assert not ended, "access() ended at a caught signal: %r" % p.stdout.readline()
        took = time.monotonic() - t0
    finally:
        zk.resume()
    assert p.stdout.readline() == b"ENOENT\n"
    p.wait(timeout=10)
    assert took < 0.5, "the test's own window outgrew the daemon's patience: %.2f s" % took


def test_a_caught_signal_ends_a_request_zookeeper_does_not_answer(mount, zk, request):
    """The same signal ends a request that has waited half a second for a
    server that does not answer: EINTR within a second more, long before
    the session timeout."""
    m = mount(session_timeout=LONG_SESSION_MS)
    d = lockdir(m)
    zk.suspend()
    try:
        p, _ = raw_access(os.path.join(d, "nobody-looked-yet"), handle=True)
        t0 = time.monotonic()
        p.send_signal(signal.SIGUSR1)
        line = p.stdout.readline()
        took = time.monotonic() - t0
    finally:
        zk.resume()
    p.wait(timeout=10)
    assert line == b"EINTR\n", line
    assert took <= 1.5 + LATE, "a caught signal ended access() after %.2f s" % took
    fig(request, "ZooKeeper stopped: a caught signal ends a waiting access() in %.2f s "
        "(session timeout %d s)" % (took, LONG_SESSION_MS // 1000))


def test_a_stop_signal_never_fails_a_request(mount, zk):
    """A stop (SIGSTOP here; ^Z's SIGTSTP alike, which the kernel drops in
    an orphaned process group such as the test's) of a process whose
    request waits for ZooKeeper: the request is answered when ZooKeeper
    answers, however long that takes, and the process goes on with that
    answer once continued."""
    m = mount(session_timeout=LONG_SESSION_MS)
    d = lockdir(m)
    zk.suspend()
    try:
        p, _ = raw_access(os.path.join(d, "nobody-looked-yet"), handle=False)
        p.send_signal(signal.SIGSTOP)
        # past the patience of a caught signal, and a sweep after it: an
        # EINTR would have been answered by now (the process, stopped at
        # its return, would print it after SIGCONT)
        time.sleep(2.0)
    finally:
        zk.resume()
    wait_for(lambda: harness.proc_state(p.pid) == "T", 10, "stopped once answered")
    p.send_signal(signal.SIGCONT)
    assert p.stdout.readline() == b"ENOENT\n"
    p.wait(timeout=10)


def test_no_request_outlives_the_session_timeout(mount, zk, request):
    m = mount(session_timeout=2000)
    d = lockdir(m)
    zk.suspend()
    try:
        t0 = time.monotonic()
        with pytest.raises(OSError) as e:
            os.stat(os.path.join(d, "nobody-looked-yet"))
        took = time.monotonic() - t0
    finally:
        zk.resume()
    assert e.value.errno == errno.ETIMEDOUT, e.value
    assert took <= 2.0 + LATE, "stat() took %.2f s, the session timeout is 2 s" % took
    # answered at its deadline, or once the session was declared silent
    wait_for(lambda: "found no answer from ZooKeeper within the session timeout"
             in log(m) or "answered ETIMEDOUT: ZooKeeper is silent" in log(m), 10,
             "the daemon's line")
    fig(request, "ZooKeeper stopped: stat() answered ETIMEDOUT after %.2f s "
        "(session timeout 2 s)" % took)


def test_zklock_without_bounds_waits_through_an_outage(mount, zk, zklock):
    m = mount(session_timeout=2000)
    d = lockdir(m)
    zk.suspend()
    try:
        p = spawn([zklock, "--verbose", os.path.join(d, "new"), "echo", "ran"],
                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE)
        # the outage outlasts the session timeout: the mount answers
        # zklock's lookup ETIMEDOUT, and zklock asks again
        wait_for(lambda: "found no answer from ZooKeeper" in log(m) or
                 "ZooKeeper is silent" in log(m), 20,
                 "a request of zklock's answered ETIMEDOUT")
        assert p.poll() is None, "zklock gave up during the outage"
    finally:
        zk.resume()
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and out == b"ran\n", (p.returncode, out, err)
    assert b"ZooKeeper does not answer the mount: waiting" in err, err


def stamps(path):
    """The times (seconds, CLOCK_REALTIME) a command wrote, one a line."""
    try:
        with open(path) as f:
            return [float(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


@pytest.mark.parametrize("skew", [0, -300, 300], ids=["same-clock", "behind-300s",
                                                    "ahead-300s"])
def test_a_frozen_daemon_cannot_keep_the_command_running(mount, zklock, scratch,
                                                         request, skew):
    """The daemon holding the lock is SIGSTOPped while another mount waits:
    the command's last sign of life comes before the other host's grant,
    by at least the margin (a tenth of the session timeout), and zklock
    exits 75 saying why.  So too for a zklock in a time namespace whose
    CLOCK_BOOTTIME is 300 s behind or ahead of the daemon's (a container,
    a CRIU restore): it measures on the daemon's clock."""
    a = mount(session_timeout=4000)
    b = mount(session_timeout=4000)
    margin = 0.4
    beats = os.path.join(scratch, "beats")
    grant = os.path.join(scratch, "grant")
    d_a, d_b = lockdir(a), b.p("L")
    in_ns = ["unshare", "--time", "--boottime", str(skew)] if skew else []
    holder = spawn(in_ns + [zklock, d_a, "sh", "-c",
                    'while :; do date +%s.%N >>"$1"; sleep 0.02; done', "sh", beats],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)
    wait_for(lambda: len(stamps(beats)) >= 10, 20, "the command under the lock running")
    assert holder.poll() is None, holder.stderr.read()
    waiter = spawn([zklock, d_b, "sh", "-c", 'date +%s.%N >"$1"', "sh", grant],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)
    wait_for(lambda: len(os.listdir(d_b)) == 2, 20, "the waiter queued")
    os.kill(a.proc.pid, signal.SIGSTOP)
    stopped = time.time()
    try:
        assert waiter.wait(timeout=60) == 0, waiter.stderr.read()
        granted = stamps(grant)[0]
        last = stamps(beats)[-1]
        time.sleep(0.2)             # a command still running would beat again
        assert stamps(beats)[-1] == last, "the command ran on after the grant"
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)
    err = holder.communicate(timeout=60)[1].decode()
    assert holder.returncode == 75, (holder.returncode, err)
    assert "it is stopped or frozen" in err and "SIGKILL" in err, err
    # the watchdog acts at the instant the server may still keep the
    # session less the margin; the server expires it no earlier than a
    # margin later (a beat is 20 ms, hence the tenth spared)
    assert granted - last >= 0.9 * margin, \
        "the command's last beat only %.3f s before the grant (margin %.1f s)" \
        % (granted - last, margin)
    fig(request, "daemon SIGSTOPped (session timeout 4 s, margin 0.4 s, zklock's clock "
        "%+d s): the command's last beat %.2f s after the stop, the other mount's grant "
        "%.2f s after it: %.3f s apart" % (skew, last - stopped, granted - stopped,
                                           granted - last))


def test_zklock_ends_its_command_when_zookeeper_is_silent(mount, zk, zklock, scratch):
    """ZooKeeper stops answering a healthy mount: at the session timeout
    less the margin the lock may be another host's a margin later, so
    zklock ends the command's tree then and says why."""
    m = mount(session_timeout=2000)
    beats = os.path.join(scratch, "beats")
    r = spawn([zklock, lockdir(m), "sh", "-c",
               'while :; do date +%s.%N >>"$1"; sleep 0.02; done', "sh", beats],
              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
              stderr=subprocess.PIPE)
    wait_for(lambda: stamps(beats), 20, "the command under the lock running")
    zk.suspend()
    stopped = time.time()
    try:
        err = r.communicate(timeout=30)[1].decode()
        last = stamps(beats)[-1]
    finally:
        zk.resume()
    assert r.returncode == 75, (r.returncode, err)
    assert "heard nothing from ZooKeeper" in err, err
    # one account of the loss, not "lost" and then "may be lost"
    assert len([ln for ln in err.splitlines() if "SIGKILL" in ln]) == 1, err
    assert last - stopped < 2.0, "the command ran %.2f s into the outage" % (last - stopped)


def test_zklock_list_ends_at_the_session_timeout(mount, zk, zklock):
    m = mount(session_timeout=2000)
    d = lockdir(m)
    zk.suspend()
    try:
        rc, err, took = run([zklock, "--list", os.path.join(d, "nobody-looked-yet")])
    finally:
        zk.resume()
    assert rc == 69 and "ZooKeeper did not answer the mount" in err, (rc, err)
    assert took <= 2.0 + LATE, "zklock --list took %.2f s" % took


@pytest.mark.parametrize("what", ["ls-l", "stats"])
def test_a_command_of_several_requests_ends_within_one_session_timeout(
        mount, zk, request, what):
    """The bound is the command's, not each request's: once the mount has
    declared its session silent, every request that needs ZooKeeper is
    answered ETIMEDOUT at once, so `ls -l` of a lock with entries (a
    listing, then a lookup of each entry) or a script's series of stat(2)s
    of names not seen before ends within one session timeout, plus a
    second, in all."""
    timeout = 2.0
    m = mount(session_timeout=int(timeout * 1000))
    d = lockdir(m)
    held = [take(d, "h%d" % i, harness.SHARED) for i in range(3)]
    zk.suspend()
    try:
        t0 = time.monotonic()
        if what == "ls-l":
            rc, out, took = run(["ls", "-l", d])
        else:
            script = "; ".join('stat %s/never-seen-%d >/dev/null 2>&1' % (m.path, i)
                               for i in range(6))
            rc, out, took = run(["sh", "-c", script])
        took = time.monotonic() - t0
    finally:
        zk.resume()
    for h in held:
        h.release()
    fig(request, "ZooKeeper stopped: %s took %.2f s (session timeout %.0f s)"
        % ("ls -l of a lock with 3 entries" if what == "ls-l" else "6 stat(2)s",
           took, timeout))
    assert took <= timeout + 1.0 + LATE, "%s took %.2f s" % (what, took)
