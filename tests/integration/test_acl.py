"""ZooKeeper ACLs and credentials (docs/SPEC.md, "ZooKeeper ACLs and
credentials"): what every znode a mount makes carries, what a client
without the mount's credentials can do to it, and the checks of auth_file.

An unauthenticated client's delete of someone's entry gets NOAUTH (-102):
a mount's znodes never carry world:anyone:cdrwa when it has credentials."""

import base64
import hashlib
import os
import subprocess
import tempfile

import pytest

import zkclient
from harness import SLOW, lockdir, mount_entry, remove_mountpoint, spawn, take, fusermount

ALL, READ = 31, 1
CRED = "locks:s3cret"


def digest_id(cred):
    """ZooKeeper's DigestAuthenticationProvider id of "user:password"."""
    user = cred.split(":", 1)[0]
    h = base64.b64encode(hashlib.sha1(cred.encode()).digest()).decode()
    return "%s:%s" % (user, h)


def write_auth(dirpath, cred=CRED, mode=0o600, name="zk.auth"):
    path = os.path.join(str(dirpath), name)
    with open(path, "w") as f:
        f.write(cred + "\n")
    os.chmod(path, mode)
    return path


def expect_noauth(fn, *args):
    with pytest.raises(zkclient.ZKError) as ei:
        fn(*args)
    assert ei.value.code == zkclient.ZNOAUTH, ei.value


def acl_of(zk, path):
    """The ACL of @path, read with the mount's credentials (ZooKeeper shows
    a digest id's hash only to a client with ADMIN on the znode)."""
    with zkclient.ZKClient(zk.host, zk.port) as c:
        c.add_auth("digest", CRED)
        return c.get_acl(path)


def made_by_mount(m, zkc):
    """ROOT, a lock directory and a held entry, made through @m."""
    d = lockdir(m)
    h = take(d, "h")
    return h, [m.zkpath(""), m.zkpath("L"), m.zkpath("L/" + h.entry)]


