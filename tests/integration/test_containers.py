"""-o containers: mkdir makes ZooKeeper container znodes, which the server
deletes some time after their last child goes (docs/SPEC.md, "Tidy
trees"); without the option nothing changes.

The server here is one of this module's own, started with
-Dznode.container.checkIntervalMs=CHECK_MS (a Java system property read by
its ContainerManager; 60 s by default), so a container goes within
CHECK_MS of its last entry. Nothing here sleeps to let the checker run: a
test awaits a znode's deletion with a bounded deadline, and proves that
another znode was *not* deleted by awaiting the deletion of a used
container made after it (one pass of the checker looks at every container).
"""

import errno
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import faultproxy
import harness
from harness import (GRANT_TIMEOUT, SLOW, fusermount, lock_state, mount_entry,
                     remove_mountpoint, spawn, take, wait_for)

CHECK_MS = 500
# a container goes within one check interval of its last entry; the bound
# allows two (a pass may have just begun) and a loaded 2-core machine
GONE_WITHIN = 2 * CHECK_MS / 1000.0 + 5.0 * SLOW
RUN_TIMEOUT = 20 * SLOW


@pytest.fixture(scope="module")
def zk(tmp_path_factory):
    """conftest's `zk` for this module, on a server of its own whose
    ContainerManager looks every CHECK_MS; `zkc` and `mount` use it."""
    flag = "-Dznode.container.checkIntervalMs=%d" % CHECK_MS
    with harness.zookeeper(tmp_path_factory, "zk-containers",
                           jvm_flags=[flag], paths=["/t"]) as server:
        yield server


def zklock(*args):
    """Run zklock to completion (bounded, killed by pid otherwise):
    (rc, stderr)."""
    return zklock_under([], *args)


def zklock_under(wrap, *args):
    """zklock(), run under the command `wrap` (argv prefix)."""
    tool = harness.zklock_binary()
    if not os.access(tool, os.X_OK):
        pytest.skip("zklock not built: %s (set $ZKLOCK)" % tool)
    env = dict(os.environ)
    if wrap:        # LeakSanitizer cannot work under ptrace (strace)
        env["ASAN_OPTIONS"] = ":".join(
            x for x in (env.get("ASAN_OPTIONS"), "detect_leaks=0") if x)
    p = spawn(wrap + [tool] + list(args), stdout=subprocess.DEVNULL,
              stderr=subprocess.PIPE, env=env)
    try:
        _, err = p.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        harness.signal_proc(p, signal.SIGKILL)
        p.wait(10)
        pytest.fail("zklock %r did not finish within %.0fs" % (args, RUN_TIMEOUT))
    err = err.decode("utf-8", "replace")
    for mk in harness.SANITIZER_MARKERS:
        assert mk not in err, "sanitizer report from zklock:\n" + err
    return p.returncode, err


def await_gone(zkc, path, what):
    """Wait until znode `path` is deleted; the seconds that took."""
    t0 = time.monotonic()
    wait_for(lambda: zkc.exists(path) is None, GONE_WITHIN,
             "the server to delete %s (%s)" % (path, what))
    return time.monotonic() - t0


def used_and_emptied(m, name):
    """mkdir `name` on m, take its lock and give it back: a container that
    has had a child and has none. Returns (its path, when it was emptied)."""
    d = m.p(name)
    os.mkdir(d)
    take(d, "h").release()
    return d, time.monotonic()


# --- the container goes ------------------------------------------------------

def test_container_goes_after_its_last_entry(mount, zkc):
    m = mount(opts=["containers"])
    d = m.p("deploy")
    os.mkdir(d)
    assert os.path.isdir(d)
    assert zkc.exists(m.zkpath("deploy")) is not None
    # two holders, one after the other: it stays while an entry is left
    h1 = take(d, "a")
    h2 = harness.start_waiter(d, "b")
    h1.release()
    h2.wait_granted()
    assert zkc.exists(m.zkpath("deploy")) is not None, \
        "a container with an entry left was deleted"
    h2.release()
    took = await_gone(zkc, m.zkpath("deploy"), "emptied container")
    harness.record_figure(
        "-o containers: container deleted %.2f s after its last release "
        "(server checkIntervalMs=%d)" % (took, CHECK_MS))
    assert took <= GONE_WITHIN
    # and the mount sees it go (the kernel remembers a directory 1 s)
    wait_for(lambda: not os.path.exists(d), 5 * SLOW,
             "%s to disappear from the mount" % d)
    # mkdir makes it again, as a container again
    os.mkdir(d)
    take(d, "c").release()
    await_gone(zkc, m.zkpath("deploy"), "container made again")


