"""zklock(1), the flock(1)-like tool: exit codes, -n/-E/-w, -s, the lock
directory (made if missing, refused if not zklockfs), --list, bad input,
-L, --on-revoke, a user the mount refuses told of allow_other.

What the command sees and what becomes of it (its environment and
signals, a lost lock, nested zklocks, --confirm, its process tree) is in
test_zklock_command.py; how a test runs zklock (Run, zk(), the teardown
fixtures) in zklockrun.py.
"""

import errno
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest

import harness
import zkclient
from harness import (lock_state, SLOW, GRANT_TIMEOUT, Lines, entries, getxattr_str, lockdir,
                     parse_kv, read_file, spawn, take, wait_for, wait_no_entries)
from zklockrun import (EX_USAGE, EX_NOINPUT, RUN_TIMEOUT, GIVE_UP, Run, no_sanitizer_report,
                       wait_entry_of, wait_waiting_in_open, zk)
from zklockrun import kill_descendants, no_sanitizer_report_from_any_zklock  # noqa: F401 (autouse)


# --- exit status ----------------------------------------------------------------

def test_command_status_passes_through(mount, zklock):
    m = mount()
    d = m.p("L")
    assert zk(zklock, d, "true")[0] == 0
    assert zk(zklock, d, "sh", "-c", "exit 7")[0] == 7
    assert zk(zklock, d, "-c", "exit 3")[0] == 3
    assert zk(zklock, "-c", "exit 4", d)[0] == 4
    assert zk(zklock, "--command", "exit 5", d)[0] == 5
    # killed by a signal: 128+N, like flock(1) and shells
    assert zk(zklock, d, "sh", "-c", "kill -USR1 $$")[0] == 128 + signal.SIGUSR1
    assert zk(zklock, d, "sh", "-c", "kill -KILL $$")[0] == 128 + signal.SIGKILL
    # the command's own options are its own
    rc, out, _ = zk(zklock, d, "echo", "-n", "-s", "-w", "x")
    assert (rc, out) == (0, "-s -w x")
    wait_no_entries(d)


def test_a_lock_directory_named_after_the_host_is_refused(mount, zklock):
    """`zklock locks/deploy/$HOSTNAME cmd` would give each host a lock
    directory of its own: refused (64, saying why, nothing made) unless
    --per-host."""
    m = mount()
    d = m.p("deploy")
    os.mkdir(d)
    for host in (os.uname().nodename, os.uname().nodename.split(".")[0]):
        rc, out, err = zk(zklock, os.path.join(d, host), "echo", "ran")
        assert rc == EX_USAGE and "host" in err and out == "", (rc, err)
        assert not os.path.exists(os.path.join(d, host))
    rc, out, _ = zk(zklock, "--per-host", os.path.join(d, os.uname().nodename), "echo", "ran")
    assert (rc, out) == (0, "ran\n")


def test_a_per_host_lock_beside_the_cluster_lock_of_its_name(mount, zklock):
    """zklock --per-host LOCK/$HOSTNAME makes a lock directory named as this
    host's entry in LOCK would be: the cluster lock LOCK is then refused,
    naming the collision and -N (64), not "File exists" (71); with -N both
    work."""
    m = mount()
    d = m.p("pd")
    host = os.uname().nodename
    assert zk(zklock, "--per-host", os.path.join(d, host), "true")[0] == 0
    rc, out, err = zk(zklock, d, "echo", "ran")
    assert rc == EX_USAGE and "-N NAME" in err and host in err and out == "", (rc, err)
    rc, out, _ = zk(zklock, "-N", "cluster", d, "echo", "ran")
    assert (rc, out) == (0, "ran\n")


def test_command_not_found_or_not_executable(mount, zklock, scratch):
    m = mount()
    d = m.p("L")
    rc, _, err = zk(zklock, d, "/nonexistent/zklock-no-such-command")
    assert rc == 127
    assert "zklock-no-such-command" in err
    assert zk(zklock, d, "zklock-no-such-command-in-path")[0] == 127
    f = os.path.join(scratch, "not-executable")
    with open(f, "w") as fh:
        fh.write("#!/bin/sh\nexit 0\n")
    os.chmod(f, 0o644)
    assert zk(zklock, d, f)[0] == 126
    wait_no_entries(d)


