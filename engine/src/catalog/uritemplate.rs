//! RFC 6570 subset for MCP resource templates.
//!
//! Only two expression forms are accepted:
//!
//! * `{name}` matches one non-empty path segment: one or more characters,
//!   none of them `/`;
//! * `{+name}` (reserved expansion) matches one or more characters of
//!   anything, `/` included.
//!
//! Everything else RFC 6570 allows (other operators, prefix and explode
//! modifiers, variable lists) is refused when the template is parsed, as are
//! templates whose split would be ambiguous (two expressions with no literal
//! between them). Matching is anchored on the whole uri, compares literals
//! byte for byte, allocates nothing, and backtracks over candidate split
//! points under a hard work budget (a step count, and a count of scanned
//! bytes proportional to the uri's length), so no input can make it slow.

use core::fmt;

use memchr::memmem;

/// Maximum number of variables in one template.
pub const MAX_TEMPLATE_VARS: usize = 16;

/// Longest accepted template, in bytes.
pub const MAX_TEMPLATE_LEN: usize = 2048;

/// Longest accepted variable name, in bytes.
pub(crate) const MAX_VAR_NAME_LEN: usize = 64;

/// Most candidate split points one [`UriTemplate::matches`] call may try
/// before it gives up and reports no match.
pub(crate) const MATCH_STEP_BUDGET: u32 = 4096;

/// Bytes a matching run may scan per byte of the uri (plus
/// [`MATCH_SCAN_SLACK`]) before it gives up and reports no match.
pub(crate) const MATCH_SCAN_FACTOR: usize = 16;

/// Bytes a matching run may scan regardless of the uri's length.
pub(crate) const MATCH_SCAN_SLACK: usize = 4096;

/// Captured variables of one match: (variable index, start byte, end byte)
/// into the matched uri.
///
/// The variable index is the position of the variable in
/// [`UriTemplate::var_names`]. Start and end always fall on UTF-8 character
/// boundaries of the matched uri, so `&uri[start as usize..end as usize]`
/// cannot panic.
pub type Captures = heapless::Vec<(u8, u32, u32), MAX_TEMPLATE_VARS>;

/// One variable of a parsed template and the literal that follows it.
#[derive(Debug, Clone)]
struct Segment {
    /// `true` for `{+name}` (may cross `/`), `false` for `{name}`.
    reserved: bool,
    /// Literal text between this expression and the next one (or the end
    /// of the template). Never empty except after the last variable.
    literal: Box<str>,
    /// Substring searcher for `literal`, built once at parse time.
    finder: memmem::Finder<'static>,
}

/// A parsed resource template: a literal prefix, then alternating
/// variables and literals.
#[derive(Debug, Clone)]
pub struct UriTemplate {
    /// Literal text before the first expression (may be empty).
    prefix: Box<str>,
    /// One entry per variable, in order of appearance.
    segments: Box<[Segment]>,
    /// Variable names, in order of appearance (parallel to `segments`).
    names: Box<[Box<str>]>,
}

