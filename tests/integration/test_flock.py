"""flock(2), fcntl(2) record locks and util-linux flock(1) on the mount
(docs/SPEC.md, "flock(2), fcntl(2) and flock(1)").

A whole-file lock on the holder's descriptor of an entry acts on that entry,
the lock every host sees; never a lock that only this host's kernel keeps.
Two mounts of one root stand in for two hosts.  Critical sections append
"S <pid>" and "E <pid>" lines to one local log file (O_APPEND: one total
order, no clocks); two sections overlap iff an S follows an S.
"""

import errno
import fcntl
import os
import select
import shutil
import struct
import signal
import subprocess
import time

import pytest

import harness
import zkclient
from harness import GRANT_TIMEOUT, PY, entries, spawn, wait_for

FLOCK = shutil.which("flock") or "/usr/bin/flock"
INTEROP = os.path.join(harness.REPO, "tests", "interop")


def sections(log, expect):
    """The critical sections in `log`; fails if two overlapped or if not
    `expect` of them completed."""
    with open(log) as f:
        lines = [ln.split() for ln in f if ln.strip()]
    inside = None
    done = 0
    for what, who in lines:
        if what == "S":
            assert inside is None, "%s entered while %s held the lock:\n%s" % (
                who, inside, "".join(" ".join(ln) + "\n" for ln in lines))
            inside = who
        else:
            assert inside == who, "E %s without its S: %r" % (who, lines)
            inside = None
            done += 1
    assert inside is None and done == expect, (done, expect, lines)
    return done


def finish(procs, timeout):
    """Wait for every process; their exit statuses."""
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout))
        except subprocess.TimeoutExpired:
            pytest.fail("pid %d still running after %.0fs" % (p.pid, timeout))
    return codes


def two_hosts(mount):
    """Two mounts of one root (two hosts) and the lock directory "job",
    made through the first: (m1, m2, its path in m1)."""
    m1, m2 = mount(), mount()
    d1 = os.path.join(m1.path, "job")
    os.mkdir(d1)
    return m1, m2, d1


CRITICAL = 'echo "S $$" >> {log}; sleep 0.2; echo "E $$" >> {log}'


@pytest.mark.timeout(120)
def test_flock_command_excludes_across_mounts(mount, scratch):
    """util-linux `flock FILE cmd` opens O_RDONLY|O_CREAT (a shared entry)
    and asks LOCK_EX: three on each of two mounts never overlap (before
    the fix the kernel granted LOCK_EX on each host by itself)."""
    m1, m2 = mount(), mount()
    os.mkdir(os.path.join(m1.path, "job"))
    log = os.path.join(scratch, "log")
    procs = [spawn([FLOCK, os.path.join(m.path, "job", "f"), "sh", "-c",
                    CRITICAL.format(log=log)])
             for m in (m1, m2, m1, m2, m1, m2)]
    assert finish(procs, 60 * harness.SLOW) == [0] * 6
    sections(log, 6)
    wait_for(lambda: entries(os.path.join(m1.path, "job")) == [], GRANT_TIMEOUT,
             "every entry gone")


@pytest.mark.timeout(60)
def test_flock_shared_and_nonblocking(mount, scratch):
    """`flock -s` on two mounts hold together; `flock -n -x` beside a shared
    holder fails at once with status 1 and leaves no entry behind."""
    m1, m2, d1 = two_hosts(mount)
    held = harness.take(d1, "r", harness.SHARED)
    marker = os.path.join(scratch, "ran")
    r = subprocess.run([FLOCK, "-s", "-n", os.path.join(m2.path, "job", "f"),
                        "touch", marker], timeout=GRANT_TIMEOUT)
    assert r.returncode == 0 and os.path.exists(marker)
    os.unlink(marker)
    r = subprocess.run([FLOCK, "-n", os.path.join(m2.path, "job", "f"),
                        "touch", marker], timeout=GRANT_TIMEOUT)
    assert r.returncode == 1 and not os.path.exists(marker)
    wait_for(lambda: entries(d1) == [held.entry], GRANT_TIMEOUT,
             "flock's refused entry gone")
    held.release()


@pytest.mark.timeout(60)
def test_flock_n_waits_in_open_behind_an_exclusive_holder(mount, scratch):
    """What `flock -n FILE` does when its open must wait (docs/SPEC.md,
    README): the open is a shared request and waits while an exclusive
    entry is before it; then LOCK_EX|LOCK_NB is decided at once."""
    m1, m2, d1 = two_hosts(mount)
    held = harness.take(d1, "w", harness.WRITE)
    marker = os.path.join(scratch, "ran")
    p = spawn([FLOCK, "-n", os.path.join(m2.path, "job", "f"), "touch", marker])
    wait_for(lambda: len(entries(d1)) == 2, GRANT_TIMEOUT, "flock's entry")
    waiting = [e for e in entries(d1) if e != held.entry][0]
    assert "-read-lock-" in waiting
    assert harness.lock_state(os.path.join(d1, waiting)) == "waiting"
    assert p.poll() is None
    held.release()
    assert finish([p], GRANT_TIMEOUT) == [0]
    assert os.path.exists(marker)


