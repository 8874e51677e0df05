"""Lingering locks (-o linger=MS, docs/SPEC.md "Lingering locks"): after the
last close the mount keeps its entry, shown "cached", and grants the next
open of the same name on that mount at once; anyone else's entry ends the
linger at once; fencing tokens still grow with every grant."""

import errno
import os
import subprocess
import time

import harness
from harness import (GRANT_TIMEOUT, RDWR, entries, lock_state, lockdir,
                     seen_dir, start_waiter, take, wait_for, wait_gone)

TOKEN = "user.zklockfs.token"
LONG = ("linger=60000",)            # longer than any test: only events end it


def cycle(d, name="lock"):
    """open(O_CREAT)+close in this process; the token the open was given."""
    fd = os.open(os.path.join(d, name), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        return tuple(int(x) for x in os.getxattr(fd, TOKEN).split())
    finally:
        os.close(fd)


def token_key(t):
    """Tokens compare field by field; a missing third field is 0."""
    return (t[0], t[1], t[2] if len(t) > 2 else 0)


def test_the_entry_stays_cached_and_the_next_open_reuses_it(mount, zkc):
    m = mount(opts=LONG)
    d = lockdir(m)
    first = cycle(d)
    names = entries(d)
    assert len(names) == 1, names
    assert lock_state(os.path.join(d, names[0])) == "cached"
    stat = zkc.exists(m.zkpath("L"))
    tokens = [cycle(d) for _ in range(50)]
    # 50 grants, and not one create or delete in the lock's queue
    assert zkc.exists(m.zkpath("L")).cversion == stat.cversion
    assert entries(d) == names
    keys = [token_key(first)] + [token_key(t) for t in tokens]
    assert keys == sorted(set(keys)), "tokens do not grow: %r" % keys[:5]
    assert [t[:2] for t in tokens] == [first[:2]] * 50


def test_a_holder_sees_held_and_a_reuse_is_a_lock_like_any(mount):
    m = mount(opts=LONG)
    d = lockdir(m)
    cycle(d)
    cached = entries(d)
    h = harness.Locker(os.path.join(d, "lock"), RDWR)   # another process
    h.wait_granted()
    h.entry = cached[0]                    # granted on the cached entry
    assert entries(d) == cached
    assert lock_state(h) == "held"
    w = start_waiter(d, "lock", RDWR)      # behind it: a new entry
    harness.assert_queued(w, d)
    h.release()
    w.wait_granted()
    w.release()


def test_another_mount_ends_the_linger_at_once(mount):
    m1, m2 = mount(opts=LONG), mount()
    d1 = lockdir(m1)
    cycle(d1)
    d2 = seen_dir(m2)
    cached = entries(d1)
    w = start_waiter(d2, "lock", RDWR)
    w.wait_granted()                       # not the 60 s of the linger
    assert cached[0] not in entries(d2)
    # the first mount now queues behind it, like anyone
    t = start_waiter(d1, "lock", RDWR)
    harness.assert_queued(t, d1)
    w.release()
    t.wait_granted()
    t.release()


def try_open(d, name="lock"):
    """An O_NONBLOCK open(O_CREAT) here; (fd or errno name, seconds)."""
    t0 = time.monotonic()
    try:
        fd = os.open(os.path.join(d, name), os.O_CREAT | os.O_RDWR | os.O_NONBLOCK, 0o644)
    except OSError as e:
        return errno.errorcode[e.errno], time.monotonic() - t0
    return fd, time.monotonic() - t0


def test_a_try_behind_an_entry_that_only_lingers_is_granted(mount):
    """Nobody holds, but another mount keeps its entry lingering: a try-lock
    is granted, once that mount gives the entry back (SPEC: "within 1 s")."""
    m1, m3 = mount(), mount(opts=LONG)
    d3 = lockdir(m3)
    d1 = seen_dir(m1)
    cycle(d3)
    cached = entries(d3)
    assert lock_state(os.path.join(d3, cached[0])) == "cached"
    fd, took = try_open(d1)
    assert isinstance(fd, int), "the try was refused: %s" % fd
    harness.record_figure("a try-lock behind an entry that only lingers on another "
                          "mount: granted after %.3f s" % took)
    assert lock_state(fd) == "held"
    assert cached[0] not in entries(d1)
    os.close(fd)


def test_a_try_behind_a_lingering_entry_held_again_is_refused(mount):
    """The lingering entry was taken again on its mount: the try is refused
    (the mount takes the entry's "lingers" line out when the try joins)."""
    m1, m3 = mount(), mount(opts=LONG)
    d3 = lockdir(m3)
    d1 = seen_dir(m1)
    cycle(d3)
    cached = entries(d3)
    h = harness.Locker(os.path.join(d3, "lock"), RDWR)
    h.wait_granted()
    assert entries(d3) == cached
    res, took = try_open(d1)
    assert res == "EAGAIN", res
    harness.record_figure("a try-lock behind a lingering entry held again on another "
                          "mount: EAGAIN after %.3f s" % took)
    assert entries(d1) == cached             # the try's entry is gone
    assert lock_state(h) == "held"
    h.release()


def test_a_token_given_after_a_linger_is_larger(mount):
    m1, m2 = mount(opts=LONG), mount()
    d1 = lockdir(m1)
    toks = [cycle(d1) for _ in range(3)]
    d2 = seen_dir(m2)
    other = token_key(cycle(d2))
    assert other > token_key(toks[-1]), (toks, other)


def test_the_linger_ends_after_its_time(mount):
    m = mount(opts=("linger=300",))
    d = lockdir(m)
    cycle(d)
    name = entries(d)[0]
    wait_gone(d, name, timeout=GRANT_TIMEOUT)


def test_another_name_in_the_lock_ends_the_linger(mount):
    m = mount(opts=LONG)
    d = lockdir(m)
    cycle(d, "a")
    a = entries(d)
    fd = os.open(os.path.join(d, "b"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        now = entries(d)
        assert len(now) == 1 and now != a, (a, now)
    finally:
        os.close(fd)


def test_rmdir_of_a_lingering_lock(mount):
    m = mount(opts=LONG)
    d = lockdir(m)
    cycle(d)
    os.rmdir(d)
    assert not os.path.exists(d)


def test_an_unlinked_cached_entry_is_not_reused(mount):
    m = mount(opts=LONG)
    d = lockdir(m)
    first = cycle(d)
    name = entries(d)[0]
    os.unlink(os.path.join(d, name))
    wait_gone(d, name)
    again = cycle(d)
    assert again[:2] != first[:2] and token_key(again) > token_key(first)


def test_without_linger_the_entry_goes_at_close(mount):
    m = mount()
    d = lockdir(m)
    cycle(d)
    harness.wait_no_entries(d)


def test_linger_out_of_range_is_refused(daemon_path, zk, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    for bad in ("linger=-1", "linger=3600001"):
        r = subprocess.run([daemon_path, "-f", "-o", bad, "%s:%d/x" % (zk.host, zk.port), str(mnt)],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "linger=" in r.stderr, (bad, r.stderr)


LINGER = "user.zklockfs.linger"


def test_a_directory_sets_its_own_linger(mount, zkc):
    m = mount()                            # no -o linger
    d = lockdir(m)
    os.setxattr(d, LINGER, b"60000")
    assert os.getxattr(d, LINGER) == b"60000"
    assert LINGER in os.listxattr(d)
    assert zkc.get_data(m.zkpath("L"))[0] == b"linger=60000\n"
    cycle(d)                               # the listing reads the setting
    cycle(d)
    name = entries(d)
    assert len(name) == 1 and lock_state(os.path.join(d, name[0])) == "cached"
    os.removexattr(d, LINGER)
    assert LINGER not in os.listxattr(d)


def test_a_directory_linger_of_0_overrides_the_mount(mount):
    m = mount(opts=LONG)
    d = lockdir(m)
    os.setxattr(d, LINGER, b"0")
    cycle(d)
    cycle(d)                               # decided with the setting read
    harness.wait_no_entries(d)


def test_a_linger_out_of_range_is_einval(mount):
    m = mount()
    d = lockdir(m)
    for bad in (b"-1", b"3600001", b"01", b"x"):
        try:
            os.setxattr(d, LINGER, bad)
        except OSError as e:
            assert e.errno == errno.EINVAL, (bad, e)
        else:
            raise AssertionError("%r accepted" % bad)
