//! RFC 6570 subset for MCP resource templates, matched in reverse.
//!
//! # The language
//!
//! A template is literal text with expressions in it:
//!
//! * `{name}` (simple string expansion) matches a non-empty value of
//!   unreserved characters (`A-Z a-z 0-9 - . _ ~`) and percent escapes:
//!   everything else, `/ ? # [ ] @ : ! $ & ' ( ) * + , ; =` and any
//!   non-ASCII byte included, is what RFC 6570 §3.2.2 would have
//!   percent-encoded, so a uri carrying it raw was not made by the template;
//! * `{+name}` (reserved expansion, §3.2.3) matches a non-empty value of
//!   unreserved and reserved characters and percent escapes, `/` included;
//! * a prefix modifier, `{name:3}` or `{+name:3}` (1 to 9999), bounds the
//!   value to that many characters after decoding;
//! * one query expression, `{?q,limit}` (form-style query, §3.2.8), as the
//!   last thing in the template; its variables may take a prefix modifier,
//!   and one of them may be exploded, `{?keys*}`, to collect the pairs that
//!   name no other variable.
//!
//! A template has at most [`MAX_PATH_EXPRESSIONS`] path expressions and
//! [`MAX_TEMPLATE_VARS`] variables, every name once. Everything else RFC 6570
//! allows (other operators, explode in a path expression, several variables
//! in a path expression) is refused when the template is parsed, with a
//! [`TemplateError`], as are layouts whose split would be ambiguous: two path
//! expressions with no literal between them, a query expression followed by
//! anything, or a literal `?` in a template that has a query expression.
//!
//! # Values
//!
//! Every value is percent-decoded strictly: a `%` not followed by two hex
//! digits, or decoded bytes that are not UTF-8, mean no match. After
//! decoding, no variable may be a traversal: a `{name}` value is never `.`
//! or `..` and holds no `/` or `\` (so `%2F` and `%5C` are refused too); a
//! `{+name}` or query value has no `.` or `..` segment between `/` or `\`
//! separators (raw or encoded). A prefix-modified value has at most its
//! bound of characters. Path values are never empty; query values may be.
//!
//! # The query
//!
//! When the template has a query expression, the uri's path part ends at its
//! first `?` (so no path value holds a raw `?`) and the rest is the query:
//! `&`-separated `key=value` pairs. As §3.2.8 expands them, every variable
//! is optional (an undefined one is left out, and with all of them left out
//! the uri has no `?`), so a variable missing from the query is undefined;
//! a bare `?`, an empty pair or a pair without `=` was not made by the
//! template and is no match. Pairs are matched by name in any order (the
//! order of a form-style query carries no meaning), a named variable at most
//! once (a repeat is no match: there would be no telling which value is
//! meant). A pair naming no variable goes to the exploded variable (keys and
//! values decoded, keys non-empty, at most [`MAX_QUERY_PAIRS`] of them, in
//! uri order); without one, it is no match.
//!
//! # Matching
//!
//! Matching is anchored on the whole uri, compares literals byte for byte,
//! allocates nothing once the [`Captures`] text buffer has grown to the
//! longest uri seen, and backtracks over candidate split points under a hard
//! work budget (a step count, and a count of scanned bytes proportional to
//! the uri's length), so no input can make it slow. A candidate value that
//! breaks a rule above is skipped like a literal that does not follow: the
//! match is the first split, shortest values from left to right, whose every
//! value is valid.

use core::fmt;

use memchr::memmem;

#[cfg_attr(not(any(fuzzing, test)), allow(unused_imports))] // exported by `crate::internal`
pub use crate::catalog::uritemplate::values::MAX_QUERY_PAIRS;
pub use crate::catalog::uritemplate::values::{Captures, MAX_TEMPLATE_VARS};
use crate::catalog::uritemplate::values::{Kind, Rule, is_unreserved};

#[cfg(test)]
mod tests;
mod values;

