#!/usr/bin/env python3
"""The nemesis checker: reads a run's history (the *.jsonl files of a
directory) and nothing else, knows nothing of zklockfs, and prints its
verdict.

    checker.py RUNDIR          exit 0 only when O, F and L are 0

The history is one JSON object a line, each with "t", a CLOCK_MONOTONIC
time in seconds that every process of the machine shares, and "ev":

  beat    a client inside a critical section: "client", "sec" (a section
          number, unique per client), "lock", "mode" ("x" exclusive, "s"
          shared), "cls" (how it holds: "zklock" a command run by zklock,
          "end" a holder on_loss=end ends, "tell" a holder that watches
          its descriptor for POLLERR, "ignore" a tell holder that ignores
          it), "host".  A section's span runs from its first beat to its
          last: a holder killed at a loss ends at its last beat.
  write   the fencing resource accepted ("ok": true) or refused a write:
          "client", "sec", "lock", "token" (a list of integers).
  frozen  the runner stopped a host's daemon: "host", "until".
  fault   the runner injected a fault: "kind", "target", "until" (healed).
  cut     a fault cut "host" off from a quorum of the servers, until "until".
  stall   the runner itself did not run for "gap" seconds.
  leftover  something left at the end: "what".
  end     the run's end: "session_timeout", "bound" (the liveness bound
          after the last heal, beyond the session timeout).

What it reports:
  overlaps  two spans of one lock that overlap where either is exclusive,
            by class pair.  Accepted, and left out of O: a span of class
            "ignore", and a "tell" or "end" span whose host's daemon was
            frozen at the time (a frozen daemon can tell no one).
  fencing   tokens that do not rise in the order of the sections' spans,
            and accepted writes that landed after another section of the
            lock had begun.
  liveness  after the last heal, each lock that saw sections is held again
            within the session timeout plus the bound.  The longest wait
            for a lock is measured from each moment no fault was left, up
            to the next fault.
  cut gap   the longest time a holder on a host went on after its host
            was cut off, among the sections that ended while it was.
  leftovers what the runner found left at the end.
"""

import collections
import glob
import json
import os
import sys



def load(rundir):
    events = []
    for path in sorted(glob.glob(os.path.join(rundir, "*.jsonl"))):
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass            # a line cut by a kill: not a beat
    return events


class Span:
    def __init__(self, e):
        self.client, self.sec, self.lock = e["client"], e["sec"], e["lock"]
        self.mode, self.cls, self.host = e["mode"], e["cls"], e.get("host", "")
        self.start = self.end = e["t"]

    def __repr__(self):
        return "%s#%s %s %s [%.3f, %.3f]" % (self.client, self.sec, self.cls, self.mode,
                                             self.start, self.end)


def spans_of(events):
    spans = {}
    for e in events:
        if e.get("ev") != "beat":
            continue
        key = (e["client"], e["sec"])
        s = spans.get(key)
        if s is None:
            spans[key] = Span(e)
        else:
            s.start, s.end = min(s.start, e["t"]), max(s.end, e["t"])
    return list(spans.values())


def frozen_at(frozen, host, t0, t1):
    return any(h == host and a <= t1 and t0 <= b for h, a, b in frozen)


def accepted(a, b, frozen):
    """Is the overlap of spans @a and @b one the contract accepts?"""
    for s in (a, b):
        if s.cls == "ignore":
            return True
        if s.cls in ("tell", "end") and frozen_at(frozen, s.host, max(a.start, b.start),
                                                  min(a.end, b.end)):
            return True
    return False


def overlaps(spans, frozen):
    """{class pair: [(a, b), ...]} of the counted overlaps, and of the
    accepted ones."""
    counted, ok = collections.defaultdict(list), collections.defaultdict(list)
    by_lock = collections.defaultdict(list)
    for s in spans:
        by_lock[s.lock].append(s)
    for lock, ss in by_lock.items():
        ss.sort(key=lambda s: s.start)
        active = []
        for s in ss:
            active = [a for a in active if a.end > s.start]
            for a in active:
                if a.mode == "s" and s.mode == "s":
                    continue
                pair = "/".join(sorted((a.cls, s.cls)))
                (ok if accepted(a, s, frozen) else counted)[pair].append((a, s))
            active.append(s)
    return counted, ok


