"""Python programs taking zklockfs locks the way Python programmers do:
threads, concurrent.futures.ThreadPoolExecutor, asyncio with
run_in_executor, fcntl.flock and fcntl.lockf.  Run by
tests/integration/test_languages.py; see tests/conformance/README.md.

    python3 locks.py MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH
    python3 locks.py walk ROOT

Each of TASKS tasks (named PREFIX "t" N) does CYCLES critical sections on
PATH (a lock directory: the task opens PATH/ITS_NAME with O_CREAT; a lock
file: the task locks its own descriptor of PATH).  A section appends
"enter ID NS" to LOG once the lock is granted, sleeps HOLD_MS in 1 ms steps
(time.sleep, or asyncio.sleep in a coroutine: either lets another task
run), appends "leave ID NS", and only then gives the lock back; the task
pauses 1 ms (the same way) before its next cycle.  NS is
time.monotonic_ns(); each line is one os.write to LOG opened O_APPEND.
Exit 0 once every task did its cycles; a failure is printed on stderr and
the exit status is 1.

    dir-threads       threading.Thread per task: os.open / os.close
    dir-poolN         tasks are threads that hand their os.open to one
                      ThreadPoolExecutor(max_workers=N) (blocking I/O
                      offloaded) and close in their own thread
    dir-asyncioN      coroutines: await loop.run_in_executor(pool, os.open,
                      ...) with a ThreadPoolExecutor(max_workers=N); the
                      section awaits asyncio.sleep; os.close on the loop
    file-threads      threading.Thread per task, its own file object:
                      fcntl.flock(LOCK_EX) / flock(LOCK_UN)
    file-pool1        flock(LOCK_EX) handed to a ThreadPoolExecutor(1),
                      LOCK_UN in the task's own thread
    file-asyncio1     coroutines: await run_in_executor(pool of 1,
                      fcntl.flock, f, LOCK_EX); LOCK_UN on the loop
    file-lockf-procs  multiprocessing.Process per task: fcntl.lockf (a POSIX
                      lock is the process's, so tasks are processes)

A pool's thread runs one task's open (or flock) after another's: it is the
thread that asked for the lock that another task now holds.  A lock is the
open file description's, never the thread's, so that open waits.  Only the
asking thread is blocked: the holder gives the lock back from its own
thread or from the event loop, never through the pool the waiter occupies.

One thread, two descriptors (LOG, TASKS, ... given but not used):
    reopen PATH, reflock PATH, nb PATH - as in locks.c: prints
    "granted 1|0" or "error ERRNO"; "nb ERRNO" and "after ERRNO".

walk ROOT (a tree of lock directories): prints "walk REL" for each
directory os.walk finds under ROOT, "list NAME" for each entry of
os.scandir(ROOT), then removes the tree with shutil.rmtree and prints
"removed".  Each of the three is tried whatever the others did; a failure
is "error API: ..." on stderr, and the exit status is 1.
"""

import asyncio
import concurrent.futures
import fcntl
import multiprocessing
import os
import shutil
import sys
import threading
import time