/// Maximum number of path expressions (`{name}`, `{+name}`) in one template.
pub const MAX_PATH_EXPRESSIONS: usize = 16;

/// Longest accepted template, in bytes.
pub const MAX_TEMPLATE_LEN: usize = 2048;

/// Longest accepted variable name, in bytes.
pub(crate) const MAX_VAR_NAME_LEN: usize = 64;

/// Largest prefix modifier (RFC 6570: at most four digits).
pub(crate) const MAX_PREFIX: u16 = 9999;

/// Most candidate split points one [`UriTemplate::matches`] call may try
/// before it gives up and reports no match.
pub(crate) const MATCH_STEP_BUDGET: u32 = 4096;

/// Bytes a matching run may scan per byte of the uri (plus
/// [`MATCH_SCAN_SLACK`]) before it gives up and reports no match.
pub(crate) const MATCH_SCAN_FACTOR: usize = 16;

/// Bytes a matching run may scan regardless of the uri's length.
pub(crate) const MATCH_SCAN_SLACK: usize = 4096;

/// One path variable of a parsed template and the literal that follows it.
#[derive(Debug, Clone)]
struct Segment {
    rule: Rule,
    /// Literal text between this expression and the next one (or the end
    /// of the path part). Never empty except after the last path variable.
    literal: Box<str>,
    /// Substring searcher for `literal`, built once at parse time.
    finder: memmem::Finder<'static>,
}

/// The query expression: its named variables and its exploded one.
#[derive(Debug, Clone)]
struct Query {
    /// (variable index, rule) of every named variable.
    named: Box<[(u8, Rule)]>,
    /// The index of the exploded variable, if any.
    explode: Option<u8>,
}

