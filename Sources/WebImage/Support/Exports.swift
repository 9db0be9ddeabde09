// The layers below the downloader are part of WebImage's API: `import WebImage` gives `Image`, the
// decoders, transformers and encoders (WebImageCodecs, also a product of its own), and the HTTP types and
// destination policy of the transport (WebImageTransport), as before they became modules of their own.
@_exported import WebImageCodecs
@_exported import WebImageTransport
