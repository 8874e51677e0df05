// Rust programs taking zklockfs locks the way Rust programmers do with the
// standard library alone: std::thread with std::fs::OpenOptions on a lock
// directory, flock(2) on a lock file (declared here: libc's flock is not
// in std, and no crate is used), and a lock tree walked with
// std::fs::read_dir and removed with std::fs::remove_dir_all.  Run by
// tests/integration/test_languages.py (built with Debian's
// /usr/bin/rustc -O locks.rs); see tests/conformance/README.md.
//
//   locks MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH
//   locks walk ROOT
//
// Each of TASKS threads (named PREFIX "t" N) does CYCLES critical sections
// on PATH.  A section appends "enter ID NS" to LOG once the lock is
// granted, sleeps HOLD_MS in 1 ms steps (each followed by
// thread::yield_now), appends "leave ID NS", and only then gives the lock
// back; the thread sleeps 1 ms before its next cycle.  NS is
// CLOCK_MONOTONIC; each line is one write to LOG opened with append(true).
// Exit 0 once every task did its cycles; a failure is printed on stderr
// and the exit status is 1.
//
//   dir-threads   OpenOptions::new().write(true).create(true).open(PATH/ID),
//                 drop
//   file-threads  each thread its own File of PATH: flock LOCK_EX / LOCK_UN
//
// One thread, two descriptors: reopen, reflock, nb as in locks.c
// ("granted 1|0" or "error ERRNO"; "nb ERRNO" and "after ERRNO").
//
// walk ROOT: "walk REL" for each directory found under ROOT by recursing
// with read_dir, "list NAME" for each entry of read_dir(ROOT), then
// remove_dir_all(ROOT) and "removed".
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

const LOCK_EX: i32 = 2;
const LOCK_NB: i32 = 4;
const LOCK_UN: i32 = 8;
const CLOCK_MONOTONIC: i32 = 1;

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn flock(fd: i32, op: i32) -> i32;
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

fn now_ns() -> i64 {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn lock(f: &File, op: i32) -> io::Result<()> {
    if unsafe { flock(f.as_raw_fd(), op) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn errno_of(r: io::Result<()>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.raw_os_error().unwrap_or(-1),
    }
}

fn fail(id: &str, what: &str, e: io::Error) -> ! {
    eprintln!("error {}: {}: {}", id, what, e);
    std::process::exit(1);
}

struct Ctx {
    log: File,
    cycles: usize,
    hold_ms: usize,
    path: PathBuf,
}

impl Ctx {
    fn logline(&self, what: &str, id: &str) {
        let line = format!("{} {} {}\n", what, id, now_ns());
        if let Err(e) = (&self.log).write_all(line.as_bytes()) {
            fail(id, "write log", e);
        }
    }

    fn section(&self, id: &str) {
        self.logline("enter", id);
        for _ in 0..self.hold_ms {
            thread::sleep(Duration::from_millis(1));
            thread::yield_now();
        }
        self.logline("leave", id);
    }

    fn dir_task(&self, id: &str) {
        for _ in 0..self.cycles {
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .open(self.path.join(id))
                .unwrap_or_else(|e| fail(id, "open", e));
            self.section(id);
            drop(f);
            thread::sleep(Duration::from_millis(1));
        }
    }

    fn file_task(&self, id: &str) {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .open(&self.path)
            .unwrap_or_else(|e| fail(id, "open", e));
        for _ in 0..self.cycles {
            lock(&f, LOCK_EX).unwrap_or_else(|e| fail(id, "flock(LOCK_EX)", e));
            self.section(id);
            lock(&f, LOCK_UN).unwrap_or_else(|e| fail(id, "flock(LOCK_UN)", e));
            thread::sleep(Duration::from_millis(1));
        }
    }
}

fn open_rw(p: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .open(p)
        .unwrap_or_else(|e| fail("main", "open", e))
}

fn one_thread(mode: &str, path: &Path) {
    let released = Arc::new(AtomicBool::new(false));
    let report = |r: io::Result<()>, released: &AtomicBool| match r {
        Ok(()) => println!("granted {}", released.load(Ordering::SeqCst) as i32),
        Err(e) => println!("error {}", e.raw_os_error().unwrap_or(-1)),
    };
    if mode == "reopen" {
        let first = OpenOptions::new()
            .write(true)
            .create(true)
            .open(path.join("a"))
            .unwrap_or_else(|e| fail("main", "open a", e));
        let r = released.clone();
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            r.store(true, Ordering::SeqCst);
            drop(first);
        });
        let second = OpenOptions::new().write(true).create(true).open(path.join("b"));
        report(second.map(|_| ()), &released);
        t.join().unwrap();
        return;
    }
    let first = Arc::new(open_rw(path));
    let second = open_rw(path);
    lock(&first, LOCK_EX).unwrap_or_else(|e| fail("main", "flock(LOCK_EX)", e));
    if mode == "reflock" {
        let (r, f) = (released.clone(), first.clone());
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            r.store(true, Ordering::SeqCst);
            lock(&f, LOCK_UN).unwrap_or_else(|e| fail("releaser", "flock(LOCK_UN)", e));
        });
        report(lock(&second, LOCK_EX), &released);
        t.join().unwrap();
        return;
    }
    println!("nb {}", errno_of(lock(&second, LOCK_EX | LOCK_NB)));
    lock(&first, LOCK_UN).unwrap_or_else(|e| fail("main", "flock(LOCK_UN)", e));
    println!("after {}", errno_of(lock(&second, LOCK_EX)));
}

fn walk(root: &Path, dir: &Path) -> io::Result<()> {
    for e in fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            let p = e.path();
            println!("walk {}", p.strip_prefix(root).unwrap().display());
            walk(root, &p)?;
        }
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "walk" {
        let root = Path::new(&args[2]);
        walk(root, root).unwrap_or_else(|e| fail("walk", "read_dir", e));
        for e in fs::read_dir(root).unwrap_or_else(|e| fail("walk", "read_dir", e)) {
            let e = e.unwrap_or_else(|e| fail("walk", "read_dir", e));
            println!("list {}", e.file_name().to_string_lossy());
        }
        fs::remove_dir_all(root).unwrap_or_else(|e| fail("walk", "remove_dir_all", e));
        println!("removed");
        return;
    }
    if args.len() != 8 {
        eprintln!("usage: locks MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH | locks walk ROOT");
        std::process::exit(2);
    }
    let mode = args[1].as_str();
    if mode == "reopen" || mode == "reflock" || mode == "nb" {
        one_thread(mode, Path::new(&args[7]));
        return;
    }
    let tasks: usize = args[3].parse().unwrap();
    let ctx = Arc::new(Ctx {
        log: OpenOptions::new()
            .append(true)
            .open(&args[2])
            .unwrap_or_else(|e| fail("main", "open log", e)),
        cycles: args[4].parse().unwrap(),
        hold_ms: args[5].parse().unwrap(),
        path: PathBuf::from(&args[7]),
    });
    let file = match mode {
        "dir-threads" => false,
        "file-threads" => true,
        _ => {
            eprintln!("unknown mode {}", mode);
            std::process::exit(2);
        }
    };
    let threads: Vec<_> = (0..tasks)
        .map(|i| {
            let ctx = ctx.clone();
            let id = format!("{}t{}", args[6], i);
            thread::spawn(move || {
                if file {
                    ctx.file_task(&id)
                } else {
                    ctx.dir_task(&id)
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
