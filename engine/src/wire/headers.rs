//! Checking the headers a Streamable HTTP POST mirrors from its body (MCP 2026-07-28).
//!
//! On the 2026-07-28 HTTP transport a client copies parts of the JSON-RPC body
//! into request headers so that intermediaries can route without parsing the
//! body:
//!
//! | header                 | body field                                             |
//! |------------------------|--------------------------------------------------------|
//! | `MCP-Protocol-Version` | `params._meta["io.modelcontextprotocol/protocolVersion"]` |
//! | `Mcp-Method`           | `method`                                               |
//! | `Mcp-Name`             | `params.name` / `params.uri` (some methods only)       |
//! | `Mcp-Param-{Name}`     | the `tools/call` argument annotated `x-mcp-header`     |
//!
//! A server that reads the body must check that every mirrored header says
//! what the body says, and answer HTTP 400 with JSON-RPC error `-32020`
//! (HeaderMismatch) when one does not. [`check`] performs that comparison
//! without allocating, on the success path and on the failure path alike; the
//! [`Mismatch`] it returns borrows from the request and the body and renders a
//! bounded message through [`core::fmt::Display`].
//!
//! Rules, from the specification and the conformance suite:
//!
//! * header names compare case-insensitively, values case-sensitively;
//!   optional whitespace (SP / HTAB) around a value is ignored;
//! * `Mcp-Name` and `Mcp-Param-*` values may use the base64 sentinel
//!   `=?base64?<standard base64 of UTF-8>?=` and are decoded before comparing
//!   (see [`decode_value`]); `MCP-Protocol-Version` and `Mcp-Method` are
//!   always taken literally;
//! * a header that occurs more than once has **every** occurrence checked: a
//!   request whose duplicated header carries two different values is refused
//!   even if one of them matches, because an intermediary may have acted on
//!   the other one;
//! * a value is never split at commas: `a, b` is the single value `a, b`.
//!
//! The caller should run [`check`] before deciding whether the body's
//! protocol version is supported: the conformance suite expects a body
//! version `v999.0.0` sent with header `MCP-Protocol-Version: 2026-07-28` to
//! fail with `-32020`, and only header and body both `v999.0.0` to fail with
//! `-32022`.

use core::fmt::{self, Write as _};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The JSON type a header-mirrored argument has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderParamKind {
    /// `"type": "string"`.
    String,
    /// `"type": "integer"`.
    Integer,
    /// `"type": "boolean"`.
    Boolean,
}

/// Largest decoded sentinel payload, in bytes, that [`check`] accepts; a
/// longer one fails with [`MismatchReason::TooLong`]. [`check`] decodes into
/// a stack buffer of this size (initialized only when a sentinel occurs).
pub const MAX_DECODED_LEN: usize = 8 * 1024;

/// Most bytes of a header or body value a [`Mismatch`] message shows.
const SHOW_LIMIT: usize = 100;

/// Sentinel prefix (case-sensitive).
const SENTINEL_PREFIX: &[u8] = b"=?base64?";

/// Sentinel suffix (case-sensitive).
const SENTINEL_SUFFIX: &[u8] = b"?=";

/// Lowercase prefix of an `Mcp-Param-{Name}` header name.
const PARAM_PREFIX: &[u8] = b"mcp-param-";

/// A body value an `Mcp-Param-*` header must mirror.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BodyValue<'a> {
    /// The argument is not in the body.
    Absent,
    /// The argument is JSON `null`.
    Null,
    /// A JSON string.
    Str(&'a str),
    /// A JSON number that fits an `i64`.
    I64(i64),
    /// A JSON number that fits a `u64` but not an `i64`.
    U64(u64),
    /// Any other JSON number (fraction, exponent or out of 64-bit range).
    F64(f64),
    /// A JSON boolean.
    Bool(bool),
    /// A JSON object or array.
    Other,
}

/// One expected `Mcp-Param-{header}` header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamCheck<'a> {
    /// The `{Name}` part of the header name, as declared by the tool's
    /// `x-mcp-header` annotation (compared case-insensitively).
    pub header: &'a str,
    /// The annotated property's declared type.
    pub kind: HeaderParamKind,
    /// The argument's value in the body.
    pub value: BodyValue<'a>,
}

/// What the body says, which the headers must mirror.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected<'a> {
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`.
    pub protocol_version: &'a str,
    /// The JSON-RPC `method`.
    pub method: &'a str,
    /// `params.name` (`tools/call`, `prompts/get`), `params.uri`
    /// (`resources/read`) or `params.taskId` (task methods); `None` for
    /// methods without an `Mcp-Name` header, in which case an `Mcp-Name`
    /// header is ignored.
    pub name: Option<&'a str>,
    /// The tool's `x-mcp-header` arguments (`tools/call` only; empty
    /// otherwise).
    pub params: &'a [ParamCheck<'a>],
}

/// Which mirrored header failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderName<'a> {
    /// `MCP-Protocol-Version`.
    ProtocolVersion,
    /// `Mcp-Method`.
    Method,
    /// `Mcp-Name`.
    Name,
    /// `Mcp-Param-{header}`, holding `{header}` as declared in the schema.
    Param(&'a str),
}

impl HeaderName<'_> {
    /// Whether a request header called `name` is this header
    /// (case-insensitively).
    fn matches(self, name: &str) -> bool {
        let name = name.as_bytes();
        match self {
            Self::ProtocolVersion => name.eq_ignore_ascii_case(b"mcp-protocol-version"),
            Self::Method => name.eq_ignore_ascii_case(b"mcp-method"),
            Self::Name => name.eq_ignore_ascii_case(b"mcp-name"),
            Self::Param(param) => {
                name.len() == PARAM_PREFIX.len() + param.len()
                    && name[..PARAM_PREFIX.len()].eq_ignore_ascii_case(PARAM_PREFIX)
                    && name[PARAM_PREFIX.len()..].eq_ignore_ascii_case(param.as_bytes())
            }
        }
    }

    /// Whether the header's values may use the base64 sentinel.
    fn decodes_sentinel(self) -> bool {
        matches!(self, Self::Name | Self::Param(_))
    }
}

impl fmt::Display for HeaderName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ProtocolVersion => f.write_str("MCP-Protocol-Version"),
            Self::Method => f.write_str("Mcp-Method"),
            Self::Name => f.write_str("Mcp-Name"),
            Self::Param(param) => write!(f, "Mcp-Param-{param}"),
        }
    }
}

/// How a mirrored header failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MismatchReason {
    /// The header is required but absent.
    Missing,
    /// The (decoded) value is not the body's value; for `Mcp-Param-*`, also
    /// when the body value's JSON type is not the declared one.
    Differs,
    /// The value (without a sentinel) holds a byte outside visible ASCII,
    /// SP and HTAB.
    InvalidCharacters,
    /// The sentinel payload is not canonical standard base64, or does not
    /// decode to UTF-8.
    BadBase64,
    /// The sentinel payload decodes to more than [`MAX_DECODED_LEN`] bytes.
    TooLong,
    /// An `Mcp-Param-*` header is present while the body's argument is
    /// absent or `null`.
    Unexpected,
}

/// Which header failed and how.
///
/// Displays as a message for the `-32020` error, e.g. `Header mismatch:
/// Mcp-Name header value 'foo' does not match body value 'bar'`; each value
/// shown is cut to about 100 bytes and escaped, and formatting never
/// allocates on its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mismatch<'a> {
    /// The failing header.
    pub(crate) header: HeaderName<'a>,
    /// How it failed.
    pub reason: MismatchReason,
    /// The offending occurrence's raw value, surrounding whitespace removed;
    /// `None` when the header is missing.
    pub header_value: Option<&'a [u8]>,
    /// The body value the header had to mirror (a string for the standard
    /// headers).
    pub(crate) body_value: BodyValue<'a>,
}