def test_lock_is_released_when_zklock_ends(mount, zklock, scratch):
    m = mount()
    d = m.p("L")
    go = os.path.join(scratch, "go")
    r = Run(zklock, "-N", "me", d, "sh", "-c",
            'echo in; i=0; while [ ! -e "$1" ] && [ $i -lt 400 ]; do '
            'sleep 0.05; i=$((i+1)); done', "sh", go)
    assert r.expect_line() == "in"
    e = wait_entry_of(d, "me")
    assert lock_state(os.path.join(d, e)) == "held"
    assert getxattr_str(d, harness.XATTR_HOLDERS) == e
    # holder data: the daemon names zklock itself as the holder, by the
    # name of the command it runs (zklock's own once it holds)
    kv = parse_kv(read_file(os.path.join(d, e)))
    assert kv["pid"] == str(r.pid)
    assert kv["cmd"] == "sh", kv
    with open("/proc/%d/comm" % r.pid) as f:
        assert f.read().strip() == "zklock"
    open(go, "w").close()
    assert r.finish() == 0
    wait_no_entries(d)


# --- -n, -E, -w -------------------------------------------------------------------

def test_nonblock_conflict_exit_codes(mount, zklock):
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    rc, _, err = zk(zklock, "-n", d, "echo", "ran")
    assert rc == 1 and "ran" not in err
    assert zk(zklock, "-n", "-E", "9", d, "true")[0] == 9
    assert zk(zklock, "--nonblock", "--conflict-exit-code", "0", d, "false")[0] == 0
    assert zk(zklock, "-w", "0", d, "true")[0] == 1
    rc, out, err = zk(zklock, "-n", "--verbose", d, "echo", "ran")
    assert rc == 1 and out == ""
    assert "failed to get lock" in err
    assert entries(d) == [h.entry]
    h.release()
    # free again: -n takes it at once
    rc, out, _ = zk(zklock, "-n", d, "echo", "ran")
    assert (rc, out) == (0, "ran\n")
    wait_no_entries(d)


def test_timeout_gives_up_and_leaves_no_entry(mount, zklock):
    """-w SECONDS: zklock gives up after SECONDS of waiting, not before
    (counted from before it started, so its start-up only adds), and within
    GIVE_UP after (counted from when its entry was seen: its wait had begun
    by then)."""
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    # then fractions, long form, own conflict code
    for opts, w, name, rc in ((["-w", "1"], 1.0, "late", 1),
                              (["--timeout", "0.5", "-E", "42"], 0.5,
                               "later", 42)):
        r = Run(zklock, *opts, "-N", name, d, "echo", "ran")
        wait_entry_of(d, name)
        waiting_since = time.monotonic()
        assert r.finish() == rc
        ended = r.t0 + r.elapsed
        assert r.elapsed >= w - 0.01, "-w %s gave up %.2f s after zklock " \
            "started" % (w, r.elapsed)
        assert ended - waiting_since <= w + GIVE_UP, "-w %s: still waiting " \
            "%.2f s after its entry was seen (bound %.2f s)" \
            % (w, ended - waiting_since, w + GIVE_UP)
        assert r.out == ""
        assert entries(d) == [h.entry]
    h.release()
    wait_no_entries(d)


def test_timeout_holder_releases_in_time(mount, zklock):
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    r = Run(zklock, "-w", str(10 * SLOW), "-N", "patient", d, "echo", "ran")
    e = wait_entry_of(d, "patient")
    assert lock_state(os.path.join(d, e)) == "waiting"
    wait_waiting_in_open(r)
    h.release()
    assert r.finish() == 0
    assert r.out == "ran\n"
    wait_no_entries(d)


def test_signal_while_waiting_ends_the_wait(mount, zklock):
    m = mount()
    d = lockdir(m)
    h = take(d, "holder")
    for sig in (signal.SIGTERM, signal.SIGINT):
        r = Run(zklock, "-N", "w", d, "echo", "ran")
        e = wait_entry_of(d, "w")
        os.kill(r.pid, sig)
        assert r.finish() == 128 + sig
        assert r.out == ""
        harness.wait_gone(d, e)
    assert entries(d) == [h.entry]
    h.release()


