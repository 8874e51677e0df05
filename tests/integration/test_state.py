"""State that only the holder may change: LOCKDIR/.state (docs/SPEC.md).

The exclusive holder sets a lock's state with the ioctl ZKLFS_IOC_SETSTATE
on its descriptor (or `zklock --state LOCKDIR --set VALUE` through
ZKLOCK_FD); ZooKeeper applies it in one multi that also checks the
holder's entry, so a holder whose entry is gone changes nothing, whether
or not its mount has heard. The state lives in the lock znode's own data
(a "state=BASE64" line beside the settings), never in a child. These tests
hold the daemon to:
  * a set is read back through .state on every mount, and a poll() there
    wakes (POLLIN|POLLPRI) at each applied set;
  * the state survives its holder;
  * a reader's, a waiter's, another user's, a shared holder's and a
    semaphore slot's set are refused (EACCES), and change nothing;
  * a holder whose entry was deleted, not yet told, is refused by the
    server (EIO), and the state is unchanged;
  * a state's bytes never make a setting (a "limit=" line inside it);
  * a lock file's state is read as user.zklockfs.statedata;
  * zklock --state prints it and --set sets it from the command;
  * Curator, kazoo and go-zookeeper locks on the same znode work unchanged;
  * one set costs the ensemble one read and one write.
"""

import base64
import errno
import fcntl
import os
import select
import struct
import subprocess
import threading
import time

import pytest

import faultproxy
import harness
from harness import (GRANT_TIMEOUT, SLOW, fig, lockdir, log_has, seen_dir, wait_for)
from zklockrun import Run, zk
from interop import Curator, GoLock, Kazoo
from interop import curator_cp, go_lock_bin, kazoo_ok  # noqa: F401 (fixtures)
from zklockrun import kill_descendants  # noqa: F401 (autouse)

IOC_SETSTATE = 0x7ffc5a07
STATE_MAX = 16376
XATTR_STATEDATA = "user.zklockfs.statedata"


def set_state(fd, value):
    """ZKLFS_IOC_SETSTATE on fd: raises OSError (EIO, EACCES, ...)."""
    arg = bytearray(struct.pack("I", len(value)) + value)
    arg.extend(bytes(4 + STATE_MAX - len(arg)))
    fcntl.ioctl(fd, IOC_SETSTATE, arg, True)


SET_IN_CHILD = ("import fcntl, struct, sys\n"
                "v = sys.argv[2].encode('latin-1')\n"
                "arg = bytearray(struct.pack('I', len(v)) + v + bytes(%d - len(v)))\n"
                "try:\n"
                "    fcntl.ioctl(int(sys.argv[1]), %d, arg, True)\n"
                "    print(0)\n"
                "except OSError as e:\n"
                "    print(e.errno)\n" % (STATE_MAX, IOC_SETSTATE))


def set_state_in_child(fd, value, user=None):
    """set_state() in another process (as @user, if given): the errno, 0
    if set. Python's fcntl.ioctl() keeps the interpreter's lock while it
    waits, so an ioctl that waits on ZooKeeper through a FaultProxy of this
    process (its threads) would wait on itself."""
    r = subprocess.run(harness.as_user(user) +
                       [harness.PY, "-c", SET_IN_CHILD, str(fd), value.decode("latin-1")],
                       pass_fds=(fd,), capture_output=True, text=True,
                       timeout=GRANT_TIMEOUT, cwd="/")
    assert r.stdout.strip().isdigit(), r
    return int(r.stdout)


def read_state(d):
    with open(os.path.join(d, ".state"), "rb") as f:
        return f.read()


def hold(d, name="h", flags=os.O_CREAT | os.O_WRONLY):
    """Take d's lock in this process (nobody else holds it): the fd."""
    return os.open(os.path.join(d, name), flags, 0o644)


def zk_data(zkc, m, rel="L"):
    return zkc.get_data(m.zkpath(rel))[0]


def test_a_set_is_read_on_every_mount_and_wakes_its_pollers(mount, zkc):
    a, b = mount(), mount()
    da, db = lockdir(a), seen_dir(b)
    assert read_state(db) == b""
    with open(os.path.join(db, ".state"), "rb") as r:
        p = select.poll()
        p.register(r, select.POLLIN | select.POLLPRI)
        r.read()
        fd = hold(da)
        for value in (b"10.0.0.7:8080", b"", b"line one\nline two\n\x00\xff"):
            set_state(fd, value)
            ev = p.poll(5000 * SLOW)
            assert ev and ev[0][1] & select.POLLPRI, ev
            r.seek(0)
            assert r.read() == value
            assert read_state(da) == value
        os.close(fd)
    # the state lives in the lock znode's data: no child of the lock
    wait_for(lambda: zkc.get_children(a.zkpath("L")) == [], GRANT_TIMEOUT,
             "the lock without children")