/// Why a template was refused at catalog build.
///
/// Byte offsets count from the start of the template string.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError {
    /// The template is the empty string.
    Empty,
    /// The template is longer than the limit (2048 bytes).
    TooLong {
        /// Length of the refused template, in bytes.
        len: usize,
    },
    /// A `{` is never closed.
    Unclosed {
        /// Offset of the unclosed `{`.
        offset: usize,
    },
    /// A `}` appears outside any expression.
    StrayClose {
        /// Offset of the stray `}`.
        offset: usize,
    },
    /// A `{` appears inside an expression.
    NestedOpen {
        /// Offset of the inner `{`.
        offset: usize,
    },
    /// An expression is empty: `{}`.
    EmptyExpression {
        /// Offset of the expression's `{`.
        offset: usize,
    },
    /// An expression uses an operator other than `+` (`#./;?&=,!@|`).
    UnsupportedOperator {
        /// Offset of the expression's `{`.
        offset: usize,
        /// The refused operator character.
        operator: char,
    },
    /// An expression uses a prefix modifier, as in `{id:3}`.
    PrefixModifier {
        /// Offset of the expression's `{`.
        offset: usize,
    },
    /// An expression uses the explode modifier, as in `{id*}`.
    ExplodeModifier {
        /// Offset of the expression's `{`.
        offset: usize,
    },
    /// An expression names several variables, as in `{a,b}`.
    MultipleVariables {
        /// Offset of the expression's `{`.
        offset: usize,
    },
    /// A variable name is not 1 to 64 characters of `A-Z a-z 0-9 _`, with
    /// single `.` allowed between them.
    InvalidName {
        /// Offset of the expression's `{`.
        offset: usize,
    },
    /// Two expressions follow each other with no literal between them, as in
    /// `{a}{b}`: where one ends and the other starts would be ambiguous.
    AdjacentExpressions {
        /// Offset of the second expression's `{`.
        offset: usize,
    },
    /// A variable name appears twice.
    DuplicateVariable {
        /// Offset of the second occurrence's `{`.
        offset: usize,
        /// The repeated name.
        name: Box<str>,
    },
    /// The template has more than 16 variables.
    TooManyVariables {
        /// Offset of the first expression over the limit.
        offset: usize,
    },
    /// The template has no expression at all; it should be registered as a
    /// plain resource instead.
    NoVariables,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("resource template is empty"),
            Self::TooLong { len } => {
                write!(f, "resource template is {len} bytes long; the limit is {MAX_TEMPLATE_LEN}")
            }
            Self::Unclosed { offset } => {
                write!(f, "`{{` at byte {offset} of the resource template is never closed")
            }
            Self::StrayClose { offset } => {
                write!(f, "`}}` at byte {offset} of the resource template has no matching `{{`")
            }
            Self::NestedOpen { offset } => {
                write!(f, "`{{` at byte {offset} of the resource template is inside an expression")
            }
            Self::EmptyExpression { offset } => {
                write!(f, "empty expression `{{}}` at byte {offset} of the resource template")
            }
            Self::UnsupportedOperator { offset, operator } => write!(
                f,
                "expression at byte {offset} of the resource template uses operator `{operator}`; \
                 only `{{name}}` and `{{+name}}` are supported"
            ),
            Self::PrefixModifier { offset } => write!(
                f,
                "expression at byte {offset} of the resource template uses a prefix modifier \
                 (`:`), which is not supported"
            ),
            Self::ExplodeModifier { offset } => write!(
                f,
                "expression at byte {offset} of the resource template uses the explode modifier \
                 (`*`), which is not supported"
            ),
            Self::MultipleVariables { offset } => write!(
                f,
                "expression at byte {offset} of the resource template names several variables; \
                 use one variable per expression"
            ),
            Self::InvalidName { offset } => write!(
                f,
                "expression at byte {offset} of the resource template has an invalid variable \
                 name: names are 1 to {MAX_VAR_NAME_LEN} characters of A-Z, a-z, 0-9 and `_`, \
                 with single `.` allowed between them"
            ),
            Self::AdjacentExpressions { offset } => write!(
                f,
                "expression at byte {offset} of the resource template directly follows another \
                 one; put literal text between them so the split is unambiguous"
            ),
            Self::DuplicateVariable { offset, name } => write!(
                f,
                "variable `{name}` at byte {offset} of the resource template repeats an earlier \
                 variable"
            ),
            Self::TooManyVariables { offset } => write!(
                f,
                "expression at byte {offset} of the resource template exceeds the limit of \
                 {MAX_TEMPLATE_VARS} variables"
            ),
            Self::NoVariables => {
                f.write_str("resource template has no variable; register it as a plain resource instead")
            }
        }
    }
}

impl std::error::Error for TemplateError {}

/// Result of one bounded matching run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The uri matches; the captures are filled.
    Matched,
    /// Every candidate split was tried and none matches.
    NoMatch,
    /// The step budget ran out before a decision; treated as no match.
    Exhausted,
}

/// Whether `c` may start or end a variable name (and appear inside one).
fn is_varchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `name` is a valid variable name: 1..=64 bytes of
/// `[A-Za-z0-9_]`, with single `.` allowed between them.
fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    if b.len() > MAX_VAR_NAME_LEN || !is_varchar(first) || !is_varchar(last) {
        return false;
    }
    let mut prev_dot = false;
    for &c in b {
        if c == b'.' {
            if prev_dot {
                return false;
            }
            prev_dot = true;
        } else if is_varchar(c) {
            prev_dot = false;
        } else {
            return false;
        }
    }
    true
}

