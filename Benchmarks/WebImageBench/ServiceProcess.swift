import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A long-running server the serve workload measures (`webimage serve`, thumbor, a second nginx): started in
/// a process group of its own, so that stopping it reaches every process it forked (thumbor's workers,
/// nginx's) and nothing else; its output goes to a log file.
final class ServiceProcess {
    let name: String
    let pid: pid_t
    let port: Int
    let log: URL

    struct StartError: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts `arguments` (a path, or a name in PATH) and waits up to `timeout` seconds until 127.0.0.1:`port`
    /// accepts connections.
    init(name: String, arguments: [String], port: Int, log: URL, timeout: Double = 60) throws {
        self.name = name
        self.port = port
        self.log = log
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A new process group whose id is the child's pid: `stop()` signals the group.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var child: pid_t = 0
        let spawned = argv.withUnsafeBufferPointer {
            posix_spawnp(&child, arguments[0], &actions, &attributes, $0.baseAddress!, environ)
        }
        guard spawned == 0 else {
            throw StartError(description: "cannot start \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        pid = child
        let deadline = Date().addingTimeInterval(timeout)
        while !Self.accepts(port) {
            var status: Int32 = 0
            if waitpid(child, &status, WNOHANG) == child {
                stopped = true
                throw StartError(description: "\(name) exited at start: \(Self.tail(of: log))")
            }
            if Date() > deadline {
                stop()
                throw StartError(description: "\(name) did not listen on port \(port) in \(Int(timeout)) s")
            }
            usleep(50_000)
        }
    }

    deinit { stop() }

    private var stopped = false

    /// SIGTERM to the process group, SIGKILL after 10 s, then reaps the leader. Idempotent.
    func stop() {
        guard !stopped else { return }
        stopped = true
        kill(-pid, SIGTERM)
        var status: Int32 = 0
        for attempt in 0..<500 {
            if waitpid(pid, &status, WNOHANG) != 0 { break }
            if attempt == 499 {
                kill(-pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            }
            usleep(20_000)
        }
        // Workers the leader did not wait for (they belong to the group; the leader's pid is the group id).
        kill(-pid, SIGKILL)
    }

    /// The peak resident memory of the leader and every process descending from it, in bytes: the sum of
    /// their `VmHWM` in /proc/<pid>/status (each process's own peak, so a sum over processes that peaked at
    /// different times is an upper bound).
    func peakResidentBytes() -> Double {
        var parents: [pid_t: pid_t] = [:]
        var peaks: [pid_t: Double] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let id = pid_t(entry),
                let status = try? String(contentsOfFile: "/proc/\(entry)/status", encoding: .utf8)
            else { continue }
            for line in status.split(separator: "\n") {
                // "PPid:\t123", "VmHWM:\t   4096 kB": tabs and spaces.
                let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                if line.hasPrefix("PPid:"), fields.count > 1 { parents[id] = pid_t(fields[1]) }
                if line.hasPrefix("VmHWM:"), fields.count > 1, let kilobytes = Double(fields[1]) {
                    peaks[id] = kilobytes * 1024
                }
            }
        }
        return peaks.filter { descends($0.key, parents: parents) }.values.reduce(0, +)
    }

    /// Whether `id` is the leader or one of its descendants in `parents`.
    private func descends(_ id: pid_t, parents: [pid_t: pid_t]) -> Bool {
        var ancestor: pid_t? = id
        var depth = 0
        while let current = ancestor, current != pid, current > 1, depth < 64 {
            ancestor = parents[current]
            depth += 1
        }
        return ancestor == pid
    }

    /// User + system seconds of the leader and every process descending from it (forked workers), each
    /// read from /proc/<pid>/stat; a process's reaped children count through its `cutime`/`cstime`.
    func cpuSeconds() -> Double {
        var parents: [pid_t: pid_t] = [:]
        var times: [pid_t: Double] = [:]
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let id = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After "pid (comm) ": state ppid ... utime(14) stime(15) cutime(16) cstime(17), 1-based.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 14, let parent = pid_t(fields[1]) else { continue }
            parents[id] = parent
            times[id] = fields[11...14].compactMap { Double($0) }.reduce(0, +) / ticks
        }
        var total = 0.0
        for (id, time) in times {
            var ancestor: pid_t? = id
            var depth = 0
            while let current = ancestor, current != pid, current > 1, depth < 64 {
                ancestor = parents[current]
                depth += 1
            }
            if ancestor == pid { total += time }
        }
        return total
    }

    /// The last lines of a log file (for failure messages).
    static func tail(of log: URL) -> String {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return String(text.suffix(1500))
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var address = loopback(port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A port of 127.0.0.1 that was free a moment ago (bound to port 0 and read back).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { fail("socket failed") }
        defer { Glibc.close(fd) }
        var address = loopback(0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { fail("no free port on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}
