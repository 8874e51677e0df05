"""In doubt, and lost: what a holder is told while its mount cannot hear
ZooKeeper (docs/SPEC.md, "In doubt, and lost").

A host is a mount behind a FaultProxy (faultproxy.py) whose blackhole is a
partition: nothing flows, nothing closes. Its session timeout is 4 s, so a
ping period is 0.4 s and doubt comes 0.8 s after the cut, silence (lost)
3.6 s after it. What these tests hold the daemon and zklock to:
  * a holder cut off reads "doubt" (user.zklockfs.state), and a poll()
    asking for POLLPRI wakes on entering doubt and again on leaving it;
  * a partition healed in time returns it to "held"; one that outlasts
    the session timeout ends in "lost";
  * the metrics count the time spent in doubt;
  * zklock --on-doubt SIG[,SIG2] signals the command as the lock enters
    doubt (before another host can hold it) and as it leaves it;
  * zklock looking for doubt behind a revocation, whose POLLPRI stays up,
    does not spin.
"""

import os
import re
import select
import time

import pytest

import harness
from harness import (GRANT_TIMEOUT, RDWR, SLOW, Poller, fig, lock_state, lockdir,
                     seen_dir, start_waiter, take, wait_for)
from zklockrun import Run, wait_entry_of, zk
from zklockrun import kill_descendants  # noqa: F401 (autouse)

TIMEOUT_MS = 4000
METRICS = "user.zklockfs.metrics"


def metric(m, name):
    text = os.getxattr(m.path, METRICS).decode()
    found = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    assert found, "no %s in the metrics" % name
    return float(found.group(1))


def cut_off(proxy, mount):
    """A host behind a proxy, and one that reaches ZooKeeper directly."""
    px = proxy()
    P = mount(connect=px.hostport, session_timeout=TIMEOUT_MS)
    D = mount(session_timeout=TIMEOUT_MS)
    return px, P, D


