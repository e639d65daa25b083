//! uritemplate: resource template parsing and matching.

use mcp_engine::internal::{
    Captures, MAX_PATH_EXPRESSIONS, MAX_QUERY_PAIRS, MAX_TEMPLATE_LEN, MAX_TEMPLATE_VARS, UriTemplate,
};

use crate::common::Bytes;

/// How a variable is expanded, so what its value may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Simple,
    Reserved,
    Query,
}

/// One path variable as the harness reads it: its kind, name, prefix bound and the
/// literal after it.
struct PathVar {
    kind: Kind,
    name: String,
    max: Option<usize>,
    literal: String,
}

/// A query expression as the harness reads it: its named variables (name, prefix bound)
/// and its exploded one.
type QueryModel = (Vec<(String, Option<usize>)>, Option<String>);

/// A parsed template as the harness reads it: the literal prefix, the path variables,
/// then the query expression.
struct TemplateModel {
    prefix: String,
    path: Vec<PathVar>,
    query: Option<QueryModel>,
}

/// `name`, `name:N` or `name*`: the name, the bound, whether exploded.
fn varspec(spec: &str) -> (String, Option<usize>, bool) {
    if let Some(name) = spec.strip_suffix('*') {
        return (name.to_owned(), None, true);
    }
    match spec.split_once(':') {
        Some((name, n)) => (name.to_owned(), Some(n.parse().expect("an accepted prefix")), false),
        None => (spec.to_owned(), None, false),
    }
}

impl TemplateModel {
    /// Reads a template the engine accepted.
    fn of(template: &str) -> Self {
        let mut parts = template.split('{');
        let prefix = parts.next().unwrap_or_default().to_owned();
        let mut path = Vec::new();
        let mut query = None;
        for p in parts {
            let (body, literal) = p.split_once('}').unwrap_or_else(|| panic!("accepted {template:?}"));
            if let Some(list) = body.strip_prefix('?') {
                assert!(literal.is_empty(), "text after the query in {template:?}");
                let mut named = Vec::new();
                let mut explode = None;
                for spec in list.split(',') {
                    let (name, max, exploded) = varspec(spec);
                    if exploded {
                        assert!(explode.replace(name).is_none(), "two explodes in {template:?}");
                    } else {
                        named.push((name, max));
                    }
                }
                query = Some((named, explode));
                continue;
            }
            let (kind, spec) = match body.strip_prefix('+') {
                Some(n) => (Kind::Reserved, n),
                None => (Kind::Simple, body),
            };
            let (name, max, exploded) = varspec(spec);
            assert!(!exploded, "an exploded path variable in {template:?}");
            path.push(PathVar { kind, name, max, literal: literal.to_owned() });
        }
        Self { prefix, path, query }
    }

