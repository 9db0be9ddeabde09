import Foundation

/// HTTP-date parsing and formatting (RFC 9110 §5.6.7), independent of locale and time zone.
///
/// Parses the three forms a recipient must accept — IMF-fixdate, the obsolete RFC 850 form and
/// ANSI C's asctime() form — and formats IMF-fixdate. Month and weekday names are matched
/// case-insensitively and the weekday is not checked against the date (RFC 9110 lets recipients
/// ignore a mismatch).
///
/// ```swift
/// HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")   // 1994-11-06 08:49:37 UTC
/// HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT")  // same instant
/// HTTPDate.parse("Sun Nov  6 08:49:37 1994")        // same instant
/// HTTPDate.format(Date(timeIntervalSince1970: 0))   // "Thu, 01 Jan 1970 00:00:00 GMT"
/// ```
public enum HTTPDate {
    private static let monthNames = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    private static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDayNames = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// Parses an HTTP-date in any of its three forms; `nil` when `text` is none of them.
    ///
    /// - Parameters:
    ///   - text: the field value, surrounding whitespace allowed.
    ///   - referenceYear: the current year, used only for RFC 850's two-digit years: a year that
    ///     would be more than 50 years in the future means the most recent past year with those
    ///     digits. Defaults to the current UTC year.
    public static func parse(_ text: some StringProtocol, referenceYear: Int? = nil) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        scanner.skipSpaces()
        guard let weekday = scanner.letters() else {
            return nil
        }
        if scanner.consume(UInt8(ascii: ",")) {
            scanner.skipSpaces()
            if dayNames.contains(weekday) {
                return parseIMFFixdate(&scanner)
            }
            if longDayNames.contains(weekday) {
                return parseRFC850(&scanner, referenceYear: referenceYear ?? currentYear())
            }
            return nil
        }
        guard dayNames.contains(weekday) else { return nil }
        return parseAsctime(&scanner)
    }

    /// Formats `date` as an IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
    public static func format(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civilDate(fromDays: days)
        // 1970-01-01 was a Thursday (index 3 with Monday = 0).
        let weekday = Int(((days % 7) + 7 + 3) % 7)
        let name = dayNames[weekday].prefix(1).uppercased() + dayNames[weekday].dropFirst()
        let monthName = monthNames[month - 1].prefix(1).uppercased() + monthNames[month - 1].dropFirst()
        return "\(name), \(pad(day)) \(monthName) \(year) \(pad(secondOfDay / 3600)):"
            + "\(pad(secondOfDay / 60 % 60)):\(pad(secondOfDay % 60)) GMT"
    }

    // MARK: - The three forms

    // "06 Nov 1994 08:49:37 GMT" (after "Sun, ")
    private static func parseIMFFixdate(_ scanner: inout Scanner) -> Date? {
        guard let day = scanner.number(digits: 1...2), scanner.consumeSpaces(),
            let month = scanner.month(), scanner.consumeSpaces(),
            let year = scanner.number(digits: 4...4), scanner.consumeSpaces(),
            let time = scanner.timeOfDay(), scanner.consumeSpaces(),
            scanner.gmt(), scanner.isAtEndIgnoringSpaces()
        else { return nil }
        return makeDate(year: year, month: month, day: day, time: time)
    }

    // "06-Nov-94 08:49:37 GMT" (after "Sunday, ")
    private static func parseRFC850(_ scanner: inout Scanner, referenceYear: Int) -> Date? {
        guard let day = scanner.number(digits: 1...2), scanner.consume(UInt8(ascii: "-")),
            let month = scanner.month(), scanner.consume(UInt8(ascii: "-")),
            let twoDigitYear = scanner.number(digits: 2...2), scanner.consumeSpaces(),
            let time = scanner.timeOfDay(), scanner.consumeSpaces(),
            scanner.gmt(), scanner.isAtEndIgnoringSpaces()
        else { return nil }
        var year = referenceYear - referenceYear % 100 + twoDigitYear
        if year > referenceYear + 50 { year -= 100 }
        return makeDate(year: year, month: month, day: day, time: time)
    }

    // "Nov  6 08:49:37 1994" (after "Sun ")
    private static func parseAsctime(_ scanner: inout Scanner) -> Date? {
        guard scanner.consumeSpaces(), let month = scanner.month(), scanner.consumeSpaces(),
            let day = scanner.number(digits: 1...2), scanner.consumeSpaces(),
            let time = scanner.timeOfDay(), scanner.consumeSpaces(),
            let year = scanner.number(digits: 4...4), scanner.isAtEndIgnoringSpaces()
        else { return nil }
        return makeDate(year: year, month: month, day: day, time: time)
    }

    private static func makeDate(year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)) -> Date?
    {
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            time.hour <= 23, time.minute <= 59, time.second <= 60
        else { return nil }
        // A leap second (:60) is read as the last second of its minute.
        let second = min(time.second, 59)
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + Int64(time.hour * 3600 + time.minute * 60 + second)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, UTC)

    private static func isLeapYear(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 for a civil date (the "days from civil" algorithm over 400-year eras).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `daysFromCivil`.
    private static func civilDate(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
        let month = Int(shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9)
        let year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func currentYear() -> Int {
        let days = Int64((Date().timeIntervalSince1970 / 86_400).rounded(.down))
        return civilDate(fromDays: days).year
    }

    private static func pad(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }

    // MARK: - Byte scanner

    private struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skipSpaces() {
            while let byte = current, byte == 0x20 || byte == 0x09 { position += 1 }
        }

        /// Consumes at least one space.
        mutating func consumeSpaces() -> Bool {
            let start = position
            skipSpaces()
            return position > start
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard current == byte else { return false }
            position += 1
            return true
        }

        /// A run of ASCII letters, lower-cased.
        mutating func letters() -> String? {
            var result: [UInt8] = []
            while let byte = current, (byte | 0x20) >= 0x61, (byte | 0x20) <= 0x7A {
                result.append(byte | 0x20)
                position += 1
            }
            return result.isEmpty ? nil : String(decoding: result, as: UTF8.self)
        }

        mutating func number(digits: ClosedRange<Int>) -> Int? {
            var value = 0
            var count = 0
            while let byte = current, byte >= 0x30, byte <= 0x39, count < digits.upperBound {
                value = value * 10 + Int(byte - 0x30)
                count += 1
                position += 1
            }
            guard digits.contains(count) else { return nil }
            // More digits than allowed is a malformed field, not a shorter number.
            if let byte = current, byte >= 0x30, byte <= 0x39 { return nil }
            return value
        }

        mutating func month() -> Int? {
            guard let name = letters(), let index = HTTPDate.monthNames.firstIndex(of: name) else { return nil }
            return index + 1
        }

        mutating func timeOfDay() -> (hour: Int, minute: Int, second: Int)? {
            guard let hour = number(digits: 2...2), consume(UInt8(ascii: ":")),
                let minute = number(digits: 2...2), consume(UInt8(ascii: ":")),
                let second = number(digits: 2...2)
            else { return nil }
            return (hour, minute, second)
        }

        /// "GMT" (RFC 9110), or "UTC" which some servers send instead.
        mutating func gmt() -> Bool {
            guard let zone = letters() else { return false }
            return zone == "gmt" || zone == "utc"
        }

        mutating func isAtEndIgnoringSpaces() -> Bool {
            skipSpaces()
            return position == bytes.count
        }
    }
}