# --- shared -------------------------------------------------------------------------

def test_shared_holders_run_together_exclusive_waits(mount, zklock, scratch):
    m = mount()
    d = m.p("L")
    # each reader announces itself, then waits (bounded) for the other one and
    # for "go": both can only get there if both hold the lock at once
    script = ('touch "$S/in.$1"; i=0; '
              'while [ ! -e "$S/in.$2" ]; do '
              '  i=$((i+1)); [ $i -gt 300 ] && exit 9; sleep 0.05; done; '
              'echo "$ZKLOCK_MODE together"; '
              'while [ ! -e "$S/go" ]; do '
              '  i=$((i+1)); [ $i -gt 600 ] && exit 8; sleep 0.05; done; '
              'rm "$S/in.$1"')
    env = {"S": scratch}
    a = Run(zklock, "-s", "-N", "ra", d, "sh", "-c", script, "sh", "a", "b", env=env)
    b = Run(zklock, "--shared", "-N", "rb", d, "sh", "-c", script, "sh", "b", "a",
            env=env)
    assert a.expect_line() == "shared together"
    assert b.expect_line() == "shared together"
    x = Run(zklock, "-x", "-N", "wx", d, "sh", "-c",
            'ls "$S"/in.* >/dev/null 2>&1 && echo readers-left; echo exclusive',
            env=env)
    e = wait_entry_of(d, "wx")
    assert lock_state(os.path.join(d, e)) == "waiting"
    wait_waiting_in_open(x)
    open(os.path.join(scratch, "go"), "w").close()   # the readers leave
    assert a.finish() == 0
    assert b.finish() == 0
    assert x.finish() == 0
    assert x.out == "exclusive\n"
    wait_no_entries(d)


# --- the lock directory ---------------------------------------------------------------

