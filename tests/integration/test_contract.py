"""Sentences of docs/SPEC.md that no other test covers.

  * "one release wakes one waiter" with many waiters on many mounts: FUSE
    grants seen by the Lockers, ZooKeeper's fired-watch counters (mntr);
  * "write() ... up to ZooKeeper's 1 MiB limit, else EFBIG": the largest
    write the daemon takes (ZKLFS_DATA_MAX) works and reads back the same
    everywhere; one byte more is EFBIG;
  * "Every failure is a clear errno and, in the daemon's log, one line
    saying why": EINVAL, ENAMETOOLONG, EPERM, EACCES and EFBIG, each
    provoked through the mount, each looked for in the daemon's log (EISDIR,
    for O_CREAT of a directory, the kernel answers itself: no request
    reaches the daemon, and the README says so);
  * "ZooKeeper refusing an operation is EACCES", for a read: stat, ls and
    cat of a znode whose ACL does not let the mount read it.

(Curator's mutex and the Go client reading our entries as contenders are in
test_interop.py; an entry's stat times in test_namespace.py.)
"""

import base64
import errno
import hashlib
import os
import random
import re
import select

import pytest

import zkclient
from harness import (two_mounts, session_watches, GRANT_TIMEOUT, NOT_GRANTED_WAIT, SHARED, SLOW, WRITE,
                     Locker, entries, errname, lockdir, read_file, seen_dir,
                     start_waiter, take, tcp_peers, wait_for, wait_gone,
                     wait_no_entries)

# fs/wbuf.h: ZooKeeper's jute.maxbuffer (1 MiB) less room for the
# request's path and header
ZKLFS_DATA_MAX = 1024 * 1024 - 1024

PERM_READ = 1                     # ZooDefs.Perms.READ


# --- one release wakes one waiter ------------------------------------------------

# mntr (ZooKeeper 3.8): one summary per kind of watch event, whose "sum" is
# the number of watchers that events of that kind have fired. Found by
# experiment: a create under a znode two sessions watch for children adds 2
# to zk_sum_node_children_watch_count (and one exists() watch 1 to
# ..._created_...); a delete of a znode two sessions watch with get() adds 2
# to ..._deleted_.... Their total is every notification the server sent.
FIRED_WATCH_COUNTERS = ("zk_sum_node_created_watch_count",
                        "zk_sum_node_deleted_watch_count",
                        "zk_sum_node_changed_watch_count",
                        "zk_sum_node_children_watch_count")


def fired_watches(zk):
    """Watch notifications the server has sent so far, all kinds."""
    got = {}
    for line in zk.four("mntr").splitlines():
        k, _, v = line.partition("\t")
        if k in FIRED_WATCH_COUNTERS:
            got[k] = int(v)
    missing = set(FIRED_WATCH_COUNTERS) - set(got)
    assert not missing, "mntr has no %s:\n%s" % (sorted(missing),
                                                  zk.four("mntr"))
    return sum(got.values())


def mount_session(zk, m):
    """The ZooKeeper session id of mount m's daemon: `cons` names each
    connection by its client address, /proc the daemon's own sockets."""
    ports = {lport for lport, state, _ in tcp_peers(m.pid, zk.port)
             if state == "01"}                      # ESTABLISHED
    sids = set()
    for line in zk.four("cons").splitlines():
        c = re.match(r"\s*/127\.0\.0\.1:(\d+)\[\d+\]\(.*\bsid=0x([0-9a-f]+)",
                     line)
        if c and int(c.group(1)) in ports:
            sids.add(int(c.group(2), 16))
    assert len(sids) == 1, "mount pid %d: sessions %r (ports %r)\n%s" % (
        m.pid, sids, ports, zk.four("cons"))
    return sids.pop()


def answered(lockers, timeout):
    """{locker: what its open() answered} for those whose open() answered
    (granted, failed, or the child died) within `timeout` seconds: one
    select() over all their pipes, so a waiter woken by mistake is seen
    whichever it is (and what a Locker has already read counts too)."""
    def status(lk, t):
        try:
            return lk.poll_status(t)
        except AssertionError as e:            # LockerError: it died
            return "died: %s" % e
    done = {}
    for lk in lockers:
        s = status(lk, 0)
        if s is not None:
            done[lk] = s
    fds = {lk.proc.stdout.fileno(): lk for lk in lockers if lk not in done}
    if fds:
        r, _, _ = select.select(list(fds), [], [], timeout)
        for fd in r:
            done[fds[fd]] = status(fds[fd], GRANT_TIMEOUT)
    return done


