"""Users and permissions (docs/SPEC.md): a mount shared by a host's users
with allow_other, like /tmp.  Two plain uids under setpriv stand for two
users (no accounts needed); the daemon runs as root, the mount's owner.

Ownership never comes from the uid= line of an entry's data (its holder,
or any ZooKeeper client, can write it); rmdir checks permission; chmod,
chown and explicit times (utimes, touch -d) are refused with EPERM, not
answered 0; touch (times "now") succeeds."""

import errno
import json
import os
import subprocess

import pytest

import zkclient
from harness import (GRANT_TIMEOUT, PY, as_user, entries, lockdir, seen_dir,
                     start_waiter, take, wait_for)

ALICE, BOB = 4201, 4202


def shared_mount(mount, **kw):
    return mount(opts=["allow_other"], **kw)


ATTEMPT = r"""
import errno, json, os, sys
op, args = sys.argv[1], json.loads(sys.argv[2])
try:
    if op == "utime":
        os.utime(args[0], (1, 1))
    elif op == "touch":
        os.utime(args[0])
    else:
        getattr(os, op)(*args)
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
"""


def attempt(uid, op, *args):
    """Run os.<op>(*args) as @uid (None: as root); "ok" or the errno name."""
    r = subprocess.run(as_user(uid) + [PY, "-c", ATTEMPT, op, json.dumps(args)],
                       capture_output=True, text=True, timeout=GRANT_TIMEOUT,
                       cwd="/")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def mkdir_as(uid, path):
    assert attempt(uid, "mkdir", path) == "ok"


def test_an_entry_belongs_to_its_opener_whatever_its_data_says(mount):
    m = shared_mount(mount)
    d = lockdir(m)
    h = take(d, "bob", user=BOB)
    entry = os.path.join(d, h.entry)
    assert os.stat(entry).st_uid == BOB
    # bob claims to be alice: information, never authority
    assert h.cmd("write " + ("host=x\nuid=%d\n" % ALICE).encode().hex()).startswith("ok")
    assert h.cmd("fsync") == "ok"
    assert b"uid=%d" % ALICE in open(entry, "rb").read()
    assert os.stat(entry).st_uid == BOB
    assert attempt(ALICE, "unlink", entry) == "EPERM"
    assert os.path.exists(entry)
    h.release()


@pytest.mark.parametrize("uid_line", ["%d" % BOB, "%d" % (BOB + 2**32)])
def test_an_entry_made_elsewhere_belongs_to_the_mount_owner(mount, zkc, uid_line):
    """Another ZooKeeper client's entry says uid=bob (or a number that
    wraps to bob's in 32 bits): bob may not break it; root's it is."""
    m = shared_mount(mount)
    d = lockdir(m)
    name = zkc.create(m.zkpath("L/other-lock-"), b"uid=%s\n" % uid_line.encode(),
                      zkclient.EPHEMERAL_SEQUENTIAL).rsplit("/", 1)[1]
    entry = os.path.join(d, name)
    assert os.stat(entry).st_uid == os.getuid()
    assert attempt(BOB, "unlink", entry) == "EPERM"
    assert entries(d) == [name]
    assert attempt(None, "unlink", entry) == "ok"       # the mount's owner
    assert entries(d) == []


def test_the_opener_and_the_mount_owner_may_break_an_entry(mount):
    m = shared_mount(mount)
    d = lockdir(m)
    a = take(d, "a", user=ALICE)
    assert attempt(BOB, "unlink", os.path.join(d, a.entry)) == "EPERM"
    assert attempt(ALICE, "unlink", os.path.join(d, a.entry)) == "ok"
    b = take(d, "b", user=BOB)
    assert attempt(None, "unlink", os.path.join(d, b.entry)) == "ok"
    assert entries(d) == []


def test_rmdir_follows_the_unlink_rule(mount, zkc):
    m = shared_mount(mount)
    mkdir_as(ALICE, m.p("a"))
    assert os.stat(m.p("a")).st_uid == ALICE
    assert attempt(BOB, "rmdir", m.p("a")) == "EPERM"
    assert zkc.exists(m.zkpath("a")) is not None
    assert attempt(ALICE, "rmdir", m.p("a")) == "ok"
    assert zkc.exists(m.zkpath("a")) is None
    # root (the mount's owner) may remove bob's; nobody else's is bob's
    mkdir_as(BOB, m.p("b"))
    assert attempt(None, "rmdir", m.p("b")) == "ok"
    zkc.create(m.zkpath("elsewhere"))
    assert os.stat(m.p("elsewhere")).st_uid == os.getuid()
    assert attempt(BOB, "rmdir", m.p("elsewhere")) == "EPERM"
    assert zkc.exists(m.zkpath("elsewhere")) is not None


