import Foundation

/// Debian's `unbound` on a loopback port, started by the test with a static zone of its records and every
/// other name refused (`local-zone: "." refuse`: it never recurses, so no query leaves the machine; a name
/// inside the zone without data is NXDOMAIN), for `webimage bulk --resolver`. Stopped when the object is
/// released.
package final class Unbound: Sendable {
    /// Where Debian installs it (`make test` installs the package).
    package static let binary = "/usr/sbin/unbound"
    package static var available: Bool { FileManager.default.isExecutableFile(atPath: binary) }

    /// `127.0.0.1:PORT`, as `--resolver` takes it.
    package let address: String
    private let process: Process
    private let folder: URL

    /// A server answering for `zone` with `records` (`name. TTL IN TYPE DATA` lines, unbound's
    /// `local-data`).
    package init(zone: String, records: [String]) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("unbound-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var lastFailure = "not started"
        for _ in 0..<5 {
            let port = try RawConnection.freePort()
            let config = """
                server:
                  interface: 127.0.0.1@\(port)
                  port: \(port)
                  do-ip6: no
                  do-daemonize: no
                  use-syslog: no
                  logfile: ""
                  chroot: ""
                  username: ""
                  pidfile: ""
                  directory: "\(folder.path)"
                  access-control: 127.0.0.0/8 allow
                  module-config: "iterator"
                  local-zone: "." refuse
                  local-zone: "\(zone)." static
                \(records.map { "  local-data: \"\($0)\"" }.joined(separator: "\n"))
                remote-control:
                  control-enable: no
                """
            let file = folder.appendingPathComponent("unbound.conf")
            try config.write(to: file, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.binary)
            process.arguments = ["-d", "-c", file.path]
            let log = Pipe()
            process.standardError = log
            process.standardOutput = log
            try process.run()
            // unbound logs "start of service" once it listens; it exits at once when the port is taken.
            var text = ""
            while !text.contains("start of service") {
                let chunk = log.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            if text.contains("start of service") {
                self.process = process
                address = "127.0.0.1:\(port)"
                // Keep reading its log, so a full pipe never blocks it.
                log.fileHandleForReading.readabilityHandler = { _ = $0.availableData }
                return
            }
            process.waitUntilExit()
            lastFailure = text
        }
        throw FixtureMissing("unbound did not start: \(lastFailure)")
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }
}
