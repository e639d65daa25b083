//! http_headers: the MCP header matcher.

use core::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcp_engine::HeaderParamKind;
use mcp_engine::internal::{
    BodyValue, Expected, MAX_DECODED_LEN, MismatchReason, ParamCheck, check_headers, decode_header_value,
};

use crate::common::MAX_HTTP_INPUT;

/// A body value, owned.
#[derive(Debug, Clone)]
enum OwnedValue {
    Absent,
    Null,
    Str(String),
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Other,
}

impl OwnedValue {
    /// The first byte is the JSON type, the rest its value (as text, else as raw bytes).
    fn from_field(field: &[u8]) -> Self {
        let (tag, rest) = field.split_first().map_or((0, &[][..]), |(&t, r)| (t, r));
        let text = String::from_utf8_lossy(rest);
        let mut le = [0u8; 8];
        for (d, s) in le.iter_mut().zip(rest) {
            *d = *s;
        }
        match tag % 8 {
            0 => Self::Absent,
            1 => Self::Null,
            2 => Self::Str(text.into_owned()),
            3 => Self::I64(text.parse().unwrap_or_else(|_| i64::from_le_bytes(le))),
            // A number that fits a u64 and not an i64.
            4 => Self::U64(text.parse().unwrap_or_else(|_| u64::from_le_bytes(le)) | 1 << 63),
            // JSON has no NaN nor infinity.
            5 => Self::F64(
                text.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .or_else(|| Some(f64::from_le_bytes(le)).filter(|x| x.is_finite()))
                    .unwrap_or(0.5),
            ),
            6 => Self::Bool(rest.first().is_some_and(|b| b & 1 == 1)),
            _ => Self::Other,
        }
    }

    fn borrow(&self) -> BodyValue<'_> {
        match self {
            Self::Absent => BodyValue::Absent,
            Self::Null => BodyValue::Null,
            Self::Str(s) => BodyValue::Str(s),
            Self::I64(n) => BodyValue::I64(*n),
            Self::U64(n) => BodyValue::U64(*n),
            Self::F64(x) => BodyValue::F64(*x),
            Self::Bool(b) => BodyValue::Bool(*b),
            Self::Other => BodyValue::Other,
        }
    }
}

