//! W3C Trace Context (`traceparent`, `tracestate`) and W3C Baggage (`baggage`) values, as
//! a client sends them in `params._meta`: checked against their grammars, without
//! allocation. A value that fails is ignored (treated as absent), never an error: the
//! request is served as if it carried none.
//!
//! - `traceparent` (Trace Context Level 1, with the forward-compatible rules of Levels
//!   2/3): `version-trace_id-parent_id-flags`, lowercase hex only; version `ff` is
//!   invalid; version `00` is exactly 55 characters; a higher version is at least 55, its
//!   flags followed by the end or by `-` (what follows is not read), and only the flag
//!   bits known to version `00`'s successors (sampled, random) are kept. An all-zero
//!   trace id or parent id is invalid.
//! - `tracestate`: at most 32 list-members (empty ones included), each `key=value` or
//!   empty, separated by `,` with optional spaces and tabs; keys `(lcalpha / DIGIT)
//!   0*255(lcalpha / DIGIT / "_" / "-" / "*" / "/" / "@")`, values of 1 to 256 printable
//!   characters without `,` or `=` and not ending in a space; no key twice. Kept only
//!   beside a valid `traceparent`; copied without whitespace or empty members.
//! - `baggage`: `key OWS "=" OWS value *( OWS ";" OWS property )` list-members (keys
//!   RFC 7230 tokens, values `baggage-octet`s), at most 180 of them and 8,192 bytes in all
//!   (past that the whole value is dropped, which the W3C limits allow: only whole
//!   members may be dropped). Independent of `traceparent`.
//!
//! May use: nothing (a leaf codec).

use core::fmt;

/// Bytes of a version-`00` `traceparent`.
pub(crate) const TRACEPARENT_LEN: usize = 55;
/// List-members a `tracestate` may hold (empty ones included).
pub(crate) const MAX_TRACESTATE_MEMBERS: usize = 32;
/// The longest `tracestate` kept: 32 members of a 256-byte key, `=` and a 256-byte value,
/// and the commas between them (the copy carries no whitespace and no empty member).
pub(crate) const MAX_TRACESTATE_LEN: usize =
    MAX_TRACESTATE_MEMBERS * (256 + 1 + 256) + MAX_TRACESTATE_MEMBERS - 1;
/// The longest `baggage` kept, in bytes.
pub(crate) const MAX_BAGGAGE_LEN: usize = 8192;
/// List-members a `baggage` may hold.
pub(crate) const MAX_BAGGAGE_MEMBERS: usize = 180;

/// A 16-byte trace id, never all zeros. `Display` writes 32 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub(crate) [u8; 16]);

/// An 8-byte span id (a `traceparent`'s parent id), never all zeros. `Display` writes 16
/// lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub(crate) [u8; 8]);

impl TraceId {
    /// The id's bytes.
    pub fn to_bytes(self) -> [u8; 16] {
        self.0
    }
}

impl SpanId {
    /// The id's bytes.
    pub fn to_bytes(self) -> [u8; 8] {
        self.0
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        let pair = [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]];
        f.write_str(core::str::from_utf8(&pair).map_err(|_| fmt::Error)?)?;
    }
    Ok(())
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceId({self})")
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SpanId({self})")
    }
}

/// A valid `traceparent`: the caller's trace id, its span (the parent of the server's),
/// and the trace flags.
///
/// `Display` writes it as version `00` (`00-<trace id>-<parent id>-<flags>`), the
/// highest version known, as a receiver re-emits a higher one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    version: u8,
    trace_id: TraceId,
    parent_id: SpanId,
    flags: u8,
}

/// The `sampled` trace flag.
const SAMPLED: u8 = 0x01;
/// The `random-trace-id` trace flag (Level 2).
const RANDOM: u8 = 0x02;

impl TraceParent {
    /// Reads a `traceparent` value; `None` when it breaks the grammar.
    pub fn parse(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() < TRACEPARENT_LEN {
            return None;
        }
        let version = hex_byte(b[0], b[1])?;
        if version == 0xff || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        if version == 0 {
            if b.len() != TRACEPARENT_LEN {
                return None;
            }
        } else if b.len() > TRACEPARENT_LEN && b[TRACEPARENT_LEN] != b'-' {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, byte) in trace_id.iter_mut().enumerate() {
            *byte = hex_byte(b[3 + 2 * i], b[4 + 2 * i])?;
        }
        let mut parent_id = [0u8; 8];
        for (i, byte) in parent_id.iter_mut().enumerate() {
            *byte = hex_byte(b[36 + 2 * i], b[37 + 2 * i])?;
        }
        let mut flags = hex_byte(b[53], b[54])?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        if version > 0 {
            // Only the flags this version knows of are read from a later version.
            flags &= SAMPLED | RANDOM;
        }
        Some(Self { version, trace_id: TraceId(trace_id), parent_id: SpanId(parent_id), flags })
    }

