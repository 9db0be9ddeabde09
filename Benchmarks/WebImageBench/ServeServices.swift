import Foundation

/// How each service of the serve workload is started and asked (see the serve section's prose in
/// Report+Serve.swift for the reasons behind each setting).
extension ServeBenchmark {
    static var cores: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// The origin's URL of photo `{photo}` under key `{key}`, percent-encoded for a proxy's path: the query
    /// string is part of the source URL, not of the proxy request.
    private var encodedSource: (prefix: String, middle: String) {
        (origin.baseURL + "/photos/p", ".jpg%3Fn%3D")
    }

    func services() -> [Service] {
        var list = [webimage(warm: false), thumborService(), imageFilter(), webimage(warm: true)]
        if let base = settings.baseCLI {
            list.insert(webimage(warm: false, cli: base, name: ServeSection.baseName(settings.baseLabel)), at: 1)
            list.append(webimage(warm: true, cli: base, name: ServeSection.baseWarmName(settings.baseLabel)))
        }
        return list
    }

    /// `extra`: more arguments for `webimage serve` (the memory probes raise its source-size limit). `cli` and
    /// `name`: another `webimage` than ``webimageCLI`` (the base of a comparison) and its rows' name.
    func webimage(warm: Bool, extra: [String] = [], cli: String? = nil, name: String? = nil) -> Service {
        let name = name ?? (warm ? "webimage serve, warm disk cache" : "webimage serve")
        let cli = cli ?? webimageCLI
        // The base's cache folder is its own: the two builds' cache files need not agree.
        let cacheDirectory = root.appendingPathComponent(cli == nil ? "serve-cache" : "serve-cache-base")
        let root = self.root
        return Service(
            name: name, prefix: "/insecure/\(Self.job)/plain/" + encodedSource.prefix, middle: encodedSource.middle,
            start: { port in
                guard let cli else {
                    return .failure(.init(description: "no release webimage (make bench sets WEBIMAGE_CLI)"))
                }
                var arguments =
                    [
                        cli, "serve", "--host", "127.0.0.1", "--port", String(port), "--allow-unsigned",
                        "--allow-destination", "127.0.0.0/8",
                    ] + extra
                if warm {
                    guard Self.serveHasCacheDirectory(cli) else {
                        return .failure(.init(description: "--cache-dir missing"))
                    }
                    arguments += ["--cache-dir", cacheDirectory.path]
                }
                return Result {
                    try ServiceProcess(
                        name: name, arguments: arguments, port: port,
                        log: root.appendingPathComponent(
                            "serve-" + name.filter { $0.isLetter || $0.isNumber } + ".log"))
                }.mapError { ($0 as? ServiceProcess.StartError) ?? .init(description: "\($0)") }
            },
            warm: warm)
    }

    /// Whether this `webimage serve` has `--cache-dir` (its help lists it).
    static func serveHasCacheDirectory(_ cli: String) -> Bool {
        runChild([cli, "serve", "--help"]).stdout.contains("--cache-dir")
    }

    /// thumbor from PyPI with its defaults except: the HTTP loader's originals are not stored (`no_storage`;
    /// the default file storage would answer repeated sources from disk), no result storage (its default),
    /// the PIL engine (its default), and one process per core (`--processes 0`; one process is its default).
    private func thumborService() -> Service {
        let thumbor = self.thumbor
        let root = self.root
        return Service(
            name: "thumbor 7.8 (PIL)",
            prefix: "/unsafe/256x256/filters:quality(85):format(jpeg)/" + encodedSource.prefix,
            middle: encodedSource.middle,
            start: { port in
                guard let thumbor else {
                    return .failure(.init(description: "no thumbor in .venv-bench (make deps-bench installs it)"))
                }
                let configuration = root.appendingPathComponent("thumbor.conf")
                let text = """
                    LOADER = 'thumbor.loaders.http_loader'
                    STORAGE = 'thumbor.storages.no_storage'
                    RESULT_STORAGE = None
                    ENGINE = 'thumbor.engines.pil'
                    ALLOW_UNSAFE_URL = True
                    SECURITY_KEY = 'webimage-bench'

                    """
                do { try text.write(to: configuration, atomically: true, encoding: .utf8) } catch {
                    return .failure(.init(description: "cannot write \(configuration.path): \(error)"))
                }
                return Result {
                    try ServiceProcess(
                        name: "thumbor",
                        arguments: [
                            thumbor, "--ip", "127.0.0.1", "--port", String(port), "--conf", configuration.path,
                            "--processes", String(Self.cores), "--log-level", "error",
                        ], port: port, log: root.appendingPathComponent("serve-thumbor.log"))
                }.mapError { ($0 as? ServiceProcess.StartError) ?? .init(description: "\($0)") }
            })
    }