@pytest.mark.timeout(120)
def test_each_release_grants_only_the_next_waiter_across_mounts(mount, zk):
    """3 mounts x 5 exclusive waiters, queued round-robin over the mounts
    behind one holder. At each of the 16 releases, exactly the next waiter
    in queue order is granted, no other open() returns, and ZooKeeper sends
    at most one watch notification (a herd, every mount watching the lock
    znode or the holder's entry, would send up to three). End to end, from
    the openers' side: test_herd.py's test_one_release_wakes_one_waiter_
    across_mounts looks at the watches themselves."""
    nmounts, per_mount = 3, 5
    ms = [mount() for _ in range(nmounts)]
    dirs = [lockdir(ms[0])] + [seen_dir(m) for m in ms[1:]]
    holder = take(dirs[0], "h")
    queue = [holder]
    for i in range(nmounts * per_mount):
        # holder on mount 0, then mounts 1, 2, 0, 1, ...: every hand-over
        # goes to another mount
        queue.append(start_waiter(dirs[(i + 1) % nmounts], "w%02d" % i))
    assert entries(dirs[0]) == [lk.entry for lk in queue], \
        "queue order is not the order the waiters came in"
    # who must be told of each release: the next waiter's mount's session
    sid = {m: mount_session(zk, m) for m in ms}
    owner = [ms[0]] + [ms[(i + 1) % nmounts] for i in range(len(queue) - 1)]
    # nobody but the holder is granted
    early = answered(queue[1:], NOT_GRANTED_WAIT)
    assert not early, "open() answered while the lock is held: %r" % {
        lk.entry: s for lk, s in early.items()}

    per_release = []
    for k in range(len(queue)):
        cur, rest = queue[k], queue[k + 1:]
        if rest:
            # the next waiter watches the entry it must outlive (another
            # mount's): wait until that watch is set, so that this release
            # must notify its mount, and nobody else
            zpath = ms[0].zkpath("L/" + cur.entry)
            wait_for(lambda: zpath in session_watches(zk, sid[owner[k + 1]]),
                     GRANT_TIMEOUT, "%s's mount (session 0x%x) to watch %s"
                     % (rest[0].entry, sid[owner[k + 1]], cur.entry))
        n0 = fired_watches(zk)
        cur.release()
        if rest:
            rest[0].wait_granted()
        wait_gone(dirs[0], cur.entry)
        # any other open() woken by this release answers about as soon
        woken = answered(rest[1:], 0.2 * SLOW)
        assert not woken, ("release %d (%s) woke %s too, besides %s"
                           % (k, cur.entry, {lk.entry: s for lk, s in
                                             woken.items()}, rest[0].entry))
        n = fired_watches(zk) - n0
        per_release.append(n)
        assert n <= 1, ("release %d (%s, next %s) fired %d watch "
                        "notifications: a herd (per release so far: %r)"
                        % (k, cur.entry, rest[0].entry if rest else "none",
                           n, per_release))
    wait_no_entries(dirs[0])
    # each hand-over fired the one watch the next waiter's mount had set
    # (seen set before the release): the counters are not blind
    assert per_release == [1] * (nmounts * per_mount) + [0], per_release


# --- a write up to the limit -------------------------------------------------------