/// A parsed resource template: a literal prefix, then alternating path
/// variables and literals, then maybe a query expression.
#[derive(Debug, Clone)]
pub struct UriTemplate {
    /// Literal text before the first expression (may be empty).
    prefix: Box<str>,
    /// One entry per path variable, in order of appearance.
    segments: Box<[Segment]>,
    /// The query expression, if any.
    query: Option<Query>,
    /// Variable names, in order of appearance: the path variables (parallel
    /// to `segments`), then the query's.
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
    /// An expression uses an operator other than `+` and `?` (`#./;&=,!@|`).
    UnsupportedOperator {
        /// Offset of the expression's `{`.
        offset: usize,
        /// The refused operator character.
        operator: char,
    },
    /// A prefix modifier is not 1 to 9999 (as in `{id:0}`, `{id:}`,
    /// `{id:12345}`), or is combined with the explode modifier.
    InvalidPrefix {
        /// Offset of the expression's `{`.
        offset: usize,
    },
    /// The explode modifier where it is not supported: on a path expression
    /// (`{id*}`), or on a second variable of the query expression.
    ExplodeModifier {
        /// Offset of the expression's `{`.
        offset: usize,
    },
    /// A path expression names several variables, as in `{a,b}` (only the
    /// query expression takes a list).
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
    /// Two path expressions follow each other with no literal between them,
    /// as in `{a}{b}`: where one ends and the other starts would be ambiguous.
    AdjacentExpressions {
        /// Offset of the second expression's `{`.
        offset: usize,
    },
    /// Something follows the query expression (literal text or another
    /// expression): the query must end the template.
    QueryNotLast {
        /// Offset of the query expression's `{`.
        offset: usize,
    },
    /// A template with a query expression has a literal `?` before it: the
    /// uri's query would not start at its first `?`.
    QueryInLiteral {
        /// Offset of the literal `?`.
        offset: usize,
    },
    /// A variable name appears twice.
    DuplicateVariable {
        /// Offset of the second occurrence's expression `{`.
        offset: usize,
        /// The repeated name.
        name: Box<str>,
    },
    /// The template has more than 32 variables.
    TooManyVariables {
        /// Offset of the expression that goes over the limit.
        offset: usize,
    },
    /// The template has more than 16 path expressions.
    TooManyPathExpressions {
        /// Offset of the first path expression over the limit.
        offset: usize,
    },
    /// The template has no expression at all; it should be registered as a
    /// plain resource instead.
    NoVariables,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = "of the resource template";
        match self {
            Self::Empty => f.write_str("resource template is empty"),
            Self::TooLong { len } => {
                write!(f, "resource template is {len} bytes long; the limit is {MAX_TEMPLATE_LEN}")
            }
            Self::Unclosed { offset } => write!(f, "`{{` at byte {offset} {at} is never closed"),
            Self::StrayClose { offset } => write!(f, "`}}` at byte {offset} {at} has no matching `{{`"),
            Self::NestedOpen { offset } => write!(f, "`{{` at byte {offset} {at} is inside an expression"),
            Self::EmptyExpression { offset } => write!(f, "empty expression at byte {offset} {at}"),
            Self::UnsupportedOperator { offset, operator } => write!(
                f,
                "expression at byte {offset} {at} uses operator `{operator}`; only `{{name}}`, \
                 `{{+name}}` and one `{{?name,...}}` are supported"
            ),
            Self::InvalidPrefix { offset } => write!(
                f,
                "expression at byte {offset} {at} has an invalid prefix modifier: it is `:` and \
                 1 to {MAX_PREFIX}, and cannot be combined with `*`"
            ),
            Self::ExplodeModifier { offset } => write!(
                f,
                "expression at byte {offset} {at} uses the explode modifier (`*`) where it is not \
                 supported: only one variable of the query expression may be exploded"
            ),
            Self::MultipleVariables { offset } => write!(
                f,
                "expression at byte {offset} {at} names several variables; a path expression \
                 takes one (only the query expression takes a list)"
            ),
            Self::InvalidName { offset } => write!(
                f,
                "expression at byte {offset} {at} has an invalid variable name: names are 1 to \
                 {MAX_VAR_NAME_LEN} characters of A-Z, a-z, 0-9 and `_`, with single `.` allowed \
                 between them"
            ),
            Self::AdjacentExpressions { offset } => write!(
                f,
                "expression at byte {offset} {at} directly follows another path expression; put \
                 literal text between them so the split is unambiguous"
            ),
            Self::QueryNotLast { offset } => write!(
                f,
                "query expression at byte {offset} {at} is followed by more text; it must end the \
                 template"
            ),
            Self::QueryInLiteral { offset } => write!(
                f,
                "literal `?` at byte {offset} {at} comes before its query expression; the query \
                 must start at the uri's first `?`"
            ),
            Self::DuplicateVariable { offset, name } => {
                write!(f, "variable `{name}` at byte {offset} {at} repeats an earlier variable")
            }
            Self::TooManyVariables { offset } => write!(
                f,
                "expression at byte {offset} {at} exceeds the limit of {MAX_TEMPLATE_VARS} variables"
            ),
            Self::TooManyPathExpressions { offset } => write!(
                f,
                "expression at byte {offset} {at} exceeds the limit of {MAX_PATH_EXPRESSIONS} path \
                 expressions"
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
    b.len() <= MAX_VAR_NAME_LEN
        && is_varchar(first)
        && is_varchar(last)
        && !name.contains("..")
        && b.iter().all(|&c| c == b'.' || is_varchar(c))
}

/// One variable of an expression: its name, prefix bound and explode flag.
struct VarSpec<'t> {
    name: &'t str,
    max_chars: Option<u16>,
    explode: bool,
}

/// Parses one varspec (`name`, `name:N` or `name*`) of the expression at
/// `offset`.
fn parse_varspec(spec: &str, offset: usize) -> Result<VarSpec<'_>, TemplateError> {
    let (spec, explode) = match spec.strip_suffix('*') {
        Some(rest) => (rest, true),
        None => (spec, false),
    };
    let (name, max_chars) = match spec.split_once(':') {
        None => (spec, None),
        Some((name, digits)) => {
            let valid = !explode
                && (1..=4).contains(&digits.len())
                && !digits.starts_with('0')
                && digits.bytes().all(|c| c.is_ascii_digit());
            let n = digits
                .parse::<u16>()
                .ok()
                .filter(|_| valid)
                .ok_or(TemplateError::InvalidPrefix { offset })?;
            (name, Some(n))
        }
    };
    if !valid_name(name) {
        return Err(TemplateError::InvalidName { offset });
    }
    Ok(VarSpec { name, max_chars, explode })
}

