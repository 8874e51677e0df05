"""Semaphores: user.zklockfs.limit on a lock directory lets N hold at once
(docs/SPEC.md, "Beyond the mutex").  Several mounts of one ZooKeeper stand
in for several hosts; a shared and an exclusive entry count alike."""

import errno
import json
import os
import subprocess

import pytest

from harness import (GRANT_TIMEOUT, PY, RDWR, SHARED, as_user, assert_queued,
                     entries, lockdir, lock_state, seen_dir, start_waiter, take,
                     wait_for)

LIMIT = "user.zklockfs.limit"


def holders(d):
    return sorted(os.getxattr(d, "user.zklockfs.holders").decode().split())


def test_limit_is_kept_in_the_lock_znodes_data(mount, zkc):
    m = mount()
    d = lockdir(m)
    with pytest.raises(OSError) as e:
        os.getxattr(d, LIMIT)
    assert e.value.errno == errno.ENODATA
    assert LIMIT not in os.listxattr(d)        # getfattr -d: no error for it
    os.setxattr(d, LIMIT, b"3")
    assert LIMIT in os.listxattr(d)
    assert os.getxattr(d, LIMIT) == b"3"
    assert zkc.get_data(m.zkpath("L"))[0] == b"limit=3\n"
    os.setxattr(d, LIMIT, b"5\n")               # what `echo 5 |` gives
    assert os.getxattr(d, LIMIT) == b"5"
    os.removexattr(d, LIMIT)
    assert zkc.get_data(m.zkpath("L"))[0] == b""
    with pytest.raises(OSError) as e:
        os.removexattr(d, LIMIT)
    assert e.value.errno == errno.ENODATA


def test_other_lines_of_the_data_are_kept(mount, zkc):
    m = mount()
    d = lockdir(m)
    zkc.set_data(m.zkpath("L"), b"note=from another client\n")
    os.setxattr(d, LIMIT, b"2")
    assert zkc.get_data(m.zkpath("L"))[0] == b"note=from another client\nlimit=2\n"
    os.removexattr(d, LIMIT)
    assert zkc.get_data(m.zkpath("L"))[0] == b"note=from another client\n"


@pytest.mark.parametrize("value", [b"0", b"1001", b"-1", b"two", b"", b"03",
                                   b"2 ", b"2\n\n", b"2\x00"])
def test_bad_limits_are_einval(mount, zkc, value):
    m = mount()
    d = lockdir(m)
    with pytest.raises(OSError) as e:
        os.setxattr(d, LIMIT, value)
    assert e.value.errno == errno.EINVAL
    assert zkc.get_data(m.zkpath("L"))[0] == b""


def test_create_and_replace_flags(mount):
    d = lockdir(mount())
    with pytest.raises(OSError) as e:
        os.setxattr(d, LIMIT, b"2", os.XATTR_REPLACE)
    assert e.value.errno == errno.ENODATA
    os.setxattr(d, LIMIT, b"2", os.XATTR_CREATE)
    with pytest.raises(OSError) as e:
        os.setxattr(d, LIMIT, b"3", os.XATTR_CREATE)
    assert e.value.errno == errno.EEXIST
    os.setxattr(d, LIMIT, b"3", os.XATTR_REPLACE)
    assert os.getxattr(d, LIMIT) == b"3"


def test_an_entry_has_no_limit(mount):
    d = lockdir(mount())
    h = take(d, "h", RDWR)
    p = os.path.join(d, h.entry)
    with pytest.raises(OSError) as e:
        os.getxattr(p, LIMIT)
    assert e.value.errno == errno.ENODATA
    with pytest.raises(OSError) as e:
        os.setxattr(p, LIMIT, b"2")
    assert e.value.errno == errno.ENOTSUP
    h.release()


def test_n_hold_across_mounts_and_a_release_lets_the_next_in(mount):
    ms = [mount() for _ in range(3)]
    d = [lockdir(ms[0])] + [seen_dir(m) for m in ms[1:]]
    os.setxattr(d[0], LIMIT, b"2")
    a = take(d[0], "a", RDWR)
    b = take(d[1], "b", SHARED)               # shared or exclusive: one each
    c = start_waiter(d[2], "c", RDWR)
    e = start_waiter(d[0], "e", RDWR)
    assert_queued(c, d[2])
    assert_queued(e, d[0])
    assert holders(d[1]) == sorted([a.entry, b.entry])
    a.release()                              # not the last one in: any holder
    c.wait_granted()
    assert_queued(e, d[0])
    assert lock_state(os.path.join(d[0], c.entry)) == "held"
    b.release()
    e.wait_granted()
    assert holders(d[2]) == sorted([c.entry, e.entry])
    c.release()
    e.release()


