//! uritemplate: resource template parsing and matching.

use mcp_engine::internal::{Captures, MAX_TEMPLATE_LEN, MAX_TEMPLATE_VARS, UriTemplate};

use crate::common::Bytes;

/// A parsed template as the harness reads it: the literal prefix, then per variable
/// whether it is `{+name}`, its name, and the literal after it.
struct TemplateModel {
    prefix: String,
    vars: Vec<(bool, String, String)>,
}

impl TemplateModel {
    /// Reads a template the engine accepted.
    fn of(template: &str) -> Self {
        let mut parts = template.split('{');
        let prefix = parts.next().unwrap_or_default().to_owned();
        let vars = parts
            .map(|p| {
                let (body, literal) = p.split_once('}').unwrap_or_else(|| panic!("accepted {template:?}"));
                let (reserved, name) = match body.strip_prefix('+') {
                    Some(n) => (true, n),
                    None => (false, body),
                };
                (reserved, name.to_owned(), literal.to_owned())
            })
            .collect();
        Self { prefix, vars }
    }

    /// Fills the variables with `values`.
    fn expand(&self, values: &[String]) -> String {
        let mut s = self.prefix.clone();
        for ((_, _, literal), v) in self.vars.iter().zip(values) {
            s.push_str(v);
            s.push_str(literal);
        }
        s
    }

    /// The first split (shortest captures, left to right), by plain search; `Err` when it
    /// takes more than `work` steps.
    fn reference(&self, uri: &str) -> Result<Option<Vec<(u32, u32)>>, ()> {
        fn go(
            m: &TemplateModel,
            uri: &[u8],
            k: usize,
            pos: usize,
            work: &mut u32,
        ) -> Result<Option<Vec<(u32, u32)>>, ()> {
            let (reserved, _, literal) = &m.vars[k];
            let last = k + 1 == m.vars.len();
            for end in pos + 1..=uri.len() {
                *work = work.checked_sub(1).ok_or(())?;
                if !reserved && uri[end - 1] == b'/' {
                    break;
                }
                if !uri[end..].starts_with(literal.as_bytes()) {
                    continue;
                }
                let next = end + literal.len();
                let rest =
                    if last { (next == uri.len()).then(Vec::new) } else { go(m, uri, k + 1, next, work)? };
                if let Some(mut rest) = rest {
                    rest.insert(0, (pos as u32, end as u32));
                    return Ok(Some(rest));
                }
            }
            Ok(None)
        }
        if !uri.starts_with(&self.prefix) {
            return Ok(None);
        }
        let mut work = 200_000;
        go(self, uri.as_bytes(), 0, self.prefix.len(), &mut work)
    }
}

/// Literal pieces and values the structured templates and uris are made of.
const URI_PIECES: &[&str] =
    &["/", "-", "a", "x", ".", "é", "//", "a/", "://", "?q=", "😀", "-a", "x-", "%2F", "ab", "\u{0}", " "];

fn uri_piece_text(b: &mut Bytes<'_>, max: usize) -> String {
    (0..b.below(max + 1)).map(|_| b.pick(URI_PIECES)).collect()
}