    /// Every variable name, in the order the engine numbers them.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.path.iter().map(|v| v.name.clone()).collect();
        if let Some((named, explode)) = &self.query {
            // The engine numbers query variables in order of appearance; the harness
            // keeps the exploded one apart, so the order is checked as a set here and
            // exactly below.
            names.extend(named.iter().map(|(n, _)| n.clone()));
            names.extend(explode.iter().cloned());
        }
        names
    }

    /// The path part and the query (after its `?`) of `uri`, as the template splits it.
    fn split<'u>(&self, uri: &'u str) -> (&'u str, Option<&'u str>) {
        match (&self.query, uri.split_once('?')) {
            (Some(_), Some((path, query))) => (path, Some(query)),
            _ => (uri, None),
        }
    }

    /// The first split of the path part (shortest values, left to right) whose every
    /// value is valid, by plain search; `Err` when it takes more than `work` steps.
    fn reference(&self, path: &str) -> Result<Option<Vec<(u32, u32)>>, ()> {
        fn go(
            m: &TemplateModel,
            uri: &str,
            k: usize,
            pos: usize,
            work: &mut u32,
        ) -> Result<Option<Vec<(u32, u32)>>, ()> {
            let var = &m.path[k];
            let last = k + 1 == m.path.len();
            // The last variable ends where its literal ends the path.
            let first = if last { uri.len().saturating_sub(var.literal.len()).max(pos + 1) } else { pos + 1 };
            for end in first..=uri.len() {
                *work = work.checked_sub(1).ok_or(())?;
                let Some(raw) = uri.get(pos..end) else { continue };
                if !uri.as_bytes()[end..].starts_with(var.literal.as_bytes()) {
                    continue;
                }
                // Reading a value is work in proportion to its length.
                *work = work.checked_sub(u32::try_from(raw.len()).map_err(|_| ())?).ok_or(())?;
                if valid(raw, var.kind, var.max).is_none() {
                    continue;
                }
                let next = end + var.literal.len();
                let rest =
                    if last { (next == uri.len()).then(Vec::new) } else { go(m, uri, k + 1, next, work)? };
                if let Some(mut rest) = rest {
                    rest.insert(0, (pos as u32, end as u32));
                    return Ok(Some(rest));
                }
            }
            Ok(None)
        }
        if !path.starts_with(&self.prefix) {
            return Ok(None);
        }
        if self.path.is_empty() {
            return Ok((path == self.prefix).then(Vec::new));
        }
        let mut work = 200_000;
        go(self, path, 0, self.prefix.len(), &mut work)
    }

    /// What the query should give, read naively: the named values (name, value) sorted by
    /// name, and the exploded pairs; `None` for no match.
    fn reference_query(&self, query: Option<&str>) -> Option<QueryGot> {
        let Some((named, explode)) = &self.query else { return Some((vec![], vec![])) };
        let Some(query) = query else { return Some((vec![], vec![])) };
        let mut vars: Vec<(String, String)> = Vec::new();
        let mut pairs = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=')?;
            if !key.bytes().chain(value.bytes()).all(|c| unreserved(c) || c == b'%') {
                return None;
            }
            if let Some((name, max)) = named.iter().find(|(n, _)| n == key) {
                if vars.iter().any(|(n, _)| n == name) {
                    return None;
                }
                vars.push((name.clone(), valid(value, Kind::Query, *max)?));
            } else if explode.is_some() && !key.is_empty() {
                pairs.push((valid(key, Kind::Query, None)?, valid(value, Kind::Query, None)?));
            } else {
                return None;
            }
        }
        (pairs.len() <= MAX_QUERY_PAIRS).then_some(())?;
        vars.sort_by_key(|(n, _)| named.iter().position(|(m, _)| m == n));
        Some((vars, pairs))
    }
}

/// Named query values in template order, and the exploded pairs.
type QueryGot = (Vec<(String, String)>, Vec<(String, String)>);

fn unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-._~".contains(&c)
}

/// The decoded value of `raw` if it is valid for a variable of `kind` bounded by `max`,
/// read naively: raw characters of the kind's set, escapes of two hex digits, UTF-8
/// after decoding, within the bound, no traversal.
fn valid(raw: &str, kind: Kind, max: Option<usize>) -> Option<String> {
    let allowed =
        |c: u8| unreserved(c) || c == b'%' || (kind == Kind::Reserved && b":/?#[]@!$&'()*+,;=".contains(&c));
    if !raw.bytes().all(allowed) {
        return None;
    }
    let mut bytes = Vec::new();
    let mut pieces = raw.split('%');
    bytes.extend(pieces.next().unwrap_or_default().bytes());
    for piece in pieces {
        let hex = piece.get(..2)?;
        if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        bytes.push(u8::from_str_radix(hex, 16).ok()?);
        bytes.extend(piece[2..].bytes());
    }
    let value = String::from_utf8(bytes).ok()?;
    if max.is_some_and(|n| value.chars().count() > n) || (kind != Kind::Query && value.is_empty()) {
        return None;
    }
    let dots = |s: &str| s == "." || s == "..";
    let ok = match kind {
        Kind::Simple => !dots(&value) && !value.contains(['/', '\\']),
        Kind::Reserved | Kind::Query => !value.split(['/', '\\']).any(dots),
    };
    ok.then_some(value)
}

