import Foundation
import Testing

/// moto's S3 server on loopback (PyPI `moto[server]` in `.venv-test`), started by the test, with a bucket,
/// an IAM user allowed `s3:*` and its key; every request after the set-up must be signed with a key
/// moto knows (moto checks SigV4 signatures once its auth is on). In front of it, a fault proxy that
/// answers the first PUT of a `.tar` with a 500 (`InternalError`) and forwards everything else.
///
/// Ends when the object is released (the helper is killed).
package final class MotoS3: Sendable {
    /// The Python of `.venv-test`.
    package static let python = Fixtures.packageRoot.appendingPathComponent(".venv-test/bin/python3").path
    /// Whether the venv has moto and boto3 (`make test-python` installs them).
    package static let available: Bool = {
        guard FileManager.default.isExecutableFile(atPath: python) else { return false }
        let check = Process()
        check.executableURL = URL(fileURLWithPath: python)
        check.arguments = ["-c", "import moto.server, boto3"]
        check.standardError = FileHandle.nullDevice
        guard (try? check.run()) != nil else { return false }
        check.waitUntilExit()
        return check.terminationStatus == 0
    }()

    package static let bucket = "bulk"

    package let endpoint: String
    /// The fault proxy's address.
    package let proxy: String
    package let accessKey: String
    package let secretKey: String
    private let process: Process
    private let input: Pipe
    private let script: URL

    /// Starts moto on a thread of its own: the start takes seconds (Python imports, the IAM set-up), and a
    /// test that blocked a thread of the cooperative pool that long, with others doing the same, would stall
    /// every other suite's async tests.
    package static func start() async throws -> MotoS3 {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try MotoS3() })
            }
            thread.name = "moto-s3-start"
            thread.start()
        }
    }

    private init() throws {
        script = FileManager.default.temporaryDirectory.appendingPathComponent("moto-s3-\(UUID().uuidString).py")
        try Self.source.write(to: script, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [script.path, "serve", Self.bucket]
        let output = Pipe()
        input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The helper prints one JSON line once moto and the proxy listen and the set-up is done. Read with
        // read(2), retried on EINTR: a child's SIGCHLD may land on this thread, and Foundation's FileHandle
        // traps on an interrupted read.
        let descriptor = output.fileHandleForReading.fileDescriptor
        var line = Data()
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            if count <= 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        guard let info = try JSONSerialization.jsonObject(with: line) as? [String: String],
            let endpoint = info["endpoint"], let proxy = info["proxy"], let key = info["key"],
            let secret = info["secret"]
        else {
            process.terminate()
            throw FixtureMissing("moto's helper did not start: \(String(decoding: line, as: UTF8.self))")
        }
        self.endpoint = endpoint
        self.proxy = proxy
        accessKey = key
        secretKey = secret
    }

    deinit {
        try? input.fileHandleForWriting.close()
        // Closing stdin is not enough: a child another test started meanwhile may have inherited the pipe's
        // write end, so the helper might never see the end of its input, and this wait (on whatever thread
        // drops the last reference, a cooperative one included) would never return. SIGKILL cannot be
        // blocked or ignored, whatever signal mask the helper inherited from the test runner.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: script)
    }

    /// The AWS variables of a child that talks to this store (through the proxy with `viaProxy`):
    /// explicit, so nothing reaches AWS whatever the test's own environment holds.
    package func environment(viaProxy: Bool = false, secret: String? = nil) -> [String: String] {
        [
            "AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secret ?? secretKey, "AWS_SESSION_TOKEN": "",
            "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": viaProxy ? proxy : endpoint, "AWS_ENDPOINT_URL_S3": "", "AWS_PROFILE": "",
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        ]
    }

    /// Runs the helper's `mode` with `arguments` (boto3 against moto) and returns its stdout.
    package func tool(_ mode: String, _ arguments: [String]) async throws -> String {
        let output = try await CLIRunner.runProgram(
            Self.python, [script.path, mode, endpoint, accessKey, secretKey] + arguments)
        #expect(output.status == 0, "\(output.stderr)")
        return output.stdout
    }

    /// Copies every object under `prefix` into `folder`, keys relative to the prefix.
    package func download(prefix: String, to folder: URL) async throws {
        _ = try await tool("download", [Self.bucket, prefix, folder.path])
    }

    /// Uploads `file` to `key`.
    package func upload(_ file: URL, key: String) async throws {
        _ = try await tool("upload", [Self.bucket, key, file.path])
    }

    /// Deletes the object `key`.
    package func delete(key: String) async throws {
        _ = try await tool("delete", [Self.bucket, key])
    }

    /// The keys under `prefix`.
    package func keys(prefix: String) async throws -> [String] {
        try await tool("list", [Self.bucket, prefix]).split(separator: "\n").map(String.init)
    }

    /// How many 500s the proxy has answered.
    package func faultsInjected() async throws -> Int {
        let output = try await CLIRunner.runProgram(
            Self.python,
            [
                "-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())",
                proxy + "/__faults",
            ])
        return Int(output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    private static let source = #"""
        import http.client, http.server, json, os, sys, threading
        import boto3

        def client(service, endpoint, key, secret):
            return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                                aws_access_key_id=key, aws_secret_access_key=secret)

        def serve(bucket):
            # S3 decides a conditional PUT (If-None-Match: *) atomically: of two racing for one key, one gets
            # 412. moto checks for the object, then stores it, on the threads of its server, so two racing
            # PUTs could both get 200. Its put_object runs under one lock here, as S3 behaves.
            from moto.s3.responses import S3Response
            put_object, put_lock = S3Response.put_object, threading.Lock()
            def atomic_put_object(self, *args, **kwargs):
                with put_lock:
                    return put_object(self, *args, **kwargs)
            S3Response.put_object = atomic_put_object
            from moto.server import ThreadedMotoServer
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            host, port = server.get_host_and_port()
            endpoint = f"http://{host}:{port}"
            iam = client("iam", endpoint, "setup", "setup")
            iam.create_user(UserName="bulk")
            iam.put_user_policy(UserName="bulk", PolicyName="s3", PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
            key = iam.create_access_key(UserName="bulk")["AccessKey"]
            client("s3", endpoint, "setup", "setup").create_bucket(Bucket=bucket)
            # From here on, every request must be signed with a key moto knows.
            from moto import settings
            from moto.core.authorization import ActionAuthenticatorMixin
            settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
            ActionAuthenticatorMixin.request_count = 0
            state = {"faults": 0, "lock": threading.Lock()}

            class Proxy(http.server.BaseHTTPRequestHandler):
                def log_message(self, *args):
                    pass

                def forward(self):
                    if self.path == "/__faults":
                        body = str(state["faults"]).encode()
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                        return
                    length = int(self.headers.get("Content-Length") or 0)
                    body = self.rfile.read(length) if length else b""
                    with state["lock"]:
                        fault = self.command == "PUT" and ".tar" in self.path and state["faults"] == 0
                        if fault:
                            state["faults"] += 1
                    if fault:
                        error = b"<Error><Code>InternalError</Code><Message>injected</Message></Error>"
                        self.send_response(500)
                        self.send_header("Content-Length", str(len(error)))
                        self.end_headers()
                        self.wfile.write(error)
                        return
                    upstream = http.client.HTTPConnection(host, port)
                    # The Host header is passed on unchanged: it is part of what the client signed.
                    upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                    for name, value in self.headers.items():
                        upstream.putheader(name, value)
                    upstream.endheaders(body)
                    response = upstream.getresponse()
                    data = response.read()
                    self.send_response(response.status)
                    for name, value in response.getheaders():
                        if name.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)

                do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

            proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
            threading.Thread(target=proxy.serve_forever, daemon=True).start()
            print(json.dumps({"endpoint": endpoint, "proxy": f"http://127.0.0.1:{proxy.server_address[1]}",
                              "key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}), flush=True)
            sys.stdin.read()  # until the test closes it

        mode = sys.argv[1]
        if mode == "serve":
            serve(sys.argv[2])
        else:
            endpoint, key, secret, bucket = sys.argv[2:6]
            s3 = client("s3", endpoint, key, secret)
            if mode == "download":
                prefix, folder = sys.argv[6:8]
                for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                    for item in page.get("Contents", []):
                        path = os.path.join(folder, item["Key"][len(prefix):].lstrip("/"))
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                        s3.download_file(bucket, item["Key"], path)
            elif mode == "upload":
                s3.upload_file(sys.argv[7], bucket, sys.argv[6])
            elif mode == "delete":
                s3.delete_object(Bucket=bucket, Key=sys.argv[6])
            elif mode == "etag":
                print(s3.head_object(Bucket=bucket, Key=sys.argv[6])["ETag"])
            elif mode == "fill":
                for n in range(int(sys.argv[7])):
                    s3.put_object(Bucket=bucket, Key=sys.argv[6] + "k %04d+&\u00e9.txt" % n, Body=b"abc")
            elif mode == "list":
                for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=sys.argv[6]):
                    for item in page.get("Contents", []):
                        print(item["Key"])
        """#
}