def test_nested_containers_go_inner_first(mount, zkc):
    """mkdir -p a/b: both are containers; b goes after its last entry,
    then a, which has had b for a child."""
    m = mount(opts=["containers"])
    os.makedirs(m.p("jobs", "nightly"))
    take(m.p("jobs", "nightly"), "h").release()
    await_gone(zkc, m.zkpath("jobs/nightly"), "inner container")
    await_gone(zkc, m.zkpath("jobs"), "outer container, emptied by the inner one")


# --- what stays ----------------------------------------------------------------

def test_persistent_and_never_used_directories_stay(mount, zkc):
    """Without the option a directory is a persistent znode: it stays when
    emptied. With it, a directory never used (no entry ever made in it)
    stays too: ZooKeeper deletes only containers whose child version has
    moved (cversion > 0), unless znode.container.maxNeverUsedIntervalMs
    (0, never, by default) says otherwise."""
    plain = mount()
    cont = mount(opts=["containers"])
    assert plain.zkpath() == cont.zkpath()       # one root, two hosts
    p, _ = used_and_emptied(plain, "persistent")
    os.mkdir(cont.p("unused"))
    assert zkc.exists(cont.zkpath("unused")).cversion == 0
    # a used container made after both: the checker's pass that deletes it
    # has looked at both of them
    used_and_emptied(cont, "sentinel")
    await_gone(zkc, cont.zkpath("sentinel"), "sentinel container")
    assert zkc.exists(plain.zkpath("persistent")) is not None, \
        "a persistent directory was deleted"
    assert zkc.exists(cont.zkpath("unused")) is not None, \
        "a container never used was deleted"
    assert os.path.isdir(p) and os.path.isdir(cont.p("unused"))



def dir_owners(m):
    """The size of m's table of directory owners (a metrics gauge)."""
    text = os.getxattr(m.path, "user.zklockfs.metrics").decode()
    for line in text.splitlines():
        if line.startswith("zklockfs_dir_owners "):
            return int(line.split()[1])
    raise AssertionError("no zklockfs_dir_owners in the metrics")


def test_reaped_directories_leave_the_owner_table(mount, zkc):
    """The mount remembers who made each directory, in a bounded table
    (beyond it, new directories are the mount owner's). Containers the
    server reaps must leave it once the mount finds them gone, or one
    user's used-once directories fill it for everyone."""
    m = mount(opts=["containers"])
    before = dir_owners(m)
    names = ["once%d" % i for i in range(5)]
    for name in names:
        used_and_emptied(m, name)
    assert dir_owners(m) == before + len(names)
    for name in names:
        await_gone(zkc, m.zkpath(name), "emptied container")
    # found gone: a lookup (the kernel remembers a directory 1 s)
    for name in names[:3]:
        wait_for(lambda: not os.path.exists(m.p(name)), 5 * SLOW,
                 "%s to disappear from the mount" % name)
    assert dir_owners(m) == before + 2
    # found gone: a listing of the directory itself
    for name in names[3:]:
        with pytest.raises(FileNotFoundError):
            os.listdir(m.p(name))
    wait_for(lambda: dir_owners(m) == before, 5 * SLOW,
             "the table to forget every reaped directory (%d left)"
             % (dir_owners(m) - before))
    # a directory made again is its maker's again
    os.mkdir(m.p("once0"))
    assert os.stat(m.p("once0")).st_uid == os.getuid()
    assert dir_owners(m) == before + 1


# --- races: the directory goes between lookup and create -------------------------

def test_open_in_a_directory_gone_is_enoent_and_leaves_nothing(mount, zkc):
    """The kernel remembers a directory for a second: an open(O_CREAT) in
    one the server deleted meanwhile reaches the daemon, whose create
    fails. It is ENOENT, with one line in the log, and nothing is made.
    mkdir then makes it again at once (the kernel revalidates the name it
    creates), and the open works."""
    m = mount(opts=["containers"])
    d = m.p("gone")
    os.mkdir(d)
    os.stat(d)                          # the kernel remembers it
    zkc.delete(m.zkpath("gone"))        # as the container checker would
    for flags in (os.O_CREAT | os.O_WRONLY, os.O_CREAT | os.O_RDONLY | os.O_NONBLOCK):
        with pytest.raises(OSError) as ei:
            os.close(os.open(os.path.join(d, "me"), flags))
        assert ei.value.errno == errno.ENOENT, os.strerror(ei.value.errno)
    assert zkc.exists(m.zkpath("gone")) is None, "the open made a znode"
    assert "/gone: the directory is gone" in m.log_tail(), m.log_tail()
    os.mkdir(d)
    h = take(d, "me")
    assert zkc.get_children(m.zkpath("gone")) == [h.entry]
    h.release()


