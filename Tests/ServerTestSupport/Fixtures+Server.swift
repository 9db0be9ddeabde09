import LocalImageServer
import TestSupport

extension Fixtures {
    /// A started server over the corpus images.
    package static func server(tls: LocalImageServer.TLSMode = .none) throws -> LocalImageServer {
        let server = LocalImageServer(root: try requireCorpus(), tls: tls)
        try server.start()
        return server
    }
}
