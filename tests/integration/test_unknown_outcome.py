"""Requests whose outcome is unknown: a create whose reply is lost or
late, a wait interrupted while its create is unanswered, a write during an
outage.

docs/SPEC.md: nothing is lost and no entry is orphaned. A create whose
reply never came leaves exactly one entry for its waiter (the one ZooKeeper
made, found again and adopted, or one made anew); one given up by its
waiter (EINTR) is deleted once the connection is back; a write() on a held
lock's descriptor while the server is away is accepted and reaches
ZooKeeper, or fails with one line in the daemon's log saying why, and the
lock is never lost. A planted entry that looks like ours is
test_recovery.py's. The outage is a SIGSTOPped server or a FaultProxy
(conftest.py's `proxy`) holding the replies back; the helpers shared with
test_faults.py are the harness'.
"""

import os
import re
import threading
import time

import pytest

import faultproxy
from harness import (lock_state, lockdir, seen_dir, GRANT_TIMEOUT, RDWR, SLOW,
                     WRITE, XATTR_SEQ, Locker, Poller, fig, log_has, named,
                     round_trip, seq_of, start_waiter, take, tcp_peers,
                     wait_for, wait_zk_entries, waiting, zk_entries)


# ---------------------------------------------------------------------------
# a create whose outcome is unknown; a wait interrupted during an outage
# ---------------------------------------------------------------------------

def prime(d, name, zkc, m):
    """Make d a busy lock directory of mount m whose listing is fresh, so
    that an open(O_CREAT) of name made within the next second needs no
    ZooKeeper round trip before its create: the kernel keeps the
    directory's dentry for 1 s, and in a directory where the mount queued a
    lock during the last second the daemon answers the LOOKUP of a lock
    name from a listing at most 1 s old (ZKLFS_LISTCACHE_TTL_MS). Without it an
    open during an outage waits in LOOKUP, not in the create."""
    os.stat(d)
    try:
        os.close(os.open(os.path.join(d, name), os.O_CREAT | os.O_WRONLY | os.O_NONBLOCK))
    except BlockingIOError:
        pass
    wait_for(lambda: not named(zk_entries(zkc, m), name), 5, "the priming entry to go")
    with pytest.raises(FileNotFoundError):
        os.lstat(os.path.join(d, name))


def _outage_start(how, zk, px, A):
    """Start the fault; return a function that tells when A's client has
    given up its connection (so the create's outcome is unknown)."""
    if how == "server-sigstop":
        socks0 = {s[2] for s in tcp_peers(A.pid, zk.port)}
        assert socks0, "no connection from the daemon to ZooKeeper?"
        zk.suspend()
        return lambda: not ({s[2] for s in tcp_peers(A.pid, zk.port)}
                            & socks0)
    acc0 = px.accepted
    px.blackhole(faultproxy.DOWN)   # requests reach ZooKeeper, replies don't
    return lambda: px.accepted > acc0


def _outage_end(how, zk, px):
    if how == "server-sigstop":
        zk.resume()
    else:
        px.heal()