/// The template as it is being parsed.
#[derive(Default)]
struct Builder<'t> {
    prefix: Option<&'t str>,
    /// The last path variable's rule, waiting for its trailing literal.
    pending: Option<Rule>,
    names: Vec<Box<str>>,
    segments: Vec<Segment>,
    query: Option<Query>,
}

impl<'t> Builder<'t> {
    /// Records a variable name, refusing repeats and going over the limit.
    fn name(&mut self, name: &str, offset: usize) -> Result<usize, TemplateError> {
        if self.names.iter().any(|n| **n == *name) {
            return Err(TemplateError::DuplicateVariable { offset, name: name.into() });
        }
        if self.names.len() >= MAX_TEMPLATE_VARS {
            return Err(TemplateError::TooManyVariables { offset });
        }
        self.names.push(name.into());
        Ok(self.names.len() - 1)
    }

    /// Closes the pending path variable with `literal`, the text before the
    /// expression at `open` (or the end); `adjacent_ok` for a query
    /// expression, which may follow a path one directly.
    fn literal(&mut self, literal: &'t str, open: usize, adjacent_ok: bool) -> Result<(), TemplateError> {
        match self.pending.take() {
            None => self.prefix = Some(literal),
            Some(_) if literal.is_empty() && !adjacent_ok => {
                return Err(TemplateError::AdjacentExpressions { offset: open });
            }
            Some(rule) => self.segments.push(Segment {
                rule,
                literal: literal.into(),
                finder: memmem::Finder::new(literal.as_bytes()).into_owned(),
            }),
        }
        Ok(())
    }

    /// Adds the expression whose body (between the braces) is `body`, its
    /// `{` at `open` in `template`, after the literal `literal`.
    fn expression(
        &mut self,
        template: &'t str,
        literal: &'t str,
        body: &'t str,
        open: usize,
    ) -> Result<(), TemplateError> {
        let offset = open;
        if self.query.is_some() {
            // Only the end of the template may follow the query expression.
            let at = template.get(..open).and_then(|t| t.rfind("{?")).unwrap_or_default();
            return Err(TemplateError::QueryNotLast { offset: at });
        }
        let Some(&op) = body.as_bytes().first() else {
            return Err(TemplateError::EmptyExpression { offset });
        };
        if b"#./;&=,!@|".contains(&op) {
            return Err(TemplateError::UnsupportedOperator { offset, operator: char::from(op) });
        }
        if let Some(list) = body.strip_prefix('?') {
            self.literal(literal, open, true)?;
            if let Some(q) = template.get(..open).and_then(|t| t.find('?')) {
                return Err(TemplateError::QueryInLiteral { offset: q });
            }
            return self.query_expression(list, offset);
        }
        self.literal(literal, open, false)?;
        let (spec, kind) = match body.strip_prefix('+') {
            Some(rest) => (rest, Kind::Reserved),
            None => (body, Kind::Simple),
        };
        if spec.contains(',') {
            return Err(TemplateError::MultipleVariables { offset });
        }
        let var = parse_varspec(spec, offset)?;
        if var.explode {
            return Err(TemplateError::ExplodeModifier { offset });
        }
        if self.segments.len() >= MAX_PATH_EXPRESSIONS {
            return Err(TemplateError::TooManyPathExpressions { offset });
        }
        self.name(var.name, offset)?;
        self.pending = Some(Rule { kind, max_chars: var.max_chars });
        Ok(())
    }

