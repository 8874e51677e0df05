"""Fault injection: an operator's delete, partitions, a slow link, a
ZooKeeper restart, a three-server ensemble losing a member.

Each "host" is a mount; a host behind a FaultProxy (faultproxy.py, the
`proxy` fixture of conftest.py) can be partitioned from ZooKeeper while the
others talk to it directly. Durations that are the thing under test (a
partition, an outage) are real waits; the rest waits for events with
deadlines. Measured times are recorded with harness.record_figure and
printed at the end of the run ("figure: ...").

What docs/SPEC.md promises and these tests hold the daemon to:
  * a holder's lock is lost when its entry is deleted by someone else or its
    session expires; then poll() gives POLLERR|POLLHUP (waking a process
    already blocked in poll()), read/write/fsync give EIO, and
    user.zklockfs.state reads "lost";
  * once nothing was heard from ZooKeeper for the session timeout, held
    locks are lost, "heard" counted from when the server read what we
    sent, never from when its answer came (a slow link); while
    disconnected for less (a short partition, a server restarted, an
    ensemble member lost), they stay held;
  * after an expiry the daemon opens a new session on its own and its
    waiters are enqueued again.

Creates, waits and writes during an outage are in test_unknown_outcome.py;
a daemon killed or unmounted while it holds locks, in test_daemon_gone.py.
Their shared helpers are the harness': the bounds TICK, NOTICE and
GRANT_LATENCY, Poller and fig() (procs.py), the queue in ZooKeeper
(zk_entries, wait_zk_entries, named) and log_has() (mounts.py), waiting()
and round_trip() (lockers.py).
"""

import os
import select
import threading
import time

import pytest

import delayproxy
import faultproxy
import harness
from harness import (two_mounts, held_and_waited, lock_state, assert_lost,
                     lockdir, seen_dir, GRANT_TIMEOUT, GRANT_LATENCY, NOTICE,
                     RDWR, SLOW, TICK, XATTR_SEQ, Poller, fig, log_has, named,
                     round_trip, seq_of, start_waiter, take, wait_for,
                     wait_zk_entries, waiting, zk_entries)
from sections import Sections

POLLERR_HUP = select.POLLERR | select.POLLHUP


# ---------------------------------------------------------------------------
# fixtures (like conftest.py's `proxy`, list them BEFORE `mount` in a
# test's arguments, so that they are torn down after the mounts)
# ---------------------------------------------------------------------------

@pytest.fixture
def zk_solo(tmp_path_factory):
    """A standalone ZooKeeper of this test's own (to kill and restart)."""
    with harness.zookeeper(tmp_path_factory, "zk-solo") as server:
        yield server


@pytest.fixture
def ensemble(tmp_path_factory):
    """Three ZooKeeper servers on 127.0.0.1 forming one ensemble."""
    with harness.zookeeper(tmp_path_factory, "ensemble", n=3) as e:
        yield e


# ---------------------------------------------------------------------------
# lost by deletion
# ---------------------------------------------------------------------------

def test_operator_delete_wakes_blocked_poll_and_grants_next(mount, zkc,
                                                            request):
    m1, m2, d1, d2 = two_mounts(mount)
    h, w = held_and_waited(d1, d2, RDWR)
    # two processes already blocked in poll() on the holder's descriptor:
    # one asking for nothing (events=0), one for POLLPRI
    pollers = [Poller(h, 0), Poller(h, select.POLLPRI)]
    assert lock_state(h) == "held"

    t0 = time.monotonic()
    zkc.delete(m1.zkpath("L/" + h.entry))      # an operator breaks the lock
    for p in pollers:
        ev, t = p.wait_event(5 * SLOW)
        assert ev & POLLERR_HUP == POLLERR_HUP, "poll() woke with %#x" % ev
        assert t >= t0
    wake = max(p.result[1] for p in pollers) - t0
    w.wait_granted()
    granted = time.monotonic() - t0
    fig(request, "operator delete -> holder's blocked poll() wakes "
        "POLLERR|POLLHUP: %.3f s" % wake)
    fig(request, "operator delete -> waiter on another mount granted: "
        "%.3f s" % granted)
    assert_lost(h)
    for p in pollers:
        p.stop()
    h.release()
    wait_zk_entries(zkc, m1, [w.entry])
    assert lock_state(w) == "held"
    w.release()
    wait_zk_entries(zkc, m1, [])


