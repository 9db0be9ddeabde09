import Foundation
import WebImageTransport

/// An object in a listing.
public struct S3Object: Sendable, Equatable {
    /// The object's key.
    public var key: String
    /// Its size in bytes.
    public var size: Int
}

/// The S3 operations the bulk engine uses, over the transport's `BlockingTransfer` (libcurl): GetObject
/// (streamed to a file), PutObject, multipart upload past ``S3Configuration/multipartThreshold``,
/// ListObjectsV2, HeadObject and DeleteObject. Works with AWS and with S3-compatible stores through `AWS_ENDPOINT_URL`.
///
/// Every call blocks its thread until the store answers; the `async` wrappers run it on a dispatch
/// thread. A 500, 502, 503 or 504 and a network failure are tried again, at most
/// ``S3Configuration/maximumAttempts`` times with doubling waits; any other answer outside 2xx is an
/// ``S3Error`` with the store's code and message.
///
/// ```swift
/// let client = S3Client(configuration: try S3Configuration.fromEnvironment())
/// try client.upload(file: URL(fileURLWithPath: "00000.tar"), to: S3Location(bucket: "data", key: "run/00000.tar"))
/// let objects = try client.list(prefix: S3Location(bucket: "data", key: "run/"))
/// ```
public struct S3Client: Sendable {
    /// Where the store is and who signs.
    public let configuration: S3Configuration

    /// A client of the store `configuration` describes.
    public init(configuration: S3Configuration) {
        self.configuration = configuration
    }

    // MARK: Objects

    /// Downloads the object at `location` into `file` (created or truncated), streamed; at most
    /// ``S3Configuration/maximumDownloadBytes``. A failed download removes the file.
    public func download(_ location: S3Location, to file: URL) throws(S3Error) {
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw S3Error(.file, "cannot create '\(file.path)': \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do throws(S3Error) {
            _ = try send("GET", location, sink: .file(handle), what: "GetObject \(location)")
            do {
                try handle.synchronize()
            } catch {
                throw S3Error(.file, "cannot write '\(file.path)': \(error.localizedDescription)")
            }
        } catch {
            // A partial copy would read as a shorter input.
            unlink(file.path)
            throw error
        }
    }

    /// The object at `location`, in memory (at most ``S3Configuration/maximumResponseBytes``).
    public func data(_ location: S3Location) throws(S3Error) -> Data {
        Data(try send("GET", location, what: "GetObject \(location)").body)
    }

    /// Writes `data` to `location` in one PUT.
    public func put(_ data: Data, to location: S3Location) throws(S3Error) {
        _ = try send("PUT", location, body: [UInt8](data), what: "PutObject \(location)")
    }

    /// Writes `data` to `location` only if no object is there (a conditional PUT, `If-None-Match: *`):
    /// true when this call made it, false when one was already there (412). Of several callers racing for
    /// one key, exactly one gets true. A 409 (S3's `ConditionalRequestConflict`, another conditional write
    /// of the key in flight) is tried again, as a 5xx is. Needs a store that honours the condition (AWS S3,
    /// MinIO, Ceph and moto do); one that ignores it overwrites and answers 200.
    public func putIfAbsent(_ data: Data, to location: S3Location) throws(S3Error) -> Bool {
        var headers = HTTPHeaders()
        headers.add(name: "If-None-Match", value: "*")
        var conflicts = 0
        while true {
            do {
                _ = try send("PUT", location, body: [UInt8](data), headers: headers, what: "PutObject \(location)")
                return true
            } catch  where error.status == 412 {
                return false
            } catch  where error.status == 409 && conflicts + 1 < configuration.maximumAttempts {
                conflicts += 1
                Thread.sleep(forTimeInterval: configuration.retryDelay * Double(1 << (conflicts - 1)))
            }
        }
    }

