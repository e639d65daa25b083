//! cursor: pagination cursors.

use base64::Engine as _;
use mcp_engine::internal::{
    CursorError, ListKind, MAX_CURSOR_KEY, MAX_CURSOR_LEN, decode_cursor, encode_cursor,
};

use crate::common::Bytes;

const CURSOR_KINDS: [ListKind; 4] =
    [ListKind::Tools, ListKind::Resources, ListKind::ResourceTemplates, ListKind::Prompts];

fn cursor_tag(kind: ListKind) -> u8 {
    match kind {
        ListKind::Tools => b't',
        ListKind::Resources => b'r',
        ListKind::ResourceTemplates => b'u',
        ListKind::Prompts => b'p',
    }
}

/// Pagination cursors (`wire::cursor::encode`, `decode`).
///
/// Input: a mode byte (the list kind, what the rest is), then the rest: a string to decode
/// as it is; a payload (after `c1` and a tag byte, or not) to base64url-encode, then maybe
/// spoil (a character changed, padding added, the standard alphabet, a character cut); a
/// key to encode, stretched to lengths around the 1024-byte limit.
///
/// Asserts: no panic; `decode` agrees with an independent decoding (base64url without
/// padding, canonical; the prefix `c1`; a known tag; a key of at most 1024 bytes of
/// UTF-8; a cursor of at most `MAX_CURSOR_LEN` characters): a cursor decodes for exactly
/// its list and names that list to the others; a decoded key encodes back to the very
/// same cursor; `encode` refuses exactly the keys over 1024 bytes, and what it gives is
/// url-safe, at most `MAX_CURSOR_LEN` long, and decodes to the key.
pub fn cursor(data: &[u8]) {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let Some((&mode, rest)) = data.split_first() else { return };
    let kind = CURSOR_KINDS[usize::from(mode & 3)];
    let text: String = match (mode >> 2) & 7 {
        0..=2 => String::from_utf8_lossy(rest).into_owned(),
        3 | 4 => {
            let tags = [b't', b'r', b'u', b'p', b'z'];
            let mut raw = if mode & 0x80 != 0 { b"c1".to_vec() } else { b"c2".to_vec() };
            raw.push(tags[usize::from(mode >> 5) % tags.len()]);
            raw.extend_from_slice(rest);
            URL_SAFE_NO_PAD.encode(&raw)
        }
        5 => {
            let mut b = Bytes::new(rest);
            let how = b.u8();
            let key = String::from_utf8_lossy(b.bytes(usize::MAX)).into_owned();
            let mut buf = [0u8; MAX_CURSOR_LEN];
            let Some(c) = encode_cursor(kind, &key, &mut buf) else { return };
            let mut c = c.to_owned();
            match how & 3 {
                0 if !c.is_empty() => {
                    // Change one character to another base64 character, or to any.
                    let at = usize::from(how >> 2) % c.len();
                    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=.";
                    let with = char::from(alphabet[usize::from(b.u8()) % alphabet.len()]);
                    c.replace_range(at..at + 1, with.encode_utf8(&mut [0; 4]));
                }
                1 => c.push_str(["=", "==", "A", "AA"][usize::from(how >> 2) & 3]),
                2 => c = c.replace('-', "+").replace('_', "/"),
                _ => {
                    c.pop();
                }
            }
            c
        }
        _ => {
            // The encoding side, with keys around the length limit.
            let piece = String::from_utf8_lossy(rest);
            let piece = if piece.is_empty() { "k".into() } else { piece };
            let target = MAX_CURSOR_KEY - 4 + usize::from(mode >> 5);
            let mut key = String::new();
            while key.len() < target {
                key.push_str(&piece);
            }
            let mut cut = target.min(key.len());
            while !key.is_char_boundary(cut) {
                cut -= 1;
            }
            key.truncate(cut);
            cursor_encode_check(kind, &key);
            return;
        }
    };
    cursor_decode_check(&text);
    cursor_encode_check(kind, &text);
}

/// `decode` of `text` for every list, against an independent decoding.
fn cursor_decode_check(text: &str) {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    // What the cursor names: (the list, its key when valid).
    let named = URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .filter(|_| !text.is_empty() && text.len() <= MAX_CURSOR_LEN)
        .and_then(|raw| {
            let (prefix, key) = raw.split_at_checked(3)?;
            let kind = CURSOR_KINDS.into_iter().find(|&k| prefix == [b'c', b'1', cursor_tag(k)])?;
            let key = core::str::from_utf8(key).ok().filter(|k| k.len() <= MAX_CURSOR_KEY).map(str::to_owned);
            Some((kind, key))
        });
    for kind in CURSOR_KINDS {
        let mut buf = [0u8; MAX_CURSOR_KEY + 8];
        let got = decode_cursor(kind, text, &mut buf).map(str::to_owned);
        let want = match &named {
            None => Err(CursorError::Invalid),
            Some((k, _)) if *k != kind => Err(CursorError::OtherList(*k)),
            Some((_, None)) => Err(CursorError::Invalid),
            Some((_, Some(key))) => Ok(key.clone()),
        };
        assert_eq!(got, want, "decoding {text:?} for {kind:?}");
        if let Ok(key) = got {
            let mut out = [0u8; MAX_CURSOR_LEN];
            assert_eq!(encode_cursor(kind, &key, &mut out), Some(text), "a decoded cursor is not canonical");
        }
    }
}

/// `encode` of `key` for `kind`: refused exactly over the limit; otherwise url-safe,
/// bounded, the base64url of `c1`, the tag and the key, and decoding to the key.
fn cursor_encode_check(kind: ListKind, key: &str) {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut out = [0u8; MAX_CURSOR_LEN];
    let Some(c) = encode_cursor(kind, key, &mut out) else {
        assert!(key.len() > MAX_CURSOR_KEY, "a key of {} bytes was refused", key.len());
        return;
    };
    assert!(key.len() <= MAX_CURSOR_KEY, "a key of {} bytes was encoded", key.len());
    assert!(c.len() <= MAX_CURSOR_LEN);
    assert!(c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{c:?}");
    let mut raw = vec![b'c', b'1', cursor_tag(kind)];
    raw.extend_from_slice(key.as_bytes());
    assert_eq!(c, URL_SAFE_NO_PAD.encode(&raw));
    let c = c.to_owned();
    for other in CURSOR_KINDS {
        let mut buf = [0u8; MAX_CURSOR_KEY + 8];
        let got = decode_cursor(other, &c, &mut buf);
        if other == kind {
            assert_eq!(got, Ok(key), "round trip of {key:?}");
        } else {
            assert_eq!(got, Err(CursorError::OtherList(kind)));
        }
    }
}