def test_creator_read_is_the_default_and_others_cannot_break_a_lock(
        mount, zkc, tmp_path, test_root):
    m = mount(root=test_root + "/sec", opts=["auth_file=" + write_auth(tmp_path)])
    h, paths = made_by_mount(m, zkc)
    want = [(ALL, "digest", digest_id(CRED)), (READ, "world", "anyone")]
    for p in paths:
        assert acl_of(m.zk, p) == want, p
    entry = paths[-1]
    # zkc has no credentials: it may watch the queue, not break it
    assert zkc.get_data(entry)[0].startswith(b"host=")
    expect_noauth(zkc.delete, entry)
    expect_noauth(zkc.set_data, entry, b"uid=0\n")
    expect_noauth(zkc.create, paths[1] + "/x-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    expect_noauth(zkc.delete, paths[1])
    assert zkc.get_children(paths[1]) == [h.entry]
    # the same credentials elsewhere are the same identity: all rights
    with zkclient.ZKClient(m.zk.host, m.zk.port) as other:
        other.add_auth("digest", CRED)
        other.set_data(entry, b"fenced\n")
    h.release()


def test_creator_acl_lets_nobody_else_read(mount, zkc, tmp_path, test_root):
    m = mount(root=test_root + "/sec",
              opts=["auth_file=" + write_auth(tmp_path), "acl=creator"])
    h, paths = made_by_mount(m, zkc)
    for p in paths:
        assert acl_of(m.zk, p) == [(ALL, "digest", digest_id(CRED))], p
        expect_noauth(zkc.get_data, p)
    expect_noauth(zkc.get_children, paths[1])
    h.release()


def test_acl_open_with_credentials_is_world_writable(mount, zkc, tmp_path,
                                                      test_root):
    m = mount(root=test_root + "/sec",
              opts=["auth_file=" + write_auth(tmp_path), "acl=open"])
    h, paths = made_by_mount(m, zkc)
    for p in paths:
        assert zkc.get_acl(p) == [(ALL, "world", "anyone")], p
    h.release()


def test_without_credentials_znodes_are_open(mount, zkc):
    """Documented (README, zklockfs(8)): then the permission rules guard
    only against the users of this host."""
    m = mount()
    h, paths = made_by_mount(m, zkc)
    for p in paths:
        assert zkc.get_acl(p) == [(ALL, "world", "anyone")], p
    h.release()


# --- mounts that must fail --------------------------------------------------------

def run_failing(daemon_path, source, opts, session_ms=2000):
    """Run the daemon in the foreground; it must exit non-zero, unmounted,
    with one line on stderr.  Return that line."""
    mp = tempfile.mkdtemp(prefix="zklockfs-mnt-")
    try:
        p = spawn([daemon_path, "-f", "-o",
                   ",".join(["session_timeout=%d" % session_ms] + opts),
                   source, mp], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = p.communicate(timeout=session_ms / 1000.0 + 10 * SLOW)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
            pytest.fail("zklockfs %s did not exit" % source)
        assert p.returncode != 0, (p.returncode, err)
        assert mount_entry(mp) is None
        lines = [x for x in err.decode("utf-8", "replace").splitlines() if x.strip()]
        assert len(lines) == 1, lines
        return lines[0]
    finally:
        if mount_entry(mp) is not None:
            fusermount(mp, lazy=True)
        remove_mountpoint(mp)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_auth_file_open_to_others_is_refused(daemon_path, zk, tmp_path,
                                             test_root, mode):
    af = write_auth(tmp_path, mode=mode)
    line = run_failing(daemon_path, zk.hostport + test_root,
                       ["auth_file=" + af])
    assert af in line and "chmod 600" in line, line


def test_auth_file_of_another_user_is_refused(daemon_path, zk, tmp_path,
                                              test_root):
    af = write_auth(tmp_path)
    os.chown(af, os.geteuid() + 4242, -1)
    line = run_failing(daemon_path, zk.hostport + test_root,
                       ["auth_file=" + af])
    assert af in line and "owned by uid %d" % (os.geteuid() + 4242) in line, line


def test_auth_file_must_be_a_regular_file(daemon_path, zk, tmp_path, test_root):
    line = run_failing(daemon_path, zk.hostport + test_root,
                       ["auth_file=" + str(tmp_path)])
    assert str(tmp_path) in line and "regular" in line, line


def test_acl_without_credentials_is_refused(daemon_path, zk, test_root):
    line = run_failing(daemon_path, zk.hostport + test_root, ["acl=creator"])
    assert "auth_file" in line, line


def test_unknown_acl_is_refused(daemon_path, zk, tmp_path, test_root):
    line = run_failing(daemon_path, zk.hostport + test_root,
                       ["auth_file=" + write_auth(tmp_path), "acl=everyone"])
    assert "acl=everyone" in line, line


def test_credentials_that_cannot_list_root_fail_the_mount(
        daemon_path, mount, zk, zkc, tmp_path, test_root):
    """Digest auth never fails in ZooKeeper (a wrong password is another
    identity): before, such a mount came up and every ls was EACCES."""
    root = test_root + "/private"
    m = mount(root=root, opts=["auth_file=" + write_auth(tmp_path), "acl=creator"])
    m.umount()
    wrong = write_auth(tmp_path, cred="locks:wrong", name="wrong.auth")
    line = run_failing(daemon_path, zk.hostport + root, ["auth_file=" + wrong])
    assert "cannot list root znode" in line and root in line, line
    line = run_failing(daemon_path, zk.hostport + root, [])
    assert "needs credentials" in line, line


def test_credentials_that_cannot_create_in_root_fail_the_mount(
        daemon_path, mount, zk, tmp_path, test_root):
    """A ROOT others may read but only its maker may write (creator-read):
    another user's credentials, or a wrong password, fail the mount at once,
    found in the ACL without writing anything; a read-only mount (ro) of it
    still mounts, as one without credentials does."""
    root = test_root + "/theirs"
    m = mount(root=root, opts=["auth_file=" + write_auth(tmp_path)])
    m.umount()
    wrong = write_auth(tmp_path, cred="locks:wrong", name="wrong.auth")
    line = run_failing(daemon_path, zk.hostport + root, ["auth_file=" + wrong])
    assert "may not create" in line and root in line, line
    ro = mount(root=root, opts=["auth_file=" + wrong, "ro"], create_root=False)
    assert os.listdir(ro.path) == []
    ok = mount(root=root, opts=["auth_file=" + write_auth(tmp_path)], create_root=False)
    assert os.listdir(ok.path) == []


def test_a_mount_without_credentials_on_a_protected_root_says_so(mount, tmp_path,
                                                                test_root):
    """A ROOT that grants world:anyone no create (creator-read): a mount
    without auth_file still mounts, to watch it, and says in one line at
    mount that every lock it takes will fail, naming ROOT and auth_file."""
    open_one = mount()                  # ROOT open to all: nothing to say
    assert "grants no create" not in open_one.log_tail()
    root = test_root + "/closed"
    m = mount(root=root, opts=["auth_file=" + write_auth(tmp_path)])
    m.umount()
    bare = mount(root=root, create_root=False)
    assert os.listdir(bare.path) == []
    told = [ln for ln in bare.log_tail().splitlines() if "grants no create" in ln]
    assert len(told) == 1 and root in told[0] and "auth_file" in told[0], bare.log_tail()