def test_lock_directory_is_created_if_missing(mount, zklock):
    m = mount()
    d = m.p("a", "b", "c")
    rc, out, _ = zk(zklock, d + "/", "sh", "-c", 'echo "$ZKLOCK_DIR"')
    assert rc == 0
    assert out == d + "\n"
    assert os.path.isdir(d)
    # relative, from inside the mount
    r = subprocess.run([zklock, "x/y", "sh", "-c", 'echo "$ZKLOCK_DIR"'],
                       cwd=m.p("a"), capture_output=True, timeout=RUN_TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == m.p("a", "x", "y") + "\n"
    wait_no_entries(d)


def test_not_a_zklockfs_directory(mount, zklock, scratch):
    m = mount()
    rc, _, err = zk(zklock, scratch, "true")
    assert rc == EX_NOINPUT
    assert "zklockfs" in err
    # nothing is created on a file system that is not zklockfs
    rc, _, _ = zk(zklock, os.path.join(scratch, "sub", "dir"), "true")
    assert rc == EX_NOINPUT
    assert os.listdir(scratch) == []
    assert zk(zklock, "--list", scratch)[0] == EX_NOINPUT
    assert zk(zklock, "--list", m.p("missing"))[0] == EX_NOINPUT
    # an entry is not a lock directory
    os.mkdir(m.p("L"))
    h = take(m.p("L"), "h")
    assert zk(zklock, m.p("L", h.entry), "true")[0] == EX_NOINPUT
    assert zk(zklock, m.p("L", h.entry, "sub"), "true")[0] == EX_NOINPUT
    h.release()


def test_holders_growing_between_size_and_read(mount, zklock):
    """zklock reads an xattr in two calls, its size then its value. When the
    lock directory's holders were empty at the first call and a holder came
    before the second, that second call (size 0) was a size query again and
    zklock wrote past its buffer (an ASan report in the plain suite's
    sanitized run; CI caught it as a shared-lock test that hung). Another
    process takes and gives back the lock without pause meanwhile."""
    m = mount()
    d = m.p("L")
    os.mkdir(d)
    flipper = spawn([sys.executable, "-c", FLIP, os.path.join(d, "f")],
                    stdout=subprocess.PIPE)
    try:
        assert Lines(flipper.stdout).readline(GRANT_TIMEOUT) == "flipping"
        busy, runs = 0, 60 if SLOW > 1 else 120
        for _ in range(runs):
            rc, _, err = zk(zklock, "-n", "-N", "z", d, "true")
            assert rc in (0, 1), err          # 1: busy, as flock -n
            busy += rc
        assert flipper.poll() is None
    finally:
        flipper.kill()
        flipper.wait()
    print("figure: zklock -n against a lock taken and given back without "
          "pause: %d of %d found it busy" % (busy, runs))
    wait_no_entries(d)


FLIP = """
import os, sys
print("flipping", flush=True)
while True:
    os.close(os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY))
"""


def test_holders_past_the_kernels_64_kib(mount, zklock, zkc):
    """zklock proves a directory is zklockfs by its holders xattr. When the
    list passes the kernel's 64 KiB limit for an xattr value, reading it
    fails (E2BIG): zklock took that for an error and gave up (exit 66)."""
    m = mount()
    d = m.p("L")
    os.mkdir(d)
    name = m.zkpath("L") + "/" + "r" * 200 + "-read-lock-"   # another client's
    for _ in range(330):                                     # shared holders
        zkc.create(name, mode=zkclient.EPHEMERAL_SEQUENTIAL)
    with pytest.raises(OSError) as ei:
        os.getxattr(d, harness.XATTR_HOLDERS)
    assert ei.value.errno == errno.E2BIG             # so it is past 64 KiB
    rc, out, err = zk(zklock, "-s", "-N", "me", d, "echo", "in")
    assert (rc, out) == (0, "in\n"), err


# --- --list --------------------------------------------------------------------------------

def parse_list(out):
    lines = out.splitlines()
    assert lines and lines[0].split() == ["POS", "STATE", "KIND", "ENTRY", "HOST",
                                          "PID", "AGE", "SINCE", "LIMIT", "CMD"], out
    rows = [ln.split(None, 9) for ln in lines[1:]]
    for r in rows:
        assert len(r) == 10, out
    return rows


def test_list_shows_the_queue(mount, zklock, zkc):
    m1, m2 = mount(), mount()
    d1 = m1.p("L")
    os.mkdir(d1)
    d2 = m2.p("L")
    wait_for(lambda: os.path.isdir(d2), 5, "L on mount 2")
    rc, out, _ = zk(zklock, "--list", d1)
    assert rc == 0 and parse_list(out) == []

    holder = Run(zklock, "-N", "alpha", d1, "sh", "-c", "echo in; exec sleep 60")
    assert holder.expect_line() == "in"
    ea = wait_entry_of(d1, "alpha")
    w1 = Run(zklock, "-N", "beta", d2, "true")           # other mount
    eb = wait_entry_of(d1, "beta")
    w2 = Run(zklock, "-s", "-N", "gamma", d1, "true")
    eg = wait_entry_of(d1, "gamma")
    c = zkc.create(m1.zkpath("L") + "/_c_%s-lock-" % uuid.uuid4(), b"",
                   zkclient.EPHEMERAL_SEQUENTIAL)
    ec = c.rsplit("/", 1)[1]
    wait_for(lambda: ec in os.listdir(d1), 5, "the curator entry")
    os.mkdir(os.path.join(d1, "subdir"))                 # not a row

    host = parse_kv(read_file(os.path.join(d1, ea)))["host"]
    for d in (d1, d2):
        rc, out, err = zk(zklock, "--list", d)
        assert rc == 0, err
        rows = parse_list(out)
        assert [r[3] for r in rows] == [ea, eb, eg, ec], out
        assert [r[0] for r in rows] == ["1", "2", "3", "4"]
        assert [r[1] for r in rows] == ["held", "waiting", "waiting", "waiting"]
        assert [r[2] for r in rows] == ["exclusive", "exclusive", "shared",
                                        "exclusive"]
        assert [r[4] for r in rows] == [host, host, host, "-"]
        assert [r[5] for r in rows] == [str(holder.pid), str(w1.pid),
                                        str(w2.pid), "-"]
        for r in rows:
            assert re.match(r"^(\d+s|\d+m\d+s|\d+h\d+m|\d+d\d+h)$", r[6]), r
        # aligned: every column starts at the same offset in each line
        lines = out.splitlines()
        starts = [lines[0].index(h) for h in ("STATE", "KIND", "ENTRY")]
        for ln in lines[1:]:
            for s in starts:
                assert ln[s - 1] == " " and ln[s] != " ", out

    # the queue moves on: the holder ends, beta then gamma run, curator waits
    os.kill(holder.pid, signal.SIGTERM)
    assert holder.finish() == 128 + signal.SIGTERM
    assert w1.finish() == 0
    assert w2.finish() == 0
    rows = parse_list(zk(zklock, "--list", d1)[1])
    assert [(r[3], r[1]) for r in rows] == [(ec, "held")]
    zkc.delete(c)


def test_list_prints_no_raw_control_byte(mount, zklock, zkc):
    """Whatever a holder writes (its descriptor's data) or a ZooKeeper
    client writes in its entry, --list prints no C0/C1 control, ESC or byte that is not
    UTF-8 raw: the 8-bit CSI 0x9b, raw or as UTF-8, is a terminal escape."""
    m = mount()
    d = lockdir(m)
    fd = os.open(os.path.join(d, "evil"), os.O_CREAT | os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"host=\x9b31mevil\x1b]0;title\x07\xc2\x9b2J\n"
                     b"pid=\x1b[2J\x85\xff\n")
        os.fsync(fd)
        c = zkc.create(m.zkpath("L") + "/_c_x-lock-", b"host=caf\xc3\xa9\x9b\n",
                       zkclient.EPHEMERAL_SEQUENTIAL)
        ec = c.rsplit("/", 1)[1]
        wait_for(lambda: ec in os.listdir(d), 5, "the client's entry")
        r = subprocess.run([zklock, "--list", d], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=RUN_TIMEOUT)
    finally:
        os.close(fd)
    out = r.stdout
    assert r.returncode == 0, r.stderr
    no_sanitizer_report(r.stderr.decode("utf-8", "replace"))
    bad = re.search(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", out)
    assert not bad, "a raw control byte in --list: %r" % out
    text = out.decode("utf-8")              # and nothing that is not UTF-8
    assert not re.search("[\x80-\x9f]", text), text
    assert "\\x9b31mevil\\x1b]0;title\\x07\\xc2\\x9b2J" in text, text
    assert "\\x1b[2J\\x85\\xff" in text, text
    assert "caf\u00e9\\x9b" in text, text   # printable UTF-8 stays
    zkc.delete(c)


# --- usage ---------------------------------------------------------------------------------------

def bad_values(opt, *values):
    """The argument lists `OPT VALUE {d} true`, one per refused value."""
    return [[opt, v, "{d}", "true"] for v in values]


@pytest.mark.parametrize("args", [
    [],
    ["{d}"],
    ["-x"],
    ["--bogus", "{d}", "true"],
    *bad_values("-w", "abc", "-1", "nan"),
    *bad_values("-E", "256", "x"),
    *bad_values("--kill-after", "soon"),
    ["{d}", "-c"],
    ["{d}", "-c", "true", "extra"],
    ["-c", "true", "{d}", "extra"],
    ["--list"],
    ["--list", "{d}", "ls"],
    *bad_values("-N", "a/b", "", "..", "host-lock-0000000001",
                "db-read",                  # would read as shared
                "x" * 240,
                "ctl\x01char"),             # refused by zklockfs
    ["", "true"],
])
def test_usage_errors(mount, zklock, args):
    m = mount()
    d = m.p("L")
    rc, out, err = zk(zklock, *[a.format(d=d) for a in args])
    assert rc == EX_USAGE, (rc, out, err)
    assert err.strip(), "no message"
    assert not os.path.exists(d) or entries(d) == []


def test_help_and_version(zklock):
    rc, out, _ = zk(zklock, "--help")
    assert rc == 0 and "--list" in out and "Usage" in out
    rc, out, _ = zk(zklock, "-V")
    assert rc == 0 and out.startswith("zklock")


def test_limit_makes_a_semaphore_like_consul_lock_n(mount, zklock):
    """-L N: the directory zklock makes is a semaphore of N holders (set if
    it has none); a directory with another limit is refused (66)."""
    m = mount()
    d = os.path.join(m.path, "sem")
    rc, out, err = zk(zklock, "-L", "2", d, "echo", "ran")
    assert (rc, out) == (0, "ran\n"), err
    assert os.getxattr(d, "user.zklockfs.limit") == b"2"
    h1 = take(d, "h1")
    rc, out, _ = zk(zklock, "-n", "-L", "2", d, "echo", "second")
    assert (rc, out) == (0, "second\n")          # one of two places left
    h2 = take(d, "h2")
    assert zk(zklock, "-n", "-L", "2", d, "true")[0] == 1
    rc, _, err = zk(zklock, "-L", "3", d, "true")
    assert rc == 66 and "a semaphore of 2 holders, not 3" in err
    assert zk(zklock, "-L", "0", d, "true")[0] == 64
    h1.release()
    h2.release()


def test_a_semaphore_is_refused_without_its_limit(mount, zklock):
    """A name someone else made first may carry a limit that lets several
    "exclusive" holders in at once: without -L, zklock refuses a semaphore
    (66), saying which -L would share it; with it, it runs."""
    m = mount()
    d = lockdir(m, "made-first")
    os.setxattr(d, "user.zklockfs.limit", b"1000")
    rc, out, err = zk(zklock, d, "echo", "ran")
    assert (rc, out) == (66, ""), err
    assert "a semaphore of 1000 holders" in err and "-L 1000" in err
    assert entries(d) == []
    rc, out, err = zk(zklock, "-L", "1000", d, "echo", "ran")
    assert (rc, out) == (0, "ran\n"), err


# --- revocation ---------------------------------------------------------------------

WAIT_FOR_SIGNAL = (
    "import signal, sys\n"
    "def on(sig, frame):\n"
    "    print('got', signal.Signals(sig).name, flush=True); sys.exit(0)\n"
    "for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP):\n"
    "    signal.signal(s, on)\n"
    "print('in', flush=True)\n"
    "signal.pause()\n")


@pytest.mark.parametrize("opts, sig", [((), "SIGUSR1"),
                                        (("--on-revoke=usr2",), "SIGUSR2"),
                                        (("--on-revoke", "1"), "SIGHUP")])
def test_a_request_to_let_go_reaches_the_command(mount, zklock, opts, sig):
    """setfattr user.zklockfs.revoke on zklock's entry: zklock passes it on
    to its command as SIGUSR1 (or --on-revoke's signal), once; the lock is
    still held until the command ends."""
    m = mount()
    d = m.p("L")
    r = Run(zklock, *opts, "-N", "me", d, harness.PY, "-c", WAIT_FOR_SIGNAL)
    assert r.expect_line() == "in"
    e = wait_entry_of(d, "me")
    os.setxattr(os.path.join(d, e), "user.zklockfs.revoke", b"1")
    assert r.expect_line() == "got " + sig
    assert r.finish() == 0
    assert "asked to let go" in r.err
    wait_no_entries(d)


def test_on_revoke_takes_a_signal(zklock):
    rc, _, err = zk(zklock, "--on-revoke=NOPE", "/tmp", "true")
    assert rc == 64 and "invalid signal" in err
    assert zk(zklock, "--on-revoke=0", "/tmp", "true")[0] == 64


@pytest.mark.parametrize("sig", ["STOP", "SIGSTOP", "19", "sigtstp", "TTIN",
                                 "SIGTTOU"])
def test_on_revoke_refuses_a_stop_signal(zklock, sig):
    """A stopped command keeps its lock, frozen: a revocation must ask it
    to let go, never stop it."""
    rc, _, err = zk(zklock, "--on-revoke=" + sig, "/tmp", "true")
    assert rc == 64, (rc, err)
    assert "would stop the command" in err, err


def test_another_user_without_allow_other_is_pointed_to_it(mount, zklock):
    """A user who is not the mount's owner gets EACCES from a mount without
    allow_other: zklock says why, naming the option."""
    m = mount()
    os.mkdir(m.p("d"))
    r = subprocess.run(harness.as_user(65534) + [zklock, m.p("d"), "true"],
                       capture_output=True, text=True, timeout=GRANT_TIMEOUT, cwd="/")
    assert r.returncode == 66 and "allow_other" in r.stderr, r