/// Check the body of one expression (the text between `{` and `}`) whose
/// `{` is at `offset`; returns the variable name and whether it is `{+name}`.
fn parse_expression(body: &str, offset: usize) -> Result<(&str, bool), TemplateError> {
    let Some(&first) = body.as_bytes().first() else {
        return Err(TemplateError::EmptyExpression { offset });
    };
    if b"#./;?&=,!@|".contains(&first) {
        return Err(TemplateError::UnsupportedOperator { offset, operator: char::from(first) });
    }
    let (name, reserved) = match body.strip_prefix('+') {
        Some(rest) => (rest, true),
        None => (body, false),
    };
    if name.contains(',') {
        return Err(TemplateError::MultipleVariables { offset });
    }
    if name.contains(':') {
        return Err(TemplateError::PrefixModifier { offset });
    }
    if name.ends_with('*') {
        return Err(TemplateError::ExplodeModifier { offset });
    }
    if !valid_name(name) {
        return Err(TemplateError::InvalidName { offset });
    }
    Ok((name, reserved))
}

/// Build the segment for one variable and the literal that follows it.
fn segment(reserved: bool, literal: &str) -> Segment {
    Segment {
        reserved,
        literal: literal.into(),
        finder: memmem::Finder::new(literal.as_bytes()).into_owned(),
    }
}

