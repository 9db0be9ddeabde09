import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `WebImageBench dns-bench` (`make bench-dns`): `webimage bulk` against img2dataset when DNS is slow.
///
/// Run inside a network and mount namespace of its own (`unshare --net --mount`, as root), where only `lo`
/// exists: it brings `lo` up, binds a `resolv.conf` naming 127.0.0.1 over `/etc/resolv.conf` (so
/// img2dataset's `getaddrinfo` and curl's resolver ask the local server), and starts Debian's unbound on
/// 127.0.0.1:53 forwarding `bench.test` to a small authoritative server that answers every name
/// (`hN.bench.test A 127.0.0.1`, TTL 0, so unbound caches nothing) after ``delayMilliseconds``: each query
/// that reaches unbound costs that delay, as a cold recursive lookup does. nginx serves the tiny PNG; the
/// list is ``urls`` URLs over ``hosts`` host names (five rows a host, spread out). Each round runs, in
/// rotated order: img2dataset (one process per core, 32 threads each, its system resolver), `webimage bulk`
/// with curl resolving, and `webimage bulk --dns-concurrency 64 --resolver 127.0.0.1`. No image is resized
/// or re-encoded (img2dataset `--resize_mode no --skip_reencode True`, bulk `--resize-mode none --encode
/// none`): the time is the downloads' and their lookups'. The section of `output` between its markers is
/// replaced.
struct DNSDriver {
    var rounds = 3
    var output = "docs/BENCHMARKS.md"
    var corpusSource = "Tests/Fixtures/corpus/images"
    var command = "make bench-dns"
    static let urls = 10_000
    static let hosts = 2_000
    static let delayMilliseconds = 50
    static let begin = "<!-- dns benchmark: begin (make bench-dns rewrites up to the end marker) -->"
    static let end = "<!-- dns benchmark: end -->"

    func run() {
        guard getuid() == 0 else { fail("dns-bench runs as root inside `unshare --net --mount` (make bench-dns)") }
        guard let cli = Driver.webimageCLI, let img2dataset = Driver.img2dataset else {
            fail("dns-bench needs WEBIMAGE_CLI (make bench-build) and .venv-bench's img2dataset (make deps-bench)")
        }
        let loadAtStart = Environment.loadAverage()
        let root = Driver.makeTemporaryDirectory()
        let cleanup = Cleanup(root: root)
        cleanup.installSignalHandlers()
        isolateDNS(root: root, cleanup: cleanup)
        let (slowServer, upstream) = startUpstream(root: root, cleanup: cleanup)
        let unbound = startUnbound(root: root, cleanup: cleanup)
        let corpus = Corpus(root: root, sourceDirectory: URL(fileURLWithPath: corpusSource))
        do { try corpus.generateTinySet() } catch { cleanup.abort("file set: \(error)") }
        let nginx = Driver.startNginx(serving: corpus, cleanup: cleanup)
        let port = nginx.port(.http1)
        let list = root.appendingPathComponent("dns-urls.txt")
        let lines = (0..<Self.urls).map { "http://h\($0 % Self.hosts).bench.test:\(port)\(corpus.tinyPath)?n=\($0)" }
        do { try (lines.joined(separator: "\n") + "\n").write(to: list, atomically: true, encoding: .utf8) } catch {
            cleanup.abort("cannot write the list: \(error)")
        }
        var results: [String: [DNSSample]] = [:]
        let clients = Self.clients(cli: cli, img2dataset: img2dataset, list: list.path)
        setenv("NO_ALBUMENTATIONS_UPDATE", "1", 1)
        var queriesBefore = 0
        Driver.runToolRounds(
            clients, rounds: rounds, label: "dns", root: root, cleanup: cleanup,
            before: { _ in queriesBefore = Self.lineCount(upstream) },
            record: { client, outcome, images in
                results[client, default: []].append(
                    DNSSample(
                        wall: outcome.wall, cpu: outcome.cpu, images: images,
                        queries: Self.lineCount(upstream) - queriesBefore))
            })
        for service in [unbound, slowServer] {
            service.stop()
            cleanup.untrack(service)
        }
        cleanup.finish()
        let section = markdown(results, clients: clients.map(\.name), loadAtStart: loadAtStart)
        let existing = (try? String(contentsOfFile: self.output, encoding: .utf8)) ?? "# WebImage benchmarks\n"
        do {
            try Self.splice(section, into: existing).write(toFile: self.output, atomically: true, encoding: .utf8)
        } catch {
            fail("cannot write \(self.output): \(error)")
        }
        print(section)
        log("wrote the DNS section of \(self.output)")
    }

    struct DNSSample {
        var wall: Double
        var cpu: Double
        var images: Int
        /// Queries that reached the slow server (each cost ``delayMilliseconds``).
        var queries: Int
    }

