//! What a match captures: the value rules of each kind of variable, strict
//! percent-decoding, and [`Captures`], the reused buffer the decoded values
//! live in.

/// Maximum number of pairs an exploded query variable collects; a uri with
/// more does not match.
pub const MAX_QUERY_PAIRS: usize = 32;

/// Maximum number of variables in one template (path and query together).
pub const MAX_TEMPLATE_VARS: usize = 32;

/// One captured variable: its index in the template's variable names, its raw
/// span in the uri, and its decoded span in [`Captures`]' text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Capture {
    var: u8,
    raw: (u32, u32),
    text: (u32, u32),
}

/// What one match captured, decoded: the variables the uri defines and the
/// pairs an exploded query variable collected.
///
/// The decoded text lives in one buffer that is reused from match to match
/// (it grows only for a uri longer than any before), so matching into the
/// same `Captures` allocates nothing in the steady state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captures {
    /// Defined variables, in template order.
    vars: heapless::Vec<Capture, MAX_TEMPLATE_VARS>,
    /// Exploded query pairs: decoded key and value spans, in uri order.
    pairs: heapless::Vec<[u32; 4], MAX_QUERY_PAIRS>,
    /// Every decoded value and key, back to back.
    text: String,
}

impl Captures {
    /// Empty captures whose text buffer holds `bytes` before it grows.
    pub fn with_capacity(bytes: usize) -> Self {
        Self { vars: heapless::Vec::new(), pairs: heapless::Vec::new(), text: String::with_capacity(bytes) }
    }

    /// Forgets every capture (keeps the buffer).
    pub fn clear(&mut self) {
        self.vars.clear();
        self.pairs.clear();
        self.text.clear();
    }

    /// Number of defined variables.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether no variable is defined.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The defined variables, in template order: the variable's index in
    /// [`UriTemplate::var_names`](super::UriTemplate::var_names), its raw span in the matched uri (on UTF-8
    /// character boundaries) and its decoded value.
    pub fn vars(&self) -> impl Iterator<Item = (u8, (u32, u32), &str)> + '_ {
        self.vars.iter().map(|c| (c.var, c.raw, self.span(c.text)))
    }

    /// The decoded `(key, value)` pairs the exploded query variable
    /// collected, in uri order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.pairs.iter().map(|&[ks, ke, vs, ve]| (self.span((ks, ke)), self.span((vs, ve))))
    }

    /// The decoded text at `span` (always a char-boundary span of `text`).
    fn span(&self, (start, end): (u32, u32)) -> &str {
        self.text.get(start as usize..end as usize).unwrap_or_default()
    }

    /// Decodes `raw` (at `start..end` of the uri) as variable `var` under
    /// `rule` and pushes it; false (nothing kept) if the value breaks the
    /// rule or the table is full.
    pub(super) fn push(&mut self, var: usize, (start, end): (usize, usize), raw: &[u8], rule: Rule) -> bool {
        let at = self.text.len();
        let ok = decode_onto(raw, &mut self.text) && rule.accepts(self.text.get(at..).unwrap_or_default());
        let pushed = ok
            && match (u8::try_from(var), span32(start, end), span32(at, self.text.len())) {
                (Ok(var), Some(raw), Some(text)) => self.vars.push(Capture { var, raw, text }).is_ok(),
                _ => false,
            };
        if !pushed {
            self.text.truncate(at);
        }
        pushed
    }

    /// Pushes path variable `var` at `start..end` undecoded (a candidate of
    /// the search); false if the table is full.
    pub(super) fn push_raw(&mut self, var: usize, start: usize, end: usize) -> bool {
        match (u8::try_from(var), span32(start, end)) {
            (Ok(var), Some(raw)) => self.vars.push(Capture { var, raw, text: (0, 0) }).is_ok(),
            _ => false,
        }
    }

    /// Decodes every capture of a complete split of `path`, checking each
    /// against its rule (`rules`, in capture order): the index of the first
    /// value that breaks its rule, if any, and the raw bytes decoded.
    pub(super) fn decode_path(
        &mut self,
        path: &[u8],
        mut rules: impl Iterator<Item = Rule>,
    ) -> (Option<usize>, usize) {
        self.text.clear();
        let mut decoded = 0usize;
        for (j, c) in self.vars.iter_mut().enumerate() {
            let raw = path.get(c.raw.0 as usize..c.raw.1 as usize).unwrap_or_default();
            decoded = decoded.saturating_add(raw.len());
            let at = self.text.len();
            let ok = rules.next().is_some_and(|rule| {
                decode_onto(raw, &mut self.text) && rule.accepts(self.text.get(at..).unwrap_or_default())
            });
            match span32(at, self.text.len()) {
                Some(text) if ok => c.text = text,
                _ => {
                    self.text.truncate(at);
                    return (Some(j), decoded);
                }
            }
        }
        (None, decoded)
    }

    /// Keeps the first `n` captures.
    pub(super) fn truncate(&mut self, n: usize) {
        self.vars.truncate(n);
    }

    /// Drops the last capture: its variable index and raw span.
    pub(super) fn pop(&mut self) -> Option<(u8, (u32, u32))> {
        self.vars.pop().map(|c| (c.var, c.raw))
    }

    /// Whether a capture from the `base`-th on is of variable `var`.
    pub(super) fn has_from(&self, base: usize, var: u8) -> bool {
        self.vars.get(base..).unwrap_or_default().iter().any(|c| c.var == var)
    }

    /// Puts the captures from the `base`-th on in template order.
    pub(super) fn sort_from(&mut self, base: usize) {
        if let Some(vars) = self.vars.get_mut(base..) {
            vars.sort_unstable_by_key(|c| c.var);
        }
    }

    /// Decodes and pushes one exploded pair; false if the key is empty, a
    /// part breaks the query rule, or the table is full.
    pub(super) fn push_pair(&mut self, key: &[u8], value: &[u8]) -> bool {
        let rule = Rule { kind: Kind::Query, max_chars: None };
        let k0 = self.text.len();
        let key_ok = !key.is_empty()
            && decode_onto(key, &mut self.text)
            && rule.accepts(self.text.get(k0..).unwrap_or_default());
        let k1 = self.text.len();
        let value_ok = key_ok
            && decode_onto(value, &mut self.text)
            && rule.accepts(self.text.get(k1..).unwrap_or_default());
        let spans = (span32(k0, k1), span32(k1, self.text.len()));
        let pushed = value_ok
            && match spans {
                (Some((ks, ke)), Some((vs, ve))) => self.pairs.push([ks, ke, vs, ve]).is_ok(),
                _ => false,
            };
        if !pushed {
            self.text.truncate(k0);
        }
        pushed
    }
}