// Body numbers come from parsed JSON, which has no NaN, so equality is
// reflexive.
impl Eq for Mismatch<'_> {}

impl fmt::Display for Mismatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = self.header;
        let Some(raw) = self.header_value else {
            return write!(
                f,
                "Header mismatch: {header} header is missing; body value is {}",
                ShownBody(self.body_value)
            );
        };
        let shown = Shown(raw);
        match self.reason {
            MismatchReason::Differs => {
                if header.decodes_sentinel()
                    && let Some(payload) = sentinel_payload(raw)
                {
                    // Show the decoded text: a prefix of the payload made of
                    // whole 4-character groups decodes on its own.
                    let mut buf = [0u8; SHOW_LIMIT / 3 * 3];
                    let take = payload.len().min(buf.len() / 3 * 4);
                    if let Ok(n) = STANDARD.decode_slice(&payload[..take], &mut buf) {
                        let cut = take < payload.len();
                        // Do not show a character split by the cut.
                        let end = match core::str::from_utf8(&buf[..n]) {
                            Err(e) if cut && e.error_len().is_none() => e.valid_up_to(),
                            _ => n,
                        };
                        let text = Shown(&buf[..end]);
                        let more = if cut { "…" } else { "" };
                        return write!(
                            f,
                            "Header mismatch: {header} header value '{text}{more}' (base64-decoded) does not match \
                             body value {}",
                            ShownBody(self.body_value)
                        );
                    }
                }
                write!(
                    f,
                    "Header mismatch: {header} header value '{shown}' does not match body value {}",
                    ShownBody(self.body_value)
                )
            }
            MismatchReason::Missing => {
                write!(
                    f,
                    "Header mismatch: {header} header is missing; body value is {}",
                    ShownBody(self.body_value)
                )
            }
            MismatchReason::InvalidCharacters => {
                write!(f, "Header mismatch: {header} header value '{shown}' contains invalid characters")
            }
            MismatchReason::BadBase64 => {
                write!(
                    f,
                    "Header mismatch: {header} header value '{shown}' is not valid base64-encoded UTF-8"
                )
            }
            MismatchReason::TooLong => write!(
                f,
                "Header mismatch: {header} header value '{shown}' decodes to more than {MAX_DECODED_LEN} bytes"
            ),
            MismatchReason::Unexpected => write!(
                f,
                "Header mismatch: {header} header value '{shown}' is present but the body value is {}",
                ShownBody(self.body_value)
            ),
        }
    }
}

impl std::error::Error for Mismatch<'_> {}

/// Displays a byte string cut to [`SHOW_LIMIT`] bytes, with unprintable
/// characters, `'`, `\\` and invalid UTF-8 escaped (Rust escape syntax).
struct Shown<'x>(&'x [u8]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut used = 0;
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                used += c.len_utf8();
                if used > SHOW_LIMIT {
                    return f.write_char('…');
                }
                // Quotes, backslashes, control, format (bidi) and other
                // unprintable characters are escaped.
                if c == '"' {
                    f.write_char(c)?;
                } else {
                    write!(f, "{}", c.escape_debug())?;
                }
            }
            for &b in chunk.invalid() {
                used += 1;
                if used > SHOW_LIMIT {
                    return f.write_char('…');
                }
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

/// Displays a body value: strings quoted and cut like [`Shown`], other
/// values as JSON-ish words.
struct ShownBody<'x>(BodyValue<'x>);

impl fmt::Display for ShownBody<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            BodyValue::Absent => f.write_str("absent"),
            BodyValue::Null => f.write_str("null"),
            BodyValue::Str(s) => write!(f, "'{}'", Shown(s.as_bytes())),
            BodyValue::I64(n) => write!(f, "{n}"),
            BodyValue::U64(n) => write!(f, "{n}"),
            // `Display` of a large or tiny float spells out every digit.
            BodyValue::F64(x) if x != 0.0 && !(1e-6..1e16).contains(&x.abs()) => write!(f, "{x:e}"),
            BodyValue::F64(x) => write!(f, "{x}"),
            BodyValue::Bool(b) => write!(f, "{b}"),
            BodyValue::Other => f.write_str("an object or array"),
        }
    }
}

/// Checks every mirrored header against the body.
///
/// `headers` are the request's headers exactly as parsed: names in any case,
/// raw values, possibly repeated. Checks run in this order and the first
/// failure is returned: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
/// (only when [`Expected::name`] is `Some`), then each [`ParamCheck`] in
/// order.
///
/// * `MCP-Protocol-Version` and `Mcp-Method` must be present and equal the
///   body's value; they are taken literally (a sentinel in them is not
///   decoded, so it does not match).
/// * `Mcp-Name` must be present and equal the name after sentinel decoding.
/// * `Mcp-Param-{header}`, after sentinel decoding:
///   * body value absent or `null`: the header must be absent (the client
///     omits it in that case, so a present header claims a value the body
///     does not have → [`MismatchReason::Unexpected`]);
///   * otherwise it must be present and, by declared kind:
///     `String` → equal to the body string;
///     `Integer` → a JSON number literal (`42`, `42.0`, `4.2e1`, `-0`; not
///     `042`, `+42` or `42.`) numerically equal to the body number, which
///     must be integral (`I64`, `U64`, or an `F64` without a fraction);
///     `Boolean` → exactly `true` or `false`, equal to the body boolean.
///     A body value of another JSON type fails as
///     [`MismatchReason::Differs`].
/// * `Mcp-Param-*` headers no [`ParamCheck`] names are ignored, as are all
///   other headers.
///
/// Every occurrence of a repeated header must pass. Allocates nothing; a
/// sentinel value is decoded into a [`MAX_DECODED_LEN`]-byte stack buffer.
pub fn check<'a>(headers: &'a [httparse::Header<'a>], expected: &Expected<'a>) -> Result<(), Mismatch<'a>> {
    let version = expected.protocol_version;
    check_header(headers, HeaderName::ProtocolVersion, BodyValue::Str(version), |v| v == version)?;
    let method = expected.method;
    check_header(headers, HeaderName::Method, BodyValue::Str(method), |v| v == method)?;
    if let Some(name) = expected.name {
        check_header(headers, HeaderName::Name, BodyValue::Str(name), |v| v == name)?;
    }
    for param in expected.params {
        let header = HeaderName::Param(param.header);
        match param.value {
            BodyValue::Absent | BodyValue::Null => {
                if let Some(h) = headers.iter().find(|h| header.matches(h.name)) {
                    return Err(Mismatch {
                        header,
                        reason: MismatchReason::Unexpected,
                        header_value: Some(trim_ows(h.value)),
                        body_value: param.value,
                    });
                }
            }
            value => check_header(headers, header, value, |v| param_matches(param.kind, value, v))?,
        }
    }
    Ok(())
}