impl UriTemplate {
    /// Parse and check a resource template, refusing everything outside the
    /// supported subset (see the module documentation).
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        if template.is_empty() {
            return Err(TemplateError::Empty);
        }
        if template.len() > MAX_TEMPLATE_LEN {
            return Err(TemplateError::TooLong { len: template.len() });
        }
        let bytes = template.as_bytes();
        let mut prefix: Option<&str> = None;
        // Pending variable (name, reserved) waiting for its trailing literal.
        let mut pending: Option<(&str, bool)> = None;
        let mut names: Vec<Box<str>> = Vec::new();
        let mut segments: Vec<Segment> = Vec::new();
        let mut lit_start = 0usize;
        let mut i = 0usize;
        while let Some(&byte) = bytes.get(i) {
            match byte {
                b'}' => return Err(TemplateError::StrayClose { offset: i }),
                b'{' => {
                    let open = i;
                    let mut j = open + 1;
                    let close = loop {
                        match bytes.get(j) {
                            None => return Err(TemplateError::Unclosed { offset: open }),
                            Some(b'{') => return Err(TemplateError::NestedOpen { offset: j }),
                            Some(b'}') => break j,
                            Some(_) => j += 1,
                        }
                    };
                    // Both braces are ASCII, so these are char boundaries.
                    let literal = template.get(lit_start..open).unwrap_or_default();
                    match pending.take() {
                        None => prefix = Some(literal),
                        Some(_) if literal.is_empty() => {
                            return Err(TemplateError::AdjacentExpressions { offset: open });
                        }
                        Some((_, reserved)) => segments.push(segment(reserved, literal)),
                    }
                    let body = template.get(open + 1..close).unwrap_or_default();
                    let (name, reserved) = parse_expression(body, open)?;
                    if names.iter().any(|n| **n == *name) {
                        return Err(TemplateError::DuplicateVariable { offset: open, name: name.into() });
                    }
                    if names.len() >= MAX_TEMPLATE_VARS {
                        return Err(TemplateError::TooManyVariables { offset: open });
                    }
                    names.push(name.into());
                    pending = Some((name, reserved));
                    i = close + 1;
                    lit_start = i;
                }
                _ => i += 1,
            }
        }
        let Some((_, reserved)) = pending else {
            return Err(TemplateError::NoVariables);
        };
        segments.push(segment(reserved, template.get(lit_start..).unwrap_or_default()));
        Ok(Self {
            prefix: prefix.unwrap_or_default().into(),
            segments: segments.into_boxed_slice(),
            names: names.into_boxed_slice(),
        })
    }

    /// The template's variable names, in order of appearance; a capture's
    /// variable index points into this slice.
    pub fn var_names(&self) -> &[Box<str>] {
        &self.names
    }

    /// (hot) Whether `uri` matches the whole template; on a match,
    /// `captures` holds one entry per variable, in order. Zero-alloc;
    /// `captures` is cleared first (and is empty after no match).
    ///
    /// When several splits match, the one with the shortest captures from
    /// left to right wins. A uri that needs more than
    /// [`MATCH_STEP_BUDGET`] candidate splits, or more than
    /// [`MATCH_SCAN_FACTOR`] × its length + [`MATCH_SCAN_SLACK`] scanned
    /// bytes, to decide does not match: the cost of a call is linear in the
    /// uri's length whatever the input.
    pub fn matches(&self, uri: &str, captures: &mut Captures) -> bool {
        let mut budget = Budget::for_uri(uri.len());
        let matched = self.run(uri.as_bytes(), captures, &mut budget) == Outcome::Matched;
        if !matched {
            captures.clear();
        }
        matched
    }

    /// Next candidate end (exclusive) for variable `k` starting at `pos`,
    /// no smaller than `from` (`from > pos`), such that the variable's
    /// trailing literal follows it (and, for the last variable, ends the
    /// uri). Charges the bytes it scans to `budget`.
    fn next_end(&self, k: usize, uri: &[u8], pos: usize, from: usize, budget: &mut Budget) -> Option<usize> {
        let seg = self.segments.get(k)?;
        let lit = seg.literal.as_bytes();
        // Farthest end the variable itself may reach. For `{name}` that is
        // the first `/` at or after `pos`; an earlier candidate ending at
        // `from - 1` proved there is none before `from - 1`, so the scan
        // starts there.
        let limit = if seg.reserved {
            uri.len()
        } else {
            let scan_from = from.saturating_sub(1).max(pos);
            let rest = uri.get(scan_from..)?;
            let found = memchr::memchr(b'/', rest);
            budget.charge(found.map_or(rest.len(), |p| p.saturating_add(1)));
            found.map_or(uri.len(), |p| scan_from.saturating_add(p))
        };
        if from > limit {
            return None;
        }
        if k.saturating_add(1) == self.segments.len() {
            // Last variable: its literal is the uri's suffix, so the end is fixed.
            let end = uri.len().checked_sub(lit.len())?;
            return (end >= from && end <= limit && uri.get(end..)? == lit).then_some(end);
        }
        let hay_end = limit.saturating_add(lit.len()).min(uri.len());
        let hay = uri.get(from..hay_end)?;
        let found = seg.finder.find(hay);
        budget.charge(found.map_or(hay.len(), |i| i.saturating_add(lit.len())));
        found.map(|i| from.saturating_add(i))
    }

    /// Bounded backtracking match: a depth-first search over candidate
    /// split points, shortest capture first, using `captures` as its stack.
    /// Stops with [`Outcome::Exhausted`] when `budget` runs out.
    fn run(&self, uri: &[u8], captures: &mut Captures, budget: &mut Budget) -> Outcome {
        captures.clear();
        let prefix = self.prefix.as_bytes();
        let Some(last) = self.segments.last() else {
            return Outcome::NoMatch;
        };
        // Offsets are stored as u32; cheap anchoring checks first.
        if u32::try_from(uri.len()).is_err()
            || !uri.starts_with(prefix)
            || !uri.ends_with(last.literal.as_bytes())
        {
            return Outcome::NoMatch;
        }
        let mut k = 0usize;
        let mut pos = prefix.len();
        let mut from = pos.saturating_add(1);
        loop {
            if !budget.step() {
                return Outcome::Exhausted;
            }
            if let Some(end) = self.next_end(k, uri, pos, from, budget) {
                // Indices are < 16 and offsets < u32::MAX (checked above).
                let (Ok(var), Ok(start), Ok(stop)) =
                    (u8::try_from(k), u32::try_from(pos), u32::try_from(end))
                else {
                    return Outcome::NoMatch;
                };
                if captures.push((var, start, stop)).is_err() {
                    return Outcome::NoMatch;
                }
                let next = k.saturating_add(1);
                if next == self.segments.len() {
                    // That was the last variable: the whole uri matched.
                    return Outcome::Matched;
                }
                let lit_len = self.segments.get(k).map_or(0, |seg| seg.literal.len());
                k = next;
                pos = end.saturating_add(lit_len);
                from = pos.saturating_add(1);
            } else {
                // Backtrack: retry the previous variable with a longer capture.
                let Some((var, start, stop)) = captures.pop() else {
                    return Outcome::NoMatch;
                };
                k = usize::from(var);
                pos = start as usize;
                from = (stop as usize).saturating_add(1);
            }
        }
    }
}

