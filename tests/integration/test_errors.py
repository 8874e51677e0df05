"""Errors: bad names, unsupported operations, permissions, failed mounts."""

import errno
import fcntl
import os
import stat
import subprocess
import tempfile
import time

import pytest

import zkclient
from harness import (two_mounts, lockdir, RDWR, SHARED, SLOW, WRITE, Locker, entries,
                     errname, free_port, mount_entry, read_file, remove_mountpoint,
                     spawn, take, wait_for, fusermount, clear_immutable)




def assert_errno(e, err):
    assert e.value.errno == err, "got %s, expected %s" % (
        errname(e.value.errno), errname(err))


def assert_nothing_left(m, zkc, d, rel="L", allowed=()):
    wait_for(lambda: sorted(os.listdir(d)) == sorted(allowed), 5,
             "nothing left in %s (now %r)" % (d, os.listdir(d)))
    wait_for(lambda: sorted(zkc.get_children(m.zkpath(rel))) == sorted(allowed),
             5, "nothing left in ZooKeeper under %s" % m.zkpath(rel))


# --- names --------------------------------------------------------------------

# The exact shapes of queue entries, of every naming scheme read: a child
# of such a name would stand in its parent's queue, ahead of every waiter,
# for good.  Names that merely end in digits are ordinary (below).
ENTRY_SHAPES = [
    ("curator-entry", "x-lock-0000000001"),
    ("curator-shared-entry", "x-read-lock-0000000001"),
    ("kazoo-entry", "x__lock__0000000001"),
    ("kazoo-shared-entry", "x__rlock__0000000001"),
    ("curator-rwlock-reader", "_c_a-__READ__0000000001"),
    ("curator-rwlock-writer", "_c_a-__WRIT__0000000001"),
    ("negative-number", "x-lock--000000005"),
]


def refused_names(word, too_long, *specific):
    """(id, name, errno) rows of the names refused, for an entry as for a
    directory: every shape of a queue entry (ENTRY_SHAPES), the @specific
    rows, @word after a character no name may hold, @too_long (256
    bytes)."""
    return ([(i, n, errno.EINVAL) for i, n in ENTRY_SHAPES] +
            list(specific) +
            [("control-char", "bad\x01" + word, errno.EINVAL),
             ("del-char", "bad\x7f" + word, errno.EINVAL),
             ("private-use-char", "bad\ue000" + word, errno.EINVAL),
             ("invalid-utf8", "bad\udcff" + word, errno.EINVAL),  # raw byte 0xff
             ("256-bytes", too_long, errno.ENAMETOOLONG)])


def each_name(rows):
    """Parametrise a test by (name, err) over refused_names() rows, with
    their ids."""
    return pytest.mark.parametrize("name,err", [(n, e) for _, n, e in rows],
                                   ids=[i for i, _, _ in rows])


BAD_ENTRY_NAMES = refused_names(
    "name", "a" * 256,
    # its exclusive entry "db-read-lock-N" would read as shared
    ("reads-as-the-other-kind", "db-read", errno.EINVAL))


@pytest.mark.parametrize("flags", [WRITE, SHARED], ids=["exclusive", "shared"])
@each_name(BAD_ENTRY_NAMES)
def test_bad_entry_name(mount, zkc, name, err, flags):
    m = mount()
    d = lockdir(m)
    lk = Locker(os.path.join(d, name), flags)
    assert lk.wait_error(5) == errname(err)
    assert_nothing_left(m, zkc, d)


BAD_DIR_NAMES = refused_names("dir", "d" * 256)


@each_name(BAD_DIR_NAMES)
def test_bad_directory_name(mount, zkc, name, err):
    m = mount()
    with pytest.raises(OSError) as ei:
        os.mkdir(m.p(name))
    assert_errno(ei, err)
    assert os.listdir(m.path) == []
    assert zkc.get_children(m.root) == []


# Go's os.MkdirTemp and mktemp(1) names, a negative-looking number, a
# number too short: names that end in digits but not after a marker
DIGIT_NAMES = ["go-build1234567890", "tmp.1234567890", "job-123456789",
               "x-lock-123"]