# ---------------------------------------------------------------------------
# a short partition loses nothing
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["blackhole", "reset+blackhole"])
def test_short_partition_keeps_locks_and_waiters(proxy, mount, zkc, request,
                                                 how):
    timeout_ms = 4000
    px = proxy()
    P = mount(connect=px.hostport, session_timeout=timeout_ms)   # partitioned
    D = mount(session_timeout=timeout_ms)                        # direct
    dPa, dPb = lockdir(P, "A"), lockdir(P, "B")
    dDa, dDb = seen_dir(D, "A"), seen_dir(D, "B")
    h = take(dPa, "h", RDWR)        # held on the partitioned host
    wD = start_waiter(dDa, "wd")    # waits behind it on the direct host
    k = take(dDb, "k", RDWR)        # held on the direct host
    wP = start_waiter(dPb, "wp")    # waits behind it on the partitioned host
    poller = Poller(h, 0)           # wakes only at a loss (doubt is POLLPRI)
    acc0 = px.accepted

    t0 = time.monotonic()
    px.blackhole()
    if how == "reset+blackhole":
        px.close_all()              # the host's connection breaks as well
    partition = timeout_ms / 2000.0
    states = set()
    while time.monotonic() - t0 < partition:
        states.add(lock_state(h))     # answered from memory
        assert waiting(wP), "waiter granted during a partition"
        poller.assert_quiet()
        time.sleep(0.1)
    px.heal()
    assert states <= {"held", "doubt"} and "doubt" in states, \
        "holder's state during a %.1f s partition: %r" % (partition, states)

    # after the heal: the same session, the same entries, nothing lost
    back, errs = round_trip(h, 10 * SLOW)
    wait_for(lambda: lock_state(h) == "held", 5 * SLOW, "the holder out of doubt")
    poller.assert_quiet()
    if how == "reset+blackhole":
        assert px.accepted > acc0, "the client never reconnected"
    assert waiting(wP)
    assert waiting(wD)
    wait_zk_entries(zkc, P, [h.entry, wD.entry], "A")
    wait_zk_entries(zkc, P, [k.entry, wP.entry], "B")
    fig(request, "short partition (%s, %.1f s, session timeout %d s) -> "
        "first round trip after heal: %.3f s%s"
        % (how, partition, timeout_ms // 1000, back,
           " (failed writes first: %s)" % errs if errs else ""))

    t2 = time.monotonic()
    k.release()
    wP.wait_granted()
    fig(request, "short partition (%s): release on direct mount -> waiter on "
        "healed mount granted: %.3f s" % (how, time.monotonic() - t2))
    poller.assert_quiet()
    poller.stop()
    h.release()
    wD.wait_granted()
    wait_zk_entries(zkc, P, [wD.entry], "A")
    wait_zk_entries(zkc, P, [wP.entry], "B")
    wD.release()
    wP.release()
    wait_zk_entries(zkc, P, [], "A")
    wait_zk_entries(zkc, P, [], "B")
    assert not log_has(P, r"lost"), P.log_tail()