/// Strips SP / HTAB from both ends.
fn trim_ows(raw: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = raw.iter().position(|b| !is_ows(b)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    &raw[start..end]
}

fn sentinel_payload(value: &[u8]) -> Option<&[u8]> {
    value.strip_prefix(b"=?base64?")?.strip_suffix(b"?=")
}

fn sentinel(s: &[u8]) -> Vec<u8> {
    format!("=?base64?{}?=", STANDARD.encode(s)).into_bytes()
}

/// A value the matcher takes literally as `s`.
fn literal_for(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let ok = b.iter().all(|&c| matches!(c, b'\t' | b' '..=b'~')) && trim_ows(b) == b;
    ok.then(|| b.to_vec())
}

/// The `Mcp-Name` / `Mcp-Param-*` value a conforming client sends for string `s`.
fn mirror_str(s: &str, force_sentinel: bool) -> Option<Vec<u8>> {
    match literal_for(s) {
        Some(v) if !force_sentinel && sentinel_payload(&v).is_none() => Some(v),
        _ if s.len() <= MAX_DECODED_LEN => Some(sentinel(s.as_bytes())),
        _ => None,
    }
}

/// The `Mcp-Param-*` header a conforming client sends: `Ok(None)` for no header,
/// `Err(())` when the body value has no header spelling (wrong type, fraction).
fn mirror_param(
    kind: HeaderParamKind,
    value: &OwnedValue,
    force_sentinel: bool,
) -> Result<Option<Vec<u8>>, ()> {
    let text =
        match (kind, value) {
            (_, OwnedValue::Absent | OwnedValue::Null) => return Ok(None),
            (HeaderParamKind::String, OwnedValue::Str(s)) => {
                return mirror_str(s, force_sentinel).map(Some).ok_or(());
            }
            (HeaderParamKind::Integer, OwnedValue::I64(n)) => n.to_string(),
            (HeaderParamKind::Integer, OwnedValue::U64(n)) => n.to_string(),
            (HeaderParamKind::Integer, OwnedValue::F64(x)) if x.trunc() == *x => {
                if x.abs() < i128::MAX as f64 { (*x as i128).to_string() } else { format!("{x:e}") }
            }
            (HeaderParamKind::Boolean, OwnedValue::Bool(b)) => b.to_string(),
            _ => return Err(()),
        };
    Ok(Some(if force_sentinel { sentinel(text.as_bytes()) } else { text.into_bytes() }))
}

/// A token (what the catalog accepts as an `x-mcp-header` name) from fuzz bytes.
fn token(field: &[u8], taken: &[String]) -> String {
    const TCHARS: &[u8] = b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut t: String =
        field.iter().take(32).map(|&b| char::from(TCHARS[usize::from(b) % TCHARS.len()])).collect();
    if t.is_empty() {
        t.push('P');
    }
    // Names are unique, case-insensitively, within a tool.
    while taken.iter().any(|o| o.eq_ignore_ascii_case(&t)) {
        t.push('x');
    }
    t
}

/// The header matcher (`wire::headers::check`, `decode_value`).
///
/// Input: a separator byte, two flag bytes, then fields split on the separator: protocol
/// version, method, name, two fields per parameter (header name, typed value), then
/// request headers as name/value field pairs. Flags: whether there is a name; how many
/// string, integer and boolean parameters (0-3 each); whether the conforming headers are
/// sent first (then, with no other header, `check` must pass); whether they use the
/// base64 sentinel; the `decode_value` scratch size; whitespace around the round-trip
/// value.
///
/// Asserts: no panic; a mismatch is missing exactly when it has no header value, and
/// renders as one printable line under 2 KiB; `decode_value` returns literals unchanged,
/// decodes only canonical base64 (re-encoding gives the payload back), and is exact about
/// the space it needs; for any string `s`, `=?base64?{base64(s)}?=` decodes to `s`.
pub fn http_headers(data: &[u8]) {
    let [sep, flags, flags2, rest @ ..] = data else { return };
    if rest.len() > MAX_HTTP_INPUT {
        return;
    }
    let fields: Vec<&[u8]> = rest.split(|b| b == sep).collect();
    let mut it = fields.iter();
    let mut next = || it.next().copied().unwrap_or(b"");
    let version = String::from_utf8_lossy(next()).into_owned();
    let method = String::from_utf8_lossy(next()).into_owned();
    let name = String::from_utf8_lossy(next()).into_owned();
    let kinds = [HeaderParamKind::String, HeaderParamKind::Integer, HeaderParamKind::Boolean];
    let mut names: Vec<String> = Vec::new();
    let mut values: Vec<(HeaderParamKind, OwnedValue)> = Vec::new();
    for (i, kind) in kinds.into_iter().enumerate() {
        for _ in 0..(flags >> (1 + 2 * i)) & 3 {
            names.push(token(next(), &names));
            values.push((kind, OwnedValue::from_field(next())));
        }
    }
    let params: Vec<ParamCheck<'_>> = names
        .iter()
        .zip(&values)
        .map(|(header, (kind, value))| ParamCheck { header, kind: *kind, value: value.borrow() })
        .collect();
    let expected = Expected {
        protocol_version: &version,
        method: &method,
        name: (flags & 1 != 0).then_some(name.as_str()),
        params: &params,
    };

    // The headers a conforming client sends, if asked for.
    let mirror = flags & 0x80 != 0;
    let force_sentinel = flags2 & 1 != 0;
    let mut raw: Vec<(String, Vec<u8>)> = Vec::new();
    let mut conforming = true;
    if mirror {
        let mut push = |n: String, v: Option<Vec<u8>>| match v {
            Some(v) => raw.push((n, v)),
            None => conforming = false,
        };
        push("MCP-Protocol-Version".into(), literal_for(&version));
        push("mcp-method".into(), literal_for(&method));
        if let Some(name) = expected.name {
            push("Mcp-Name".into(), mirror_str(name, force_sentinel));
        }
        for (header, (kind, value)) in names.iter().zip(&values) {
            match mirror_param(*kind, value, force_sentinel) {
                Ok(Some(v)) => raw.push((format!("Mcp-Param-{header}"), v)),
                Ok(None) => {}
                Err(()) => conforming = false,
            }
        }
    }
    let mirrored = raw.len();
    for pair in it.as_slice().chunks(2) {
        let value = pair.get(1).copied().unwrap_or(b"");
        raw.push((String::from_utf8_lossy(pair[0]).into_owned(), value.to_vec()));
    }
    let headers: Vec<httparse::Header<'_>> =
        raw.iter().map(|(name, value)| httparse::Header { name, value }).collect();

    let outcome = check_headers(&headers, &expected);
    if mirror && conforming && headers.len() == mirrored {
        assert_eq!(outcome, Ok(()), "the headers of a conforming client were refused: {raw:?}");
    }
    if let Err(m) = outcome {
        assert_eq!(m.header_value.is_none(), m.reason == MismatchReason::Missing, "{m:?}");
        let mut msg = String::new();
        write!(msg, "{m}").unwrap_or_else(|_| unreachable!("writing to a String cannot fail"));
        assert!(msg.len() < 2048, "a {}-byte mismatch message: {msg}", msg.len());
        assert!(msg.starts_with("Header mismatch: "), "{msg}");
        assert!(!msg.chars().any(char::is_control), "a control character in {msg:?}");
    }

    // decode_value on every header value, with a small scratch and a full one.
    let sizes = [0, 1, 3, 16, 64, MAX_DECODED_LEN];
    let mut small = vec![0u8; sizes[usize::from(flags2 >> 1) % sizes.len()]];
    let cap = small.len();
    let mut full = vec![0u8; MAX_DECODED_LEN];
    for (_, value) in &raw {
        let a = decode_header_value(value, &mut small).map(str::to_owned);
        let b = decode_header_value(value, &mut full);
        let trimmed = trim_ows(value);
        match sentinel_payload(trimmed) {
            None => {
                assert_eq!(a.as_deref().map_err(|e| *e), b);
                if let Ok(s) = b {
                    assert_eq!(s.as_bytes(), trimmed);
                }
            }
            Some(payload) => {
                if let Ok(s) = b {
                    assert_eq!(STANDARD.encode(s).as_bytes(), payload, "a non-canonical payload decoded");
                }
                match (&a, b) {
                    (Ok(x), Ok(y)) => assert_eq!(x, y),
                    (Err(MismatchReason::TooLong), Ok(y)) => assert!(y.len() > cap, "{y:?} fits {cap} bytes"),
                    (Ok(x), Err(e)) => panic!("{x:?} with {cap} bytes, {e:?} with more"),
                    (Err(MismatchReason::TooLong), Err(_)) => {}
                    (Err(e), Ok(y)) => panic!("{e:?} with {cap} bytes, {y:?} with more"),
                    (Err(e), Err(f)) => assert_eq!(*e, f),
                }
            }
        }
    }

    // Round trip: any string, sentinel-encoded, decodes back, needing exactly its length.
    let pad: [&[u8]; 4] = [b"", b" ", b"\t", b" \t "];
    let (before, after) = (pad[usize::from(flags2 >> 4) & 3], pad[usize::from(flags2 >> 6)]);
    let encoded = [before, &sentinel(name.as_bytes()), after].concat();
    if name.len() <= MAX_DECODED_LEN {
        assert_eq!(decode_header_value(&encoded, &mut full), Ok(name.as_str()));
    }
    let mut exact = vec![0u8; name.len()];
    assert_eq!(decode_header_value(&encoded, &mut exact), Ok(name.as_str()));
    if let Some(short) = name.len().checked_sub(1) {
        let mut short = vec![0u8; short];
        assert_eq!(decode_header_value(&encoded, &mut short), Err(MismatchReason::TooLong));
    }
}