#[cfg(fuzzing)]
impl UriTemplate {
    /// [`Self::matches`], telling "no match" (`Some(false)`) from a run that spent its
    /// budget before deciding (`None`). For the fuzzing harness only.
    pub fn matches_decided(&self, uri: &str, captures: &mut Captures) -> Option<bool> {
        let mut budget = Budget::for_uri(uri.len());
        match self.run(uri.as_bytes(), captures, &mut budget) {
            Outcome::Matched => Some(true),
            Outcome::NoMatch => Some(false),
            Outcome::Exhausted => None,
        }
    }
}

/// Work allowance of one matching run: a number of candidate searches and
/// a number of scanned bytes proportional to the uri's length, so a run
/// costs O(uri length) whatever the input.
#[derive(Debug, Clone, Copy)]
struct Budget {
    /// Candidate searches left.
    steps: u32,
    /// Bytes the searches may still scan.
    bytes: usize,
}

impl Budget {
    /// The allowance for matching a uri of `len` bytes.
    fn for_uri(len: usize) -> Self {
        Self {
            steps: MATCH_STEP_BUDGET,
            bytes: len.saturating_mul(MATCH_SCAN_FACTOR).saturating_add(MATCH_SCAN_SLACK),
        }
    }

    /// Take one step; false if the allowance is spent.
    fn step(&mut self) -> bool {
        if self.steps == 0 || self.bytes == 0 {
            return false;
        }
        self.steps -= 1;
        true
    }

