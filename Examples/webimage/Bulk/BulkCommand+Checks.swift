import ArgumentParser
import WebImageDataset

extension WebImageCLI.Bulk {
    /// The sentence for a run whose every row failed with one error code that an option of this command
    /// changes, naming the option; nil otherwise. A run refused by the destination policy would otherwise
    /// end in "0 of 244 ok" and exit 0, and the user would not learn which switch to turn.
    ///
    /// The shards are written (their stats mark them done), so the sentence points to `--retry-failed`,
    /// which runs those rows again; a plain rerun skips them.
    static func allFailedHint(succeeded: Int, failures: [String: Int]) -> String? {
        guard succeeded == 0, failures.count == 1, let (code, rows) = failures.first, rows > 0 else { return nil }
        let change: String
        switch code {
        case "destinationNotAllowed":
            change =
                "only public addresses are connected to by default: --allow-private-destinations connects to any "
                + "address, --allow-destination CIDR to one network"
        case "sslFailure":
            change = "the TLS certificates were not trusted: --insecure accepts any certificate"
        case "tooSmall":
            change = "every image was below --min-image-size: lower it"
        case "areaTooLarge":
            change = "every image was above --max-image-area: raise it"
        case "aspectRatio":
            change = "every image was beyond --max-aspect-ratio: raise it"
        case "truncated":
            change = "every file ended early: --allow-partial keeps such images"
        default:
            return nil
        }
        return "every row (\(rows)) failed with \(code); \(change), and --retry-failed with it runs these rows "
            + "again (a plain rerun skips the finished shards)"
    }

    /// Prints the hint of ``allFailedHint(succeeded:failures:)`` and exits with 2 (the options, not a
    /// rerun, fix it) when there is one.
    static func checkAllFailed(succeeded: Int, failures: [String: Int]) throws {
        guard let hint = allFailedHint(succeeded: succeeded, failures: failures) else { return }
        Console.write("webimage bulk: \(hint)\n", to: .standardError)
        throw ExitCode(2)
    }
}

extension WebImageCLI.Bulk {
    /// img2dataset's `--input_format` must name the format the input's name says (`urls.csv.gz` is
    /// `csv.gz`): webimage picks the reader by the name, and a disagreement would read the file wrongly.
    func checkInputFormat() throws {
        guard let declared = img2datasetInputFormat else { return }
        let name = input.split(separator: "/").last.map(String.init) ?? input
        guard let format = input.hasPrefix("s3://") ? BulkInputFormat(fileName: name) : BulkInputFormat(path: input)
        else {
            throw ValidationError(
                "--input_format \(declared): webimage bulk reads the format from the input's name, and '\(name)' "
                    + "ends in none of .txt, .csv, .tsv, .json, .jsonl (each optionally .gz), .parquet or .tar (nor "
                    + "is it a folder of webdataset shards).")
        }
        let actual = format.rawValue + (name.lowercased().hasSuffix(".gz") ? ".gz" : "")
        guard declared == actual else {
            throw ValidationError(
                "--input_format \(declared) does not match the input '\(name)', which webimage bulk reads as "
                    + "\(actual) (the format comes from the name).")
        }
    }
}
