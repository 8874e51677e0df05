"""Lock files (-o lockfiles): flock(1) habits for the whole cluster
(docs/SPEC.md, "Lock files").

Every regular file of a lockfiles mount is a lock: open never waits, and
flock(2), fcntl(2) and lockf(3) take the ZooKeeper lock on the file's
znode.  Two or three mounts of one root stand in for hosts; the tools are
the real ones (util-linux flock, bash, Python, Perl, Java, Curator).
"""

import errno
import fcntl
import os
import select
import shutil
import subprocess
import time

import pytest

import harness
from harness import GRANT_TIMEOUT, PY, spawn, wait_for
from test_flock import channel_lock_cp, finish, sections  # noqa: F401 (fixture)
from interop import Curator, curator_cp  # noqa: F401 (fixture)

FLOCK = shutil.which("flock") or "/usr/bin/flock"
PERL = shutil.which("perl") or "/usr/bin/perl"
TELL = 0x5a06       # ZKLFS_IOC_TELL (abi/zklockfs.h): a loss is told, nothing ended

# A holder: locks PATH (flock, or lockf with "lockf"), says "held", keeps
# it until its stdin ends.  With "pid" it writes its pid to the file first.
HOLDER = r'''
import fcntl, os, sys
path, how, kind = sys.argv[1:4]
f = open(path, "a+")
op = fcntl.LOCK_SH if kind == "s" else fcntl.LOCK_EX
(fcntl.lockf if how == "lockf" else fcntl.flock)(f, op)
if len(sys.argv) > 4:
    f.write("pid=%d\n" % os.getpid()); f.flush()
print("held", flush=True)
sys.stdin.read()
'''


def lockfiles(mount, n=2):
    """n mounts with -o lockfiles of one root, and the folder "cron" made
    through the first: its path in each mount."""
    ms = [mount(opts=("lockfiles",)) for _ in range(n)]
    os.mkdir(os.path.join(ms[0].path, "cron"))
    return ms, [os.path.join(m.path, "cron") for m in ms]


