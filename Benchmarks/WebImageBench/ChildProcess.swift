import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a finished child process left behind.
struct ChildOutcome {
    var status: Int32
    var stdout: String
    /// Wall seconds from spawn to exit, as the driver saw them.
    var wall: Double
    /// User + system seconds of the child (wait4's rusage, which includes its own children).
    var cpu: Double
    /// The child's peak RSS in KiB: the last VmHWM read from /proc/<pid>/status while it ran (every
    /// 2 ms). wait4's ru_maxrss is useless here: it includes the driver's own high-water mark.
    var maxRSSKiB: Int
}

/// Runs `arguments[0]` (a path, or a name looked up in PATH) with the rest as arguments, captures
/// its standard output, and measures it with `wait4`. Standard error passes through.
func runChild(_ arguments: [String]) -> ChildOutcome {
    var pipeFDs: [Int32] = [0, 0]
    guard pipe(&pipeFDs) == 0 else { fail("pipe failed: \(String(cString: strerror(errno)))") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
    posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
    posix_spawn_file_actions_addclose(&actions, pipeFDs[1])
    defer { posix_spawn_file_actions_destroy(&actions) }

    let cArguments = arguments.map { strdup($0) } + [nil]
    defer { for argument in cArguments { free(argument) } }

    var pid: pid_t = 0
    let start = DispatchTime.now().uptimeNanoseconds
    let spawned = cArguments.withUnsafeBufferPointer { argv in
        posix_spawnp(&pid, arguments[0], &actions, nil, argv.baseAddress!, environ)
    }
    close(pipeFDs[1])
    guard spawned == 0 else {
        close(pipeFDs[0])
        fail("cannot start \(arguments[0]): \(String(cString: strerror(spawned)))")
    }

    let peak = Mutex(0)
    let running = Atomic<Bool>(true)
    // Until exec the child shares the driver's memory (and its VmHWM): count only readings taken
    // once the process carries the new program's name.
    let name = String(URL(fileURLWithPath: arguments[0]).lastPathComponent.prefix(15))
    let watcher = Thread { [pid] in
        while running.load(ordering: .relaxed) {
            if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                status.hasPrefix("Name:\t\(name)\n")
            {
                let value = Stopwatch.statusField("VmHWM:", of: String(pid))
                peak.withLock { $0 = max($0, value) }
            }
            usleep(2000)
        }
    }
    watcher.start()

    var output = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(pipeFDs[0], $0.baseAddress, $0.count) }
        if count > 0 {
            output.append(contentsOf: buffer[0..<count])
        } else if count < 0 && errno == EINTR {
            continue
        } else {
            break
        }
    }
    close(pipeFDs[0])

    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    running.store(false, ordering: .relaxed)
    let wall = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    // WIFEXITED/WEXITSTATUS are macros Swift does not import.
    let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return ChildOutcome(
        status: exitStatus, stdout: String(decoding: output, as: UTF8.self), wall: wall,
        cpu: Stopwatch.seconds(usage.ru_utime) + Stopwatch.seconds(usage.ru_stime), maxRSSKiB: peak.withLock { $0 })
}

/// Runs this executable with `arguments` (a client subcommand) and decodes the sample it prints. A
/// `launcher` (a command that execs the rest, as `unshare` does) may come first.
func runClient(_ arguments: [String], launcher: [String] = []) -> Sample {
    let outcome = runChild(launcher + [selfPath()] + arguments)
    guard outcome.status == 0,
        let line = outcome.stdout.split(separator: "\n").last,
        let sample = try? JSONDecoder().decode(Sample.self, from: Data(line.utf8))
    else {
        fail("client \(arguments.joined(separator: " ")) failed (status \(outcome.status)): \(outcome.stdout)")
    }
    return sample
}

/// The path of this executable.
func selfPath() -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
}