def test_names_that_end_in_digits_are_ordinary(mount, zkc):
    """A directory may have any name but an entry's: those of DIGIT_NAMES are
    made, listed as directories after the queue, and stand in no queue (a
    lock taken beside them is granted at once); a NAME may end in digits."""
    m = mount()
    d = lockdir(m)
    for name in DIGIT_NAMES:
        os.mkdir(os.path.join(d, name))
    h = take(d, "web1234567890")
    assert h.entry.startswith("web1234567890-lock-")
    assert os.listdir(d) == [h.entry] + sorted(DIGIT_NAMES)
    for name in DIGIT_NAMES:
        assert stat.S_ISDIR(os.stat(os.path.join(d, name)).st_mode), name
    assert sorted(zkc.get_children(m.zkpath("L"))) == sorted(DIGIT_NAMES + [h.entry])
    h.release()
    # each is a lock directory of its own
    inner = take(os.path.join(d, "go-build1234567890"), "h")
    inner.release()
    for name in DIGIT_NAMES:
        os.rmdir(os.path.join(d, name))


def test_lock_files_and_folders_that_end_in_digits_are_ordinary(mount):
    """On a lockfiles mount, a folder and a lock file named as mktemp(1)
    and os.MkdirTemp name them are made, and the lock file locks."""
    m = mount(opts=("lockfiles",))
    folder = m.p("go-build1234567890")
    os.mkdir(folder)
    path = os.path.join(folder, "tmp.1234567890")
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert stat.S_ISREG(os.stat(path).st_mode)
        assert stat.S_ISDIR(os.stat(folder).st_mode)
        assert os.listdir(folder) == ["tmp.1234567890"]
    finally:
        os.close(fd)
    with pytest.raises(OSError) as ei:
        os.close(os.open(os.path.join(folder, "x-lock-0000000001"),
                         os.O_RDWR | os.O_CREAT))
    assert_errno(ei, errno.EINVAL)
    with pytest.raises(OSError) as ei:
        os.mkdir(m.p("x-lock-0000000001"))
    assert_errno(ei, errno.EINVAL)


def test_255_byte_directory_name_is_fine(mount):
    m = mount()
    name = "d" * 255
    os.mkdir(m.p(name))
    assert os.listdir(m.path) == [name]


def test_open_creat_of_directory_is_eisdir(mount):
    m = mount()
    d = lockdir(m)
    os.mkdir(os.path.join(d, "sub"))
    for flags in (WRITE, RDWR, SHARED):
        lk = Locker(os.path.join(d, "sub"), flags)
        assert lk.wait_error(5) == "EISDIR"
    assert os.listdir(d) == ["sub"]


# --- unsupported operations ---------------------------------------------------

def test_rename_is_eperm(mount, zkc):
    m = mount()
    d = lockdir(m)
    os.mkdir(os.path.join(d, "sub"))
    h = take(d, "h")
    with pytest.raises(OSError) as ei:
        os.rename(os.path.join(d, h.entry), os.path.join(d, "moved"))
    assert_errno(ei, errno.EPERM)
    with pytest.raises(OSError) as ei:
        os.rename(os.path.join(d, "sub"), os.path.join(d, "sub2"))
    assert_errno(ei, errno.EPERM)
    with pytest.raises(OSError) as ei:
        os.rename(d, m.p("L2"))
    assert_errno(ei, errno.EPERM)
    assert sorted(os.listdir(d)) == sorted([h.entry, "sub"])
    assert sorted(zkc.get_children(m.zkpath("L"))) == sorted([h.entry, "sub"])


def test_link_is_eperm(mount, zkc):
    m = mount()
    d = lockdir(m)
    h = take(d, "h")
    with pytest.raises(OSError) as ei:
        os.link(os.path.join(d, h.entry), os.path.join(d, "hard"))
    assert_errno(ei, errno.EPERM)
    assert_nothing_left(m, zkc, d, allowed=[h.entry])


@pytest.mark.parametrize("where", ["root", "lockdir"])
def test_symlink_is_eperm(mount, zkc, where):
    m = mount()
    d = lockdir(m)
    target = m.path if where == "root" else d
    with pytest.raises(OSError) as ei:
        os.symlink("/etc/hostname", os.path.join(target, "sym"))
    assert_errno(ei, errno.EPERM)
    assert_nothing_left(m, zkc, d)
    assert os.listdir(m.path) == ["L"]


