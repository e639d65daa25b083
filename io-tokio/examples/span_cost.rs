//! The per-request cost of the request spans (`docs/performance.md`, "Spans and
//! metrics"): serves N requests over an in-memory stdio pipe on a current-thread runtime,
//! one at a time, and prints the heap allocations per request of the steady-state loop;
//! run it under callgrind at two N for the instructions per request.
//!
//! ```text
//! span_cost MODE KIND N
//!   MODE: none  (no subscriber: spans disabled)
//!         fmt   (tracing-subscriber's fmt layer at INFO, written to nowhere)
//!         otel  (tracing-opentelemetry over an SDK tracer whose exporter drops the spans,
//!                and the duration histograms on an SDK meter)
//!   KIND: call  (a host-served tools/call with a traceparent)
//!         list  (an engine-answered tools/list with a traceparent)
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use mcp_engine::{Catalog, Config, Engine, Tool};
use mcp_io_tokio::ToolReply;
use mcp_io_tokio::handler::tool_fn;
use mcp_io_tokio::stdio::serve_with;
use mcp_io_tokio::telemetry::Telemetry;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tracing_subscriber::layer::SubscriberExt as _;

/// Requests before the measured loop (buffers, pools, workers and the SDK's series warm).
const WARM_UP: u64 = 50;

/// An exporter that drops what it is given: the spans' cost up to the export, not a
/// collector's.
#[derive(Debug)]
struct Discard;

impl SpanExporter for Discard {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        drop(batch);
        Ok(())
    }
}

fn request(kind: &str) -> String {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#;
    let params = match kind {
        "call" => format!(r#""name":"static","arguments":{{}},{meta}"#),
        _ => meta.to_owned(),
    };
    let method = if kind == "call" { "tools/call" } else { "tools/list" };
    format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{method}\",\"params\":{{{params}}}}}\n")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(kind), Some(Ok(n))) =
        (args.first(), args.get(1), args.get(2).map(|n| n.parse::<u64>()))
    else {
        eprintln!("usage: span_cost none|fmt|otel call|list N");
        return ExitCode::from(2);
    };
    let tracer = SdkTracerProvider::builder().with_simple_exporter(Discard).build();
    let meter = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(InMemoryMetricExporter::default()).build())
        .build();
    let mut telemetry = Telemetry::new();
    let _guard = match mode.as_str() {
        "none" => None,
        "fmt" => {
            let fmt = tracing_subscriber::fmt().with_writer(std::io::sink).finish();
            Some(tracing::subscriber::set_default(fmt))
        }
        "otel" => {
            telemetry = telemetry.meter(&meter.meter("span_cost"));
            let layer = tracing_opentelemetry::layer().with_tracer(tracer.tracer("span_cost"));
            Some(tracing::subscriber::set_default(tracing_subscriber::registry().with(layer)))
        }
        other => {
            eprintln!("unknown mode {other:?}");
            return ExitCode::from(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let request = request(kind);
    let catalog = Catalog::builder().tool(Tool::new("static")).build().expect("a catalog");
    let engine = Engine::new(Config::new("span_cost", "1"), catalog);
    let handler = Arc::new(tool_fn(|_call| async { Ok(ToolReply::text("ok")) }));
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(server);
    let served = rt.spawn(serve_with(engine, handler, r, w, telemetry));
    let (mut client_r, mut client_w) = tokio::io::split(client);
    let mut buf = vec![0u8; 64 * 1024];
    let mut rounds = |count: u64| {
        rt.block_on(async {
            for _ in 0..count {
                client_w.write_all(request.as_bytes()).await.expect("write");
                let mut len = 0;
                while !buf[..len].contains(&b'\n') {
                    let got = client_r.read(&mut buf[len..]).await.expect("read");
                    assert!(got > 0, "the server closed its output");
                    len += got;
                }
            }
        });
    };
    rounds(WARM_UP);
    let base = allocation_counter::measure(|| rounds(0)).count_total;
    let allocations = allocation_counter::measure(|| rounds(n)).count_total.saturating_sub(base);
    rt.block_on(async {
        client_w.shutdown().await.expect("shutdown");
        let _ = served.await;
    });
    println!(
        "{mode} {kind} x{n}: {allocations} allocations, {:.2} per request",
        allocations as f64 / n.max(1) as f64
    );
    ExitCode::SUCCESS
}