class Holder:
    def __init__(self, path, how="flock", kind="x", pid=False):
        argv = [PY, "-c", HOLDER, path, how, kind] + (["pid"] if pid else [])
        self.p = spawn(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
        line = harness.Lines(self.p.stdout).readline(GRANT_TIMEOUT)
        assert line == "held", (line, self.p.stderr.read() if self.p.poll() is not None else "")

    def release(self):
        self.p.stdin.close()
        assert finish([self.p], GRANT_TIMEOUT) == [0]


def run(argv, timeout=None, **kw):
    return subprocess.run(argv, capture_output=True, text=True, cwd="/",
                          timeout=timeout or GRANT_TIMEOUT, **kw)


def test_flock_n_against_another_mount_fails_at_once(mount):
    """The cron habit: `flock -n F cmd` while another host holds F exits 1
    without running cmd, while the holder still holds; once it lets go,
    the same command runs."""
    _, (d1, d2) = lockfiles(mount)
    h = Holder(os.path.join(d1, "nightly.lock"))
    t0 = time.monotonic()
    r = run([FLOCK, "-n", os.path.join(d2, "nightly.lock"), "echo", "ran"])
    took = time.monotonic() - t0
    assert r.returncode == 1 and "ran" not in r.stdout, r
    assert h.p.poll() is None
    harness.record_figure("flock -n against a lock file held on another mount: "
                          "exit %d in %.1f ms" % (r.returncode, took * 1000))
    h.release()
    r = run([FLOCK, "-n", os.path.join(d2, "nightly.lock"), "echo", "ran"])
    assert r.returncode == 0 and r.stdout == "ran\n", r


def test_flock_w_times_out_then_waits(mount):
    """`flock -w S` gives up with 1 while another host holds the file, and
    takes it once the holder lets go during its wait."""
    _, (d1, d2) = lockfiles(mount)
    h = Holder(os.path.join(d1, "w.lock"))
    r = run([FLOCK, "-w", "0.3", os.path.join(d2, "w.lock"), "true"])
    assert r.returncode == 1, r
    p = spawn([FLOCK, "-w", "60", os.path.join(d2, "w.lock"), "echo", "got"],
              stdout=subprocess.PIPE)
    time.sleep(harness.NOT_GRANTED_WAIT)
    assert p.poll() is None
    h.release()
    assert finish([p], GRANT_TIMEOUT) == [0]
    assert p.stdout.read() == b"got\n"


def test_flock_s_shares_and_x_excludes(mount):
    """`flock -s` on two hosts at once; `flock -x -n` meanwhile fails."""
    _, (d1, d2) = lockfiles(mount)
    h = Holder(os.path.join(d1, "s.lock"), kind="s")
    r = run([FLOCK, "-s", "-n", os.path.join(d2, "s.lock"), "echo", "shared"])
    assert (r.returncode, r.stdout) == (0, "shared\n"), r
    r = run([FLOCK, "-x", "-n", os.path.join(d2, "s.lock"), "true"])
    assert r.returncode == 1, r
    h.release()


def test_fd_form_and_flock_u(mount):
    """`( flock -n 9 || exit 1; ...; flock -u 9; ... ) 9>F`: the lock is
    the descriptor's; -u gives it back while 9 stays open."""
    _, (d1, d2) = lockfiles(mount)
    f1, f2 = os.path.join(d1, "fd.lock"), os.path.join(d2, "fd.lock")
    script = ('( flock -n 9 || exit 3; echo locked; read a; flock -u 9; echo unlocked; '
              'read b; exit 0 ) 9>%s' % f1)
    p = spawn(["bash", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = harness.Lines(p.stdout)
    assert out.readline(GRANT_TIMEOUT) == "locked"
    assert run(["bash", "-c", "( flock -n 9 || exit 3 ) 9>%s" % f2]).returncode == 3
    p.stdin.write(b"\n")
    p.stdin.flush()
    assert out.readline(GRANT_TIMEOUT) == "unlocked"
    assert run(["bash", "-c", "( flock -n 9 || exit 3 ) 9>%s" % f2]).returncode == 0
    p.stdin.close()
    assert finish([p], GRANT_TIMEOUT) == [0]


def test_exec_9_pidfile_idiom(mount):
    """`exec 9>F; flock -n 9 || exit 1; echo $$ >&9`: another host reads
    the holder's pid from F; its own `exec 9>F` (a truncate) wipes nothing
    and its `flock -n 9` fails; writing without the lock is EACCES."""
    _, (d1, d2) = lockfiles(mount)
    f1, f2 = os.path.join(d1, "deploy.lock"), os.path.join(d2, "deploy.lock")
    p = spawn(["bash", "-c", 'exec 9>%s; flock -n 9 || exit 1; echo $$ >&9; echo held; '
               'read x; exit 0' % f1], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert harness.Lines(p.stdout).readline(GRANT_TIMEOUT) == "held"
    wait_for(lambda: open(f2).read() == "%d\n" % p.pid, GRANT_TIMEOUT,
             "the holder's pid in the lock file")
    r = run(["bash", "-c", 'exec 9>%s; flock -n 9 || exit 7' % f2])
    assert r.returncode == 7, r
    assert open(f2).read() == "%d\n" % p.pid
    fd = os.open(f2, os.O_WRONLY)
    with pytest.raises(OSError) as e:
        os.write(fd, b"x")
    os.close(fd)
    assert e.value.errno == errno.EACCES
    p.stdin.close()
    assert finish([p], GRANT_TIMEOUT) == [0]
    wait_for(lambda: open(f2).read() == "", GRANT_TIMEOUT, "no holder, no data")


def test_the_holders_mount_reads_its_writes_at_once(mount):
    """Read-your-writes: `exec 9>F; flock -n 9; echo $$ >&9; cat F` in one
    bash shows the pid at once, though the data reaches ZooKeeper only at
    the next tick (a tenth of the session timeout, at most 1 s); a later
    write is read at once too.  Another mount sees it once it is sent."""
    m1 = mount(opts=("lockfiles",), session_timeout=20000)
    m2 = mount(opts=("lockfiles",))
    f1, f2 = m1.p("deploy.lock"), m2.p("deploy.lock")
    p = spawn(["bash", "-c", 'exec 9>%s; flock -n 9 || exit 1; echo $$ >&9; cat %s; '
               'echo ---; echo more >&9; cat %s; echo ---; read x; exit 0'
               % (f1, f1, f1)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = harness.Lines(p.stdout)
    lines = [out.readline(GRANT_TIMEOUT) for _ in range(5)]
    assert lines == [str(p.pid), "---", str(p.pid), "more", "---"], lines
    wait_for(lambda: open(f2).read() == "%d\nmore\n" % p.pid, GRANT_TIMEOUT,
             "the holder's data on the other mount")
    p.stdin.close()
    assert finish([p], GRANT_TIMEOUT) == [0]
    wait_for(lambda: open(f1).read() == "", GRANT_TIMEOUT, "no holder, no data")


@pytest.mark.parametrize("how", ["flock", "lockf"])
def test_python_excludes_across_mounts(mount, how):
    """Python's fcntl.flock and fcntl.lockf, with and without LOCK_NB."""
    _, (d1, d2) = lockfiles(mount)
    lock = getattr(fcntl, how)
    h = Holder(os.path.join(d1, "py.lock"), how=how)
    with open(os.path.join(d2, "py.lock"), "w") as f:
        with pytest.raises(OSError) as e:
            lock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert e.value.errno in (errno.EAGAIN, errno.EACCES)
        h.release()
        lock(f, fcntl.LOCK_EX)
        lock(f, fcntl.LOCK_UN)


def test_lockf_is_the_process_lock_and_any_close_ends_it(mount):
    """A POSIX lock belongs to the process: a second descriptor of it
    locks at once, and closing any of its descriptors gives the lock back
    (the kernel leaves that to the filesystem's FLUSH)."""
    _, (d1, d2) = lockfiles(mount)
    f = open(os.path.join(d1, "posix.lock"), "w")
    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    g = open(os.path.join(d1, "posix.lock"), "w")
    fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB)	# same owner: held already
    with open(os.path.join(d2, "posix.lock")) as other:
        with pytest.raises(OSError):
            fcntl.lockf(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
        g.close()
        fcntl.lockf(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
    f.close()


@pytest.mark.parametrize("closed", ["a-dup", "the-first-descriptor"])
def test_lockf_is_given_back_by_a_close_that_releases_nothing(mount, closed):
    """Closing a dup of the descriptor (the description stays open) or the
    first of two descriptions (the lock was last taken through the
    second) sends only a FLUSH: the POSIX lock goes there, as locally."""
    _, (d1, d2) = lockfiles(mount)
    f = open(os.path.join(d1, "flush.lock"), "w")
    g = open(os.path.join(d1, "flush.lock"), "w")
    fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(os.path.join(d2, "flush.lock")) as other:
        with pytest.raises(OSError):
            fcntl.lockf(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
        if closed == "a-dup":
            os.close(os.dup(g.fileno()))
        else:
            f.close()
        wait_for(lambda: try_lockf(other), GRANT_TIMEOUT, "the lock given back at FLUSH")
    g.close()
    if not f.closed:
        f.close()


def try_lockf(f):
    try:
        fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def test_second_descriptor_of_one_thread_waits(mount):
    """flock through a second open file description while the same thread
    holds the lock through a first: LOCK_NB fails with EWOULDBLOCK, and a
    blocking request (from another thread here, as a goroutine or pool task
    would on the holder's own thread) waits until the first lets go, as
    with a local lock file. Never EDEADLK."""
    import threading
    _, (d1,) = lockfiles(mount, 1)
    f = open(os.path.join(d1, "dl.lock"), "w")
    fcntl.flock(f, fcntl.LOCK_EX)
    with open(os.path.join(d1, "dl.lock")) as g:
        for op in (fcntl.LOCK_SH | fcntl.LOCK_NB, fcntl.LOCK_EX | fcntl.LOCK_NB):
            with pytest.raises(OSError) as e:
                fcntl.flock(g, op)
            assert e.value.errno == errno.EWOULDBLOCK
        got = []
        t = threading.Thread(target=lambda: got.append(fcntl.flock(g, fcntl.LOCK_SH)))
        t.start()
        t.join(harness.NOT_GRANTED_WAIT)
        assert t.is_alive() and not got, "the second descriptor did not wait"
        f.close()
        t.join(harness.GRANT_TIMEOUT)
        assert got == [None]
    wait_for(lambda: not os.getxattr(d1 + "/dl.lock", "user.zklockfs.holders").strip(),
             harness.GRANT_TIMEOUT, "the lock given back")


def test_perl_flock(mount):
    """Perl's flock(FH, LOCK_EX|LOCK_NB) fails while another host holds."""
    _, (d1, d2) = lockfiles(mount)
    h = Holder(os.path.join(d1, "perl.lock"))
    prog = ('use Fcntl qw(:flock); open(my $f, ">", $ARGV[0]) or die; '
            'exit(flock($f, LOCK_EX|LOCK_NB) ? 0 : 5)')
    assert run([PERL, "-e", prog, os.path.join(d2, "perl.lock")]).returncode == 5
    h.release()
    assert run([PERL, "-e", prog, os.path.join(d2, "perl.lock")]).returncode == 0


@pytest.mark.timeout(180)
def test_java_filechannel_lock_on_a_lock_file(mount, scratch, channel_lock_cp):
    """Java's FileChannel.lock() on one lock file from two JVMs per host:
    their sections never overlap."""
    java, cp = channel_lock_cp
    _, dirs = lockfiles(mount)
    log = os.path.join(scratch, "log")
    procs = [spawn([java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp,
                    "ChannelLock", os.path.join(d, "java.lock"), "3", log],
                   stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for d in dirs + dirs]
    codes = finish(procs, 150 * harness.SLOW)
    assert codes == [0] * 4, [p.stderr.read() for p in procs]
    sections(log, 12)


@pytest.mark.timeout(240)
def test_stress_three_mounts_four_processes(mount, scratch):
    """3 mounts x 4 processes, each `flock F cmd` 5 times: no two sections
    overlap (the log's S/E lines, in O_APPEND order)."""
    _, dirs = lockfiles(mount, 3)
    log = os.path.join(scratch, "log")
    crit = 'echo "S $$" >> %s; sleep 0.02; echo "E $$" >> %s' % (log, log)
    loop = 'for i in 1 2 3 4 5; do %s %%s sh -c %s || exit 1; done' % (
        FLOCK, subprocess.list2cmdline([crit]))
    t0 = time.monotonic()
    procs = [spawn(["bash", "-c", loop % os.path.join(d, "stress.lock")])
             for d in dirs for _ in range(4)]
    assert finish(procs, 200 * harness.SLOW) == [0] * 12
    took = time.monotonic() - t0
    sections(log, 60)
    harness.record_figure("lock files, 3 mounts x 4 processes x 5 flock(1) sections: "
                          "%.1f s, %.0f grants/s, no overlap" % (took, 60 / took))


def test_curator_and_flock_exclude_both_ways(mount, curator_cp, zk):
    """A Curator InterProcessMutex on the lock file's znode path and flock
    on the file exclude each other, both ways."""
    (m1,), (d1,) = lockfiles(mount, 1)
    path = os.path.join(d1, "curator.lock")
    open(path, "w").close()
    c = Curator(curator_cp, zk.hostport, m1.zkpath("cron/curator.lock"))
    try:
        c.wait_ready()
        c.acquire()
        c.expect("acquired")
        r = run([FLOCK, "-n", path, "true"])
        assert r.returncode == 1, r
        c.release()
        h = Holder(path)
        c.acquire_must_time_out()
        h.release()
        c.acquire()
        c.expect("acquired")
        c.release()
    finally:
        c.quit()


def test_entries_hidden_folders_kept_and_seen_as_lock_dirs(mount, zkc):
    """Entries are not shown; a folder made by mkdir stays a folder when
    empty, a lock file stays a lock file, across a remount; a mount
    without lockfiles sees the lock file as a lock directory of entries."""
    (m1, m2), (d1, d2) = lockfiles(mount)
    os.mkdir(os.path.join(d1, "empty"))
    open(os.path.join(d1, "a.lock"), "w").close()
    h = Holder(os.path.join(d1, "a.lock"))
    assert sorted(os.listdir(d2)) == ["a.lock", "empty"]
    assert os.path.isdir(os.path.join(d2, "empty"))
    assert os.path.isfile(os.path.join(d2, "a.lock"))
    plain = mount()
    kids = os.listdir(os.path.join(plain.path, "cron", "a.lock"))
    assert len(kids) == 1 and "-lock-" in kids[0], kids
    holders = os.getxattr(os.path.join(d2, "a.lock"), "user.zklockfs.holders")
    assert holders.decode().strip() == kids[0]
    h.release()
    m2.umount()
    m3 = mount(opts=("lockfiles",))
    d3 = os.path.join(m3.path, "cron")
    assert os.path.isdir(os.path.join(d3, "empty"))
    assert os.path.isfile(os.path.join(d3, "a.lock"))


def test_open_never_waits_and_unlink_is_ebusy_while_held(mount):
    """Opening a held lock file for writing returns at once; unlink is
    EBUSY while it is held, and removes it once free."""
    _, (d1, d2) = lockfiles(mount)
    h = Holder(os.path.join(d1, "u.lock"))
    fd = os.open(os.path.join(d2, "u.lock"), os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    os.close(fd)
    with pytest.raises(OSError) as e:
        os.unlink(os.path.join(d2, "u.lock"))
    assert e.value.errno == errno.EBUSY
    h.release()
    os.unlink(os.path.join(d2, "u.lock"))
    assert "u.lock" not in os.listdir(d1)


def test_record_lock_on_part_is_einval_and_getlk_names_the_holder(mount):
    """A record lock on part of a lock file is EINVAL; F_GETLK reports the
    holder's kind (and its pid, on this host)."""
    _, (d1,) = lockfiles(mount, 1)
    h = Holder(os.path.join(d1, "g.lock"))
    with open(os.path.join(d1, "g.lock"), "w") as f:
        with pytest.raises(OSError) as e:
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)
        assert e.value.errno == errno.EINVAL
        import struct
        lk = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
        got = struct.unpack("hhqqi", fcntl.fcntl(f, fcntl.F_GETLK, lk))
        assert got[0] == fcntl.F_WRLCK and got[4] == h.p.pid, got
    h.release()


def test_lost_lock_is_pollerr_and_eio(mount, zkc):
    """The holder's entry deleted behind its back: poll() says POLLERR,
    write and flock on the descriptor fail with EIO until LOCK_UN, after
    which it locks anew."""
    (m1,), (d1,) = lockfiles(mount, 1)
    f = open(os.path.join(d1, "lost.lock"), "w")
    fcntl.ioctl(f, TELL)        # the test's own process: told, not ended
    fcntl.flock(f, fcntl.LOCK_EX)
    zpath = m1.zkpath("cron/lost.lock")
    for kid in zkc.get_children(zpath):
        zkc.delete(zpath + "/" + kid)
    p = select.poll()
    p.register(f.fileno(), select.POLLIN)
    wait_for(lambda: any(ev & select.POLLERR for _, ev in p.poll(100)),
             GRANT_TIMEOUT, "POLLERR on the lost lock")
    for call in (lambda: os.write(f.fileno(), b"x"),
                 lambda: fcntl.flock(f, fcntl.LOCK_EX)):
        with pytest.raises(OSError) as e:
            call()
        assert e.value.errno == errno.EIO
    fcntl.flock(f, fcntl.LOCK_UN)
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)	# taken anew
    f.close()


def test_holder_reads_state_and_token_through_its_descriptor(mount):
    """getxattr carries no descriptor: the holder of a lock file asks its
    own state and fencing token with the ioctls of abi/zklockfs.h; a
    descriptor that holds nothing gets ENOLCK."""
    state, token = 0x80405a01, 0x80405a02
    _, (d1,) = lockfiles(mount, 1)
    tokens = []
    with open(os.path.join(d1, "t.lock"), "w") as f:
        with pytest.raises(OSError) as e:
            fcntl.ioctl(f, state, bytes(64))
        assert e.value.errno == errno.ENOLCK
        for _ in range(2):
            fcntl.flock(f, fcntl.LOCK_EX)
            assert fcntl.ioctl(f, state, bytes(64)).rstrip(b"\0") == b"held"
            czxid, seq = fcntl.ioctl(f, token, bytes(64)).rstrip(b"\0").split()
            tokens.append((int(czxid), int(seq)))
            fcntl.flock(f, fcntl.LOCK_UN)
    assert tokens[1] > tokens[0], tokens


@pytest.mark.parametrize("what", ["revoke", "break"])
def test_revoke_and_break_name_the_entry_through_the_lock_file(mount, what):
    """user.zklockfs.revoke / .break on the lock file, naming an entry of
    user.zklockfs.holders: the holder is asked to let go (POLLPRI), or its
    entry is deleted (its lock lost: POLLERR).  A name that is no queue
    entry is EINVAL."""
    _, (d1, d2) = lockfiles(mount)
    f = open(os.path.join(d1, "r.lock"), "w")
    fcntl.ioctl(f, TELL)        # the test's own process: told, not ended
    fcntl.flock(f, fcntl.LOCK_EX)
    path2 = os.path.join(d2, "r.lock")
    name = os.getxattr(path2, "user.zklockfs.holders").decode().strip()
    with pytest.raises(OSError) as e:
        os.setxattr(path2, "user.zklockfs." + what, b"nightly.lock")
    assert e.value.errno == errno.EINVAL
    os.setxattr(path2, "user.zklockfs." + what, name.encode())
    p = select.poll()
    p.register(f.fileno(), select.POLLPRI)
    want = select.POLLPRI if what == "revoke" else select.POLLERR
    wait_for(lambda: any(ev & want for _, ev in p.poll(100)), GRANT_TIMEOUT,
             "the holder told")
    f.close()


def zklock(*args, **kw):
    tool = harness.zklock_binary()
    if not os.access(tool, os.X_OK):
        pytest.skip("zklock not built: %s" % tool)
    return run([tool] + list(args), **kw)


def test_zklock_takes_a_lock_file_as_flock_does(mount):
    """zklock FILE cmd flocks the lock file (made if missing): -n fails
    while another host holds it; the command finds its lock in
    ZKLOCK_ENTRY (the file) and confirms it through ZKLOCK_FD; a nested
    zklock of the same file runs at once."""
    _, (d1, d2) = lockfiles(mount)
    tool = harness.zklock_binary()
    f1, f2 = os.path.join(d1, "z.lock"), os.path.join(d2, "z.lock")
    r = zklock(f1, "-c", '%s -n %s true; echo "other=$?"; echo "entry=$ZKLOCK_ENTRY"; '
               '%s --confirm && echo confirmed; %s -n %s echo nested'
               % (tool, f2, tool, tool, f1))
    assert r.returncode == 0, r
    assert r.stdout.split() == ["other=1", "entry=" + f1, "confirmed", "nested"], r
    assert os.path.isfile(f2)
    h = Holder(f1)
    assert zklock("-n", f2, "true").returncode == 1
    assert zklock("-w", "0.2", f2, "true").returncode == 1
    h.release()
    assert zklock("-n", f2, "true").returncode == 0


def test_zklock_refuses_a_path_that_ends_in_the_host_name(mount):
    """`zklock locks/deploy/$HOSTNAME cmd` would give each host a lock of
    its own: refused (64, saying why) unless --per-host."""
    _, (d1,) = lockfiles(mount, 1)
    host = os.uname().nodename
    r = zklock(os.path.join(d1, host), "true")
    assert r.returncode == 64 and "host" in r.stderr, r
    assert not os.path.exists(os.path.join(d1, host))
    assert zklock("--per-host", os.path.join(d1, host), "true").returncode == 0


def test_zklock_list_shows_a_lock_files_queue(mount):
    """`zklock --list FILE`: the hidden entries, in queue order, with
    their state, kind, host and pid (from user.zklockfs.queue)."""
    _, (d1, d2) = lockfiles(mount)
    h = Holder(os.path.join(d1, "l.lock"))
    w = spawn([FLOCK, "-s", os.path.join(d2, "l.lock"), "true"])
    wait_for(lambda: os.getxattr(os.path.join(d2, "l.lock"),
                                 "user.zklockfs.queue").count(b"\n") == 2,
             GRANT_TIMEOUT, "the waiter queued")
    r = zklock("--list", os.path.join(d2, "l.lock"))
    assert r.returncode == 0, r
    rows = [ln.split() for ln in r.stdout.splitlines()]
    assert rows[0][:4] == ["POS", "STATE", "KIND", "ENTRY"], rows
    assert [row[1:3] for row in rows[1:]] == [["held", "exclusive"], ["waiting", "shared"]]
    assert rows[1][5] == str(h.p.pid) and rows[2][5] == str(w.pid), rows
    h.release()
    assert finish([w], GRANT_TIMEOUT) == [0]


def test_semaphore_and_linger_on_a_lock_file(mount):
    """user.zklockfs.limit on a lock file makes it a semaphore, as on a
    lock directory: two hold at once, a third `flock -n` fails.  With
    -o linger a mount takes its lock file again on its kept entry."""
    ms, (d1, d2) = lockfiles(mount)
    sem = os.path.join(d1, "sem.lock")
    open(sem, "w").close()
    os.setxattr(sem, "user.zklockfs.limit", b"2")
    a, b = Holder(sem), Holder(os.path.join(d2, "sem.lock"))
    assert run([FLOCK, "-n", os.path.join(d2, "sem.lock"), "true"]).returncode == 1
    a.release()
    b.release()
    lm = mount(opts=("lockfiles", "linger=5000"))
    path = os.path.join(lm.path, "cron", "linger.lock")
    for _ in range(3):
        assert run([FLOCK, path, "true"]).returncode == 0
    metrics = os.getxattr(lm.path, "user.zklockfs.metrics").decode()
    assert 'zklockfs_local_grants_total{how="linger"} 2' in metrics, metrics


def test_only_the_mounts_owner_sets_a_lock_files_limit(mount):
    """On an allow_other mount another user may make a lock file first, but
    not turn it into a semaphore for every host's flock: EPERM."""
    m = mount(opts=("lockfiles", "allow_other"))
    os.mkdir(os.path.join(m.path, "cron"))
    path = os.path.join(m.path, "cron", "n.lock")
    user = harness.as_user(65534)
    r = run(user + ["touch", path])
    assert r.returncode == 0, r
    r = run(user + ["setfattr", "-n", "user.zklockfs.limit", "-v", "1000", path])
    assert r.returncode != 0 and "not permitted" in r.stderr, r
    os.setxattr(path, "user.zklockfs.limit", b"2")      # the mount's owner may
    assert os.getxattr(path, "user.zklockfs.limit") == b"2"


def test_lockf_from_the_current_offset_is_the_whole_file(mount):
    """C's lockf(3) locks from the current offset to the end: after the pid
    is written, F_ULOCK there gives the lock back (not EINVAL)."""
    _, (d1, d2) = lockfiles(mount)
    fd = os.open(os.path.join(d1, "pid.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, b"%d\n" % os.getpid())
    fcntl.lockf(fd, fcntl.LOCK_UN, 0, 0, os.SEEK_CUR)   # from the offset to the end
    with open(os.path.join(d2, "pid.lock")) as other:
        fcntl.lockf(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
    os.close(fd)


def test_a_test_lock_on_another_descriptor_leaves_the_holder_alone(mount):
    """F_GETLK through a second descriptor of the POSIX owner that holds:
    the holder's own descriptor still writes and confirms."""
    _, (d1,) = lockfiles(mount, 1)
    a = os.open(os.path.join(d1, "t.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.lockf(a, fcntl.LOCK_EX)
    b = os.open(os.path.join(d1, "t.lock"), os.O_RDONLY)
    import struct
    fcntl.fcntl(b, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
    assert os.write(a, b"x") == 1
    os.fsync(a)
    os.close(b)         # a POSIX owner's close of any descriptor: given back
    os.close(a)


def test_a_lock_file_stays_one_whatever_a_plain_mount_makes_in_it(mount, zkc):
    """A plain mount sees a lock file's znode as a lock directory.  A lock
    file the mount made says so in its znode (the line zklockfs=lockfile):
    the plain mount refuses mkdir in it (ENOTDIR).  One made by another
    client carries no mark: a mkdir there succeeds, and while this mount
    holds it, it stays a lock file all the same.  flock(1) goes on working
    on both, never EISDIR."""
    (m1, m2), (d1, d2) = lockfiles(mount)
    plain = mount()
    made = os.path.join(d1, "made.lock")
    open(made, "w").close()
    zforeign = m1.zkpath("cron/foreign.lock")
    zkc.create(zforeign, b"")
    foreign = os.path.join(d1, "foreign.lock")
    holders = [Holder(made), Holder(foreign)]
    with pytest.raises(OSError) as e:
        os.mkdir(os.path.join(plain.path, "cron", "made.lock", "stray"))
    assert e.value.errno == errno.ENOTDIR
    os.mkdir(os.path.join(plain.path, "cron", "foreign.lock", "stray"))
    zkc.create(m1.zkpath("cron/made.lock/stray"), b"")     # another client's
    # the kernel asks the mount again once its entry timeout (1 s) is
    # over: through that, each stays a file
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        for path in (made, foreign, os.path.join(d2, "made.lock")):
            assert os.path.isfile(path), path
        time.sleep(0.1)
    for path in (made, foreign, os.path.join(d2, "made.lock")):
        assert os.path.isfile(path), path
        r = run([FLOCK, "-n", path, "true"])
        assert r.returncode == 1 and "Is a directory" not in r.stderr, (path, r)
    for h in holders:
        h.release()
    r = run([FLOCK, "-n", made, "echo", "ran"])
    assert r.returncode == 0 and r.stdout == "ran\n", r


def test_zklock_refuses_a_folder(mount):
    """zklock pointed at a folder of a lockfiles mount made a stray lock
    file named after the host in it and failed; it refuses the folder,
    saying what to name instead (66), and makes nothing."""
    _, (d1,) = lockfiles(mount, 1)
    r = zklock(d1, "echo", "ran")
    assert r.returncode == 66 and "a folder of a lockfiles mount" in r.stderr, r
    assert r.stdout == "" and os.listdir(d1) == []
