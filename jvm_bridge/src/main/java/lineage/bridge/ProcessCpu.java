package lineage.bridge;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * The CPU time a process has used so far, read from Linux's {@code /proc/<pid>/stat} (user plus
 * system time, in clock ticks). Where that file cannot be read (another OS, a process that is gone)
 * the answer is -1: callers then go by the other signs of life only.
 */
final class ProcessCpu {
    private static final int UTIME = 11;  // field 14 of stat(5), counted from the state field after "(comm) "
    private static final int STIME = 12;  // field 15

    private ProcessCpu() {
    }

    static long ticks(long pid) {
        if (pid <= 0) {
            return -1L;
        }
        try {
            String stat = new String(Files.readAllBytes(Paths.get("/proc", Long.toString(pid), "stat")),
                StandardCharsets.US_ASCII);
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
            return Long.parseLong(fields[UTIME]) + Long.parseLong(fields[STIME]);
        } catch (IOException | RuntimeException e) {
            return -1L;
        }
    }
}
