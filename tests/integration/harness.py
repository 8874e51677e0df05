"""The test harness of the zklockfs integration tests, by job:

  procs.py     spawn() and the child registry (kill_children), signal
               defaults for children, kill9(), the line reader with
               deadlines (Lines), errname(), time bounds (TICK, NOTICE,
               GRANT_LATENCY too), /proc helpers, Poller (a process
               blocked in poll() on a holder's descriptor), measured
               figures (record_figure, fig)
  zkserver.py  ZooKeeperServer, ZooKeeperEnsemble, zookeeper() (fixtures)
  mounts.py    Mount, fusermount(), mount_entry(), sanitizer_report(),
               emergency_stop(), lockdir(), seen_dir(), log_has(), the
               queue in ZooKeeper (zk_entries, named, wait_zk_entries)
  lockers.py   Locker, take(), start_waiter(), entry names, lock_state(),
               assert_queued(), assert_lost(), waiting(), round_trip()

This module only re-exports their public names: `import harness` /
`from harness import X` work for any of them. Only the Python standard
library is used.
"""

from procs import *      # noqa: F401,F403
from zkserver import *   # noqa: F401,F403
from mounts import *     # noqa: F401,F403
from lockers import *    # noqa: F401,F403
