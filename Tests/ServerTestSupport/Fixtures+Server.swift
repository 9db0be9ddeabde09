import LocalImageServer
import TestSupport

extension Fixtures {
    /// A started server over the corpus images.
    package static func server(tls: LocalImageServer.TLSMode = .none) throws -> LocalImageServer {
        let server = LocalImageServer(root: try requireCorpus(), tls: tls)
        try server.start()
        return server
    }

    /// A path of the server: five redirects whose heads each take 0.8 s, 4 s in all, though no hop takes 2 s.
    package static let slowRedirects = "/redirect/5?delay=800"
}