def test_reads_in_flight_when_the_connection_breaks_are_sent_again(
        proxy, mount, request):
    """A stat, a listing and an xattr read whose replies were on their way
    when the connection broke (a reset; the server restarting) failed with
    EIO. They are sent again once the session is back (within a session
    timeout), and answered."""
    timeout_ms = 4000
    px = proxy()
    P = mount(connect=px.hostport, session_timeout=timeout_ms)
    D = mount(session_timeout=timeout_ms)
    os.mkdir(D.p("L"))              # made on the other host: P must ask
    got = {}

    def run(name, fn):
        try:
            got[name] = ("ok", fn())
        except OSError as e:
            got[name] = ("error", harness.errname(e.errno))

    def count(ops):
        return sum(c.count(op) for c in px.ops() for op in ops)

    # a listing is getChildren2 (12): the names and the lock znode's Stat
    GETDATA, GETCHILDREN = (4,), (12,)
    n_get, n_list = count(GETDATA), count(GETCHILDREN)
    px.blackhole(faultproxy.DOWN)   # requests reach the server, replies wait
    threads = [threading.Thread(target=run, args=a, daemon=True) for a in (
        ("stat", lambda: os.stat(P.p("L")).st_ino != 0),
        ("listdir", lambda: os.listdir(P.path)),
        ("holders", lambda: os.getxattr(P.path, harness.XATTR_HOLDERS)))]
    for t in threads:
        t.start()
    # the stat's getData, the listing's getChildren, and the holders'
    # first request: the lock's data (a semaphore's limit), then its listing
    wait_for(lambda: count(GETDATA) >= n_get + 2 and count(GETCHILDREN) >= n_list + 1,
             10, "the three requests sent (ops seen: %r)" % px.ops())
    t0 = time.monotonic()
    px.close_all()                  # their replies are lost with it
    px.heal()
    for t in threads:
        t.join(timeout_ms / 1000.0 + 10)
    fig(request, "stat, listdir, getxattr in flight at a connection reset -> "
        "answered %.2f s after it" % (time.monotonic() - t0))
    assert got == {"stat": ("ok", True), "listdir": ("ok", ["L"]),
                   "holders": ("ok", b"")}, got