/// Checks every occurrence of `header`: each must decode and satisfy
/// `matches`, and at least one must exist.
fn check_header<'a>(
    headers: &[httparse::Header<'a>],
    header: HeaderName<'a>,
    body_value: BodyValue<'a>,
    matches: impl Fn(&str) -> bool,
) -> Result<(), Mismatch<'a>> {
    let mut seen = false;
    for h in headers.iter().filter(|h| header.matches(h.name)) {
        seen = true;
        let raw = trim_ows(h.value);
        let fail = |reason| Mismatch { header, reason, header_value: Some(raw), body_value };
        // The buffer is only initialized when a sentinel needs decoding.
        let mut scratch;
        let value = if header.decodes_sentinel() && sentinel_payload(raw).is_some() {
            scratch = [0u8; MAX_DECODED_LEN];
            decode_value(raw, &mut scratch)
        } else {
            literal(raw)
        };
        if !matches(value.map_err(fail)?) {
            return Err(fail(MismatchReason::Differs));
        }
    }
    if seen {
        Ok(())
    } else {
        Err(Mismatch { header, reason: MismatchReason::Missing, header_value: None, body_value })
    }
}

/// Whether the decoded header `value` mirrors the body `body` of declared
/// type `kind`.
fn param_matches(kind: HeaderParamKind, body: BodyValue<'_>, value: &str) -> bool {
    match (kind, body) {
        (HeaderParamKind::String, BodyValue::Str(s)) => value == s,
        (HeaderParamKind::Boolean, BodyValue::Bool(b)) => value == if b { "true" } else { "false" },
        (HeaderParamKind::Integer, BodyValue::I64(n)) => json_integer(value) == Some(i128::from(n)),
        (HeaderParamKind::Integer, BodyValue::U64(n)) => json_integer(value) == Some(i128::from(n)),
        (HeaderParamKind::Integer, BodyValue::F64(x)) if x.is_finite() && x.trunc() == x => {
            // `i128::MAX as f64` is 2^127: below it an integral f64 converts
            // to i128 exactly.
            if x.abs() < i128::MAX as f64 {
                json_integer(value) == Some(x as i128)
            } else {
                // Far outside any JSON-safe integer: compare as floats.
                JsonNumber::parse(value).is_some() && value.parse::<f64>() == Ok(x)
            }
        }
        _ => false,
    }
}

/// The parts of a JSON number literal (RFC 8259 `number`).
struct JsonNumber<'s> {
    /// A leading `-`.
    negative: bool,
    /// Integer-part digits (no superfluous leading zero).
    int: &'s [u8],
    /// Fraction digits (possibly empty).
    frac: &'s [u8],
    /// The exponent, saturated to ±`i64::MAX / 4`.
    exp: i64,
}

impl<'s> JsonNumber<'s> {
    /// Splits `s` if it is exactly one JSON number literal.
    fn parse(s: &'s str) -> Option<Self> {
        fn digits(s: &[u8]) -> (&[u8], &[u8]) {
            s.split_at(s.iter().take_while(|b| b.is_ascii_digit()).count())
        }
        let s = s.as_bytes();
        let (negative, s) = match s.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, s),
        };
        let (int, s) = digits(s);
        if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
            return None;
        }
        let (frac, s) = match s.split_first() {
            Some((b'.', rest)) => {
                let (frac, rest) = digits(rest);
                if frac.is_empty() {
                    return None;
                }
                (frac, rest)
            }
            _ => (&[][..], s),
        };
        let exp = match s.split_first() {
            None => 0,
            Some((b'e' | b'E', rest)) => {
                let (negative, rest) = match rest.split_first() {
                    Some((b'-', r)) => (true, r),
                    Some((b'+', r)) => (false, r),
                    _ => (false, rest),
                };
                let (exp, rest) = digits(rest);
                if exp.is_empty() || !rest.is_empty() {
                    return None;
                }
                let limit = i64::MAX / 4;
                let magnitude = exp.iter().fold(0i64, |acc, d| {
                    acc.saturating_mul(10).saturating_add(i64::from(d - b'0')).min(limit)
                });
                if negative { -magnitude } else { magnitude }
            }
            Some(_) => return None,
        };
        Some(Self { negative, int, frac, exp })
    }

    /// The exact value, if it is an integer within `±i128::MAX`.
    fn to_i128(&self) -> Option<i128> {
        let digits = || self.int.iter().chain(self.frac);
        let total = self.int.len() + self.frac.len();
        let leading = digits().take_while(|&&d| d == b'0').count();
        if leading == total {
            return Some(0);
        }
        let trailing = digits().rev().take_while(|&&d| d == b'0').count();
        let significant = total - leading - trailing;
        // value = significant digits × 10^scale, the last digit non-zero.
        let shift = i64::try_from(trailing).ok()? - i64::try_from(self.frac.len()).ok()?;
        let scale = self.exp.checked_add(shift)?;
        // i128::MAX has 39 digits.
        if scale < 0 || i64::try_from(significant).ok()?.saturating_add(scale) > 39 {
            return None;
        }
        let mut value: i128 = 0;
        for &d in digits().skip(leading).take(significant) {
            value = value.checked_mul(10)?.checked_add(i128::from(d - b'0'))?;
        }
        for _ in 0..scale {
            value = value.checked_mul(10)?;
        }
        Some(if self.negative { -value } else { value })
    }
}

/// The exact integer a header value spells as a JSON number, if any.
fn json_integer(value: &str) -> Option<i128> {
    JsonNumber::parse(value)?.to_i128()
}

