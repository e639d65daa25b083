//! The unit tests of the template language and matcher: one case per rule.

use super::values::{Kind, Rule};
use super::*;

/// Parse a template that must be valid.
fn t(s: &str) -> UriTemplate {
    match UriTemplate::parse(s) {
        Ok(t) => t,
        Err(e) => panic!("{s:?} refused: {e}"),
    }
}

/// What a match captured: (name, decoded value) per defined variable,
/// and the exploded pairs.
type Got = (Vec<(String, String)>, Vec<(String, String)>);

/// Match `uri` and return what it captured, checking the raw spans.
fn mq(tpl: &UriTemplate, uri: &str) -> Option<Got> {
    let mut caps = Captures::with_capacity(8);
    if !tpl.matches(uri, &mut caps) {
        assert!(caps.is_empty() && caps.pairs().next().is_none());
        return None;
    }
    let mut last = None;
    let vars = caps
        .vars()
        .map(|(v, (s, e), value)| {
            assert!(last < Some(v), "not in template order");
            last = Some(v);
            assert!(uri.get(s as usize..e as usize).is_some(), "raw span off a char boundary");
            (tpl.var_names()[usize::from(v)].to_string(), value.to_string())
        })
        .collect();
    let pairs = caps.pairs().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Some((vars, pairs))
}

/// Match `uri` and return the captured variables, or None.
fn m(tpl: &UriTemplate, uri: &str) -> Option<Vec<(String, String)>> {
    mq(tpl, uri).map(|(vars, _)| vars)
}

/// Build the expected capture list.
fn caps(pairs: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    Some(pairs.iter().map(|(a, b)| ((*a).to_string(), (*b).to_string())).collect())
}

/// The expected captures of one uri (None: no match).
type Expected<'a> = Option<&'a [(&'a str, &'a str)]>;

/// One row of a table: a uri and what it captures.
type Row<'a> = (&'a str, Expected<'a>);