def test_a_holder_cut_off_is_in_doubt_until_zookeeper_answers(proxy, mount, request):
    px, P, _ = cut_off(proxy, mount)
    h = take(lockdir(P, "L"), "h", RDWR)
    into = Poller(h, select.POLLPRI)
    assert lock_state(h) == "held"
    assert metric(P, "zklockfs_sessions_in_doubt") == 0

    t0 = time.monotonic()
    px.blackhole()
    try:
        ev, t = into.wait_event(5 * SLOW)
        assert ev & select.POLLPRI and not ev & (select.POLLERR | select.POLLHUP), \
            "poll() woke with %#x" % ev
        assert lock_state(h) == "doubt"
        assert metric(P, "zklockfs_sessions_in_doubt") == 1
        into.stop()
        fig(request, "partition -> holder's poll() wakes POLLPRI, state doubt: "
            "%.2f s (session timeout %d s)" % (t - t0, TIMEOUT_MS // 1000))
        out = Poller(h, select.POLLPRI)     # the next edge: out of doubt
    finally:
        px.heal()
    t1 = time.monotonic()
    ev, t = out.wait_event(5 * SLOW)
    assert ev & select.POLLPRI and not ev & (select.POLLERR | select.POLLHUP)
    assert lock_state(h) == "held"
    out.stop()
    fig(request, "heal -> holder's poll() wakes POLLPRI, state held: %.2f s" % (t - t1))
    assert metric(P, "zklockfs_sessions_in_doubt") == 0
    assert metric(P, "zklockfs_doubt_seconds_total") > 0
    h.release()


def test_a_holder_cut_off_past_the_session_timeout_is_lost(proxy, mount):
    px, P, D = cut_off(proxy, mount)
    h = take(lockdir(P, "L"), "h", RDWR)
    w = start_waiter(seen_dir(D, "L"), "w")
    states = []
    px.blackhole()
    try:
        def seen():
            s = lock_state(h)
            if not states or states[-1] != s:
                states.append(s)
            return s == "lost"
        wait_for(seen, 5 * TIMEOUT_MS / 1000 * SLOW, "the holder to read lost")
    finally:
        px.heal()
    assert states[:1] == ["held"] or states[:1] == ["doubt"], states
    assert "doubt" in states and states[-1] == "lost", states
    assert states.index("doubt") < states.index("lost"), states
    w.wait_granted()
    h.release()
    w.release()


# The command zklock runs: says each signal it gets, with the time, and
# exits on SIGTERM.
SIGNALLED = (
    "import signal, sys, time\n"
    "def on(sig, frame):\n"
    "    print('got', signal.Signals(sig).name, time.monotonic(), flush=True)\n"
    "    if sig == signal.SIGTERM: sys.exit(0)\n"
    "for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM):\n"
    "    signal.signal(s, on)\n"
    "print('in', flush=True)\n"
    "while True: signal.pause()\n")


def got(r, sig):
    line = r.expect_line(5 * SLOW)
    name, when = line.split()[1:]
    assert name == sig, line
    return float(when)


def test_zklock_on_doubt_stops_the_work_before_another_host_holds(proxy, mount, zklock,
                                                                  request):
    """The command is told at doubt, well before the server expires the
    session and another host is granted; the loss then ends it (75)."""
    px, P, D = cut_off(proxy, mount)
    d = P.p("L")
    os.mkdir(d)
    r = Run(zklock, "--on-doubt", "USR1,USR2", "-N", "me", d, harness.PY, "-c", SIGNALLED)
    assert r.expect_line() == "in"
    w = start_waiter(seen_dir(D, "L"), "w")
    px.blackhole()
    try:
        paused = got(r, "SIGUSR1")
        w.wait_granted(5 * TIMEOUT_MS / 1000 * SLOW)
        granted = time.monotonic()
    finally:
        px.heal()
    assert paused < granted
    fig(request, "zklock --on-doubt: command signalled %.2f s before another "
        "host's grant (session timeout %d s)" % (granted - paused, TIMEOUT_MS // 1000))
    assert r.finish() == 75, r.err
    assert "in doubt" in r.err and "SIGKILL" in r.err, r.err
    w.release()


def test_zklock_on_doubt_tells_the_command_when_the_lock_holds_again(proxy, mount,
                                                                      zklock):
    px, P, _ = cut_off(proxy, mount)
    d = P.p("L")
    os.mkdir(d)
    r = Run(zklock, "--on-doubt=usr1,SIGUSR2", "-N", "me", d, harness.PY, "-c", SIGNALLED)
    assert r.expect_line() == "in"
    px.blackhole()
    try:
        got(r, "SIGUSR1")
    finally:
        px.heal()
    got(r, "SIGUSR2")
    os.kill(r.pid, 15)
    got(r, "SIGTERM")
    assert r.finish() in (0, 143), (r.rc, r.err)
    assert "held again" in r.err, r.err


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_zklock_looks_for_doubt_behind_a_revocation_without_spinning(mount, zklock):
    """A revocation holds POLLPRI up until the lock is given back: zklock
    then reads the state every quarter second, and stays idle."""
    m = mount()
    d = m.p("L")
    os.mkdir(d)
    r = Run(zklock, "--on-doubt", "USR2", "--on-revoke", "USR1", "-N", "me", d,
            harness.PY, "-c", SIGNALLED)
    assert r.expect_line() == "in"
    os.setxattr(os.path.join(d, wait_entry_of(d, "me")), "user.zklockfs.revoke", b"1")
    got(r, "SIGUSR1")
    c0, t0 = cpu_seconds(r.pid), time.monotonic()
    time.sleep(2)       # the thing measured: what zklock spends meanwhile
    used = cpu_seconds(r.pid) - c0
    assert used < 0.2 * (time.monotonic() - t0), "zklock used %.2f s of CPU" % used
    os.kill(r.pid, 15)
    r.finish()


@pytest.mark.parametrize("arg", ["STOP", "USR1,SIGTSTP", "USR1,NOPE", "NOPE", "USR1,"])
def test_on_doubt_takes_one_or_two_signals_and_no_stop_signal(zklock, arg):
    rc, _, err = zk(zklock, "--on-doubt=" + arg, "/tmp", "true")
    assert rc == 64, (rc, err)
    assert "would stop the command" in err or "invalid signal" in err, err


def test_a_lock_granted_without_a_cut_reads_held(mount):
    """No partition, no doubt: a busy session's pings answered in time."""
    m = mount(session_timeout=TIMEOUT_MS)
    d = lockdir(m, "L")
    for i in range(20):
        h = take(d, "h%d" % i, RDWR, timeout=GRANT_TIMEOUT)
        assert lock_state(h) == "held"
        h.release()
    assert metric(m, "zklockfs_doubt_seconds_total") == 0