def test_a_larger_limit_lets_waiters_in_at_once(mount):
    m1, m2 = mount(), mount()
    d1, d2 = lockdir(m1), seen_dir(m2)
    os.setxattr(d1, LIMIT, b"1")
    h = take(d1, "h", RDWR)
    ws = [start_waiter(d2 if i % 2 else d1, "w%d" % i, RDWR) for i in range(3)]
    for w in ws:
        assert_queued(w, d1)
    os.setxattr(d2, LIMIT, b"3")            # from the other mount
    ws[0].wait_granted()
    ws[1].wait_granted()
    assert_queued(ws[2], d1)
    os.removexattr(d1, LIMIT)              # a plain lock again: no one more
    h.release()
    assert_queued(ws[2], d1)
    ws[0].release()
    ws[1].release()
    ws[2].wait_granted()
    ws[2].release()


def test_a_removed_limit_lets_nobody_in_beside_a_holder_it_let_in(mount):
    """Holders let in under a limit keep their lock when it is removed, and
    grants follow the plain lock from the next listing on: the second
    holder's release must not hand the lock to the waiter of its own mount
    behind it while the first holder, on another mount, still holds."""
    m1, m2 = mount(), mount()
    d1, d2 = lockdir(m1), seen_dir(m2)
    os.setxattr(d1, LIMIT, b"2")
    a = take(d2, "a", RDWR)                  # the first slot, on the other mount
    second = take(d1, "l", RDWR)             # the second slot
    x = start_waiter(d1, "x", RDWR)          # behind it, on the same mount
    assert_queued(x, d1)
    os.removexattr(d2, LIMIT)
    # a try on the first mount lists the lock: that listing decides for x
    # too, now as a plain lock, behind the entry of its own mount
    with pytest.raises(OSError) as e:
        os.open(os.path.join(d1, "t"), os.O_CREAT | os.O_RDWR | os.O_NONBLOCK)
    assert e.value.errno == errno.EAGAIN
    second.release()
    wait_for(lambda: second.entry not in os.listdir(d2), GRANT_TIMEOUT,
             "the second holder's entry to go")
    assert_queued(x, d1)                     # a holds: nobody else may
    assert holders(d2) == [a.entry]
    a.release()
    x.wait_granted()
    x.release()


def test_a_holders_crash_lets_the_next_in(mount):
    """A holder that goes without a release pokes nobody: the first waiter
    lists on the supervisor's tick."""
    m1, m2 = mount(), mount(session_timeout=4000)
    d1, d2 = lockdir(m1), seen_dir(m2)
    os.setxattr(d1, LIMIT, b"2")
    a = take(d1, "a", RDWR)
    b = take(d1, "b", RDWR)
    w = start_waiter(d2, "w", RDWR)
    assert_queued(w, d2)
    os.unlink(os.path.join(d2, a.entry))     # another client breaks it
    w.wait_granted()
    b.release()
    w.release()
    a.release()


SETX = r"""
import errno, os, sys
try:
    if sys.argv[2]:
        os.setxattr(sys.argv[1], "user.zklockfs.limit", sys.argv[2].encode())
    else:
        os.removexattr(sys.argv[1], "user.zklockfs.limit")
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
"""


