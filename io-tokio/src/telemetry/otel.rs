//! Feature `otel`: the request spans as OpenTelemetry spans whose parent is the client's
//! trace context, the two duration histograms of OpenTelemetry's MCP conventions, and
//! [`Otel`], which exports both as OTLP over HTTP (`docs/observability.md`).
//!
//! The spans stay `tracing` spans ([`crate::telemetry::Telemetry`]'s): `tracing-opentelemetry`'s
//! layer ([`Otel::layer`], or one a host builds on its own tracer) turns them into
//! OpenTelemetry spans, named by their `otel.name` and of kind `SERVER`. Here each gets as
//! parent a remote span context made of the client's valid `traceparent` and `tracestate`,
//! with the client's `baggage` in the same context, so a handler (inside which the span
//! is current) sees both through `opentelemetry::Context::current()`.
//!
//! The histograms are recorded when the host gives a meter ([`Telemetry::meter`]):
//! `mcp.server.operation.duration` per request (`subscriptions/listen` excepted: its
//! result comes only when the stream ends), `mcp.server.session.duration` per session of
//! a session-bound revision, in seconds, with the conventions' attributes and
//! [`DURATION_BUCKETS`]. Neither carries a request id, session id, address, argument or
//! uri.
//!
//! [`Telemetry::meter`]: crate::telemetry::Telemetry::meter
//! [`crate::telemetry::Telemetry`]: crate::telemetry::Telemetry

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use mcp_engine::http::Refusal;
use mcp_engine::observe::{Served, TraceContext};
use mcp_engine::{Instant, Revision};
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider as _};
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState};
use opentelemetry::{Context, KeyValue, StringValue, Value};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::BaggagePropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::Span;
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt as _};

use crate::host::strings::Name;
use mcp_spans::{StatusCodeKey, Verdict, Wire, server_error};

/// The explicit bucket boundaries, in seconds, the conventions give both histograms.
pub const DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The counter of refused HTTP requests (attribute `error.type`: the
/// [`Refusal::name`](mcp_engine::http::Refusal::name) of the reason).
pub const REFUSALS: &str = "mcp.server.http.refusals";

/// The instrumentation scope of the meter [`Otel::meter`] gives, and of [`Otel`]'s tracer.
pub const SCOPE: &str = "mcp-io-tokio";

/// Makes the client's context the parent of `span` (before it starts): a remote span
/// context of the valid `traceparent` (its flags as sent) and `tracestate`, and the
/// `baggage` in the same context. Nothing when the span is disabled, the request carried
/// no context, or no OpenTelemetry layer records the span. Returns whether an
/// OpenTelemetry layer took the context.
pub(crate) fn set_parent(span: &Span, trace: &TraceContext<'_>) -> bool {
    if span.is_disabled() || trace.is_empty() {
        return false;
    }
    let mut cx = Context::new();
    if let Some(p) = trace.parent() {
        let state = trace.tracestate().and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
        let remote = SpanContext::new(
            TraceId::from_bytes(p.trace_id().to_bytes()),
            SpanId::from_bytes(p.parent_id().to_bytes()),
            TraceFlags::new(p.flags()),
            true,
            state,
        );
        cx = cx.with_remote_span_context(remote);
    }
    if let Some(baggage) = trace.baggage() {
        cx = BaggagePropagator::new().extract_with_context(&cx, &BaggageOnly(baggage));
    }
    // Refused only when no OpenTelemetry layer records the span: then it has no parent.
    span.set_parent(cx).is_ok()
}

/// The one `baggage` value, as the W3C propagator reads a carrier.
struct BaggageOnly<'a>(&'a str);

impl Extractor for BaggageOnly<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        key.eq_ignore_ascii_case("baggage").then_some(self.0)
    }
    fn keys(&self) -> Vec<&str> {
        vec!["baggage"]
    }
}

/// The two histograms, and the count of refused HTTP requests.
#[derive(Clone)]
pub(crate) struct Metrics {
    operation: Histogram<f64>,
    session: Histogram<f64>,
    refusals: Counter<u64>,
    /// The attribute name(s) of a JSON-RPC error code.
    pub(crate) key: StatusCodeKey,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Metrics { mcp.server.operation.duration, mcp.server.session.duration, mcp.server.http.refusals }")
    }
}

