/// How a bulk run names its shards and samples, as img2dataset does: a shard's files are named by its
/// number with at least ``shardDigits`` digits (`00003.tar`), and a sample's key is
/// `shard × 10^sampleDigits + index` with at least `shardDigits + sampleDigits` digits, where
/// ``sampleDigits`` is the fewest digits that hold every index of a shard (img2dataset's
/// `ceil(log10(number_sample_per_shard))`). Shards of 10,000 rows and 5 shard digits (both img2dataset's
/// defaults) give `000030042` for row 42 of shard 3; shards of 1,000 give `00003042`. A number past the
/// width is written whole (shard 123456 is `123456.tar`), as Python's `{:05d}` writes it.
public struct BulkKeyFormat: Codable, Equatable, Hashable, Sendable {
    /// The digits of a sample's index within its shard.
    public var sampleDigits: Int
    /// The least digits of a shard's number (img2dataset's `oom_shard_count`).
    public var shardDigits: Int

    /// The largest ``shardDigits``: a wider name is padding only.
    public static let maximumShardDigits = 12

    /// The format of shards of `shardSize` rows (at least 1), their numbers written with `shardDigits`
    /// digits.
    public init(shardSize: Int, shardDigits: Int = 5) {
        var digits = 0
        var bound = 1
        while bound < shardSize {
            bound *= 10
            digits += 1
        }
        self.init(sampleDigits: digits, shardDigits: shardDigits)
    }

    /// A format with these widths.
    public init(sampleDigits: Int, shardDigits: Int) {
        self.sampleDigits = sampleDigits
        self.shardDigits = shardDigits
    }

    /// The format of plans written before the format was recorded: 4 sample digits whatever the shard
    /// size, 5 shard digits.
    public static let fixedWidth = BulkKeyFormat(sampleDigits: 4, shardDigits: 5)

    /// 10^``sampleDigits``: how far apart two shards' first keys are.
    var sampleSpan: Int {
        (0..<sampleDigits).reduce(1) { value, _ in value * 10 }
    }

    /// The name of shard `shard`'s files, before their extension (`00003`).
    public func stem(shard: Int) -> String { Self.padded(shard, to: shardDigits) }

    /// The key of row `index` of shard `shard`.
    public func key(shard: Int, index: Int) -> String {
        Self.padded(shard * sampleSpan + index, to: shardDigits + sampleDigits)
    }

    /// The index that `key` is the key of in shard `shard`; nil when it is not one of that shard's keys.
    public func index(ofKey key: String, shard: Int) -> Int? {
        guard !key.isEmpty, key.utf8.count <= 36, key.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let value = Int(key)
        else { return nil }
        let index = value - shard * sampleSpan
        guard index >= 0, index < sampleSpan, key == self.key(shard: shard, index: index) else { return nil }
        return index
    }

    /// The shard a file of this format's naming belongs to: `name` starts with a shard's stem, followed by
    /// `suffix`-like text that does not begin with a digit (`00003_stats.json`, `00003-retry1.jsonl`); nil
    /// for any other name.
    public func shard(ofFileName name: String) -> Int? {
        let digits = name.utf8.prefix { (0x30...0x39).contains($0) }
        guard digits.count >= 1, digits.count <= 18, let shard = Int(String(decoding: digits, as: UTF8.self)),
            stem(shard: shard).utf8.count == digits.count
        else { return nil }
        return shard
    }

    private static func padded(_ value: Int, to width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