@pytest.mark.parametrize("kind", ["fifo", "chardev", "blockdev", "socket"])
def test_mknod_special_is_eperm(mount, zkc, kind):
    m = mount()
    d = lockdir(m)
    p = os.path.join(d, "node")
    with pytest.raises(OSError) as ei:
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "chardev":
            os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 3))
        elif kind == "blockdev":
            os.mknod(p, stat.S_IFBLK | 0o600, os.makedev(7, 0))
        else:
            os.mknod(p, stat.S_IFSOCK | 0o600)
    assert_errno(ei, errno.EPERM)
    assert_nothing_left(m, zkc, d)


def test_mknod_regular_leaves_no_entry(mount, zkc):
    """docs/SPEC.md: mknod of a FIFO, device or socket is EPERM; mknod of a
    regular file leaves no entry behind. It succeeds (docs/DESIGN.md: MKNOD
    is the first half of open(O_CREAT), answered at once with nothing sent
    to ZooKeeper), and the name is not there afterwards: no entry, no
    znode, a lookup misses, and the lock is free."""
    m = mount()
    d = lockdir(m)
    p = os.path.join(d, "plain")
    assert os.mknod(p, stat.S_IFREG | 0o644) is None
    assert os.listdir(d) == [], "an entry after mknod: %r" % os.listdir(d)
    assert zkc.get_children(m.zkpath("L")) == [], "a znode after mknod"
    with pytest.raises(FileNotFoundError):
        os.stat(p)
    lk = take(d, "next", timeout=5 * SLOW)
    assert entries(d) == [lk.entry]
    lk.release()
    wait_for(lambda: os.listdir(d) == [], 5 * SLOW, "the entry to go")


# --- permissions --------------------------------------------------------------

@pytest.mark.parametrize("flags,err", [
    (os.O_WRONLY, "EACCES"),
    (os.O_RDWR, "EACCES"),
    (os.O_WRONLY | os.O_CREAT, "EACCES"),
    (os.O_WRONLY | os.O_CREAT | os.O_EXCL, "EEXIST"),
], ids=["wronly", "rdwr", "creat", "creat-excl"])
def test_opening_someone_elses_entry_for_writing(mount, flags, err):
    m1, m2, d1, d2 = two_mounts(mount)
    h = take(d1, "h")
    for d in (d1, d2):
        wait_for(lambda: h.entry in os.listdir(d), 5, "entry to show")
        lk = Locker(os.path.join(d, h.entry), flags)
        assert lk.wait_error(5) == err
    # reading it is fine and takes no lock
    assert b"pid=%d" % h.pid in read_file(os.path.join(d2, h.entry))
    assert entries(d1) == [h.entry]


def test_zookeeper_acl_denial_is_eacces(mount, zkc):
    m = mount()
    # READ only for everybody: listable, but no children may be created
    zkc.create(m.zkpath("ro"), b"", zkclient.PERSISTENT, acl=[(1, "world", "anyone")])
    d = m.p("ro")
    wait_for(lambda: os.path.isdir(d), 5, "the read-only znode to show")
    with pytest.raises(OSError) as ei:
        os.mkdir(os.path.join(d, "sub"))
    assert_errno(ei, errno.EACCES)
    lk = Locker(os.path.join(d, "x"), WRITE)
    assert lk.wait_error(5) == "EACCES"
    assert zkc.get_children(m.zkpath("ro")) == []


def test_unlink_deletes_an_entry(mount, zkc):
    m1, m2, d1, d2 = two_mounts(mount)
    h = take(d1, "h")
    wait_for(lambda: h.entry in os.listdir(d2), 5, "entry to show")
    os.unlink(os.path.join(d2, h.entry))
    wait_for(lambda: h.entry not in os.listdir(d1), 5, "entry to go")
    assert zkc.get_children(m1.zkpath("L")) == []
    with pytest.raises(FileNotFoundError):
        os.unlink(os.path.join(d2, h.entry))