    /// The version the client sent (`0` for `00`; a higher one was read by the
    /// forward-compatible rules).
    pub fn version(&self) -> u8 {
        self.version
    }
    /// The trace id.
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }
    /// The client's span: the parent of the server's.
    pub fn parent_id(&self) -> SpanId {
        self.parent_id
    }
    /// The trace flags as sent (for a version above `00`, the known bits only). Test bits,
    /// never the whole byte.
    pub fn flags(&self) -> u8 {
        self.flags
    }
    /// The `sampled` flag: the caller may have recorded this trace.
    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }
    /// The `random-trace-id` flag (Trace Context Level 2).
    pub fn random_trace_id(&self) -> bool {
        self.flags & RANDOM != 0
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-", self.trace_id, self.parent_id)?;
        write_hex(f, &[self.flags])
    }
}

/// The value of two lowercase hex digits.
fn hex_byte(hi: u8, lo: u8) -> Option<u8> {
    Some(hex_digit(hi)? << 4 | hex_digit(lo)?)
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Optional whitespace (`OWS`: spaces and horizontal tabs).
fn trim_ows(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

/// Copies a valid `tracestate` into `out` (cleared first) without whitespace or empty
/// members; returns whether it was valid (`out` is left empty when not). `out` never
/// grows past [`MAX_TRACESTATE_LEN`].
pub(crate) fn copy_tracestate(s: &str, out: &mut String) -> bool {
    out.clear();
    let mut members = 0;
    for member in s.split(',') {
        members += 1;
        if members > MAX_TRACESTATE_MEMBERS {
            out.clear();
            return false;
        }
        let member = trim_ows(member);
        if member.is_empty() {
            continue;
        }
        let Some((key, value)) = member.split_once('=') else {
            out.clear();
            return false;
        };
        if !tracestate_key(key) || !tracestate_value(value) || has_key(out, key) {
            out.clear();
            return false;
        }
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(member);
    }
    true
}

/// Whether the list `out` (members joined by `,`) already has `key`.
fn has_key(out: &str, key: &str) -> bool {
    !out.is_empty() && out.split(',').any(|m| m.split_once('=').is_some_and(|(k, _)| k == key))
}

/// `(lcalpha / DIGIT) 0*255(lcalpha / DIGIT / "_" / "-" / "*" / "/" / "@")`: the Level 2
/// key, which holds every Level 1 key (simple and multi-tenant).
fn tracestate_key(k: &str) -> bool {
    let b = k.as_bytes();
    let Some((first, rest)) = b.split_first() else { return false };
    (first.is_ascii_lowercase() || first.is_ascii_digit())
        && rest.len() <= 255
        && rest.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-*/@".contains(&c))
}

/// `0*255(chr) nblk-chr`, `chr = %x20 / nblk-chr`, `nblk-chr = %x21-2B / %x2D-3C / %x3E-7E`.
fn tracestate_value(v: &str) -> bool {
    let b = v.as_bytes();
    let nblk = |c: u8| matches!(c, 0x21..=0x2b | 0x2d..=0x3c | 0x3e..=0x7e);
    matches!(b.last(), Some(&c) if nblk(c)) && b.len() <= 256 && b.iter().all(|&c| c == b' ' || nblk(c))
}

/// Whether `s` is a valid `baggage` within the size bounds.
pub(crate) fn valid_baggage(s: &str) -> bool {
    if s.len() > MAX_BAGGAGE_LEN {
        return false;
    }
    let mut members = 0;
    for member in s.split(',') {
        members += 1;
        if members > MAX_BAGGAGE_MEMBERS {
            return false;
        }
        let mut parts = member.split(';');
        // `key OWS "=" OWS value`.
        let Some((key, value)) = parts.next().and_then(|kv| kv.split_once('=')) else { return false };
        if !token(trim_ows(key)) || !baggage_value(trim_ows(value)) {
            return false;
        }
        // `property = key OWS "=" OWS value / key OWS`.
        for property in parts {
            let ok = match property.split_once('=') {
                Some((k, v)) => token(trim_ows(k)) && baggage_value(trim_ows(v)),
                None => token(trim_ows(property)),
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

/// An RFC 7230 `token`: one or more `tchar`.
fn token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
}

/// `*baggage-octet`: `%x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E`.
fn baggage_value(s: &str) -> bool {
    s.bytes().all(|c| matches!(c, 0x21 | 0x23..=0x2b | 0x2d..=0x3a | 0x3c..=0x5b | 0x5d..=0x7e))
}

/// The trace context a request carried in `params._meta`: a valid `traceparent`, the
/// `tracestate` beside it, and `baggage` (each absent when the client sent none or an
/// invalid one). It borrows the engine's buffers, like the event that carries it.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceContext<'a> {
    pub(crate) parent: Option<TraceParent>,
    pub(crate) tracestate: Option<&'a str>,
    pub(crate) baggage: Option<&'a str>,
}

impl<'a> TraceContext<'a> {
    /// A context of these parts, as the engine would hand it out (for tests and hosts
    /// that read trace context elsewhere): `tracestate` is dropped without a parent.
    pub fn new(parent: Option<TraceParent>, tracestate: Option<&'a str>, baggage: Option<&'a str>) -> Self {
        Self { parent, tracestate: tracestate.filter(|_| parent.is_some()), baggage }
    }
    /// The valid `traceparent`, if the request carried one.
    pub fn parent(&self) -> Option<TraceParent> {
        self.parent
    }
    /// The trace id of the `traceparent`.
    pub fn trace_id(&self) -> Option<TraceId> {
        self.parent.map(|p| p.trace_id)
    }
    /// The parent id of the `traceparent`: the client's span.
    pub fn parent_id(&self) -> Option<SpanId> {
        self.parent.map(|p| p.parent_id)
    }
    /// The trace flags of the `traceparent`.
    pub fn flags(&self) -> Option<u8> {
        self.parent.map(|p| p.flags)
    }
    /// Whether the `traceparent` says the caller sampled this trace (`false` without one).
    pub fn sampled(&self) -> bool {
        self.parent.is_some_and(|p| p.sampled())
    }
    /// The `tracestate` that came with a valid `traceparent` (members joined by `,`,
    /// without whitespace or empty members).
    pub fn tracestate(&self) -> Option<&'a str> {
        self.tracestate
    }
    /// The valid `baggage`, as sent. Application data, possibly about users: keep it out
    /// of logs and span attributes unless you mean to.
    pub fn baggage(&self) -> Option<&'a str> {
        self.baggage
    }
    /// Whether the request carried none of the three (valid).
    pub fn is_empty(&self) -> bool {
        self.parent.is_none() && self.baggage.is_none()
    }
}

impl fmt::Debug for TraceContext<'_> {
    /// The `traceparent`, and only the lengths of `tracestate` and `baggage`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceContext")
            .field("parent", &self.parent)
            .field("tracestate_len", &self.tracestate.map(str::len))
            .field("baggage_len", &self.baggage.map(str::len))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn ts(s: &str) -> Option<String> {
        let mut out = String::with_capacity(MAX_TRACESTATE_LEN);
        copy_tracestate(s, &mut out).then_some(out)
    }

    #[test]
    fn a_valid_traceparent_is_read() {
        let p = TraceParent::parse(VALID).unwrap();
        assert_eq!(p.version(), 0);
        assert_eq!(p.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.parent_id().to_string(), "00f067aa0ba902b7");
        assert_eq!(p.trace_id().to_bytes()[0], 0x4b);
        assert_eq!(p.parent_id().to_bytes()[7], 0xb7);
        assert_eq!(p.flags(), 1);
        assert!(p.sampled() && !p.random_trace_id());
        assert_eq!(p.to_string(), VALID);
        let q = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
        assert!(!q.sampled());
        // Unknown flag bits of version 00 are kept as sent; bits are tested one by one.
        let r = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff").unwrap();
        assert_eq!(r.flags(), 0xff);
        assert!(r.sampled() && r.random_trace_id());
    }

    #[test]
    fn every_invalid_traceparent_is_refused() {
        let bad = [
            "",
            "00",
            // uppercase hex, anywhere
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
            "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // all-zero ids
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            // version ff
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // trailing data on version 00
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-010",
            // short
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            // misplaced or missing dashes
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
            "004bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            // non-hex
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bx-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            // whitespace is not trimmed
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
            // a later version: more than 55 characters must go on with a dash
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            // a later version still needs valid ids
            "01-00000000000000000000000000000000-00f067aa0ba902b7-01",
            // multi-byte characters where hex is expected
            "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
        ];
        for s in bad {
            assert_eq!(TraceParent::parse(s), None, "{s:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_forward_compatibly() {
        let p = TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03").unwrap();
        assert_eq!((p.version(), p.flags()), (1, 3));
        // Trailing fields after a dash are not read; unknown flag bits are dropped.
        let q =
            TraceParent::parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff-what-ever").unwrap();
        assert_eq!((q.version(), q.flags()), (0xcc, 3));
        // Re-emitted as version 00.
        assert_eq!(q.to_string(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03");
    }

    #[test]
    fn a_valid_tracestate_is_copied_without_whitespace() {
        assert_eq!(
            ts("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE").as_deref(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
        assert_eq!(ts(" rojo=1 ,\t, congo=2 ").as_deref(), Some("rojo=1,congo=2"));
        // Empty is valid (and stays empty).
        assert_eq!(ts("").as_deref(), Some(""));
        assert_eq!(ts(" , ").as_deref(), Some(""));
        // Multi-tenant and Level 2 keys; values with spaces inside and `=`-free printables.
        assert!(ts("fw529a3039@dt=abc,0tenant@sys=x y,a_b-c*d/e=~!").is_some());
        // 32 members are fine; longest key and value are fine.
        let many: Vec<String> = (0..32).map(|i| format!("k{i}=v")).collect();
        assert!(ts(&many.join(",")).is_some());
        let key = format!("a{}", "b".repeat(255));
        let value = "v".repeat(256);
        assert!(ts(&format!("{key}={value}")).is_some());
    }

    #[test]
    fn every_invalid_tracestate_is_refused() {
        let many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        let empties = format!("a=1{}", ",".repeat(32));
        let long_key = format!("a{}=v", "b".repeat(256));
        let long_value = format!("a={}", "v".repeat(257));
        let bad = [
            many.join(","),
            empties,
            long_key,
            long_value,
            "Rojo=1".into(),  // uppercase key
            "_a=1".into(),    // key starts with a symbol
            "a b=1".into(),   // space in key
            "a=".into(),      // empty value
            "a=x,a=y".into(), // repeated key
            "a=b=c".into(),   // `=` in value
            "noequals".into(),
            "a=\u{7f}".into(), // DEL
            "a=é".into(),
        ];
        for s in &bad {
            assert_eq!(ts(s), None, "{s:?}");
        }
        // Spaces around a member are OWS, not part of its value; inside a value they are.
        assert_eq!(ts("a=1 ").as_deref(), Some("a=1"));
        assert_eq!(ts("a=x y").as_deref(), Some("a=x y"));
    }

    #[test]
    fn copying_a_tracestate_never_grows_its_buffer() {
        let mut out = String::with_capacity(MAX_TRACESTATE_LEN);
        let cap = out.capacity();
        let key = format!("a{}", "b".repeat(255));
        let members: Vec<String> =
            (0..32).map(|i| format!("{}{i:02}={}", &key[..254], "v".repeat(256))).collect();
        let longest = members.join(" , ");
        assert!(copy_tracestate(&longest, &mut out));
        assert_eq!(out.capacity(), cap);
        assert!(out.len() <= MAX_TRACESTATE_LEN);
    }

    #[test]
    fn valid_baggage_is_kept() {
        for s in [
            "userId=alice,serverNode=DF%2028,isProduction=false",
            "key1=value1;property1;property2, key2 = value2, key3=value3; propertyKey=propertyValue",
            "k=",
            "k=v=w",
        ] {
            assert!(valid_baggage(s), "{s:?}");
        }
        let many: Vec<String> = (0..180).map(|i| format!("k{i}=v")).collect();
        assert!(valid_baggage(&many.join(",")));
        let big = format!("k={}", "v".repeat(MAX_BAGGAGE_LEN - 2));
        assert!(valid_baggage(&big));
    }

    #[test]
    fn invalid_baggage_is_refused() {
        let many: Vec<String> = (0..181).map(|i| format!("k{i}=v")).collect();
        let big = format!("k={}", "v".repeat(MAX_BAGGAGE_LEN - 1));
        for s in [
            many.join(","),
            big,
            String::new(),
            "k".into(),
            "=v".into(),
            "k=v,".into(),
            "k=a b".into(),
            "k=\"v\"".into(),
            "k=v\\".into(),
            "k=é".into(),
            "k y=v".into(),
            "k=v;".into(),
            "k=v;=x".into(),
            "(k)=v".into(),
        ] {
            assert!(!valid_baggage(&s), "{s:?}");
        }
    }

    #[test]
    fn a_context_drops_tracestate_without_a_parent() {
        let p = TraceParent::parse(VALID);
        let c = TraceContext::new(p, Some("a=1"), Some("k=v"));
        assert_eq!(c.trace_id().map(|t| t.to_string()).as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        assert_eq!(c.parent_id().map(|s| s.to_string()).as_deref(), Some("00f067aa0ba902b7"));
        assert_eq!(
            (c.flags(), c.sampled(), c.tracestate(), c.baggage()),
            (Some(1), true, Some("a=1"), Some("k=v"))
        );
        let orphan = TraceContext::new(None, Some("a=1"), Some("k=v"));
        assert_eq!((orphan.tracestate(), orphan.baggage(), orphan.is_empty()), (None, Some("k=v"), false));
        assert!(TraceContext::default().is_empty());
        let debug = format!("{c:?}");
        assert!(!debug.contains("k=v") && debug.contains("baggage_len: Some(3)"), "{debug}");
    }
}