def main():
    if sys.argv[1] == "walk":
        return walk(sys.argv[2])
    mode, log, tasks, cycles, hold_ms, prefix, path = sys.argv[1:8]
    tasks, cycles, hold_ms = int(tasks), int(cycles), int(hold_ms)
    if mode in ("reopen", "reflock", "nb"):
        return one_thread(mode, path)
    logfd = os.open(log, os.O_WRONLY | os.O_APPEND)
    ids = ["%st%d" % (prefix, i) for i in range(tasks)]
    failures = []

    def logline(what, tid):
        os.write(logfd, ("%s %s %d\n" % (what, tid, time.monotonic_ns())).encode())

    def section(tid):
        logline("enter", tid)
        for _ in range(hold_ms):
            time.sleep(0.001)
        logline("leave", tid)

    async def asection(tid):
        logline("enter", tid)
        for _ in range(hold_ms):
            await asyncio.sleep(0.001)
        logline("leave", tid)

    def entry(tid):
        return os.path.join(path, tid)

    flags = os.O_CREAT | os.O_WRONLY

    def guarded(fn):
        def run(tid):
            try:
                fn(tid)
            except BaseException as e:
                failures.append("%s: %r" % (tid, e))
        return run

    def threads(fn):
        ts = [threading.Thread(target=guarded(fn), args=(tid,)) for tid in ids]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    def dir_thread(tid):
        for _ in range(cycles):
            fd = os.open(entry(tid), flags, 0o644)
            section(tid)
            os.close(fd)
            time.sleep(0.001)

    def file_cycles(tid, lock=fcntl.flock):
        """Cycles on the lock file through a descriptor of its own, locked
        by `lock` (fcntl.flock: the description's; fcntl.lockf: the
        process's POSIX lock)."""
        with open(path, "a+") as f:
            for _ in range(cycles):
                lock(f, fcntl.LOCK_EX)
                section(tid)
                lock(f, fcntl.LOCK_UN)
                time.sleep(0.001)

    def lockf_proc(tid):
        file_cycles(tid, fcntl.lockf)

    if mode == "dir-threads":
        threads(dir_thread)
    elif mode == "file-threads":
        threads(file_cycles)
    elif mode.startswith("dir-pool") or mode == "file-pool1":
        workers = int(mode[-1])
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            def dir_offload(tid):
                for _ in range(cycles):
                    fd = pool.submit(os.open, entry(tid), flags, 0o644).result()
                    section(tid)
                    os.close(fd)
                    time.sleep(0.001)

            def file_offload(tid):
                with open(path, "a+") as f:
                    for _ in range(cycles):
                        pool.submit(fcntl.flock, f, fcntl.LOCK_EX).result()
                        section(tid)
                        fcntl.flock(f, fcntl.LOCK_UN)
                        time.sleep(0.001)
            threads(dir_offload if mode.startswith("dir-") else file_offload)
    elif mode.startswith("dir-asyncio") or mode == "file-asyncio1":
        workers = int(mode[-1])

        async def amain():
            loop = asyncio.get_running_loop()
            pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)

            async def dir_task(tid):
                for _ in range(cycles):
                    fd = await loop.run_in_executor(pool, os.open, entry(tid),
                                                    flags, 0o644)
                    await asection(tid)
                    os.close(fd)
                    await asyncio.sleep(0.001)

            async def file_task(tid):
                with open(path, "a+") as f:
                    for _ in range(cycles):
                        await loop.run_in_executor(pool, fcntl.flock, f,
                                                   fcntl.LOCK_EX)
                        await asection(tid)
                        fcntl.flock(f, fcntl.LOCK_UN)
                        await asyncio.sleep(0.001)
            fn = dir_task if mode.startswith("dir-") else file_task
            results = await asyncio.gather(*(fn(tid) for tid in ids),
                                           return_exceptions=True)
            pool.shutdown(wait=False, cancel_futures=True)
            failures.extend("%s: %r" % (tid, r) for tid, r in zip(ids, results)
                            if isinstance(r, BaseException))
        asyncio.run(amain())
    elif mode == "file-lockf-procs":
        ctx = multiprocessing.get_context("fork")
        procs = [ctx.Process(target=lockf_proc, args=(tid,)) for tid in ids]
        for p in procs:
            p.start()
        for tid, p in zip(ids, procs):
            p.join()
            if p.exitcode != 0:
                failures.append("%s: process exited %r" % (tid, p.exitcode))
    else:
        sys.exit("unknown mode %s" % mode)
    if failures:
        sys.stderr.write("".join("error %s\n" % f for f in failures))
        # a task may still wait on the lock: end without joining it
        sys.stderr.flush()
        os._exit(1)


def one_thread(mode, path):
    released = threading.Event()

    def release_later(how):
        time.sleep(0.3)
        released.set()
        how()

    def report(fn):
        try:
            fn()
            print("granted %d" % released.is_set(), flush=True)
        except OSError as e:
            print("error %d" % e.errno, flush=True)

    if mode == "reopen":
        first = os.open(os.path.join(path, "a"), os.O_CREAT | os.O_WRONLY)
        t = threading.Thread(target=release_later, args=(lambda: os.close(first),))
        t.start()
        report(lambda: os.open(os.path.join(path, "b"), os.O_CREAT | os.O_WRONLY))
        t.join()
        return
    first, second = open(path, "a+"), open(path, "a+")
    fcntl.flock(first, fcntl.LOCK_EX)
    if mode == "reflock":
        t = threading.Thread(target=release_later,
                             args=(lambda: fcntl.flock(first, fcntl.LOCK_UN),))
        t.start()
        report(lambda: fcntl.flock(second, fcntl.LOCK_EX))
        t.join()
        return

    def errno_of(fn):
        try:
            fn()
            return 0
        except OSError as e:
            return e.errno
    print("nb %d" % errno_of(lambda: fcntl.flock(second, fcntl.LOCK_EX | fcntl.LOCK_NB)),
          flush=True)
    fcntl.flock(first, fcntl.LOCK_UN)
    print("after %d" % errno_of(lambda: fcntl.flock(second, fcntl.LOCK_EX)), flush=True)


def walk(root):
    failed = False
    try:
        for dirpath, dirnames, _ in os.walk(root, onerror=raise_it):
            for d in dirnames:
                print("walk", os.path.relpath(os.path.join(dirpath, d), root))
    except OSError as e:
        failed = True
        sys.stderr.write("error os.walk: %r\n" % e)
    try:
        with os.scandir(root) as it:
            for e in it:
                print("list", e.name)
    except OSError as e:
        failed = True
        sys.stderr.write("error os.scandir: %r\n" % e)
    try:
        shutil.rmtree(root)
    except OSError as e:
        failed = True
        sys.stderr.write("error shutil.rmtree: %r\n" % e)
    if failed:
        sys.exit(1)
    print("removed", flush=True)


def raise_it(e):
    raise e


if __name__ == "__main__":
    main()