# ---------------------------------------------------------------------------
# a long partition: the holder's lock is lost, the mount recovers alone
# ---------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_long_partition_loses_lock_then_mount_recovers(proxy, mount, zkc,
                                                       request):
    timeout_ms = 4000
    tmo = timeout_ms / 1000.0
    px = proxy()
    P = mount(connect=px.hostport, session_timeout=timeout_ms)   # partitioned
    D = mount(session_timeout=timeout_ms)                        # direct
    dP = lockdir(P)
    dD = seen_dir(D)
    h = take(dP, "h", RDWR)
    wP = start_waiter(dP, "wp")     # behind h, on the partitioned host
    wD = start_waiter(dD, "wd")     # behind both, on the direct host
    wait_zk_entries(zkc, P, [h.entry, wP.entry, wD.entry])
    poller = Poller(h, 0)

    t0 = time.monotonic()
    px.blackhole()
    # (a) the holder learns it lost the lock after about the session timeout
    seen = []
    deadline = t0 + tmo + NOTICE + 2.0
    while poller.quiet() and time.monotonic() < deadline:
        s = lock_state(h)
        if not seen or seen[-1][1] != s:
            seen.append((round(time.monotonic() - t0, 2), s))
        time.sleep(0.05)
    ev, t_err = poller.wait_event(max(0.0, deadline - time.monotonic()))
    lost_after = t_err - t0
    fig(request, "partition -> holder's blocked poll() POLLERR|POLLHUP: "
        "%.2f s (session timeout %.0f s)" % (lost_after, tmo))
    assert ev & POLLERR_HUP == POLLERR_HUP, "poll() woke with %#x" % ev
    # not lost while disconnected for less than the timeout (minus what
    # may have gone unheard before the partition began: one ping period)
    assert lost_after >= tmo - 1.0, \
        "lost after %.2f s of a %.0f s session timeout; states %r" \
        % (lost_after, tmo, seen)
    # and lost once nothing was heard for the timeout: within T of the
    # partition's start, plus the time to notice and wake the poller
    assert lost_after <= tmo + NOTICE, \
        "lost only after %.2f s, bound %.2f s (session timeout %.0f s + " \
        "%.1f s to notice); states %r" % (lost_after, tmo + NOTICE, tmo,
                                          NOTICE, seen)
    lost_first = [t for t, s in seen if s == "lost"]
    assert not lost_first or lost_first[0] >= tmo - 1.0, seen
    assert_lost(h)                  # answered from memory, still partitioned

    # (b) the server expires the session: the direct host gets the lock
    bound = tmo + TICK + GRANT_LATENCY
    wD.wait_granted(bound + 5.0 * SLOW)
    granted = time.monotonic() - t0
    fig(request, "partition -> waiter on another (direct) mount granted: "
        "%.2f s (server-side expiry)" % granted)
    assert granted <= bound, "granted only %.2f s after the partition " \
        "began, bound %.2f s (session timeout %.0f s + a tick + %.1f s " \
        "hand-over)" % (granted, bound, tmo, GRANT_LATENCY)
    assert waiting(wP)
    wait_zk_entries(zkc, P, [wD.entry])          # P's session is gone

    # heal: the mount finds its session expired, opens a new one on its own
    # and enqueues its waiter again (behind wD, which holds now)
    t_heal = time.monotonic()
    px.heal()

    def wp_back():
        es = zk_entries(zkc, P)
        return len(es) == 2 and es[0] == wD.entry and named(es, "wp")
    wait_for(wp_back, 10 * SLOW, "the partitioned mount's waiter to be "
             "enqueued again after the heal (queue %r)" % zk_entries(zkc, P))
    fig(request, "heal -> waiter on the healed mount enqueued again: %.2f s"
        % (time.monotonic() - t_heal))
    assert log_has(P, r"session expired"), P.log_tail()
    assert waiting(wP), "granted while wd holds the lock"
    poller.stop()
    h.release()                     # closing a lost descriptor
    t_rel = time.monotonic()
    wD.release()
    wP.wait_granted()
    fig(request, "after heal: release on direct mount -> re-enqueued waiter "
        "granted: %.3f s" % (time.monotonic() - t_rel))
    assert lock_state(wP) == "held"
    wait_zk_entries(zkc, P, [named(zk_entries(zkc, P), "wp")[0]])
    assert seq_of(zk_entries(zkc, P)[0]) == int(wP.xattr(XATTR_SEQ))

    # the same daemon (no restart) takes new locks
    assert P.proc.poll() is None
    n = start_waiter(dP, "n")
    n.assert_waiting(0.3)
    wP.release()
    n.wait_granted()
    n2 = take(lockdir(P, "L2"), "n2")
    n2.release()
    n.release()
    wait_zk_entries(zkc, P, [])
    wait_zk_entries(zkc, P, [], "L2")


# ---------------------------------------------------------------------------
# a slow link: the server renews a session when it reads the request, a
# one-way delay before the daemon hears the answer
# ---------------------------------------------------------------------------

@pytest.fixture
def link(zk, tmp_path):
    """A slow link to the session's ZooKeeper (delayproxy.DelayLink), at
    once until told."""
    lk = delayproxy.DelayLink(str(tmp_path / "link"),
                              [("127.0.0.1", 0, zk.host, zk.port)]).start()
    yield lk
    lk.stop()


SLOW_SESSION_MS = 6000      # the receive timeout, 4 s, bounds the handshake