/// Literal pieces the structured templates are made of.
const LITERAL_PIECES: &[&str] = &[
    "/", "-", "a", "x", ".", "é", "//", "a/", "://", "?q=", "😀", "-a", "x-", "%2F", "ab", "\u{0}", " ", "#",
];

/// Value pieces the expanded uris are made of: good ones, and one of each kind of bad.
const VALUE_PIECES: &[&str] = &[
    "a",
    "b",
    "-",
    "_",
    "~",
    ".",
    "..",
    "/",
    "?",
    "#",
    "&",
    "=",
    "%2F",
    "%2f",
    "%2e",
    "%2E%2E",
    "%5C",
    "%C3%A9",
    "%F0%9F%98%80",
    "%41",
    "%",
    "%4",
    "%zz",
    "%C3",
    "%FF",
    "%C0%AF",
    "é",
    " ",
    "+",
    ":",
    "@",
    "x/../y",
];

fn pieces(b: &mut Bytes<'_>, from: &[&str], max: usize) -> String {
    (0..b.below(max + 1)).map(|_| b.pick(from)).collect()
}

/// Builds a template from literals and expressions; `Ok` if it must parse.
fn structured_template(b: &mut Bytes<'_>, mode: u8) -> (String, bool) {
    let many = mode & 2 != 0;
    let n = b.below(if many { MAX_PATH_EXPRESSIONS + 2 } else { 4 });
    let with_query = mode & 4 != 0 || n == 0;
    let names = ["id", "a", "b.c", "x_1", "rest", "v"];
    let name = |i: usize| {
        if i < names.len() { names[i].to_owned() } else { format!("{}{i}", names[i % names.len()]) }
    };
    let literal = |b: &mut Bytes<'_>| {
        let l = pieces(b, LITERAL_PIECES, 3);
        if with_query { l.replace('?', "-") } else { l }
    };
    let mut t = literal(b);
    for i in 0..n {
        t.push('{');
        if b.u8() & 1 != 0 {
            t.push('+');
        }
        t.push_str(&name(i));
        if b.u8() & 3 == 0 {
            t.push_str(&format!(":{}", b.pick(&[1, 2, 3, 5, 9999])));
        }
        t.push('}');
        let mut lit = literal(b);
        if lit.is_empty() && i + 1 < n {
            lit.push('-');
        }
        t.push_str(&lit);
    }
    let mut vars = n;
    if with_query {
        let k = 1 + b.below(if many { MAX_TEMPLATE_VARS } else { 3 });
        let explode = b.u8() & 1 != 0;
        let specs: Vec<String> = (0..k)
            .map(|j| {
                let nm = format!("q{j}");
                if explode && j + 1 == k {
                    format!("{nm}*")
                } else if b.u8() & 3 == 0 {
                    format!("{nm}:{}", b.pick(&[1, 2, 4]))
                } else {
                    nm
                }
            })
            .collect();
        t.push_str(&format!("{{?{}}}", specs.join(",")));
        vars += k;
    }
    (t, n <= MAX_PATH_EXPRESSIONS && vars <= MAX_TEMPLATE_VARS)
}

/// A uri made by expanding `model` with values that may or may not fit.
fn expanded_uri(b: &mut Bytes<'_>, model: &TemplateModel) -> String {
    let mut s = model.prefix.clone();
    for v in &model.path {
        let value = pieces(b, VALUE_PIECES, 4);
        s.push_str(&if v.kind == Kind::Reserved || b.u8() & 7 == 0 { value } else { value.replace('/', "") });
        s.push_str(&v.literal);
    }
    if let Some((named, explode)) = &model.query {
        let mut pairs: Vec<String> = Vec::new();
        for (name, _) in named {
            if b.u8() & 1 != 0 {
                pairs.push(format!("{name}={}", pieces(b, VALUE_PIECES, 2)));
            }
        }
        if explode.is_some() {
            for _ in 0..b.below(4) {
                pairs.push(format!("{}={}", pieces(b, VALUE_PIECES, 2), pieces(b, VALUE_PIECES, 2)));
            }
        }
        // Any order, sometimes a repeat.
        if pairs.len() > 1 && b.u8() & 1 != 0 {
            let last = pairs.len() - 1;
            pairs.swap(0, last);
        }
        if b.u8() & 7 == 0
            && let Some(first) = pairs.first().cloned()
        {
            pairs.push(first);
        }
        if !pairs.is_empty() || b.u8() & 7 == 0 {
            s.push('?');
            s.push_str(&pairs.join("&"));
        }
    }
    s
}

