//! Opaque keyset pagination cursors.
//!
//! A cursor names "the page after item `key`" of one list. On the wire it is
//! base64url without padding of a three-byte versioned prefix (`c1` plus one
//! tag byte naming the list) followed by the UTF-8 key. Encoding and decoding
//! work in caller-provided buffers and never allocate. Decoding is strict:
//! the base64 must be canonical, the prefix known and the key valid UTF-8.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Which list a cursor belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    /// The JSON-RPC method that lists this kind.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Self::Tools => "tools/list",
            Self::Resources => "resources/list",
            Self::ResourceTemplates => "resources/templates/list",
            Self::Prompts => "prompts/list",
        }
    }

    /// The tag byte that names this kind inside a cursor.
    fn tag(self) -> u8 {
        match self {
            Self::Tools => b't',
            Self::Resources => b'r',
            Self::ResourceTemplates => b'u',
            Self::Prompts => b'p',
        }
    }

    /// The kind a tag byte names, if any.
    fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            b't' => Some(Self::Tools),
            b'r' => Some(Self::Resources),
            b'u' => Some(Self::ResourceTemplates),
            b'p' => Some(Self::Prompts),
            _ => None,
        }
    }
}

/// Version marker that starts every decoded cursor.
const VERSION: &[u8; 2] = b"c1";

/// Length of the decoded prefix: the version marker plus one tag byte.
/// Three bytes encode to exactly four base64 characters, so the prefix and
/// the key can be encoded separately and concatenated.
const PREFIX_LEN: usize = VERSION.len() + 1;

/// Length of the base64 prefix encoding (no padding, three bytes → four).
const PREFIX_B64_LEN: usize = 4;

/// Longest item key (name/uri) a cursor can carry, in bytes.
pub const MAX_CURSOR_KEY: usize = 1024;

/// Length of the unpadded base64 encoding of `n` bytes.
const fn b64_len(n: usize) -> usize {
    n / 3 * 4
        + match n % 3 {
            0 => 0,
            1 => 2,
            _ => 3,
        }
}

/// Longest encoded cursor string.
pub const MAX_CURSOR_LEN: usize = b64_len(PREFIX_LEN + MAX_CURSOR_KEY);

/// Why a cursor was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorError {
    /// Not a cursor this server issued (bad base64, wrong prefix, not
    /// UTF-8, too long, empty).
    Invalid,
    /// A well-formed cursor, but for another list.
    OtherList(ListKind),
}

/// (hot) Encode "the page after `last_key`" for `kind` into `buf`; None if
/// the key is longer than [`MAX_CURSOR_KEY`].
pub fn encode<'b>(kind: ListKind, last_key: &str, buf: &'b mut [u8; MAX_CURSOR_LEN]) -> Option<&'b str> {
    if last_key.len() > MAX_CURSOR_KEY {
        return None;
    }
    let [v0, v1] = *VERSION;
    let prefix = [v0, v1, kind.tag()];
    let (head, tail) = buf.split_at_mut(PREFIX_B64_LEN);
    let n_head = URL_SAFE_NO_PAD.encode_slice(prefix, head).ok()?;
    let n_tail = URL_SAFE_NO_PAD.encode_slice(last_key.as_bytes(), tail).ok()?;
    let out = buf.get(..n_head + n_tail)?;
    core::str::from_utf8(out).ok()
}