    static func clients(cli: String, img2dataset: String, list: String) -> [Driver.ToolClient] {
        let processes = String(ProcessInfo.processInfo.activeProcessorCount)
        func bulk(_ extra: [String]) -> (String) -> [String] {
            { output in
                [
                    cli, "bulk", list, "--allow-destination", "127.0.0.0/8", "--output", output, "--resize-mode",
                    "none", "--encode", "none", "--shard-size", "1000", "--concurrency", "64", "--per-host", "8",
                    "--no-extract-exif",
                ] + extra
            }
        }
        return [
            (
                "img2dataset",
                { output in
                    [
                        "/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$OUTPUT_LOG\"", img2dataset, "--url_list", list,
                        "--input_format", "txt", "--output_folder", output, "--output_format", "webdataset",
                        "--resize_mode", "no", "--skip_reencode", "True", "--number_sample_per_shard", "1000",
                        "--processes_count", processes, "--thread_count", "32", "--distributor", "multiprocessing",
                        "--enable_wandb", "False", "--timeout", "30", "--extract_exif", "False",
                    ]
                }
            ),
            ("webimage bulk (curl resolves)", bulk([])),
            (
                "webimage bulk --dns-concurrency 64 --resolver 127.0.0.1",
                bulk(["--dns-concurrency", "64", "--resolver", "127.0.0.1"])
            ),
        ]
    }

    // MARK: The namespace's DNS

    /// `lo` up, and `/etc/resolv.conf` replaced (in this mount namespace only) by one naming 127.0.0.1.
    private func isolateDNS(root: URL, cleanup: Cleanup) {
        let links = runChild(["ip", "-o", "link", "show"]).stdout.split(separator: "\n")
        guard links.count == 1, links[0].contains(" lo:") else {
            cleanup.abort("dns-bench must run in a network namespace with only lo (make bench-dns), found: \(links)")
        }
        guard runChild(["ip", "link", "set", "lo", "up"]).status == 0 else { cleanup.abort("cannot bring lo up") }
        let resolv = root.appendingPathComponent("resolv.conf")
        do {
            try "nameserver 127.0.0.1\noptions attempts:2 timeout:5\n".write(
                to: resolv, atomically: true, encoding: .utf8)
        } catch { cleanup.abort("\(error)") }
        guard runChild(["mount", "--bind", resolv.path, "/etc/resolv.conf"]).status == 0 else {
            cleanup.abort("cannot bind-mount resolv.conf (run under unshare --mount)")
        }
    }

    /// The slow authoritative server on 127.0.0.1:5300 (UDP; TCP only accepts, to say it is up): every query
    /// is answered after the delay and logged as a line of the returned file.
    private func startUpstream(root: URL, cleanup: Cleanup) -> (ServiceProcess, URL) {
        let script = root.appendingPathComponent("slow_dns.py")
        let queries = root.appendingPathComponent("queries.log")
        do { try Self.upstreamSource.write(to: script, atomically: true, encoding: .utf8) } catch {
            cleanup.abort("\(error)")
        }
        let python = Driver.benchPython ?? "python3"
        do {
            let service = try ServiceProcess(
                name: "slow DNS",
                arguments: [python, script.path, "5300", String(Self.delayMilliseconds), queries.path],
                port: 5300, log: root.appendingPathComponent("slow_dns.log"))
            cleanup.track(service)
            return (service, queries)
        } catch { cleanup.abort("\(error)") }
    }