@pytest.mark.timeout(60)
def test_flock_w_ends_a_conversion_that_waits(mount):
    """`flock -w 1` behind a shared holder: its LOCK_EX waits and the timer's
    signal interrupts it (FUSE_INTERRUPT): status 1, no entry left."""
    m1, m2, d1 = two_hosts(mount)
    held = harness.take(d1, "r", harness.SHARED)
    p = spawn([FLOCK, "-w", "1", os.path.join(m2.path, "job", "f"), "true"])
    assert finish([p], GRANT_TIMEOUT + 1) == [1]
    wait_for(lambda: entries(d1) == [held.entry], GRANT_TIMEOUT,
             "flock's interrupted entry gone")
    held.release()


# A child that drives one descriptor with flock/lockf and reports.
DRIVER = r'''
import fcntl, json, os, sys, time
cfg = json.loads(sys.argv[1])
def log(what):
    with open(cfg["log"], "a") as f:
        f.write("%s %d\n" % (what, os.getpid()))
fd = os.open(cfg["path"], cfg["flags"], 0o644)
if cfg["how"] == "lockf":
    fcntl.lockf(fd, fcntl.LOCK_UN)          # give back what open() took
for i in range(cfg["n"]):
    if cfg["how"] == "flock":
        fcntl.flock(fd, fcntl.LOCK_EX)
    else:
        fcntl.lockf(fd, fcntl.LOCK_EX)
    log("S")
    time.sleep(0.1)
    log("E")
    if cfg["how"] == "flock":
        fcntl.flock(fd, fcntl.LOCK_UN)
        fcntl.flock(fd, fcntl.LOCK_SH)      # and back to a shared entry
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
os.close(fd)
'''


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how,flags", [("flock", os.O_CREAT | os.O_RDONLY),
                                       ("lockf", os.O_CREAT | os.O_RDWR)])
def test_python_fcntl_excludes_across_mounts(mount, scratch, how, flags):
    """Python's fcntl.flock (converting a shared entry) and fcntl.lockf
    (F_SETLKW after F_UNLCK gave the open's entry back), four times in each
    of two processes per mount: no two sections overlap."""
    import json
    m1, m2 = mount(), mount()
    os.mkdir(os.path.join(m1.path, "job"))
    log = os.path.join(scratch, "log")
    procs = [spawn([PY, "-c", DRIVER, json.dumps(
        {"path": os.path.join(m.path, "job", "p"), "flags": flags,
         "how": how, "n": 4, "log": log})], stderr=subprocess.PIPE)
        for m in (m1, m2, m1, m2)]
    codes = finish(procs, 90 * harness.SLOW)
    assert codes == [0] * 4, [p.stderr.read() for p in procs]
    sections(log, 16)


def open_nb_ok(path, flags):
    return os.open(path, flags | os.O_NONBLOCK)


def kinds(d):
    return [harness.parse_entry(e)[1] for e in entries(d)]


def test_flock_converts_gives_back_and_enqueues_anew(mount):
    """On one descriptor: LOCK_EX converts its shared entry, LOCK_SH converts
    back, the kind held is 0 at once, LOCK_UN deletes the entry while the
    descriptor stays open, and a later LOCK_EX enqueues anew."""
    m = mount()
    d = os.path.join(m.path, "job")
    os.mkdir(d)
    fd = os.open(os.path.join(d, "p"), os.O_CREAT | os.O_RDONLY)
    try:
        assert kinds(d) == ["-read-lock-"]
        first = harness.seq_of(entries(d)[0])
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert kinds(d) == ["-lock-"]
        assert harness.lock_state(fd) == "held"
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)      # held: at once
        assert kinds(d) == ["-lock-"]
        fcntl.flock(fd, fcntl.LOCK_SH)
        assert kinds(d) == ["-read-lock-"]
        fcntl.flock(fd, fcntl.LOCK_UN)
        assert entries(d) == []
        fcntl.flock(fd, fcntl.LOCK_UN)                      # nothing: fine
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert kinds(d) == ["-lock-"]
        assert harness.seq_of(entries(d)[0]) > first
        token = os.getxattr(fd, harness.XATTR_TOKEN).split()
        assert int(token[1]) == harness.seq_of(entries(d)[0])
    finally:
        os.close(fd)
    wait_for(lambda: entries(d) == [], GRANT_TIMEOUT, "entry gone at close")