@pytest.mark.parametrize("how", ["server-sigstop", "replies-blackholed"])
@pytest.mark.timeout(120)
def test_unknown_outcome_create_leaves_exactly_one_entry(proxy, mount, zk,
                                                         zkc, request, how):
    timeout_ms = 6000
    px = proxy() if how == "replies-blackholed" else None
    A = mount(session_timeout=timeout_ms,
              connect=px.hostport if px else None)
    B = mount(session_timeout=20000)          # the holder's host survives
    dA = lockdir(A)
    dB = seen_dir(B)
    h = take(dB, "h", RDWR)
    poller = Poller(h, 0)           # wakes only at a loss (doubt is POLLPRI)
    assert zk_entries(zkc, A) == [h.entry]

    prime(dA, "w", zkc, A)
    t0 = time.monotonic()
    gave_up = _outage_start(how, zk, px, A)
    try:
        w = Locker(os.path.join(dA, "w"), WRITE)   # its create goes unanswered
        if how == "replies-blackholed":
            # the create reached ZooKeeper and was done; its reply is held
            wait_for(lambda: named(zk_entries(zkc, A), "w"), 5,
                     "the create to reach ZooKeeper")
            created = named(zk_entries(zkc, A), "w")
        wait_for(gave_up, timeout_ms / 1000.0 + 3,
                 "the daemon's client to give up its connection")
        dropped = time.monotonic() - t0
        # the client fails what it had sent (the create) as it closes the
        # connection: its outcome is unknown now
        assert waiting(w)
    finally:
        _outage_end(how, zk, px)
    fig(request, "unknown create (%s): client gave up the connection after "
        "%.2f s (session timeout %d s)" % (how, dropped, timeout_ms // 1000))

    # exactly one entry for w, now and for a while: no orphan, no duplicate
    t1 = time.monotonic()
    wait_for(lambda: named(zk_entries(zkc, A), "w"), 10 * SLOW,
             "w's entry after the outage")
    ew = named(zk_entries(zkc, A), "w")
    if how == "replies-blackholed":
        assert ew == created, "the entry made during the outage was not " \
            "adopted: %r then %r" % (created, ew)
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        es = zk_entries(zkc, A)
        assert es == [h.entry] + ew, "queue %r (expected %r)" % (
            es, [h.entry] + ew)
        time.sleep(0.1)
    adopted = bool(log_has(A, r"found \S+ again after an unknown create"))
    fig(request, "unknown create (%s): resolved %.2f s after recovery by %s"
        % (how, time.monotonic() - 1.5 - t1,
           "adopting the entry found again" if adopted else "creating anew"))
    if how == "replies-blackholed":
        assert adopted, A.log_tail()
    data, _ = zkc.get_data(A.zkpath("L/" + ew[0]))
    assert re.search(rb"(?m)^zkl=[0-9a-f]{16}$", data), data
    assert waiting(w), "granted while h holds"
    # nothing lost on the holder's side (the server was away < its timeout)
    assert lock_state(h) == "held"
    poller.assert_quiet()
    poller.stop()
    h.release()
    w.wait_granted()
    assert int(w.xattr(XATTR_SEQ)) == seq_of(ew[0])
    wait_zk_entries(zkc, A, ew)
    w.release()
    wait_zk_entries(zkc, A, [])


# A create still in flight when its waiter is interrupted must still be
# cleaned up: a create that then succeeds is adopted and deleted, and one
# failing with ZCONNECTIONLOSS is resolved.  Were its completion ignored once
# the waiter was answered (zkl_cancel()), the orphan entry would live as long
# as the session and every later waiter of the lock would queue behind it
# for ever.
@pytest.mark.parametrize("how", [
    "replies-lost",     # done by ZooKeeper, its reply lost with the connection
    "reply-late",       # done by ZooKeeper, its reply late (no conn. loss)
])
@pytest.mark.timeout(120)
def test_wait_interrupted_during_outage_leaves_no_entry(proxy, mount, zk, zkc,
                                                        request, how):
    timeout_ms = 6000
    px = proxy()
    A = mount(session_timeout=timeout_ms, connect=px.hostport)
    B = mount(session_timeout=20000)
    dA = lockdir(A)
    dB = seen_dir(B)
    h = take(dB, "h", RDWR)

    prime(dA, "w", zkc, A)
    acc0 = px.accepted
    px.blackhole(faultproxy.DOWN)   # requests reach ZooKeeper, replies don't
    try:
        # SIGALRM interrupts the open (libc open: EINTR) while its create's
        # reply is outstanding
        w = Locker(os.path.join(dA, "w"), WRITE, handle=["SIGALRM"],
                   alarm=1.0 if how == "replies-lost" else 0.5)
        wait_for(lambda: named(zk_entries(zkc, A), "w"), 5,
                 "the create to reach ZooKeeper")
        assert w.wait_error(5) == "EINTR"
        if how == "replies-lost":
            px.wait_accepted(acc0 + 1, timeout_ms / 1000.0 + 3)
    finally:
        px.heal()
    if how == "reply-late":
        assert px.accepted == acc0, "the connection was lost after all"
    t1 = time.monotonic()
    # after recovery the given-up entry, made by ZooKeeper, is deleted
    wait_zk_entries(zkc, A, [h.entry], timeout=5 * SLOW)
    fig(request, "interrupted wait during outage (%s): entry gone %.2f s "
        "after recovery" % (how, time.monotonic() - t1))
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        assert zk_entries(zkc, A) == [h.entry]
        time.sleep(0.1)
    # the mount still works
    n = start_waiter(dA, "n")
    n.assert_waiting(0.3)
    h.release()
    n.wait_granted()
    n.release()
    wait_zk_entries(zkc, A, [])


# docs/SPEC.md, "Errors": every failure is a clear errno and, in the
# daemon's log, one line saying why.  A request failing because ZooKeeper is
# unreachable (the holder's data sent by fs/wbuf.c; fs/zop.c's zop_fail())
# says so in the log: a write() on a held lock's descriptor that fails with
# ETIMEDOUT (a stopped server) or EIO (a leader election) is never silent.
@pytest.mark.timeout(120)
def test_write_failing_during_outage_is_logged(mount, zk, zkc, request):
    """The write is sent while the server is stopped and the daemon's
    client gives that connection up with the write unanswered, so it fails
    (EAGAIN: the lock may well be held) with one line in the log saying
    why. A daemon that holds writes back and sends them later (at an
    fsync, a close or a tick, as docs/SPEC.md allows) answers it at once:
    then ZooKeeper must get the data once the server is back. Either way
    the lock is never lost and the next write reaches ZooKeeper."""
    timeout_ms = 6000
    A = mount(session_timeout=timeout_ms)
    dA = lockdir(A)
    h = take(dA, "h", RDWR)
    znode = A.zkpath("L/" + h.entry)
    with open(A.logpath, "rb") as f:
        log0 = len(f.read())

    def new_lines():
        with open(A.logpath, "rb") as f:
            return [ln for ln in f.read()[log0:].decode("utf-8", "replace")
                    .splitlines() if ln.strip() and "reconnected" not in ln]

    gave_up = _outage_start("server-sigstop", zk, None, A)
    answers = []
    try:
        writer = threading.Thread(target=lambda: answers.append(
            h.cmd("write " + b"during".hex(), 20)), daemon=True)
        writer.start()
        wait_for(gave_up, timeout_ms / 1000.0 + 3,
                 "the daemon's client to give up its connection")
    finally:
        zk.resume()                 # well within the session timeout
    writer.join(20)
    wans = answers[0] if answers else "(no answer)"
    # EIO on the holder's descriptor means "lost": a transient failure is not
    assert wans in ("ok 6", "error EAGAIN"), wans
    if wans == "ok 6":
        # accepted: ZooKeeper gets it (at the latest at the next tick)
        wait_for(lambda: zkc.get_data(znode)[0] == b"during", GRANT_TIMEOUT,
                 "the data written during the outage in ZooKeeper "
                 "(%r there)" % (zkc.get_data(znode)[0],))
        what = "accepted; in ZooKeeper after the outage"
    else:
        # refused: one line in the log names the entry and says why
        def why():
            return [ln for ln in new_lines() if h.entry in ln]
        said = wait_for(why, 5 * SLOW, "a line in the daemon's log about "
                        "the failed write of %s (new lines: %r)"
                        % (h.entry, new_lines()))
        assert len(said) == 1 and said[0].split(h.entry, 1)[1].strip(": "), \
            "expected one line saying why the write failed: %r" % said
        what = "refused; the log says %r" % said[0]
    fig(request, "write() on a held lock's descriptor during a ~4 s outage "
        "(session timeout %d s): %s, %s; new log lines: %r"
        % (timeout_ms // 1000, wans, what, new_lines()))
    # the lock was never lost (in doubt until a round trip shows it)
    wait_for(lambda: lock_state(h) == "held", GRANT_TIMEOUT, "the holder out of doubt")
    # the next write goes through, whatever the outage did to the last one
    # (at offset 0: one accepted above moved the descriptor's offset on)
    h.ok("seek 0")
    round_trip(h, GRANT_TIMEOUT, b"after")
    wait_for(lambda: zkc.get_data(znode)[0] == b"after", GRANT_TIMEOUT,
             "the data written after the outage in ZooKeeper")
    assert not [ln for ln in new_lines() if "lost" in ln], new_lines()
    h.release()