def test_write_over_1mib_fails_efbig(mount):
    m = mount()
    d = lockdir(m)
    h = take(d, "big")
    ans = h.cmd("writelen %d" % (2 << 20), timeout=30)
    # all of it cannot have been stored: either EFBIG, or a short write
    if ans.startswith("ok"):
        n = int(ans.split()[1])
        assert n < (2 << 20), "a 2 MiB write() succeeded"
        ans = h.cmd("writelen %d" % (2 << 20), timeout=30)
    assert ans == "error EFBIG", ans
    assert os.stat(os.path.join(d, h.entry)).st_size <= (1 << 20)



# fs/wbuf.c: at most 1 MiB - 1 KiB of data, and less under a long path
ZKLFS_DATA_MAX = 1024 * 1024 - 1024
METRICS = "user.zklockfs.metrics"


def connection_losses(m):
    for line in os.getxattr(m.path, METRICS).decode().splitlines():
        if line.startswith("zklockfs_connection_losses_total "):
            return int(line.split()[1])
    raise AssertionError("no connection loss counter in the metrics")


def test_data_too_big_with_its_path_is_efbig_and_never_sent(mount, zkc):
    # ZooKeeper closes the connection on a request longer than its
    # jute.maxbuffer, path and data together: 16 levels of 250-byte names
    # and the largest data of a short path make one.  The write must be
    # EFBIG, and nothing may cost the mount its connection.
    m = mount()
    d = m.p()
    for i in range(16):
        d = os.path.join(d, "%02d" % i + "d" * 248)
        os.mkdir(d)
    h = take(d, "big")
    assert h.cmd("writelen %d" % ZKLFS_DATA_MAX, timeout=60 * SLOW) == "error EFBIG"
    h.ok("seek 0")
    # what does fit is taken and reaches ZooKeeper
    fits = ZKLFS_DATA_MAX - 8192
    assert int(h.ok("writelen %d" % fits, timeout=60 * SLOW)) == fits
    h.ok("fsync", timeout=30 * SLOW)
    rel = os.path.relpath(os.path.join(d, h.entry), m.path)
    assert zkc.exists(m.zkpath(rel)).dataLength == fits
    # truncate (setattr of the size) is bounded the same way
    assert h.cmd("truncate %d" % ZKLFS_DATA_MAX) == "error EFBIG"
    time.sleep(2)            # a tick or two of the supervisor
    h.ok("fsync", timeout=30 * SLOW)
    assert connection_losses(m) == 0
    h.release()


# --- mounts that must fail ----------------------------------------------------