/// Resource templates (`uritemplate`): `UriTemplate::parse` and `UriTemplate::matches`.
///
/// Input: a mode byte, then a template (any text, or one built from literals and `{name}`
/// / `{+name}` expressions that must parse), then up to four uris (any text; the
/// template expanded with values that may or may not fit; a piece repeated up to 4000
/// times, to spend the work budgets).
///
/// Asserts: no panic; a refused template's error points at the brace it is about (or
/// says why not) and names the template; an accepted one has the variables the harness
/// reads in it; a match has one capture per variable, in order, non-empty, `{name}`
/// captures without `/`, on character boundaries, and substituting the captured values
/// back into the template gives the uri; the match is the first split a plain search
/// finds (shortest captures first), and a uri the search matches is matched unless the
/// matcher ran out of its budget (then it reports no match); `matches` clears the
/// captures when there is no match.
pub fn uritemplate(data: &[u8]) {
    use mcp_engine::TemplateError as E;
    let mut b = Bytes::new(data);
    let mode = b.u8();
    let structured = mode & 1 != 0;
    let template = if structured {
        let n = 1 + b.below(if mode & 2 != 0 { MAX_TEMPLATE_VARS + 2 } else { 4 });
        let mut t = uri_piece_text(&mut b, 3);
        let names = ["id", "a", "b.c", "x_1", "rest", "v"];
        for i in 0..n {
            t.push('{');
            if b.u8() & 1 != 0 {
                t.push('+');
            }
            t.push_str(names[i % names.len()]);
            if i >= names.len() {
                t.push_str(&i.to_string());
            }
            t.push('}');
            let mut literal = uri_piece_text(&mut b, 3);
            if literal.is_empty() && i + 1 < n {
                literal.push('-');
            }
            t.push_str(&literal);
        }
        t
    } else if mode & 2 != 0 {
        String::from_utf8_lossy(b.bytes(96)).into_owned()
    } else {
        b.text(48)
    };
    let parsed = UriTemplate::parse(&template);
    let tpl = match parsed {
        Err(e) => {
            let bytes = template.as_bytes();
            let brace = |offset: usize, c: u8| {
                assert!(
                    bytes.get(offset) == Some(&c),
                    "{e:?} does not point at {:?} in {template:?}",
                    char::from(c)
                )
            };
            match &e {
                E::Empty => assert!(template.is_empty()),
                E::TooLong { len } => assert!(*len == template.len() && *len > MAX_TEMPLATE_LEN),
                E::StrayClose { offset } => brace(*offset, b'}'),
                E::Unclosed { offset }
                | E::NestedOpen { offset }
                | E::EmptyExpression { offset }
                | E::UnsupportedOperator { offset, .. }
                | E::PrefixModifier { offset }
                | E::ExplodeModifier { offset }
                | E::MultipleVariables { offset }
                | E::InvalidName { offset }
                | E::AdjacentExpressions { offset }
                | E::DuplicateVariable { offset, .. }
                | E::TooManyVariables { offset } => brace(*offset, b'{'),
                E::NoVariables => assert!(!template.contains('{'), "{template:?}"),
                _ => panic!("a template error this harness does not know: {e:?}"),
            }
            let msg = e.to_string();
            assert!(msg.contains("template"), "{msg}");
            let vars = template.matches('{').count();
            assert!(!structured || vars > MAX_TEMPLATE_VARS, "{template:?} was refused: {e}");
            return;
        }
        Ok(t) => t,
    };
    let model = TemplateModel::of(&template);
    let names: Vec<&str> = tpl.var_names().iter().map(|n| &**n).collect();
    let want: Vec<&str> = model.vars.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(names, want, "{template:?}");
    assert!(!names.is_empty() && names.len() <= MAX_TEMPLATE_VARS);

    for _ in 0..1 + b.below(4) {
        let uri = match b.below(8) {
            0 => b.text(64),
            1 => {
                let piece = uri_piece_text(&mut b, 2);
                let times = b.below(4000);
                format!("{}{}", model.prefix, piece.repeat(times))
            }
            _ => {
                let values: Vec<String> = model
                    .vars
                    .iter()
                    .map(|(reserved, _, _)| {
                        let v = uri_piece_text(&mut b, 4);
                        if *reserved || b.u8() & 7 == 0 { v } else { v.replace('/', "") }
                    })
                    .collect();
                model.expand(&values)
            }
        };
        let mut caps = Captures::new();
        let _ = caps.push((9, 9, 9));
        let matched = tpl.matches(&uri, &mut caps);
        let mut decided_caps = Captures::new();
        let decided = tpl.matches_decided(&uri, &mut decided_caps);
        assert_eq!(matched, decided == Some(true), "{template:?} / {uri:?}: {decided:?}");
        if !matched {
            assert!(caps.is_empty(), "captures left after no match");
        } else {
            assert_eq!(caps, decided_caps);
            assert_eq!(caps.len(), model.vars.len());
            let mut rebuilt = model.prefix.clone();
            let mut pos = model.prefix.len();
            for (i, (&(var, start, end), (reserved, _, literal))) in caps.iter().zip(&model.vars).enumerate()
            {
                assert_eq!(usize::from(var), i);
                assert_eq!(start as usize, pos, "captures are not contiguous");
                let value = uri.get(start as usize..end as usize).expect("a capture on character boundaries");
                assert!(!value.is_empty(), "an empty capture");
                assert!(*reserved || !value.contains('/'), "{{name}} captured {value:?}");
                rebuilt.push_str(value);
                rebuilt.push_str(literal);
                pos = end as usize + literal.len();
            }
            assert_eq!(rebuilt, uri, "the captures do not expand back to the uri");
        }
        match model.reference(&uri) {
            Err(()) => {}
            Ok(Some(split)) => match decided {
                Some(true) => {
                    let got: Vec<(u32, u32)> = caps.iter().map(|&(_, s, e)| (s, e)).collect();
                    assert_eq!(got, split, "not the first split of {uri:?} by {template:?}");
                }
                Some(false) => panic!("{template:?} missed {uri:?} (split {split:?})"),
                None => {}
            },
            Ok(None) => assert!(!matched, "{template:?} matched {uri:?} with no split"),
        }
    }
}
