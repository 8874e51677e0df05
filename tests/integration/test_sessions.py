"""A mount with several ZooKeeper sessions (-o sessions=N): each directory
is given one of them, and every request about it goes there, so what one
session did is seen in order by the requests that follow."""

import os
import signal

import pytest

import faultproxy
from harness import (GRANT_TIMEOUT, WRITE, entries, lockdir, seen_dir,
                     start_waiter, take, tcp_peers, wait_for)

ZOO_SYNC_OP = 9

N = 3
DIRS = 7                # more directories than sessions: every session has some


def test_sessions_option_opens_that_many_connections(mount, zk):
    m = mount(opts=["sessions=%d" % N])
    wait_for(lambda: len(tcp_peers(m.pid, zk.port)) == N, 5,
             "%d connections from the daemon" % N)


@pytest.mark.parametrize("bad", ["0", "9", "x"])
def test_sessions_out_of_range_refused(mount, bad):
    with pytest.raises(Exception) as e:
        mount(opts=["sessions=" + bad])
    assert "sessions" in str(e.value)


def test_listing_and_rmdir_right_after_close(mount):
    # the release's delete leaves after close() returns; a listing or rmdir
    # of the directory must still come after it, whatever its session
    m = mount(opts=["sessions=%d" % N])
    shown, refused = [], []
    for i in range(20 * DIRS):
        d = m.p("d%d" % (i % DIRS))
        os.makedirs(d, exist_ok=True)
        os.close(os.open(os.path.join(d, "w"), os.O_CREAT | os.O_WRONLY))
        left = entries(d)
        if left:
            shown.append(left)
        try:
            os.rmdir(d)
        except OSError as e:
            refused.append((d, e.strerror))
    assert not shown, "listings right after close(): %r" % shown[:5]
    assert not refused, "rmdir right after close(): %r" % refused[:5]


def test_nested_directories_across_sessions(mount):
    # each level is on another session: a mkdir must see its parent, and an
    # rmdir of the parent must see the child gone
    m = mount(opts=["sessions=%d" % N])
    for _ in range(30):
        os.makedirs(m.p("a/b/c/d"))
        assert os.listdir(m.p("a/b")) == ["c"]
        for rel in ("a/b/c/d", "a/b/c", "a/b", "a"):
            os.rmdir(m.p(rel))
        assert "a" not in os.listdir(m.path)


def test_locks_in_every_session_exclude_and_hand_over(mount):
    A = mount(opts=["sessions=%d" % N])
    B = mount()
    held, waiting = [], []
    for i in range(DIRS):
        dA = lockdir(A, "L%d" % i)
        held.append(take(dA, "h"))
        waiting.append(start_waiter(seen_dir(B, "L%d" % i), "w", WRITE))
    for w in waiting:
        w.assert_waiting(0.2)
    for h, w in zip(held, waiting):
        h.release()
        w.wait_granted()
        w.release()


def test_unmount_drops_the_entries_of_every_session(mount, zkc):
    # SIGTERM: the daemon closes every session and unmounts (files are open)
    m = mount(opts=["sessions=%d" % N])
    for i in range(DIRS):
        take(lockdir(m, "L%d" % i), "h")
    assert all(zkc.get_children(m.zkpath("L%d" % i)) for i in range(DIRS))
    m.kill(signal.SIGTERM)
    assert m.proc.wait(15) == 0
    left = {i: zkc.get_children(m.zkpath("L%d" % i)) for i in range(DIRS)}
    assert not any(left.values()), left


def test_mkdir_makes_every_other_session_sync_once(mount, zk):
    # in an ensemble a session may be on a server that has not yet seen
    # what another session did: after a mkdir, each other session sends a
    # sync before its next request, once
    px = faultproxy.FaultProxy(zk.host, zk.port).start()
    try:
        m = mount(opts=["sessions=%d" % N], connect=px.hostport)
        dirs = [lockdir(m, "d%d" % i) for i in range(2 * N)]

        def syncs():
            return sum(ops.count(ZOO_SYNC_OP) for ops in px.ops())

        def touch_every_session():
            for d in dirs:
                os.listdir(d)

        touch_every_session()
        before = syncs()
        touch_every_session()
        assert syncs() == before, "syncs with nothing changed"
        os.mkdir(m.p("new"))
        touch_every_session()
        assert syncs() == before + N - 1, px.ops()
        touch_every_session()
        assert syncs() == before + N - 1, px.ops()
    finally:
        px.stop()


def test_one_session_releases_in_close_order(mount, zkc):
    # the default: one session, so a process that closes an inner lock and
    # then an outer one has them deleted in that order (with sessions=N the
    # two directories may be on different sessions: not so, as documented).
    # A delete sets its parent's pzxid to its own zxid, the place ZooKeeper
    # gave it in the one order of all changes: the inner directory's pzxid
    # must be the lower one (watches would fire in that same order; no
    # watching client, such as kazoo, is needed to see it)
    m = mount()
    inner, outer = lockdir(m, "I"), lockdir(m, "O")
    zi, zo = m.zkpath("I"), m.zkpath("O")
    for i in range(20):
        fi = os.open(os.path.join(inner, "h"), os.O_CREAT | os.O_WRONLY)
        fo = os.open(os.path.join(outer, "h"), os.O_CREAT | os.O_WRONLY)
        made = (zkc.exists(zi).pzxid, zkc.exists(zo).pzxid)
        os.close(fi)
        os.close(fo)
        wait_for(lambda: not zkc.get_children(zi) and
                 not zkc.get_children(zo), GRANT_TIMEOUT,
                 "both entries deleted")
        gone = (zkc.exists(zi).pzxid, zkc.exists(zo).pzxid)
        assert gone[0] > made[0] and gone[1] > made[1], (made, gone)
        assert gone[0] < gone[1], "round %d: the outer lock's entry was " \
            "deleted (zxid %#x) before the inner one's (zxid %#x)" \
            % (i, gone[1], gone[0])
