// Java programs taking zklockfs locks the way Java programmers do: threads
// and an ExecutorService opening a lock directory's entries with
// FileOutputStream and Files.newOutputStream(CREATE), FileChannel.lock()
// on a lock file, and a lock tree walked with Files.walk and Files.list and
// removed.  Run by tests/integration/test_languages.py (java 17, compiled
// with javac); see tests/conformance/README.md.
//
//   java Locks MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH
//   java Locks walk ROOT
//
// Each of TASKS tasks (named PREFIX "t" N) does CYCLES critical sections on
// PATH.  A section appends "enter ID NS" to LOG once the lock is granted,
// sleeps HOLD_MS in 1 ms steps, appends "leave ID NS", and only then gives
// the lock back; the task sleeps 1 ms before its next cycle.  NS is
// System.nanoTime() (CLOCK_MONOTONIC on Linux); each line is one write to
// LOG opened with APPEND.  Exit 0 once every task did its cycles; a failure
// is printed on stderr and the exit status is 1.
//
//   dir-threads    one Thread per task: new FileOutputStream(PATH/ID) / close
//   dir-executorN  tasks are threads that hand their open,
//                  Files.newOutputStream(PATH/ID, CREATE), to one
//                  Executors.newFixedThreadPool(N) (blocking I/O offloaded)
//                  and close the stream in their own thread: the pool's
//                  thread asks for the lock that another task holds
//   file-channel   one task (TASKS is 1): FileChannel.open(PATH, CREATE,
//                  WRITE) and channel.lock() / release() each cycle.  A
//                  FileChannel lock is the JVM's (fcntl F_SETLKW, a
//                  process's lock: one JVM throws
//                  OverlappingFileLockException at a second), so tasks are
//                  JVMs
//
//   reopen PATH    one thread, two entries of the lock directory PATH, as
//                  in locks.c: "granted 1|0" or "error MESSAGE"
//
// walk ROOT: "walk REL" for each directory Files.walk(ROOT) finds below
// ROOT, "list NAME" for each of Files.list(ROOT), then deletes every path
// of Files.walk(ROOT) deepest first (Files.delete) and prints "removed".
// Each of the three is tried whatever the others did; a failure is
// "error API: ..." on stderr, and the exit status is 1.
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import java.util.stream.Stream;

public class Locks {
    static FileChannel log;
    static int cycles, holdMs;
    static final List<String> failures = Collections.synchronizedList(new ArrayList<>());

    static void logline(String what, String id) throws Exception {
        byte[] b = (what + " " + id + " " + System.nanoTime() + "\n")
            .getBytes(StandardCharsets.UTF_8);
        log.write(java.nio.ByteBuffer.wrap(b));
    }

    static void section(String id) throws Exception {
        logline("enter", id);
        for (int i = 0; i < holdMs; i++)
            Thread.sleep(1);
        logline("leave", id);
    }

    interface Task { void run(String id) throws Exception; }

    static void runThreads(List<String> ids, Task t) throws Exception {
        List<Thread> threads = new ArrayList<>();
        for (String id : ids) {
            Thread th = new Thread(() -> {
                try {
                    t.run(id);
                } catch (Throwable e) {
                    failures.add(id + ": " + e);
                }
            });
            th.start();
            threads.add(th);
        }
        for (Thread th : threads)
            th.join();
    }

    interface Step { void run() throws Exception; }

    static boolean step(String api, Step s) {
        try {
            s.run();
            return true;
        } catch (Exception e) {
            System.err.println("error " + api + ": " + e);
            return false;
        }
    }

    static void walk(Path root) {
        boolean ok = step("Files.walk", () -> {
            try (Stream<Path> s = Files.walk(root)) {
                for (Path p : s.filter(Files::isDirectory).collect(Collectors.toList()))
                    if (!p.equals(root))
                        System.out.println("walk " + root.relativize(p));
            }
        });
        ok &= step("Files.list", () -> {
            try (Stream<Path> s = Files.list(root)) {
                for (Path p : s.collect(Collectors.toList()))
                    System.out.println("list " + p.getFileName());
            }
        });
        ok &= step("Files.walk, Files.delete", () -> {
            try (Stream<Path> s = Files.walk(root)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).collect(Collectors.toList()))
                    Files.delete(p);
            }
        });
        if (!ok)
            System.exit(1);
        System.out.println("removed");
    }

    static void reopen(Path dir) throws Exception {
        AtomicBoolean released = new AtomicBoolean();
        FileOutputStream first = new FileOutputStream(dir.resolve("a").toFile());
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(300);
                released.set(true);
                first.close();
            } catch (Exception e) {
                System.err.println("error releaser: " + e);
                System.exit(1);
            }
        });
        t.start();
        try {
            new FileOutputStream(dir.resolve("b").toFile());
            System.out.println("granted " + (released.get() ? 1 : 0));
        } catch (Exception e) {
            System.out.println("error " + e);
        }
        t.join();
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("walk")) {
            walk(Path.of(args[1]));
            return;
        }
        String mode = args[0], prefix = args[5];
        int tasks = Integer.parseInt(args[2]);
        cycles = Integer.parseInt(args[3]);
        holdMs = Integer.parseInt(args[4]);
        Path path = Path.of(args[6]);
        if (mode.equals("reopen")) {
            reopen(path);
            return;
        }
        log = FileChannel.open(Path.of(args[1]), StandardOpenOption.WRITE,
                               StandardOpenOption.APPEND);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < tasks; i++)
            ids.add(prefix + "t" + i);

        if (mode.equals("dir-threads")) {
            runThreads(ids, id -> {
                for (int c = 0; c < cycles; c++) {
                    FileOutputStream out = new FileOutputStream(path.resolve(id).toFile());
                    section(id);
                    out.close();
                    Thread.sleep(1);
                }
            });
        } else if (mode.startsWith("dir-executor")) {
            int n = Integer.parseInt(mode.substring("dir-executor".length()));
            ExecutorService pool = Executors.newFixedThreadPool(n);
            runThreads(ids, id -> {
                for (int c = 0; c < cycles; c++) {
                    OutputStream out = pool.submit(() -> Files.newOutputStream(
                        path.resolve(id), StandardOpenOption.CREATE)).get();
                    section(id);
                    out.close();
                    Thread.sleep(1);
                }
            });
            pool.shutdownNow();
        } else if (mode.equals("file-channel")) {
            runThreads(ids, id -> {
                try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE,
                                                       StandardOpenOption.WRITE)) {
                    for (int c = 0; c < cycles; c++) {
                        FileLock lock = ch.lock();
                        section(id);
                        lock.release();
                        Thread.sleep(1);
                    }
                }
            });
        } else {
            throw new IllegalArgumentException("unknown mode " + mode);
        }
        if (!failures.isEmpty()) {
            for (String f : failures)
                System.err.println("error " + f);
            System.exit(1);
        }
        System.exit(0);
    }
}
