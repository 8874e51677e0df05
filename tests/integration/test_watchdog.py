"""zklock's watchdog cannot be blinded (docs/SPEC.md, "Outages"; zklock(1),
"A daemon that stops answering").

zklock reads the daemon's heartbeat file without asking the daemon.  It
must work for every user of the mount, trust only the daemon's own file,
never block on it, be armed before the command starts, and measure on the
daemon's clock whatever time namespace it runs in (test_outage.py freezes
the daemon under each); the daemon takes the file's blocks at start, so a
full tmpfs fails the mount with one line instead of a SIGBUS later.
"""

import fcntl
import os
import shutil
import stat
import struct
import subprocess

import pytest

import harness
from harness import GRANT_TIMEOUT, spawn, wait_for
from lockers import as_user

FLOCK = shutil.which("flock") or "/usr/bin/flock"
WATCHDOG = 0x81005a03           # ZKLFS_IOC_WATCHDOG (abi/zklockfs.h)
TELL = 0x5a06                   # ZKLFS_IOC_TELL
ALICE, BOB = 1000, 1001
# a daemon of alice's, able to mount (CAP_SYS_ADMIN) and open /dev/fuse
# (CAP_DAC_OVERRIDE) as a user of a host's fuse group would
AS_ALICE_DAEMON = as_user(ALICE) + ["--inh-caps=+sys_admin,+dac_override",
                                    "--ambient-caps=+sys_admin,+dac_override"]


def heartbeat_of(fd):
    """(path, slot, uid, gen) ZKLFS_IOC_WATCHDOG gives a holder."""
    buf = fcntl.ioctl(fd, WATCHDOG, bytes(256))
    path, slot, uid, gen = struct.unpack("240sIIQ", buf)
    return path.split(b"\0")[0].decode(), slot, uid, gen


def zklock_run(zklock, lock, marker, user=None, timeout=None):
    """zklock LOCK touch MARKER, as @user: (status, stderr)."""
    r = subprocess.run(as_user(user) + [zklock, lock, "touch", marker],
                       capture_output=True, text=True, cwd="/",
                       timeout=timeout or GRANT_TIMEOUT)
    return r.returncode, r.stderr


def test_every_user_of_a_users_mount_is_watched(mount, zklock, scratch):
    """A daemon run by alice with allow_other keeps its heartbeat where
    bob reads it (not in alice's $XDG_RUNTIME_DIR): bob's zklock runs its
    command watched.  Bob's flock(1) is refused (ENOLCK): alice's daemon
    could not end bob's job at a loss."""
    os.chmod(scratch, 0o777)
    m = mount(opts=("lockfiles", "allow_other"), wrap=AS_ALICE_DAEMON, mp_owner=ALICE,
              env={"XDG_RUNTIME_DIR": scratch})
    d = m.p("cron")
    subprocess.run(as_user(ALICE) + ["mkdir", d], check=True)
    with open(os.path.join(d, "hb.lock"), "w") as f:
        fcntl.ioctl(f, TELL)        # told, not ended: alice's daemon could not
        fcntl.flock(f, fcntl.LOCK_EX)
        path, _, uid, _ = heartbeat_of(f)
        fcntl.flock(f, fcntl.LOCK_UN)
    st = os.stat(path)
    assert uid == ALICE and st.st_uid == ALICE and stat.S_IMODE(st.st_mode) == 0o644
    assert not path.startswith(scratch), path
    marker = os.path.join(scratch, "ran")
    rc, err = zklock_run(zklock, os.path.join(d, "job.lock"), marker, user=BOB)
    assert rc == 0 and os.path.exists(marker), err
    r = subprocess.run(as_user(BOB) + [FLOCK, "-n", os.path.join(d, "job.lock"), "true"],
                       capture_output=True, text=True, cwd="/", timeout=GRANT_TIMEOUT)
    assert r.returncode != 0 and "No locks available" in r.stderr, r
    assert harness.log_has(m, r"refused \(ENOLCK\) to process [0-9]+ of uid %d" % BOB)