    /// unbound on 127.0.0.1:53, forwarding bench.test to the slow server, caching nothing it gets (TTL 0).
    /// The caller keeps the service it returns: a `ServiceProcess` stops when released.
    private func startUnbound(root: URL, cleanup: Cleanup) -> ServiceProcess {
        let config = root.appendingPathComponent("unbound.conf")
        let text = """
            server:
              interface: 127.0.0.1
              port: 53
              do-ip6: no
              do-daemonize: no
              use-syslog: no
              logfile: ""
              chroot: ""
              username: ""
              pidfile: ""
              directory: "\(root.path)"
              num-threads: 2
              outgoing-range: 1024
              num-queries-per-thread: 1024
              access-control: 127.0.0.0/8 allow
              do-not-query-localhost: no
              module-config: "iterator"
              local-zone: "test." nodefault
            forward-zone:
              name: "bench.test."
              forward-addr: 127.0.0.1@5300
            remote-control:
              control-enable: no
            """
        do { try text.write(to: config, atomically: true, encoding: .utf8) } catch { cleanup.abort("\(error)") }
        let service: ServiceProcess
        do {
            service = try ServiceProcess(
                name: "unbound", arguments: ["/usr/sbin/unbound", "-d", "-c", config.path], port: 53,
                log: root.appendingPathComponent("unbound.log"))
            cleanup.track(service)
        } catch { cleanup.abort("\(error)") }
        // The first answer through the whole chain, before any client runs (`getent ahosts` would not ask:
        // with only lo up, glibc's AI_ADDRCONFIG finds no address family configured).
        let probe = runChild([
            Driver.benchPython ?? "python3", "-c", "import socket; print(socket.getaddrinfo('h0.bench.test', 80))",
        ])
        guard probe.status == 0, probe.stdout.contains("127.0.0.1") else {
            let logs = ["unbound.log", "slow_dns.log"].map {
                "\($0): "
                    + ((try? String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)) ?? "")
                    .suffix(1500)
            }
            cleanup.abort(
                "h0.bench.test does not resolve through unbound: \(probe.stdout)\n\(logs.joined(separator: "\n"))")
        }
        return service
    }

    static func lineCount(_ file: URL) -> Int {
        ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    static let upstreamSource = #"""
        import asyncio, socket, struct, sys

        port, delay, log_path = int(sys.argv[1]), int(sys.argv[2]) / 1000, sys.argv[3]
        log = open(log_path, "a", buffering=1)

        class Slow(asyncio.DatagramProtocol):
            def connection_made(self, transport):
                self.transport = transport

            def datagram_received(self, data, addr):
                asyncio.get_running_loop().call_later(delay, self.answer, data, addr)

            def answer(self, data, addr):
                if len(data) < 17:
                    return
                i = 12
                while i < len(data) and data[i] != 0:
                    i += data[i] + 1
                if i + 5 > len(data):
                    return
                qtype = struct.unpack(">H", data[i + 1:i + 3])[0]
                log.write("%d\n" % qtype)
                record = b""
                if qtype == 1:
                    record = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 0, 4) + bytes([127, 0, 0, 1])
                header = data[:2] + struct.pack(">HHHHH", 0x8400, 1, 1 if record else 0, 0, 0)
                self.transport.sendto(header + data[12:i + 5] + record, addr)

        async def main():
            loop = asyncio.get_running_loop()
            await loop.create_datagram_endpoint(Slow, local_addr=("127.0.0.1", port))
            server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", port)
            async with server:
                await server.serve_forever()

        asyncio.run(main())
        """#

    // MARK: Report

    private func markdown(_ results: [String: [DNSSample]], clients: [String], loadAtStart: String) -> String {
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        }
        var text = Self.begin + "\n\n## `webimage bulk` against img2dataset when DNS is slow\n\n"
        text += "Command: `\(command)` (\(rounds) interleaved rounds; medians). \(Self.urls.formatted()) URLs of a "
        text += "tiny PNG over \(Self.hosts.formatted()) host names (`hN.bench.test`, five rows each, spread through "
        text += "the list), in a network namespace with only `lo`: Debian's unbound on 127.0.0.1:53 (the system "
        text += "resolver there) forwards `bench.test` to a server that answers each query after "
        text += "\(Self.delayMilliseconds) ms with TTL 0, so every lookup that reaches unbound pays the delay, "
        text += "as a cold recursive one does. nginx serves the image; nothing is resized or re-encoded. "
        text += "img2dataset 1.47: \(ProcessInfo.processInfo.activeProcessorCount) processes × 32 threads; "
        text += "`webimage bulk`: `--concurrency 64 --per-host 8`. Queries: what reached the slow server (A "
        text += "and AAAA count apart).\n\n"
        text += "| client | images/s | wall s | CPU s | images | slow queries |\n|---|---:|---:|---:|---:|---:|\n"
        for client in clients {
            let samples = results[client] ?? []
            let wall = median(samples.map(\.wall))
            let images = samples.map(\.images).min() ?? 0
            text += "| \(client) | \(String(format: "%.0f", wall > 0 ? Double(images) / wall : 0)) | "
            text += "\(String(format: "%.1f", wall)) | \(String(format: "%.1f", median(samples.map(\.cpu)))) | "
            text += "\(images) | \(Int(median(samples.map { Double($0.queries) }))) |\n"
        }
        text += "\nLoad average at start / end: \(loadAtStart) / \(Environment.loadAverage()).\n\n" + Self.end + "\n"
        return text
    }

    /// The DNS section of `document`, markers included; nil when it has none.
    static func section(in document: String) -> String? {
        guard let start = document.range(of: begin),
            let stop = document.range(of: end, range: start.upperBound..<document.endIndex)
        else { return nil }
        return String(document[start.lowerBound..<stop.upperBound]) + "\n"
    }

    /// `document` with its DNS section replaced, or the section added at the end.
    static func splice(_ section: String, into document: String) -> String {
        if let start = document.range(of: begin),
            let stop = document.range(of: end + "\n", range: start.upperBound..<document.endIndex)
                ?? document.range(of: end, range: start.upperBound..<document.endIndex)
        {
            return document.replacingCharacters(in: start.lowerBound..<stop.upperBound, with: section)
        }
        return document + "\n" + section
    }
}