def test_a_lost_lock_is_never_held_again_by_asking(mount):
    """After its entry is deleted by another host, LOCK_EX on the holder's
    descriptor is no longer "the kind it holds": EIO, the loss told, until
    LOCK_UN gives the lost entry up; then it enqueues anew."""
    m1, m2, d1 = two_hosts(mount)
    fd = os.open(os.path.join(d1, "p"), os.O_CREAT | os.O_RDWR)
    try:
        (mine,) = entries(d1)
        os.unlink(os.path.join(m2.path, "job", mine))
        p = select.poll()
        p.register(fd, 0)
        assert p.poll(GRANT_TIMEOUT * 1000)[0][1] & select.POLLERR
        assert harness.lock_state(fd) == "lost"
        with pytest.raises(OSError) as e:
            fcntl.flock(fd, fcntl.LOCK_EX)
        assert e.value.errno == errno.EIO
        fcntl.flock(fd, fcntl.LOCK_UN)
        fcntl.flock(fd, fcntl.LOCK_EX)
        (again,) = entries(d1)
        assert harness.seq_of(again) > harness.seq_of(mine)
        assert harness.lock_state(fd) == "held"
        assert os.write(fd, b"x") == 1
    finally:
        os.close(fd)


def test_conversion_beside_an_entry_of_the_same_thread_queues(mount):
    """The owner is the descriptor: a thread that holds two shared entries
    of one lock and converts one of them to exclusive queues behind its
    other one, as a second descriptor's flock does locally. LOCK_NB fails
    with EWOULDBLOCK (that descriptor then holds nothing); once the other
    descriptor is closed the conversion is granted. Never EDEADLK."""
    import threading
    m = mount()
    d = os.path.join(m.path, "job")
    os.mkdir(d)
    a = os.open(os.path.join(d, "a"), os.O_CREAT | os.O_RDONLY)
    b = os.open(os.path.join(d, "b"), os.O_CREAT | os.O_RDONLY)
    try:
        assert kinds(d) == ["-read-lock-", "-read-lock-"]
        with pytest.raises(OSError) as e:
            fcntl.flock(b, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert e.value.errno == errno.EWOULDBLOCK
        assert kinds(d) == ["-read-lock-"]
        done = []
        t = threading.Thread(target=lambda: done.append(fcntl.flock(b, fcntl.LOCK_EX)))
        t.start()
        wait_for(lambda: kinds(d) == ["-read-lock-", "-lock-"], GRANT_TIMEOUT,
                 "the conversion queued behind the other entry")
        t.join(0.3)
        assert t.is_alive() and not done
        os.close(a)
        a = -1
        t.join(GRANT_TIMEOUT)
        assert done == [None]
        assert harness.lock_state(b) == "held"
    finally:
        if a >= 0:
            os.close(a)
        os.close(b)


def test_nonblocking_requests_fail_and_hold_nothing(mount):
    """LOCK_EX|LOCK_NB (flock) and F_SETLK (lockf) beside a holder on another
    mount: EWOULDBLOCK/EAGAIN at once, and the descriptor then holds
    nothing (its entry is gone); a shared F_SETLK beside it is granted."""
    m1, m2, d1 = two_hosts(mount)
    d2 = os.path.join(m2.path, "job")
    rw = os.open(os.path.join(d2, "w"), os.O_CREAT | os.O_RDWR)
    fcntl.lockf(rw, fcntl.LOCK_UN)
    wait_for(lambda: entries(d1) == [], GRANT_TIMEOUT, "F_UNLCK's delete")
    for call in (lambda: os.write(rw, b"x"), lambda: os.pread(rw, 10, 0),
                 lambda: os.ftruncate(rw, 0)):
        with pytest.raises(OSError) as e:          # it holds nothing
            call()
        assert e.value.errno == errno.ENOLCK
    other = harness.take(d1, "r", harness.SHARED)
    ro = os.open(os.path.join(d2, "p"), os.O_CREAT | os.O_RDONLY)
    try:
        assert len(entries(d1)) == 2
        # the refused entry's delete follows the answer, on m2's session:
        # m1's listing may come a moment before it
        alone = (lambda: entries(d1) == [other.entry])
        with pytest.raises(BlockingIOError):
            fcntl.flock(ro, fcntl.LOCK_EX | fcntl.LOCK_NB)
        wait_for(alone, GRANT_TIMEOUT, "the refused entry gone")
        with pytest.raises(BlockingIOError):
            fcntl.lockf(rw, fcntl.LOCK_EX | fcntl.LOCK_NB)
        wait_for(alone, GRANT_TIMEOUT, "the refused entry gone")
        fcntl.lockf(rw, fcntl.LOCK_SH | fcntl.LOCK_NB)
        assert kinds(d1) == ["-read-lock-", "-read-lock-"]
        assert os.write(rw, b"addr=1\n") == 7           # holds again
        assert os.pread(rw, 100, 0) == b"addr=1\n"
    finally:
        os.close(ro)
        os.close(rw)
    other.release()
    wait_for(lambda: entries(d1) == [], GRANT_TIMEOUT, "every entry gone")


def test_record_lock_on_part_of_an_entry_is_einval(mount):
    m = mount()
    d = os.path.join(m.path, "job")
    os.mkdir(d)
    fd = os.open(os.path.join(d, "p"), os.O_CREAT | os.O_RDWR)
    try:
        for length, start in ((10, 0), (0, 5), (1, 1)):
            with pytest.raises(OSError) as e:
                fcntl.lockf(fd, fcntl.LOCK_SH, length, start)
            assert e.value.errno == errno.EINVAL
            with pytest.raises(OSError) as e:
                getlk(fd, fcntl.F_WRLCK, start, length)
            assert e.value.errno == errno.EINVAL
        assert kinds(d) == ["-lock-"]               # still held
        assert getlk(fd, fcntl.F_WRLCK)[0] == fcntl.F_UNLCK
    finally:
        os.close(fd)


def test_lock_on_a_descriptor_that_took_no_entry_is_enolck(mount):
    """An entry opened by its name without O_CREAT (cat) carries no lock:
    flock and F_SETLK on it are ENOLCK, never a host-local lock."""
    m = mount()
    d = os.path.join(m.path, "job")
    os.mkdir(d)
    held = harness.take(d, "w", harness.WRITE)
    fd = os.open(os.path.join(d, held.entry), os.O_RDONLY)
    try:
        for call in (lambda: fcntl.flock(fd, fcntl.LOCK_SH),
                     lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB),
                     lambda: fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)):
            with pytest.raises(OSError) as e:
                call()
            assert e.value.errno == errno.ENOLCK
        assert entries(d) == [held.entry]
    finally:
        os.close(fd)
    held.release()


