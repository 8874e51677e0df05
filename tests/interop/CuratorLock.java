// One Apache Curator InterProcessMutex contender, driven over stdin/stdout,
// for tests/integration/test_interop.py.
//
//   java -cp <dir>:<curator jars> CuratorLock CONNECT PATH
//
// Prints "ready" once connected. Commands, one a line on stdin:
//   acquire MS        -> "acquired" | "timeout" | "error ..."   (asynchronous:
//                        other commands are answered while it waits)
//   release           -> "released" | "error ..."
//   participants      -> "participants NODE NODE ..." (getParticipantNodes(),
//                        base names, in Curator's order)
//   cycle N PAUSE_MS LOGFILE TAG
//                     -> N times: acquire, append "enter TAG\n" to LOGFILE,
//                        sleep PAUSE_MS, append "exit TAG\n", release;
//                        then "cycled N" (or "error ...")
//   revocable         -> makeRevocable(): when asked to let go (its node's
//                        data set to __REVOKE__), releases on the worker and
//                        prints "revoked-released"; answers "revocable"
//   revoke PATH       -> Revoker.attemptRevoke(PATH): "revoke-sent" | "error ..."
//   quit (or EOF)     -> closes the session, "bye", exits
// acquire, release and cycle run one after another on one worker thread
// (InterProcessMutex is owned by the thread that acquired it).

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryOneTime;

public class CuratorLock {
    private static synchronized void say(String line) {
        System.out.print(line + "\n");
        System.out.flush();
    }

    private static String oneLine(Throwable e) {
        return (e.getClass().getSimpleName() + ": " + e.getMessage())
            .replace('\n', ' ');
    }

    /** A command's work; it returns the command's answer line. */
    private interface Step {
        String run() throws Exception;
    }

    /** Says the step's answer, or "error ..." if it throws. */
    private static void answer(Step step) {
        try {
            say(step.run());
        } catch (Throwable e) {
            say("error " + oneLine(e));
        }
    }

    private static void append(String file, String line) throws Exception {
        try (FileOutputStream f = new FileOutputStream(file, true)) {
            f.write(line.getBytes(StandardCharsets.UTF_8));   // one O_APPEND write
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: CuratorLock CONNECT PATH");
            System.exit(2);
        }
        final CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(args[0])
            .sessionTimeoutMs(10000)
            .connectionTimeoutMs(10000)
            .retryPolicy(new RetryOneTime(100))
            .build();
        client.start();
        if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
            say("error not connected to " + args[0]);
            System.exit(3);
        }
        final InterProcessMutex mutex = new InterProcessMutex(client, args[1]);
        final ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "lock-worker");
            t.setDaemon(true);
            return t;
        });
        say("ready");

        BufferedReader in = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            final String[] w = line.trim().split("\\s+");
            if (w.length == 0 || w[0].isEmpty()) {
                continue;
            }
            switch (w[0]) {
            case "acquire":
                worker.submit(() -> answer(() ->
                    mutex.acquire(Long.parseLong(w[1]), TimeUnit.MILLISECONDS)
                        ? "acquired" : "timeout"));
                break;
            case "release":
                worker.submit(() -> answer(() -> {
                    mutex.release();
                    return "released";
                }));
                break;
            case "participants":
                answer(() -> {
                    Collection<String> nodes = mutex.getParticipantNodes();
                    StringBuilder sb = new StringBuilder("participants");
                    for (String n : nodes) {
                        sb.append(' ').append(n.substring(n.lastIndexOf('/') + 1));
                    }
                    return sb.toString();
                });
                break;
            case "cycle":
                worker.submit(() -> answer(() -> {
                    int n = Integer.parseInt(w[1]);
                    long pause = Long.parseLong(w[2]);
                    for (int i = 0; i < n; i++) {
                        if (!mutex.acquire(60, TimeUnit.SECONDS)) {
                            return "error cycle " + i + ": acquire timed out";
                        }
                        try {
                            append(w[3], "enter " + w[4] + "\n");
                            Thread.sleep(pause);
                            append(w[3], "exit " + w[4] + "\n");
                        } finally {
                            mutex.release();
                        }
                    }
                    return "cycled " + n;
                }));
                break;
            case "revocable":
                mutex.makeRevocable(forLock -> worker.submit(() -> answer(() -> {
                    mutex.release();
                    return "revoked-released";
                })));
                say("revocable");
                break;
            case "revoke":
                answer(() -> {
                    Revoker.attemptRevoke(client, w[1]);
                    return "revoke-sent";
                });
                break;
            case "quit":
                client.close();
                say("bye");
                System.exit(0);
                break;
            default:
                say("error unknown command " + w[0]);
            }
        }
        client.close();
        System.exit(0);
    }
}