@pytest.mark.parametrize("plant", ["fifo", "another-owner", "writable-by-others"])
def test_a_planted_heartbeat_is_refused_without_blocking(mount, zklock, scratch, plant):
    """Once the heartbeat file is gone (a tmp cleaner), whatever another
    user puts at its path is refused, never believed or waited on: the
    command does not start, and zklock says why (69) at once."""
    m = mount()
    d = harness.lockdir(m)
    with open(os.path.join(d, "probe"), "w") as f:
        path = heartbeat_of(f)[0]
    with open(path, "rb") as f:
        alive = f.read()            # a forgery that reads as alive now
    os.unlink(path)
    if plant == "fifo":             # the daemon's uid, not a regular file
        os.mkfifo(path, 0o644)
    else:
        with open(path, "wb") as f:
            f.write(alive)
        if plant == "another-owner":
            os.chown(path, BOB, BOB)
        else:
            os.chmod(path, 0o666)
    marker = os.path.join(scratch, "ran")
    rc, err = zklock_run(zklock, os.path.join(d, "job"), marker)
    assert rc == 69 and "cannot watch the daemon" in err, (rc, err)
    assert not os.path.exists(marker), "the command ran unwatched"
    os.unlink(path)


def test_the_command_never_starts_before_the_watchdog_is_armed(mount, zklock, scratch):
    """The daemon freezes while zklock asks it for the heartbeat: the
    command has not started (zklock waits in the ioctl), and starts once
    the daemon answers.  gdb stops the daemon in that answer for 2 s."""
    gdb = shutil.which("gdb")
    if not gdb:
        pytest.skip("needs gdb")
    m = mount()
    d = harness.lockdir(m)
    stopped, marker = os.path.join(scratch, "stopped"), os.path.join(scratch, "ran")
    cmds = os.path.join(scratch, "gdb")
    with open(cmds, "w") as f:
        f.write("set pagination off\nset confirm off\n"
                "tbreak zklfs_watchdog_info\ncommands\n"
                "  shell touch %s\n  shell sleep 2\n  detach\n  quit\nend\n"
                "shell touch %s\ncontinue\n" % (stopped, os.path.join(scratch, "ready")))
    g = subprocess.Popen([gdb, "-q", "-batch", "-p", str(m.pid), "-x", cmds],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: os.path.exists(os.path.join(scratch, "ready")), 30,
                 "gdb attached")
        z = spawn([zklock, os.path.join(d, "job"), "touch", marker],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: os.path.exists(stopped), GRANT_TIMEOUT,
                 "the daemon stopped in the watchdog's answer")
        # the frozen daemon holds zklock in the ioctl: no command in the
        # first of its 2 s
        with pytest.raises(AssertionError):
            wait_for(lambda: os.path.exists(marker), 1.0, "the command unwatched")
        out, err = z.communicate(timeout=GRANT_TIMEOUT)
        assert z.returncode == 0 and os.path.exists(marker), err
    finally:
        g.wait(30)


def test_a_heartbeat_that_cannot_be_written_fails_the_mount(daemon_path, zk, scratch,
                                                            test_root):
    """A full tmpfs: the daemon takes the file's blocks at start, so the
    mount fails with one line naming the place, never a SIGBUS later."""
    full = os.path.join(scratch, "full")
    mnt = os.path.join(scratch, "mnt")
    os.mkdir(full)
    os.mkdir(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", full], check=True)
    try:
        with open(os.path.join(full, "filler"), "wb") as f:
            try:
                f.write(bytes(65536))
                f.flush()
            except OSError:
                pass
        env = dict(os.environ, ZKLOCKFS_HEARTBEAT_DIR=full)
        r = subprocess.run([daemon_path, "-f", "-o", "create_root",
                            zk.hostport + test_root, mnt],
                           capture_output=True, text=True, env=env, timeout=30)
        assert r.returncode == 1, (r.returncode, r.stderr)
        lines = [ln for ln in r.stderr.splitlines() if "watchdog file" in ln]
        assert len(lines) == 1 and full in lines[0] and "No space left" in lines[0], \
            r.stderr
    finally:
        if harness.mount_entry(mnt):
            subprocess.run(["fusermount3", "-u", mnt])
        subprocess.run(["umount", full])
