"""The namespace: directories, entries, readdir order, data, stat, xattrs."""

import datetime
import errno
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest

import zkclient
from harness import (two_mounts, assert_queued, lock_state, lockdir, seen_dir, GRANT_TIMEOUT, SHARED, SLOW, WRITE,
                     XATTR_HOLDERS, XATTR_KIND, XATTR_SEQ, XATTR_STATE,
                     XATTR_TOKEN, Locker, entries, getxattr_str, parse_kv,
                     read_file, seq_of, start_waiter, take, wait_for,
                     wait_gone, wait_no_entries)




def holders(d):
    try:
        v = getxattr_str(d, XATTR_HOLDERS)
    except OSError as e:
        if e.errno == errno.ENODATA:
            return []
        raise
    return [os.path.basename(line.strip()) for line in v.splitlines()
            if line.strip()]


# --- mounting ---------------------------------------------------------------

def test_mount_type_is_fuse_zklockfs(mount):
    m = mount()
    assert m.fstype == "fuse.zklockfs"


def test_root_is_created_as_persistent_znode_with_create_root(mount, zkc):
    m = mount()             # the harness mounts with -o create_root
    st = zkc.exists(m.root)
    assert st is not None, "ROOT %s not created" % m.root
    assert st.ephemeralOwner == 0
    assert os.path.isdir(m.path)
    assert os.listdir(m.path) == []


def test_a_missing_root_fails_the_mount_naming_it(mount, zkc, test_root):
    """Without -o create_root a missing ROOT (a typo: /lcoks for /locks)
    fails the mount with one line naming it and the option, and makes
    nothing in ZooKeeper; an existing ROOT mounts."""
    with pytest.raises(AssertionError) as e:
        mount(root=test_root + "/lcoks", create_root=False)
    assert "lcoks" in str(e.value) and "create_root" in str(e.value), e.value
    assert zkc.exists(test_root + "/lcoks") is None
    zkc.ensure_path(test_root + "/locks")
    m = mount(root=test_root + "/locks", create_root=False)
    assert os.listdir(m.path) == []


def test_unmount_makes_daemon_exit_zero(mount):
    m = mount()
    os.mkdir(m.p("L"))
    assert m.umount() == 0
    assert not m.mounted()


# --- directories ------------------------------------------------------------

def test_mkdir_and_rmdir(mount, zkc):
    m = mount()
    d = m.p("locks")
    os.mkdir(d)
    assert stat.S_ISDIR(os.stat(d).st_mode)
    assert os.listdir(m.path) == ["locks"]
    st = zkc.exists(m.zkpath("locks"))
    assert st is not None and st.ephemeralOwner == 0, "not a persistent znode"

    os.mkdir(os.path.join(d, "sub"))
    assert os.listdir(d) == ["sub"]
    assert zkc.get_children(m.zkpath("locks")) == ["sub"]

    with pytest.raises(FileExistsError):
        os.mkdir(d)

    os.rmdir(os.path.join(d, "sub"))
    os.rmdir(d)
    assert os.listdir(m.path) == []
    assert zkc.exists(m.zkpath("locks")) is None
    assert not os.path.exists(d)


def test_directory_open_at_shutdown(mount):
    # the kernel may go before the RELEASEDIR of a directory still open:
    # the daemon exits cleanly, with nothing leaked (the sanitized run
    # reads its log)
    m = mount()
    d = lockdir(m)
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.listdir(d)
        m.kill(signal.SIGTERM)
        assert m.proc.wait(15) == 0
    finally:
        os.close(fd)


def test_mkdir_is_seen_by_another_mount(mount):
    m1, m2 = mount(), mount()
    os.mkdir(m1.p("shared"))
    seen_dir(m2, "shared")
    os.rmdir(m2.p("shared"))
    wait_for(lambda: not os.path.exists(m1.p("shared")), 5,
             "rmdir on one mount to show on the other")


