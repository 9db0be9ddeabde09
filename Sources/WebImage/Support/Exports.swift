// The codecs are part of WebImage's API: `import WebImage` keeps giving `Image`, the decoders, the
// transformers and the encoders, as before they became their own product.
@_exported import WebImageCodecs