    /// Uploads `file` to `location`: in one PUT up to ``S3Configuration/multipartThreshold``, else as a
    /// multipart upload of ``S3Configuration/partSize`` parts, aborted when a part fails. Either way the
    /// object appears whole or not at all.
    public func upload(file: URL, to location: S3Location) throws(S3Error) {
        guard let handle = FileHandle(forReadingAtPath: file.path) else {
            throw S3Error(.file, "cannot read '\(file.path)'")
        }
        defer { try? handle.close() }
        let size: UInt64
        do {
            size = try handle.seekToEnd()
            try handle.seek(toOffset: 0)
        } catch {
            throw S3Error(.file, "cannot read '\(file.path)': \(error.localizedDescription)")
        }
        func read(_ count: Int) throws(S3Error) -> [UInt8] {
            do {
                return [UInt8](try handle.read(upToCount: count) ?? Data())
            } catch {
                throw S3Error(.file, "cannot read '\(file.path)': \(error.localizedDescription)")
            }
        }
        if size <= UInt64(configuration.multipartThreshold) {
            _ = try send("PUT", location, body: try read(Int(size)), what: "PutObject \(location)")
            return
        }
        let uploadID = try createMultipartUpload(location)
        do throws(S3Error) {
            var parts: [String] = []
            var sent: UInt64 = 0
            while sent < size {
                let bytes = try read(Int(min(UInt64(configuration.partSize), size - sent)))
                guard !bytes.isEmpty else { throw S3Error(.file, "'\(file.path)' shrank while it was uploaded") }
                parts.append(try uploadPart(location, uploadID: uploadID, number: parts.count + 1, bytes: bytes))
                sent += UInt64(bytes.count)
            }
            try completeMultipartUpload(location, uploadID: uploadID, etags: parts)
        } catch {
            // The parts of an upload never completed are stored (and billed) until aborted.
            try? abortMultipartUpload(location, uploadID: uploadID)
            throw error
        }
    }

    /// The size of the object at `location`; nil when there is none.
    public func size(of location: S3Location) throws(S3Error) -> Int? {
        do {
            let response = try send("HEAD", location, what: "HeadObject \(location)")
            return response.header("Content-Length").flatMap { Int($0) } ?? 0
        } catch  where error.kind == .notFound {
            return nil
        }
    }

    /// Deletes the object at `location` (no error when there is none).
    public func delete(_ location: S3Location) throws(S3Error) {
        _ = try send("DELETE", location, what: "DeleteObject \(location)")
    }

