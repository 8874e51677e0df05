"""The mount helper: `mount -t zklockfs`, `mount -t fuse.zklockfs`, an
/etc/fstab line, and `umount`, each a real mount(8) call.

mount(8) looks for helpers only in /sbin, so these tests put a symlink
/sbin/mount.zklockfs -> mount-helpers/mount.zklockfs when none is there
(and remove it after); the daemon is $ZKLOCKFS, passed through the
environment.  Needs root, as mount(8) does.
"""

import os
import signal
import subprocess
import tempfile
import time

import pytest

import harness

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HELPER = os.path.join(REPO, "mount-helpers", "mount.zklockfs")
SBIN_HELPER = "/sbin/mount.zklockfs"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mount(8) needs root")


def daemon_pids(mountpoint):
    """Pids of zklockfs daemons serving @mountpoint (from /proc)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"zklockfs") and mountpoint.encode() in argv:
            pids.append(int(d))
    return pids


@pytest.fixture
def root_made(zk, test_root):
    """The test's ROOT, made in ZooKeeper first, as an admin does before the
    first mount (a mount without -o create_root refuses a missing one)."""
    with zk.client() as c:
        c.ensure_path(test_root)
    return test_root


@pytest.fixture
def helper_installed():
    """/sbin/mount.zklockfs, ours for the test if there was none."""
    placed = False
    if not os.path.lexists(SBIN_HELPER):
        os.symlink(HELPER, SBIN_HELPER)
        placed = True
    yield SBIN_HELPER
    if placed:
        os.unlink(SBIN_HELPER)


@pytest.fixture
def mountpoint(daemon_path):
    d = tempfile.mkdtemp(prefix="zklockfs-mnt-helper-")
    yield d
    if harness.mount_entry(d):
        harness.fusermount(d, lazy=True)
    for pid in daemon_pids(d):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    harness.remove_mountpoint(d)


def run(argv, env_extra=None, timeout=30):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run(argv, capture_output=True, text=True, env=env,
                          timeout=timeout * harness.SLOW)


def take_and_give_back(mnt):
    """A lock through the new mount, seen in the queue, then released."""
    os.makedirs(os.path.join(mnt, "deploy"), exist_ok=True)
    fd = os.open(os.path.join(mnt, "deploy", "helper"), os.O_CREAT | os.O_WRONLY)
    try:
        names = os.listdir(os.path.join(mnt, "deploy"))
        assert len(names) == 1 and names[0].startswith("helper-lock-"), names
        assert harness.getxattr_str(fd, "user.zklockfs.state") == "held"
    finally:
        os.close(fd)


def assert_unmounted_and_daemon_gone(mnt):
    harness.wait_for(lambda: not harness.mount_entry(mnt), 10, "unmount")
    harness.wait_for(lambda: not daemon_pids(mnt), 10 * harness.SLOW,
                     "daemon exit after umount")


def lock_then_umount(mountpoint):
    """A lock can be taken on the fresh mount; umount(8) ends it and its daemon."""
    take_and_give_back(mountpoint)
    r = run(["umount", mountpoint])
    assert r.returncode == 0, r.stderr
    assert_unmounted_and_daemon_gone(mountpoint)


def test_mount_t_zklockfs_and_umount(zk, root_made, daemon_path, helper_installed,
                                     mountpoint):
    test_root = root_made
    src = "%s%s" % (zk.hostport, test_root)
    r = run(["mount", "-t", "zklockfs", src, mountpoint,
             "-o", "session_timeout=4000,_netdev,nofail,noatime"],
            {"ZKLOCKFS": daemon_path})
    assert r.returncode == 0, r.stderr
    assert harness.mount_entry(mountpoint)[0] == "fuse.zklockfs"
    with open("/proc/mounts") as f:
        assert any(l.split()[:3] == [src, mountpoint, "fuse.zklockfs"] for l in f)
    lock_then_umount(mountpoint)


def test_fstab_line(zk, root_made, daemon_path, helper_installed, mountpoint,
                    tmp_path):
    test_root = root_made
    fstab = tmp_path / "fstab"
    fstab.write_text("# a zklockfs line as an admin writes it\n"
                     "%s%s %s zklockfs _netdev,nofail,noauto,session_timeout=4000,"
                     "x-systemd.automount 0 0\n" % (zk.hostport, test_root, mountpoint))
    r = run(["mount", "--fstab", str(fstab), mountpoint], {"ZKLOCKFS": daemon_path})
    assert r.returncode == 0, r.stderr
    assert harness.mount_entry(mountpoint)[0] == "fuse.zklockfs"
    lock_then_umount(mountpoint)


def test_mount_t_fuse_zklockfs_through_mount_fuse3(zk, root_made, daemon_path,
                                                   mountpoint):
    test_root = root_made
    # mount.fuse3 runs the subtype's program with a PATH of its own: the
    # daemon must be installed, as `make install` does (/usr/local/bin)
    installed = "/usr/local/bin/zklockfs"
    placed = False
    if not os.path.lexists(installed):
        os.symlink(daemon_path, installed)
        placed = True
    try:
        src = "%s%s" % (zk.hostport, test_root)
        r = run(["mount", "-t", "fuse.zklockfs", src, mountpoint,
                 "-o", "session_timeout=4000"])
        assert r.returncode == 0, r.stderr
        assert harness.mount_entry(mountpoint)[0] == "fuse.zklockfs"
        lock_then_umount(mountpoint)
    finally:
        if placed:
            os.unlink(installed)


def test_mount_fails_clearly_when_zookeeper_is_unreachable(daemon_path,
                                                          helper_installed,
                                                          mountpoint):
    port = harness.free_port()
    t0 = time.monotonic()
    r = run(["mount", "-t", "zklockfs", "127.0.0.1:%d/x" % port, mountpoint,
             "-o", "session_timeout=1500"], {"ZKLOCKFS": daemon_path})
    elapsed = time.monotonic() - t0
    assert r.returncode != 0
    assert "cannot reach ZooKeeper" in r.stderr, r.stderr
    assert elapsed < 1.5 + 5 * harness.SLOW
    assert not harness.mount_entry(mountpoint)


def test_helper_fake_and_verbose_flags(daemon_path, mountpoint):
    r = run([HELPER, "127.0.0.1:1/x", mountpoint, "-fv", "-o", "rw,_netdev"],
            {"ZKLOCKFS": daemon_path})
    assert r.returncode == 0, r.stderr
    assert daemon_path in r.stderr and "-o rw,_netdev" in r.stderr
    assert not harness.mount_entry(mountpoint)
    r = run([HELPER, "only-one-arg"])
    assert r.returncode != 0 and "usage" in r.stderr


def test_make_install_and_uninstall(tmp_path):
    dest = tmp_path / "root"
    r = run(["make", "-C", REPO, "install", "DESTDIR=%s" % dest, "PREFIX=/opt/zkl"],
            timeout=120)
    assert r.returncode == 0, r.stderr
    want = ["opt/zkl/bin/zklockfs", "opt/zkl/bin/zklock", "sbin/mount.zklockfs",
            "etc/systemd/system/zklockfs@.service",
            "opt/zkl/share/man/man8/zklockfs.8", "opt/zkl/share/man/man1/zklock.1"]
    for rel in want:
        assert (dest / rel).is_file(), rel
    assert os.access(dest / "sbin/mount.zklockfs", os.X_OK)
    # the helper and the unit name the installed daemon
    assert "installed=/opt/zkl/bin/zklockfs" in (dest / "sbin/mount.zklockfs").read_text()
    assert "ExecStart=/opt/zkl/bin/zklockfs -f" in \
        (dest / "etc/systemd/system/zklockfs@.service").read_text()
    r = run(["make", "-C", REPO, "uninstall", "DESTDIR=%s" % dest, "PREFIX=/opt/zkl"])
    assert r.returncode == 0, r.stderr
    left = [p for p in dest.rglob("*") if p.is_file()]
    assert left == [], left