/// Resource templates (`uritemplate`): `UriTemplate::parse` and `UriTemplate::matches`.
///
/// Input: a mode byte, then a template (any text, or one built from literals, path
/// expressions `{name}` / `{+name}` with or without a prefix modifier, and a query
/// expression `{?a,b:2,rest*}`, that must parse when within the limits), then up to four
/// uris (any text; the template expanded with values good and bad, query pairs in any
/// order with repeats; a piece repeated up to 4000 times, to spend the work budgets).
///
/// Asserts: no panic; a refused template's error points at the brace (or `?`) it is
/// about (or says why not) and names the template; an accepted one has the variables the
/// harness reads in it. A match has one path capture per path variable, in order,
/// contiguous, on character boundaries, and substituting them back into the template
/// gives the uri's path part; every decoded value is the strict decoding of its raw span,
/// within its prefix bound, not a traversal, a `{name}` value holds no `/` or `\`; query
/// variables are defined at most once and in template order; the exploded pairs have
/// non-empty keys. The match is the first valid split a plain search finds (shortest
/// values first) and the query a naive reading gives; a uri the search matches is matched
/// unless the matcher ran out of its budget (then it reports no match); `matches`
/// clears the captures when there is no match.
pub fn uritemplate(data: &[u8]) {
    let mut b = Bytes::new(data);
    let mode = b.u8();
    let structured = mode & 1 != 0;
    let (template, must_parse) = if structured {
        structured_template(&mut b, mode)
    } else if mode & 2 != 0 {
        (String::from_utf8_lossy(b.bytes(96)).into_owned(), false)
    } else {
        (b.text(48), false)
    };
    let tpl = match UriTemplate::parse(&template) {
        Err(e) => {
            check_refusal(&template, &e);
            assert!(!must_parse, "{template:?} was refused: {e}");
            return;
        }
        Ok(t) => t,
    };
    let model = TemplateModel::of(&template);
    let names: Vec<&str> = tpl.var_names().iter().map(|n| &**n).collect();
    let mut want = model.names();
    let mut got: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    assert_eq!(got[..model.path.len()], want[..model.path.len()], "{template:?}");
    got.sort();
    want.sort();
    assert_eq!(got, want, "{template:?}");
    assert!(
        !names.is_empty() && names.len() <= MAX_TEMPLATE_VARS && model.path.len() <= MAX_PATH_EXPRESSIONS
    );

    for _ in 0..1 + b.below(4) {
        let uri = match b.below(8) {
            0 => b.text(64),
            1 => {
                let piece = pieces(&mut b, LITERAL_PIECES, 2);
                let times = b.below(4000);
                format!("{}{}", model.prefix, piece.repeat(times))
            }
            _ => expanded_uri(&mut b, &model),
        };
        check_match(&tpl, &model, &names, &uri);
    }
}