/// Run a table of (uri, expected captures) against one template.
fn table(src: &str, rows: &[Row<'_>]) {
    let tpl = t(src);
    for (uri, want) in rows {
        assert_eq!(m(&tpl, uri), want.and_then(caps), "{src} vs {uri:?}");
    }
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
    assert_eq!(m(&tpl, "file:///a:b@c!$&'()*+,;=[]?#d"), caps(&[("path", "a:b@c!$&'()*+,;=[]?#d")]));
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
    // A value that breaks its rule is skipped like a literal that does
    // not follow: `a` = `..` is refused, `..x.` is not.
    let tpl = t("{a}x{b}");
    assert_eq!(m(&tpl, "..x.x1"), caps(&[("a", "..x."), ("b", "1")]));
}

#[test]
fn utf8_literals_and_encoded_values() {
    let tpl = t("é/{a}é{b}");
    assert_eq!(m(&tpl, "é/%C3%A9é%c3%a9"), caps(&[("a", "é"), ("b", "é")]));
    assert_eq!(m(&tpl, "é/%C3%B1é%F0%9F%98%80"), caps(&[("a", "ñ"), ("b", "😀")]));
    // Expansion percent-encodes non-ASCII: a raw one is no match.
    assert_eq!(m(&tpl, "é/ñéü"), None);
}

#[test]
fn captures_cleared() {
    let tpl = t("a/{x}");
    let mut c = Captures::with_capacity(0);
    assert!(tpl.matches("a/b", &mut c));
    assert_eq!(c.vars().collect::<Vec<_>>(), [(0, (2, 3), "b")]);
    assert!(!tpl.matches("zz", &mut c));
    assert!(c.is_empty());
    let tpl = t("a{?k*}");
    assert!(tpl.matches("a?x=1", &mut c));
    assert_eq!(c.pairs().count(), 1);
    assert!(!tpl.matches("a?x", &mut c));
    assert!(c.is_empty() && c.pairs().next().is_none());
}

/// Rule 1: a simple variable holds unreserved characters and escapes
/// only, is never `.` or `..`, and holds no `/` or `\`, raw or encoded;
/// escapes are decoded strictly.
#[test]
fn simple_variable_rules() {
    let mut rows: Vec<(String, Expected<'_>)> = Vec::new();
    // Every raw character simple expansion would have encoded.
    for c in ":/?#[]@!$&'()*+,;= \"<>\\^`{|}".chars() {
        rows.push((format!("file:///a/x{c}y"), None));
    }
    for (uri, want) in [
        ("file:///a/.", None),
        ("file:///a/..", None),
        ("file:///a/%2e", None),
        ("file:///a/%2E%2e", None),
        ("file:///a/.%2e", None),
        ("file:///a/%2F", None),
        ("file:///a/x%2fy", None),
        ("file:///a/x%5Cy", None),
        ("file:///a/%", None),
        ("file:///a/x%4", None),
        ("file:///a/x%zz", None),
        ("file:///a/x%+1", None),
        ("file:///a/%FF", None),
        ("file:///a/%C3", None),
        ("file:///a/%C3x", None),
        ("file:///a/%C0%AF", None),
        ("file:///a/%ED%A0%80", None),
        ("file:///a/é", None),
        ("file:///a/", None),
        ("file:///a/...", Some(&[("name", "...")][..])),
        ("file:///a/.x", Some(&[("name", ".x")][..])),
        ("file:///a/a.b-c_d~e", Some(&[("name", "a.b-c_d~e")][..])),
        ("file:///a/%41%3F%23%20", Some(&[("name", "A?# ")][..])),
        ("file:///a/%C3%A9", Some(&[("name", "é")][..])),
    ] {
        rows.push((uri.to_owned(), want));
    }
    let tpl = t("file:///a/{name}");
    for (uri, want) in &rows {
        assert_eq!(m(&tpl, uri), want.and_then(caps), "{uri:?}");
    }
}

/// Rule 1 for `{+name}`: reserved characters pass raw, but no value has
/// a `.` or `..` segment, raw or encoded.
#[test]
fn reserved_variable_rules() {
    table(
        "file:///{+path}",
        &[
            ("file:///..", None),
            ("file:///.", None),
            ("file:///../etc/passwd", None),
            ("file:///a/../b", None),
            ("file:///a/./b", None),
            ("file:///a/..", None),
            ("file:///a/%2e%2e/b", None),
            ("file:///a%2F..%2Fb", None),
            ("file:///a%5C..%5Cb", None),
            ("file:///%2E", None),
            ("file:///a/%zz", None),
            ("file:///a\\b", None),
            ("file:///a b", None),
            ("file:///é", None),
            ("file:///a/.../b", Some(&[("path", "a/.../b")])),
            ("file:///a/..b/.c", Some(&[("path", "a/..b/.c")])),
            ("file:///a//b/", Some(&[("path", "a//b/")])),
            ("file:///a%20b", Some(&[("path", "a b")])),
            ("file:///a%2Fb", Some(&[("path", "a/b")])),
        ],
    );
}

/// Prefix modifiers bound the decoded value in characters.
#[test]
fn prefix_modifier() {
    let e3 = "%C3%A9".repeat(3);
    let e4 = "%C3%A9".repeat(4);
    let rows: &[Row<'_>] = &[
        ("x/abc", Some(&[("id", "abc")])),
        ("x/a", Some(&[("id", "a")])),
        ("x/abcd", None),
        (&format!("x/{e3}"), Some(&[("id", "ééé")])),
        (&format!("x/{e4}"), None),
    ];
    table("x/{id:3}", rows);
    table(
        "x/{+p:4}/z",
        &[
            ("x/a/b/z", Some(&[("p", "a/b")])),
            ("x/a/bc/z", Some(&[("p", "a/bc")])),
            ("x/a/bcd/z", None),
            ("x/a/b/c/z", None),
        ],
    );
    assert_eq!(m(&t("{id:9999}"), &"a".repeat(9999)).map(|c| c[0].1.len()), Some(9999));
    assert_eq!(m(&t("{id:9999}"), &"a".repeat(10_000)), None);
}

/// The query expression: optional variables in any order, each once.
#[test]
fn query_expression() {
    table(
        "s{?q,limit}",
        &[
            ("s", Some(&[])),
            ("s?q=a", Some(&[("q", "a")])),
            ("s?limit=5", Some(&[("limit", "5")])),
            ("s?q=a&limit=5", Some(&[("q", "a"), ("limit", "5")])),
            ("s?limit=5&q=a", Some(&[("q", "a"), ("limit", "5")])),
            ("s?q=", Some(&[("q", "")])),
            ("s?q=a%20b%2Fc", Some(&[("q", "a b/c")])),
            ("s?q=a&q=b", None),
            ("s?", None),
            ("s?q", None),
            ("s?&q=a", None),
            ("s?q=a&", None),
            ("s?z=1", None),
            ("s?Q=1", None),
            ("s?q=a=b", None),
            ("s?q=a b", None),
            ("s?q=a/b", None),
            ("s?q=a#f", None),
            ("s?q=%zz", None),
            ("s?q=%2e%2e", None),
            ("s?q=..", None),
            ("s?q=x%2F..%2Fy", None),
            ("t?q=a", None),
            ("s/?q=a", None),
        ],
    );
    table("s{?q:2}", &[("s?q=ab", Some(&[("q", "ab")])), ("s?q=abc", None)]);
    // A path before the query: its values never hold a raw `?`.
    table(
        "file:///{+path}{?rev}",
        &[
            ("file:///a/b?rev=3", Some(&[("path", "a/b"), ("rev", "3")])),
            ("file:///a/b", Some(&[("path", "a/b")])),
            ("file:///a%3Fb", Some(&[("path", "a?b")])),
            ("file:///a?b", None),
            ("file:///?rev=3", None),
            ("file:///a/..?rev=3", None),
        ],
    );
    table("db://{t}/rows{?id}", &[("db://u/rows?id=1", Some(&[("t", "u"), ("id", "1")]))]);
}

/// `{?keys*}` collects the pairs that name no other variable.
#[test]
fn query_explode() {
    let tpl = t("s{?q,rest*}");
    let got = |uri: &str| mq(&tpl, uri);
    let pairs = |p: &[(&str, &str)]| p.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    assert_eq!(got("s"), Some((vec![], vec![])));
    assert_eq!(
        got("s?x=1&q=2&y=3&x=4"),
        Some((caps(&[("q", "2")]).unwrap_or_default(), pairs(&[("x", "1"), ("y", "3"), ("x", "4")])))
    );
    assert_eq!(got("s?%41%20=%C3%A9&e="), Some((vec![], pairs(&[("A ", "é"), ("e", "")]))));
    assert_eq!(got("s?q=1&q=2"), None);
    assert_eq!(got("s?=1"), None);
    assert_eq!(got("s?x"), None);
    assert_eq!(got("s?x=%"), None);
    assert_eq!(got("s?%zz=1"), None);
    assert_eq!(got("s?..=1"), None);
    assert_eq!(got("s?x=.."), None);
    assert_eq!(got("s?x=a/b"), None);
    // The exploded variable itself is never defined by name.
    assert_eq!(got("s?rest=1"), Some((vec![], pairs(&[("rest", "1")]))));
    let many = |n: usize| format!("s?{}", (0..n).map(|i| format!("k{i}=v")).collect::<Vec<_>>().join("&"));
    assert_eq!(got(&many(MAX_QUERY_PAIRS)).map(|(_, p)| p.len()), Some(MAX_QUERY_PAIRS));
    assert_eq!(got(&many(MAX_QUERY_PAIRS + 1)), None);
}

#[test]
fn refusals() {
    use TemplateError as E;
    let e = |s: &str| UriTemplate::parse(s).err();
    let rows: &[(&str, Option<E>)] = &[
        ("", Some(E::Empty)),
        ("a/{id", Some(E::Unclosed { offset: 2 })),
        ("a/{", Some(E::Unclosed { offset: 2 })),
        ("a}/{id}", Some(E::StrayClose { offset: 1 })),
        ("a/{id}}", Some(E::StrayClose { offset: 6 })),
        ("a/{i{d}", Some(E::NestedOpen { offset: 4 })),
        ("a/{}", Some(E::EmptyExpression { offset: 2 })),
        ("a/{id:0}", Some(E::InvalidPrefix { offset: 2 })),
        ("a/{id:}", Some(E::InvalidPrefix { offset: 2 })),
        ("a/{id:01}", Some(E::InvalidPrefix { offset: 2 })),
        ("a/{id:10000}", Some(E::InvalidPrefix { offset: 2 })),
        ("a/{id:+3}", Some(E::InvalidPrefix { offset: 2 })),
        ("a/{id:3x}", Some(E::InvalidPrefix { offset: 2 })),
        ("a{?id:3*}", Some(E::InvalidPrefix { offset: 1 })),
        ("a/{id*}", Some(E::ExplodeModifier { offset: 2 })),
        ("a/{+id*}", Some(E::ExplodeModifier { offset: 2 })),
        ("a{?x*,y*}", Some(E::ExplodeModifier { offset: 1 })),
        ("a/{a,b}", Some(E::MultipleVariables { offset: 2 })),
        ("a/{+a,b}", Some(E::MultipleVariables { offset: 2 })),
        ("a{?a,,b}", Some(E::InvalidName { offset: 1 })),
        ("a{?}", Some(E::InvalidName { offset: 1 })),
        ("a{?a*:3}", Some(E::InvalidName { offset: 1 })),
        ("{a}{b}", Some(E::AdjacentExpressions { offset: 3 })),
        ("x/{a}{+b}", Some(E::AdjacentExpressions { offset: 5 })),
        ("x/{a:2}{b}", Some(E::AdjacentExpressions { offset: 7 })),
        ("x{?a}/y", Some(E::QueryNotLast { offset: 1 })),
        ("x{?a}{b}", Some(E::QueryNotLast { offset: 1 })),
        ("x{?a}{?b}", Some(E::QueryNotLast { offset: 1 })),
        ("x?y=1{?a}", Some(E::QueryInLiteral { offset: 1 })),
        ("x/{a}?{?b}", Some(E::QueryInLiteral { offset: 5 })),
        ("{a}/{b}/{a}", Some(E::DuplicateVariable { offset: 8, name: "a".into() })),
        ("{a}/{?a}", Some(E::DuplicateVariable { offset: 4, name: "a".into() })),
        ("x{?a,b,a}", Some(E::DuplicateVariable { offset: 1, name: "a".into() })),
        ("file:///etc/hosts", Some(E::NoVariables)),
        // Accepted forms, for contrast.
        ("x/{a}{?b}", None),
        ("{?a}", None),
        ("x{?a,b:3,c*}", None),
        ("x/{+a:5}/y", None),
        ("x/{a}#frag{?b}", None),
    ];
    for (src, want) in rows {
        assert_eq!(e(src), *want, "{src:?}");
    }
    for op in "#./;&=,!@|".chars() {
        assert_eq!(e(&format!("a/{{{op}id}}")), Some(E::UnsupportedOperator { offset: 2, operator: op }));
    }
    for bad in ["+", "++a", "+.a", "a.", "a..b", "a b", "a-b", "é", "a*b", "$x", " a", "?a b"] {
        assert_eq!(e(&format!("a/{{{bad}}}")), Some(E::InvalidName { offset: 2 }), "{bad:?}");
    }
    let long = format!("a/{{x}}/{}", "b".repeat(MAX_TEMPLATE_LEN));
    assert_eq!(e(&long), Some(E::TooLong { len: long.len() }));
    let ok = format!("{{x}}{}", "b".repeat(MAX_TEMPLATE_LEN - 3));
    assert!(UriTemplate::parse(&ok).is_ok());
    assert!(UriTemplate::parse(&format!("a/{{{}}}", "n".repeat(64))).is_ok());
    assert_eq!(e(&format!("a/{{{}}}", "n".repeat(65))), Some(E::InvalidName { offset: 2 }));
    // Every message is non-empty and names the template.
    for err in [
        E::Empty,
        E::TooLong { len: 3000 },
        E::Unclosed { offset: 1 },
        E::StrayClose { offset: 1 },
        E::NestedOpen { offset: 1 },
        E::EmptyExpression { offset: 1 },
        E::UnsupportedOperator { offset: 1, operator: '#' },
        E::InvalidPrefix { offset: 1 },
        E::ExplodeModifier { offset: 1 },
        E::MultipleVariables { offset: 1 },
        E::InvalidName { offset: 1 },
        E::AdjacentExpressions { offset: 1 },
        E::QueryNotLast { offset: 1 },
        E::QueryInLiteral { offset: 1 },
        E::DuplicateVariable { offset: 1, name: "a".into() },
        E::TooManyVariables { offset: 1 },
        E::TooManyPathExpressions { offset: 1 },
        E::NoVariables,
    ] {
        let msg = err.to_string();
        assert!(msg.contains("template"), "{msg}");
    }
}

/// 16 path expressions and 32 variables are the limits.
#[test]
fn limits() {
    use TemplateError as E;
    let path = |n: usize| (0..n).map(|i| format!("/{{p{i}}}")).collect::<String>();
    let query = |n: usize| (0..n).map(|i| format!("q{i}")).collect::<Vec<_>>().join(",");
    let max =
        format!("{}{{?{}}}", path(MAX_PATH_EXPRESSIONS), query(MAX_TEMPLATE_VARS - MAX_PATH_EXPRESSIONS));
    let tpl = t(&max);
    assert_eq!(tpl.var_names().len(), MAX_TEMPLATE_VARS);
    let uri = format!(
        "{}?{}",
        (0..MAX_PATH_EXPRESSIONS).map(|i| format!("/{i}")).collect::<String>(),
        (0..MAX_TEMPLATE_VARS - MAX_PATH_EXPRESSIONS)
            .map(|i| format!("q{i}={i}"))
            .collect::<Vec<_>>()
            .join("&")
    );
    assert_eq!(m(&tpl, &uri).map(|c| c.len()), Some(MAX_TEMPLATE_VARS));
    let over = path(MAX_PATH_EXPRESSIONS + 1);
    let at = over.rfind('{').unwrap_or_default();
    assert_eq!(UriTemplate::parse(&over).err(), Some(E::TooManyPathExpressions { offset: at }));
    let over =
        format!("{}{{?{}}}", path(MAX_PATH_EXPRESSIONS), query(MAX_TEMPLATE_VARS - MAX_PATH_EXPRESSIONS + 1));
    let at = over.rfind('{').unwrap_or_default();
    assert_eq!(UriTemplate::parse(&over).err(), Some(E::TooManyVariables { offset: at }));
    let over = format!("x{{?{}}}", query(MAX_TEMPLATE_VARS + 1));
    assert_eq!(UriTemplate::parse(&over).err(), Some(E::TooManyVariables { offset: 1 }));
}

/// Unbounded reference: the first split in order of shortest values
/// left to right whose every value is valid, by plain recursion, with
/// its own naive reading of the value rules.
fn reference(tpl: &UriTemplate, uri: &str, k: usize, pos: usize) -> Option<Vec<(u32, u32)>> {
    let seg = &tpl.segments[k];
    let last = k + 1 == tpl.segments.len();
    for end in pos + 1..=uri.len() {
        let Some(value) = uri.get(pos..end) else { continue };
        if !uri.as_bytes()[end..].starts_with(seg.literal.as_bytes()) || !naive_valid(value, seg.rule) {
            continue;
        }
        let next = end + seg.literal.len();
        let rest = if last { (next == uri.len()).then(Vec::new) } else { reference(tpl, uri, k + 1, next) };
        if let Some(mut rest) = rest {
            rest.insert(0, (pos as u32, end as u32));
            return Some(rest);
        }
    }
    None
}

/// The value rules, read naively.
fn naive_valid(raw: &str, rule: Rule) -> bool {
    let ok_raw = |c: char| {
        c.is_ascii_alphanumeric()
            || "-._~%".contains(c)
            || (rule.kind == Kind::Reserved && ":/?#[]@!$&'()*+,;=".contains(c))
    };
    if !raw.chars().all(ok_raw) {
        return false;
    }
    let mut bytes = Vec::new();
    let mut it = raw.split('%');
    bytes.extend(it.next().unwrap_or_default().bytes());
    for piece in it {
        let Some(hex) = piece.get(..2) else { return false };
        let Ok(b) = u8::from_str_radix(hex, 16) else { return false };
        if hex.starts_with('+') {
            return false;
        }
        bytes.push(b);
        bytes.extend(piece[2..].bytes());
    }
    let Ok(value) = String::from_utf8(bytes) else { return false };
    if rule.max_chars.is_some_and(|n| value.chars().count() > usize::from(n)) {
        return false;
    }
    let dots = |s: &str| s == "." || s == "..";
    match rule.kind {
        Kind::Simple => !dots(&value) && !value.contains('/') && !value.contains('\\'),
        _ => !value.split(['/', '\\']).any(dots),
    }
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
        "{a:2}-{+b:3}",
        "{+a:2}.{b}",
    ];
    let alphabet = ["a", "/", "-", ".", "%2e", "%2F", "%"];
    let mut uris = vec![String::new()];
    let mut frontier = vec![String::new()];
    for _ in 0..5 {
        let mut next = Vec::new();
        for u in &frontier {
            for piece in alphabet {
                next.push(format!("{u}{piece}"));
            }
        }
        uris.extend(next.iter().cloned());
        frontier = next;
    }
    let mut matched = 0;
    for src in templates {
        let tpl = t(src);
        for uri in &uris {
            let want = uri.strip_prefix(&*tpl.prefix).and_then(|_| reference(&tpl, uri, 0, tpl.prefix.len()));
            let mut c = Captures::default();
            let got = tpl.matches(uri, &mut c).then(|| c.vars().map(|(_, raw, _)| raw).collect::<Vec<_>>());
            assert_eq!(got, want, "{src} vs {uri:?}");
            matched += usize::from(got.is_some());
        }
    }
    assert!(matched > 1000, "{matched}");
}

/// Run with a fresh budget; return the outcome and the budget left.
fn run(tpl: &UriTemplate, uri: &str) -> (Outcome, Budget) {
    let mut c = Captures::default();
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
    // It stopped within its allowance.
    assert!(left.steps == 0 || left.bytes == 0, "{left:?}");
    let mut c = Captures::default();
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

/// Regression: decoding candidate values is work like scanning; a uri
/// whose every complete split has an invalid value spends the budget
/// instead of decoding O(n^2) bytes.
#[test]
fn invalid_values_are_charged_to_the_budget() {
    let tpl = t("{+a}-{b}");
    let uri = format!("{}%", "x-".repeat(5_000));
    let (outcome, left) = run(&tpl, &uri);
    assert_eq!(outcome, Outcome::Exhausted);
    assert_eq!(left.bytes, 0);
    assert!(left.steps > MATCH_STEP_BUDGET / 2, "{left:?}");
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
    // A long query is read once.
    let tpl = t("s{?k*}");
    let uri = format!("s?{}", "k=v&".repeat(MAX_QUERY_PAIRS - 1) + &format!("k={}", "v".repeat(10_000)));
    assert_eq!(run(&tpl, &uri).0, Outcome::Matched);
}