/// `start..end` as u32 offsets.
fn span32(start: usize, end: usize) -> Option<(u32, u32)> {
    Some((u32::try_from(start).ok()?, u32::try_from(end).ok()?))
}

/// How a variable's value is expanded, so what it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `{name}`: unreserved characters only, not a traversal, no separator.
    Simple,
    /// `{+name}`: unreserved and reserved characters, no traversal segment.
    Reserved,
    /// A query variable: unreserved characters only, no traversal segment.
    Query,
}

/// What a variable's value must satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rule {
    pub(super) kind: Kind,
    /// The prefix modifier: most characters after decoding.
    pub(super) max_chars: Option<u16>,
}

impl Rule {
    /// Whether raw byte `c` may appear in the value, undecoded.
    pub(super) fn allows_raw(self, c: u8) -> bool {
        is_unreserved(c) || c == b'%' || (self.kind == Kind::Reserved && is_reserved(c))
    }

    /// Whether the decoded `value` is acceptable.
    pub(super) fn accepts(self, value: &str) -> bool {
        if let Some(n) = self.max_chars
            && value.chars().nth(usize::from(n)).is_some()
        {
            return false;
        }
        let traversal = |s: &str| s == "." || s == "..";
        match self.kind {
            Kind::Simple => !traversal(value) && !value.contains(['/', '\\']),
            Kind::Reserved | Kind::Query => !value.split(['/', '\\']).any(traversal),
        }
    }

    /// The most raw bytes a value may span: a decoded character takes at
    /// most 12 (four escaped bytes).
    pub(super) fn max_raw(self) -> usize {
        self.max_chars.map_or(usize::MAX, |n| usize::from(n).saturating_mul(12))
    }
}

/// RFC 3986 unreserved: what simple expansion leaves unencoded.
pub(super) fn is_unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 reserved (gen-delims and sub-delims): what reserved expansion
/// also leaves unencoded.
fn is_reserved(c: u8) -> bool {
    b":/?#[]@!$&'()*+,;=".contains(&c)
}

/// The byte a `%XX` escape at `raw[i..]` stands for.
fn escape(raw: &[u8], i: usize) -> Option<u8> {
    let hex = |k: usize| raw.get(i.checked_add(k)?).and_then(|&c| char::from(c).to_digit(16));
    if raw.get(i) != Some(&b'%') {
        return None;
    }
    u8::try_from(hex(1)? * 16 + hex(2)?).ok()
}

/// Strictly percent-decodes the ASCII text `raw` onto `out`; false (with
/// `out` holding a partial value) if an escape is malformed, a raw byte is
/// not ASCII, or the escaped bytes are not UTF-8.
fn decode_onto(raw: &[u8], out: &mut String) -> bool {
    let mut i = 0usize;
    while let Some(&c) = raw.get(i) {
        if c != b'%' {
            if !c.is_ascii() {
                return false;
            }
            out.push(char::from(c));
            i += 1;
            continue;
        }
        // One character: its lead byte tells how many escapes it spans.
        let Some(lead) = escape(raw, i) else { return false };
        let width = match lead {
            0x00..=0x7F => 1,
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return false,
        };
        let mut buf = [lead, 0, 0, 0];
        for (k, slot) in buf.iter_mut().enumerate().take(width).skip(1) {
            let Some(b) = escape(raw, i.saturating_add(3 * k)) else { return false };
            *slot = b;
        }
        let Ok(ch) = core::str::from_utf8(buf.get(..width).unwrap_or_default()) else { return false };
        out.push_str(ch);
        i = i.saturating_add(3 * width);
    }
    true
}