def fencing(spans, events):
    """The fencing violations, as lines."""
    bad = []
    writes = [e for e in events if e.get("ev") == "write" and e.get("ok")]
    by_sec = collections.defaultdict(list)
    for w in writes:
        by_sec[(w["client"], w["sec"])].append(w)
    sec_spans = {(s.client, s.sec): s for s in spans}
    by_lock = collections.defaultdict(list)
    for key, ws in by_sec.items():
        s = sec_spans.get(key)
        if s is not None:
            by_lock[s.lock].append((s, min(tuple(w["token"]) for w in ws), ws))
    for lock, secs in by_lock.items():
        secs.sort(key=lambda x: x[0].start)
        for (s0, t0, _), (s1, t1, _) in zip(secs, secs[1:]):
            if t1 <= t0:
                bad.append("%s: token %s of %r not above %s of the earlier %r"
                           % (lock, list(t1), s1, list(t0), s0))
        starts = sorted(x[0].start for x in secs)
        for s, _, ws in secs:
            later = [b for b in starts if b > s.start]
            for w in ws:
                if later and w["t"] > later[0]:
                    bad.append("%s: a write of %r accepted at %.3f, after the next section "
                               "began at %.3f" % (lock, s, w["t"], later[0]))
    return bad


def all_clear(faults, stop):
    """The heals before @stop that left no fault behind them."""
    return sorted(e["until"] for e in faults if e["until"] < stop and
                  not any(o is not e and o["t"] < e["until"] < o["until"] for o in faults))


def liveness(spans, events):
    """(the longest wait for a lock after a heal, the longest after the
    last one, violations as lines)."""
    end = [e for e in events if e.get("ev") == "end"]
    faults = [e for e in events if e.get("ev") == "fault"]
    if not end or not spans:
        return 0.0, 0.0, ([] if spans else ["no critical section at all"])
    limit = end[-1]["session_timeout"] + end[-1]["bound"]
    stop = end[-1]["t"]
    starts = collections.defaultdict(list)
    for s in spans:
        starts[s.lock].append(s.start)
    longest, last, bad = 0.0, 0.0, []
    heals = all_clear(faults, stop)
    for lock, st in starts.items():
        st.sort()
        for h in heals:
            nxt = next((x for x in st if x >= h), None)
            held = any(s.lock == lock and s.start < h <= s.end for s in spans)
            if held:
                continue
            wait = (nxt if nxt is not None else stop) - h
            # a wait that a new fault cut into measures that fault too
            if not any(h < f["t"] < h + wait for f in faults):
                longest = max(longest, wait)
            if h == heals[-1]:
                last = max(last, wait)
                if wait > limit:
                    bad.append("%s: not held again within %.0f s of the last heal (%.1f s)"
                               % (lock, limit, wait))
    return longest, last, bad


def cut_gap(spans, events):
    """{class: (the longest time a holder of that class went on after its
    host was cut off, that span)}, among the sections that ended while the
    cut lasted."""
    worst = {}
    for c in (e for e in events if e.get("ev") == "cut"):
        for s in spans:
            if s.host.split("/")[0] == c["host"] and s.start <= c["t"] < s.end < c["until"]:
                if s.end - c["t"] > worst.get(s.cls, (0.0, None))[0]:
                    worst[s.cls] = (s.end - c["t"], s)
    return worst


def main(argv):
    if len(argv) != 2:
        print("usage: checker.py RUNDIR", file=sys.stderr)
        return 2
    events = load(argv[1])
    spans = spans_of(events)
    frozen = [(e["host"], e["t"], e["until"]) for e in events if e.get("ev") == "frozen"]
    counted, ok = overlaps(spans, frozen)
    fence = fencing(spans, events)
    longest, last, live = liveness(spans, events)
    left = [e["what"] for e in events if e.get("ev") == "leftover"]
    faults = collections.Counter(e["kind"] for e in events if e.get("ev") == "fault")
    stalls = [e for e in events if e.get("ev") == "stall"]
    for pair, items in sorted(counted.items()):
        print("overlap %s: %d, first %r and %r" % (pair, len(items), *items[0]))
    for pair, items in sorted(ok.items()):
        print("accepted overlap %s: %d (a holder that ignores POLLERR, or a frozen "
              "daemon's)" % (pair, len(items)))
    for line in fence:
        print("fencing: " + line)
    for line in live:
        print("liveness: " + line)
    for what in left:
        print("leftover: " + what)
    if stalls:
        print("the runner stalled %d times, %.2f s at most" % (
            len(stalls), max(e["gap"] for e in stalls)))
    print("faults by kind: %s" % (", ".join("%s %d" % kv for kv in sorted(faults.items()))
                                  or "none"))
    print("longest wait for a lock after a heal (no fault left, none begun): %.2f s"
          % longest)
    print("after the last heal, every lock held again within %.2f s" % last)
    for cls, (gap, span) in sorted(cut_gap(spans, events).items()):
        print("longest a holder went on after its host was cut off, class %s: %.2f s (%r)"
              % (cls, gap, span))
    o = sum(len(v) for v in counted.values())
    lcount = len(left) + len(live)
    print("nemesis: %d critical sections, %d overlaps, %d fencing violations, "
          "%d leftovers, faults %d" % (len(spans), o, len(fence), lcount,
                                       sum(faults.values())))
    return 0 if o == 0 and not fence and lcount == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
