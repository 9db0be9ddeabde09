import Foundation
import Testing

@testable import WebImage

/// RFC 9111 behaviour of `HTTPCache` with fixed clocks, against the memory tier only.
@Suite(.timeLimit(.minutes(5))) struct HTTPCachePolicyTests {
    typealias Support = CachingTestSupport
    let t0 = CachingTestSupport.t0
    let cache = HTTPCache(directory: nil)
    let png = CachingTestSupport.body(seed: 1, count: 1000)

    private func store(
        _ path: String = "a.png", status: Int = 200, headers: HTTPHeaders, body: Data? = nil,
        request: ImageDownloadRequest? = nil, requestDate: Date? = nil, responseDate: Date? = nil
    ) {
        let body = body ?? png
        cache.store(
            Support.response(path, status: status, headers: headers, body: body), body: body,
            for: request ?? Support.request(path), requestDate: requestDate ?? t0, responseDate: responseDate ?? t0)
    }

    private func lookup(_ path: String = "a.png", at seconds: TimeInterval, headers: HTTPHeaders = [:])
        -> HTTPCacheLookup
    {
        cache.lookup(Support.request(path, headers: headers), now: t0 + seconds)
    }

    @Test func maxAgeIsFreshUntilItExpiresThenStaleWithIfNoneMatch() throws {
        store(headers: ["Date": Support.httpDate(t0), "Cache-Control": "max-age=60", "ETag": "\"v1\""])
        let fresh = lookup(at: 30)
        #expect(fresh.isFresh)
        #expect(fresh.cachedResponse?.body == png)
        #expect(lookup(at: 59.9).isFresh)
        let stale = lookup(at: 61)
        #expect(stale.isStale)
        #expect(stale.conditionalHeaders?["If-None-Match"] == "\"v1\"")
        #expect(stale.conditionalHeaders?["If-Modified-Since"] == nil)
    }

    /// The cache directory is shared by every downloader and process of the user (RFC 9111 §3.5).
    @Test func sMaxAgeWinsInASharedCache() {
        store(headers: ["Cache-Control": "s-maxage=3600, max-age=10", "ETag": "\"v1\""])
        #expect(lookup(at: 20).isFresh)
        #expect(lookup(at: 3601).isStale)
    }

    @Test func privateResponsesAndAnswersToCredentialsOrCookiesAreNeverStored() {
        store(headers: ["Cache-Control": "max-age=3600"])
        #expect(lookup(at: 1).isFresh)
        // A private 200 is a new representation: it may not be stored, and what was stored is outdated.
        store(headers: ["Cache-Control": "private, max-age=3600"])
        #expect(lookup(at: 1).isMiss)
        for field in ["Authorization", "Proxy-Authorization", "Cookie"] {
            store(
                "b.png", headers: ["Cache-Control": "public, max-age=3600"],
                request: Support.request("b.png", headers: [field: "secret"]))
            #expect(lookup("b.png", at: 1, headers: [field: "secret"]).isMiss, "\(field)")
        }
    }

    @Test func aVaryOnASecretFieldIsNeverStored() {
        store(
            headers: ["Cache-Control": "max-age=3600", "Vary": "X-Api-Key"],
            request: Support.request("a.png", headers: ["X-Api-Key": "key-123"]))
        #expect(lookup(at: 1, headers: ["X-Api-Key": "key-123"]).isMiss)
        // Without the field in the request nothing secret would be written: that variant is stored.
        store(headers: ["Cache-Control": "max-age=3600", "Vary": "X-Api-Key"])
        #expect(lookup(at: 1).isFresh)
    }

    @Test func noStoreIsNeverStored() {
        store(headers: ["Cache-Control": "no-store, max-age=3600"])
        #expect(lookup(at: 0).isMiss)
        store(
            headers: ["Cache-Control": "max-age=3600"],
            request: Support.request("a.png", headers: ["Cache-Control": "no-store"]))
        #expect(lookup(at: 0).isMiss)
        // A new no-store representation supersedes what was stored.
        store(headers: ["Cache-Control": "max-age=3600"])
        #expect(lookup(at: 0).isFresh)
        store(headers: ["Cache-Control": "no-store"])
        #expect(lookup(at: 0).isMiss)
    }

    @Test func noCacheAlwaysRevalidates() {
        store(headers: ["Cache-Control": "no-cache, max-age=3600", "ETag": "\"v1\""])
        let result = lookup(at: 0)
        #expect(result.isStale)
        #expect(result.conditionalHeaders?["If-None-Match"] == "\"v1\"")
        // Without a validator there is nothing to revalidate with: a miss.
        store("b.png", headers: ["Cache-Control": "no-cache, max-age=3600"])
        #expect(lookup("b.png", at: 0).isMiss)
    }

    @Test func requestDirectivesForceRevalidation() {
        store(headers: ["Cache-Control": "max-age=3600", "ETag": "\"v1\""])
        #expect(lookup(at: 10).isFresh)
        #expect(lookup(at: 10, headers: ["Cache-Control": "no-cache"]).isStale)
        #expect(lookup(at: 10, headers: ["Pragma": "no-cache"]).isStale)
        #expect(lookup(at: 10, headers: ["Cache-Control": "max-age=0"]).isStale)
        #expect(lookup(at: 10, headers: ["Cache-Control": "max-age=10"]).isFresh)
        #expect(lookup(at: 3500, headers: ["Cache-Control": "min-fresh=200"]).isStale)
        #expect(lookup(at: 3700).isStale)
        #expect(lookup(at: 3700, headers: ["Cache-Control": "max-stale=200"]).isFresh)
        #expect(lookup(at: 3900, headers: ["Cache-Control": "max-stale=200"]).isStale)
    }

    @Test func mustRevalidateForbidsServingStale() {
        store(headers: ["Cache-Control": "max-age=60, must-revalidate", "ETag": "\"v1\""])
        #expect(lookup(at: 30).isFresh)
        #expect(lookup(at: 90, headers: ["Cache-Control": "max-stale"]).isStale)
    }

    @Test func expiresIsMeasuredFromTheServersDate() {
        let headers: HTTPHeaders = [
            "Date": Support.httpDate(t0), "Expires": Support.httpDate(t0 + 100),
            "Last-Modified": Support.httpDate(t0 - 1000),
        ]
        store(headers: headers)
        #expect(lookup(at: 99).isFresh)
        let stale = lookup(at: 101)
        #expect(stale.isStale)
        #expect(stale.conditionalHeaders?["If-Modified-Since"] == Support.httpDate(t0 - 1000))

        // The server's clock is 1000 s behind ours: the lifetime is still Expires − Date = 100 s, and
        // the apparent age (1000 s) already exceeds it.
        store(
            "skewed.png",
            headers: ["Date": Support.httpDate(t0 - 1000), "Expires": Support.httpDate(t0 - 900), "ETag": "\"s\""])
        #expect(lookup("skewed.png", at: 0).isStale)

        // max-age wins over Expires; an invalid Expires means already expired.
        store(
            "both.png",
            headers: ["Cache-Control": "max-age=500", "Expires": Support.httpDate(t0 + 10), "ETag": "\"b\""])
        #expect(lookup("both.png", at: 100).isFresh)
        store(
            "invalid.png", headers: ["Expires": "0", "ETag": "\"i\"", "Last-Modified": Support.httpDate(t0 - 86_400)])
        #expect(lookup("invalid.png", at: 0).isStale)
    }

    @Test func ageHeaderAndResponseDelayCountTowardCurrentAge() throws {
        // Request sent at t0, response (Age: 90, max-age=100) arrived 2 s later.
        store(
            headers: ["Date": Support.httpDate(t0 + 2), "Cache-Control": "max-age=100", "Age": "90", "ETag": "\"v\""],
            requestDate: t0, responseDate: t0 + 2)
        let cached = try #require(lookup(at: 2).cachedResponse)
        #expect(cached.age(at: t0 + 2) == 92)
        #expect(cached.freshnessLifetime == 100)
        #expect(lookup(at: 2 + 7).isFresh)  // age 99
        #expect(lookup(at: 2 + 9).isStale)  // age 101
    }

    @Test func apparentAgeFromAnOldDateHeaderCounts() throws {
        store(headers: ["Date": Support.httpDate(t0 - 50), "Cache-Control": "max-age=60", "ETag": "\"v\""])
        let cached = try #require(lookup(at: 0).cachedResponse)
        #expect(cached.age(at: t0) == 50)
        #expect(lookup(at: 9).isFresh)
        #expect(lookup(at: 11).isStale)
    }

    @Test func lastModifiedGivesTenPercentHeuristicFreshnessCappedAtADay() throws {
        // Modified 5 days before Date: fresh for 12 h.
        store(headers: ["Date": Support.httpDate(t0), "Last-Modified": Support.httpDate(t0 - 5 * 86_400)])
        #expect(try #require(lookup(at: 0).cachedResponse).freshnessLifetime == 12 * 3600)
        #expect(lookup(at: 11 * 3600).isFresh)
        let stale = lookup(at: 13 * 3600)
        #expect(stale.isStale)
        #expect(stale.conditionalHeaders?["If-Modified-Since"] == Support.httpDate(t0 - 5 * 86_400))

        // Modified 100 days ago: capped at 24 h.
        store("old.png", headers: ["Date": Support.httpDate(t0), "Last-Modified": Support.httpDate(t0 - 100 * 86_400)])
        #expect(try #require(lookup("old.png", at: 0).cachedResponse).freshnessLifetime == 86_400)

        // No Last-Modified and no explicit freshness: stored, but stale at once, and without validators a miss.
        store("plain.png", headers: ["Date": Support.httpDate(t0)])
        #expect(lookup("plain.png", at: 0).isMiss)
    }

    @Test func heuristicsApplyOnlyToHeuristicallyCacheableStatuses() {
        // 302 without explicit freshness is not stored at all; with max-age it is.
        store("moved.png", status: 302, headers: ["Last-Modified": Support.httpDate(t0 - 86_400), "Location": "/x"])
        #expect(lookup("moved.png", at: 0).isMiss)
        store("moved2.png", status: 302, headers: ["Cache-Control": "max-age=60", "Location": "/x"])
        #expect(lookup("moved2.png", at: 0).isFresh)
        // 404 is heuristically cacheable.
        store(
            "gone.png", status: 404,
            headers: ["Date": Support.httpDate(t0), "Last-Modified": Support.httpDate(t0 - 10_000)])
        #expect(lookup("gone.png", at: 500).isFresh)
        // 500, 206 and 304 are never stored.
        for status in [500, 206, 304] {
            store("s\(status).png", status: status, headers: ["Cache-Control": "max-age=60"])
            #expect(lookup("s\(status).png", at: 0).isMiss, "\(status)")
        }
    }

    @Test func varyStoresSelectingHeadersAndComparesThem() {
        let request = Support.request("a.png", headers: ["Accept": "image/webp, image/*", "User-Agent": "A"])
        store(headers: ["Cache-Control": "max-age=60", "Vary": "Accept"], request: request)
        #expect(lookup(at: 1, headers: ["Accept": "image/webp, image/*"]).isFresh)
        #expect(lookup(at: 1, headers: ["Accept": "image/webp,image/*", "User-Agent": "B"]).isFresh)
        #expect(lookup(at: 1, headers: ["Accept": "image/png"]).isMiss)
        #expect(lookup(at: 1).isMiss)

        // A header absent from the storing request must be absent from the lookup too.
        store("b.png", headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language"])
        #expect(lookup("b.png", at: 1).isFresh)
        #expect(lookup("b.png", at: 1, headers: ["Accept-Language": "de"]).isMiss)

        // Vary: * never matches, so it is not stored.
        store("star.png", headers: ["Cache-Control": "max-age=60", "Vary": "*"])
        #expect(lookup("star.png", at: 1).isMiss)
    }

    @Test func notModifiedMergesHeadersAndServesTheStoredBodyByteIdentical() throws {
        store(headers: [
            "Date": Support.httpDate(t0), "Cache-Control": "max-age=60", "ETag": "\"v1\"", "X-Version": "1",
            "Content-Type": "image/png",
        ])
        let stale = lookup(at: 120)
        #expect(stale.isStale)

        let notModified = Support.response(
            "a.png", status: 304,
            headers: [
                "Date": Support.httpDate(t0 + 120), "Cache-Control": "max-age=300", "ETag": "\"v1\"", "X-Version": "2",
                "Content-Length": "0", "Connection": "keep-alive",
            ])
        let refreshed = try #require(
            cache.refresh(
                with: notModified, for: Support.request("a.png"), requestDate: t0 + 120, responseDate: t0 + 120))
        #expect(refreshed.body == png)
        #expect(refreshed.response.statusCode == 200)
        #expect(refreshed.response.headers["X-Version"] == "2")
        #expect(refreshed.response.headers.values(for: "X-Version") == ["2"])
        #expect(refreshed.response.headers["Cache-Control"] == "max-age=300")
        #expect(refreshed.response.headers["Content-Length"] == String(png.count))
        #expect(refreshed.response.headers["Content-Type"] == "image/png")
        #expect(refreshed.response.headers["Connection"] == nil)

        let fresh = lookup(at: 120 + 299)
        #expect(fresh.isFresh)
        #expect(fresh.cachedResponse?.body == png)
        #expect(lookup(at: 120 + 301).isStale)
    }

    @Test func aNotModifiedThatForbidsStoringServesOnceThenForgets() {
        store(headers: ["Cache-Control": "max-age=0", "ETag": "\"v1\""])
        let notModified = Support.response(
            "a.png", status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "no-store"])
        let refreshed = cache.refresh(
            with: notModified, for: Support.request("a.png"), requestDate: t0 + 5, responseDate: t0 + 5)
        #expect(refreshed?.body == png)
        #expect(lookup(at: 6).isMiss)
    }

    @Test func notModifiedForAnotherValidatorOrNothingStoredIsNil() {
        let request = Support.request("a.png")
        let notModified = Support.response("a.png", status: 304, headers: ["ETag": "\"v2\""])
        #expect(cache.refresh(with: notModified, for: request, requestDate: t0, responseDate: t0) == nil)
        store(headers: ["Cache-Control": "max-age=0", "ETag": "\"v1\""])
        #expect(cache.refresh(with: notModified, for: request, requestDate: t0, responseDate: t0) == nil)
        #expect(lookup(at: 1).isMiss)  // the mismatching entry is gone
        // Weak and strong forms of one tag match.
        store(headers: ["Cache-Control": "max-age=0", "ETag": "W/\"v3\""])
        let weak = Support.response("a.png", status: 304, headers: ["ETag": "\"v3\""])
        #expect(cache.refresh(with: weak, for: request, requestDate: t0, responseDate: t0) != nil)
    }

    @Test func aNewResponseReplacesTheStoredOne() {
        store(headers: ["Cache-Control": "max-age=0", "ETag": "\"v1\""])
        #expect(lookup(at: 10).conditionalHeaders?["If-None-Match"] == "\"v1\"")
        let changed = Support.body(seed: 2, count: 1500)
        store(
            headers: ["Cache-Control": "max-age=60", "ETag": "\"v2\""], body: changed, requestDate: t0 + 10,
            responseDate: t0 + 10)
        let result = lookup(at: 20)
        #expect(result.isFresh)
        #expect(result.cachedResponse?.body == changed)
        #expect(result.cachedResponse?.response.headers["ETag"] == "\"v2\"")
    }

    @Test func incompleteBodiesAndCookiesAreNotStored() throws {
        store(headers: ["Cache-Control": "max-age=60", "Content-Length": "5000"])
        #expect(lookup(at: 0).isMiss)
        store(
            "c.png",
            headers: ["Cache-Control": "max-age=60", "Set-Cookie": "id=1", "Connection": "close, X-Hop", "X-Hop": "1"])
        let headers = try #require(lookup("c.png", at: 0).cachedResponse).response.headers
        #expect(headers["Set-Cookie"] == nil)
        #expect(headers["Connection"] == nil)
        #expect(headers["X-Hop"] == nil)
        #expect(headers["Cache-Control"] == "max-age=60")
    }

    @Test func fragmentsDoNotSplitEntries() {
        store(headers: ["Cache-Control": "max-age=60"])
        let withFragment = ImageDownloadRequest(url: URL(string: "https://images.example.com/a.png#frag")!)
        #expect(cache.lookup(withFragment, now: t0).isFresh)
        cache.removeResponse(for: withFragment.url)
        #expect(lookup(at: 0).isMiss)
    }

    @Test func cacheControlParsingHandlesQuotesCaseAndRepeats() {
        let control = CacheControl([
            "Cache-Control": "Max-Age=\"30\", no-cache=\"Set-Cookie, X-A\"", "cache-control": "max-age=99",
        ])
        #expect(control.seconds("max-age") == 30)
        #expect(control.contains("no-cache"))
        #expect(!control.contains("x-a\""))
        #expect(CacheControl(["Cache-Control": "max-age=abc"]).seconds("max-age") == nil)
        #expect(CacheControl(["Cache-Control": "max-age=99999999999999"]).seconds("max-age") == 2_147_483_648)
    }
}
