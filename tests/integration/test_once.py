"""zklock --once-per PERIOD: cluster cron that runs once a period, not once a
host (docs/SPEC.md, "The command-line tool").

Three mounts stand for three hosts whose crontabs start the same short
job. A lock alone keeps the runs from overlapping, but a 200 ms job ends
before the next host's cron fires: with --once-per, zklock records each run
in the lock znode's data on the ensemble's own times and skips a run that
another host made within the period, saying who made it. What these tests
hold zklock and the daemon to:
  * started at once, and again one after another, the job runs once;
  * a skip exits 0 (or --skipped-exit's code) with one line naming the host
    and time of the run that counts;
  * -n while this period's run still holds the lock is a skip; -w waits,
    then skips;
  * once the period is over, the next run runs;
  * a host whose clock is set a day wrong (faketime, daemon and zklock)
    skips and runs as the others do: no client clock is read;
  * --list shows the last run and its exit status.
"""

import os
import re
import shutil
import time

import pytest

from harness import GRANT_TIMEOUT, wait_for
from zklockrun import Run, zk
from zklockrun import kill_descendants  # noqa: F401 (autouse)

# The job: appends its tag to a local log (the runs that happened), then
# works 200 ms.
JOB = 'echo "$1" >> "$2"; sleep 0.2'


def hosts(mount, n=3, **kw):
    """n mounts of the session's ZooKeeper: n hosts; and the lock's path on
    each, under a folder (a lock's path never ends at a mount point)."""
    ms = [mount(**kw) for _ in range(n)]
    os.makedirs(ms[0].p("cluster"), exist_ok=True)
    wait_for(lambda: all(os.path.isdir(m.p("cluster")) for m in ms), GRANT_TIMEOUT,
             "the folder on every mount")
    return ms, [m.p("cluster", "nightly") for m in ms]


def cron(zklock, lock, tag, log, *opts):
    return Run(zklock, "--once-per", "1h", *opts, lock, "sh", "-c", JOB, "job", tag, log)


