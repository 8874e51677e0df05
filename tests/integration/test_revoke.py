"""Revocation requests: user.zklockfs.revoke asks an entry's holder to let
go without breaking the lock (docs/SPEC.md, "Beyond the mutex"); Curator's
side of it is in test_interop.py."""

import errno
import os
import select
import subprocess

import pytest

import harness
from harness import (GRANT_TIMEOUT, PY, RDWR, as_user, entries, lock_state,
                     lockdir, seen_dir, start_waiter, take, assert_queued)

REVOKE = "user.zklockfs.revoke"


def pollpri(h, ms=GRANT_TIMEOUT * 1000):
    """Wait (in the holder's process) for POLLPRI alone: the events seen."""
    return int(h.ok("pollpri %d" % ms, timeout=ms / 1000.0 + 5))


def test_a_request_reaches_the_holder_on_another_mount(mount, zkc):
    m1, m2 = mount(), mount()
    d1, d2 = lockdir(m1), seen_dir(m2)
    h = take(d1, "h", RDWR)
    assert not int(h.ok("poll 0")) & select.POLLPRI
    assert lock_state(h) == "held"
    os.setxattr(os.path.join(d2, h.entry), REVOKE, b"1")
    assert zkc.get_data(m1.zkpath("L/" + h.entry))[0] == b"__REVOKE__"
    ev = pollpri(h)
    assert ev & select.POLLPRI and not ev & (select.POLLERR | select.POLLHUP), ev
    assert lock_state(h) == "revoking"
    # not broken: still held, its own writes work and do not undo the request
    assert entries(d1) == [h.entry]
    assert h.cmd("write " + b"mine\n".hex()).startswith("ok")
    assert h.cmd("fsync") == "ok"
    assert lock_state(h) == "revoking"
    w = start_waiter(d2, "w", RDWR)
    assert_queued(w, d2)
    h.release()
    w.wait_granted()
    assert lock_state(w) == "held"              # a request was for h alone
    w.release()


def test_a_waiter_asked_to_let_go_is_told_once_granted(mount):
    m = mount()
    d = lockdir(m)
    h = take(d, "h", RDWR)
    w = start_waiter(d, "w", RDWR)
    assert_queued(w, d)
    os.setxattr(os.path.join(d, w.entry), REVOKE, b"1\n")
    h.release()
    w.wait_granted()
    harness.wait_for(lambda: lock_state(w) == "revoking", GRANT_TIMEOUT,
                     "the request to show once granted")
    assert pollpri(w) & select.POLLPRI
    w.release()


@pytest.mark.parametrize("value", [b"0", b"2", b"", b"yes", b"1\n\n", b"11"])
def test_other_values_are_einval(mount, zkc, value):
    m = mount()
    d = lockdir(m)
    h = take(d, "h", RDWR)
    with pytest.raises(OSError) as e:
        os.setxattr(os.path.join(d, h.entry), REVOKE, value)
    assert e.value.errno == errno.EINVAL
    assert b"__REVOKE__" not in zkc.get_data(m.zkpath("L/" + h.entry))[0]
    h.release()


def test_a_directory_cannot_be_revoked(mount):
    d = lockdir(mount())
    with pytest.raises(OSError) as e:
        os.setxattr(d, REVOKE, b"1")
    assert e.value.errno == errno.ENOTSUP


ATTEMPT = r"""
import errno, os, sys
try:
    os.setxattr(sys.argv[1], "user.zklockfs.revoke", b"1")
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
"""


def test_only_who_may_unlink_the_entry_may_ask(mount, zkc):
    """As unlink (the sticky-bit rule): bob may not ask alice to let go;
    alice, the mount's owner and root may."""
    alice, bob = 4201, 4202
    m = mount(opts=["allow_other"])
    d = lockdir(m)
    h = take(d, "alice", RDWR, user=alice)
    entry = os.path.join(d, h.entry)

    def attempt(uid):
        r = subprocess.run(as_user(uid) + [PY, "-c", ATTEMPT, entry],
                           capture_output=True, text=True, timeout=GRANT_TIMEOUT,
                           cwd="/")
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()
    assert attempt(bob) == "EPERM"
    assert zkc.get_data(m.zkpath("L/" + h.entry))[0] != b"__REVOKE__"
    assert lock_state(h) == "held"
    assert attempt(alice) == "ok"
    assert pollpri(h) & select.POLLPRI
    h.release()