def test_directory_made_on_another_mount_right_after_a_miss(mount):
    # a miss is not remembered: no host is told ENOENT for a lock
    # directory another host has made, however recently it looked
    m1, m2 = mount(), mount()
    d1, d2 = m1.p("fresh"), m2.p("fresh")
    for _ in range(3):
        with pytest.raises(FileNotFoundError):
            os.stat(d2)
        os.mkdir(d1)
        fd = os.open(os.path.join(d2, "w"), os.O_CREAT | os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        wait_for(lambda: not os.listdir(d2), 5, "the entry to go")
        os.rmdir(d1)
        wait_for(lambda: not os.path.exists(d2), 5, "the directory to go on m2")


def test_rmdir_with_subdirectory_is_enotempty(mount, zkc):
    m = mount()
    os.makedirs(m.p("a", "b"))
    with pytest.raises(OSError) as ei:
        os.rmdir(m.p("a"))
    assert ei.value.errno == errno.ENOTEMPTY
    assert os.path.isdir(m.p("a", "b"))
    assert zkc.exists(m.zkpath("a/b")) is not None


def test_rmdir_with_entry_is_enotempty(mount):
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    with pytest.raises(OSError) as ei:
        os.rmdir(d)
    assert ei.value.errno == errno.ENOTEMPTY
    assert entries(d) == [h.entry]
    h.release()
    wait_no_entries(d)
    # once ls shows it empty, rmdir works (allow ZooKeeper a moment)
    def try_rmdir():
        try:
            os.rmdir(d)
            return True
        except OSError as e:
            if e.errno != errno.ENOTEMPTY:
                raise
            return False
    wait_for(try_rmdir, 3, "rmdir of the emptied lock")
    assert not os.path.exists(d)


# --- readdir order ------------------------------------------------------------

def test_readdir_lists_queue_in_order_then_subdirectories(mount):
    m = mount()
    d = lockdir(m)
    os.mkdir(os.path.join(d, "aaa-subdir"))
    os.mkdir(os.path.join(d, "zzz-subdir"))
    # reverse alphabetical names, so that name order != queue order
    names = ["e", "d", "c", "b", "a"]
    lockers = [take(d, names[0])]
    for n in names[1:]:
        lockers.append(start_waiter(d, n))
    ents = [lk.entry for lk in lockers]
    seqs = [seq_of(e) for e in ents]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), \
        "entries did not get increasing sequence numbers: %r" % ents

    listing = os.listdir(d)
    assert listing[:5] == ents, "readdir is not in queue order"
    assert sorted(listing[5:]) == ["aaa-subdir", "zzz-subdir"]
    assert len(listing) == 7

    # still in order after the head leaves
    lockers[0].release()
    lockers[1].wait_granted()
    wait_gone(d, ents[0])
    listing = os.listdir(d)
    assert listing[:4] == ents[1:]
    assert sorted(listing[4:]) == ["aaa-subdir", "zzz-subdir"]


# --- /zookeeper ---------------------------------------------------------------

@pytest.mark.parametrize("root", ["/", ""], ids=["root-slash", "no-root"])
def test_zookeeper_node_hidden_at_root(mount, zkc, root):
    assert zkc.exists("/zookeeper") is not None
    m = mount(root=root)
    names = os.listdir(m.path)
    assert "zookeeper" not in names
    assert "t" in names           # the fixture's /t is shown


# --- entries: stat, data ------------------------------------------------------

def _assert_times_are_ctime(st, zst, what):
    """stat's three times are the znode's ctime (milliseconds), exactly."""
    want = zst.ctime * 1000000
    got = {"atime": st.st_atime_ns, "mtime": st.st_mtime_ns,
           "ctime": st.st_ctime_ns}
    bad = {k: v for k, v in got.items() if v != want}
    assert not bad, "%s: %s, where the znode's ctime is %d ms (mtime %d ms)" % (
        what, ", ".join("%s %.3f s" % (k, v / 1e9) for k, v in sorted(bad.items())),
        zst.ctime, zst.mtime)


def test_stat_of_entry(mount, zkc):
    m = mount()
    d = lockdir(m)
    h = take(d, "job")
    p = os.path.join(d, h.entry)
    st = os.stat(p)
    assert stat.S_ISREG(st.st_mode)
    data = read_file(p)
    assert st.st_size == len(data)
    assert st.st_uid == os.getuid()
    zdata, zst = zkc.get_data(m.zkpath("L/" + h.entry))
    assert zdata == data
    _assert_times_are_ctime(st, zst, h.entry)

    payload = b"leader=10.1.2.3:4567\n"
    assert h.ok("write " + payload.hex()) == str(len(payload))
    wait_for(lambda: os.stat(p).st_size == len(payload), 3 * SLOW,
             "stat size to follow the new data (%d)" % len(payload))