def runs(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return f.read().split()


def test_three_hosts_started_at_once_run_the_job_once(mount, zklock, scratch):
    _, locks = hosts(mount)
    log = os.path.join(scratch, "runs")
    rs = [cron(zklock, lock, "h%d" % i, log, "-w", "30") for i, lock in enumerate(locks)]
    for r in rs:
        assert r.finish() == 0, r.err
    assert len(runs(log)) == 1, runs(log)
    ran = [r for r in rs if "skipped" not in r.err]
    assert len(ran) == 1, [r.err for r in rs]
    named = set()
    for r in rs:
        if r is ran[0]:
            continue
        # one line, naming the run that counts: its host, pid and time
        assert r.err.count("\n") == 1, r.err
        m = re.search(r"skipped: this period's run \(--once-per\) started "
                      r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z on \S+ \(pid (\d+)\)", r.err)
        assert m, r.err
        named.add(m.group(1))
    assert len(named) == 1, named


def test_staggered_hosts_run_the_job_once(mount, zklock, scratch):
    _, locks = hosts(mount)
    log = os.path.join(scratch, "runs")
    for i, lock in enumerate(locks):    # each after the last one ended
        r = cron(zklock, lock, "h%d" % i, log)
        assert r.finish() == 0, r.err
        assert ("skipped" in r.err) == (i > 0), r.err
    assert runs(log) == ["h0"]


def test_a_skip_exits_with_skipped_exit(mount, zklock, scratch):
    _, locks = hosts(mount, 2)
    log = os.path.join(scratch, "runs")
    assert cron(zklock, locks[0], "a", log).finish() == 0
    r = cron(zklock, locks[1], "b", log, "--skipped-exit", "3")
    assert r.finish() == 3 and "skipped" in r.err, (r.rc, r.err)
    assert runs(log) == ["a"]


def test_nonblock_while_this_periods_run_holds_is_a_skip(mount, zklock, scratch):
    _, locks = hosts(mount, 2)
    gate = os.path.join(scratch, "gate")
    log = os.path.join(scratch, "runs")
    a = Run(zklock, "--once-per", "1h", locks[0], "sh", "-c",
            'echo a >> "$1"; echo running; while [ ! -e "$2" ]; do sleep 0.05; done',
            "job", log, gate)
    assert a.expect_line() == "running"
    r = cron(zklock, locks[1], "b", log, "-n")
    assert r.finish() == 0 and "skipped" in r.err, (r.rc, r.err)
    # without --once-per, the same -n is busy
    rc, _, err = zk(zklock, "-n", locks[1], "true")
    assert rc == 1, (rc, err)
    # -w waits for the run to end, then skips
    w = cron(zklock, locks[1], "c", log, "-w", "30")
    open(gate, "w").close()
    assert a.finish() == 0
    assert w.finish() == 0 and "skipped" in w.err, (w.rc, w.err)
    assert runs(log) == ["a"]


def test_the_next_period_runs_again(mount, zklock, scratch):
    _, locks = hosts(mount, 2)
    log = os.path.join(scratch, "runs")
    assert Run(zklock, "--once-per", "2", locks[0], "sh", "-c", JOB, "job", "a",
               log).finish() == 0
    r = Run(zklock, "--once-per", "2", locks[1], "sh", "-c", JOB, "job", "b", log)
    assert r.finish() == 0 and "skipped" in r.err
    time.sleep(2.0)     # the thing under test: the period passing
    r = Run(zklock, "--once-per", "2", locks[1], "sh", "-c", JOB, "job", "c", log)
    assert r.finish() == 0 and "skipped" not in r.err, r.err
    assert runs(log) == ["a", "c"]


def test_list_shows_the_last_run_and_its_exit_status(mount, zklock):
    _, locks = hosts(mount, 1)
    r = Run(zklock, "--once-per", "1h", locks[0], "sh", "-c", "exit 7")
    assert r.finish() == 7
    rc, out, _ = zk(zklock, "--list", locks[0])
    assert rc == 0
    assert re.search(r"last run \(--once-per\): started \S+Z by \S+ \(pid %d\), exit 7"
                     % r.pid, out), out


@pytest.mark.skipif(not shutil.which("faketime"), reason="faketime is not installed")
@pytest.mark.parametrize("offset", ["+1d", "-1d"])
def test_a_host_whose_clock_is_wrong_runs_and_skips_as_the_others(mount, zklock,
                                                                   scratch, offset):
    """zklock on the wrong host sees a clock a day off (the real time only:
    monotonic clocks run true, as on a host set wrong), and the run is
    decided all the same. The daemon's part reads no clock by construction:
    fs/state.c compares only the stamps ZooKeeper put on the lock's znode
    (libfaketime cannot run the daemon: it breaks waits on CLOCK_MONOTONIC,
    which the daemon's condition variables use)."""
    # (a sanitizer build's runtime must let libfaketime load first)
    asan = ":".join(o for o in (os.environ.get("ASAN_OPTIONS"), "verify_asan_link_order=0") if o)
    fake = ("env", "FAKETIME_DONT_FAKE_MONOTONIC=1", "ASAN_OPTIONS=" + asan,
            "faketime", "-f", offset)
    _, (right, wrong) = hosts(mount, 2)
    log = os.path.join(scratch, "runs")
    # the wrong host runs first: the right one skips
    r = Run(*fake, zklock, "--once-per", "1h", wrong, "sh", "-c", JOB, "job", "w", log)
    assert r.finish() == 0 and "skipped" not in r.err, r.err
    r = cron(zklock, right, "r", log)
    assert r.finish() == 0 and "skipped" in r.err, r.err
    # and the wrong host skips after the right one's run
    r = Run(*fake, zklock, "--once-per", "1h", wrong, "sh", "-c", JOB, "job", "w2", log)
    assert r.finish() == 0 and "skipped" in r.err, r.err
    assert runs(log) == ["w"]
