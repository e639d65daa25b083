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

/// Writes `s` as a JSON string.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Writes an unsigned integer.
pub(crate) fn write_u64(out: &mut Vec<u8>, n: u64) {
    let _ = serde_json::to_writer(&mut *out, &n);
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
            let _ = match st {
                StaticNode::I64(n) => serde_json::to_writer(&mut *out, n),
                StaticNode::U64(n) => serde_json::to_writer(&mut *out, n),
                StaticNode::F64(n) => serde_json::to_writer(&mut *out, n),
                StaticNode::Bool(b) => serde_json::to_writer(&mut *out, b),
                StaticNode::Null => serde_json::to_writer(&mut *out, &()),
            };
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

    fn tape_of(s: &str, f: impl FnOnce(&[Node<'_>])) {
        let mut b = s.as_bytes().to_vec();
        let tape = simd_json::to_tape(&mut b).unwrap();
        f(&tape.0);
    }

    #[test]
    fn navigation_and_rewrite() {
        tape_of(r#"{"a":{"b":[1,-2,{"c":"x\ny"}]},"d":1.5,"e":null,"f":true}"#, |n| {
            let a = get(n, 0, "a").unwrap();
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
