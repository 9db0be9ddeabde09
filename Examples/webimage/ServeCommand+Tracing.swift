import Logging
import ServiceLifecycle

#if OTel
    import OTel
    import Tracing
#endif

extension WebImageCLI.Serve {
    /// Whether the standard OpenTelemetry variables ask for span export: an OTLP endpoint
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or `OTEL_TRACES_EXPORTER`
    /// naming an exporter, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. An SDK would
    /// export to `localhost:4318` by default; a proxy that nobody asked to trace sends nothing instead.
    static func tracingRequested(_ environment: [String: String]) -> Bool {
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return false }
        if let exporter = environment["OTEL_TRACES_EXPORTER"]?.lowercased(), !exporter.isEmpty {
            return exporter != "none"
        }
        return ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].contains {
            !(environment[$0] ?? "").isEmpty
        }
    }

    /// The span exporter's service when the environment asks for one (`tracingRequested`), with the tracer
    /// bootstrapped as the process's; none otherwise. swift-otel reads the rest of the `OTEL_*` variables
    /// (protocol, headers, timeouts, sampler, batch sizes); only traces are exported (metrics stay on
    /// `/metrics`, logs on standard error), and the service is named `webimage` unless `OTEL_SERVICE_NAME`
    /// says otherwise.
    ///
    /// - Throws: swift-otel's error for a malformed variable, which stops the start.
    static func tracingServices(_ environment: [String: String], logger: Logger) throws -> [any Service] {
        guard tracingRequested(environment) else { return [] }
        #if OTel
            var configuration = OTel.Configuration.default
            configuration.serviceName = "webimage"
            configuration.metrics.enabled = false
            configuration.logs.enabled = false
            configuration.diagnosticLogger = .custom(logger)
            let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
            InstrumentationSystem.bootstrap(tracer)
            logger.info("exporting spans as the OTEL_* variables say")
            return [service]
        #else
            logger.warning(
                "OTEL_* variables ask for span export, but this webimage was built without the OTel trait; no spans are sent"
            )
            return []
        #endif
    }
}