def test_a_directory_made_elsewhere_belongs_to_the_mount_owner(mount):
    """Made by alice through one mount, seen through another: the other
    cannot know who made it."""
    m1 = shared_mount(mount)
    m2 = shared_mount(mount)
    mkdir_as(ALICE, m1.p("a"))
    assert os.stat(m1.p("a")).st_uid == ALICE
    assert os.stat(seen_dir(m2, "a")).st_uid == os.getuid()
    assert attempt(ALICE, "rmdir", m2.p("a")) == "EPERM"


def test_a_directory_made_again_elsewhere_is_not_its_first_makers(mount, zkc):
    m = shared_mount(mount)
    mkdir_as(ALICE, m.p("a"))
    zkc.delete(m.zkpath("a"))
    zkc.create(m.zkpath("a"))
    assert attempt(ALICE, "rmdir", m.p("a")) == "EPERM"
    # stat too, once the kernel's attributes (1 s for directories) expire
    wait_for(lambda: os.stat(m.p("a")).st_uid == os.getuid(), 5,
             "the new directory to be the mount owner's")


@pytest.mark.parametrize("uid", [None, ALICE], ids=["root", "user"])
def test_chmod_chown_and_explicit_times_are_eperm(mount, uid):
    """chmod, chown and os.utime with times are EPERM, never a 0 that
    changed nothing; os.utime(path) (times "now", as touch) succeeds and
    changes nothing either."""
    m = shared_mount(mount)
    mkdir_as(uid, m.p("L"))
    d = m.p("L")
    h = take(d, "h", user=uid)
    entry = os.path.join(d, h.entry)
    for path in (d, entry):
        before = os.stat(path)
        assert attempt(uid, "chmod", path, 0o600) == "EPERM", path
        assert attempt(uid, "chown", path, BOB, BOB) == "EPERM", path
        assert attempt(uid, "utime", path) == "EPERM", path
        assert attempt(uid, "touch", path) == "ok", path
        after = os.stat(path)
        assert (after.st_mode, after.st_uid, after.st_mtime) == \
            (before.st_mode, before.st_uid, before.st_mtime)
    h.release()


def touch(*args):
    return subprocess.run(["touch", *args], capture_output=True, text=True,
                          timeout=GRANT_TIMEOUT, cwd="/")


def test_touch_succeeds_and_touch_d_is_eperm(mount):
    """On an entry, a lock directory and a lock file: touch(1) (times
    "now") succeeds; touch -d and os.utime with times are EPERM ("Operation
    not permitted"), and change nothing."""
    m = mount()
    d = lockdir(m)
    h = take(d, "h")
    entry = os.path.join(d, h.entry)
    lm = mount(opts=("lockfiles",))
    lockfile = os.path.join(lm.path, "cron.lock")
    os.close(os.open(lockfile, os.O_RDWR | os.O_CREAT))
    for path in (d, entry, lockfile):
        before = os.stat(path).st_mtime
        r = touch(path)
        assert r.returncode == 0, (path, r)
        r = touch("-c", "-d", "2001-01-01", path)
        assert r.returncode != 0 and "Operation not permitted" in r.stderr, (path, r)
        with pytest.raises(OSError) as ei:
            os.utime(path, (1, 1))
        assert ei.value.errno == errno.EPERM, path
        assert os.stat(path).st_mtime == before, path
    # without -c, touch(1) opens the file for writing first: a lock
    # directory says EISDIR and a lock file opens, so the times are what
    # fails; an entry opens for writing only through its holder (EACCES),
    # and touch reports that open's error
    for path in (d, lockfile):
        r = touch("-d", "2001-01-01", path)
        assert r.returncode != 0 and "Operation not permitted" in r.stderr, (path, r)
    r = touch("-d", "2001-01-01", entry)
    assert r.returncode != 0, r
    h.release()


def test_another_users_waiting_entry_cannot_be_broken(mount):
    m = shared_mount(mount)
    d = lockdir(m)
    h = take(d, "h", user=ALICE)
    w = start_waiter(d, "w", user=BOB)
    assert os.stat(os.path.join(d, w.entry)).st_uid == BOB
    assert attempt(ALICE, "unlink", os.path.join(d, w.entry)) == "EPERM"
    h.release()
    w.wait_granted()
    w.release()
    assert entries(d) == []
