"""zklock --watch and LOCKDIR/.holders: who holds a lock, told at each
change to any number of observers, from one ZooKeeper watch per lock per
mount (the "observe" side of leader election)."""

import json
import os
import re
import select
import subprocess
import time

import harness
from harness import (GRANT_TIMEOUT, Lines, lockdir, record_figure, seen_dir, spawn,
                     take, wait_for)


def mntr(zk, key):
    for line in zk.four("mntr").splitlines():
        if line.startswith(key + "\t"):
            return int(line.split("\t")[1])
    raise AssertionError("mntr has no " + key)


def watcher(zklock, d, *opts):
    p = spawn([zklock, "--watch", *opts, d], stdin=subprocess.DEVNULL,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p, Lines(p.stdout)


def test_watch_prints_each_change_of_holder_from_another_mount(mount, zklock):
    a, b = mount(), mount()
    da = lockdir(a)
    db = seen_dir(b)
    p, out = watcher(zklock, db)
    assert out.readline(GRANT_TIMEOUT).endswith(": nobody holds it")
    h = take(da, "leader")
    line = out.readline(GRANT_TIMEOUT)
    assert "held by leader-lock-" in line and "exclusive" in line, line
    h.release()
    assert out.readline(GRANT_TIMEOUT).endswith(": nobody holds it")
    s1, s2 = take(da, "r1", harness.SHARED), take(da, "r2", harness.SHARED)
    wait_for(lambda: "r2-read-lock-" in (out.readline(GRANT_TIMEOUT) or ""),
             GRANT_TIMEOUT, "both shared holders named")
    s1.release()
    s2.release()
    p.kill()


def test_a_follower_started_before_any_candidate_waits_for_the_lock(mount, zklock):
    """--watch of a lock nobody made yet makes it, as the first candidate's
    zklock would, and tells the first holder when one comes."""
    a, b = mount(), mount()
    dw = os.path.join(b.path, "election")
    p, out = watcher(zklock, dw)
    assert out.readline(GRANT_TIMEOUT).endswith(": nobody holds it")
    h = take(seen_dir(a, "election"), "leader")
    line = out.readline(GRANT_TIMEOUT)
    assert "held by leader-lock-" in line, line
    h.release()
    p.kill()


def test_watch_json_one_object_a_line(mount, zklock):
    m = mount()
    d = lockdir(m)
    p, out = watcher(zklock, d, "--json")
    first = json.loads(out.readline(GRANT_TIMEOUT))
    assert first["lock"] == d and first["holders"] == [], first
    h = take(d, "leader")
    obj = json.loads(out.readline(GRANT_TIMEOUT))
    [holder] = obj["holders"]
    assert holder["entry"].startswith("leader-lock-") and holder["kind"] == "exclusive"
    assert holder["pid"] == str(os.getpid()) or holder["pid"].isdigit(), holder
    h.release()
    p.kill()


def test_holders_handle_polls_and_rereads(mount):
    """The documented handle: open LOCKDIR/.holders read-only, poll() for
    POLLPRI, pread() from 0."""
    m = mount()
    d = lockdir(m)
    fd = os.open(os.path.join(d, ".holders"), os.O_RDONLY)
    try:
        assert os.pread(fd, 4096, 0) == b""
        p = select.poll()
        p.register(fd, select.POLLPRI)
        assert p.poll(0) == [], "readable with nothing new"
        h = take(d, "x")
        assert p.poll(GRANT_TIMEOUT * 1000), "no POLLPRI at the grant"
        assert os.pread(fd, 4096, 0).startswith(b"x-lock-")
        assert p.poll(0) == [], "still readable after the text was read"
        h.release()
        assert p.poll(GRANT_TIMEOUT * 1000)
        assert os.pread(fd, 4096, 0) == b""
        for flags in (os.O_WRONLY, os.O_RDWR):
            try:
                os.open(os.path.join(d, ".holders"), flags)
                raise AssertionError(".holders opened for writing")
            except OSError as e:
                assert e.errno in (13, 30), e     # EACCES (or EROFS)
        assert ".holders" not in os.listdir(d)
    finally:
        os.close(fd)


def test_holders_and_state_list_no_xattr_they_cannot_get(mount):
    """LOCKDIR/.holders and .state are no entries: listxattr names nothing
    on them that getxattr would refuse (getfattr -d reads each listed name)."""
    m = mount()
    d = lockdir(m)
    for name in (".holders", ".state"):
        path = os.path.join(d, name)
        assert os.listxattr(path) == [], name
        try:
            os.getxattr(path, "user.zklockfs.seq")
            raise AssertionError(name + " has a seq")
        except OSError as e:
            assert e.errno == 61, e     # ENODATA


def in_poll(tid):
    """Is thread @tid of this process blocked in poll(2)/ppoll(2)?"""
    with open("/proc/self/task/%d/syscall" % tid) as f:
        return f.read().split()[0] in POLL_SYSCALLS


# poll and ppoll on x86_64, ppoll on aarch64 (no poll there)
POLL_SYSCALLS = {"x86_64": ("7", "271"), "aarch64": ("73",)}.get(os.uname().machine,
                                                                ("7", "271", "73"))


def test_holders_poller_is_woken_by_the_change(mount):
    """A poll() already blocked on .holders when the holder changes is woken
    by the mount (its notify), not only answered when asked again: the
    lock is taken only once this thread sleeps in poll()."""
    import threading
    m = mount()
    d = lockdir(m)
    fd = os.open(os.path.join(d, ".holders"), os.O_RDONLY)
    held = []
    me = threading.get_native_id()

    def take_when_polling():
        wait_for(lambda: in_poll(me), GRANT_TIMEOUT, "the test's poll() asleep")
        held.append(take(d, "x"))
    t = threading.Thread(target=take_when_polling)
    try:
        os.pread(fd, 4096, 0)
        p = select.poll()
        p.register(fd, select.POLLPRI)
        t.start()
        assert p.poll(GRANT_TIMEOUT * 1000), "the sleeping poller was never woken"
        t.join()
        assert os.pread(fd, 4096, 0).startswith(b"x-lock-")
    finally:
        t.join()
        for h in held:
            h.release()
        os.close(fd)


def test_one_watch_per_lock_and_mount_whatever_the_observers(mount, zk, zklock):
    a, b = mount(session_timeout=30000), mount(session_timeout=30000)
    da = lockdir(a)
    db = seen_dir(b)
    figures = {}
    base = mntr(zk, "zk_watch_count")
    procs = []
    for n in (1, 20):
        fresh = []
        while len(procs) < n:
            procs.append(watcher(zklock, db))
            fresh.append(procs[-1])
        for _, out in fresh:        # each says it once at its start
            assert "nobody holds it" in out.readline(GRANT_TIMEOUT)
        watches = mntr(zk, "zk_watch_count") - base
        before = mntr(zk, "zk_cnt_t_read_per_namespace")
        h = take(da, "leader")
        for _, out in procs:        # every observer told
            line = out.readline(GRANT_TIMEOUT)
            while line and "held by leader-lock-" not in line:
                line = out.readline(GRANT_TIMEOUT)
            assert line, "an observer missed the grant"
        reads = mntr(zk, "zk_cnt_t_read_per_namespace") - before
        h.release()
        for _, out in procs:
            line = out.readline(GRANT_TIMEOUT)
            while line and "nobody holds it" not in line:
                line = out.readline(GRANT_TIMEOUT)
        figures[n] = (watches, reads)
        record_figure("zklock --watch, %d observer%s on one mount: the server "
                      "holds %d watch%s more; one grant costs %d read requests"
                      % (n, "s" if n > 1 else "", watches, "es" if watches != 1 else "",
                         reads))
    for p, _ in procs:
        p.kill()
    assert figures[1][0] == figures[20][0], figures
    assert figures[20][1] <= figures[1][1] + 4, figures


def test_a_waiting_zklock_verbose_says_who_holds_it_and_its_place(mount, zklock):
    a, b = mount(), mount()
    da = lockdir(a)
    db = seen_dir(b)
    h = take(da, "holder")
    p = spawn([zklock, "--verbose", db, "echo", "ran"], stdin=subprocess.DEVNULL,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = Lines(p.stderr)
    line = err.readline(GRANT_TIMEOUT)
    assert line.startswith("zklock: waiting for %s: place 2 of 2; held by holder-lock-" % db) \
        and re.search(r"\(host [^,]+, pid \d+, ", line), line
    record_figure("a waiting zklock --verbose says: %s" % line)
    h.release()
    out, _ = p.communicate(timeout=GRANT_TIMEOUT)
    assert p.returncode == 0 and out == b"ran\n"


def test_a_verbose_zklock_whose_command_ends_at_once_ends_too(mount, zklock):
    """zklock's helper threads (what a waiting zklock shows, the watchdog)
    block every signal: a SIGCHLD, or -w's SIGALRM, taken by one of them
    would never reach the main thread's signalfd or open()."""
    m = mount()
    d = lockdir(m)
    for i in range(8):
        r = subprocess.run([zklock, "--verbose", d, "true"], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=GRANT_TIMEOUT)
        assert r.returncode == 0, r


def test_a_waiting_zklock_on_a_terminal_fits_its_line_to_it(mount, zklock):
    """On an 80-column terminal the waiting line is cut to 79 columns:
    one that wrapped left its first rows behind at each rewrite."""
    import fcntl
    import struct
    import termios
    a, b = mount(), mount()
    da = lockdir(a)
    db = seen_dir(b)
    h = take(da, "a-holder-with-a-rather-long-name-to-make-the-line-long")
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        p = spawn([zklock, db, "echo", "ran"], stdin=subprocess.DEVNULL,
                  stdout=subprocess.PIPE, stderr=slave)
        seen = b""
        deadline = time.monotonic() + GRANT_TIMEOUT
        while b"waiting for" not in seen and time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.5)
            if r:
                seen += os.read(master, 4096)
        h.release()
        out, _ = p.communicate(timeout=GRANT_TIMEOUT)
        assert p.returncode == 0 and out == b"ran\n"
        rows = [r for r in seen.split(b"\r\x1b[K") if r]
        assert rows and all(len(r.decode()) < 80 for r in rows), seen
        assert rows[0].startswith(b"zklock: waiting for"), seen
    finally:
        os.close(master)
        os.close(slave)
