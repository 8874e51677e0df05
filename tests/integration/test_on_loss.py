"""A lost lock ends the work that holds it (docs/SPEC.md, "When the lock
is lost", on_loss).

flock(1), a shell's `exec 9>` and most scripts never look at their
descriptor: with on_loss=end (the default on a lockfiles mount) the mount
ends every process that has the holding open file description open at
the loss, and their descendants, and no one else.  Each job here writes
a beat (CLOCK_MONOTONIC, which every process of the host shares) every
20 ms; the other host's grant is taken on the same clock.
"""

import fcntl
import os
import shutil
import signal
import subprocess
import time

import pytest

import harness
from harness import GRANT_TIMEOUT, PY, SLOW, spawn, wait_for

FLOCK = shutil.which("flock") or "/usr/bin/flock"
TELL = 0x5a06                   # ZKLFS_IOC_TELL (abi/zklockfs.h)
STATE = 0x80405a01              # ZKLFS_IOC_STATE

# A job: its monotonic time, a line every 20 ms, into the file argv[1].
BEAT = r'''
import sys, time
with open(sys.argv[1], "a") as f:
    while True:
        f.write("%.6f\n" % time.monotonic()); f.flush()
        time.sleep(0.02)
'''

# Holds the lock on argv[1] until killed: prints "held" once it does.
HOLD = r'''
import fcntl, sys
f = open(sys.argv[1], "a+")
fcntl.flock(f, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
'''


def hosts(mount, proxy=None, opts=("lockfiles",), timeout_ms=4000):
    """The host under test (through @proxy if given) and another one, both
    mounting one root; the folder "cron" made: its path on each."""
    a = mount(connect=proxy.hostport if proxy else None, opts=opts,
              session_timeout=timeout_ms)
    b = mount(opts=opts, session_timeout=timeout_ms)
    os.mkdir(os.path.join(a.path, "cron"))
    wait_for(lambda: os.path.isdir(os.path.join(b.path, "cron")), GRANT_TIMEOUT,
             "the folder on the other host")
    return a, b, os.path.join(a.path, "cron"), os.path.join(b.path, "cron")


def last_beat(path):
    with open(path) as f:
        lines = f.read().split()
    return float(lines[-1]) if lines else None


def wait_beating(path):
    wait_for(lambda: os.path.exists(path) and last_beat(path) is not None,
             GRANT_TIMEOUT, "the job to start")


