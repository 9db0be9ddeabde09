import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real nginx (the Debian package) on 127.0.0.1, for conformance tests and benchmarks: one master and
/// one worker, started with a configuration and prefix directory of its own, serving one folder on
/// three listeners at once.
///
/// - ``Listener/http1``: plain HTTP/1.1.
/// - ``Listener/https1``: HTTP/1.1 over TLS (no `http2` on the listener, so ALPN offers only http/1.1).
/// - ``Listener/http2``: HTTP/2 over TLS (ALPN `h2`), as nearly every CDN serves images.
///
/// Both TLS listeners use a fresh self-signed certificate for 127.0.0.1 and localhost
/// (``certificateURL``: trust it as a CA to verify). Every request is written to an access log with
/// nginx's `$connection` serial number, so a test can count the connections a run used
/// (``accessLog(since:)``).
///
/// ```swift
/// let nginx = try NginxServer(serving: folder)
/// defer { nginx.stop() }
/// let mark = nginx.accessLogMark()
/// // ... download nginx.url(.http2, "/a.png") 200 times ...
/// let connections = Set(nginx.accessLog(since: mark).map(\.connection)).count
/// ```
public final class NginxServer: @unchecked Sendable {
    // @unchecked Sendable: every stored property is immutable except `pid`, which only `stop()` changes,
    // under `lock`.

    /// The three listeners.
    public enum Listener: String, Sendable, CaseIterable {
        /// Plain HTTP/1.1.
        case http1
        /// HTTP/1.1 over TLS.
        case https1
        /// HTTP/2 over TLS.
        case http2
    }

    /// What the generated configuration may change.
    public struct Options: Sendable {
        /// Requests nginx serves on one connection before closing it (nginx 1.22 applies it to HTTP/2
        /// connections too, ending them with GOAWAY). `100000` by default.
        public var keepaliveRequests = 100_000
        /// `http2_max_concurrent_streams`: streams one HTTP/2 connection may carry at once. `128` by default
        /// (nginx's own default).
        public var http2MaxConcurrentStreams = 128
        /// Whether requests to the plain ``Listener/http1`` listener are logged. The TLS listeners always
        /// are. `true` by default; a benchmark turns it off so logging costs its plain-HTTP rows nothing.
        public var logsPlainHTTP = true

        /// The defaults.
        public init() {}
    }

    /// One line of the access log.
    public struct AccessLogEntry: Sendable, Equatable {
        /// nginx's connection serial number (`$connection`): equal numbers mean one connection.
        public var connection: Int
        /// The request's position on its connection (`$connection_requests`).
        public var connectionRequests: Int
        /// `HTTP/1.1` or `HTTP/2.0` (`$server_protocol`).
        public var serverProtocol: String
        /// The status sent.
        public var status: Int
        /// The request URI with its query.
        public var uri: String
        /// The listener's port (`$server_port`).
        public var port: Int
    }

    /// Errors from starting nginx.
    public struct StartError: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// The folder served.
    public let root: URL
    /// Where nginx's configuration, pid file, logs and temporary files live; removed by ``stop()``.
    public let prefix: URL
    /// The certificate of both TLS listeners (PEM).
    public var certificateURL: URL { identity.certificateURL }
    private let identity: SelfSignedIdentity
    private let ports: [Listener: Int]
    private let lock = NSLock()
    private var pid: pid_t?

    /// Writes the configuration, starts nginx and waits (up to 10 s) until every listener accepts.
    ///
    /// - Throws: ``StartError`` when nginx is not installed (`make deps` installs it), does not start, or
    ///   does not listen in time; certificate errors from `openssl`.
    public init(serving root: URL, options: Options = Options()) throws {
        guard let executable = Self.executable else {
            throw StartError(description: "nginx is not installed (make deps installs the Debian package)")
        }
        self.root = root
        prefix = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: prefix.appendingPathComponent("temp"), withIntermediateDirectories: true)
        identity = try SelfSignedIdentity.generate()
        var ports: [Listener: Int] = [:]
        for listener in Listener.allCases { ports[listener] = try Self.freePort(excluding: Set(ports.values)) }
        self.ports = ports
        let configuration = prefix.appendingPathComponent("nginx.conf")
        try configurationText(options).write(to: configuration, atomically: true, encoding: .utf8)

        let status = try Self.run(executable, ["-c", configuration.path, "-p", prefix.path])
        guard status == 0 else {
            cleanUp()
            throw StartError(description: "nginx exited with status \(status): \(errorLog)")
        }
        let deadline = Date().addingTimeInterval(10)
        var started: pid_t?
        while Date() < deadline {
            if started == nil,
                let text = try? String(contentsOf: prefix.appendingPathComponent("nginx.pid"), encoding: .utf8)
            {
                started = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            if started != nil, ports.values.allSatisfy(Self.accepts) { break }
            usleep(20_000)
        }
        pid = started
        guard started != nil, ports.values.allSatisfy(Self.accepts) else {
            stop()
            throw StartError(description: "nginx did not start listening within 10 s: \(errorLog)")
        }
    }

    deinit { stop() }

    /// Stops nginx (SIGQUIT, then SIGTERM and SIGKILL if it lingers), waits for it, and removes the
    /// prefix directory and the certificate. Idempotent.
    public func stop() {
        let running = lock.withLock { () -> pid_t? in
            defer { pid = nil }
            return pid
        }
        if let running {
            kill(running, SIGQUIT)
            for attempt in 0..<200 {
                if kill(running, 0) != 0 { break }
                if attempt == 100 { kill(running, SIGTERM) }
                if attempt == 150 { kill(running, SIGKILL) }
                usleep(20_000)
            }
        }
        cleanUp()
    }

    private func cleanUp() {
        try? FileManager.default.removeItem(at: prefix)
        identity.remove()
    }

