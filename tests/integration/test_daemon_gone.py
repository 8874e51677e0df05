"""A mount that goes while it holds locks: its daemon killed (kill -9), or
unmounted (SIGTERM, umount -f, a lazy fusermount3 -u, an umount while
another mount namespace holds a copy).

docs/SPEC.md: a dead daemon's locks go to another host once the server
expires its session (within the session timeout and a tick, plus a
hand-over); unmounting closes the session, so the mount's locks go at once,
its pending opens are answered with an error, and the daemon exits 0. The
bounds (TICK, NOTICE, GRANT_LATENCY) and the helpers shared with
test_faults.py are the harness'.
"""

import errno
import os
import signal
import subprocess
import time

import pytest

from harness import (two_mounts, held_and_waited, fusermount, lock_state,
                     GRANT_LATENCY, GRANT_TIMEOUT, NOTICE, PY, RDWR, SLOW, TICK,
                     Lines, fig, kill9, spawn, start_waiter, take,
                     wait_zk_entries, waiting)

# ---------------------------------------------------------------------------
# kill -9 of the daemon holding a lock
# ---------------------------------------------------------------------------

def test_daemon_killed_its_lock_goes_to_another_mount(mount, zkc, request):
    timeout_ms = 4000
    A, B, dA, dB = two_mounts(mount, session_timeout=timeout_ms)
    h, w = held_and_waited(dA, dB, RDWR, 0.3)

    tmo = timeout_ms / 1000.0
    # the session expires T after the server last heard from it (at most
    # when A died), at its next tick; then the hand-over
    bound = tmo + TICK + GRANT_LATENCY
    t0 = time.monotonic()
    A.kill(signal.SIGKILL)
    A.proc.wait(10)
    w.wait_granted(bound + 5.0 * SLOW)
    granted = time.monotonic() - t0
    fig(request, "kill -9 daemon -> other mount granted: %.2f s (session "
        "timeout %d s)" % (granted, timeout_ms // 1000))
    assert granted <= bound, "granted %.2f s after the kill, bound %.2f s " \
        "(session timeout %.0f s + a tick + %.1f s hand-over)" \
        % (granted, bound, tmo, GRANT_LATENCY)
    # the dead mount answers ENOTCONN
    with pytest.raises(OSError) as ei:
        os.stat(A.path)
    assert ei.value.errno == errno.ENOTCONN, ei.value
    with pytest.raises(OSError) as ei:
        os.listdir(A.path)
    assert ei.value.errno == errno.ENOTCONN, ei.value
    # the process that held the lock there dies; then the mount is cleaned
    h.kill()
    assert h.wait_exit(10) is not None
    r = fusermount(A.path)
    assert r.returncode == 0, r.stderr
    assert not A.mounted()
    wait_zk_entries(zkc, B, [w.entry])
    w.release()
    wait_zk_entries(zkc, B, [])


# ---------------------------------------------------------------------------
# clean unmount closes the session at once
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["sigterm", "umount-force", "fusermount-lazy"])
def test_unmount_answers_pending_open_and_releases_at_once(mount, zkc,
                                                           request, how):
    timeout_ms = 10000              # expiry would take >= 10 s
    tmo = timeout_ms / 1000.0
    # "at once": the daemon's stop and a hand-over; an expiry would take T
    bound = NOTICE + GRANT_LATENCY
    assert bound < tmo - 1.0, "the bound would not tell a release from an expiry"
    A, B, dA, dB = two_mounts(mount, session_timeout=timeout_ms)
    h = take(dA, "h", RDWR)         # held on A
    wa = start_waiter(dA, "wa")     # pending open on A
    wb = start_waiter(dB, "wb")     # waiting on B, behind both
    wa.assert_waiting(0.3)
    assert waiting(wb)

    if how == "fusermount-lazy":
        # an unmount of a mount with open files is refused, as anywhere
        r = fusermount(A.path)
        assert r.returncode != 0 and b"busy" in r.stderr, r
        assert A.mounted() and A.proc.poll() is None
    t0 = time.monotonic()
    if how == "sigterm":
        A.kill(signal.SIGTERM)
    elif how == "fusermount-lazy":
        # detached from this namespace: the session ends at once, the
        # open files left on the detached mount notwithstanding
        r = fusermount(A.path, lazy=True)
        assert r.returncode == 0, r
    else:
        r = subprocess.run(["umount", "-f", A.path], capture_output=True,
                           timeout=20)
        # busy (h holds a file there) but the connection is aborted
    err = wa.wait_error(5 * SLOW)   # an error, not a hang
    answered = time.monotonic() - t0
    # up to just short of an expiry, so that a late grant is measured
    wb.wait_granted(max(0.1, t0 + tmo - 1.0 - time.monotonic()))
    granted = time.monotonic() - t0
    rc = A.proc.wait(5 * SLOW)
    fig(request, "%s of a mount holding a lock -> its pending open fails "
        "(%s): %.3f s, waiter on other mount granted: %.3f s "
        "(session timeout %d s); daemon exit status %d"
        % (how, err, answered, granted, timeout_ms // 1000, rc))
    assert granted <= bound, "granted %.2f s after the %s, bound " \
        "%.2f s (session timeout %.0f s)" % (granted, how, bound, tmo)
    # a stop asked for (SIGTERM, umount -f, umount -l) is a clean exit, as systemd
    # expects of a unit's main process
    assert rc == 0
    # h still has its file open (on the dead or detached mount);
    # its lock is gone all the same
    assert h.alive()
    h.kill()
    h.wait_exit(5)
    wait_zk_entries(zkc, B, [wb.entry])
    wb.release()
    wait_zk_entries(zkc, B, [])


# A process in a mount namespace of its own (as systemd's PrivateTmp= and
# containers make them) that holds a lock through its copy of the mount.
IN_NS = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY)
print("held", flush=True)
sys.stdin.readline()
try:
    os.write(fd, b"x")
    print("ok", flush=True)
except OSError as e:
    print(e.errno, flush=True)
"""


def test_umount_ends_the_session_whatever_other_namespaces_hold(mount, zkc, request):
    """Another mount namespace holds a copy of the mount, and a lock through
    it: the kernel tells the daemon nothing when this namespace's mount
    goes. The daemon watches its own mount table: the umount here (not
    busy: no file is open on it in this namespace) ends the session at
    once, the waiter on the other mount is granted, and the copy reads
    ENOTCONN."""
    timeout_ms = 10000
    tmo = timeout_ms / 1000.0
    bound = NOTICE + GRANT_LATENCY
    A, B, dA, dB = two_mounts(mount, session_timeout=timeout_ms)
    p = spawn(["unshare", "-m", "--propagation", "private", PY, "-c", IN_NS,
               os.path.join(dA, "ns")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = Lines(p.stdout)
    try:
        assert out.readline(GRANT_TIMEOUT) == "held"
        wb = start_waiter(dB, "wb")
        assert waiting(wb)
        t0 = time.monotonic()
        r = fusermount(A.path)
        assert r.returncode == 0, r
        wb.wait_granted(max(0.1, t0 + tmo - 1.0 - time.monotonic()))
        granted = time.monotonic() - t0
        rc = A.proc.wait(5 * SLOW)
        fig(request, "umount while another namespace holds a copy and a lock "
            "through it -> waiter on other mount granted: %.3f s; daemon exit "
            "status %d" % (granted, rc))
        assert granted <= bound, "granted %.2f s after the umount, bound %.2f s" \
            % (granted, bound)
        assert rc == 0
        p.stdin.write(b"go\n")
        p.stdin.flush()
        assert out.readline(GRANT_TIMEOUT) == str(errno.ENOTCONN)
        wb.release()
    finally:
        kill9(p)
    wait_zk_entries(zkc, B, [])