@pytest.mark.timeout(90)
def test_a_holder_reconnected_over_a_slow_link_is_told_before_the_server_can_expire_it(
        link, mount, zkc, request):
    """The host reconnects over a link that holds every byte 1.8 s each
    way, and hears nothing more once the ConnectRequest is answered.  The
    server last heard the session when it read that request, 1.8 s before
    the answer came: the holder must be told its lock is lost a margin
    before the session can expire counted from the request, so before
    the other host's waiter is granted."""
    tmo = SLOW_SESSION_MS / 1000.0
    P = mount(connect=link.hostports[0], session_timeout=SLOW_SESSION_MS)
    D = mount(session_timeout=SLOW_SESSION_MS)
    h = take(lockdir(P), "h", RDWR)
    w = start_waiter(seen_dir(D), "w")
    wait_zk_entries(zkc, P, [h.entry, w.entry])
    poller = Poller(h, 0)
    granted = []
    waiter = threading.Thread(
        target=lambda: (w.wait_granted(4 * tmo), granted.append(time.monotonic())),
        daemon=True)
    waiter.start()
    link.set(1.8, "hold-after-reply")
    t0 = time.monotonic()
    link.close_all()
    ev, t_err = poller.wait_event(4 * tmo)
    waiter.join(4 * tmo)
    assert ev & POLLERR_HUP == POLLERR_HUP, "poll() woke with %#x" % ev
    assert granted, "the direct host's waiter was never granted"
    fig(request, "slow link (1.8 s each way), reconnect, cut: holder told %.2f s, "
        "the other host granted %.2f s after the reconnect began"
        % (t_err - t0, granted[0] - t0))
    assert log_has(P, r"reconnected to ZooKeeper"), \
        "the reconnect over the slow link never happened:\n" + P.log_tail()
    assert t_err < granted[0], \
        "the holder was told %.2f s after the other host was granted" \
        % (t_err - granted[0])
    poller.stop()
    h.release()
    w.release()


@pytest.mark.timeout(90)
def test_a_silence_declared_on_a_live_connection_ends_with_a_ping_answered(
        link, mount, zkc, request):
    """The connection drops and the host reconnects only after a while,
    over a slow link: its first answer comes later than the session
    timeout less the margin after the drop.  Nothing proves the server
    heard the session within that time, so the holder is told its lock is
    lost at once; but the session lives, and the first ping sent after
    the silence and answered ends it: the mount grants again, with no
    expiry and no new connection."""
    tmo = SLOW_SESSION_MS / 1000.0
    P = mount(connect=link.hostports[0], session_timeout=SLOW_SESSION_MS)
    h = take(lockdir(P), "h", RDWR)
    poller = Poller(h, 0)
    link.set(0.9, "refuse")
    t0 = time.monotonic()
    link.close_all()
    time.sleep(3.8)         # the outage under test: reconnects refused
    link.set(0.9)
    ev, t_err = poller.wait_event(3 * tmo)
    assert ev & POLLERR_HUP == POLLERR_HUP, "poll() woke with %#x" % ev
    link.set(0)             # what is in flight keeps its delay
    poller.stop()
    h.release()

    def answers():
        try:
            return os.listdir(P.p("L")) is not None
        except TimeoutError:        # still silent: ETIMEDOUT at once
            return False
    wait_for(answers, 2 * tmo, "the mount to answer again")
    t_back = time.monotonic()
    n = take(P.p("L"), "n", RDWR)
    fig(request, "reconnected late over a slow link: holder told %.2f s, the mount "
        "answers again %.2f s, a new lock held %.2f s after the drop"
        % (t_err - t0, t_back - t0, time.monotonic() - t0))
    assert not log_has(P, r"session expired"), P.log_tail()
    n.release()


