import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One client run as the child reports it (or as the driver measured it for an external program).
struct Sample: Codable, Sendable {
    /// Seconds of wall time for the workload.
    var wall: Double
    /// Seconds of CPU time (user + system, all threads) for the workload.
    var cpu: Double
    /// Peak resident set size of the process in KiB.
    var maxRSSKiB: Int
    /// Files (or requests, or images) the workload completed.
    var items: Int
    /// Body bytes received or decoded.
    var bytes: Int
    /// Workload-specific numbers (transfers, submit cost, RSS after queueing, ...).
    var extra: [String: Double] = [:]

    var itemsPerSecond: Double { wall > 0 ? Double(items) / wall : 0 }
    var megabytesPerSecond: Double { wall > 0 ? Double(bytes) / wall / 1_000_000 : 0 }
    var cpuMicrosecondsPerItem: Double { items > 0 ? cpu / Double(items) * 1_000_000 : 0 }
}

/// A point in time and CPU usage of this process, to subtract from a later one.
struct Stopwatch {
    private let startWall: UInt64
    private let startCPU: Double

    init() {
        startWall = DispatchTime.now().uptimeNanoseconds
        startCPU = Self.processCPUSeconds()
    }

    var wallSeconds: Double { Double(DispatchTime.now().uptimeNanoseconds - startWall) / 1e9 }
    var cpuSeconds: Double { Self.processCPUSeconds() - startCPU }

    /// User + system time of every thread of this process.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    static func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }

    /// Peak resident set size of this process so far, in KiB: VmHWM of /proc/self/status.
    ///
    /// Not `ru_maxrss`: Linux carries the parent's high-water mark into a child across fork/exec
    /// (posix_spawn shares the parent's memory until exec), so a child's ru_maxrss is at least the
    /// driver's peak. VmHWM belongs to the address space exec created.
    static func peakRSSKiB() -> Int { statusField("VmHWM:", of: "self") }

    /// Current resident set size in KiB (VmRSS of /proc/self/status).
    static func currentRSSKiB() -> Int { statusField("VmRSS:", of: "self") }

    /// A "kB" field of /proc/<pid>/status; 0 when the process or the field is gone.
    static func statusField(_ field: String, of pid: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field) {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}

extension Sample {
    /// Prints the sample as the one line of JSON the driver reads from a child.
    func emit() {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(self), let line = String(data: data, encoding: .utf8) else {
            fail("could not encode the sample")
        }
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// Median of `values` (the mean of the middle two for an even count); 0 for none.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Prints `message` to standard error and exits with status 1.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("WebImageBench: \(message)\n".utf8))
    exit(1)
}

/// Reads a file of one URL per line.
func readLines(_ path: String) -> [String] {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { fail("cannot read \(path)") }
    return text.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
}
