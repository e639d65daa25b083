//! Navigation of a simd-json tape and writing JSON into a byte buffer.
//!
//! The engine parses each frame with `simd_json::fill_tape` into a reused tape; these
//! helpers read that tape without building a value tree, and write JSON text without
//! allocating (the output `Vec` keeps its capacity).

use simd_json::{Node, StaticNode};

/// The number of tape nodes below node `i` (0 for scalars).
pub(crate) fn children(nodes: &[Node<'_>], i: usize) -> usize {
    match nodes.get(i) {
        Some(Node::Object { count, .. } | Node::Array { count, .. }) => *count,
        _ => 0,
    }
}

/// The index of the value of `key` in the object at node `obj` (first occurrence).
pub(crate) fn get(nodes: &[Node<'_>], obj: usize, key: &str) -> Option<usize> {
    let Some(Node::Object { len, .. }) = nodes.get(obj) else { return None };
    let mut i = obj + 1;
    for _ in 0..*len {
        let k = nodes.get(i)?;
        let v = i + 1;
        if matches!(k, Node::String(s) if *s == key) {
            return Some(v);
        }
        i = v + 1 + children(nodes, v);
    }
    None
}

/// The indexes of the values of `keys` in the object at node `obj` (each the first
/// occurrence, like [`get`]), found in one pass over its members.
pub(crate) fn members<const K: usize>(nodes: &[Node<'_>], obj: usize, keys: [&str; K]) -> [Option<usize>; K] {
    let mut found = [None; K];
    let Some(Node::Object { len, .. }) = nodes.get(obj) else { return found };
    let mut i = obj + 1;
    for _ in 0..*len {
        let Some(k) = nodes.get(i) else { break };
        let v = i + 1;
        if let Node::String(s) = k
            && let Some(j) = keys.iter().position(|key| key == s)
            && found[j].is_none()
        {
            found[j] = Some(v);
        }
        i = v + 1 + children(nodes, v);
    }
    found
}

/// Objects of up to this many members are checked for a repeated name pair by pair (at
/// most 28 comparisons, no buffer); larger ones are sorted in [`Names`]' buffer.
const PAIRWISE_MAX: usize = 8;

/// Finds repeated member names: one value for one name.
///
/// Bound: one pass over the nodes checked, plus, per object, either at most 28 string
/// comparisons (up to [`PAIRWISE_MAX`] members) or a sort of its members by (first eight
/// bytes, length), with full comparisons only between keys that agree on both. Every
/// comparison reads at most the shorter key, and each key meets O(log n) others in the
/// sort, so a frame of `B` bytes costs O(B log B) whatever its keys (100k keys sharing a
/// long prefix included). The buffer holds one 16-byte entry per member of the largest
/// object checked so far (at most `B / 4`: a member takes at least `"":0,`); it is
/// reserved up front and only grows for an object larger than that reservation.
pub(crate) struct Names {
    /// `(first eight bytes big-endian, length, tape index of the key)` per member.
    keys: Vec<(u64, u32, u32)>,
}

impl Names {
    /// A checker whose buffer holds `members` entries without growing.
    pub(crate) fn with_capacity(members: usize) -> Self {
        Self { keys: Vec::with_capacity(members) }
    }

    /// A member name repeated in any object at or below node `root`, if one is.
    pub(crate) fn repeated_below<'t>(&mut self, nodes: &[Node<'t>], root: usize) -> Option<&'t str> {
        let end = (root + 1 + children(nodes, root)).min(nodes.len());
        let mut j = root;
        // An object that can repeat a name has two members: it takes five nodes (itself,
        // two keys, two values), so none starts in the last four.
        while j + 5 <= end {
            if let Node::Object { len, .. } = nodes[j]
                && len > 1
                && let Some(name) = self.repeated_in(nodes, j, len)
            {
                return Some(name);
            }
            j += 1;
        }
        None
    }

    /// A member name the object at node `obj` itself repeats (objects below it are not
    /// looked at), if one is.
    #[cfg(test)]
    pub(crate) fn repeated_at<'t>(&mut self, nodes: &[Node<'t>], obj: usize) -> Option<&'t str> {
        match nodes.get(obj) {
            Some(Node::Object { len, .. }) if *len > 1 => self.repeated_in(nodes, obj, *len),
            _ => None,
        }
    }

    fn repeated_in<'t>(&mut self, nodes: &[Node<'t>], obj: usize, len: usize) -> Option<&'t str> {
        let name = |k: usize| match nodes.get(k) {
            Some(Node::String(s)) => *s,
            _ => "",
        };
        if len == 2 {
            // The most common case, without the arrays below.
            let (a, b) = (name(obj + 1), name(obj + 3 + children(nodes, obj + 2)));
            return (fingerprint(a) == fingerprint(b) && a == b).then_some(a);
        }
        if len <= PAIRWISE_MAX {
            // Each key against those before it, by fingerprint first: the strings are
            // compared only when length, first and last byte agree.
            let mut prints = [0u64; PAIRWISE_MAX];
            let mut at = [0usize; PAIRWISE_MAX];
            let mut k = obj + 1;
            for m in 0..len {
                let s = name(k);
                let print = fingerprint(s);
                for p in 0..m {
                    if prints[p] == print && name(at[p]) == s {
                        return Some(s);
                    }
                }
                prints[m] = print;
                at[m] = k;
                let v = k + 1;
                k = v + 1 + children(nodes, v);
            }
            return None;
        }
        self.keys.clear();
        // At most once per larger object than any before: one allocation, not a doubling.
        self.keys.reserve(len);
        let mut k = obj + 1;
        for _ in 0..len {
            let s = name(k);
            let mut head = [0u8; 8];
            let n = s.len().min(8);
            head[..n].copy_from_slice(&s.as_bytes()[..n]);
            self.keys.push((u64::from_be_bytes(head), s.len() as u32, k as u32));
            let v = k + 1;
            k = v + 1 + children(nodes, v);
        }
        self.keys.sort_unstable_by(|a, b| {
            (a.0, a.1).cmp(&(b.0, b.1)).then_with(|| name(a.2 as usize).cmp(name(b.2 as usize)))
        });
        self.keys
            .windows(2)
            .find(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1) && name(w[0].2 as usize) == name(w[1].2 as usize))
            .map(|w| name(w[0].2 as usize))
    }
}

