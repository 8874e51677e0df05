"""What one user can cost the others, and what users' bytes can do to the
log and the terminal.

  * docs/SPEC.md "Users and permissions": "a path longer than 4,096 bytes
    or deeper than 64 levels below ROOT is ENAMETOOLONG": the 64th level and
    a path of exactly 4,096 bytes are made, the 65th level, an entry in the
    64th and a path of 4,097 bytes are ENAMETOOLONG, with one log line each
    and nothing in ZooKeeper; the daemon's RSS after trying to make 400
    nested levels of 250-byte names is recorded as a figure.
  * docs/SPEC.md "Errors", "in the daemon's log, one line saying why": a
    refused name holding a newline or an ANSI escape gives one line, with no
    raw control byte in it; a flood of refusals gives about one line a
    second, and the next one says how many were suppressed.

(The path of a directory or entry below ROOT is "/a/b/NAME": 16 levels of
255-byte names make exactly 4,096 bytes.  Paths past PATH_MAX are reached
with directory descriptors, mkdirat/openat, as `mkdir -p` does.)
"""

import errno
import os
import re
import time

import pytest

from harness import SLOW, errname, record_figure

PATH_MAX = 4096             # fs/limits.h: ZKLFS_PATH_MAX
DEPTH_MAX = 64              # fs/limits.h: ZKLFS_DEPTH_MAX
LOG_INTERVAL = 1.0          # zk/log.h: ZKLOG_INTERVAL_MS
SITE_MAX = 8                # zk/log.c: ZKLOG_SITE_MAX, lines a call site writes a second

RAW_CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f\x80-\x9f]")


def log_bytes(m):
    with open(m.logpath, "rb") as f:
        return f.read()


def refused(m, fn, *args, quiet=True, **kw):
    """Call fn(*args, **kw) through mount m, which must fail: (errno name,
    the bytes the daemon logged meanwhile).  quiet: first wait out the
    log's rate limit, so that the line of this refusal is not held back by
    one a moment ago."""
    if quiet:
        time.sleep(LOG_INTERVAL + 0.1)
    before = len(log_bytes(m))
    try:
        fn(*args, **kw)
        got = "no error"
    except OSError as e:
        got = errname(e.errno)
    # a round trip through the same daemon: whatever the failed request
    # had to log is written by now (it logs before it answers)
    os.listdir(m.path)
    return got, log_bytes(m)[before:]


def assert_one_line(new, why=rb"refused|too long|Invalid"):
    assert new.count(b"\n") == 1, "expected one log line, got:\n%r" % new
    assert re.search(why, new), "the line does not say why: %r" % new
    assert not RAW_CONTROL.search(new[:-1]), "a raw control byte: %r" % new


def opendir(name, dir_fd):
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=dir_fd)


def ls(fd):
    """The listing of the directory of fd, read now (an open descriptor
    keeps the listing of its opendir)."""
    return os.listdir("/proc/self/fd/%d" % fd)


def make_levels(m, names):
    """mkdir -p of names below ROOT (each level with mkdirat, so that no
    path passes PATH_MAX); the descriptor of the last, to close."""
    fd = os.open(m.path, os.O_RDONLY | os.O_DIRECTORY)
    for n in names:
        os.mkdir(n, dir_fd=fd)
        nfd = opendir(n, fd)
        os.close(fd)
        fd = nfd
    return fd


def zkpath(m, names):
    return m.zkpath("/".join(names))


def below_root(names):
    return sum(1 + len(n) for n in names)


# --- depth -----------------------------------------------------------------------------

def test_64_levels_below_root_and_no_more(mount, zkc):
    m = mount()
    names = ["d%d" % i for i in range(1, DEPTH_MAX + 1)]
    fd = make_levels(m, names[:-1])                   # 63 levels
    try:
        # an entry at level 64 is a lock taken as usual
        lk = os.open("job", os.O_CREAT | os.O_WRONLY | os.O_NONBLOCK, dir_fd=fd)
        assert [e for e in ls(fd) if e.startswith("job")], ls(fd)
        os.close(lk)
        os.mkdir(names[-1], dir_fd=fd)                # the 64th level
        fd64 = opendir(names[-1], fd)
    finally:
        os.close(fd)
    try:
        assert zkc.exists(zkpath(m, names)) is not None
        got, new = refused(m, os.mkdir, "d65", dir_fd=fd64)
        assert got == "ENAMETOOLONG", got
        assert_one_line(new)
        # an entry is one level below its directory: none in the 64th
        got, new = refused(m, os.open, "job", os.O_CREAT | os.O_WRONLY | os.O_NONBLOCK,
                           dir_fd=fd64)
        assert got == "ENAMETOOLONG", got
        assert_one_line(new)
        assert ls(fd64) == []
    finally:
        os.close(fd64)
    assert zkc.get_children(zkpath(m, names)) == []


# --- length ----------------------------------------------------------------------------

