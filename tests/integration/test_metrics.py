"""user.zklockfs.metrics on a mount point: the mount's figures in the
Prometheus text format (docs/SPEC.md, "Beyond the mutex"), read with the
Prometheus project's own parser (python3-prometheus-client)."""

import errno
import os
import signal
import subprocess

import pytest

import harness
from harness import (GRANT_TIMEOUT, RDWR, lockdir, seen_dir, start_waiter, take,
                     assert_queued, wait_for, lock_state)

parser = pytest.importorskip("prometheus_client.parser",
                             reason="python3-prometheus-client is not installed")

METRICS = "user.zklockfs.metrics"


def figures(m):
    """{(sample name, frozenset of labels): value} of mount @m, and the
    families' types; the text must parse whole."""
    text = os.getxattr(m.path, METRICS).decode()
    out, types = {}, {}
    for fam in parser.text_string_to_metric_families(text):
        types[fam.name] = fam.type
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out, types


def val(f, name, **labels):
    return f[(name, frozenset(labels.items()))]


def test_the_text_parses_and_names_every_figure(mount):
    m = mount()
    f, types = figures(m)
    assert types["zklockfs_grants"] == "counter"
    assert types["zklockfs_waiters"] == "gauge"
    assert types["zklockfs_wait_seconds"] == "histogram"
    assert types["zklockfs_hold_seconds"] == "histogram"
    for cause in ("deleted", "silent", "expired"):
        assert val(f, "zklockfs_losses_total", cause=cause) == 0
    assert val(f, "zklockfs_session_state", state="connected") == 1
    assert val(f, "zklockfs_session_state", state="expired") == 0
    assert METRICS in os.listxattr(m.path)
    d = lockdir(m)
    assert METRICS not in os.listxattr(d)
    with pytest.raises(OSError) as e:
        os.getxattr(d, METRICS)
    assert e.value.errno == errno.ENODATA
    with pytest.raises(OSError) as e:
        os.setxattr(m.path, METRICS, b"0")
    assert e.value.errno == errno.ENOTSUP


def test_grants_releases_waiters_holders_and_times(mount):
    m = mount()
    d = lockdir(m)
    f0, _ = figures(m)
    n = 5
    for i in range(n):
        take(d, "h%d" % i, RDWR).release()
    h = take(d, "h", RDWR)
    w = start_waiter(d, "w", RDWR)
    assert_queued(w, d)
    f, _ = figures(m)
    assert val(f, "zklockfs_grants_total") - val(f0, "zklockfs_grants_total") == n + 1
    assert val(f, "zklockfs_releases_total") - val(f0, "zklockfs_releases_total") == n
    assert val(f, "zklockfs_waiters") == 1
    assert val(f, "zklockfs_holders") == 1
    assert val(f, "zklockfs_wait_seconds_count") == n + 1
    assert val(f, "zklockfs_hold_seconds_count") == n
    assert val(f, "zklockfs_hold_seconds_bucket", le="+Inf") == n
    assert val(f, "zklockfs_hold_seconds_sum") > 0
    h.release()
    w.wait_granted()
    w.release()
    f, _ = figures(m)
    assert val(f, "zklockfs_waiters") == 0 and val(f, "zklockfs_holders") == 0
    assert val(f, "zklockfs_wait_seconds_count") == n + 2


def test_eagain_and_eintr_are_counted(mount):
    m = mount()
    d = lockdir(m)
    h = take(d, "h", RDWR)
    nb = harness.Locker(os.path.join(d, "nb"), RDWR | os.O_NONBLOCK)
    assert nb.wait_error() == "EAGAIN"
    w = start_waiter(d, "w", RDWR, alarm=None)
    assert_queued(w, d)
    w.kill(signal.SIGINT)               # interrupts the open: EINTR
    wait_for(lambda: val(figures(m)[0], "zklockfs_refusals_total", errno="EINTR") == 1,
             GRANT_TIMEOUT, "the interrupted open counted")
    f, _ = figures(m)
    assert val(f, "zklockfs_refusals_total", errno="EAGAIN") == 1
    assert val(f, "zklockfs_waiters") == 0
    h.release()


def test_a_lock_deleted_by_another_mount_counts_a_loss(mount):
    m1, m2 = mount(), mount()
    d1, d2 = lockdir(m1), seen_dir(m2)
    h = take(d1, "h", RDWR)
    os.unlink(os.path.join(d2, h.entry))
    wait_for(lambda: lock_state(h) == "lost", GRANT_TIMEOUT, "the loss")
    f, _ = figures(m1)
    assert val(f, "zklockfs_losses_total", cause="deleted") == 1
    assert val(f, "zklockfs_holders") == 0
    h.release()
    f, _ = figures(m1)
    assert val(f, "zklockfs_releases_total") == 0     # lost, not given back


def test_zklock_prints_them(mount):
    zk = harness.zklock_binary()
    if not os.access(zk, os.X_OK):
        pytest.skip("zklock not built")
    m = mount()
    r = subprocess.run([zk, "--metrics", m.path], capture_output=True, text=True,
                       timeout=GRANT_TIMEOUT)
    assert r.returncode == 0, r.stderr
    names = {fam.name for fam in parser.text_string_to_metric_families(r.stdout)}
    assert "zklockfs_grants" in names
    r = subprocess.run([zk, "--metrics", "/tmp"], capture_output=True, text=True,
                       timeout=GRANT_TIMEOUT)
    assert r.returncode == 66
    os.mkdir(m.p("d"))
    r = subprocess.run([zk, "--metrics", m.p("d")], capture_output=True, text=True,
                       timeout=GRANT_TIMEOUT)
    assert r.returncode == 66 and "not its mount point" in r.stderr, r


def test_local_grants_and_lingering_are_counted(mount):
    m = mount(opts=("linger=60000",))
    d = lockdir(m)
    for _ in range(3):
        os.close(os.open(os.path.join(d, "l"), os.O_CREAT | os.O_RDWR, 0o644))
    f, types = figures(m)
    assert types["zklockfs_local_grants"] == "counter"
    assert val(f, "zklockfs_local_grants_total", how="linger") == 2
    assert val(f, "zklockfs_lingering") == 1
    # a waiter of this mount right behind a holder: the release hands it over
    h = take(d, "h", RDWR)                 # ends the linger (another name)
    w = start_waiter(d, "w", RDWR)
    assert_queued(w, d)
    h.release()
    w.wait_granted()
    f, _ = figures(m)
    assert val(f, "zklockfs_lingering") == 0
    assert val(f, "zklockfs_local_grants_total", how="cohort") == 1
    w.release()