# ---------------------------------------------------------------------------
# the server restarted within the session timeout loses nothing
#    (SIGSTOP/SIGCONT of the server: test_loss.py, and the unknown-create
#    test of test_unknown_outcome.py, which checks a holder's blocked poll()
#    stays quiet)
# ---------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_server_restart_within_session_timeout_loses_nothing(zk_solo, mount,
                                                             request):
    srv = zk_solo
    timeout_ms = 10000
    A, B, dA, dB = two_mounts(mount, server=srv, session_timeout=timeout_ms)
    h, w = held_and_waited(dA, dB, RDWR, 0.3)
    with srv.client() as c:
        before = {n: c.exists(A.zkpath("L/" + n)).ephemeralOwner
                  for n in zk_entries(c, A)}
    assert sorted(before) == sorted([h.entry, w.entry])
    poller = Poller(h, 0)           # wakes only at a loss (doubt is POLLPRI)

    t0 = time.monotonic()
    down = srv.restart()            # kill -9, start again: same port, data
    fig(request, "ZooKeeper kill -9 + restart (same port and data dir): "
        "%.2f s until it serves again" % down)
    # the mount reconnects within the same session: a round trip works
    _, errs = round_trip(h, timeout_ms / 1000.0 + 5)
    back = time.monotonic() - t0
    fig(request, "ZooKeeper restart -> holder's mount round trip again: "
        "%.2f s after the kill (session timeout %d s)%s"
        % (back, timeout_ms // 1000,
           "; writes meanwhile: %s" % errs if errs else ""))
    wait_for(lambda: lock_state(h) == "held", 5 * SLOW, "the holder out of doubt")
    poller.assert_quiet()
    assert waiting(w)
    with srv.client() as c:
        after = {n: c.exists(A.zkpath("L/" + n)).ephemeralOwner
                 for n in zk_entries(c, A)}
    assert after == before, "entries changed across the restart"
    # the daemon logs "reconnected" and then looks again at what it holds
    # (requests on the same session: answered before a later round trip
    # sent after them); the holder stays quiet through that
    wait_for(lambda: log_has(A, r"reconnected to ZooKeeper"), GRANT_TIMEOUT,
             "the daemon's reconnected line")
    round_trip(h, GRANT_TIMEOUT)
    assert lock_state(h) == "held"
    poller.assert_quiet()
    # and the lock is handed over normally
    poller.stop()
    t1 = time.monotonic()
    h.release()
    w.wait_granted()
    fig(request, "after ZooKeeper restart: release -> waiter on other mount "
        "granted: %.3f s" % (time.monotonic() - t1))
    with srv.client() as c:
        wait_zk_entries(c, A, [w.entry])
        w.release()
        wait_zk_entries(c, A, [])
    assert not log_has(A, r"lost"), A.log_tail()
    assert not log_has(B, r"lost"), B.log_tail()


# ---------------------------------------------------------------------------
# a three-server ensemble loses the member a holder is connected to
# ---------------------------------------------------------------------------

SECTIONS_AFTER = 3     # critical sections each mount must see after the kill