    /// A second nginx (Debian's, with `libnginx-mod-http-image-filter`) in front of the origin: one worker per
    /// core, `image_filter crop 256 256` and quality 85, keep-alive connections to the origin, nothing cached.
    private func imageFilter() -> Service {
        let root = self.root
        let originPort = origin.port(.http1)
        return Service(
            name: "nginx image_filter", prefix: "/photos/p", middle: ".jpg?n=",
            start: { port in
                let module = "/usr/lib/nginx/modules/ngx_http_image_filter_module.so"
                guard FileManager.default.fileExists(atPath: module) else {
                    return .failure(.init(description: "\(module) missing (Debian libnginx-mod-http-image-filter)"))
                }
                let prefix = root.appendingPathComponent("nginx-image-filter")
                let configuration = prefix.appendingPathComponent("nginx.conf")
                let text = """
                    load_module \(module);
                    worker_processes \(Self.cores);
                    daemon off;
                    pid \(prefix.path)/nginx.pid;
                    error_log \(prefix.path)/error.log warn;
                    events { worker_connections 4096; }
                    http {
                        access_log off;
                        keepalive_requests 100000;
                        client_body_temp_path \(prefix.path)/body;
                        proxy_temp_path \(prefix.path)/proxy;
                        fastcgi_temp_path \(prefix.path)/fastcgi;
                        uwsgi_temp_path \(prefix.path)/uwsgi;
                        scgi_temp_path \(prefix.path)/scgi;
                        upstream origin { server 127.0.0.1:\(originPort); keepalive 64; }
                        server {
                            listen 127.0.0.1:\(port) backlog=4096;
                            location / {
                                proxy_pass http://origin;
                                proxy_http_version 1.1;
                                proxy_set_header Connection "";
                                proxy_buffers 64 32k;
                                proxy_max_temp_file_size 0;
                                image_filter crop 256 256;
                                image_filter_jpeg_quality 85;
                                image_filter_buffer 16M;
                            }
                        }
                    }

                    """
                do {
                    try FileManager.default.createDirectory(at: prefix, withIntermediateDirectories: true)
                    try text.write(to: configuration, atomically: true, encoding: .utf8)
                } catch {
                    return .failure(.init(description: "cannot write \(configuration.path): \(error)"))
                }
                let nginx =
                    FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx"
                return Result {
                    try ServiceProcess(
                        name: "nginx image_filter",
                        arguments: [nginx, "-c", configuration.path, "-p", prefix.path], port: port,
                        log: root.appendingPathComponent("serve-nginx.log"))
                }.mapError { ($0 as? ServiceProcess.StartError) ?? .init(description: "\($0)") }
            })
    }

    /// The versions the serve section names.
    func versions() -> [(String, String)] {
        func shell(_ script: String) -> String {
            runChild(["sh", "-c", script]).stdout.split(separator: "\n").first.map { String($0).trimmed } ?? "?"
        }
        var list: [(String, String)] = [
            ("nginx (origin and image_filter)", shell("nginx -v 2>&1 | cut -d/ -f2")),
            ("libgd (image_filter)", shell("dpkg-query -W -f='${Version}' libgd3 2>/dev/null")),
            ("wrk", shell("wrk -v 2>&1 | head -n1 | cut -d' ' -f2")),
        ]
        if let thumbor {
            let python = URL(fileURLWithPath: thumbor).deletingLastPathComponent().appendingPathComponent("python3")
            list.append(
                (
                    "thumbor, Pillow",
                    shell(
                        "'\(python.path)' -c 'import thumbor, PIL; print(thumbor.__version__ + \", Pillow \" + "
                            + "PIL.__version__)'")
                ))
        }
        return list
    }
}