def test_write_up_to_the_limit_works_one_byte_more_is_efbig(mount, zkc):
    m1, m2, d1, d2 = two_mounts(mount)
    h = take(d1, "big")
    data = random.Random(11).randbytes(ZKLFS_DATA_MAX)
    ans = h.ok("write " + data.hex(), timeout=60 * SLOW)
    assert int(ans) == ZKLFS_DATA_MAX, "write(%d bytes) returned %s" % (
        ZKLFS_DATA_MAX, ans)
    h.ok("fsync")
    zdata, zstat = zkc.get_data(m1.zkpath("L/" + h.entry))
    assert zstat.dataLength == ZKLFS_DATA_MAX
    assert zdata == data, "ZooKeeper holds other data than was written"
    for d in (d1, d2):
        p = os.path.join(d, h.entry)
        assert os.stat(p).st_size == ZKLFS_DATA_MAX
        assert read_file(p) == data, "%s reads back other data" % p
    # one byte past the limit: refused whole, nothing changes
    assert int(h.ok("seek %d" % ZKLFS_DATA_MAX)) == ZKLFS_DATA_MAX
    assert h.cmd("write 78") == "error EFBIG"
    assert zkc.get_data(m1.zkpath("L/" + h.entry))[0] == data
    assert read_file(os.path.join(d2, h.entry)) == data
    h.release()
    wait_no_entries(d1)


# --- every failure: one log line saying why ----------------------------------------

def log_lines(m):
    with open(m.logpath, "rb") as f:
        return f.read().decode("utf-8", "replace").splitlines()


def _locker_error(path, flags):
    return Locker(path, flags).wait_error(5 * SLOW)


def _os_error(fn, *args):
    try:
        fn(*args)
    except OSError as e:
        return errname(e.errno)
    return "no error"


# Each case: (id, errno, what to do through the mount, a pattern the log line
# must match to say why). What to do gets `t`: t.m the mount, t.d a lock
# directory on it holding "sub" (a directory) and t.h.entry (an entry held
# through another mount), t.mine a holder through t.m (of lock E), t.zkc.
def _einval_entry(t):
    return _locker_error(os.path.join(t.d, "x-lock-0000000099"), WRITE)


def _einval_mkdir(t):
    return _os_error(os.mkdir, os.path.join(t.d, "d-lock-0000000099"))


def _enametoolong_256(t):
    return _locker_error(os.path.join(t.d, "n" * 256), WRITE)


def _enametoolong_mkdir_256(t):
    return _os_error(os.mkdir, os.path.join(t.d, "n" * 256))


def _enametoolong_with_marker(t):
    # 250 bytes fit a name, not with "-read-lock-" and 10 digits
    return _locker_error(os.path.join(t.d, "n" * 250), SHARED)


def _eperm_rename(t):
    return _os_error(os.rename, os.path.join(t.d, t.h.entry),
                     os.path.join(t.d, "moved"))


def _eperm_link(t):
    return _os_error(os.link, os.path.join(t.d, t.h.entry),
                     os.path.join(t.d, "hard"))


def _eperm_symlink(t):
    return _os_error(os.symlink, "/etc/hostname", os.path.join(t.d, "sym"))


def _eperm_mkfifo(t):
    return _os_error(os.mkfifo, os.path.join(t.d, "fifo"))


def _eacces_someone_elses_entry(t):
    return _locker_error(os.path.join(t.d, t.h.entry), os.O_WRONLY)


def _eacces_zookeeper_acl(t):
    # READ only for everybody: no child may be made in it
    return _os_error(os.mkdir, os.path.join(t.d, "ro", "sub"))


def _efbig(t):
    # the largest write ends at ZKLFS_DATA_MAX: one byte after it
    assert int(t.mine.ok("seek %d" % ZKLFS_DATA_MAX)) == ZKLFS_DATA_MAX
    ans = t.mine.cmd("write 78")
    return ans.split()[1] if ans.startswith("error") else "no error"


LOG_CASES = [
    ("EINVAL-entry-name", "EINVAL", _einval_entry,
     r"Invalid argument|invalid|refused"),
    ("EINVAL-mkdir-name", "EINVAL", _einval_mkdir,
     r"Invalid argument|invalid|refused"),
    ("ENAMETOOLONG-256-byte-entry-name", "ENAMETOOLONG", _enametoolong_256,
     r"too long|refused"),
    ("ENAMETOOLONG-256-byte-directory-name", "ENAMETOOLONG",
     _enametoolong_mkdir_256, r"too long|refused"),
    ("ENAMETOOLONG-entry-name-with-its-marker", "ENAMETOOLONG",
     _enametoolong_with_marker, r"too long|refused"),
    ("EPERM-rename", "EPERM", _eperm_rename, r"refused|not permitted"),
    ("EPERM-link", "EPERM", _eperm_link, r"refused|not permitted"),
    ("EPERM-symlink", "EPERM", _eperm_symlink, r"refused|not permitted"),
    ("EPERM-mkfifo", "EPERM", _eperm_mkfifo, r"refused|not permitted"),
    ("EACCES-writing-someone-elses-entry", "EACCES",
     _eacces_someone_elses_entry, r"refused|denied|[Pp]ermission"),
    ("EACCES-zookeeper-acl", "EACCES", _eacces_zookeeper_acl,
     r"not authenticated|NOAUTH|denied|refused|[Pp]ermission"),
    ("EFBIG-write-past-the-limit", "EFBIG", _efbig,
     r"at most|too large|too big|refused"),
]

