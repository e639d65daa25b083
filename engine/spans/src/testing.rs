//! Feature `testing`: a `tracing` layer that keeps every span's name and fields (as
//! created and as recorded later), whether it closed, and every event's fields, for the
//! adapters' span tests (`io-tokio/tests/spans.rs`, `io-mio/tests/spans.rs`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

/// A valid, sampled `traceparent` for the tests' requests.
pub const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The plain fields a span records of [`PARENT`] when no OpenTelemetry layer took it.
pub const PARENT_FIELDS: [(&str, &str); 3] = [
    ("parent.trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"),
    ("parent.span_id", "00f067aa0ba902b7"),
    ("parent.sampled", "true"),
];

/// One span as the layer saw it.
#[derive(Debug, Clone, Default)]
pub struct SpanRecord {
    /// Its `tracing` name.
    pub name: String,
    /// Its fields, as text (`Debug` for values that are not strings).
    pub fields: BTreeMap<String, String>,
    /// It closed.
    pub closed: bool,
}

impl SpanRecord {
    /// The field `name`'s value.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// Every span and event seen, shared with the test (a `Layer`).
#[derive(Clone, Default)]
pub struct Captured {
    spans: Arc<Mutex<Vec<SpanRecord>>>,
    events: Arc<Mutex<Vec<String>>>,
}

impl Captured {
    /// The spans named `name`, in the order they were made.
    pub fn named(&self, name: &str) -> Vec<SpanRecord> {
        let spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        spans.iter().filter(|s| s.name == name).cloned().collect()
    }
    /// Every span.
    pub fn all(&self) -> Vec<SpanRecord> {
        self.spans.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
    /// Everything recorded, as text: every span's name and fields, and every event's.
    pub fn everything(&self) -> String {
        let spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        let events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        format!("{spans:?}\n{events:?}")
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// The index of a span's record, kept in the span's extensions.
struct At(usize);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Captured {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut record = SpanRecord { name: attrs.metadata().name().to_owned(), ..SpanRecord::default() };
        attrs.record(&mut Fields(&mut record.fields));
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        spans.push(record);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(At(spans.len() - 1));
        }
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let Some(&At(i)) = span.extensions().get::<At>() else { return };
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        values.record(&mut Fields(&mut spans[i].fields));
    }
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(&At(i)) = span.extensions().get::<At>() else { return };
        self.spans.lock().unwrap_or_else(PoisonError::into_inner)[i].closed = true;
    }
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap_or_else(PoisonError::into_inner).push(format!("{fields:?}"));
    }
}

/// Installs a capturing subscriber for this thread, until the guard drops.
pub fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    (captured, tracing::subscriber::set_default(subscriber))
}