FLOCK_FMT = "hhqqi4x"           # struct flock on x86_64 / aarch64


def getlk(fd, ltype, start=0, length=0):
    """F_GETLK: (l_type, l_pid)."""
    arg = struct.pack(FLOCK_FMT, ltype, os.SEEK_SET, start, length, 0)
    t, _, _, _, pid = struct.unpack(FLOCK_FMT, fcntl.fcntl(fd, fcntl.F_GETLK, arg))
    return t, pid


def test_getlk_names_the_blocker_and_its_pid_on_this_host(mount, zkc):
    """F_GETLK: F_UNLCK when the lock could be taken now; else the kind of
    the first entry it would wait for and, when that holder is on this
    host (another mount here too), its pid; 0 for another client's."""
    m1, m2, d1 = two_hosts(mount)
    d2 = os.path.join(m2.path, "job")
    reader = harness.take(d1, "r", harness.SHARED)
    fd = os.open(os.path.join(d2, "p"), os.O_CREAT | os.O_RDONLY)
    try:
        assert getlk(fd, fcntl.F_RDLCK) == (fcntl.F_UNLCK, 0)
        assert getlk(fd, fcntl.F_WRLCK) == (fcntl.F_RDLCK, reader.pid)
        plain = os.open(os.path.join(d1, reader.entry), os.O_RDONLY)
        try:
            assert getlk(plain, fcntl.F_WRLCK)[0] == fcntl.F_RDLCK
        finally:
            os.close(plain)
        reader.release()
        wait_for(lambda: len(entries(d1)) == 1, GRANT_TIMEOUT, "reader gone")
        assert getlk(fd, fcntl.F_WRLCK) == (fcntl.F_UNLCK, 0)   # only its own
        zkc.create(m1.zkpath("job/foreign-lock-"), b"host=elsewhere\npid=1\n",
                   mode=zkclient.EPHEMERAL_SEQUENTIAL)
        assert getlk(fd, fcntl.F_WRLCK) == (fcntl.F_WRLCK, 0)
    finally:
        os.close(fd)



def test_getlk_pid_of_this_mounts_entry_is_the_openers_not_its_data(mount):
    """An entry made through this mount: F_GETLK names the process that
    opened it, as the daemon saw it; the pid= line of its data is what its
    holder wrote, and the holder may write anything there."""
    m = mount()
    d = os.path.join(m.path, "job")
    os.mkdir(d)
    holder = harness.take(d, "w", harness.WRITE)
    entry = os.path.join(d, holder.entry)
    data = harness.read_file(entry).decode()
    host = [x for x in data.splitlines() if x.startswith("host=")][0]
    forged = ("%s\npid=1\n" % host).encode()
    holder.ok("write " + forged.hex())
    holder.ok("fsync")
    assert harness.read_file(entry) == forged
    fd = os.open(entry, os.O_RDONLY)     # a reader's descriptor: no lock
    try:
        assert getlk(fd, fcntl.F_RDLCK) == (fcntl.F_WRLCK, holder.pid)
    finally:
        os.close(fd)
    holder.release()


