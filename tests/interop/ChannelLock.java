// ChannelLock PATH N LOG - Java's FileChannel.lock() on a zklockfs entry:
// N critical sections, each appending "S <pid>" and "E <pid>" to LOG.
//
// The channel is opened READ+WRITE (an exclusive entry, granted at open);
// its first lock() asks for the kind it holds and returns at once, each
// release() gives the entry back (F_UNLCK) while the channel stays open,
// and each later lock() enqueues anew (F_SETLKW).  A shared lock
// (lock(0, Long.MAX_VALUE, true)) is taken and given back once between
// sections, to convert both ways.  Then it prints "released" and keeps the
// channel open until its stdin ends.
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

public class ChannelLock {
    public static void main(String[] args) throws Exception {
        Path path = Path.of(args[0]);
        int n = Integer.parseInt(args[1]);
        Path log = Path.of(args[2]);
        long pid = ProcessHandle.current().pid();

        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE,
                StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            for (int i = 0; i < n; i++) {
                try (FileLock lock = ch.lock()) {
                    append(log, "S " + pid);
                    Thread.sleep(100);
                    append(log, "E " + pid);
                }
                try (FileLock shared = ch.lock(0, Long.MAX_VALUE, true)) {
                    if (!shared.isShared())
                        throw new AssertionError("shared lock not shared");
                }
            }
            System.out.println("released");
            System.out.flush();
            while (System.in.read() >= 0)
                ;
        }
    }

    static void append(Path log, String line) throws Exception {
        Files.write(log, (line + "\n").getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
}