    /// Adds the query expression whose variable list is `list`.
    fn query_expression(&mut self, list: &str, offset: usize) -> Result<(), TemplateError> {
        let mut named = Vec::new();
        let mut explode = None;
        for spec in list.split(',') {
            let var = parse_varspec(spec, offset)?;
            let index = self.name(var.name, offset)?;
            let index = u8::try_from(index).map_err(|_| TemplateError::TooManyVariables { offset })?;
            if !var.explode {
                named.push((index, Rule { kind: Kind::Query, max_chars: var.max_chars }));
            } else if explode.replace(index).is_some() {
                return Err(TemplateError::ExplodeModifier { offset });
            }
        }
        self.query = Some(Query { named: named.into_boxed_slice(), explode });
        Ok(())
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
        let mut b = Builder::default();
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
                    let body = template.get(open + 1..close).unwrap_or_default();
                    b.expression(template, literal, body, open)?;
                    i = close + 1;
                    lit_start = i;
                }
                _ => i += 1,
            }
        }
        let tail = template.get(lit_start..).unwrap_or_default();
        if b.query.is_some() {
            if !tail.is_empty() {
                let at = template.rfind("{?").unwrap_or_default();
                return Err(TemplateError::QueryNotLast { offset: at });
            }
        } else if b.names.is_empty() {
            return Err(TemplateError::NoVariables);
        } else {
            b.literal(tail, template.len(), true)?;
        }
        Ok(Self {
            prefix: b.prefix.unwrap_or_default().into(),
            segments: b.segments.into_boxed_slice(),
            query: b.query,
            names: b.names.into_boxed_slice(),
        })
    }

    /// The template's variable names, in order of appearance (path
    /// variables, then the query's); a capture's variable index points into
    /// this slice.
    pub fn var_names(&self) -> &[Box<str>] {
        &self.names
    }

    /// The variables a match defines by name, in order of appearance: `(name, whether
    /// every match defines it)`. Path variables are always defined, named query
    /// variables only when present; the exploded query variable is left out.
    pub fn named_variables(&self) -> impl Iterator<Item = (&str, bool)> {
        let paths = self.segments.len();
        let exploded = self.query.as_ref().and_then(|q| q.explode).map(usize::from);
        self.names
            .iter()
            .enumerate()
            .filter(move |&(i, _)| Some(i) != exploded)
            .map(move |(i, name)| (&**name, i < paths))
    }

    /// (hot) Whether `uri` matches the whole template; on a match,
    /// `captures` holds the decoded value of every variable the uri defines
    /// (every path variable, and the query variables present), in template
    /// order, and the exploded pairs. Allocation-free once `captures` has
    /// room for the uri's length; `captures` is cleared first (and is empty
    /// after no match).
    ///
    /// When several splits match, the one with the shortest values from
    /// left to right wins. A uri that needs more than [`MATCH_STEP_BUDGET`]
    /// candidate splits, or more than [`MATCH_SCAN_FACTOR`] × its length +
    /// [`MATCH_SCAN_SLACK`] scanned bytes, to decide does not match: the cost
    /// of a call is linear in the uri's length whatever the input.
    pub fn matches(&self, uri: &str, captures: &mut Captures) -> bool {
        let mut budget = Budget::for_uri(uri.len());
        let matched = self.run(uri.as_bytes(), captures, &mut budget) == Outcome::Matched;
        if !matched {
            captures.clear();
        }
        matched
    }

    /// Next candidate end (exclusive) for path variable `k` starting at
    /// `pos`, no smaller than `from` (`from > pos`), such that the
    /// variable's trailing literal follows it (and, for the last variable,
    /// ends the path). Charges the bytes it scans to `budget`.
    fn next_end(
        &self,
        k: usize,
        path: &[u8],
        (pos, from): (usize, usize),
        runs: &mut Runs,
        budget: &mut Budget,
    ) -> Option<usize> {
        let seg = self.segments.get(k)?;
        let lit = seg.literal.as_bytes();
        // Farthest end the variable itself may reach: the first byte its
        // expansion would have encoded, or its prefix bound.
        let limit = runs.limit(path, pos, seg.rule, budget).min(pos.saturating_add(seg.rule.max_raw()));
        if from > limit {
            return None;
        }
        if k.saturating_add(1) == self.segments.len() {
            // Last variable: its literal is the path's suffix, so the end is fixed.
            let end = path.len().checked_sub(lit.len())?;
            return (end >= from && end <= limit && path.get(end..)? == lit).then_some(end);
        }
        let hay_end = limit.saturating_add(lit.len()).min(path.len());
        let hay = path.get(from..hay_end)?;
        let found = seg.finder.find(hay);
        budget.charge(found.map_or(hay.len(), |i| i.saturating_add(lit.len())));
        found.map(|i| from.saturating_add(i))
    }

    /// Bounded match of the whole uri: the path part, then the query.
    fn run(&self, uri: &[u8], captures: &mut Captures, budget: &mut Budget) -> Outcome {
        captures.clear();
        // Offsets are stored as u32.
        if u32::try_from(uri.len()).is_err() {
            return Outcome::NoMatch;
        }
        let Some(query) = &self.query else {
            return self.run_path(uri, captures, budget);
        };
        let Some(q) = memchr::memchr(b'?', uri) else {
            return self.run_path(uri, captures, budget);
        };
        budget.charge(q);
        match self.run_path(uri.get(..q).unwrap_or_default(), captures, budget) {
            Outcome::Matched => {}
            other => return other,
        }
        if self.match_query(query, uri, q.saturating_add(1), captures) {
            Outcome::Matched
        } else {
            Outcome::NoMatch
        }
    }

    /// Bounded backtracking match of the path part: a depth-first search
    /// over candidate split points, shortest value first, using `captures`
    /// as its stack. Stops with [`Outcome::Exhausted`] when `budget` runs
    /// out.
    fn run_path(&self, path: &[u8], captures: &mut Captures, budget: &mut Budget) -> Outcome {
        let prefix = self.prefix.as_bytes();
        let Some(last) = self.segments.last() else {
            return if path == prefix { Outcome::Matched } else { Outcome::NoMatch };
        };
        // Cheap anchoring checks first.
        if !path.starts_with(prefix) || !path.ends_with(last.literal.as_bytes()) {
            return Outcome::NoMatch;
        }
        let mut runs = Runs::default();
        let mut k = 0usize;
        let mut pos = prefix.len();
        let mut from = pos.saturating_add(1);
        loop {
            if !budget.step() {
                return Outcome::Exhausted;
            }
            if let Some(end) = self.next_end(k, path, (pos, from), &mut runs, budget) {
                if !captures.push_raw(k, pos, end) {
                    return Outcome::NoMatch;
                }
                let lit_len = self.segments.get(k).map_or(0, |seg| seg.literal.len());
                let next = k.saturating_add(1);
                if next < self.segments.len() {
                    k = next;
                    pos = end.saturating_add(lit_len);
                    from = pos.saturating_add(1);
                    continue;
                }
                // A complete split: decode and check every value. If value `j`
                // breaks its rule, so does every split that shares it: retry
                // variable `j` with a longer value.
                let (bad, decoded) = captures.decode_path(path, self.segments.iter().map(|s| s.rule));
                budget.charge(decoded);
                let Some(j) = bad else { return Outcome::Matched };
                captures.truncate(j.saturating_add(1));
            }
            // Backtrack: retry the last variable with a longer value.
            let Some((var, (start, stop))) = captures.pop() else {
                return Outcome::NoMatch;
            };
            k = usize::from(var);
            pos = start as usize;
            from = (stop as usize).saturating_add(1);
        }
    }

    /// Matches the query `uri[at..]` (after its `?`) against `query`,
    /// appending its captures (see the module documentation). Linear in the
    /// query's length.
    fn match_query(&self, query: &Query, uri: &[u8], at: usize, captures: &mut Captures) -> bool {
        let base = captures.len();
        let mut start = at;
        loop {
            let rest = uri.get(start..).unwrap_or_default();
            let end = memchr::memchr(b'&', rest).map_or(uri.len(), |i| start.saturating_add(i));
            let pair = uri.get(start..end).unwrap_or_default();
            let Some(eq) = memchr::memchr(b'=', pair) else { return false };
            let (key, value) = (pair.get(..eq).unwrap_or_default(), pair.get(eq + 1..).unwrap_or_default());
            if !key.iter().chain(value).all(|&c| is_unreserved(c) || c == b'%') {
                return false;
            }
            let named = query
                .named
                .iter()
                .find(|(v, _)| self.names.get(usize::from(*v)).is_some_and(|n| n.as_bytes() == key));
            let ok = match named {
                Some(&(var, rule)) => {
                    let repeat = captures.has_from(base, var);
                    let value_at = start.saturating_add(eq).saturating_add(1);
                    !repeat && captures.push(usize::from(var), (value_at, end), value, rule)
                }
                None => query.explode.is_some() && captures.push_pair(key, value),
            };
            if !ok {
                return false;
            }
            if end == uri.len() {
                break;
            }
            start = end.saturating_add(1);
        }
        captures.sort_from(base);
        true
    }
}