/// A refused template's error points at what it is about and names the template.
fn check_refusal(template: &str, e: &mcp_engine::TemplateError) {
    use mcp_engine::TemplateError as E;
    let bytes = template.as_bytes();
    let at = |offset: usize, c: u8| {
        assert!(bytes.get(offset) == Some(&c), "{e:?} does not point at {:?} in {template:?}", char::from(c))
    };
    match e {
        E::Empty => assert!(template.is_empty()),
        E::TooLong { len } => assert!(*len == template.len() && *len > MAX_TEMPLATE_LEN),
        E::StrayClose { offset } => at(*offset, b'}'),
        E::QueryInLiteral { offset } => at(*offset, b'?'),
        E::QueryNotLast { offset } => {
            at(*offset, b'{');
            at(offset + 1, b'?');
        }
        E::Unclosed { offset }
        | E::NestedOpen { offset }
        | E::EmptyExpression { offset }
        | E::UnsupportedOperator { offset, .. }
        | E::InvalidPrefix { offset }
        | E::ExplodeModifier { offset }
        | E::MultipleVariables { offset }
        | E::InvalidName { offset }
        | E::AdjacentExpressions { offset }
        | E::DuplicateVariable { offset, .. }
        | E::TooManyVariables { offset }
        | E::TooManyPathExpressions { offset } => at(*offset, b'{'),
        E::NoVariables => assert!(!template.contains('{'), "{template:?}"),
        _ => panic!("a template error this harness does not know: {e:?}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("template"), "{msg}");
}

/// Matches `uri` and checks every invariant of the result against the model.
fn check_match(tpl: &UriTemplate, model: &TemplateModel, names: &[&str], uri: &str) {
    let mut caps = Captures::with_capacity(0);
    let matched = tpl.matches(uri, &mut caps);
    let mut decided_caps = Captures::with_capacity(0);
    let decided = tpl.matches_decided(uri, &mut decided_caps);
    assert_eq!(matched, decided == Some(true), "{uri:?}: {decided:?}");
    if !matched {
        assert!(caps.is_empty() && caps.pairs().next().is_none(), "captures left after no match");
        assert!(decided_caps.is_empty(), "captures left after no match");
    } else {
        assert_eq!(caps, decided_caps);
    }
    let (path, query) = model.split(uri);
    let vars: Vec<(u8, (u32, u32), &str)> = caps.vars().collect();
    let n_path = model.path.len();
    if matched {
        assert!(vars.len() >= n_path, "{uri:?}: {vars:?}");
        let mut rebuilt = model.prefix.clone();
        let mut pos = model.prefix.len();
        for (i, (&(var, (start, end), value), v)) in vars.iter().zip(&model.path).enumerate() {
            assert_eq!(usize::from(var), i);
            assert_eq!(start as usize, pos, "captures are not contiguous");
            let raw = path.get(start as usize..end as usize).expect("a capture on character boundaries");
            let want = valid(raw, v.kind, v.max);
            assert_eq!(want.as_deref(), Some(value), "{uri:?}: {:?} value {raw:?}", v.kind);
            assert!(!value.is_empty(), "an empty capture");
            rebuilt.push_str(raw);
            rebuilt.push_str(&v.literal);
            pos = end as usize + v.literal.len();
        }
        assert_eq!(rebuilt, path, "the captures do not expand back to the uri's path");
        let mut last = None;
        for &(var, _, value) in &vars[n_path..] {
            assert!(usize::from(var) >= n_path && last < Some(var), "query variables out of order");
            last = Some(var);
            assert!(!value.split(['/', '\\']).any(|s| s == "." || s == ".."), "traversal {value:?}");
        }
        for (key, value) in caps.pairs() {
            assert!(!key.is_empty(), "an empty key");
            assert!(!format!("{key}/{value}").split(['/', '\\']).any(|s| s == "." || s == ".."));
        }
    }
    let got_query = || -> QueryGot {
        let named = vars[n_path..]
            .iter()
            .map(|&(var, _, value)| (names[usize::from(var)].to_owned(), value.to_owned()))
            .collect();
        (named, caps.pairs().map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
    };
    match (model.reference(path), model.reference_query(query)) {
        (Err(()), _) => {}
        (Ok(Some(split)), Some(q)) => match decided {
            Some(true) => {
                let got: Vec<(u32, u32)> = vars[..n_path].iter().map(|&(_, raw, _)| raw).collect();
                assert_eq!(got, split, "not the first split of {uri:?}");
                assert_eq!(got_query(), q, "not the query of {uri:?}");
            }
            Some(false) => panic!("missed {uri:?} (split {split:?}, query {q:?})"),
            None => {}
        },
        _ => assert!(!matched, "matched {uri:?}, which the reference does not"),
    }
}
