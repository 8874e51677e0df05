"""Other clients' entries in our locks: entries of other lock recipes
(kazoo, Curator, shared markers) take part in the queue, our waiters wait
for another client's entry between two of ours or made between our release
and our next open, and a waiting entry deleted by someone else is never
granted (EIO) while those behind it move on. The other client is played
with the raw ZooKeeper client (zkc); live Curator, kazoo and go-zookeeper
contenders are test_interop.py's.
"""

import os

import pytest

import zkclient
from harness import (two_mounts, lock_state, lockdir, SHARED, WRITE,
                     XATTR_KIND, entries, getxattr_str, seq_of,
                     start_waiter, take, wait_for, wait_gone, wait_no_entries)


# --- interoperability with other lock recipes in the same znode ----------------

def test_foreign_recipe_entries_take_part_in_the_queue(mount, zkc):
    m = mount()
    d = lockdir(m)
    zdir = m.zkpath("L")
    # a kazoo contender holds the lock
    k = zkc.create(zdir + "/0123abcd__lock__", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    kname = k.rsplit("/", 1)[1]
    wait_for(lambda: kname in os.listdir(d), 5, "the foreign entry to show")
    assert getxattr_str(os.path.join(d, kname), XATTR_KIND) == "exclusive"
    assert lock_state(os.path.join(d, kname)) == "held"
    # a child without a sequence number is shown but takes no part
    zkc.create(zdir + "/plain-node", b"", zkclient.EPHEMERAL)
    wait_for(lambda: "plain-node" in os.listdir(d), 5, "plain node to show")

    w = start_waiter(d, "w")
    w.assert_waiting()
    zkc.delete(k)
    w.wait_granted()

    # a Curator contender queues behind ours and is shown waiting
    c = zkc.create(zdir + "/_c_x-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    cname = c.rsplit("/", 1)[1]
    wait_for(lambda: cname in os.listdir(d), 5, "the curator entry to show")
    assert lock_state(os.path.join(d, cname)) == "waiting"
    assert entries(d)[-1] == cname
    w.release()
    wait_gone(d, w.entry)
    zkc.delete(c)


@pytest.mark.parametrize("prefix", ["x-72057594037927936-", "lock_"])
def test_a_markerless_contender_takes_part_in_the_queue(mount, zkc, prefix):
    """ZooKeeper's own lock recipe names its entries "x-SESSION-N", with no
    marker: a sequence number after '-' or '_' is a contender, exclusive,
    and ours waits for it. A number glued to a name is not: a child
    "tmp.N" takes no part."""
    m = mount()
    d = lockdir(m)
    zdir = m.zkpath("L")
    zkc.create(zdir + "/tmp.", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    f = zkc.create(zdir + "/" + prefix, b"", zkclient.EPHEMERAL_SEQUENTIAL)
    fname = f.rsplit("/", 1)[1]
    wait_for(lambda: fname in os.listdir(d), 5, "the contender to show")
    assert lock_state(os.path.join(d, fname)) == "held"
    w = start_waiter(d, "w")
    w.assert_waiting()
    zkc.delete(f)
    w.wait_granted()
    w.release()


def test_no_local_hand_off_past_another_clients_entry(mount, zkc):
    """The mount's waiters queue behind its own entries without watches and
    are granted in the delete's completion when the held entry right before
    them goes.  An entry of another client between two of ours must stop
    that: b waits for f, not for a."""
    m = mount()
    d = lockdir(m)
    h = take(d, "h")
    a = start_waiter(d, "a")
    a.assert_waiting(0.3)
    f = zkc.create(m.zkpath("L") + "/_c_f-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    b = start_waiter(d, "b")
    b.assert_waiting(0.3)
    assert [seq_of(e) for e in (a.entry, f.rsplit("/", 1)[1], b.entry)] == \
        sorted(seq_of(e) for e in (a.entry, f.rsplit("/", 1)[1], b.entry))
    h.release()
    a.wait_granted()
    a.release()
    wait_gone(d, a.entry)
    b.assert_waiting(0.5)
    zkc.delete(f)
    b.wait_granted()
    b.release()
    wait_no_entries(d)


def test_waiter_behind_another_clients_waiter_that_gives_up_keeps_waiting(mount, zkc):
    """A waiter whose predecessor held the lock when it looked is granted on
    that entry's deletion, without looking again; one whose predecessor was
    itself waiting must look again: here f gives up while h still holds."""
    m1, m2, d1, d2 = two_mounts(mount)
    h = take(d1, "h")
    f = zkc.create(m1.zkpath("L") + "/_c_f-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    w = start_waiter(d2, "w")
    w.assert_waiting(0.3)
    zkc.delete(f)
    w.assert_waiting(0.5)
    assert lock_state(os.path.join(d1, h.entry)) == "held"
    h.release()
    w.wait_granted()
    w.release()
    wait_no_entries(d1)


def _waits_for_then_gets(zkc, d, f):
    """A new waiter in @d waits while another client's entry @f exists,
    and holds the lock once @f is deleted."""
    w = start_waiter(d, "w")
    w.assert_waiting(0.5)
    zkc.delete(f)
    w.wait_granted()
    w.release()
    wait_no_entries(d)


@pytest.mark.parametrize("when", ["before-release", "after-release"])
def test_entry_of_another_client_between_our_release_and_next_open(mount, zkc, when):
    """Another client's entry made between our release and our next open,
    before or after the release's delete, must be waited for."""
    m = mount()
    d = lockdir(m)
    take(d, "warm").release()
    wait_no_entries(d)
    h = take(d, "h")
    if when == "before-release":
        f = zkc.create(m.zkpath("L") + "/_c_f-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
        h.release()
    else:
        h.release()
        wait_gone(d, h.entry)
        f = zkc.create(m.zkpath("L") + "/_c_f-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    _waits_for_then_gets(zkc, d, f)
    take(d, "again").release()          # alone again: granted at once
    wait_no_entries(d)


@pytest.mark.parametrize("marker", ["-read-lock-", "__READ__", "__rlock__"])
def test_foreign_shared_entries_share_with_ours(mount, zkc, marker):
    m = mount()
    d = lockdir(m)
    zdir = m.zkpath("L")
    f = zkc.create(zdir + "/foreign" + marker, b"", zkclient.EPHEMERAL_SEQUENTIAL)
    fname = f.rsplit("/", 1)[1]
    wait_for(lambda: fname in os.listdir(d), 5, "the foreign entry to show")
    assert getxattr_str(os.path.join(d, fname), XATTR_KIND) == "shared"
    r = take(d, "r", SHARED)              # shares with the foreign reader
    w = start_waiter(d, "w", WRITE)
    w.assert_waiting()
    r.release()
    w.assert_waiting()                    # the foreign reader still holds
    zkc.delete(f)
    w.wait_granted()


# --- a waiting entry deleted by someone else ----------------------------------
# A grant that does not list the children again (a hand-off, or a grant on
# the deletion of a predecessor that held the lock) must not hand the lock to
# a waiter whose own entry is gone: another client may hold it by then.

def test_waiter_whose_entry_was_deleted_is_not_granted_on_its_predecessors_delete(mount, zkc):
    m = mount()
    d = lockdir(m)
    zl = m.zkpath("L")
    h = zkc.create(zl + "/_c_h-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    w = start_waiter(d, "w")
    w.assert_waiting(0.5)
    zkc.delete(zl + "/" + w.entry)
    v = zkc.create(zl + "/_c_v-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    zkc.delete(h)                        # v is first now: v holds
    assert w.wait_error(5) == "EIO", sorted(zkc.get_children(zl))
    zkc.delete(v)


def test_waiter_whose_entry_was_deleted_gets_no_hand_off(mount, zkc):
    m = mount()
    d = lockdir(m)
    zl = m.zkpath("L")
    h = take(d, "h")
    w = start_waiter(d, "w")
    w.assert_waiting(0.5)
    zkc.delete(zl + "/" + w.entry)
    v = zkc.create(zl + "/_c_v-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    h.release()
    assert w.wait_error(5) == "EIO", sorted(zkc.get_children(zl))
    zkc.delete(v)


def test_waiter_behind_an_entry_of_ours_deleted_by_someone_else_moves_on(mount, zkc):
    """r2 waits behind our writer x1, which waits behind another client's
    reader.  When x1's entry is deleted, only a shared entry is before r2."""
    m = mount()
    d = lockdir(m)
    zl = m.zkpath("L")
    s0 = zkc.create(zl + "/_c_s-read-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    x1 = start_waiter(d, "x1", WRITE)
    x1.assert_waiting(0.3)
    r2 = start_waiter(d, "r2", SHARED)
    r2.assert_waiting(0.3)
    zkc.delete(zl + "/" + x1.entry)
    assert x1.wait_error(5) == "EIO"
    r2.wait_granted()
    r2.release()
    zkc.delete(s0)
    wait_no_entries(d)


def test_lock_directory_made_again_restarts_numbering(mount, zkc):
    """The lock znode deleted and made again by someone else numbers its
    entries from 0 again: ours, numbered after another client's, waits."""
    m = mount()
    d = lockdir(m)
    zl = m.zkpath("L")
    take(d, "warm").release()
    wait_no_entries(d)
    zkc.delete(zl)
    zkc.create(zl, b"")
    f = zkc.create(zl + "/_c_f-lock-", b"", zkclient.EPHEMERAL_SEQUENTIAL)
    _waits_for_then_gets(zkc, d, f)