def test_the_state_survives_its_holder(mount, zkc):
    m = mount()
    d = lockdir(m)
    fd = hold(d)
    set_state(fd, b"checkpoint 41")
    os.close(fd)
    fd = hold(d, "next")
    assert read_state(d) == b"checkpoint 41"
    set_state(fd, b"checkpoint 42")
    os.close(fd)
    data = zk_data(zkc, m)
    assert b"state=" + base64.b64encode(b"checkpoint 42") + b"\n" in data, data


def test_only_the_exclusive_holder_may_set(mount, zkc):
    m = mount(opts=("allow_other",))
    d = lockdir(m)
    fd = hold(d)
    set_state(fd, b"mine")
    entry = [e for e in os.listdir(d) if e.startswith("h")][0]
    reader = os.open(os.path.join(d, entry), os.O_RDONLY)
    try:
        with pytest.raises(OSError) as e:
            set_state(reader, b"a reader's")
        assert e.value.errno == errno.EACCES
    finally:
        os.close(reader)
    # another user, through a descriptor of the holder's entry
    other = os.open(os.path.join(d, entry), os.O_RDONLY)
    try:
        assert set_state_in_child(other, b"other", user=65534) == errno.EACCES
    finally:
        os.close(other)
    os.close(fd)
    # a shared holder, and a semaphore's slot
    fd = hold(d, "s", os.O_CREAT | os.O_RDONLY)
    with pytest.raises(OSError) as e:
        set_state(fd, b"shared")
    assert e.value.errno == errno.EACCES
    os.close(fd)
    sem = lockdir(m, "S")
    os.setxattr(sem, "user.zklockfs.limit", b"2")
    fd = hold(sem)
    with pytest.raises(OSError) as e:
        set_state(fd, b"slot")
    assert e.value.errno == errno.EACCES
    os.close(fd)
    assert read_state(d) == b"mine"


def test_a_waiters_descriptor_may_not_set(mount):
    """On a lockfiles mount a description opened but not locked, or
    waiting in flock(), holds nothing."""
    m = mount(opts=("lockfiles",))
    f = os.path.join(m.path, "F")
    h = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(h, fcntl.LOCK_EX)
    set_state(h, b"holder")
    w = os.open(f, os.O_RDWR)
    with pytest.raises(OSError) as e:
        set_state(w, b"waiter")
    assert e.value.errno == errno.EACCES
    assert os.getxattr(f, XATTR_STATEDATA) == b"holder"
    os.close(w)
    os.close(h)


def test_a_holder_whose_entry_is_gone_is_refused_by_the_server(proxy, mount, zkc,
                                                              request):
    """The holder's mount hears nothing (replies held back) while an
    operator deletes its entry and the holder sets: its set goes on to
    ZooKeeper, whose check of the entry fails (the log line says so:
    only that answer writes it), and nothing changes."""
    px = proxy()
    m = mount(connect=px.hostport, session_timeout=20000)
    d = lockdir(m)
    fd = hold(d)
    assert set_state_in_child(fd, b"before") == 0
    entry = [e for e in os.listdir(d) if e.startswith("h")][0]
    before = zk_data(zkc, m)
    reads = sum(ops.count(4) for ops in px.ops())
    px.blackhole(faultproxy.DOWN)       # requests go on, replies wait
    try:
        zkc.delete(m.zkpath("L/" + entry))
        out = {}
        t = threading.Thread(target=lambda: out.update(rc=set_state_in_child(fd, b"after")),
                             daemon=True)
        t.start()
        # the multi reached the server and was refused: the data is as it was
        # its read of the lock's data went out; the answer, and the news
        # of the delete, wait in the proxy
        wait_for(lambda: sum(ops.count(4) for ops in px.ops()) > reads, 5 * SLOW,
                 "the set's read to reach ZooKeeper")
        assert "rc" not in out, "answered before ZooKeeper could: %r" % out
    finally:
        px.heal()
        t0 = time.monotonic()
    t.join(GRANT_TIMEOUT)
    assert out.get("rc") == errno.EIO, out
    assert zk_data(zkc, m) == before
    assert log_has(m, "its holder's entry is gone"), m.log_tail()
    fig(request, "a set by a holder whose entry is gone: refused %.2f s after the heal"
        % (time.monotonic() - t0))
    os.close(fd)