LOG_PARAMS = [pytest.param(err, fn, why, id=cid)
              for cid, err, fn, why in LOG_CASES]


class Scene:
    pass


@pytest.mark.parametrize("err,provoke,why", LOG_PARAMS)
def test_every_failure_logs_one_line_saying_why(mount, zkc, err, provoke,
                                                why):
    t = Scene()
    t.m, other, t.zkc = mount(), mount(), zkc
    t.d = lockdir(t.m)
    os.mkdir(os.path.join(t.d, "sub"))
    zkc.create(t.m.zkpath("L/ro"), b"", zkclient.PERSISTENT,
               acl=[(PERM_READ, "world", "anyone")])
    t.h = take(seen_dir(other), "h")
    wait_for(lambda: t.h.entry in os.listdir(t.d) and "ro" in os.listdir(t.d),
             5 * SLOW, "h's entry and ro to show")
    t.mine = take(lockdir(t.m, "E"), "mine")
    os.listdir(t.d)
    before = log_lines(t.m)
    got = provoke(t)
    # a round trip through the same daemon and session: whatever the failed
    # request had to log is written by now (it logs before it answers)
    os.listdir(t.d)
    new = log_lines(t.m)[len(before):]
    assert got == err, "expected %s, got %s" % (err, got)
    assert len(new) == 1, ("%s: expected one new log line, got %d:\n%s"
                           % (err, len(new), "\n".join(new)))
    assert re.search(why, new[0]), ("%s: the log line does not say why "
                                    "(/%s/): %r" % (err, why, new[0]))
    t.mine.release()
    t.h.release()


# --- ZooKeeper refusing a read ------------------------------------------------------

def digest_acl(user, password, perms=31):
    """An ACL that gives `perms` to digest user:password and nothing to
    anyone else (ZooKeeper's DigestAuthenticationProvider id)."""
    h = base64.b64encode(hashlib.sha1(("%s:%s" % (user, password))
                                      .encode()).digest()).decode()
    return [(perms, "digest", "%s:%s" % (user, h))]


def test_zookeeper_refusing_a_read_is_eacces(mount, zkc):
    """A znode whose ACL lets only another user read it (what a mount with
    auth_file and acl=creator makes): stat, ls and cat of it through a
    mount without those credentials are EACCES. The lock directory that
    holds such an entry still lists it (listing is the parent's ACL)."""
    m = mount()
    d = lockdir(m)
    acl = digest_acl("someone-else", "not-ours")
    zkc.create(m.zkpath("secret"), b"private", zkclient.PERSISTENT, acl=acl)
    ent = zkc.create(m.zkpath("L/other-lock-"), b"private",
                     zkclient.EPHEMERAL_SEQUENTIAL, acl=acl).rsplit("/", 1)[1]
    wait_for(lambda: "secret" in os.listdir(m.path), 5 * SLOW,
             "the unreadable znode to be listed")
    assert entries(d) == [ent]

    def refused(fn, *args):
        with pytest.raises(OSError) as ei:
            fn(*args)
        assert ei.value.errno == errno.EACCES, "%s%r: %s, expected EACCES" % (
            fn.__name__, args, errname(ei.value.errno))

    refused(os.stat, m.p("secret"))
    refused(os.listdir, m.p("secret"))
    refused(read_file, m.p("secret"))
    refused(os.stat, os.path.join(d, ent))
    refused(read_file, os.path.join(d, ent))
    zkc.delete(m.zkpath("L/" + ent))
    zkc.delete(m.zkpath("secret"))