/// The indexes of the values of the members `slot` picks in the object at node `obj`:
/// `slot(name)` is where a member's value goes (`None`: a member nobody reads). A second
/// member for one slot is an error (its name). One pass; a `match` on the name is cheaper
/// than comparing it with each key in turn.
#[inline(always)]
pub(crate) fn members_by<'t, const K: usize>(
    nodes: &[Node<'t>],
    obj: usize,
    slot: impl Fn(&str) -> Option<usize>,
) -> Result<[Option<usize>; K], &'t str> {
    let mut found = [None; K];
    let Some(Node::Object { len, .. }) = nodes.get(obj) else { return Ok(found) };
    let mut i = obj + 1;
    for _ in 0..*len {
        let Some(k) = nodes.get(i) else { break };
        let v = i + 1;
        if let Node::String(s) = k
            && let Some(f) = slot(s).and_then(|j| found.get_mut(j))
        {
            if f.is_some() {
                return Err(s);
            }
            *f = Some(v);
        }
        i = v + 1 + children(nodes, v);
    }
    Ok(found)
}

/// Equal for equal strings: the length, the first and the last byte.
#[inline]
fn fingerprint(s: &str) -> u64 {
    let b = s.as_bytes();
    match b {
        [] => 0,
        [first, .., last] => (b.len() as u64) << 16 | u64::from(*first) << 8 | u64::from(*last),
        [only] => 1 << 16 | u64::from(*only) << 8 | u64::from(*only),
    }
}

/// The string at node `i`.
pub(crate) fn str_at<'t>(nodes: &[Node<'t>], i: usize) -> Option<&'t str> {
    match nodes.get(i) {
        Some(Node::String(s)) => Some(s),
        _ => None,
    }
}