def _run_daemon_expect_failure(daemon_path, source, mp, session_ms=2000, unmount=True):
    """Run the daemon expected to fail; whatever it mounted at @mp is
    unmounted after, unless @mp is another mount's (@unmount False)."""
    t0 = time.monotonic()
    p = spawn([daemon_path, "-f", "-o", "session_timeout=%d" % session_ms,
               source, mp], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=session_ms / 1000.0 + 10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(10)
        pytest.fail("zklockfs %s %s did not exit" % (source, mp))
    finally:
        if unmount and mount_entry(mp) is not None:
            fusermount(mp, lazy=True)
    return p.returncode, out, err, time.monotonic() - t0


def _one_line(err):
    lines = [line for line in err.decode("utf-8", "replace").splitlines()
             if line.strip()]
    assert len(lines) == 1, "expected one line on stderr, got %d:\n%s%s" % (
        len(lines), "\n".join(lines[:5]), "\n..." if len(lines) > 5 else "")
    return lines[0]


def test_unreachable_zookeeper_exits_1_with_one_line(daemon_path):
    mp = tempfile.mkdtemp(prefix="zklockfs-mnt-")
    try:
        port = free_port()            # nothing listens there
        rc, out, err, elapsed = _run_daemon_expect_failure(
            daemon_path, "127.0.0.1:%d/x" % port, mp, 2000)
        assert rc == 1, (rc, err)
        # docs/SPEC.md: it fails when ZooKeeper cannot be reached within the
        # session timeout (2 s here); 5 s (x SLOW) of slack for start-up
        bound = 2.0 + 5.0 * SLOW
        assert elapsed < bound, ("unreachable ZooKeeper: exit after %.2fs, "
                                 "bound %.1fs" % (elapsed, bound))
        _one_line(err)
        assert mount_entry(mp) is None
    finally:
        remove_mountpoint(mp)


@pytest.mark.parametrize("where", ["is-ephemeral", "under-ephemeral"])
def test_unusable_root_fails_with_one_line(daemon_path, zk, zkc, test_root,
                                           where):
    zkc.ensure_path(test_root)
    eph = zkc.create(test_root + "/eph", b"", zkclient.EPHEMERAL)
    root = eph if where == "is-ephemeral" else eph + "/sub"
    mp = tempfile.mkdtemp(prefix="zklockfs-mnt-")
    try:
        rc, out, err, elapsed = _run_daemon_expect_failure(
            daemon_path, zk.hostport + root, mp, 2000)
        assert rc != 0
        _one_line(err)
        assert mount_entry(mp) is None
    finally:
        remove_mountpoint(mp)


def test_missing_mountpoint_fails_with_one_line(daemon_path, zk):
    mp = os.path.join(tempfile.gettempdir(), "zklockfs-no-such-dir-%d" % os.getpid())
    assert not os.path.exists(mp)
    rc, out, err, elapsed = _run_daemon_expect_failure(
        daemon_path, zk.hostport + "/t/missing-mp", mp, 2000)
    assert rc != 0
    _one_line(err)


def test_mountpoint_that_is_a_file_fails_with_one_line(daemon_path, zk, tmp_path):
    """A regular file as the mount point: refused before anything mounts,
    saying so (it would mount, then give EIO)."""
    f = tmp_path / "not-a-dir"
    f.write_text("")
    rc, out, err, elapsed = _run_daemon_expect_failure(
        daemon_path, zk.hostport + "/t", str(f), 2000)
    assert rc != 0
    assert "not a directory" in _one_line(err)


def test_a_second_mount_on_a_zklockfs_mount_is_refused(mount, daemon_path, zk):
    """Stacking a second zklockfs on a mount point in use is refused, naming
    it; the first mount goes on."""
    m = mount()
    rc, out, err, elapsed = _run_daemon_expect_failure(
        daemon_path, zk.hostport + m.root, m.path, 2000, unmount=False)
    assert rc != 0
    assert "already" in _one_line(err)
    assert m.mounted()
    os.mkdir(m.p("still-works"))


def test_a_dead_fuse_mount_says_to_unmount_it(mount, daemon_path, zk):
    """After kill -9 of the daemon the mount point is a dead FUSE mount
    (ENOTCONN): a remount says to run fusermount3 -u first, even right
    after the kill, while the kernel still answers stat from its cache."""
    m = mount()
    os.stat(m.path)                 # cached for a second
    m.kill()
    m.proc.wait(10)
    rc, out, err, elapsed = _run_daemon_expect_failure(
        daemon_path, zk.hostport + m.root, m.path, 2000, unmount=False)
    assert rc != 0
    assert "fusermount3 -u" in _one_line(err)


def test_without_syslog_the_log_goes_to_stderr(daemon_path, zk, test_root, tmp_path):
    """A daemon (not -f) where nothing listens on /dev/log: its log lines
    are not lost but stay on standard error, saying so once."""
    if os.path.exists("/dev/log"):
        pytest.skip("a syslog listens on /dev/log here")
    mp = tmp_path / "mnt"
    mp.mkdir()
    errlog = tmp_path / "stderr"
    with open(errlog, "w") as err:
        r = subprocess.run([daemon_path, "-o", "create_root,session_timeout=4000",
                            zk.hostport + test_root, str(mp)], stderr=err,
                           stdin=subprocess.DEVNULL, timeout=30, cwd="/")
    try:
        assert r.returncode == 0
        with pytest.raises(OSError):
            os.mkdir(str(mp / "job-lock-0000000001"))  # a name the mount refuses
        wait_for(lambda: "mkdir 'job-lock-0000000001'" in errlog.read_text(), 10,
                 "the refusal in the daemon's stderr")
        assert "no syslog" in errlog.read_text()
    finally:
        fusermount(str(mp))
        clear_immutable(str(mp))