def test_4096_bytes_below_root_and_no_more(mount, zkc):
    m = mount()
    base = ["%02d" % i + "p" * 253 for i in range(15)]       # 15 x 256 bytes
    assert below_root(base) == 3840
    fd = make_levels(m, base)
    try:
        exact = "e" * 255
        assert below_root(base + [exact]) == PATH_MAX
        os.mkdir(exact, dir_fd=fd)
        assert zkc.exists(zkpath(m, base + [exact])) is not None
        os.mkdir("abc", dir_fd=fd)
        fd2 = opendir("abc", fd)
    finally:
        os.close(fd)
    try:
        assert below_root(base + ["abc", "f" * 251]) == PATH_MAX
        os.mkdir("f" * 251, dir_fd=fd2)
        assert "f" * 251 in ls(fd2)
        over = "g" * 252
        assert below_root(base + ["abc", over]) == PATH_MAX + 1
        got, new = refused(m, os.mkdir, over, dir_fd=fd2)
        assert got == "ENAMETOOLONG", got
        assert_one_line(new)
        assert over not in ls(fd2)
    finally:
        os.close(fd2)
    assert zkc.get_children(zkpath(m, base + ["abc"])) == ["f" * 251]
    assert zkc.exists(zkpath(m, base + ["abc", over])) is None


def vm_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


def test_400_nested_250_byte_names_stop_at_the_bound(mount, zkc):
    """mkdir -p of 400 levels of 250-byte names."""
    m = mount()
    rss0 = vm_rss_kib(m.pid)
    fd = os.open(m.path, os.O_RDONLY | os.O_DIRECTORY)
    names, err = [], None
    try:
        for i in range(400):
            n = "%03d" % i + "n" * 247
            try:
                os.mkdir(n, dir_fd=fd)
            except OSError as e:
                err = errname(e.errno)
                break
            names.append(n)
            nfd = opendir(n, fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)
    rss = vm_rss_kib(m.pid)
    record_figure("daemon RSS after mkdir of 400 nested 250-byte names: "
                  "%.1f MB (%.1f MB after mounting), %d levels made%s"
                  % (rss / 1024, rss0 / 1024, len(names),
                     ", then %s" % err if err else ""))
    # 16 x (1 + 250) = 4,016 bytes; one more level would be 4,267
    assert len(names) == 16 and err == "ENAMETOOLONG", (len(names), err)
    assert zkc.get_children(zkpath(m, names)) == []


# --- the log ---------------------------------------------------------------------------

LOG_NAMES = [
    ("newline", "bad\nzklockfs: forged line"),
    ("ansi-escape", "bad\x1b[31mred\x1b[0m"),
]


@pytest.mark.parametrize("name", [n for _, n in LOG_NAMES],
                         ids=[i for i, _ in LOG_NAMES])
def test_a_refused_name_logs_one_escaped_line(mount, name):
    m = mount()
    d = m.p("L")
    os.mkdir(d)
    got, new = refused(m, os.mkdir, os.path.join(d, name))
    assert got == "EINVAL", got
    assert_one_line(new)
    assert b"\\x" in new, new                         # escaped, not dropped
    got, new = refused(m, os.open, os.path.join(d, name),
                       os.O_CREAT | os.O_WRONLY | os.O_NONBLOCK)
    assert got == "EINVAL", got
    assert_one_line(new)


def test_a_flood_of_refusals_is_rate_limited(mount):
    m = mount()
    d = m.p("L")
    os.mkdir(d)
    before = len(log_bytes(m))
    t0 = time.monotonic()
    for i in range(1000):
        with pytest.raises(OSError) as e:
            os.mkdir(os.path.join(d, "bad\n%d" % i))
        assert e.value.errno == errno.EINVAL
    elapsed = time.monotonic() - t0
    os.listdir(m.path)
    flood = log_bytes(m)[before:].splitlines()
    # names that differ are different messages, but one call site writes
    # at most SITE_MAX lines a second (and as many for a second begun)
    assert 1 <= len(flood) <= SITE_MAX * (int(elapsed / LOG_INTERVAL) + 2), (elapsed, flood)
    time.sleep(LOG_INTERVAL)      # a new second: the site's budget is back
    got, new = refused(m, os.mkdir, os.path.join(d, "bad\nlast"))
    assert got == "EINVAL"
    assert_one_line(new)
    counts = [int(c) for c in
              re.findall(rb"\((\d+) more like this suppressed\)", b"\n".join(flood) + new)]
    assert re.search(rb"\(\d+ more like this suppressed\)", new), new
    # every refusal is either a line or counted in the next line
    assert len(flood) + 1 + sum(counts) == 1001, (flood, new)
    assert not RAW_CONTROL.search(b"".join(flood))
    record_figure("1,000 refused mkdirs in %.1f s: %d log lines, then %r"
                  % (elapsed, len(flood), new.decode().strip()))
