import Foundation
import Testing

@testable import WebImage

@Suite(.timeLimit(.minutes(5))) struct HTTPCacheDateTests {
    /// 1994-11-06 08:49:37 UTC, RFC 9110's example instant.
    let example = Date(timeIntervalSince1970: 784_111_777)

    @Test func parsesTheThreeFormsOfRFC9110() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == example)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", referenceYear: 2025) == example)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == example)
        #expect(HTTPDate.parse("  Sun, 06 Nov 1994 08:49:37 GMT  ") == example)
        #expect(HTTPDate.parse("sun, 06 nov 1994 08:49:37 gmt") == example)
    }

    @Test func formatsIMFFixdateAndRoundTrips() {
        #expect(HTTPDate.format(example) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 951_782_400)) == "Tue, 29 Feb 2000 00:00:00 GMT")
        for seconds in stride(from: -2_000_000_000, through: 4_000_000_000, by: 123_456_789) {
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date, "\(seconds)")
        }
    }

    @Test func twoDigitYearsFollowTheFiftyYearRule() {
        // 2070 is more than 50 years after 2019, so "70" means 1970; "69" means 2069.
        #expect(
            HTTPDate.parse("Thursday, 01-Jan-70 00:00:00 GMT", referenceYear: 2019) == Date(timeIntervalSince1970: 0))
        let year2069 = HTTPDate.parse("Tuesday, 01-Jan-69 00:00:00 GMT", referenceYear: 2019)
        #expect(year2069 == HTTPDate.parse("Tue, 01 Jan 2069 00:00:00 GMT"))
    }

    @Test func rejectsMalformedDates() {
        for text in [
            "", "0", "-1", "tomorrow", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:61:00 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 006 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT trailing", "Sun Nov  6 08:49:37", "Xyz, 06 Nov 1994 08:49:37 GMT",
        ] {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
        }
    }

    @Test func acceptsLeapDaysOnlyInLeapYears() {
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 12:00:00 GMT") != nil)
        #expect(HTTPDate.parse("Fri, 29 Feb 2100 12:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 00:00:00 GMT") == Date(timeIntervalSince1970: 951_782_400))
    }
}