def setx_as(uid, d, value):
    r = subprocess.run(as_user(uid) + [PY, "-c", SETX, d, value],
                       capture_output=True, text=True, timeout=GRANT_TIMEOUT,
                       cwd="/")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_only_the_mounts_owner_sets_the_limit(mount, zkc, zklock):
    """A limit turns everyone's plain lock in a directory into a semaphore
    slot, and on a shared mount anyone may make a directory first: so not
    even its maker, only the mount's owner (root here) sets or removes
    one. Anyone may read it; zklock -L of anyone else only checks it, and
    refuses (77) no limit or another one, saying who may set it."""
    alice, bob = 4201, 4202
    m = mount(opts=["allow_other"])
    top = lockdir(m)
    d = os.path.join(top, "alices")
    r = subprocess.run(as_user(alice) + [PY, "-c", "import os,sys; os.mkdir(sys.argv[1])", d],
                       capture_output=True, text=True, timeout=GRANT_TIMEOUT, cwd="/")
    assert r.returncode == 0, r.stderr
    for uid in (alice, bob):
        assert setx_as(uid, d, "2") == "EPERM"
    assert zkc.get_data(m.zkpath("L/alices"))[0] == b""
    r = subprocess.run(as_user(alice) + [zklock, "-n", "-L", "2", d, "true"],
                       capture_output=True, text=True, timeout=GRANT_TIMEOUT, cwd="/")
    assert r.returncode == 77 and "only the mount's owner or root" in r.stderr, r
    assert setx_as(None, d, "2") == "ok"
    assert os.getxattr(d, LIMIT) == b"2"
    r = subprocess.run(as_user(alice) + [zklock, "-n", "-L", "2", d, "true"],
                       capture_output=True, text=True, timeout=GRANT_TIMEOUT, cwd="/")
    assert r.returncode == 0, r
    r = subprocess.run(as_user(alice) + [zklock, "-n", "-L", "3", d, "true"],
                       capture_output=True, text=True, timeout=GRANT_TIMEOUT, cwd="/")
    assert r.returncode == 77, r
    for uid in (alice, bob):
        assert setx_as(uid, d, "") == "EPERM"
    assert setx_as(None, d, "") == "ok"


def test_getlk_counts_against_the_limit(mount):
    """F_GETLK in a semaphore: F_UNLCK while fewer than N entries are
    there (its own left out), else the first entry, whatever its kind."""
    import fcntl
    import struct
    fmt = "hhqqi4x"

    def getlk(fd, ltype):
        arg = struct.pack(fmt, ltype, os.SEEK_SET, 0, 0, 0)
        return struct.unpack(fmt, fcntl.fcntl(fd, fcntl.F_GETLK, arg))[0]

    m = mount()
    d = lockdir(m)
    os.setxattr(d, LIMIT, b"2")
    a = take(d, "a", SHARED)
    fd = os.open(os.path.join(d, "p"), os.O_CREAT | os.O_RDWR)   # holds: 2 of 2
    try:
        assert getlk(fd, fcntl.F_WRLCK) == fcntl.F_UNLCK     # its own left out
        b = start_waiter(d, "b", RDWR)
        assert_queued(b, d)
        plain = os.open(os.path.join(d, b.entry), os.O_RDONLY)
        try:
            assert getlk(plain, fcntl.F_WRLCK) == fcntl.F_RDLCK   # a's, shared
        finally:
            os.close(plain)
    finally:
        os.close(fd)
    b.wait_granted()
    a.release()
    b.release()


def test_one_release_wakes_one_waiter_in_a_semaphore(mount, zk, zkc):
    """The semaphore's herd figure: 50 waiters on 5 mounts, limit 5, queued
    round robin. Holders leave out of queue order (the middle one of those
    holding, each time): every release lets exactly the next waiter in and
    must notify that waiter's mount alone (its poke), never every mount."""
    from test_herd import _fired_watches, _child_watches
    from harness import record_figure
    nm, nw, limit = 5, 50, 5
    ms = [mount() for _ in range(nm)]
    dirs = [lockdir(ms[0])] + [seen_dir(m) for m in ms[1:]]
    os.setxattr(dirs[0], LIMIT, str(limit).encode())
    lks = [start_waiter(dirs[i % nm], "w%02d" % i, RDWR) for i in range(nw)]
    for lk in lks[:limit]:
        lk.wait_granted()
    holding = list(lks[:limit])
    waiting = list(lks[limit:])
    assert_queued(waiting[0], dirs[limit % nm])
    assert _child_watches(zk) == 0
    fired = []
    n = _fired_watches(zk, zkc, ms[0])
    while waiting:
        out = holding.pop(len(holding) // 2)
        out.release()
        nxt = waiting.pop(0)
        nxt.wait_granted()
        if waiting:
            assert waiting[0].poll_status(0) is None, "%s granted before its turn" % (
                waiting[0].entry)
        holding.append(nxt)
        now = _fired_watches(zk, zkc, ms[0])
        fired.append(now - n)
        n = now
    for lk in holding:
        lk.release()
    record_figure("semaphore of %d, %d waiters on %d mounts: %d releases "
                  "sent %d notifications (%.2f each) %r" % (
                      limit, nw, nm, len(fired), sum(fired),
                      sum(fired) / len(fired), fired))
    assert max(fired) <= 2 and sum(fired) <= len(fired) + len(fired) // 4, fired