/// (hot) Decode a cursor for `kind` into the key it names, using `buf` as
/// scratch.
pub fn decode<'b>(
    kind: ListKind,
    cursor: &str,
    buf: &'b mut [u8; MAX_CURSOR_KEY + 8],
) -> Result<&'b str, CursorError> {
    if cursor.is_empty() || cursor.len() > MAX_CURSOR_LEN {
        return Err(CursorError::Invalid);
    }
    let n = URL_SAFE_NO_PAD.decode_slice(cursor.as_bytes(), buf).map_err(|_| CursorError::Invalid)?;
    let payload = buf.get(..n).ok_or(CursorError::Invalid)?;
    let Some((prefix, key)) = payload.split_at_checked(PREFIX_LEN) else {
        return Err(CursorError::Invalid);
    };
    let [v0, v1, tag] = *prefix else {
        return Err(CursorError::Invalid);
    };
    if [v0, v1] != *VERSION {
        return Err(CursorError::Invalid);
    }
    match ListKind::from_tag(tag) {
        None => return Err(CursorError::Invalid),
        Some(k) if k != kind => return Err(CursorError::OtherList(k)),
        Some(_) => {}
    }
    if key.len() > MAX_CURSOR_KEY {
        return Err(CursorError::Invalid);
    }
    core::str::from_utf8(key).map_err(|_| CursorError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every list kind.
    const KINDS: [ListKind; 4] =
        [ListKind::Tools, ListKind::Resources, ListKind::ResourceTemplates, ListKind::Prompts];

    /// Encode into an owned string.
    fn enc(kind: ListKind, key: &str) -> Option<String> {
        let mut buf = [0u8; MAX_CURSOR_LEN];
        encode(kind, key, &mut buf).map(str::to_owned)
    }

    /// Decode into an owned string.
    fn dec(kind: ListKind, cursor: &str) -> Result<String, CursorError> {
        let mut buf = [0u8; MAX_CURSOR_KEY + 8];
        decode(kind, cursor, &mut buf).map(str::to_owned)
    }

    /// Base64url-encode arbitrary bytes (test helper; allocates).
    fn raw(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn limits() {
        assert_eq!(Some(MAX_CURSOR_LEN), base64::encoded_len(PREFIX_LEN + MAX_CURSOR_KEY, false));
        assert_eq!(Some(PREFIX_B64_LEN), base64::encoded_len(PREFIX_LEN, false));
        for n in 0..10 {
            assert_eq!(Some(b64_len(n)), base64::encoded_len(n, false));
        }
        assert_eq!(MAX_CURSOR_LEN, 1370);
    }

    #[test]
    fn methods() {
        assert_eq!(ListKind::Tools.method(), "tools/list");
        assert_eq!(ListKind::Resources.method(), "resources/list");
        assert_eq!(ListKind::ResourceTemplates.method(), "resources/templates/list");
        assert_eq!(ListKind::Prompts.method(), "prompts/list");
        for k in KINDS {
            assert_eq!(ListKind::from_tag(k.tag()), Some(k));
        }
    }

    #[test]
    fn round_trip_each_kind() {
        for k in KINDS {
            for key in ["echo", "file:///a/b?c=d#e", "ünïcødé ☃", "", "a"] {
                let c = enc(k, key).expect("encodes");
                assert!(c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
                assert_eq!(dec(k, &c), Ok(key.to_owned()));
            }
        }
    }

    #[test]
    fn wrong_list() {
        for a in KINDS {
            let c = enc(a, "x").expect("encodes");
            for b in KINDS {
                let want = if a == b { Ok("x".to_owned()) } else { Err(CursorError::OtherList(a)) };
                assert_eq!(dec(b, &c), want);
            }
        }
    }

    #[test]
    fn garbage_and_empty() {
        let k = ListKind::Tools;
        for bad in ["", "!!!!", "====", "YzF0eA==", "YzF0eA=", " YzF0eA", "YzF0eA\n", "a", "é"] {
            assert_eq!(dec(k, bad), Err(CursorError::Invalid), "{bad:?}");
        }
        // Valid base64, wrong version, unknown tag, too short.
        assert_eq!(dec(k, &raw(b"c2tx")), Err(CursorError::Invalid));
        assert_eq!(dec(k, &raw(b"c1zx")), Err(CursorError::Invalid));
        assert_eq!(dec(k, &raw(b"c1")), Err(CursorError::Invalid));
        assert_eq!(dec(k, &raw(b"")), Err(CursorError::Invalid));
        assert_eq!(dec(k, &raw(b"c1t")), Ok(String::new()));
        // Non-canonical trailing bits: "YzF0eA" is canonical, "YzF0eB" is not.
        assert_eq!(dec(k, "YzF0eA"), Ok("x".to_owned()));
        assert_eq!(dec(k, "YzF0eB"), Err(CursorError::Invalid));
        // Standard (non-url) alphabet characters are refused.
        let c = raw(b"c1t\xfb\xff");
        assert!(c.contains('-') || c.contains('_'));
        let std = c.replace('-', "+").replace('_', "/");
        assert_eq!(dec(k, &std), Err(CursorError::Invalid));
    }

    #[test]
    fn non_utf8_payload() {
        let k = ListKind::Prompts;
        assert_eq!(dec(k, &raw(b"c1p\xff\xfe")), Err(CursorError::Invalid));
        assert_eq!(dec(k, &raw(b"c1p\xc3")), Err(CursorError::Invalid));
    }

    #[test]
    fn max_and_over_long() {
        let k = ListKind::Resources;
        let max = "k".repeat(MAX_CURSOR_KEY);
        let c = enc(k, &max).expect("max key encodes");
        assert_eq!(c.len(), MAX_CURSOR_LEN);
        assert_eq!(dec(k, &c), Ok(max.clone()));
        // Multi-byte characters up to the byte limit.
        let wide = "é".repeat(MAX_CURSOR_KEY / 2);
        assert_eq!(dec(k, &enc(k, &wide).expect("encodes")), Ok(wide));
        let over = format!("{max}k");
        assert_eq!(enc(k, &over), None);
        // A hand-made over-long cursor is refused before decoding.
        let mut long = b"c1r".to_vec();
        long.extend_from_slice(over.as_bytes());
        assert_eq!(dec(k, &raw(&long)), Err(CursorError::Invalid));
        assert_eq!(dec(k, &"A".repeat(MAX_CURSOR_LEN + 1)), Err(CursorError::Invalid));
        assert_eq!(dec(k, &"A".repeat(100_000)), Err(CursorError::Invalid));
        // Every length up to the maximum fits the scratch buffer.
        for len in (0..=MAX_CURSOR_LEN).step_by(7).chain([MAX_CURSOR_LEN - 1, MAX_CURSOR_LEN]) {
            let s = "A".repeat(len);
            let _ = dec(k, &s);
        }
    }
}
