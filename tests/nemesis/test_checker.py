"""The nemesis checker can fail: planted histories, each with the one
fault the checker must report (and clean ones it must pass)."""

import json
import os
import subprocess
import sys

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checker.py")


def beats(client, sec, lock, t0, t1, mode="x", cls="zklock", host="h1", step=0.01):
    n = max(1, int(round((t1 - t0) / step)))
    return [dict(ev="beat", t=t0 + i * (t1 - t0) / n, client=client, sec=sec, lock=lock,
                 mode=mode, cls=cls, host=host) for i in range(n + 1)]


def end(t, session_timeout=10.0, bound=5.0):
    return [dict(ev="end", t=t, session_timeout=session_timeout, bound=bound)]


def check(tmp_path, *parts):
    with open(tmp_path / "h.jsonl", "w") as f:
        for part in parts:
            for e in part:
                f.write(json.dumps(e) + "\n")
        f.write('{"ev": "beat", "t": 1.0, "cli')     # a line cut by a kill
    r = subprocess.run([sys.executable, CHECKER, str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    return r.returncode, r.stdout


def verdict(out):
    return out.strip().splitlines()[-1]


def test_a_clean_history_passes(tmp_path):
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 1), beats("b", 1, "L", 1.1, 2),
                    beats("r1", 1, "L", 2.2, 3, mode="s"), beats("r2", 1, "L", 2.5, 3.5, mode="s"),
                    end(4))
    assert rc == 0, out
    assert verdict(out) == ("nemesis: 4 critical sections, 0 overlaps, 0 fencing violations, "
                            "0 leftovers, faults 0")


def test_a_planted_overlap_fails(tmp_path):
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 1), beats("b", 7, "L", 0.9, 2,
                                                              cls="end", host="h2"), end(3))
    assert rc == 1 and "overlap end/zklock: 1" in out, out
    assert ", 1 overlaps," in verdict(out)


def test_shared_under_exclusive_fails(tmp_path):
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 1), beats("r", 1, "L", 0.5, 0.7,
                                                              mode="s", cls="tell"), end(3))
    assert rc == 1 and "overlap tell/zklock: 1" in out, out


def test_accepted_overlaps_are_reported_apart(tmp_path):
    frozen = [dict(ev="frozen", t=0.5, until=0.8, host="h2")]
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 1),
                    beats("i", 1, "L", 0.2, 0.3, cls="ignore", host="h3"),
                    beats("f", 1, "L", 0.6, 0.7, cls="tell", host="h2"), frozen, end(3))
    assert rc == 0, out
    assert "accepted overlap ignore/zklock: 1" in out and "accepted overlap tell/zklock: 1" in out


def test_fencing_tokens_must_rise_with_the_spans(tmp_path):
    w = [dict(ev="write", t=0.5, client="a", sec=1, lock="L", token=[20, 2], ok=True),
         dict(ev="write", t=1.5, client="b", sec=1, lock="L", token=[10, 1], ok=True)]
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 1), beats("b", 1, "L", 1.1, 2), w, end(3))
    assert rc == 1 and "fencing: L: token [10, 1]" in out, out


def test_a_stale_write_accepted_fails(tmp_path):
    w = [dict(ev="write", t=0.5, client="a", sec=1, lock="L", token=[10, 1], ok=True),
         dict(ev="write", t=1.3, client="a", sec=1, lock="L", token=[10, 1], ok=True),
         dict(ev="write", t=1.5, client="b", sec=1, lock="L", token=[20, 2], ok=True)]
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 1), beats("b", 1, "L", 1.1, 2), w, end(3))
    assert rc == 1 and "after the next section began" in out, out


def test_a_lock_not_held_again_after_the_last_heal_fails(tmp_path):
    fault = [dict(ev="fault", t=1.0, until=2.0, kind="partition", target="h1")]
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 0.5), fault, end(40))
    assert rc == 1 and "liveness: L: not held again within 15 s" in out, out
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 0.5), beats("a", 2, "L", 9, 10),
                    fault, end(40))
    assert rc == 0 and "longest wait for a lock after a heal (no fault left, none begun): 7.00 s" in out, out


def test_leftovers_fail(tmp_path):
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 1),
                    [dict(ev="leftover", t=2, what="entry /t/L/x-lock-0000000001")], end(3))
    assert rc == 1 and "leftover: entry" in out and ", 1 leftovers," in verdict(out), out


def test_waits_are_measured_from_the_moments_no_fault_was_left(tmp_path):
    # a heal at 2 while another fault lasts until 6: the wait counts from 6
    faults = [dict(ev="fault", t=1.0, until=2.0, kind="host-cut", target="h1"),
              dict(ev="fault", t=1.5, until=6.0, kind="zk-kill", target="s1")]
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 0.5), beats("a", 2, "L", 9, 10),
                    faults, end(40))
    assert rc == 0 and "after a heal (no fault left, none begun): 3.00 s" in out, out
    # a fault that begins before the lock is held again: that wait is its too
    faults.append(dict(ev="fault", t=7.0, until=8.0, kind="zk-pause", target="s2"))
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 0.5), beats("a", 2, "L", 9, 10),
                    faults, end(40))
    assert rc == 0 and "after a heal (no fault left, none begun): 1.00 s" in out, out


def test_the_longest_a_holder_went_on_after_its_host_was_cut(tmp_path):
    # h1 cut at 2 until 20: its holder ended at 9.5 (7.5 s on); h2's was not cut,
    # and a section that began after the cut is not one it cut
    cut = [dict(ev="cut", t=2.0, until=20.0, host="h1")]
    rc, out = check(tmp_path, beats("a", 1, "L", 0, 9.5, host="h1/plain"),
                    beats("b", 1, "M", 0, 15, host="h2/plain"),
                    beats("c", 1, "N", 3, 18, host="h1/files"), cut, end(30))
    assert rc == 0 and "longest a holder went on after its host was cut off, class " \
        "zklock: 7.50 s (a#1" in out, out