/// Whether node `i` is an object.
pub(crate) fn is_object(nodes: &[Node<'_>], i: usize) -> bool {
    matches!(nodes.get(i), Some(Node::Object { .. }))
}

/// Writes `s` as a JSON string, byte for byte what `serde_json` writes.
///
/// Most strings an MCP server writes need no escape; those are copied in one go, after a
/// check of eight bytes at a time. A string that needs escaping is written by `serde_json`.
#[inline]
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s.as_bytes()) {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    } else {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// Whether a JSON string holding `bytes` needs an escape: a quote, a backslash or a
/// control character (below 0x20). Eight bytes at a time; the tail of a string of eight
/// bytes or more is its last eight (overlapping, never copied), a shorter string is looked
/// at byte by byte.
#[inline]
fn needs_escape(bytes: &[u8]) -> bool {
    let word = |c: &[u8]| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    let Some(tail) = bytes.len().checked_sub(8) else {
        return bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
    };
    let mut found = escapes_in(word(&bytes[tail..]));
    for c in bytes.chunks_exact(8) {
        found |= escapes_in(word(c));
    }
    found != 0
}

/// Non-zero when one of the eight bytes of `x` needs an escape. The classic word-at-a-time
/// tests: `(x - n·ONES) & !x & HIGHS` is non-zero exactly when a byte of `x` is below
/// `n` (for `n` ≤ 128); a byte equal to `b` is a zero byte of `x ^ b·ONES`.
#[inline]
fn escapes_in(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u64| x.wrapping_sub(n * ONES) & !x & HIGHS;
    below(x, 0x20) | below(x ^ (b'"' as u64 * ONES), 1) | below(x ^ (b'\\' as u64 * ONES), 1)
}

/// Writes an unsigned integer (one digit, the common request id, without formatting).
pub(crate) fn write_u64(out: &mut Vec<u8>, n: u64) {
    if n < 10 {
        out.push(b'0' + n as u8);
    } else {
        out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }
}

/// Writes the value at node `i` as compact JSON; returns the index after it.
pub(crate) fn write_value(nodes: &[Node<'_>], i: usize, out: &mut Vec<u8>) -> usize {
    match nodes.get(i) {
        None => i + 1,
        Some(Node::String(s)) => {
            write_str(out, s);
            i + 1
        }
        Some(Node::Static(st)) => {
            match st {
                StaticNode::I64(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
                StaticNode::U64(n) => write_u64(out, *n),
                // Writing into a Vec cannot fail; a tape holds finite numbers only.
                StaticNode::F64(n) => {
                    let _ = serde_json::to_writer(&mut *out, n);
                }
                StaticNode::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
                StaticNode::Null => out.extend_from_slice(b"null"),
            }
            i + 1
        }
        Some(Node::Object { len, .. }) => {
            out.push(b'{');
            let mut j = i + 1;
            for n in 0..*len {
                if n > 0 {
                    out.push(b',');
                }
                j = write_value(nodes, j, out);
                out.push(b':');
                j = write_value(nodes, j, out);
            }
            out.push(b'}');
            j
        }
        Some(Node::Array { len, .. }) => {
            out.push(b'[');
            let mut j = i + 1;
            for n in 0..*len {
                if n > 0 {
                    out.push(b',');
                }
                j = write_value(nodes, j, out);
            }
            out.push(b']');
            j
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    proptest! {
        /// Byte for byte what `serde_json` writes, whatever the string's length (the tail of
        /// eight bytes and the short strings checked apart) and wherever an escape falls.
        #[test]
        fn write_str_is_serde_json(s in "[ -~\\x00-\\x1f\"\\\\é€]{0,40}") {
            let mut ours = Vec::new();
            write_str(&mut ours, &s);
            prop_assert_eq!(ours, serde_json::to_vec(&s).unwrap());
        }
    }

    fn tape_of(s: &str, f: impl FnOnce(&[Node<'_>])) {
        let mut b = s.as_bytes().to_vec();
        let tape = simd_json::to_tape(&mut b).unwrap();
        f(&tape.0);
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut cases: Vec<String> = [
            "",
            "hello",
            "12°C, light rain",
            "a\"b",
            "back\\slash",
            "tab\there",
            "nl\n",
            "\u{1}\u{1f}\u{7f}",
            "/",
            "é\u{2028}\u{2029}",
            "\u{0}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Every byte value that is a char on its own, alone and inside a long run.
        for c in (0u32..0x80).filter_map(char::from_u32) {
            cases.push(c.to_string());
            cases.push(format!("{}{c}{}", "x".repeat(40), "y".repeat(40)));
        }
        // Each byte value at each position of a word, the rest plain or multi-byte text.
        for b in 0u8..0x80 {
            for at in 0..17 {
                let mut v = vec![b'a'; 17];
                v[at] = b;
                cases.push(String::from_utf8(v).unwrap());
                cases.push(format!("é{}ü", String::from_utf8(vec![b; at + 1]).unwrap()));
            }
        }
        for s in &cases {
            let mut ours = b"[".to_vec();
            write_str(&mut ours, s);
            assert_eq!(ours[1..], serde_json::to_vec(s).unwrap()[..], "{s:?}");
        }
    }

    #[test]
    fn integers_are_written_as_display_writes_them() {
        for n in (0..=120).chain([999, 1000, u64::from(u32::MAX), u64::MAX]) {
            let mut out = Vec::new();
            write_u64(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }

    #[test]
    fn repeated_names_are_found_at_every_size() {
        let mut names = Names::with_capacity(4);
        let object = |members: &[String]| format!("{{{}}}", members.join(","));
        for len in [2usize, 3, 8, 9, 16, 100, 5000] {
            let distinct: Vec<String> = (0..len).map(|i| format!("\"key-{i}\":{{\"key-0\":{i}}}")).collect();
            tape_of(&object(&distinct), |n| {
                assert_eq!(names.repeated_at(n, 0), None, "{len} distinct");
                assert_eq!(names.repeated_below(n, 0), None, "{len} distinct, below");
            });
            for at in [0, len / 2, len - 1] {
                let mut repeated = distinct.clone();
                repeated.push(format!("\"key-{at}\":null"));
                tape_of(&object(&repeated), |n| {
                    let want = format!("key-{at}");
                    assert_eq!(names.repeated_at(n, 0), Some(want.as_str()), "{len} members, key-{at} again");
                });
            }
        }
        // Keys that agree on their first eight bytes and length, and differ after.
        let same_head: Vec<String> = (0..20).map(|i| format!("\"abcdefgh-{:02}\":0", i)).collect();
        tape_of(&object(&same_head), |n| assert_eq!(names.repeated_at(n, 0), None));
        // Deep inside arrays, and not in the object at the root itself.
        tape_of(r#"{"a":[1,[{"x":1},{"y":{"z":1,"z":2}}]],"b":{"z":1}}"#, |n| {
            assert_eq!(names.repeated_at(n, 0), None);
            assert_eq!(names.repeated_below(n, 0), Some("z"));
            let b = get(n, 0, "b").unwrap();
            assert_eq!(names.repeated_below(n, b), None, "a subtree is checked alone");
        });
        // Empty and one-byte names, and names that agree on length, first and last byte.
        for (text, repeated) in [
            (r#"{"":1,"":2}"#, Some("")),
            (r#"{"a":1,"b":2,"a":3}"#, Some("a")),
            (r#"{"axb":1,"ayb":2}"#, None),
            (r#"{"":1,"a":2}"#, None),
            (r#"{"a":{"x":[1,{"y":2}]},"a":2}"#, Some("a")),
            (r#"{"a":{"x":[1,{"y":2}]},"b":2}"#, None),
        ] {
            tape_of(text, |n| assert_eq!(names.repeated_at(n, 0), repeated, "{text}"));
        }
        // The envelope's pass: a repeated key it looks for is an error, others are not.
        tape_of(r#"{"id":1,"x":1,"x":2,"method":"m","id":2}"#, |n| {
            let slot = |keys: &'static [&'static str]| move |s: &str| keys.iter().position(|k| *k == s);
            assert_eq!(members_by::<2>(n, 0, slot(&["method", "id"])), Err("id"));
            assert_eq!(members_by::<2>(n, 0, slot(&["method", "x"])), Err("x"));
            assert_eq!(members_by::<1>(n, 0, slot(&["method"])), Ok([get(n, 0, "method")]));
            assert_eq!(members_by::<1>(n, 0, |_| Some(7)), Ok([None]), "a slot past the end is nobody's");
        });
        // Scalars and empty containers repeat nothing.
        tape_of(r#"[[],{},1,"a"]"#, |n| assert_eq!(names.repeated_below(n, 0), None));
    }

    #[test]
    fn navigation_and_rewrite() {
        tape_of(r#"{"a":{"b":[1,-2,{"c":"x\ny"}]},"d":1.5,"e":null,"f":true}"#, |n| {
            let a = get(n, 0, "a").unwrap();
            assert_eq!(members(n, 0, ["f", "a", "zz", "d"]), [get(n, 0, "f"), Some(a), None, get(n, 0, "d")]);
            assert_eq!(members(n, a, ["b"]), [get(n, a, "b")]);
            assert_eq!(members(n, get(n, 0, "d").unwrap(), ["x"]), [None]);
            assert!(is_object(n, a));
            assert_eq!(
                get(n, 0, "d").map(|i| write_value(n, i, &mut Vec::new())),
                Some(get(n, 0, "d").unwrap() + 1)
            );
            assert_eq!(get(n, 0, "zz"), None);
            let mut out = Vec::new();
            write_value(n, 0, &mut out);
            assert_eq!(
                std::str::from_utf8(&out).unwrap(),
                r#"{"a":{"b":[1,-2,{"c":"x\ny"}]},"d":1.5,"e":null,"f":true}"#
            );
        });
    }
}