def test_a_state_never_makes_a_setting(mount):
    m = mount()
    d = lockdir(m)
    fd = hold(d)
    set_state(fd, b"x\nlimit=1\nlinger=9\n")
    with pytest.raises(OSError) as e:
        os.getxattr(d, "user.zklockfs.limit")
    assert e.value.errno == errno.ENODATA
    assert read_state(d) == b"x\nlimit=1\nlinger=9\n"
    os.close(fd)


def test_zklock_state_prints_and_sets_through_zklock_fd(mount, zklock):
    m = mount()
    d = m.p("L")
    os.mkdir(d)
    r = Run(zklock, d, "sh", "-c", '"$ZKLOCK" --state "$1" --set leader-at-7; '
            'echo rc=$?; "$ZKLOCK" --state "$1"', "sh", d, env={"ZKLOCK": zklock})
    assert r.expect_line() == "rc=0"
    assert r.finish() == 0
    assert r.out.strip() == "leader-at-7"
    rc, out, _ = zk(zklock, "--state", d)
    assert rc == 0 and out == "leader-at-7"
    rc, _, err = zk(zklock, "--state", d, "--set", "x")
    assert rc == 64 and "ZKLOCK_FD" in err, err
    rc, _, err = zk(zklock, "-s", d, zklock, "--state", d, "--set", "x")
    assert rc == 77, (rc, err)
    rc, _, err = zk(zklock, "--set", "x", d)
    assert rc == 64 and "--state" in err


def test_a_lock_files_state_is_an_xattr(mount, zklock):
    m = mount(opts=("lockfiles",))
    f = os.path.join(m.path, "nightly.lock")
    rc, _, err = zk(zklock, f, zklock, "--state", f, "--set", "ran at 02:00")
    assert rc == 0, err
    assert os.getxattr(f, XATTR_STATEDATA) == b"ran at 02:00"
    rc, out, _ = zk(zklock, "--state", f)
    assert rc == 0 and out == "ran at 02:00"


def test_one_set_costs_one_read_and_one_write(proxy, mount, request):
    px = proxy()
    m = mount(connect=px.hostport)
    d = lockdir(m)
    fd = hold(d)
    assert set_state_in_child(fd, b"warm") == 0
    n0 = sum(len(ops) for ops in px.ops())
    before = [list(ops) for ops in px.ops()]
    assert set_state_in_child(fd, b"measured") == 0
    after = px.ops()
    new = [op for i, ops in enumerate(after)
           for op in ops[len(before[i]) if i < len(before) else 0:]]
    reads = [op for op in new if op == 4]       # getData
    writes = [op for op in new if op == 14]     # multi: check + setData
    fig(request, "one fenced set of .state: %d read(s), %d write(s) (ZooKeeper "
        "opcodes %r)" % (len(reads), len(writes), new))
    assert len(reads) == 1 and len(writes) == 1, new
    assert sum(len(ops) for ops in px.ops()) - n0 == len(new)
    os.close(fd)


# --- interop: the lock znode's data carries the state; its children do not -----

@pytest.mark.timeout(60)
@pytest.mark.parametrize("client", ["curator", "kazoo", "go"])
def test_other_clients_locks_work_unchanged_beside_the_state(mount, zk, zkc, client,
                                                             request):
    """A Curator InterProcessMutex, a kazoo Lock and a go-zookeeper zk.Lock
    on the lock znode that carries a state: each takes the lock, keeps a
    zklockfs opener waiting, lets it in on release, and the state is
    unchanged; nothing was added under the lock."""
    m = mount()
    d = lockdir(m)
    zpath = m.zkpath("L")
    fd = hold(d)
    set_state(fd, b"leader=10.0.0.7:8080")
    os.close(fd)
    wait_for(lambda: zkc.get_children(zpath) == [], GRANT_TIMEOUT, "the entry gone")
    if client == "curator":
        c = Curator(request.getfixturevalue("curator_cp"), zk.hostport, zpath)
    elif client == "kazoo":
        request.getfixturevalue("kazoo_ok")
        c = Kazoo(zk.hostport, zpath, "kz")
    else:
        c = GoLock(request.getfixturevalue("go_lock_bin"), zk.hostport, zpath)
    try:
        c.wait_ready()
        c.acquire()
        c.expect("acquired")
        w = harness.start_waiter(d, "fs")
        w.assert_waiting()
        c.release()
        w.wait_granted()
        assert read_state(d) == b"leader=10.0.0.7:8080"
        w.release()
    finally:
        c.quit()
    wait_for(lambda: zkc.get_children(zpath) == [], GRANT_TIMEOUT, "no child left")
    assert read_state(d) == b"leader=10.0.0.7:8080"