@pytest.mark.parametrize("victim_is", ["holders-server", "leader"])
@pytest.mark.timeout(150)
def test_ensemble_member_killed_holder_keeps_lock(ensemble, mount, scratch,
                                                  request, victim_is):
    fig(request, "3-server ensemble started and elected a leader in %.1f s"
        % ensemble.started_in)
    timeout_ms = 8000
    A, B, dA, dB = two_mounts(mount, server=ensemble,
                              session_timeout=timeout_ms)
    h, wb = held_and_waited(dA, dB, RDWR, 0.3, waiter="wb")
    poller = Poller(h, 0)           # wakes only at a loss (doubt is POLLPRI)
    c = ensemble.client()
    try:
        sid = c.exists(A.zkpath("L/" + h.entry)).ephemeralOwner
    finally:
        c.close()
    holders = wait_for(lambda: ensemble.member_with_session(sid), 10,
                       "the server A's session is connected to")
    victim = holders if victim_is == "holders-server" else ensemble.leader()
    assert victim is not None
    role = victim.mode()
    used = "the one the holder's mount used" if victim is holders else \
        "the holder's mount used server %d (%s)" % (holders.myid,
                                                    holders.mode())

    # contenders on a second lock, on both mounts, running across the kill:
    # a failed open is logged and tried again (so it can be counted)
    mA, mB = lockdir(A, "M"), seen_dir(B, "M")
    secs = Sections(scratch)
    for tag, d in (("a", mA), ("b", mB)):
        for i in range(2):
            secs.start(os.path.join(d, "x%d" % i), "%s%d" % (tag, i),
                       keep_going=True)
    before = secs.wait_sections(
        lambda r: all(len(r.since(0, m)) >= 2 for m in "ab"), GRANT_TIMEOUT,
        what="two critical sections on each mount before the kill")
    assert not before.failures, "opens failed before the kill: %r" \
        % before.failures

    t0 = time.monotonic()
    victim.kill9()
    survivors = [m for m in ensemble.members if m is not victim]
    # A's lock stays held throughout: sample it until A has done a round trip
    states, errs = set(), []
    back = None
    deadline = t0 + timeout_ms / 1000.0 + 5
    while back is None:
        states.add(lock_state(h))
        poller.assert_quiet()
        ans = h.cmd("write " + b"ping".hex(),
                    timeout=max(0.1, deadline - time.monotonic()))
        if ans == "ok 4":
            back = time.monotonic() - t0
        else:
            errs.append(ans)
            assert time.monotonic() < deadline, (states, errs)
            time.sleep(0.05)
    quorum = ensemble.wait_quorum(30, alive=survivors)
    new_leader = [m.myid for m in survivors if m.mode() == "leader"]
    fig(request, "ensemble: killed server %d (%s; %s) -> holder's mount "
        "round trip again after %.2f s; survivors serving (leader %s) %.2f s "
        "after the kill%s"
        % (victim.myid, role, used, back, new_leader, time.monotonic() - t0,
           "; writes meanwhile: %s" % errs if errs else ""))
    del quorum
    assert states <= {"held", "doubt"}, states
    wait_for(lambda: lock_state(h) == "held", 5 * SLOW, "the holder out of doubt")
    poller.assert_quiet()
    assert waiting(wb)

    # the contenders go on after the kill, on both mounts: the member's
    # loss is a disconnection shorter than the session timeout, so each
    # mount is served again within T (then a grant takes GRANT_TIMEOUT at
    # most); every open waits, none fails ("nothing is lost")
    def failed(r):
        return [(f.wid, round(f.t / 1e9 - t0, 2), f.err) for f in r.failures]
    after = secs.wait_sections(
        lambda r: r.failures or all(len(r.since(t0, m)) >= SECTIONS_AFTER
                                    for m in "ab"),
        max(0.1, t0 + timeout_ms / 1000.0 + GRANT_TIMEOUT - time.monotonic()),
        since=t0, what="%d critical sections begun after the kill on each "
        "mount" % SECTIONS_AFTER)
    assert not after.failures, "opens failed (worker, s after the kill, " \
        "errno): %r" % failed(after)
    resumed = {m: (after.since(t0, m)[SECTIONS_AFTER - 1].enter / 1e9 - t0)
               for m in "ab"}
    secs.stop()
    done = secs.wait(30 * SLOW)
    report = secs.check()           # no overlap, no lost update
    assert not report.failures, "opens failed (worker, s after the kill, " \
        "errno): %r" % failed(report)

    poller.assert_quiet()
    poller.stop()
    t_rel = time.monotonic()
    h.release()
    wb.wait_granted()
    t_grant = time.monotonic()
    fig(request, "ensemble member killed (%s) -> waiter granted after "
        "release: %.3f s (kill -> grant %.2f s, the holder released %.2f s "
        "after the kill)" % (role, t_grant - t_rel, t_grant - t0, t_rel - t0))

    total = len(report.sections)
    assert total == sum(n for n, _ in done.values()), (total, done)
    fig(request, "ensemble: %d exclusive sections by 4 contenders on 2 "
        "mounts across the kill (%d begun after it), no overlap, no failed "
        "open; section no. %d after the kill began %.2f s (mount A), %.2f s "
        "(mount B) after it" % (total, len(report.since(t0)), SECTIONS_AFTER,
                                resumed["a"], resumed["b"]))
    c = ensemble.client()
    try:
        wait_zk_entries(c, A, [wb.entry])
        wb.release()
        wait_zk_entries(c, A, [])
        wait_zk_entries(c, A, [], "M")
    finally:
        c.close()