def gone(pid):
    """Has the process @pid ended (a zombie counts: it runs nothing)?"""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def opened(path):
    """A process that has @path open, locking nothing, until its stdin ends."""
    p = spawn([PY, "-c", "import sys; f = open(sys.argv[1]); print('open', flush=True); "
               "sys.stdin.read()", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert harness.Lines(p.stdout).readline(GRANT_TIMEOUT) == "open"
    return p


def other_host_waits(path):
    """flock(1) waiting for @path on the other host: it prints the instant
    it was granted."""
    return spawn([FLOCK, path, PY, "-c", "import time; print('%.6f' % time.monotonic())"],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def jobs(lock, beat):
    return {
        "flock-command": [FLOCK, "-n", lock, PY, "-c", BEAT, beat],
        # -o: the command runs without the descriptor, a descendant only
        "flock-o-command": [FLOCK, "-o", "-n", lock, PY, "-c", BEAT, beat],
        "exec-9": ["bash", "-c", 'exec 9>"$1"; flock -n 9 || exit 1; "$2" -c "$3" "$4"; '
                   'echo survived', "-", lock, PY, BEAT, beat],
    }


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", ["flock-command", "flock-o-command", "exec-9"])
def test_a_cut_off_hosts_job_is_dead_before_the_other_hosts_grant(
        mount, proxy, scratch, request, how):
    """The relay to ZooKeeper stops forwarding: the mount declares its
    locks lost within the session timeout less the margin, and ends the
    job (and the flock(1) or shell that holds the description) before
    the other host's identical job is granted."""
    px = proxy()
    cut, other, dcut, dother = hosts(mount, px)
    beat = os.path.join(scratch, "beat")
    job = spawn(jobs(os.path.join(dcut, "nightly.lock"), beat)[how],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_beating(beat)
    reader = opened(os.path.join(dcut, "nightly.lock"))     # a monitor's
    waiter = other_host_waits(os.path.join(dother, "nightly.lock"))
    wait_for(lambda: os.getxattr(dother + "/nightly.lock",
                                     "user.zklockfs.queue").count(b"\n") == 2,
             GRANT_TIMEOUT, "the other host's entry queued")
    t_cut = time.monotonic()
    px.blackhole()
    out, err = waiter.communicate(timeout=30 * SLOW)
    assert waiter.returncode == 0, err
    granted = float(out.split()[-1])
    job.wait(timeout=GRANT_TIMEOUT)
    last = last_beat(beat)
    harness.fig(request, "cut-off host, %s: cut at 0, last beat %+.3f s, other host's "
                "grant %+.3f s" % (how, last - t_cut, granted - t_cut))
    assert job.returncode == -signal.SIGKILL, (job.returncode, job.stdout.read())
    # the mount declares the loss at the session timeout less the margin
    # (0.4 s) after it last heard the server, which expires the session no
    # earlier than the timeout: the kill comes a margin ahead (a beat is
    # 20 ms, hence the tenth spared)
    assert granted - last >= 0.9 * 0.4, \
        "the job's last beat only %.3f s before the other host's grant" % (granted - last)
    time.sleep(0.1)
    assert last_beat(beat) == last, "the job's child still beats"
    assert harness.log_has(cut, r"lock .*nightly\.lock.* lost \(silent\): ended [1-9]"), \
        cut.log_tail()
    assert not gone(reader.pid), "a reader of the lock file was ended"
    reader.stdin.close()
    reader.wait(timeout=GRANT_TIMEOUT)
    px.heal()


def test_only_the_holding_description_is_ended(mount, zkc, scratch):
    """The holder's entry is deleted by someone else: the mount ends the
    holder and its child, and neither another waiter of the same host on
    its own description nor a reader that has the file open."""
    a, b, da, db = hosts(mount)
    lock = os.path.join(da, "one.lock")
    beat = os.path.join(scratch, "beat")
    holder = spawn([FLOCK, "-n", lock, PY, "-c", BEAT, beat],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_beating(beat)
    reader = opened(lock)
    waiter = spawn([PY, "-c", HOLD, lock], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE)
    wait_for(lambda: os.getxattr(lock, "user.zklockfs.queue").count(b"\n") == 2,
             GRANT_TIMEOUT, "the waiter's entry queued")
    zpath = a.zkpath("cron/one.lock")
    first = sorted(zkc.get_children(zpath), key=harness.seq_of)[0]
    zkc.delete(zpath + "/" + first)
    holder.wait(timeout=GRANT_TIMEOUT)
    assert holder.returncode == -signal.SIGKILL
    assert harness.Lines(waiter.stdout).readline(GRANT_TIMEOUT) == "held"
    assert not gone(reader.pid) and not gone(waiter.pid)
    waiter.stdin.close()
    reader.stdin.close()
    assert waiter.wait(timeout=GRANT_TIMEOUT) == 0
    assert reader.wait(timeout=GRANT_TIMEOUT) == 0
    assert harness.log_has(a, r"lost \(deleted\): ended 2 processes"), a.log_tail()


def test_a_holder_that_asks_to_be_told_runs_on(mount, zkc):
    """ZKLFS_IOC_TELL: a program that steps down by itself is told
    (POLLERR, EIO), never ended; here the test itself holds."""
    a, b, da, db = hosts(mount)
    with open(os.path.join(da, "told.lock"), "w") as f:
        fcntl.ioctl(f, TELL)
        fcntl.flock(f, fcntl.LOCK_EX)
        zpath = a.zkpath("cron/told.lock")
        for kid in zkc.get_children(zpath):
            zkc.delete(zpath + "/" + kid)
        wait_for(lambda: fcntl.ioctl(f, STATE, bytes(64)).rstrip(b"\0") == b"lost",
                 GRANT_TIMEOUT, "the loss told")
    assert not harness.log_has(a, r"ended [0-9]+ processes")


@pytest.mark.parametrize("opts, ended", [((), False), (("on_loss=end",), True)])
def test_a_plain_mount_tells_unless_asked_to_end(mount, zkc, opts, ended):
    """A lock directory's entry taken by a shell's `exec 9>`: on a plain
    mount (on_loss=tell) the shell runs on after the loss; with
    on_loss=end it is ended with its job."""
    m = mount(opts=opts)
    d = os.path.join(m.path, "L")
    os.mkdir(d)
    sh = spawn(["bash", "-c", 'exec 9>"$1/job"; echo held; sleep 300', "-", d],
               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert harness.Lines(sh.stdout).readline(GRANT_TIMEOUT) == "held"
    (entry,) = os.listdir(d)
    zkc.delete(m.zkpath("L/" + entry))
    if ended:
        sh.wait(timeout=GRANT_TIMEOUT)
        assert sh.returncode == -signal.SIGKILL
    else:
        time.sleep(0.5 * SLOW)      # a kill would come at once: none may
        assert sh.poll() is None
        sh.kill()
        sh.wait()



def test_a_holder_the_daemon_could_not_end_is_refused(mount):
    """A daemon in its own pid namespace is told pid 0 for a caller it
    cannot see, and could not end it: with on_loss=end its lock is refused
    (ENOLCK, one line in the log) rather than granted; one that asks to be
    told (zklock) is granted."""
    m = mount(opts=("lockfiles",), wrap=["unshare", "--pid", "--fork", "--kill-child"])
    lock = m.p("blind.lock")
    r = subprocess.run([FLOCK, "-n", lock, "echo", "ran"], capture_output=True,
                       text=True, timeout=GRANT_TIMEOUT, cwd="/")
    assert r.returncode != 0 and "ran" not in r.stdout, r
    assert harness.log_has(m, r"refused \(ENOLCK\) to a process outside its pid namespace")
    with open(lock, "w") as f:
        fcntl.ioctl(f, TELL)
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


@pytest.mark.timeout(60)
def test_an_orderly_stop_ends_the_holders_before_the_sessions_close(mount, scratch, zklock):
    """SIGTERM to the daemon: every holder is sent SIGTERM (zklock, which
    asked to be told of a loss, too: it passes it on to its command), one
    that ignores it SIGKILL after kill_grace, and only then are the
    sessions closed: the other host is granted after the last beat."""
    a = mount(opts=("lockfiles", "kill_grace=1000"))
    b = mount(opts=("lockfiles",))
    da, db = os.path.join(a.path, "cron"), os.path.join(b.path, "cron")
    os.mkdir(da)
    wait_for(lambda: os.path.isdir(db), GRANT_TIMEOUT, "the folder on the other host")
    polite, stubborn = os.path.join(scratch, "polite"), os.path.join(scratch, "stubborn")
    p = spawn([FLOCK, "-n", os.path.join(da, "p.lock"), PY, "-c", BEAT, polite])
    s = spawn(["bash", "-c", 'trap "" TERM; exec 9>"$1"; flock -n 9 || exit 1; '
               '"$2" -c "$3" "$4"', "-", os.path.join(da, "s.lock"), PY, BEAT, stubborn])
    wait_beating(polite)
    wait_beating(stubborn)
    # a waiter of the same host, behind the polite holder: never granted
    # once the stop has begun
    late = os.path.join(scratch, "late")
    local = spawn([FLOCK, os.path.join(da, "p.lock"), PY, "-c", BEAT, late],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    z = spawn([zklock, os.path.join(da, "z.lock"), "sh", "-c",
               'trap "echo got-term; exit 5" TERM; echo ready; while :; do sleep 0.05; done'],
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert harness.Lines(z.stdout).readline(GRANT_TIMEOUT) == "ready"
    waiter = other_host_waits(os.path.join(db, "s.lock"))
    wait_for(lambda: os.getxattr(os.path.join(db, "s.lock"),
                                 "user.zklockfs.queue").count(b"\n") == 2,
             GRANT_TIMEOUT, "the other host's entry queued")
    wait_for(lambda: os.getxattr(os.path.join(da, "p.lock"),
                                 "user.zklockfs.queue").count(b"\n") == 2,
             GRANT_TIMEOUT, "the local waiter queued")
    t_stop = time.monotonic()
    a.kill(signal.SIGTERM)
    out, err = waiter.communicate(timeout=30 * SLOW)
    assert waiter.returncode == 0, err
    granted = float(out.split()[-1])
    assert p.wait(timeout=GRANT_TIMEOUT) == -signal.SIGTERM
    assert s.wait(timeout=GRANT_TIMEOUT) == -signal.SIGKILL
    last = last_beat(stubborn)
    assert last - t_stop >= 0.9, "SIGKILL came before kill_grace"
    assert last < granted, "the other host was granted %.3f s before the last beat" \
        % (last - granted)
    local.communicate(timeout=GRANT_TIMEOUT)
    assert local.returncode != 0 and not os.path.exists(late), \
        "a waiter was granted while the holders were being ended"
    out, err = z.communicate(timeout=GRANT_TIMEOUT)
    # the command's own status, or zklock's for the SIGTERM it passed on
    assert z.returncode in (5, 128 + signal.SIGTERM) and "got-term" in out, \
        (z.returncode, out, err)
    assert a.proc.wait(timeout=GRANT_TIMEOUT) == 0
    assert harness.log_has(a, r"stopping: 3 locks held: [0-9]+ processes that held them "
                              r"sent SIGTERM, 1 of them SIGKILL after kill_grace=1000 ms"), \
        a.log_tail()


@pytest.mark.timeout(60)
def test_a_second_signal_ends_the_holders_at_once(mount, scratch):
    """A second SIGTERM while the stop waits out kill_grace: the holders
    that are left are sent SIGKILL then, not at the end of the grace."""
    a = mount(opts=("lockfiles", "kill_grace=20000"))
    d = os.path.join(a.path, "job")
    os.mkdir(d)
    lock, told = os.path.join(d, "s.lock"), os.path.join(scratch, "told")
    s = spawn(["bash", "-c", 'trap "touch \\"$2\\"" TERM; exec 9>"$1"; flock -n 9 || exit 1; '
               'echo held; while :; do sleep 0.05 9>&-; done', "-", lock, told],
              stdout=subprocess.PIPE, text=True)
    assert harness.Lines(s.stdout).readline(GRANT_TIMEOUT) == "held"
    a.kill(signal.SIGTERM)
    wait_for(lambda: os.path.exists(told), GRANT_TIMEOUT, "the holder told to stop")
    t_again = time.monotonic()
    a.kill(signal.SIGTERM)
    assert s.wait(timeout=GRANT_TIMEOUT) == -signal.SIGKILL
    assert time.monotonic() - t_again < 10, "SIGKILL waited for kill_grace"
    assert a.proc.wait(timeout=GRANT_TIMEOUT) == 0