#[cfg(fuzzing)]
impl UriTemplate {
    /// [`Self::matches`], telling "no match" (`Some(false)`) from a run that spent its
    /// budget before deciding (`None`). For the fuzzing harness only.
    pub fn matches_decided(&self, uri: &str, captures: &mut Captures) -> Option<bool> {
        let mut budget = Budget::for_uri(uri.len());
        let outcome = self.run(uri.as_bytes(), captures, &mut budget);
        if outcome != Outcome::Matched {
            captures.clear();
        }
        match outcome {
            Outcome::Matched => Some(true),
            Outcome::NoMatch => Some(false),
            Outcome::Exhausted => None,
        }
    }
}

/// The last run of bytes found raw-allowed for each kind of path variable,
/// `lo..hi` with `hi` the first refused byte (or the end): every variable
/// starting inside the run reaches `hi` at most, so backtracking over
/// candidate starts scans each run once, not once per start.
#[derive(Debug, Clone, Copy)]
struct Runs {
    simple: (usize, usize),
    reserved: (usize, usize),
}

impl Default for Runs {
    fn default() -> Self {
        Self { simple: (usize::MAX, 0), reserved: (usize::MAX, 0) }
    }
}

impl Runs {
    /// The first byte at or after `pos` that `rule` refuses raw (or the
    /// end of `path`); charges the bytes it scans to `budget`.
    fn limit(&mut self, path: &[u8], pos: usize, rule: Rule, budget: &mut Budget) -> usize {
        let run = if rule.kind == Kind::Reserved { &mut self.reserved } else { &mut self.simple };
        if run.0 <= pos && pos <= run.1 {
            return run.1;
        }
        let rest = path.get(pos..).unwrap_or_default();
        let found = rest.iter().position(|&c| !rule.allows_raw(c));
        budget.charge(found.map_or(rest.len(), |p| p.saturating_add(1)));
        let hi = found.map_or(path.len(), |p| pos.saturating_add(p));
        *run = (pos, hi);
        hi
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

/// Whether `s` is made only of characters a URI may hold (RFC 3986 unreserved and
/// reserved characters and `%XX` escapes). A uri with spaces, quotes, angle brackets,
/// controls or raw non-ASCII is never served: echoed back, it would not be a URI.
pub(crate) fn is_uri_text(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if !(i + 2 < b.len() && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit()) {
                    return false;
                }
                i += 3;
                continue;
            }
            c if c.is_ascii_alphanumeric() => {}
            b'-' | b'.' | b'_' | b'~' | b':' | b'/' | b'?' | b'#' | b'[' | b']' | b'@' | b'!' | b'$'
            | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => {}
            _ => return false,
        }
        i += 1;
    }
    !b.is_empty()
}