    /// Charge `n` scanned bytes.
    fn charge(&mut self, n: usize) {
        self.bytes = self.bytes.saturating_sub(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parse a template that must be valid.
    fn t(s: &str) -> UriTemplate {
        match UriTemplate::parse(s) {
            Ok(t) => t,
            Err(e) => panic!("{s:?} refused: {e}"),
        }
    }

    /// Match `uri` and return the captured strings, or None.
    fn m(tpl: &UriTemplate, uri: &str) -> Option<Vec<(String, String)>> {
        let mut caps = Captures::new();
        if !tpl.matches(uri, &mut caps) {
            return None;
        }
        assert_eq!(caps.len(), tpl.var_names().len());
        Some(
            caps.iter()
                .enumerate()
                .map(|(i, &(v, s, e))| {
                    assert_eq!(usize::from(v), i);
                    let name = tpl.var_names()[usize::from(v)].to_string();
                    let val = uri.get(s as usize..e as usize).expect("char boundary").to_string();
                    (name, val)
                })
                .collect(),
        )
    }

    /// Build the expected capture list.
    fn caps(pairs: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(pairs.iter().map(|(a, b)| ((*a).to_string(), (*b).to_string())).collect())
    }

    #[test]
    fn conformance_template() {
        let tpl = t("test://template/{id}/data");
        assert_eq!(&*tpl.var_names()[0], "id");
        assert_eq!(m(&tpl, "test://template/123/data"), caps(&[("id", "123")]));
        assert_eq!(m(&tpl, "test://template//data"), None);
        assert_eq!(m(&tpl, "test://template/1/2/data"), None);
        assert_eq!(m(&tpl, "test://template/123/data/"), None);
        assert_eq!(m(&tpl, "test://template/123/dat"), None);
        assert_eq!(m(&tpl, "xtest://template/123/data"), None);
        assert_eq!(m(&tpl, ""), None);
    }

    #[test]
    fn reserved_expansion() {
        let tpl = t("file:///{+path}");
        assert_eq!(m(&tpl, "file:///a/b/c"), caps(&[("path", "a/b/c")]));
        assert_eq!(m(&tpl, "file:///x"), caps(&[("path", "x")]));
        assert_eq!(m(&tpl, "file:///"), None);
        assert_eq!(m(&tpl, "file://"), None);
        let tpl = t("repo://{+path}/meta");
        assert_eq!(m(&tpl, "repo://a/meta/meta"), caps(&[("path", "a/meta")]));
        assert_eq!(m(&tpl, "repo:///meta"), None);
    }

    #[test]
    fn simple_var_at_end_and_start() {
        let tpl = t("users/{id}");
        assert_eq!(m(&tpl, "users/42"), caps(&[("id", "42")]));
        assert_eq!(m(&tpl, "users/42/"), None);
        assert_eq!(m(&tpl, "users/"), None);
        let tpl = t("{scheme}://x");
        assert_eq!(m(&tpl, "db://x"), caps(&[("scheme", "db")]));
        assert_eq!(m(&tpl, "a/b://x"), None);
        let tpl = t("{only}");
        assert_eq!(m(&tpl, "abc"), caps(&[("only", "abc")]));
        assert_eq!(m(&tpl, "a/c"), None);
        assert_eq!(m(&tpl, ""), None);
        let tpl = t("{+all}");
        assert_eq!(m(&tpl, "a/c"), caps(&[("all", "a/c")]));
    }

    #[test]
    fn multi_var() {
        let tpl = t("{a}x{b}");
        assert_eq!(m(&tpl, "1x2"), caps(&[("a", "1"), ("b", "2")]));
        // Shortest capture first, left to right.
        assert_eq!(m(&tpl, "1x2x3"), caps(&[("a", "1"), ("b", "2x3")]));
        assert_eq!(m(&tpl, "x2"), None);
        assert_eq!(m(&tpl, "1x"), None);
        assert_eq!(m(&tpl, "1xx"), caps(&[("a", "1"), ("b", "x")]));
        assert_eq!(m(&tpl, "1xxy"), caps(&[("a", "1"), ("b", "xy")]));
        let tpl = t("db://{schema}/{table}/rows/{+rest}");
        assert_eq!(
            m(&tpl, "db://public/users/rows/1/2"),
            caps(&[("schema", "public"), ("table", "users"), ("rest", "1/2")])
        );
        assert_eq!(m(&tpl, "db://public/users/x/rows/1"), None);
        let tpl = t("{+a}-{b}.txt");
        assert_eq!(m(&tpl, "p/q-r-s.txt"), caps(&[("a", "p/q"), ("b", "r-s")]));
        assert_eq!(m(&tpl, "p-q/r.txt"), None);
        // Needs backtracking: `a` must grow past the first `-`.
        let tpl = t("{+a}-{b}/z");
        assert_eq!(m(&tpl, "p-q/r-s/z"), caps(&[("a", "p-q/r"), ("b", "s")]));
        let tpl = t("x/{a.b}/{c_d}/{E9}");
        assert_eq!(m(&tpl, "x/1/2/3"), caps(&[("a.b", "1"), ("c_d", "2"), ("E9", "3")]));
    }

    #[test]
    fn utf8_boundaries() {
        let tpl = t("é/{a}é{b}");
        assert_eq!(m(&tpl, "é/ééé"), caps(&[("a", "é"), ("b", "é")]));
        assert_eq!(m(&tpl, "é/ñéü"), caps(&[("a", "ñ"), ("b", "ü")]));
    }

    #[test]
    fn captures_cleared() {
        let tpl = t("a/{x}");
        let mut c = Captures::new();
        assert!(c.push((9, 9, 9)).is_ok());
        assert!(tpl.matches("a/b", &mut c));
        assert_eq!(c.as_slice(), &[(0, 2, 3)]);
        assert!(!tpl.matches("zz", &mut c));
        assert!(c.is_empty());
    }

    #[test]
    fn refusals() {
        use TemplateError as E;
        let e = |s: &str| UriTemplate::parse(s).err();
        assert_eq!(e(""), Some(E::Empty));
        let long = format!("a/{{x}}/{}", "b".repeat(MAX_TEMPLATE_LEN));
        assert_eq!(e(&long), Some(E::TooLong { len: long.len() }));
        let ok = format!("{{x}}{}", "b".repeat(MAX_TEMPLATE_LEN - 3));
        assert!(UriTemplate::parse(&ok).is_ok());
        assert_eq!(e("a/{id"), Some(E::Unclosed { offset: 2 }));
        assert_eq!(e("a/{"), Some(E::Unclosed { offset: 2 }));
        assert_eq!(e("a}/{id}"), Some(E::StrayClose { offset: 1 }));
        assert_eq!(e("a/{id}}"), Some(E::StrayClose { offset: 6 }));
        assert_eq!(e("a/{i{d}"), Some(E::NestedOpen { offset: 4 }));
        assert_eq!(e("a/{}"), Some(E::EmptyExpression { offset: 2 }));
        for op in "#./;?&=,!@|".chars() {
            assert_eq!(e(&format!("a/{{{op}id}}")), Some(E::UnsupportedOperator { offset: 2, operator: op }));
        }
        assert_eq!(e("a/{id:3}"), Some(E::PrefixModifier { offset: 2 }));
        assert_eq!(e("a/{+id:3}"), Some(E::PrefixModifier { offset: 2 }));
        assert_eq!(e("a/{id*}"), Some(E::ExplodeModifier { offset: 2 }));
        assert_eq!(e("a/{a,b}"), Some(E::MultipleVariables { offset: 2 }));
        assert_eq!(e("a/{+a,b}"), Some(E::MultipleVariables { offset: 2 }));
        for bad in ["+", "++a", "+.a", "a.", "a..b", "a b", "a-b", "é", "a*b", "$x", " a"] {
            assert_eq!(e(&format!("a/{{{bad}}}")), Some(E::InvalidName { offset: 2 }), "{bad:?}");
        }
        assert!(UriTemplate::parse(&format!("a/{{{}}}", "n".repeat(64))).is_ok());
        assert_eq!(e(&format!("a/{{{}}}", "n".repeat(65))), Some(E::InvalidName { offset: 2 }));
        assert_eq!(e("{a}{b}"), Some(E::AdjacentExpressions { offset: 3 }));
        assert_eq!(e("x/{a}{+b}"), Some(E::AdjacentExpressions { offset: 5 }));
        assert_eq!(e("{a}/{b}/{a}"), Some(E::DuplicateVariable { offset: 8, name: "a".into() }));
        let many: String = (0..=MAX_TEMPLATE_VARS).map(|i| format!("/{{v{i}}}")).collect();
        let at = many.rfind('{').unwrap_or_default();
        assert_eq!(e(&many), Some(E::TooManyVariables { offset: at }));
        let max: String = (0..MAX_TEMPLATE_VARS).map(|i| format!("/{{v{i}}}")).collect();
        let tpl = t(&max);
        let uri: String = (0..MAX_TEMPLATE_VARS).map(|i| format!("/{i}")).collect();
        assert_eq!(m(&tpl, &uri).map(|c| c.len()), Some(MAX_TEMPLATE_VARS));
        assert_eq!(e("file:///etc/hosts"), Some(E::NoVariables));
        // Every message is non-empty and mentions where it applies.
        for err in [
            E::Empty,
            E::TooLong { len: 3000 },
            E::Unclosed { offset: 1 },
            E::StrayClose { offset: 1 },
            E::NestedOpen { offset: 1 },
            E::EmptyExpression { offset: 1 },
            E::UnsupportedOperator { offset: 1, operator: '#' },
            E::PrefixModifier { offset: 1 },
            E::ExplodeModifier { offset: 1 },
            E::MultipleVariables { offset: 1 },
            E::InvalidName { offset: 1 },
            E::AdjacentExpressions { offset: 1 },
            E::DuplicateVariable { offset: 1, name: "a".into() },
            E::TooManyVariables { offset: 1 },
            E::NoVariables,
        ] {
            let msg = err.to_string();
            assert!(msg.contains("template"), "{msg}");
        }
    }

    /// Unbounded reference matcher: first split in order of shortest
    /// captures left to right, found by plain recursion.
    fn reference(tpl: &UriTemplate, uri: &str, k: usize, pos: usize) -> Option<Vec<(u32, u32)>> {
        let seg = &tpl.segments[k];
        let last = k + 1 == tpl.segments.len();
        for end in pos + 1..=uri.len() {
            if !seg.reserved && uri.as_bytes()[end - 1] == b'/' {
                break;
            }
            if !uri.as_bytes()[end..].starts_with(seg.literal.as_bytes()) {
                continue;
            }
            let next = end + seg.literal.len();
            let rest =
                if last { (next == uri.len()).then(Vec::new) } else { reference(tpl, uri, k + 1, next) };
            if let Some(mut rest) = rest {
                rest.insert(0, (pos as u32, end as u32));
                return Some(rest);
            }
        }
        None
    }

    #[test]
    fn agrees_with_reference_matcher() {
        let templates = [
            "{a}",
            "{+a}",
            "{a}-{b}",
            "{+a}-{b}",
            "{a}-{+b}",
            "{+a}/{b}",
            "a{x}/{+y}-",
            "{a}-{b}-{c}",
            "-{+a}-{b}",
            "{a}/{b}a",
            "{+a}-{+b}/{c}",
            "{+a}--{b}",
            "{a}a-{+b}-a{c}",
        ];
        let alphabet = [b'a', b'/', b'-'];
        let mut uris = vec![String::new()];
        let mut frontier = vec![String::new()];
        for _ in 0..8 {
            let mut next = Vec::new();
            for u in &frontier {
                for &c in &alphabet {
                    let mut v = u.clone();
                    v.push(char::from(c));
                    next.push(v);
                }
            }
            uris.extend(next.iter().cloned());
            frontier = next;
        }
        let mut matched = 0;
        for src in templates {
            let tpl = t(src);
            for uri in &uris {
                let want =
                    uri.strip_prefix(&*tpl.prefix).and_then(|_| reference(&tpl, uri, 0, tpl.prefix.len()));
                let mut c = Captures::new();
                let got =
                    tpl.matches(uri, &mut c).then(|| c.iter().map(|&(_, s, e)| (s, e)).collect::<Vec<_>>());
                assert_eq!(got, want, "{src} vs {uri:?}");
                matched += usize::from(got.is_some());
            }
        }
        assert!(matched > 1000, "{matched}");
    }

    /// Run with a fresh budget; return the outcome and the budget left.
    fn run(tpl: &UriTemplate, uri: &str) -> (Outcome, Budget) {
        let mut c = Captures::new();
        let mut budget = Budget::for_uri(uri.len());
        let outcome = tpl.run(uri.as_bytes(), &mut c, &mut budget);
        (outcome, budget)
    }

    #[test]
    fn pathological_uri_hits_step_budget() {
        // Four simple variables separated by `x`, the last one followed by
        // `y`; the uri has a `/` just before the `y`, so no split can match,
        // and an unbounded search would try O(n^3) splits.
        let tpl = t("{a}x{b}x{c}x{d}y");
        let uri = format!("{}/y", "x".repeat(10_000));
        let (outcome, left) = run(&tpl, &uri);
        assert_eq!(outcome, Outcome::Exhausted);
        // It stopped within its allowance (here the scan budget ran out).
        assert!(left.steps < MATCH_STEP_BUDGET && left.bytes == 0, "{left:?}");
        let mut c = Captures::new();
        assert!(!tpl.matches(&uri, &mut c));
        assert!(c.is_empty());
        // With an unlimited scan budget, the step budget stops it.
        let mut budget = Budget { steps: MATCH_STEP_BUDGET, bytes: usize::MAX };
        let outcome = tpl.run(uri.as_bytes(), &mut c, &mut budget);
        assert_eq!(outcome, Outcome::Exhausted);
        assert_eq!(budget.steps, 0);
    }

    #[test]
    fn pathological_uri_hits_scan_budget() {
        // `q` never occurs: every split of `a` is followed by a full scan
        // for it, O(n^2) bytes without the scan budget.
        let tpl = t("{+a}x{+b}q{+c}");
        let uri = "x".repeat(10_000);
        let (outcome, left) = run(&tpl, &uri);
        assert_eq!(outcome, Outcome::Exhausted);
        assert_eq!(left.bytes, 0);
        assert!(left.steps > MATCH_STEP_BUDGET - 100, "{left:?}");
        // Same shape with simple variables, scanning for `/`.
        let tpl = t("{a}x{b}x{c}/{d}");
        let (outcome, left) = run(&tpl, &"x".repeat(10_000));
        assert_eq!(outcome, Outcome::Exhausted);
        assert_eq!(left.bytes, 0);
    }

    #[test]
    fn long_uri_matches_cheaply() {
        let tpl = t("file:///{+path}");
        let uri = format!("file:///{}", "a/".repeat(5_000));
        let (outcome, left) = run(&tpl, &uri);
        assert_eq!(outcome, Outcome::Matched);
        assert_eq!(left.steps, MATCH_STEP_BUDGET - 1);
        let tpl = t("x/{a}/{+b}/end");
        let uri = format!("x/{}/{}/end", "a".repeat(5_000), "b/".repeat(5_000));
        let (outcome, left) = run(&tpl, &uri);
        assert_eq!(outcome, Outcome::Matched);
        assert_eq!(left.steps, MATCH_STEP_BUDGET - 2);
        // A match that needs backtracking over a long uri still fits.
        let tpl = t("{+a}-{b}/z");
        let uri = format!("{}-s/z", "p-q/".repeat(2_000));
        let (outcome, _) = run(&tpl, &uri);
        assert_eq!(outcome, Outcome::Matched);
        // A simple variable with a long segment and no match is decided fast.
        let tpl = t("x/{a}/end");
        let uri = format!("x/{}", "a".repeat(10_000));
        assert_eq!(run(&tpl, &uri).0, Outcome::NoMatch);
    }
}