def test_entry_stat_times_are_the_znodes_creation_time(mount, zkc):
    """docs/SPEC.md: stat of an entry: times = znode creation time. atime,
    mtime and ctime all are the znode's ctime, to the millisecond ZooKeeper
    keeps: for a holder's entry, after its data changed (the znode's mtime
    moved, the entry's times do not), for a waiter's, seen through another
    mount, and for an entry another ZooKeeper client made."""
    m1, m2, d1, d2 = two_mounts(mount)
    zl = m1.zkpath("L")
    h = take(d1, "h")
    w = start_waiter(d1, "w")
    f = zkc.create(zl + "/_c_f-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    fname = f.rsplit("/", 1)[1]
    wait_for(lambda: fname in os.listdir(d2), 5 * SLOW, "%s on mount 2" % fname)
    for name in (h.entry, w.entry, fname):
        zst = zkc.exists(zl + "/" + name)
        for d in (d1, d2):
            _assert_times_are_ctime(os.stat(os.path.join(d, name)), zst,
                                    os.path.join(d, name))

    # the data changes in a later millisecond: the znode's mtime moves on
    zst = zkc.exists(zl + "/" + h.entry)
    wait_for(lambda: time.time() * 1000 >= zst.ctime + 2, 5,
             "the clock to pass the entry's ctime")
    payload = b"addr=10.0.0.1:8080\n"
    assert h.ok("write " + payload.hex()) == str(len(payload))
    h.ok("fsync")                   # sent at fsync at the latest
    zdata, zst = zkc.get_data(zl + "/" + h.entry)
    assert zdata == payload and zst.mtime > zst.ctime, (zdata, zst)
    for d in (d1, d2):
        p = os.path.join(d, h.entry)
        wait_for(lambda: os.stat(p).st_size == len(payload), 5 * SLOW,
                 "stat of %s to show the new data" % p)
        _assert_times_are_ctime(os.stat(p), zst, p + " after a write")


def _host_names():
    h = socket.gethostname()
    return {h, h.split(".")[0], socket.getfqdn()}


def test_entry_data_describes_holder(mount, zkc):
    m = mount()
    d = lockdir(m)
    h = take(d, "job")
    data = read_file(os.path.join(d, h.entry))
    kv = parse_kv(data)
    for key in ("host", "pid", "uid", "cmd", "since", "mount"):
        assert key in kv, "no %s= line in %r" % (key, data)
    assert kv["pid"] == str(h.pid)
    assert kv["host"] in _host_names()
    assert kv["uid"] == str(os.getuid())
    assert kv["cmd"] == "python3"           # the name (comm), no arguments
    assert kv["mount"]

    since = datetime.datetime.fromisoformat(kv["since"].replace("Z", "+00:00"))
    now = (datetime.datetime.now(datetime.timezone.utc) if since.tzinfo
           else datetime.datetime.now())
    assert abs((now - since).total_seconds()) < 120, kv["since"]

    # what the file shows is the znode's data
    zdata, zst = zkc.get_data(m.zkpath("L/" + h.entry))
    assert zdata == data
    assert zst.ephemeralOwner != 0


def test_entry_of_a_thread_names_its_process(mount):
    """FUSE tells the opening thread; the entry names its process: pid= the
    process's, cmd= the process's name (comm) only, never the thread's name
    or the command's arguments, which may hold secrets (docs/SPEC.md)."""
    d = lockdir(mount())
    script = ("import ctypes, os, sys, threading\n"
              "libc = ctypes.CDLL(None)\n"
              "libc.prctl(15, b'zklmainproc', 0, 0, 0)     # PR_SET_NAME\n"
              "def take():\n"
              "    libc.prctl(15, b'zklworker', 0, 0, 0)\n"
              "    fd = os.open(os.path.join(sys.argv[1], 'job'), os.O_CREAT | os.O_WRONLY)\n"
              "    ent = [e for e in os.listdir(sys.argv[1]) if e.startswith('job')][0]\n"
              "    print(threading.get_native_id())\n"
              "    print(open(os.path.join(sys.argv[1], ent)).read(), end='')\n"
              "    os.close(fd)\n"
              "t = threading.Thread(target=take)\n"
              "t.start()\n"
              "t.join()\n")
    p = subprocess.Popen([sys.executable, "-c", script, d, "--password=hunter2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 0, err
    tid, data = out.split("\n", 1)
    kv = parse_kv(data.encode())
    assert int(tid) != p.pid
    assert kv.get("pid") == str(p.pid), "entry of thread %s: %r" % (tid, data)
    assert kv.get("cmd") == "zklmainproc", kv
    assert "hunter2" not in data


def test_entry_read_through_another_mount(mount):
    m1, m2, d1, d2 = two_mounts(mount)
    h = take(d1, "job")
    wait_for(lambda: h.entry in os.listdir(d2), 5, "entry on the other mount")
    kv = parse_kv(read_file(os.path.join(d2, h.entry)))
    assert kv.get("pid") == str(h.pid)


def test_holder_write_replaces_data(mount, zkc):
    m1, m2, d1, d2 = two_mounts(mount)
    h = take(d1, "leader")
    p1 = os.path.join(d1, h.entry)
    first = b"addr=10.0.0.1:8080\n"
    assert h.ok("write " + first.hex()) == str(len(first))
    assert read_file(p1) == first
    h.ok("fsync")                   # sent at fsync at the latest
    assert zkc.get_data(m1.zkpath("L/" + h.entry))[0] == first
    wait_for(lambda: h.entry in os.listdir(d2), 5, "entry on the other mount")
    wait_for(lambda: read_file(os.path.join(d2, h.entry)) == first, 5,
             "the other mount to read the new data")

    h.ok("seek 0")
    assert h.ok("write " + b"x".hex()) == "1"
    assert read_file(p1) == b"x", "write() did not replace the data"
    h.ok("fsync")
    assert zkc.get_data(m1.zkpath("L/" + h.entry))[0] == b"x"


# --- naming schemes -----------------------------------------------------------

@pytest.mark.parametrize("naming,excl,shared", [
    (None, "-lock-", "-read-lock-"),
    ("curator", "-lock-", "-read-lock-"),
    ("kazoo", "__lock__", "__rlock__"),
])
def test_entry_names_follow_naming_scheme(mount, zkc, naming, excl, shared):
    m = mount(naming=naming)
    d = lockdir(m)
    x = take(d, "job", WRITE)
    assert re.fullmatch(r"job" + re.escape(excl) + r"\d{10}", x.entry), x.entry
    assert zkc.get_children(m.zkpath("L")) == [x.entry]
    x.release()
    wait_no_entries(d)
    r = take(d, "job", SHARED)
    assert re.fullmatch(r"job" + re.escape(shared) + r"\d{10}", r.entry), r.entry
    assert getxattr_str(os.path.join(d, r.entry), XATTR_KIND) == "shared"
    assert zkc.get_children(m.zkpath("L")) == [r.entry]


def test_entry_is_ephemeral_znode_removed_on_close(mount, zkc):
    m = mount()
    d = lockdir(m)
    h = take(d, "e")
    zpath = m.zkpath("L/" + h.entry)
    st = zkc.exists(zpath)
    assert st is not None and st.ephemeralOwner not in (0, zkc.session_id)
    h.release()
    wait_for(lambda: zkc.exists(zpath) is None, 5, "znode %s deleted" % zpath)
    wait_no_entries(d)


# --- xattrs -------------------------------------------------------------------

def test_entry_xattrs(mount):
    m = mount()
    d = lockdir(m)
    h = take(d, "a")
    w = start_waiter(d, "b")
    r = start_waiter(d, "c", SHARED)
    for lk, kind, state in ((h, "exclusive", "held"),
                            (w, "exclusive", "waiting"),
                            (r, "shared", "waiting")):
        p = os.path.join(d, lk.entry)
        names = set(os.listxattr(p))
        assert {XATTR_SEQ, XATTR_KIND, XATTR_STATE} <= names, names
        assert getxattr_str(p, XATTR_KIND) == kind, lk.entry
        assert lock_state(p) == state, lk.entry
        assert int(getxattr_str(p, XATTR_SEQ)) == seq_of(lk.entry)
    # through the holder's own descriptor too
    assert lock_state(h) == "held"
    assert int(h.xattr(XATTR_SEQ)) == seq_of(h.entry)
    # a missing attribute
    with pytest.raises(OSError) as ei:
        os.getxattr(os.path.join(d, h.entry), "user.zklockfs.nonexistent")
    assert ei.value.errno == errno.ENODATA

    h.release()
    w.wait_granted()
    pw = os.path.join(d, w.entry)
    wait_for(lambda: lock_state(pw) == "held", 5,
             "state of the new holder to read held")
    assert lock_state(os.path.join(d, r.entry)) == "waiting"


def test_directory_holders_xattr(mount):
    m = mount()
    d = lockdir(m)
    assert holders(d) == []
    h = take(d, "x")
    w = start_waiter(d, "y")
    assert XATTR_HOLDERS in os.listxattr(d)
    assert holders(d) == [h.entry]
    h.release()
    w.wait_granted()
    wait_for(lambda: holders(d) == [w.entry], 5, "holders to show the new holder")
    w.release()
    wait_no_entries(d)
    r1 = take(d, "r1", SHARED)
    r2 = take(d, "r2", SHARED)
    x = start_waiter(d, "x")
    assert sorted(holders(d)) == sorted([r1.entry, r2.entry])
    assert x.entry not in holders(d)


def _token_fields(tok):
    return [int(f) for f in tok.split() if re.fullmatch(r"-?\d+", f)]


def test_fencing_token_grows_with_each_grant(mount, zkc):
    m1, m2, d1, d2 = two_mounts(mount)
    firsts = []
    for d, m in ((d1, m1), (d2, m2), (d1, m1), (d2, m2)):
        lk = take(d, "t")
        tok = lk.xattr(XATTR_TOKEN)
        fields = _token_fields(tok)
        assert fields, "token %r has no decimal field" % tok
        czxid = zkc.exists(m.zkpath("L/" + lk.entry)).czxid
        assert czxid in fields, "token %r does not carry czxid %d" % (tok, czxid)
        firsts.append(fields[0])
        lk.release()
        wait_no_entries(d)
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts), \
        "tokens do not grow: %r" % firsts


# --- liveness while waiting ---------------------------------------------------

def test_directory_answers_at_once_while_waiters_wait(mount):
    m1, m2, d1, d2 = two_mounts(mount)
    h = take(d1, "h")
    assert h.entry in entries(d1)
    wdirs = [d1 if i % 2 == 0 else d2 for i in range(4)]
    ws = [start_waiter(d, "w%d" % i) for i, d in enumerate(wdirs)]
    # "answer at once": each operation is at most a round trip to ZooKeeper
    # (milliseconds), never a wait for a lock; 2 s (x SLOW) each is slack
    # for a loaded machine, and far from a wait that ends only on a grant
    # (never, here)
    bound = 2.0 * SLOW
    times = []

    def timed(what, fn, *args):
        t0 = time.monotonic()
        v = fn(*args)
        times.append((time.monotonic() - t0, what))
        return v
    for d in (d1, d2):
        ents = timed("ls " + d, entries, d)
        timed("stat " + d, os.stat, d)
        for e in ents:
            timed("stat " + e, os.stat, os.path.join(d, e))
            timed("getfattr " + e, getxattr_str, os.path.join(d, e), XATTR_STATE)
        timed("mkdir", os.mkdir, os.path.join(d, "sub"))
        timed("rmdir", os.rmdir, os.path.join(d, "sub"))
    # a further (non-blocking) open in the directory answers at once
    nb = Locker(os.path.join(d1, "nb"), WRITE | os.O_NONBLOCK)
    assert timed("open O_NONBLOCK", nb.wait_error, GRANT_TIMEOUT) == "EAGAIN"
    slowest = max(times)
    assert slowest[0] < bound, ("%s took %.2fs while waiters wait (bound "
                                "%.1fs; %d operations, %.2fs in all)" % (
                                    slowest[1], slowest[0], bound, len(times),
                                    sum(t for t, _ in times)))
    for w, d in zip(ws, wdirs):
        assert_queued(w, d)


def test_two_mounts_show_the_same_queue(mount):
    m1, m2, d1, d2 = two_mounts(mount)
    h = take(d1, "a")
    w = start_waiter(d2, "b")
    want = [h.entry, w.entry]
    wait_for(lambda: entries(d1) == want, 5, "queue on mount 1")
    wait_for(lambda: entries(d2) == want, 5, "queue on mount 2")
    p = os.path.join(d1, w.entry)
    assert lock_state(p) == "waiting"
    h.release()
    w.wait_granted()
    wait_for(lambda: entries(d1) == [w.entry], 5, "mount 1 to drop the entry")
    wait_for(lambda: lock_state(p) == "held", 5,
             "mount 1 to see the other mount's entry as held")


def test_directory_made_elsewhere_is_seen_after_mkdir_says_eexist(mount):
    """In a busy lock directory lookups use a listing up to a second old;
    a mkdir that finds the name taken makes the mount look again."""
    m1, m2, d1, d2 = two_mounts(mount)
    h = take(d1, "h")                      # d1 is a busy lock directory now
    assert not os.path.exists(os.path.join(d1, "other"))
    os.mkdir(os.path.join(d2, "sub"))      # another host makes it
    with pytest.raises(FileExistsError):
        os.mkdir(os.path.join(d1, "sub"))
    assert stat.S_ISDIR(os.stat(os.path.join(d1, "sub")).st_mode)
    h.release()