@pytest.mark.timeout(60)
def test_waiter_enqueued_again_after_expiry_in_a_directory_gone(zk,
                                                                 mount, zkc):
    """A waiting open is enqueued again after its session expired. If the
    server deleted its directory meanwhile (the expiry took every entry, so
    the container was empty), that open fails with ENOENT: the daemon never
    makes a directory on its own."""
    px = faultproxy.FaultProxy(zk.host, zk.port).start()
    try:
        timeout_ms = 2000
        P = mount(connect=px.hostport, opts=["containers"],
                  session_timeout=timeout_ms)
        d = P.p("expiring")
        os.mkdir(d)
        h = take(d, "h")
        w = harness.start_waiter(d, "w")
        px.blackhole()
        try:
            wait_for(lambda: zkc.exists(P.zkpath("expiring")) is None,
                     timeout_ms / 1000.0 + GONE_WITHIN,
                     "the session to expire and the server to delete the "
                     "emptied container")
        finally:
            px.heal()
        assert w.wait_error(GRANT_TIMEOUT) == "ENOENT"
        wait_for(lambda: lock_state(h) == "lost", GRANT_TIMEOUT,
                 "the holder to see its lock lost")
        assert zkc.exists(P.zkpath("expiring")) is None, \
            "the daemon made the directory again"
        h.release()
    finally:
        px.stop()


def test_zklock_makes_a_gone_directory_again(mount, zkc):
    """zklock creates its lock directory if missing; when the directory
    goes between its mkdir and its open (or while the kernel still
    remembers it), it makes it again and opens again. Here the directory
    and its parent are deleted behind the kernel's back, right after it
    looked them up."""
    m = mount(opts=["containers"])
    d = m.p("app", "cron")
    rc, err = zklock(d, "true")
    assert rc == 0, err
    await_gone(zkc, m.zkpath("app/cron"), "zklock's container")
    await_gone(zkc, m.zkpath("app"), "its parent")
    for _ in range(3):
        os.makedirs(d, exist_ok=True)
        os.stat(d)
        zkc.delete(m.zkpath("app/cron"))
        zkc.delete(m.zkpath("app"))
        rc, err = zklock(d, "sh", "-c", 'test -d "$ZKLOCK_DIR"')
        assert rc == 0, err
        assert err == "", err
    # one-off locks do not pile up
    await_gone(zkc, m.zkpath("app/cron"), "zklock's container")
    await_gone(zkc, m.zkpath("app"), "its parent")


@pytest.mark.parametrize("fails,rc", [(5, 0), (6, 66)])
def test_zklock_opens_again_a_bounded_number_of_times(mount, fails, rc):
    """The race itself, between zklock's mkdir and its open, is too narrow
    to hit at will: strace makes the lock's open() fail with ENOENT, as the
    daemon answers it then, the first `fails` times. zklock makes the
    directory again and opens again, 5 times at most; after that it gives
    up with EX_NOINPUT and one line."""
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace not installed")
    m = mount(opts=["containers"])
    d = m.p("flaky")
    os.mkdir(d)
    inject = "openat:error=ENOENT:when=1..%d" % fails
    rc_got, err = zklock_under([strace, "-f", "-qq", "-o", "/dev/null",
                                "-P", os.path.join(d, "me"), "-e", "trace=openat",
                                "-e", "inject=" + inject],
                               "-N", "me", d, "true")
    assert rc_got == rc, err
    if rc:
        assert err.splitlines() == ["zklock: %s: %s" % (
            d, os.strerror(errno.ENOENT))], err
    else:
        assert err == "", err


def test_zklock_over_a_checker_that_deletes_often(mount, zkc):
    """Many short zklock runs on one directory while the server deletes it
    whenever it is empty at a check: every run gets the lock."""
    m = mount(opts=["containers"])
    d = m.p("often")
    t_end = time.monotonic() + 3 * CHECK_MS / 1000.0
    runs = 0
    while time.monotonic() < t_end or runs < 10:
        rc, err = zklock(d, "true")
        assert rc == 0, "run %d: %s" % (runs, err)
        runs += 1
    await_gone(zkc, m.zkpath("often"), "zklock's container")


# --- the option ------------------------------------------------------------------

@pytest.mark.parametrize("opt", ["containers=1", "containers="])
def test_containers_takes_no_value(daemon_path, zk, opt):
    mp = os.path.realpath(tempfile.mkdtemp(prefix="zklockfs-mnt-"))
    try:
        p = spawn([daemon_path, "-f", "-o", opt,
                   zk.hostport + "/t/containers-bad", mp],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            _, err = p.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            harness.signal_proc(p, signal.SIGKILL)
            p.wait(10)
            pytest.fail("zklockfs -o %s did not exit" % opt)
        lines = [ln for ln in err.decode().splitlines() if ln.strip()]
        assert p.returncode != 0
        assert lines == ["zklockfs: containers takes no value (write -o containers)"], lines
        assert mount_entry(mp) is None
    finally:
        if mount_entry(mp) is not None:
            fusermount(mp, lazy=True)
        remove_mountpoint(mp)