/// What a request's point names: its method, and the tool or prompt.
pub(crate) enum Target {
    Method(&'static str),
    Tool(Name),
    Prompt(Name),
}

/// A host-served request's point, begun when its work started.
pub(crate) struct Point {
    started: std::time::Instant,
    target: Target,
    revision: Revision,
}

impl Point {
    pub(crate) fn begin(target: Target, revision: Revision) -> Self {
        Self { started: std::time::Instant::now(), target, revision }
    }
}

/// A JSON-RPC error code as text (the common ones without an allocation).
fn code_text(code: i32) -> StringValue {
    let known = match code {
        -32700 => "-32700",
        -32600 => "-32600",
        -32601 => "-32601",
        -32602 => "-32602",
        -32603 => "-32603",
        -32002 => "-32002",
        -32001 => "-32001",
        -32010 => "-32010",
        -32011 => "-32011",
        -32020 => "-32020",
        -32021 => "-32021",
        -32022 => "-32022",
        _ => return code.to_string().into(),
    };
    known.into()
}

/// The attributes every point has: the revision and the transport.
fn common(attributes: &mut Vec<KeyValue>, revision: Option<Revision>, wire: Wire) {
    if let Some(rev) = revision {
        attributes.push(KeyValue::new("mcp.protocol.version", rev.as_str()));
    }
    attributes.push(KeyValue::new("network.transport", wire.transport));
    if let Some(name) = wire.protocol {
        attributes.push(KeyValue::new("network.protocol.name", name));
    }
    if let Some(version) = wire.version {
        attributes.push(KeyValue::new("network.protocol.version", version));
    }
}

/// `mcp.server.operation.duration`'s attributes (`method` `None`: one the engine does not
/// serve, without `mcp.method.name`).
fn operation(
    method: Option<&'static str>,
    target: Option<(bool, Value)>,
    revision: Option<Revision>,
    (verdict, key): (Verdict, StatusCodeKey),
    wire: Wire,
) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(11);
    if let Some(method) = method {
        attributes.push(KeyValue::new("mcp.method.name", method));
    }
    match target {
        Some((true, tool)) => {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        Some((false, prompt)) => attributes.push(KeyValue::new("gen_ai.prompt.name", prompt)),
        None => {}
    }
    common(&mut attributes, revision, wire);
    match verdict {
        Verdict::Ok => {}
        Verdict::ToolError => attributes.push(KeyValue::new("error.type", "tool_error")),
        Verdict::Cancelled => attributes.push(KeyValue::new("error.type", "cancelled")),
        Verdict::Code(code) => {
            for name in key.names() {
                attributes.push(KeyValue::new(*name, code_text(code)));
            }
            if server_error(code) {
                attributes.push(KeyValue::new("error.type", code_text(code)));
            }
        }
    }
    attributes
}

/// A shared name as an attribute value (no copy).
fn shared(name: &Name) -> Value {
    Value::String(StringValue::from(name.shared()))
}

impl Metrics {
    pub(crate) fn new(meter: &Meter, key: StatusCodeKey) -> Self {
        let histogram = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        Self {
            operation: histogram(
                "mcp.server.operation.duration",
                "MCP request or notification duration as observed on the receiver from the time it was \
                 received until the result or ack is sent.",
            ),
            session: histogram(
                "mcp.server.session.duration",
                "The duration of the MCP session as observed on the MCP server.",
            ),
            refusals: meter
                .u64_counter(REFUSALS)
                .with_unit("{request}")
                .with_description("HTTP requests the server refused, by reason (error.type).")
                .build(),
            key,
        }
    }

    /// `n` more requests refused for `refusal`.
    pub(crate) fn refused(&self, refusal: Refusal, n: u64) {
        self.refusals.add(n, &[KeyValue::new("error.type", refusal.name())]);
    }