    /// Every object whose key starts with `prefix`'s key, in key order, one ListObjectsV2 page of at most
    /// 1,000 after another. With a `delimiter` (`/`), the keys that hold it after the prefix are left out
    /// (S3 rolls them up into common prefixes), so a listing of a folder skips its subfolders.
    ///
    /// - Throws: ``S3Error/Kind/badResponse`` when the store repeats a continuation token, or the listing
    ///   goes past ``S3Configuration/maximumListPages`` pages: such a listing would not end; and when a page
    ///   holds more than the 1,000 keys asked for (`max-keys`), so the page cap bounds the keys held too.
    public func list(prefix: S3Location, delimiter: String? = nil) throws(S3Error) -> [S3Object] {
        var objects: [S3Object] = []
        var token: String?
        var seen: Set<String> = []
        var pages = 0
        repeat {
            guard pages < configuration.maximumListPages else {
                throw S3Error(
                    .badResponse,
                    "ListObjectsV2 \(prefix): still truncated after \(pages) pages (the limit of a listing)")
            }
            pages += 1
            var query = [
                ("list-type", "2"), ("prefix", prefix.key), ("encoding-type", "url"),
                ("max-keys", String(Self.keysPerPage)),
            ]
            if let delimiter { query.append(("delimiter", delimiter)) }
            if let token { query.append(("continuation-token", token)) }
            let bucket = S3Location(bucket: prefix.bucket, key: "")
            let body = try send("GET", bucket, query: query, what: "ListObjectsV2 \(prefix)").body
            // Each <Contents> holds one <Key> and one <Size>; nothing else in the answer has either.
            let keys = S3XML.all("Key", in: body)
            let sizes = S3XML.all("Size", in: body)
            guard keys.count == sizes.count else {
                throw S3Error(.badResponse, "ListObjectsV2 \(prefix): \(keys.count) keys but \(sizes.count) sizes")
            }
            guard keys.count <= Self.keysPerPage else {
                throw S3Error(
                    .badResponse,
                    "ListObjectsV2 \(prefix): a page of \(keys.count) keys, more than the \(Self.keysPerPage) asked for"
                )
            }
            for (key, size) in zip(keys, sizes) {
                // encoding-type=url: form encoding, `+` for a space.
                guard let decoded = key.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                    throw S3Error(
                        .badResponse, "ListObjectsV2 \(prefix): undecodable key '\(S3Error.printable(key))'")
                }
                objects.append(S3Object(key: decoded, size: Int(size) ?? 0))
            }
            guard S3XML.first("IsTruncated", in: body) == "true" else { break }
            guard let next = S3XML.first("NextContinuationToken", in: body), !next.isEmpty else {
                throw S3Error(.badResponse, "ListObjectsV2 \(prefix): a truncated page without a continuation token")
            }
            // The same token again would list the same page again, for ever.
            guard seen.insert(next).inserted else {
                throw S3Error(
                    .badResponse,
                    "ListObjectsV2 \(prefix): the store repeated a continuation token after \(pages) pages")
            }
            token = next
        } while true
        return objects
    }

    /// The keys one ListObjectsV2 page may hold: S3's default and largest `max-keys`.
    static let keysPerPage = 1_000

    // MARK: Multipart

    private func createMultipartUpload(_ location: S3Location) throws(S3Error) -> String {
        let body = try send(
            "POST", location, query: [("uploads", "")], body: [], what: "CreateMultipartUpload \(location)"
        )
        .body
        guard let id = S3XML.first("UploadId", in: body), !id.isEmpty else {
            throw S3Error(.badResponse, "CreateMultipartUpload \(location): no UploadId in the answer")
        }
        return id
    }

    private func uploadPart(
        _ location: S3Location, uploadID: String, number: Int, bytes: [UInt8]
    ) throws(S3Error) -> String {
        let response = try send(
            "PUT", location, query: [("partNumber", String(number)), ("uploadId", uploadID)], body: bytes,
            what: "UploadPart \(number) of \(location)")
        guard let etag = response.header("ETag") else {
            throw S3Error(.badResponse, "UploadPart \(number) of \(location): no ETag in the answer")
        }
        return etag
    }

    private func completeMultipartUpload(_ location: S3Location, uploadID: String, etags: [String]) throws(S3Error) {
        let parts = etags.enumerated().map {
            "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\(S3XML.escape($0.element))</ETag></Part>"
        }
        let xml = "<CompleteMultipartUpload>\(parts.joined())</CompleteMultipartUpload>"
        let response = try send(
            "POST", location, query: [("uploadId", uploadID)], body: Array(xml.utf8),
            headers: ["Content-Type": "application/xml"], what: "CompleteMultipartUpload \(location)")
        // S3 may answer 200 and put the error in the body, once it has started the work.
        if S3XML.first("Error", in: response.body) != nil || S3XML.first("Code", in: response.body) != nil {
            throw S3Error.response(status: 500, body: response.body, request: "CompleteMultipartUpload \(location)")
        }
    }

    private func abortMultipartUpload(_ location: S3Location, uploadID: String) throws(S3Error) {
        _ = try send("DELETE", location, query: [("uploadId", uploadID)], what: "AbortMultipartUpload \(location)")
    }

    // MARK: Requests

    /// Sends one request, again on a 500, 502, 503, 504 or a network failure, and turns an answer outside
    /// 2xx into an ``S3Error``.
    private func send(
        _ method: String, _ location: S3Location, query: [(String, String)] = [], body: [UInt8]? = nil,
        headers: HTTPHeaders = HTTPHeaders(), sink: S3Transfer.Sink = .memory, what: String
    ) throws(S3Error) -> S3Transfer.Response {
        let url = configuration.url(
            bucket: location.bucket, key: location.key, query: S3Configuration.query(query))
        var attempt = 1
        while true {
            let outcome: Result<S3Transfer.Response, S3Error>
            do {
                outcome = .success(
                    try S3Transfer.perform(
                        method: method, url: url, body: body, extraHeaders: headers, sink: sink,
                        configuration: configuration))
            } catch {
                outcome = .failure(error)
            }
            let failure: S3Error
            switch outcome {
            case .success(let response) where (200..<300).contains(response.status):
                return response
            case .success(let response):
                failure = S3Error.response(status: response.status, body: response.body, request: what)
                guard [500, 502, 503, 504].contains(response.status) else { throw failure }
            case .failure(let error):
                guard error.kind == .network else {
                    throw S3Error(error.kind, "\(what): \(error.message)", status: error.status, code: error.code)
                }
                failure = S3Error(.network, "\(what): \(error.message)")
            }
            guard attempt < configuration.maximumAttempts else {
                throw S3Error(
                    failure.kind, failure.message + " (after \(attempt) attempts)", status: failure.status,
                    code: failure.code)
            }
            if case .file(let handle) = sink {
                do {
                    try handle.truncate(atOffset: 0)
                } catch {
                    throw S3Error(.file, "cannot restart the download of \(location): \(error.localizedDescription)")
                }
            }
            Thread.sleep(forTimeInterval: configuration.retryDelay * Double(1 << (attempt - 1)))
            attempt += 1
        }
    }
}

extension S3Client {
    /// Runs `work` (blocking calls of this client) on a thread of its own: neither Swift's cooperative
    /// pool nor Dispatch's global queues (as wide as the core count on Linux) wait on the network.
    public static func detached<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try work() }) }
            thread.name = "webimage-s3"
            thread.start()
        }
    }
}
