"""A mount with several ZooKeeper sessions (-o sessions=N): each directory
is given one of them, and every request about it goes there, so what one
session did is seen in order by the requests that follow."""

import os
import signal

import pytest

from harness import (WRITE, entries, lockdir, seen_dir, start_waiter, take,
                     tcp_peers, wait_for)

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