    /// The point of a request the engine answered itself, `took` after it was read.
    pub(crate) fn served(&self, s: &Served<'_>, verdict: Verdict, wire: Wire, took: Duration) {
        if s.method() == Some("subscriptions/listen") && verdict == Verdict::Ok {
            return;
        }
        let target = match (s.tool(), s.prompt()) {
            (Some(tool), _) => {
                Some((true, Value::String(Cow::<'static, str>::Owned(tool.to_owned()).into())))
            }
            (None, Some(prompt)) => {
                Some((false, Value::String(Cow::<'static, str>::Owned(prompt.to_owned()).into())))
            }
            (None, None) => None,
        };
        let attributes = operation(s.method(), target, s.revision(), (verdict, self.key), wire);
        self.operation.record(took.as_secs_f64(), &attributes);
    }

    /// The point of a host-served request, now answered (or cancelled).
    pub(crate) fn finished(&self, point: Point, verdict: Verdict, wire: Wire) {
        let (method, target) = match &point.target {
            Target::Method(m) => (*m, None),
            Target::Tool(t) => ("tools/call", Some((true, shared(t)))),
            Target::Prompt(p) => ("prompts/get", Some((false, shared(p)))),
        };
        let attributes = operation(Some(method), target, Some(point.revision), (verdict, self.key), wire);
        self.operation.record(point.started.elapsed().as_secs_f64(), &attributes);
    }

    /// The point of a session that lasted `took`.
    pub(crate) fn session_ended(&self, revision: Option<Revision>, wire: Wire, took: Duration) {
        let mut attributes = Vec::with_capacity(4);
        common(&mut attributes, revision, wire);
        self.session.record(took.as_secs_f64(), &attributes);
    }
}

/// Sessions whose duration a run loop tracks at most (more open at once are not timed).
const MAX_TIMED_SESSIONS: usize = 65_536;

/// The sessions a run loop times: opened by an `initialize` the engine answered, ended by
/// the engine's report (HTTP) or with the stream (stdio, one session at most).
#[derive(Default)]
pub(crate) struct Sessions {
    open: HashMap<Box<str>, (Instant, Option<Revision>)>,
    stream: Option<(Instant, Option<Revision>)>,
}

impl Sessions {
    /// A session opened at `at`: HTTP's has an id, a stream's none.
    pub(crate) fn opened(&mut self, id: Option<&str>, at: Instant, revision: Option<Revision>) {
        match id {
            Some(id) if self.open.len() < MAX_TIMED_SESSIONS => {
                self.open.insert(id.into(), (at, revision));
            }
            Some(_) => {}
            None => self.stream = Some((at, revision)),
        }
    }

    /// Session `id` (`None`: the stream's) ended at `at`: its revision and how long it
    /// lasted, if it was timed here.
    pub(crate) fn ended(&mut self, id: Option<&str>, at: Instant) -> Option<(Option<Revision>, Duration)> {
        let (opened, revision) = match id {
            Some(id) => self.open.remove(id)?,
            None => self.stream.take()?,
        };
        Some((revision, at.saturating_duration_since(opened)))
    }
}

/// Why [`Otel`] could not be built or shut down.
#[derive(Debug)]
#[non_exhaustive]
pub enum OtelError {
    /// An exporter could not be built (an invalid endpoint, say).
    Build(opentelemetry_otlp::ExporterBuildError),
    /// Flushing or stopping a provider failed (the collector did not take what was left).
    Shutdown(opentelemetry_sdk::error::OTelSdkError),
}

impl fmt::Display for OtelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Build(e) => write!(f, "building the OTLP exporter: {e}"),
            Self::Shutdown(e) => write!(f, "shutting the OpenTelemetry providers down: {e}"),
        }
    }
}

impl std::error::Error for OtelError {}

/// OpenTelemetry export as OTLP over HTTP (protobuf): a tracer provider whose batch
/// processor sends the request spans, and a meter provider whose periodic reader sends the
/// two histograms, to a collector (`POST {endpoint}/v1/traces`, `/v1/metrics`).
///
/// ```no_run
/// use tracing_subscriber::layer::SubscriberExt;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let otel = mcp_io_tokio::telemetry::otel::Otel::builder().endpoint("http://127.0.0.1:4318").service_name("notes").build()?;
/// let subscriber = tracing_subscriber::registry().with(otel.layer());
/// tracing::subscriber::set_global_default(subscriber)?;
/// // HttpServer::new(engine, handler, auth).telemetry(otel.telemetry()) ... serve ...
/// otel.shutdown()?; // sends what is left
/// # Ok(())
/// # }
/// ```
///
/// Without an endpoint the exporters read `OTEL_EXPORTER_OTLP_ENDPOINT` (and the
/// per-signal variables), else `http://localhost:4318`. The exports run on the SDK's own
/// threads (reqwest's blocking client), never on the server's tasks; the spans of an
/// unsampled parent (`traceparent` flags `00`) are not exported (the SDK's default
/// parent-based sampler).
#[derive(Debug)]
pub struct Otel {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

/// Settings of [`Otel`].
#[derive(Debug, Clone)]
pub struct OtelBuilder {
    endpoint: Option<String>,
    service_name: String,
    interval: Duration,
    timeout: Option<Duration>,
}

impl OtelBuilder {
    /// The collector's base URL (`http://host:4318`): spans go to `/v1/traces`, metrics
    /// to `/v1/metrics` under it.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }
    /// The resource's `service.name` (default `mcp-server`).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }
    /// How often the metrics are sent (default 60 s).
    pub fn metrics_interval(mut self, every: Duration) -> Self {
        self.interval = every;
        self
    }
    /// How long one export may take (default: the exporter's, 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Builds both exporters and providers.
    pub fn build(self) -> Result<Otel, OtelError> {
        let resource = opentelemetry_sdk::Resource::builder().with_service_name(self.service_name).build();
        let url =
            |path: &str| self.endpoint.as_ref().map(|base| format!("{}{path}", base.trim_end_matches('/')));
        let mut spans = opentelemetry_otlp::SpanExporter::builder().with_http();
        if let Some(url) = url("/v1/traces") {
            spans = spans.with_endpoint(url);
        }
        if let Some(timeout) = self.timeout {
            spans = spans.with_timeout(timeout);
        }
        let spans = spans.build().map_err(OtelError::Build)?;
        let mut metrics = opentelemetry_otlp::MetricExporter::builder().with_http();
        if let Some(url) = url("/v1/metrics") {
            metrics = metrics.with_endpoint(url);
        }
        if let Some(timeout) = self.timeout {
            metrics = metrics.with_timeout(timeout);
        }
        let metrics = metrics.build().map_err(OtelError::Build)?;
        let tracer =
            SdkTracerProvider::builder().with_batch_exporter(spans).with_resource(resource.clone()).build();
        let reader = PeriodicReader::builder(metrics).with_interval(self.interval).build();
        let meter = SdkMeterProvider::builder().with_reader(reader).with_resource(resource).build();
        Ok(Otel { tracer, meter })
    }
}

impl Otel {
    /// Settings: endpoint from the environment, `service.name` `mcp-server`, metrics every
    /// 60 s.
    pub fn builder() -> OtelBuilder {
        OtelBuilder {
            endpoint: None,
            service_name: "mcp-server".into(),
            interval: Duration::from_secs(60),
            timeout: None,
        }
    }

    /// The `tracing` layer that turns the request spans (and every other span) into
    /// OpenTelemetry spans of this exporter. It adds none of `tracing-opentelemetry`'s
    /// own attributes (source location, thread, target, busy and idle times): a span
    /// carries the conventions' attributes and its own fields only.
    pub fn layer<S>(&self) -> OpenTelemetryLayer<S, SdkTracer>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer(SCOPE))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
    }

    /// A meter of this exporter (scope [`SCOPE`]).
    pub fn meter(&self) -> Meter {
        self.meter.meter(SCOPE)
    }

    /// The tracer provider (to flush it, or to make other tracers).
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.tracer
    }

    /// The meter provider.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.meter
    }

    /// Sends what is left and stops both providers (blocks until the exports are done
    /// or time out).
    pub fn shutdown(self) -> Result<(), OtelError> {
        let spans = self.tracer.shutdown();
        let metrics = self.meter.shutdown();
        spans.and(metrics).map_err(OtelError::Shutdown)
    }
}
