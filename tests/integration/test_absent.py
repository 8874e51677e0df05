"""A missing mount never becomes a local lock (docs/SPEC.md, "When the lock
is lost").

With nothing mounted (unmounted, or its daemon killed and the dead mount
cleared), a lock file where the docs put it, one folder down from the mount
point (MP/cluster/x.lock), cannot be made: open(O_CREAT) is ENOENT, for
root too, and flock(1) runs nothing.  A mount by root left the mount point
immutable, so nothing is made at the mount point itself either (EPERM,
root included), and listed it in the daemon's state file
($ZKLOCKFS_STATE_DIR: a temp dir of the harness) for the package's
removal.  A mount by another user cannot set the flag, and sets none.  A
mount point that is not empty is told in the log.
"""

import errno
import os
import signal
import subprocess

import pytest

from harness import (clear_immutable, fusermount, immutable, lockdir, log_has,
                     mount_entry, take)

PLAIN_UID = 64000 + os.getpid() % 1000      # no account needed (setpriv)


def runs(argv):
    """argv run to its end: (exit status, stderr)."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    return r.returncode, r.stderr


def assert_no_lock_at(path, err, scratch):
    """With nothing mounted, @path is no lock: flock(1) fails and runs
    nothing, bash's `exec 9>` fails, open(O_CREAT) fails with @err; and
    nothing is left there."""
    ran = os.path.join(scratch, "ran")
    rc, stderr = runs(["flock", "-n", path, "touch", ran])
    assert rc != 0 and not os.path.exists(ran), \
        "flock -n %s ran its command (exit %d): a local lock" % (path, rc)
    assert os.strerror(err) in stderr, stderr
    rc, stderr = runs(["bash", "-c", "exec 9>'%s'" % path])
    assert rc != 0, "exec 9>%s succeeded: a local lock file" % path
    assert os.strerror(err) in stderr, stderr
    with pytest.raises(OSError) as ei:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    assert ei.value.errno == err, ei.value
    assert not os.path.lexists(path)


@pytest.mark.parametrize("gone", ["unmounted", "daemon-killed"])
def test_no_local_lock_once_the_mount_is_gone(mount, scratch, gone):
    m = mount(opts=["lockfiles"])
    os.mkdir(m.p("cluster"))                # the folder of the lock files
    lock = m.p("cluster", "x.lock")
    # mounted, the same command takes the cluster's lock and runs
    rc, stderr = runs(["flock", "-n", lock, "true"])
    assert rc == 0, stderr
    if gone == "unmounted":
        assert m.umount() == 0
    else:
        m.kill(signal.SIGKILL)
        m.proc.wait(10)
        r = fusermount(m.path)              # the dead mount, as an admin clears it
        assert r.returncode == 0, r.stderr
    assert mount_entry(m.path) is None
    # one folder down: nothing there to open, for root too
    assert_no_lock_at(lock, errno.ENOENT, scratch)
    # the mount point itself: nothing can be made in it, by root either,
    # since the mount left it immutable, and listed it for the package
    assert_no_lock_at(m.p("x.lock"), errno.EPERM, scratch)
    with pytest.raises(PermissionError):
        os.mkdir(m.p("cluster"))
    assert os.listdir(m.path) == []
    assert immutable(m.path)
    assert m.listed_immutable() == [m.path]


def test_a_remount_lists_its_mount_point_once(mount):
    m = mount()
    assert m.umount() == 0
    assert m.listed_immutable() == [m.path]
    m.start()                               # the same daemon's command again
    h = take(lockdir(m), "h")               # the flag takes nothing from the mount
    h.release()
    assert m.umount() == 0
    assert immutable(m.path)
    assert m.listed_immutable() == [m.path]


def test_a_mount_point_that_is_not_empty_is_told(mount):
    """What is in a mount point is reachable, and writable, while nothing
    is mounted: the mount says so in its log, and mounts."""
    m = mount()
    assert m.umount() == 0
    clear_immutable(m.path)
    stray = m.p("nightly.lock")             # made while nothing was mounted
    open(stray, "w").close()
    try:
        m.start()
        assert log_has(m, r"the mount point \S+ is not empty")
        assert m.umount() == 0
        assert immutable(m.path)
        assert m.listed_immutable() == [m.path]
    finally:
        if not m.mounted():
            clear_immutable(m.path)
            os.unlink(stray)


def test_root_without_cap_linux_immutable_mounts_and_says_so(mount):
    """Setting the flag takes CAP_LINUX_IMMUTABLE: a root daemon without it
    (a container's root) says so in one line and mounts; the mount point
    stays as it was, listed nowhere."""
    m = mount(wrap=["setpriv", "--inh-caps=-linux_immutable",
                    "--bounding-set=-linux_immutable"])
    h = take(lockdir(m), "h")
    h.release()
    assert m.umount() == 0
    assert not immutable(m.path)
    assert m.listed_immutable() == []
    said = [ln for ln in m.log_tail(1000).splitlines()
            if "immutable" in ln and " mounted " not in ln]
    assert len(said) == 1 and "Operation not permitted" in said[0], said


@pytest.mark.skipif(os.stat("/dev/fuse").st_mode & 0o006 != 0o006,
                    reason="/dev/fuse is not open to other users here, so "
                    "no daemon but root's can mount")
def test_a_mount_by_another_user_leaves_the_mount_point_as_it_was(mount):
    """A daemon run by a plain user (through fusermount3) cannot set the
    flag: the mount point stays writable once unmounted, listed nowhere."""
    user = ["setpriv", "--reuid=%d" % PLAIN_UID, "--regid=%d" % PLAIN_UID,
            "--clear-groups"]

    m = mount(wrap=user, mp_owner=PLAIN_UID, env={"XDG_RUNTIME_DIR": ""})
    h = take(lockdir(m), "h")
    h.release()
    assert m.umount() == 0
    assert not immutable(m.path)
    assert m.listed_immutable() == []