@pytest.fixture(scope="session")
def channel_lock_cp(tmp_path_factory):
    """tests/interop/ChannelLock.java, compiled once per session."""
    javac = shutil.which("javac")
    java = harness.java_binary()
    if not javac or not java:
        pytest.skip("no JDK (javac/java not found); install default-jdk-headless")
    out = str(tmp_path_factory.mktemp("channel-lock"))
    r = subprocess.run([javac, "-nowarn", "-d", out,
                        os.path.join(INTEROP, "ChannelLock.java")],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")
    return java, out


@pytest.mark.timeout(180)
def test_java_filechannel_lock_excludes_across_mounts(mount, scratch,
                                                      channel_lock_cp):
    """Java's FileChannel.lock()/release() (fcntl F_SETLKW/F_UNLCK, whole
    file), three sections in each of two JVMs per mount: none overlap."""
    java, cp = channel_lock_cp
    m1, m2 = mount(), mount()
    os.mkdir(os.path.join(m1.path, "job"))
    log = os.path.join(scratch, "log")
    procs = [spawn([java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp,
                    "ChannelLock", os.path.join(m.path, "job", "j"), "3", log],
                   stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for m in (m1, m2, m1, m2)]
    codes = finish(procs, 150 * harness.SLOW)
    assert codes == [0] * 4, [p.stderr.read() for p in procs]
    sections(log, 12)


@pytest.mark.timeout(90)
def test_java_release_gives_the_lock_back_while_the_channel_is_open(
        mount, scratch, channel_lock_cp):
    """FileLock.release() is F_UNLCK: another host takes the lock while the
    JVM still has the channel open (before, the lock lasted until close)."""
    java, cp = channel_lock_cp
    m1, m2, d1 = two_hosts(mount)
    p = spawn([java, "-cp", cp, "ChannelLock", os.path.join(d1, "j"), "1",
               os.path.join(scratch, "log")],
              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = harness.Lines(p.stdout).readline(60 * harness.SLOW)
    assert line == "released", (line, p.stderr.read() if p.poll() is not None else "")
    other = harness.take(os.path.join(m2.path, "job"), "w", harness.WRITE)
    assert p.poll() is None
    p.stdin.close()
    assert finish([p], GRANT_TIMEOUT) == [0]
    other.release()


def test_getlk_on_the_holder_of_that_kind_is_unlck(mount):
    """The holder's descriptor asking F_GETLK for the kind it holds:
    F_UNLCK (F_SETLK would be 0 at once), not the waiter behind it."""
    m = mount()
    d = os.path.join(m.path, "job")
    os.mkdir(d)
    fd = os.open(os.path.join(d, "x"), os.O_CREAT | os.O_RDWR)
    waiter = harness.start_waiter(d, "y", harness.WRITE)
    try:
        wait_for(lambda: len(entries(d)) == 2, GRANT_TIMEOUT, "the waiter's entry")
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)     # held: 0 at once
        assert getlk(fd, fcntl.F_WRLCK) == (fcntl.F_UNLCK, 0)
    finally:
        os.close(fd)
        waiter.release()


@pytest.mark.timeout(90)
def test_loss_of_the_given_back_entry_does_not_taint_the_new_one(mount, zk, scratch):
    """The loss of the entry a conversion gives back is not the new
    entry's: the descriptor must not read lost (state, EIO, POLLERR) once
    the new entry is granted.  (It was: the loss could land between the
    giveback and the old waiter's release.)  gdb widens that window: it
    stops the FUSE thread on entry to zkl_release(), deletes the old entry
    from another mount, and lets the ZooKeeper thread run for 1.5 s; on a
    correct daemon nothing depends on how long."""
    gdb = shutil.which("gdb")
    if not gdb:
        pytest.skip("needs gdb")
    m1, m2, d1 = two_hosts(mount)
    fd = os.open(os.path.join(d1, "g"), os.O_CREAT | os.O_RDWR)
    try:
        (old,) = entries(d1)
        zold = m1.zkpath("job/" + old)
        wait_for(lambda: zold in zk.four("wchc"), GRANT_TIMEOUT,
                 "the daemon's watch on its entry")
        ready = os.path.join(scratch, "ready")
        cmds = os.path.join(scratch, "gdb")
        with open(cmds, "w") as f:
            f.write("set pagination off\nset confirm off\n"
                    "tbreak zkl_release\ncommands\n"
                    "  shell rm -f %s\n"
                    "  call (int)usleep(1500000)\n"
                    "  detach\n  quit\nend\n"
                    "shell touch %s\ncontinue\n"
                    % (os.path.join(m2.path, "job", old), ready))
        g = subprocess.Popen([gdb, "-q", "-batch", "-p", str(m1.pid), "-x", cmds],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(ready), 30, "gdb attached")
        fcntl.flock(fd, fcntl.LOCK_SH)     # conversion: returns 0
        g.wait(30)
        (new,) = entries(d1)
        assert new != old and "-read-lock-" in new     # a fresh, valid entry
        assert harness.lock_state(fd) == "held"
        os.pread(fd, 10, 0)
        p = select.poll()
        p.register(fd, 0)
        assert p.poll(0) == []
    finally:
        os.close(fd)


def test_second_request_while_one_waits_joins_the_wait(mount):
    """Two requests on one open file description (a process sharing it, a
    thread of ours): the second joins the wait of the first and both return
    once it is granted, as with a local flock; LOCK_NB meanwhile fails with
    EWOULDBLOCK, LOCK_UN is 0 and gives nothing back. One entry is queued
    for the description, never two, and none is left behind."""
    import threading
    m1, m2, d1 = two_hosts(mount)
    other = harness.take(os.path.join(m2.path, "job"), "o", harness.SHARED)
    fd = os.open(os.path.join(d1, "p"), os.O_CREAT | os.O_RDONLY)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                            # shares the open file description
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits behind `other`
            os.write(w, b"0")
        except OSError as e:
            os.write(w, str(e.errno).encode())
        os._exit(0)
    joined = []
    t = None
    try:
        wait_for(lambda: len([e for e in entries(d1) if "-read-lock-" not in e]) == 1,
                 GRANT_TIMEOUT, "the conversion's exclusive entry")
        fcntl.flock(fd, fcntl.LOCK_UN)
        with pytest.raises(OSError) as e:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert e.value.errno == errno.EWOULDBLOCK
        for op in (fcntl.LOCK_EX, fcntl.LOCK_SH):
            t = threading.Thread(target=lambda op=op: joined.append(fcntl.flock(fd, op)))
            t.start()
            t.join(0.3)
            assert t.is_alive() and not joined, "the second request did not wait"
            assert len([e for e in entries(d1) if "-read-lock-" not in e]) == 1
        other.release()
        assert select.select([r], [], [], GRANT_TIMEOUT)[0]
        assert os.read(r, 16) == b"0"
        wait_for(lambda: len(joined) == 2, GRANT_TIMEOUT, "the joined requests")
        assert joined == [None, None]
        assert harness.lock_state(fd) == "held"
        assert len(entries(d1)) == 1
    finally:
        os.waitpid(pid, 0)
        os.close(fd)
    wait_for(lambda: entries(d1) == [], GRANT_TIMEOUT, "every entry gone")


# Two processes sharing one open file description (the descriptor argv[1],
# inherited), each asking LOCK_EX through libc once told: SIGUSR1
# interrupts (no restart).
SHARER = r'''
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
signal.signal(signal.SIGUSR1, lambda *a: None)
signal.siginterrupt(signal.SIGUSR1, True)
sys.stdin.readline()
rc = libc.flock(int(sys.argv[1]), 2)      # LOCK_EX
print("flock %d %d" % (rc, ctypes.get_errno() if rc else 0), flush=True)
sys.stdin.readline()
'''


FLOCK_SYSCALL = {"x86_64": 73, "aarch64": 32}.get(os.uname().machine)


def _sharer(fd):
    """A SHARER child that inherits `fd`: (process, lines)."""
    p = spawn([PY, "-c", SHARER, str(fd)], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, pass_fds=(fd,))
    return p, harness.Lines(p.stdout)


def _ask(p):
    p.stdin.write(b"go\n")
    p.stdin.flush()


def _in_flock(p):
    return harness.asleep_in(p.pid, {FLOCK_SYSCALL} if FLOCK_SYSCALL else None)


@pytest.mark.parametrize("who", ["first", "joined"])
def test_a_signal_ends_only_its_own_request_of_a_shared_wait(mount, who):
    """Two requests on one description, the second joined to the first's
    wait: a signal to the one that asked first hands the wait, with its
    entry and place in the queue, to the joined one; a signal to the joined
    one ends it alone. Only the signalled one returns EINTR; the other is
    granted once the other host lets go."""
    m1, m2, d1 = two_hosts(mount)
    other = harness.take(os.path.join(m2.path, "job"), "o", harness.SHARED)
    fd = os.open(os.path.join(d1, "p"), os.O_CREAT | os.O_RDONLY)
    a, out_a = _sharer(fd)
    b, out_b = _sharer(fd)
    try:
        _ask(a)
        wait_for(lambda: any("-read-lock-" not in e for e in entries(d1)),
                 GRANT_TIMEOUT, "the first request's exclusive entry")
        (queued,) = [e for e in entries(d1) if "-read-lock-" not in e]
        _ask(b)
        wait_for(lambda: _in_flock(b), GRANT_TIMEOUT, "the second request to wait")
        # the daemon reads requests in order, one at a time: once a request
        # of ours made after b's is answered, b's has been taken in (joined)
        os.getxattr(os.path.join(d1, queued), "user.zklockfs.kind")
        hit, rest = (a, out_a), (b, out_b)
        if who == "joined":
            hit, rest = rest, hit
        os.kill(hit[0].pid, signal.SIGUSR1)
        assert hit[1].readline(GRANT_TIMEOUT) == "flock -1 %d" % errno.EINTR
        assert [e for e in entries(d1) if "-read-lock-" not in e] == [queued], \
            "the wait kept its entry"
        with pytest.raises(TimeoutError):       # still waiting
            rest[1].readline(harness.NOT_GRANTED_WAIT)
        other.release()
        assert rest[1].readline(GRANT_TIMEOUT) == "flock 0 0"
        assert harness.lock_state(fd) == "held"
    finally:
        for p in (a, b):
            p.stdin.close()
            p.wait(GRANT_TIMEOUT)
        os.close(fd)
    wait_for(lambda: entries(d1) == [], GRANT_TIMEOUT, "every entry gone")


# flock() through libc: a signal makes it return -1/EINTR where Python's
# fcntl.flock would retry (PEP 475); SA_RESTART makes the kernel restart it.
SIGNALED = r'''
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
restart = sys.argv[2] == "restart"
signal.signal(signal.SIGUSR1, lambda *a: None)
signal.siginterrupt(signal.SIGUSR1, not restart)
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDONLY)
print("open", flush=True)
rc = libc.flock(fd, 2)                   # LOCK_EX
print("flock %d %d" % (rc, ctypes.get_errno() if rc else 0), flush=True)
sys.stdin.readline()
'''


def start_conversion(path, mode, listing):
    """A SIGNALED child on `path`: once its shared open is granted it asks
    LOCK_EX, which must wait (an entry of the lock directory `listing` is
    exclusive).  (the process, its line reader)."""
    p = spawn([PY, "-c", SIGNALED, path, mode],
              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = harness.Lines(p.stdout)
    assert out.readline(GRANT_TIMEOUT) == "open"
    wait_for(lambda: any("-read-lock-" not in e for e in entries(listing)),
             GRANT_TIMEOUT, "the conversion waits")
    return p, out


@pytest.mark.parametrize("mode", ["restart", "eintr"])
def test_signal_during_a_conversion_is_eintr_never_erestartsys(mount, mode):
    """A signal while LOCK_EX waits: without SA_RESTART flock(2) returns
    EINTR (4), never ERESTARTSYS (512); with SA_RESTART the kernel asks
    again and the lock is granted once the other host lets go.  (Each
    restart is a new entry at the end of the queue, as for a waiting
    open.)"""
    m1, m2, d1 = two_hosts(mount)
    other = harness.take(os.path.join(m2.path, "job"), "o", harness.SHARED)
    p, out = start_conversion(os.path.join(d1, "p"), mode, d1)
    try:
        for _ in range(5):
            os.kill(p.pid, signal.SIGUSR1)
            time.sleep(0.1)
        if mode == "eintr":
            assert out.readline(GRANT_TIMEOUT) == "flock -1 %d" % errno.EINTR
            wait_for(lambda: entries(d1) == [other.entry], GRANT_TIMEOUT,
                     "the interrupted entry gone")
            other.release()
        else:
            other.release()
            assert out.readline(GRANT_TIMEOUT) == "flock 0 0"
            (mine,) = entries(d1)
            assert "-read-lock-" not in mine
    finally:
        p.stdin.close()
        p.wait(GRANT_TIMEOUT)


def test_shutdown_answers_a_waiting_conversion_eshutdown(mount):
    """README: SIGTERM/umount answer every waiting request with ESHUTDOWN;
    a flock(2) conversion waiting is one of them."""
    m1, m2 = mount(), mount()
    d2 = os.path.join(m2.path, "job")
    os.mkdir(d2)
    other = harness.take(d2, "o", harness.SHARED)
    p, out = start_conversion(os.path.join(m1.path, "job", "p"), "restart", d2)
    try:
        os.kill(m1.pid, signal.SIGTERM)
        assert out.readline(GRANT_TIMEOUT) == "flock -1 %d" % errno.ESHUTDOWN
        wait_for(lambda: entries(d2) == [other.entry], GRANT_TIMEOUT,
                 "m1's entries gone with its session")
    finally:
        p.stdin.close()
        p.wait(GRANT_TIMEOUT)
        other.release()


@pytest.mark.timeout(90)
def test_a_conversion_waiting_through_an_expiry_goes_on_waiting(mount, zk):
    """README: after an expiry, waiters are enqueued again and go on
    waiting; a flock(2) conversion is a waiter like an open.  The shared
    holder of the other mount loses its lock with the expiry, so the
    conversion is granted, and its descriptor holds a live entry."""
    m1, m2, d1 = two_hosts(mount)
    other = harness.take(os.path.join(m2.path, "job"), "o", harness.SHARED)
    p, out = start_conversion(os.path.join(d1, "p"), "restart", d1)
    try:
        zk.suspend()
        try:
            time.sleep(m1.session_timeout / 1000.0 * 2.2)
        finally:
            zk.resume()
        assert out.readline(3 * GRANT_TIMEOUT) == "flock 0 0"
        (mine,) = entries(d1)
        assert mine.startswith("p-lock-")
    finally:
        p.stdin.close()
        p.wait(GRANT_TIMEOUT)
        other.release()


def test_flock_on_a_lock_directory_is_refused_loudly(mount):
    """`flock DIR cmd` would lock this host only (the kernel keeps locks on
    a FUSE directory to itself): the open of a lock directory by flock(1)
    (a caller whose comm is "flock") is refused with EISDIR and one line in
    the log, so it fails without running cmd.  Directory walkers go on
    working."""
    m = mount()
    d = m.p("deploy")
    os.mkdir(d)
    r = subprocess.run([FLOCK, d, "echo", "ran"], capture_output=True, text=True,
                       timeout=GRANT_TIMEOUT, cwd="/")
    assert r.returncode != 0 and "ran" not in r.stdout, r
    assert "Is a directory" in r.stderr, r
    assert harness.log_has(m, r"flock\(1\) on directory \S*/deploy refused "
                              r"\(pid \d+\).*use zklock DIR")
    assert os.listdir(m.path) == ["deploy"]
    assert subprocess.run(["tar", "cf", "/dev/null", "-C", m.path, "."], cwd="/",
                          timeout=GRANT_TIMEOUT).returncode == 0
    assert subprocess.run(["find", m.path], capture_output=True, cwd="/",
                          timeout=GRANT_TIMEOUT).returncode == 0


@pytest.mark.parametrize("flags", [
    os.O_RDONLY, os.O_RDONLY | os.O_CLOEXEC, os.O_RDONLY | os.O_NOCTTY,
    os.O_RDONLY | os.O_DIRECTORY, os.O_RDONLY | os.O_NONBLOCK],
    ids=["rdonly", "cloexec", "noctty", "directory", "nonblock"])
def test_any_other_open_of_a_lock_directory_succeeds(mount, flags):
    """Python's os.open(DIR, os.O_RDONLY) opens as flock(1) does, as Go's
    os.Open and Java's Files.list do: every open of a directory by a
    program that is not flock(1) succeeds, whatever its flags, and lists."""
    m = mount()
    d = m.p("deploy")
    os.mkdir(d)
    os.mkdir(os.path.join(d, "sub"))
    fd = os.open(d, flags)
    try:
        assert os.listdir(fd) == ["sub"]
    finally:
        os.close(fd)


def test_shutil_rmtree_removes_a_lock_tree(mount, zkc):
    """Python 3.11's shutil.rmtree opens each directory O_RDONLY (no
    O_DIRECTORY), as flock(1) does: a lock tree goes as a local one."""
    m = mount()
    t = m.p("tree")
    for sub in ("a/b/c", "a/d", "e"):
        os.makedirs(os.path.join(t, sub))
    h = harness.take(os.path.join(t, "a"), "h")
    h.release()
    wait_for(lambda: entries(os.path.join(t, "a")) == [], GRANT_TIMEOUT,
             "the entry gone")
    shutil.rmtree(t)
    assert os.listdir(m.path) == []
    assert zkc.get_children(m.root) == []


def test_flock_on_a_folder_of_a_lockfiles_mount_is_the_kernels(mount):
    """On a lockfiles mount a directory is a folder, no lock: flock(1) on
    it is not refused (its lock is this host's, as on any FUSE mount;
    the docs say so)."""
    m = mount(opts=("lockfiles",))
    d = m.p("cron")
    os.mkdir(d)
    r = subprocess.run([FLOCK, d, "echo", "ran"], capture_output=True, text=True,
                       timeout=GRANT_TIMEOUT, cwd="/")
    assert r.returncode == 0 and r.stdout == "ran\n", r


def test_flock_by_a_caller_the_daemon_cannot_see_is_allowed(mount):
    """A daemon in a container (here: its own pid namespace) is told pid 0
    for a caller it cannot see, and cannot tell flock(1) from a directory
    walker: the open is let through, and the log says so once."""
    m = mount(wrap=["unshare", "--pid", "--fork", "--kill-child"])
    d = m.p("deploy")
    os.mkdir(d)
    for _ in range(2):
        r = subprocess.run([FLOCK, d, "echo", "ran"], capture_output=True,
                           text=True, timeout=GRANT_TIMEOUT, cwd="/")
        assert r.returncode == 0 and r.stdout == "ran\n", r
    with open(m.logpath) as f:
        told = [ln for ln in f if "cannot see (pid 0)" in ln]
    assert len(told) == 1, told