    // MARK: Addresses

    /// The port of `listener`.
    public func port(_ listener: Listener) -> Int { ports[listener] ?? 0 }

    /// The absolute URL of `path` (starting with `/`, may carry a query) on `listener`.
    public func url(_ listener: Listener, _ path: String) -> URL {
        let scheme = listener == .http1 ? "http" : "https"
        guard let url = URL(string: "\(scheme)://127.0.0.1:\(port(listener))\(path)") else {
            preconditionFailure("NginxServer.url: \(path) does not make a valid URL")
        }
        return url
    }

    // MARK: Access log

    private var accessLogURL: URL { prefix.appendingPathComponent("access.log") }

    /// The access log's current length: pass it to ``accessLog(since:)`` to read only what follows.
    public func accessLogMark() -> Int {
        (try? FileManager.default.attributesOfItem(atPath: accessLogURL.path)[.size] as? Int) ?? 0
    }

    /// The access-log entries written since `mark` (nginx writes each line when the request ends).
    public func accessLog(since mark: Int = 0) -> [AccessLogEntry] {
        guard let handle = try? FileHandle(forReadingFrom: accessLogURL) else { return [] }
        defer { try? handle.close() }
        try? handle.seek(toOffset: UInt64(mark))
        let data = (try? handle.readToEnd()) ?? Data()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 6, let connection = Int(fields[0]), let requests = Int(fields[1]),
                let status = Int(fields[3]), let port = Int(fields[5])
            else { return nil }
            return AccessLogEntry(
                connection: connection, connectionRequests: requests, serverProtocol: String(fields[2]),
                status: status, uri: String(fields[4]), port: port)
        }
    }

    /// The distinct connections `listener` served since `mark`, by the access log's `$connection`. nginx
    /// logs a request when it ends, which can be after the client has the last byte, so this waits (up to
    /// 2 s) until `requests` lines for the listener are there.
    public func connections(on listener: Listener, since mark: Int, expecting requests: Int) -> Int {
        var entries: [AccessLogEntry] = []
        for attempt in 0..<100 {
            entries = accessLog(since: mark).filter { $0.port == port(listener) }
            if entries.count >= requests { break }
            if attempt < 99 { usleep(20_000) }
        }
        return Set(entries.map(\.connection)).count
    }

    /// nginx's error log so far (for failure messages).
    public var errorLog: String {
        (try? String(contentsOf: prefix.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    // MARK: Configuration

    private func configurationText(_ options: Options) -> String {
        let prefix = self.prefix.path
        let tls = """
                ssl_certificate \(identity.certificateURL.path);
                ssl_certificate_key \(identity.keyURL.path);
            """
        return """
            worker_processes 1;
            daemon on;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log warn;
            events { worker_connections 4096; }
            http {
                log_format conformance '$connection $connection_requests $server_protocol $status $request_uri $server_port';
                access_log \(prefix)/access.log conformance;
                sendfile on;
                tcp_nopush on;
                tcp_nodelay on;
                keepalive_timeout 120s;
                keepalive_requests \(options.keepaliveRequests);
                http2_max_concurrent_streams \(options.http2MaxConcurrentStreams);
                open_file_cache max=20000 inactive=120s;
                client_body_temp_path \(prefix)/temp/body;
                proxy_temp_path \(prefix)/temp/proxy;
                fastcgi_temp_path \(prefix)/temp/fastcgi;
                uwsgi_temp_path \(prefix)/temp/uwsgi;
                scgi_temp_path \(prefix)/temp/scgi;
                types { image/jpeg jpg; image/png png; image/webp webp; image/gif gif; }
                default_type application/octet-stream;
                server {
                    listen 127.0.0.1:\(port(.http1)) backlog=4096;
                    root \(root.path);
                    \(options.logsPlainHTTP ? "" : "access_log off;")
                    location = /nginx_status { stub_status; }
                }
                server {
                    listen 127.0.0.1:\(port(.https1)) ssl backlog=4096;
                    root \(root.path);
            \(tls)
                }
                server {
                    listen 127.0.0.1:\(port(.http2)) ssl http2 backlog=4096;
                    root \(root.path);
            \(tls)
                }
            }

            """
    }

    // MARK: Processes and ports

    /// `nginx` from Debian's /usr/sbin (often not on a user's PATH), else from PATH.
    private static var executable: URL? {
        let candidates =
            ["/usr/sbin/nginx"]
            + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/nginx" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }.map(URL.init(fileURLWithPath:))
    }

    /// Runs `executable` and waits for it with `waitpid` (corelibs `Process.waitUntilExit` can miss the
    /// exit of nginx's daemonizing parent and wait forever). Output goes to /dev/null.
    private static func run(_ executable: URL, _ arguments: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable.path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw StartError(description: "could not start \(executable.path): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS are macros Swift does not import.
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    private static func accepts(_ port: Int) -> Bool {
        withSocket { fd, address in
            withUnsafePointer(to: address(port)) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        } ?? false
    }

    /// A port that was free a moment ago (bound to port 0, read back, closed), not in `excluding`.
    private static func freePort(excluding: Set<Int>) throws -> Int {
        for _ in 0..<20 {
            let port = withSocket { fd, address -> Int? in
                var bound = address(0)
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let ok = withUnsafeMutablePointer(to: &bound) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
                    }
                }
                return ok ? Int(UInt16(bigEndian: bound.sin_port)) : nil
            }
            if let port = port ?? nil, !excluding.contains(port) { return port }
        }
        throw StartError(description: "no free port on 127.0.0.1")
    }

    private static func withSocket<T>(_ body: (Int32, (Int) -> sockaddr_in) -> T) -> T? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return body(fd) { port in
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            return address
        }
    }
}