/// Strips optional whitespace (SP / HTAB) from both ends.
fn trim_ows(raw: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = raw.iter().position(|b| !is_ows(b)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    &raw[start..end]
}

/// The base64 payload of a sentinel-encoded value, if `value` is one.
fn sentinel_payload(value: &[u8]) -> Option<&[u8]> {
    value.strip_prefix(SENTINEL_PREFIX)?.strip_suffix(SENTINEL_SUFFIX)
}

/// A value taken literally: visible ASCII, SP and HTAB only.
fn literal(value: &[u8]) -> Result<&str, MismatchReason> {
    if value.iter().all(|&b| matches!(b, b'\t' | b' '..=b'~')) {
        core::str::from_utf8(value).map_err(|_| MismatchReason::InvalidCharacters)
    } else {
        Err(MismatchReason::InvalidCharacters)
    }
}

/// Decodes an `Mcp-Name` or `Mcp-Param-*` header value.
///
/// Strips surrounding optional whitespace (SP / HTAB). If what remains is
/// `=?base64?{payload}?=` (prefix and suffix lowercase, compared
/// case-sensitively), decodes `payload` strictly into `scratch` (standard
/// alphabet, canonical `=` padding and zero trailing bits required; nothing
/// else, not even whitespace, is allowed inside) and requires the result to
/// be UTF-8, which may then hold any character. Otherwise the value is taken
/// literally and must be visible ASCII, SP or HTAB.
///
/// # Errors
///
/// [`MismatchReason::InvalidCharacters`] for a literal value with another
/// byte; [`MismatchReason::BadBase64`] for a payload that is not canonical
/// base64 or not UTF-8; [`MismatchReason::TooLong`] when the decoded payload
/// does not fit `scratch`.
pub fn decode_value<'b>(raw: &'b [u8], scratch: &'b mut [u8]) -> Result<&'b str, MismatchReason> {
    let value = trim_ows(raw);
    let Some(payload) = sentinel_payload(value) else {
        return literal(value);
    };
    if payload.len() % 4 != 0 {
        return Err(MismatchReason::BadBase64);
    }
    // Exact for canonical input; anything else fails to decode below.
    let padding = payload.iter().rev().take(2).take_while(|&&b| b == b'=').count();
    let len = payload.len() / 4 * 3 - padding;
    if len > scratch.len() {
        return Err(MismatchReason::TooLong);
    }
    let n = STANDARD.decode_slice(payload, &mut scratch[..len]).map_err(|_| MismatchReason::BadBase64)?;
    core::str::from_utf8(&scratch[..n]).map_err(|_| MismatchReason::BadBase64)
}

#[cfg(test)]
mod tests {
    use super::*;

    use HeaderName::{Method, Name, Param, ProtocolVersion};
    use MismatchReason::{BadBase64, Differs, InvalidCharacters, Missing, TooLong, Unexpected};

    type Outcome = Result<(), (HeaderName<'static>, MismatchReason)>;

    /// Raw request headers: name and value.
    type Raw = &'static [(&'static str, &'static [u8])];

    /// An outcome with the header name rendered (a [`Mismatch`] borrows the
    /// request's headers).
    type Rendered = Result<(), (String, MismatchReason)>;

    fn render(outcome: Outcome) -> Rendered {
        outcome.map_err(|(header, reason)| (header.to_string(), reason))
    }

    const VERSION: (&str, &[u8]) = ("MCP-Protocol-Version", b"2026-07-28");
    const METHOD: (&str, &[u8]) = ("Mcp-Method", b"tools/call");
    const NAME: (&str, &[u8]) = ("Mcp-Name", b"get_weather");

    fn string(header: &'static str, value: BodyValue<'static>) -> ParamCheck<'static> {
        ParamCheck { header, kind: HeaderParamKind::String, value }
    }

    fn integer(header: &'static str, value: BodyValue<'static>) -> ParamCheck<'static> {
        ParamCheck { header, kind: HeaderParamKind::Integer, value }
    }

    fn boolean(header: &'static str, value: BodyValue<'static>) -> ParamCheck<'static> {
        ParamCheck { header, kind: HeaderParamKind::Boolean, value }
    }

    fn parsed<'a>(raw: &[(&'a str, &'a [u8])]) -> Vec<httparse::Header<'a>> {
        raw.iter().map(|&(name, value)| httparse::Header { name, value }).collect()
    }

    fn run(
        raw: &[(&'static str, &'static [u8])],
        name: Option<&'static str>,
        params: &[ParamCheck<'static>],
    ) -> Rendered {
        let headers = parsed(raw);
        let expected = Expected { protocol_version: "2026-07-28", method: "tools/call", name, params };
        check(&headers, &expected).map_err(|m| (m.header.to_string(), m.reason))
    }

    /// `headers` plus the three standard headers, checked against `param`.
    fn run_param(headers: &[(&'static str, &'static [u8])], param: ParamCheck<'static>) -> Rendered {
        let mut all = vec![VERSION, METHOD, NAME];
        all.extend_from_slice(headers);
        run(&all, Some("get_weather"), &[param])
    }

    #[test]
    fn standard_headers() {
        let cases: &[(&str, Raw, Option<&'static str>, Outcome)] = &[
            ("exact match", &[VERSION, METHOD, NAME], Some("get_weather"), Ok(())),
            (
                "mixed-case names",
                &[
                    ("mcp-protocol-version", b"2026-07-28"),
                    ("MCP-METHOD", b"tools/call"),
                    ("mCp-NaMe", b"get_weather"),
                ],
                Some("get_weather"),
                Ok(()),
            ),
            (
                "surrounding whitespace",
                &[
                    ("MCP-Protocol-Version", b" \t2026-07-28 "),
                    ("Mcp-Method", b"\ttools/call\t"),
                    ("Mcp-Name", b"  get_weather"),
                ],
                Some("get_weather"),
                Ok(()),
            ),
            (
                "other headers ignored",
                &[("Host", b"x"), VERSION, ("Accept", b"*/*"), METHOD, NAME],
                Some("get_weather"),
                Ok(()),
            ),
            ("missing version", &[METHOD, NAME], Some("get_weather"), Err((ProtocolVersion, Missing))),
            ("missing method", &[VERSION, NAME], Some("get_weather"), Err((Method, Missing))),
            ("missing name", &[VERSION, METHOD], Some("get_weather"), Err((Name, Missing))),
            ("name not expected: absent", &[VERSION, METHOD], None, Ok(())),
            ("name not expected: ignored", &[VERSION, METHOD, ("Mcp-Name", b"x\x01")], None, Ok(())),
            (
                "version differs",
                &[("MCP-Protocol-Version", b"2025-11-25"), METHOD, NAME],
                Some("get_weather"),
                Err((ProtocolVersion, Differs)),
            ),
            (
                "method differs in case",
                &[VERSION, ("Mcp-Method", b"Tools/Call"), NAME],
                Some("get_weather"),
                Err((Method, Differs)),
            ),
            (
                "name differs in case",
                &[VERSION, METHOD, ("Mcp-Name", b"Get_Weather")],
                Some("get_weather"),
                Err((Name, Differs)),
            ),
            (
                "name empty",
                &[VERSION, METHOD, ("Mcp-Name", b"  ")],
                Some("get_weather"),
                Err((Name, Differs)),
            ),
            ("empty name matches empty", &[VERSION, METHOD, ("Mcp-Name", b"")], Some(""), Ok(())),
            (
                "duplicate name, identical",
                &[VERSION, METHOD, NAME, ("mcp-name", b" get_weather ")],
                Some("get_weather"),
                Ok(()),
            ),
            (
                "duplicate name, literal and sentinel of the same value",
                &[VERSION, METHOD, NAME, ("Mcp-Name", b"=?base64?Z2V0X3dlYXRoZXI=?=")],
                Some("get_weather"),
                Ok(()),
            ),
            (
                "duplicate name, second differs",
                &[VERSION, METHOD, NAME, ("Mcp-Name", b"delete_all")],
                Some("get_weather"),
                Err((Name, Differs)),
            ),
            (
                "duplicate name, first differs",
                &[VERSION, METHOD, ("Mcp-Name", b"delete_all"), NAME],
                Some("get_weather"),
                Err((Name, Differs)),
            ),
            (
                "duplicate version, one differs",
                &[VERSION, ("mcp-protocol-version", b"v999.0.0"), METHOD, NAME],
                Some("get_weather"),
                Err((ProtocolVersion, Differs)),
            ),
            (
                "duplicate method, one differs",
                &[VERSION, METHOD, ("MCP-method", b"tools/list"), NAME],
                Some("get_weather"),
                Err((Method, Differs)),
            ),
            (
                "comma list is literal",
                &[VERSION, METHOD, ("Mcp-Name", b"get_weather, delete_all")],
                Some("get_weather"),
                Err((Name, Differs)),
            ),
            ("comma list equal to body", &[VERSION, METHOD, ("Mcp-Name", b"a, b")], Some("a, b"), Ok(())),
            (
                "control character",
                &[VERSION, METHOD, ("Mcp-Name", b"get\x01weather")],
                Some("get\x01weather"),
                Err((Name, InvalidCharacters)),
            ),
            (
                "DEL",
                &[VERSION, METHOD, ("Mcp-Name", b"get_weather\x7f")],
                Some("get_weather"),
                Err((Name, InvalidCharacters)),
            ),
            (
                "raw UTF-8 is invalid",
                &[VERSION, METHOD, ("Mcp-Name", b"caf\xc3\xa9")],
                Some("café"),
                Err((Name, InvalidCharacters)),
            ),
            ("interior HTAB allowed", &[VERSION, METHOD, ("Mcp-Name", b"a\tb")], Some("a\tb"), Ok(())),
            (
                "control in version",
                &[("MCP-Protocol-Version", b"2026-07-28\x00"), METHOD, NAME],
                Some("get_weather"),
                Err((ProtocolVersion, InvalidCharacters)),
            ),
            (
                "sentinel: Hello, 世界",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVsbG8sIOS4lueVjA==?=")],
                Some("Hello, 世界"),
                Ok(()),
            ),
            (
                "sentinel: ' padded '",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?IHBhZGRlZCA=?=")],
                Some(" padded "),
                Ok(()),
            ),
            (
                "sentinel: ' padded ' vs trimmed body",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?IHBhZGRlZCA=?=")],
                Some("padded"),
                Err((Name, Differs)),
            ),
            (
                "sentinel with surrounding whitespace",
                &[VERSION, METHOD, ("Mcp-Name", b" =?base64?SGVsbG8=?=\t")],
                Some("Hello"),
                Ok(()),
            ),
            ("sentinel: empty payload", &[VERSION, METHOD, ("Mcp-Name", b"=?base64??=")], Some(""), Ok(())),
            (
                "sentinel: decoded value differs in case",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVsbG8=?=")],
                Some("hello"),
                Err((Name, Differs)),
            ),
            (
                "sentinel: decoded control characters allowed",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?YQpi?=")],
                Some("a\nb"),
                Ok(()),
            ),
            (
                "sentinel: missing padding",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVsbG8?=")],
                Some("Hello"),
                Err((Name, BadBase64)),
            ),
            (
                "sentinel: short padding",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVsbA=?=")],
                Some("Hell"),
                Err((Name, BadBase64)),
            ),
            (
                "sentinel: excess padding",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVsbG8=====?=")],
                Some("Hello"),
                Err((Name, BadBase64)),
            ),
            (
                "sentinel: all padding",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?====?=")],
                Some(""),
                Err((Name, BadBase64)),
            ),
            (
                "sentinel: non-canonical trailing bits",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVsbG9=?=")],
                Some("Hello"),
                Err((Name, BadBase64)),
            ),
            (
                "sentinel: invalid alphabet",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGV*bG8=?=")],
                Some("Hello"),
                Err((Name, BadBase64)),
            ),
            (
                "sentinel: URL-safe alphabet",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?-_8=?=")],
                Some("x"),
                Err((Name, BadBase64)),
            ),
            (
                "sentinel: inner whitespace",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVs bG8=?=")],
                Some("Hello"),
                Err((Name, BadBase64)),
            ),
            (
                "sentinel: non-UTF-8 payload",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?/w==?=")],
                Some("\u{ff}"),
                Err((Name, BadBase64)),
            ),
            (
                "uppercase prefix is literal",
                &[VERSION, METHOD, ("Mcp-Name", b"=?BASE64?SGVsbG8=?=")],
                Some("=?BASE64?SGVsbG8=?="),
                Ok(()),
            ),
            (
                "uppercase prefix is not decoded",
                &[VERSION, METHOD, ("Mcp-Name", b"=?BASE64?SGVsbG8=?=")],
                Some("Hello"),
                Err((Name, Differs)),
            ),
            (
                "no suffix is literal",
                &[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVsbG8=")],
                Some("=?base64?SGVsbG8="),
                Ok(()),
            ),
            (
                "value without sentinel is literal",
                &[VERSION, METHOD, ("Mcp-Name", b"SGVsbG8=")],
                Some("SGVsbG8="),
                Ok(()),
            ),
            (
                "base64 without sentinel is not decoded",
                &[VERSION, METHOD, ("Mcp-Name", b"SGVsbG8=")],
                Some("Hello"),
                Err((Name, Differs)),
            ),
            (
                "sentinel in version is literal",
                &[("MCP-Protocol-Version", b"=?base64?MjAyNi0wNy0yOA==?="), METHOD, NAME],
                Some("get_weather"),
                Err((ProtocolVersion, Differs)),
            ),
            (
                "sentinel in method is literal",
                &[VERSION, ("Mcp-Method", b"=?base64?dG9vbHMvY2FsbA==?="), NAME],
                Some("get_weather"),
                Err((Method, Differs)),
            ),
            (
                "checks run in order",
                &[("MCP-Protocol-Version", b"x"), ("Mcp-Method", b"y")],
                Some("get_weather"),
                Err((ProtocolVersion, Differs)),
            ),
        ];
        for (label, headers, name, want) in cases {
            assert_eq!(run(headers, *name, &[]), render(*want), "{label}");
        }
    }

    #[test]
    fn params() {
        use BodyValue::{Absent, Bool, F64, I64, Null, Other, Str, U64};
        let cases: &[(&str, Raw, ParamCheck<'static>, Outcome)] = &[
            ("string exact", &[("Mcp-Param-Region", b"us-west1")], string("Region", Str("us-west1")), Ok(())),
            (
                "mixed-case name",
                &[("MCP-PARAM-region", b"us-west1")],
                string("Region", Str("us-west1")),
                Ok(()),
            ),
            (
                "whitespace",
                &[("mcp-param-region", b"  us-west1\t")],
                string("Region", Str("us-west1")),
                Ok(()),
            ),
            (
                "case differs",
                &[("Mcp-Param-Region", b"US-West1")],
                string("Region", Str("us-west1")),
                Err((Param("Region"), Differs)),
            ),
            ("missing", &[], string("Region", Str("us-west1")), Err((Param("Region"), Missing))),
            (
                "longer name is not it",
                &[("Mcp-Param-Region2", b"us-west1")],
                string("Region", Str("us-west1")),
                Err((Param("Region"), Missing)),
            ),
            (
                "prefix alone is not it",
                &[("Mcp-Param-", b"us-west1")],
                string("Region", Str("us-west1")),
                Err((Param("Region"), Missing)),
            ),
            (
                "sentinel",
                &[("Mcp-Param-Greeting", b"=?base64?SGVsbG8sIOS4lueVjA==?=")],
                string("Greeting", Str("Hello, 世界")),
                Ok(()),
            ),
            (
                "sentinel bad",
                &[("Mcp-Param-Greeting", b"=?base64?SGVsbG8?=")],
                string("Greeting", Str("Hello")),
                Err((Param("Greeting"), BadBase64)),
            ),
            (
                "control char",
                &[("Mcp-Param-Region", b"us\x1bwest")],
                string("Region", Str("us\x1bwest")),
                Err((Param("Region"), InvalidCharacters)),
            ),
            (
                "duplicate identical",
                &[("Mcp-Param-Region", b"eu"), ("mcp-param-region", b"eu")],
                string("Region", Str("eu")),
                Ok(()),
            ),
            (
                "duplicate, one bad",
                &[("Mcp-Param-Region", b"eu"), ("mcp-param-region", b"us")],
                string("Region", Str("eu")),
                Err((Param("Region"), Differs)),
            ),
            (
                "duplicate, one invalid",
                &[("Mcp-Param-Region", b"eu"), ("mcp-param-region", b"e\x00u")],
                string("Region", Str("eu")),
                Err((Param("Region"), InvalidCharacters)),
            ),
            (
                "unrelated param headers ignored",
                &[
                    ("Mcp-Param-Other", b"\x01junk"),
                    ("Mcp-Param-Region", b"eu"),
                    ("Mcp-Param-Extra", b"=?base64?!!?="),
                ],
                string("Region", Str("eu")),
                Ok(()),
            ),
            (
                "string vs number body",
                &[("Mcp-Param-Region", b"42")],
                string("Region", I64(42)),
                Err((Param("Region"), Differs)),
            ),
            (
                "string vs object body",
                &[("Mcp-Param-Region", b"{}")],
                string("Region", Other),
                Err((Param("Region"), Differs)),
            ),
            ("absent, no header", &[], string("Region", Absent), Ok(())),
            ("null, no header", &[], string("Region", Null), Ok(())),
            (
                "absent, header present",
                &[("Mcp-Param-Region", b"eu")],
                string("Region", Absent),
                Err((Param("Region"), Unexpected)),
            ),
            (
                "null, header present",
                &[("mcp-param-REGION", b"null")],
                string("Region", Null),
                Err((Param("Region"), Unexpected)),
            ),
            (
                "null, empty header present",
                &[("Mcp-Param-Region", b"")],
                integer("Region", Null),
                Err((Param("Region"), Unexpected)),
            ),
            ("integer 42", &[("Mcp-Param-Priority", b"42")], integer("Priority", I64(42)), Ok(())),
            ("integer 42.0", &[("Mcp-Param-Priority", b"42.0")], integer("Priority", I64(42)), Ok(())),
            ("integer 42.000", &[("Mcp-Param-Priority", b"42.000")], integer("Priority", I64(42)), Ok(())),
            ("integer 4.2e1", &[("Mcp-Param-Priority", b"4.2e1")], integer("Priority", I64(42)), Ok(())),
            ("integer 420E-1", &[("Mcp-Param-Priority", b"420E-1")], integer("Priority", I64(42)), Ok(())),
            ("integer 0.42e+2", &[("Mcp-Param-Priority", b"0.42e+2")], integer("Priority", I64(42)), Ok(())),
            ("integer whitespace", &[("Mcp-Param-Priority", b" 42\t")], integer("Priority", I64(42)), Ok(())),
            (
                "integer sentinel",
                &[("Mcp-Param-Priority", b"=?base64?NDI=?=")],
                integer("Priority", I64(42)),
                Ok(()),
            ),
            (
                "integer 042",
                &[("Mcp-Param-Priority", b"042")],
                integer("Priority", I64(42)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer +42",
                &[("Mcp-Param-Priority", b"+42")],
                integer("Priority", I64(42)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer 42.",
                &[("Mcp-Param-Priority", b"42.")],
                integer("Priority", I64(42)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer .5",
                &[("Mcp-Param-Priority", b".5")],
                integer("Priority", I64(0)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer 4.5",
                &[("Mcp-Param-Priority", b"4.5")],
                integer("Priority", I64(42)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer 4.5 vs 4",
                &[("Mcp-Param-Priority", b"4.5")],
                integer("Priority", I64(4)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer 43",
                &[("Mcp-Param-Priority", b"43")],
                integer("Priority", I64(42)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer quoted",
                &[("Mcp-Param-Priority", b"\"42\"")],
                integer("Priority", I64(42)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer 42 ms",
                &[("Mcp-Param-Priority", b"42 ms")],
                integer("Priority", I64(42)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer empty",
                &[("Mcp-Param-Priority", b"")],
                integer("Priority", I64(0)),
                Err((Param("Priority"), Differs)),
            ),
            ("integer -1", &[("Mcp-Param-Priority", b"-1")], integer("Priority", I64(-1)), Ok(())),
            (
                "integer -1 vs 1",
                &[("Mcp-Param-Priority", b"-1")],
                integer("Priority", I64(1)),
                Err((Param("Priority"), Differs)),
            ),
            ("integer -0", &[("Mcp-Param-Priority", b"-0")], integer("Priority", I64(0)), Ok(())),
            ("integer 0e99999", &[("Mcp-Param-Priority", b"0e99999")], integer("Priority", I64(0)), Ok(())),
            (
                "integer i64::MIN",
                &[("Mcp-Param-Priority", b"-9223372036854775808")],
                integer("Priority", I64(i64::MIN)),
                Ok(()),
            ),
            (
                "integer u64::MAX",
                &[("Mcp-Param-Priority", b"18446744073709551615")],
                integer("Priority", U64(u64::MAX)),
                Ok(()),
            ),
            (
                "integer u64::MAX + 1",
                &[("Mcp-Param-Priority", b"18446744073709551616")],
                integer("Priority", U64(u64::MAX)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer u64::MAX wraps?",
                &[("Mcp-Param-Priority", b"-1")],
                integer("Priority", U64(u64::MAX)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer huge exponent",
                &[("Mcp-Param-Priority", b"1e99999999999999999999999")],
                integer("Priority", I64(1)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer tiny exponent",
                &[("Mcp-Param-Priority", b"1e-99999999999999999999999")],
                integer("Priority", I64(0)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer 40 digits",
                &[("Mcp-Param-Priority", b"1000000000000000000000000000000000000000")],
                integer("Priority", I64(0)),
                Err((Param("Priority"), Differs)),
            ),
            ("integer body f64", &[("Mcp-Param-Priority", b"42")], integer("Priority", F64(42.0)), Ok(())),
            (
                "integer body 1e20",
                &[("Mcp-Param-Priority", b"100000000000000000000")],
                integer("Priority", F64(1e20)),
                Ok(()),
            ),
            (
                "integer body 1e20 as 1e20",
                &[("Mcp-Param-Priority", b"1e20")],
                integer("Priority", F64(1e20)),
                Ok(()),
            ),
            (
                "integer body 1e300",
                &[("Mcp-Param-Priority", b"1e300")],
                integer("Priority", F64(1e300)),
                Ok(()),
            ),
            (
                "integer body 1e300 vs 1e299",
                &[("Mcp-Param-Priority", b"1e299")],
                integer("Priority", F64(1e300)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer body 1e300 vs junk",
                &[("Mcp-Param-Priority", b"1e300x")],
                integer("Priority", F64(1e300)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer body fractional",
                &[("Mcp-Param-Priority", b"4.5")],
                integer("Priority", F64(4.5)),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer body string",
                &[("Mcp-Param-Priority", b"42")],
                integer("Priority", Str("42")),
                Err((Param("Priority"), Differs)),
            ),
            (
                "integer body bool",
                &[("Mcp-Param-Priority", b"true")],
                integer("Priority", Bool(true)),
                Err((Param("Priority"), Differs)),
            ),
            ("integer missing", &[], integer("Priority", I64(42)), Err((Param("Priority"), Missing))),
            ("bool true", &[("Mcp-Param-Verbose", b"true")], boolean("Verbose", Bool(true)), Ok(())),
            ("bool false", &[("Mcp-Param-Verbose", b" false ")], boolean("Verbose", Bool(false)), Ok(())),
            (
                "bool True",
                &[("Mcp-Param-Verbose", b"True")],
                boolean("Verbose", Bool(true)),
                Err((Param("Verbose"), Differs)),
            ),
            (
                "bool TRUE",
                &[("Mcp-Param-Verbose", b"TRUE")],
                boolean("Verbose", Bool(true)),
                Err((Param("Verbose"), Differs)),
            ),
            (
                "bool 1",
                &[("Mcp-Param-Verbose", b"1")],
                boolean("Verbose", Bool(true)),
                Err((Param("Verbose"), Differs)),
            ),
            (
                "bool false vs true",
                &[("Mcp-Param-Verbose", b"false")],
                boolean("Verbose", Bool(true)),
                Err((Param("Verbose"), Differs)),
            ),
            (
                "bool body string",
                &[("Mcp-Param-Verbose", b"true")],
                boolean("Verbose", Str("true")),
                Err((Param("Verbose"), Differs)),
            ),
            (
                "bool duplicate, one bad",
                &[("Mcp-Param-Verbose", b"true"), ("Mcp-Param-Verbose", b"false")],
                boolean("Verbose", Bool(true)),
                Err((Param("Verbose"), Differs)),
            ),
        ];
        for (label, headers, param, want) in cases {
            assert_eq!(run_param(headers, *param), render(*want), "{label}");
        }
    }

    #[test]
    fn params_in_order_and_all_checked() {
        let params = [
            string("Region", BodyValue::Str("eu")),
            integer("Priority", BodyValue::I64(7)),
            boolean("Verbose", BodyValue::Bool(false)),
            string("Note", BodyValue::Absent),
        ];
        let ok: &[(&str, &[u8])] = &[
            VERSION,
            METHOD,
            NAME,
            ("Mcp-Param-Verbose", b"false"),
            ("Mcp-Param-Priority", b"7"),
            ("Mcp-Param-Region", b"eu"),
        ];
        assert_eq!(run(ok, Some("get_weather"), &params), Ok(()));
        let bad: &[(&str, &[u8])] = &[
            VERSION,
            METHOD,
            NAME,
            ("Mcp-Param-Verbose", b"true"),
            ("Mcp-Param-Priority", b"8"),
            ("Mcp-Param-Region", b"eu"),
        ];
        assert_eq!(run(bad, Some("get_weather"), &params), render(Err((Param("Priority"), Differs))));
        let note: &[(&str, &[u8])] = &[
            VERSION,
            METHOD,
            NAME,
            ("Mcp-Param-Verbose", b"false"),
            ("Mcp-Param-Priority", b"7"),
            ("Mcp-Param-Region", b"eu"),
            ("Mcp-Param-Note", b"hi"),
        ];
        assert_eq!(run(note, Some("get_weather"), &params), render(Err((Param("Note"), Unexpected))));
    }

    /// Many `Mcp-` headers besides the checked ones: the same outcomes, in the same order.
    #[test]
    fn many_mcp_headers() {
        let extra: Vec<String> = (0..20).map(|i| format!("Mcp-Extra-{i}")).collect();
        let params = [string("Region", BodyValue::Str("eu")), string("Note", BodyValue::Absent)];
        for (tail, want) in [
            (vec![("Mcp-Param-Region", &b"eu"[..])], Ok(())),
            (vec![("Mcp-Param-Region", &b"us"[..])], render(Err((Param("Region"), Differs)))),
            (vec![], render(Err((Param("Region"), Missing)))),
            (
                vec![("Mcp-Param-Region", &b"eu"[..]), ("mcp-param-note", &b"x"[..])],
                render(Err((Param("Note"), Unexpected))),
            ),
            (vec![("MCP-METHOD", &b"tools/list"[..])], render(Err((Method, Differs)))),
        ] {
            for count in [0, 10, 13, 14, 20] {
                let mut raw: Vec<(&str, &[u8])> = vec![VERSION, METHOD, NAME];
                raw.extend(extra[..count].iter().map(|n| (n.as_str(), &b"v"[..])));
                raw.extend_from_slice(&tail);
                let headers = parsed(&raw);
                let expected = Expected {
                    protocol_version: "2026-07-28",
                    method: "tools/call",
                    name: Some("get_weather"),
                    params: &params,
                };
                let got = check(&headers, &expected).map_err(|m| (m.header.to_string(), m.reason));
                assert_eq!(got, want, "{count} extra headers, tail {tail:?}");
            }
        }
    }

    #[test]
    fn decode_value_cases() {
        let mut scratch = [0u8; 64];
        assert_eq!(decode_value(b" plain ", &mut scratch), Ok("plain"));
        assert_eq!(decode_value(b"", &mut scratch), Ok(""));
        assert_eq!(decode_value(b" \t ", &mut scratch), Ok(""));
        assert_eq!(decode_value(b"=?base64?IHBhZGRlZCA=?=", &mut scratch), Ok(" padded "));
        assert_eq!(decode_value(b"=?base64?=", &mut scratch), Ok("=?base64?="));
        assert_eq!(decode_value(b"=?base64??=", &mut scratch), Ok(""));
        assert_eq!(decode_value(b"=?base64?=?=", &mut scratch), Err(BadBase64));
        assert_eq!(decode_value(b"a\rb", &mut scratch), Err(InvalidCharacters));
        assert_eq!(decode_value(b"\xff", &mut scratch), Err(InvalidCharacters));
        // 16 bytes fit, 17 do not.
        let mut small = [0u8; 16];
        assert_eq!(decode_value(b"=?base64?MDEyMzQ1Njc4OWFiY2RlZg==?=", &mut small), Ok("0123456789abcdef"));
        assert_eq!(decode_value(b"=?base64?MDEyMzQ1Njc4OWFiY2RlZmc=?=", &mut small), Err(TooLong));
        assert_eq!(decode_value(b"=?base64?MDEyMzQ1Njc4OWFiY2RlZmdo?=", &mut small), Err(TooLong));
        assert_eq!(decode_value(b"=?base64?MDEyMzQ1Njc4OWFiY2Rl?=", &mut small), Ok("0123456789abcde"));
        // Round trip of awkward strings.
        for s in ["", "a", "ab", "abc", " x ", "=?base64?x?=", "\u{0}\u{7f}\n", "日本語テキスト"] {
            let encoded = format!("=?base64?{}?=", STANDARD.encode(s));
            assert_eq!(decode_value(encoded.as_bytes(), &mut scratch), Ok(s), "{s:?}");
        }
    }

    #[test]
    fn long_values() {
        // Literal values of any length; sentinel payloads up to MAX_DECODED_LEN.
        let long = "x".repeat(100_000);
        let fits = format!("=?base64?{}?=", STANDARD.encode("y".repeat(MAX_DECODED_LEN)));
        let over = format!("=?base64?{}?=", STANDARD.encode("y".repeat(MAX_DECODED_LEN + 1)));
        let body_fits = "y".repeat(MAX_DECODED_LEN);
        fn headers(name: &[u8]) -> [httparse::Header<'_>; 3] {
            [
                httparse::Header { name: "MCP-Protocol-Version", value: b"2026-07-28" },
                httparse::Header { name: "Mcp-Method", value: b"tools/call" },
                httparse::Header { name: "Mcp-Name", value: name },
            ]
        }
        let expect = |name| Expected {
            protocol_version: "2026-07-28",
            method: "tools/call",
            name: Some(name),
            params: &[],
        };
        assert_eq!(check(&headers(long.as_bytes()), &expect(&long)), Ok(()));
        assert_eq!(check(&headers(fits.as_bytes()), &expect(&body_fits)), Ok(()));
        let over_headers = headers(over.as_bytes());
        let err = check(&over_headers, &expect(&body_fits)).unwrap_err();
        assert_eq!((err.header, err.reason), (Name, TooLong));
        assert!(err.to_string().len() < 300, "{err}");
    }

    fn message(
        raw: &[(&'static str, &'static [u8])],
        name: Option<&'static str>,
        params: &[ParamCheck<'static>],
    ) -> String {
        let headers = parsed(raw);
        let expected = Expected { protocol_version: "2026-07-28", method: "tools/call", name, params };
        check(&headers, &expected).unwrap_err().to_string()
    }

    #[test]
    fn display() {
        assert_eq!(
            message(&[VERSION, METHOD, ("Mcp-Name", b"foo")], Some("bar"), &[]),
            "Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'"
        );
        assert_eq!(
            message(&[VERSION, NAME], Some("get_weather"), &[]),
            "Header mismatch: Mcp-Method header is missing; body value is 'tools/call'"
        );
        assert_eq!(
            message(&[METHOD, NAME], Some("get_weather"), &[]),
            "Header mismatch: MCP-Protocol-Version header is missing; body value is '2026-07-28'"
        );
        assert_eq!(
            message(&[VERSION, METHOD, ("Mcp-Name", b"a'b\x01\xff")], Some("x"), &[]),
            "Header mismatch: Mcp-Name header value 'a\\'b\\u{1}\\xff' contains invalid characters"
        );
        assert_eq!(
            message(&[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVsbG8?=")], Some("x"), &[]),
            "Header mismatch: Mcp-Name header value '=?base64?SGVsbG8?=' is not valid base64-encoded UTF-8"
        );
        assert_eq!(
            message(&[VERSION, METHOD, ("Mcp-Name", b"=?base64?SGVsbG8sIOS4lueVjA==?=")], Some("Hello"), &[]),
            "Header mismatch: Mcp-Name header value 'Hello, 世界' (base64-decoded) does not match body value 'Hello'"
        );
        assert_eq!(
            message(
                &[VERSION, METHOD, NAME],
                Some("get_weather"),
                &[integer("Priority", BodyValue::I64(-3))]
            ),
            "Header mismatch: Mcp-Param-Priority header is missing; body value is -3"
        );
        assert_eq!(
            message(
                &[VERSION, METHOD, NAME, ("mcp-param-priority", b"4.5")],
                Some("get_weather"),
                &[integer("Priority", BodyValue::F64(1e300))]
            ),
            "Header mismatch: Mcp-Param-Priority header value '4.5' does not match body value 1e300"
        );
        assert_eq!(
            message(
                &[VERSION, METHOD, NAME, ("Mcp-Param-Flag", b"yes")],
                Some("get_weather"),
                &[boolean("Flag", BodyValue::Null)]
            ),
            "Header mismatch: Mcp-Param-Flag header value 'yes' is present but the body value is null"
        );
        assert_eq!(
            message(
                &[VERSION, METHOD, NAME, ("Mcp-Param-Flag", b"yes")],
                Some("get_weather"),
                &[boolean("Flag", BodyValue::Absent)]
            ),
            "Header mismatch: Mcp-Param-Flag header value 'yes' is present but the body value is absent"
        );
        assert_eq!(
            message(
                &[VERSION, METHOD, NAME, ("Mcp-Param-Flag", b"yes")],
                Some("get_weather"),
                &[boolean("Flag", BodyValue::Other)]
            ),
            "Header mismatch: Mcp-Param-Flag header value 'yes' does not match body value an object or array"
        );
    }

    #[test]
    fn display_escapes_unprintable() {
        // "a\u{202e}b\"c" sent as a sentinel.
        let encoded: &'static [u8] =
            format!("=?base64?{}?=", STANDARD.encode("a\u{202e}b\"c")).leak().as_bytes();
        assert_eq!(
            message(&[VERSION, METHOD, ("Mcp-Name", encoded)], Some("x\ty"), &[]),
            "Header mismatch: Mcp-Name header value 'a\\u{202e}b\"c' (base64-decoded) does not match body value \
             'x\\ty'"
        );
    }

    #[test]
    fn display_is_bounded() {
        let long_header: &'static [u8] = "a".repeat(5000).leak().as_bytes();
        let long_body: &'static str = "ü".repeat(5000).leak();
        let msg = message(&[VERSION, METHOD, ("Mcp-Name", long_header)], Some(long_body), &[]);
        assert!(msg.len() < 300, "{msg}");
        assert!(
            msg.contains("value 'aa")
                && msg.contains("a…'")
                && msg.contains("value 'üü")
                && msg.contains("ü…'"),
            "{msg}"
        );
        // A long sentinel shows a cut, decoded prefix that does not split a character.
        let encoded: &'static [u8] =
            format!("=?base64?{}?=", STANDARD.encode("é".repeat(3000))).leak().as_bytes();
        let msg = message(&[VERSION, METHOD, ("Mcp-Name", encoded)], Some("x"), &[]);
        assert!(msg.len() < 300, "{msg}");
        assert!(msg.contains("'éé") && msg.contains("é…' (base64-decoded)"), "{msg}");
        // Invalid bytes are escaped and counted.
        let junk: &'static [u8] = vec![0xffu8; 5000].leak();
        let msg = message(&[VERSION, METHOD, ("Mcp-Name", junk)], Some("x"), &[]);
        assert!(msg.len() < 600 && msg.contains("\\xff\\xff") && msg.contains('…'), "{msg}");
    }
}
