import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An nginx serving a directory on 127.0.0.1 with one worker and long keep-alive, started with its own
/// generated configuration and prefix directory and stopped by the pid in its pid file.
final class Nginx {
    let port: Int
    let prefix: URL
    private var pid: pid_t?

    var baseURL: String { "http://127.0.0.1:\(port)" }
    var pidFile: URL { prefix.appendingPathComponent("nginx.pid") }

    /// Writes the configuration under `prefix`, starts nginx, and waits until it answers.
    init(serving www: URL, prefix: URL) throws {
        self.prefix = prefix
        port = try Self.freePort()
        try FileManager.default.createDirectory(
            at: prefix.appendingPathComponent("temp"), withIntermediateDirectories: true)
        let conf = prefix.appendingPathComponent("nginx.conf")
        try Self.configuration(www: www.path, prefix: prefix.path, port: port).write(
            to: conf, atomically: true, encoding: .utf8)
        let outcome = runChild(["nginx", "-c", conf.path, "-p", prefix.path])
        guard outcome.status == 0 else { throw BenchError("nginx did not start (status \(outcome.status))") }
        guard let text = try? String(contentsOf: pidFile, encoding: .utf8), let pid = pid_t(text.trimmed) else {
            throw BenchError("nginx wrote no pid file")
        }
        self.pid = pid
        for _ in 0..<50 where !answers() { usleep(100_000) }
        guard answers() else { throw BenchError("nginx does not answer on port \(port)") }
    }

    deinit { stop() }

    /// Stops nginx by its pid (SIGQUIT lets the worker finish; SIGTERM after 5 s) and waits for it to exit.
    func stop() {
        guard let pid else { return }
        self.pid = nil
        kill(pid, SIGQUIT)
        for attempt in 0..<100 {
            if kill(pid, 0) != 0 { return }
            if attempt == 50 { kill(pid, SIGTERM) }
            usleep(100_000)
        }
        kill(pid, SIGKILL)
    }

    /// Requests nginx has served so far (stub_status), counting the status request itself.
    func requestCount() -> Int? {
        let outcome = runChild(["curl", "-s", "\(baseURL)/nginx_status"])
        // "Active connections: 1 \nserver accepts handled requests\n 5 5 17 \n..."
        let lines = outcome.stdout.split(separator: "\n")
        guard outcome.status == 0, lines.count > 2 else { return nil }
        return lines[2].split(separator: " ").last.flatMap { Int($0) }
    }

    private func answers() -> Bool { requestCount() != nil }

    private static func configuration(www: String, prefix: String, port: Int) -> String {
        """
        worker_processes 1;
        daemon on;
        pid \(prefix)/nginx.pid;
        error_log \(prefix)/error.log warn;
        events { worker_connections 4096; }
        http {
            access_log off;
            sendfile on;
            tcp_nopush on;
            tcp_nodelay on;
            keepalive_timeout 120s;
            keepalive_requests 100000;
            open_file_cache max=20000 inactive=120s;
            client_body_temp_path \(prefix)/temp/body;
            proxy_temp_path \(prefix)/temp/proxy;
            fastcgi_temp_path \(prefix)/temp/fastcgi;
            uwsgi_temp_path \(prefix)/temp/uwsgi;
            scgi_temp_path \(prefix)/temp/scgi;
            types { image/jpeg jpg; image/png png; image/webp webp; }
            default_type application/octet-stream;
            server {
                listen 127.0.0.1:\(port) backlog=4096;
                root \(www);
                location = /nginx_status { stub_status; }
            }
        }

        """
    }

    /// A port that was free a moment ago (bound to port 0, read back, closed).
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound else { throw BenchError("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
