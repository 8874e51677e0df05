"""Reentrant locks (docs/SPEC.md, "Taking and giving back a lock"): a thread
that holds a lock and opens it again gets a descriptor that stands for the
entry it holds, at once; the entry goes when the last of them closes. A
thread is its id and its start time; another thread, or a forked child,
waits as anyone does."""

import os
import threading

import pytest

from harness import (GRANT_TIMEOUT, RDWR, SHARED, WRITE, entries, lock_state,
                     lockdir, start_waiter, take, wait_for)


def reopen(h, d, name, flags=WRITE):
    """A second open of lock `d` by the thread of locker `h`: its fd."""
    ans = h.cmd("open %d %s" % (flags, os.path.join(d, name).encode().hex()))
    assert ans.startswith("ok "), ans
    return int(ans.split()[1])


@pytest.mark.parametrize("order", ["inner-first", "outer-first"])
def test_nested_opens_stand_for_one_entry_until_the_last_close(mount, order):
    """Acquires and releases balance, in either order: no second entry is
    made, and the entry goes with the last descriptor."""
    m = mount()
    d = lockdir(m)
    h = take(d, "outer", RDWR)
    inner = reopen(h, d, "inner")
    inner2 = reopen(h, d, "inner2", SHARED)    # any kind over an exclusive hold
    assert entries(d) == [h.entry]
    assert h.cmd("fdop %d getxattr user.zklockfs.state" % inner) == "ok " + b"held".hex()
    assert h.cmd("fdop %d getxattr user.zklockfs.token" % inner) == \
        h.cmd("getxattr user.zklockfs.token")
    w = start_waiter(d, "w")
    if order == "inner-first":
        h.ok("close %d" % inner)
        h.ok("close %d" % inner2)
        w.assert_waiting(0.3)
        assert entries(d)[0] == h.entry
        h.release()
    else:
        h.ok("close")                       # the descriptor that made it
        w.assert_waiting(0.3)
        assert entries(d)[0] == h.entry
        h.ok("close %d" % inner)
        w.assert_waiting(0.3)
        h.ok("close %d" % inner2)
    w.wait_granted()
    w.release()


def test_shared_then_exclusive_is_edeadlk_shared_again_is_not(mount):
    m = mount()
    d = lockdir(m)
    h = take(d, "r", SHARED)
    assert h.cmd("open %d %s" % (WRITE, os.path.join(d, "x").encode().hex())) == \
        "error EDEADLK"
    again = reopen(h, d, "r2", SHARED)
    assert entries(d) == [h.entry]
    h.ok("close %d" % again)
    h.release()
    wait_for(lambda: entries(d) == [], GRANT_TIMEOUT, "the entry to go")


def test_another_thread_and_a_forked_child_wait(mount):
    """Only the thread that holds reenters: another thread of the same
    process waits for the lock as anyone does, and so does a child forked
    while holding (a process of its own)."""
    m = mount()
    d = lockdir(m)
    fd = os.open(os.path.join(d, "main"), os.O_CREAT | os.O_WRONLY)
    got = []
    t = threading.Thread(target=lambda: got.append(
        os.open(os.path.join(d, "thread"), os.O_CREAT | os.O_WRONLY)))
    t.start()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(os.open(os.path.join(d, "child"),
                             os.O_CREAT | os.O_WRONLY | os.O_NONBLOCK))
            os._exit(0)
        except BlockingIOError:
            os._exit(11)
        except BaseException:
            os._exit(1)
    try:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 11     # it would wait
        t.join(0.5)
        assert t.is_alive() and not got, "the other thread did not wait"
        assert len(entries(d)) == 2
    finally:
        os.close(fd)
    t.join(GRANT_TIMEOUT)
    assert got and lock_state(got[0]) == "held"
    os.close(got[0])


def test_unlock_of_a_reentrant_descriptor_gives_up_its_part_only(mount):
    """flock(LOCK_UN) on one of the descriptors leaves the entry to the
    others; converting a shared entry is EDEADLK (it would take the lock
    from under them); writing goes through the descriptor that took it."""
    m = mount()
    d = lockdir(m)
    h = take(d, "a", RDWR)
    b = reopen(h, d, "b", RDWR)
    assert h.cmd("fdop %d write %s" % (b, b"x".hex())) == "error EBADF"
    assert h.cmd("fdop %d flock sh" % b) == "error EDEADLK"
    assert h.cmd("fdop %d flock ex" % b) == "ok"          # the kind held
    h.ok("fdop %d flock un" % b)
    assert entries(d) == [h.entry]
    assert lock_state(os.path.join(d, h.entry)) == "held"
    assert h.cmd("fdop %d read" % b) == "error ENOLCK"
    h.ok("unlock")                                    # the last part
    wait_for(lambda: entries(d) == [], GRANT_TIMEOUT, "the entry to go")
    h.ok("close %d" % b)
    h.release()


def test_reentrant_open_after_the_loss_is_eio(mount, zkc):
    m = mount()
    d = lockdir(m)
    h = take(d, "a", RDWR)
    b = reopen(h, d, "b", RDWR)
    zkc.delete(m.zkpath("L/" + h.entry))
    wait_for(lambda: lock_state(h) == "lost", GRANT_TIMEOUT, "the loss")
    assert h.cmd("fdop %d read" % b) == "error EIO"
    assert h.cmd("open %d %s" % (WRITE, os.path.join(d, "c").encode().hex())) == \
        "error EIO"
    h.ok("close %d" % b)
    h.release()
