//! Sealed pagination cursors.
//!
//! A cursor names "the page from item `offset`" of one list, for one caller. On the wire
//! it is exactly [`CURSOR_LEN`] characters of base64url without padding of 30 bytes:
//!
//! | bytes | what |
//! |---|---|
//! | 0 | format version `2`, plus `0x80` when the expiry is on the wall clock |
//! | 1 | the list: `t` tools, `r` resources, `u` resource templates, `p` prompts |
//! | 2..6 | the offset of the page's first item, u32 little-endian |
//! | 6..14 | the expiry, u64 little-endian microseconds (wall clock: since the Unix epoch) |
//! | 14..30 | HMAC-SHA256 tag, truncated to 16 bytes |
//!
//! The tag is computed with the engine's secret key over a label (`mcp-engine/cursor`),
//! bytes 0..14, and what the cursor is bound to without carrying it ([`Binding`]): the
//! page size, the protocol revision, the principal (or none) and the digest of the list
//! as the catalog holds it. A cursor opens only if every one of those is the same when
//! it comes back, its tag verifies, and it has not expired (see [`Clock::holds`]).
//! Sealing and opening work in fixed buffers and never allocate.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::time::{Clock, Expiry, Lifetime};

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
    /// `skills/list` (the skills extension).
    Skills,
}

/// How many lists there are ([`ListKind::ALL`]'s length).
pub(crate) const LISTS: usize = ListKind::ALL.len();

impl ListKind {
    /// Every list kind, in [`ListKind::index`] order.
    pub const ALL: [Self; 5] =
        [Self::Tools, Self::Resources, Self::ResourceTemplates, Self::Prompts, Self::Skills];

    /// The JSON-RPC method that lists this kind.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Self::Tools => "tools/list",
            Self::Resources => "resources/list",
            Self::ResourceTemplates => "resources/templates/list",
            Self::Prompts => "prompts/list",
            Self::Skills => "skills/list",
        }
    }

    /// The position of this kind in [`ListKind::ALL`].
    pub fn index(self) -> usize {
        match self {
            Self::Tools => 0,
            Self::Resources => 1,
            Self::ResourceTemplates => 2,
            Self::Prompts => 3,
            Self::Skills => 4,
        }
    }

    /// The tag byte that names this kind inside a cursor.
    fn tag(self) -> u8 {
        match self {
            Self::Tools => b't',
            Self::Resources => b'r',
            Self::ResourceTemplates => b'u',
            Self::Prompts => b'p',
            Self::Skills => b's',
        }
    }

    /// The kind a tag byte names, if any.
    fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            b't' => Some(Self::Tools),
            b'r' => Some(Self::Resources),
            b'u' => Some(Self::ResourceTemplates),
            b'p' => Some(Self::Prompts),
            b's' => Some(Self::Skills),
            _ => None,
        }
    }
}

/// The format version (byte 0, low seven bits).
const VERSION: u8 = 2;
/// Byte 0's flag: the expiry is on the wall clock.
const WALL: u8 = 0x80;
/// The bytes before the tag.
const BODY_LEN: usize = 14;
/// The truncated tag.
const TAG_LEN: usize = 16;
/// The decoded cursor.
const RAW_LEN: usize = BODY_LEN + TAG_LEN;
/// What the tag starts with: no other token sealed with the same key starts so.
const LABEL: &[u8] = b"mcp-engine/cursor";

/// Length of every cursor the engine issues, in characters.
pub const CURSOR_LEN: usize = RAW_LEN / 3 * 4;

/// Longest item key (name or uri) the catalog accepts, in bytes.
pub(crate) const MAX_CURSOR_KEY: usize = 1024;

/// Why a cursor was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorError {
    /// Not a cursor this server issued for this caller, page size, revision and list
    /// contents (bad base64, wrong length or version, a tag that does not verify).
    Invalid,
    /// A cursor this server issued, but for another list.
    OtherList(ListKind),
    /// A cursor this server issued, past its expiry (or sealed on another clock).
    Expired,
}

/// The key cursors are sealed with: HMAC-SHA256 keyed once, and for each list the state
/// after the first message block (the label, the page size and the list's digest),
/// computed again only when one of those changes. A cursor then costs two SHA-256
/// compressions: the rest of the message, and the outer hash.
#[derive(Clone)]
pub(crate) struct CursorKey {
    mac: Hmac<Sha256>,
    lists: [Option<Prefixed>; LISTS],
    /// Earlier keys: they still open what they sealed, and seal nothing.
    previous: Vec<Self>,
}

/// The HMAC state after the first block of a list's cursors, and what it holds.
#[derive(Clone)]
struct Prefixed {
    page_size: u32,
    digest: [u8; 32],
    mac: Hmac<Sha256>,
}

impl CursorKey {
    /// The key for the engine's 32-byte secret.
    pub(crate) fn new(secret: &[u8; 32]) -> Self {
        // HMAC takes keys of any length.
        let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).unwrap_or_else(|_| unreachable!());
        Self { mac, lists: Default::default(), previous: Vec::new() }
    }

    /// This key, with earlier ones that still open the cursors they sealed (key rotation).
    pub(crate) fn with_previous(mut self, previous: &[[u8; 32]]) -> Self {
        self.previous = previous.iter().map(Self::new).collect();
        self
    }

    /// The state for `kind` under `b`, past the first block.
    fn prefixed(&mut self, kind: ListKind, b: &Binding<'_>) -> Hmac<Sha256> {
        let digest = &b.lists[kind.index()];
        let slot = &mut self.lists[kind.index()];
        if let Some(p) = slot.as_ref().filter(|p| p.page_size == b.page_size && p.digest == *digest) {
            return p.mac.clone();
        }
        // One whole block: the label, the page size, the digest, zeros.
        let mut block = [0u8; 64];
        block[..LABEL.len()].copy_from_slice(LABEL);
        block[LABEL.len()..LABEL.len() + 4].copy_from_slice(&b.page_size.to_le_bytes());
        block[LABEL.len() + 4..LABEL.len() + 36].copy_from_slice(digest);
        let mut mac = self.mac.clone();
        mac.update(&block);
        *slot = Some(Prefixed { page_size: b.page_size, digest: *digest, mac: mac.clone() });
        mac
    }
}

impl core::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CursorKey(<redacted>)")
    }
}

/// What a cursor is bound to without carrying it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Binding<'a> {
    /// Items per page.
    pub page_size: u32,
    /// The protocol revision the list is served under.
    pub revision: &'a str,
    /// The principal the request acts for (HTTP `Verdict::AllowAs`), or none.
    pub principal: Option<&'a [u8; 32]>,
    /// The digest of each list as the catalog holds it, by [`ListKind::index`].
    pub lists: &'a [[u8; 32]; LISTS],
}

/// The tag of `body` under `binding` (for the list `kind`): HMAC over one block of the
/// label, page size and list digest ([`CursorKey::prefixed`]), then the body, the
/// revision and the principal.
fn tag(key: &mut CursorKey, kind: ListKind, body: &[u8; BODY_LEN], b: &Binding<'_>) -> Hmac<Sha256> {
    let mut m = key.prefixed(kind, b);
    m.update(body);
    // Revision strings are short (`2026-07-28`); the length keeps the fields apart.
    m.update(&[b.revision.len().min(255) as u8]);
    m.update(b.revision.as_bytes());
    match b.principal {
        Some(p) => {
            m.update(&[1]);
            m.update(p);
        }
        None => m.update(&[0]),
    }
    m
}

/// (hot) Seals "the page of `kind` from item `offset`", expiring at `expiry`, into `buf`.
pub(crate) fn seal<'b>(
    key: &mut CursorKey,
    kind: ListKind,
    offset: u32,
    expiry: Expiry,
    binding: &Binding<'_>,
    buf: &'b mut [u8; CURSOR_LEN],
) -> &'b str {
    let mut raw = [0u8; RAW_LEN];
    let (body, mac) = raw.split_at_mut(BODY_LEN);
    let body: &mut [u8; BODY_LEN] = body.try_into().unwrap_or_else(|_| unreachable!());
    body[0] = VERSION | if expiry.wall { WALL } else { 0 };
    body[1] = kind.tag();
    body[2..6].copy_from_slice(&offset.to_le_bytes());
    body[6..14].copy_from_slice(&expiry.at.to_le_bytes());
    let full = tag(key, kind, body, binding).finalize().into_bytes();
    mac.copy_from_slice(&full[..TAG_LEN]);
    let n = URL_SAFE_NO_PAD.encode_slice(raw, buf).unwrap_or(0);
    core::str::from_utf8(&buf[..n]).unwrap_or_default()
}

/// (hot) Opens a cursor for `kind`: the offset it names, if it is one this server sealed
/// for this binding and it holds at `clock`.
pub(crate) fn open(
    key: &mut CursorKey,
    kind: ListKind,
    cursor: &str,
    binding: &Binding<'_>,
    clock: Clock,
    life: Lifetime,
) -> Result<u32, CursorError> {
    if cursor.len() != CURSOR_LEN {
        return Err(CursorError::Invalid);
    }
    let mut raw = [0u8; RAW_LEN + 3];
    let n = URL_SAFE_NO_PAD.decode_slice(cursor.as_bytes(), &mut raw).map_err(|_| CursorError::Invalid)?;
    if n != RAW_LEN {
        return Err(CursorError::Invalid);
    }
    let (body, mac) = raw[..RAW_LEN].split_at(BODY_LEN);
    let body: &[u8; BODY_LEN] = body.try_into().map_err(|_| CursorError::Invalid)?;
    if body[0] & !WALL != VERSION {
        return Err(CursorError::Invalid);
    }
    let named = ListKind::from_tag(body[1]).ok_or(CursorError::Invalid)?;
    let sealed_by = |k: &mut CursorKey| tag(k, named, body, binding).verify_truncated_left(mac).is_ok();
    if !sealed_by(key) && !key.previous.iter_mut().any(sealed_by) {
        return Err(CursorError::Invalid);
    }
    if named != kind {
        return Err(CursorError::OtherList(named));
    }
    let mut at = [0u8; 8];
    at.copy_from_slice(&body[6..14]);
    let expiry = Expiry { wall: body[0] & WALL != 0, at: u64::from_le_bytes(at) };
    if !clock.holds(expiry, life) {
        return Err(CursorError::Expired);
    }
    let mut offset = [0u8; 4];
    offset.copy_from_slice(&body[2..6]);
    Ok(u32::from_le_bytes(offset))
}

/// Fuzzing harness of cursor sealing and opening (compiled only with `--cfg fuzzing`).
///
/// Input: a mode byte, then the rest. Even modes: the rest, as text, is a cursor a client
/// made up; it must never open (that would be a forgery), for any list. Odd modes: a
/// cursor sealed from the rest (offset, expiry, the binding's fields); it opens to its
/// offset for its list and binding until its expiry, names its list to the others, and
/// is refused after any one change: a byte of the text, the key, the page size, the
/// revision, the principal, the list's digest, a later time, the other clock; a key that
/// keeps its key as a previous one opens it, one that dropped it does not.
#[cfg(fuzzing)]
#[doc(hidden)]
pub fn fuzz_cursor(data: &[u8]) {
    let mut key = CursorKey::new(&[42; 32]);
    let Some((&mode, rest)) = data.split_first() else { return };
    let kind = ListKind::ALL[usize::from(mode >> 1) % LISTS];
    let lists = [[1; 32], [2; 32], [3; 32], [4; 32], [5; 32]];
    let life = Lifetime { ttl: 1_000, skew: 10 };
    if mode % 2 == 0 {
        let text = String::from_utf8_lossy(rest);
        let b = Binding { page_size: 50, revision: "2026-07-28", principal: None, lists: &lists };
        for clock in [Clock { mono: 0, wall: None }, Clock { mono: 0, wall: Some(0) }] {
            for k in ListKind::ALL {
                assert_eq!(
                    open(&mut key, k, &text, &b, clock, life).ok(),
                    None,
                    "a cursor nobody sealed opened: {text:?}"
                );
            }
        }
        return;
    }
    let mut b8 = [0u8; 8];
    let take = rest.len().min(8);
    b8[..take].copy_from_slice(&rest[..take]);
    let offset = u32::from_le_bytes([b8[0], b8[1], b8[2], b8[3]]);
    let now = u64::from(u32::from_le_bytes([b8[4], b8[5], b8[6], b8[7]]));
    let wall = mode & 0x10 != 0;
    let principal = [mode; 32];
    let b = Binding {
        page_size: u32::from(mode),
        revision: if mode & 0x20 != 0 { "2025-11-25" } else { "2026-07-28" },
        principal: (mode & 0x40 != 0).then_some(&principal),
        lists: &lists,
    };
    let clock = |t: u64| if wall { Clock { mono: 0, wall: Some(t) } } else { Clock { mono: t, wall: None } };
    let expiry = clock(now).expiry(life);
    let mut buf = [0u8; CURSOR_LEN];
    let text = seal(&mut key, kind, offset, expiry, &b, &mut buf).to_owned();
    assert_eq!(text.len(), CURSOR_LEN);
    assert!(text.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'), "{text:?}");
    assert_eq!(open(&mut key, kind, &text, &b, clock(now), life), Ok(offset));
    let last = if wall { now + life.ttl + life.skew } else { now + life.ttl };
    assert_eq!(open(&mut key, kind, &text, &b, clock(last), life), Ok(offset));
    assert_eq!(open(&mut key, kind, &text, &b, clock(last + 1), life), Err(CursorError::Expired));
    let other_clock =
        if wall { Clock { mono: now, wall: None } } else { Clock { mono: now, wall: Some(now) } };
    assert_eq!(open(&mut key, kind, &text, &b, other_clock, life), Err(CursorError::Expired));
    for k in ListKind::ALL.into_iter().filter(|&k| k != kind) {
        assert_eq!(open(&mut key, k, &text, &b, clock(now), life), Err(CursorError::OtherList(kind)));
    }
    let other_principal = [mode.wrapping_add(1); 32];
    let mut other_lists = lists;
    other_lists[kind.index()][0] ^= 1;
    let changed = [
        Binding { page_size: b.page_size + 1, ..b },
        Binding { revision: "2025-06-18", ..b },
        Binding { principal: Some(&other_principal), ..b },
        Binding { principal: if b.principal.is_some() { None } else { Some(&other_principal) }, ..b },
        Binding { lists: &other_lists, ..b },
    ];
    for c in &changed {
        assert_eq!(open(&mut key, kind, &text, c, clock(now), life), Err(CursorError::Invalid), "{c:?}");
    }
    let mut other_key = CursorKey::new(&[7; 32]);
    assert_eq!(open(&mut other_key, kind, &text, &b, clock(now), life), Err(CursorError::Invalid));
    // Rotated: a key that keeps this one as previous opens it; one that dropped it does not.
    let mut rotated = CursorKey::new(&[7; 32]).with_previous(&[[9; 32], [42; 32]]);
    assert_eq!(open(&mut rotated, kind, &text, &b, clock(now), life), Ok(offset));
    let mut dropped = CursorKey::new(&[7; 32]).with_previous(&[[9; 32]]);
    assert_eq!(open(&mut dropped, kind, &text, &b, clock(now), life), Err(CursorError::Invalid));
    let mut spoiled = text.into_bytes();
    let at = usize::from(mode) % spoiled.len();
    spoiled[at] = if spoiled[at] == b'A' { b'B' } else { b'A' };
    let spoiled = String::from_utf8(spoiled).unwrap_or_default();
    assert!(open(&mut key, kind, &spoiled, &b, clock(now), life).is_err(), "a changed cursor opened");
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGESTS: [[u8; 32]; LISTS] = [[1; 32], [2; 32], [3; 32], [4; 32], [5; 32]];
    const LIFE: Lifetime = Lifetime { ttl: 1_000, skew: 10 };
    const LOCAL: Clock = Clock { mono: 5, wall: None };

    fn key() -> CursorKey {
        CursorKey::new(&[9; 32])
    }

    fn binding() -> Binding<'static> {
        Binding { page_size: 50, revision: "2026-07-28", principal: None, lists: &DIGESTS }
    }

    fn sealed(kind: ListKind, offset: u32, b: &Binding<'_>, clock: Clock) -> String {
        let mut buf = [0u8; CURSOR_LEN];
        seal(&mut key(), kind, offset, clock.expiry(LIFE), b, &mut buf).to_owned()
    }

    #[test]
    fn a_cursor_is_forty_url_safe_characters() {
        assert_eq!(CURSOR_LEN, 40);
        for kind in ListKind::ALL {
            for offset in [0, 1, 50, u32::MAX] {
                let c = sealed(kind, offset, &binding(), LOCAL);
                assert_eq!(c.len(), CURSOR_LEN);
                assert!(c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{c}");
                assert_eq!(open(&mut key(), kind, &c, &binding(), LOCAL, LIFE), Ok(offset));
            }
            assert_eq!(ListKind::ALL[kind.index()], kind);
            assert_eq!(ListKind::from_tag(kind.tag()), Some(kind));
        }
    }

    #[test]
    fn a_cursor_names_its_list_to_the_others() {
        for a in ListKind::ALL {
            let c = sealed(a, 3, &binding(), LOCAL);
            for b in ListKind::ALL {
                let want = if a == b { Ok(3) } else { Err(CursorError::OtherList(a)) };
                assert_eq!(open(&mut key(), b, &c, &binding(), LOCAL, LIFE), want);
            }
        }
    }

    #[test]
    fn every_binding_is_checked() {
        let p = [5u8; 32];
        let q = [6u8; 32];
        let base = Binding { principal: Some(&p), ..binding() };
        let c = sealed(ListKind::Tools, 7, &base, LOCAL);
        assert_eq!(open(&mut key(), ListKind::Tools, &c, &base, LOCAL, LIFE), Ok(7));
        let mut lists = DIGESTS;
        lists[0][31] ^= 1;
        let mut others = DIGESTS;
        others[1][0] ^= 1;
        for (what, b, want) in [
            ("page size", Binding { page_size: 51, ..base }, Err(CursorError::Invalid)),
            ("revision", Binding { revision: "2025-11-25", ..base }, Err(CursorError::Invalid)),
            ("principal", Binding { principal: Some(&q), ..base }, Err(CursorError::Invalid)),
            ("no principal", Binding { principal: None, ..base }, Err(CursorError::Invalid)),
            ("this list", Binding { lists: &lists, ..base }, Err(CursorError::Invalid)),
            ("another list", Binding { lists: &others, ..base }, Ok(7)),
        ] {
            assert_eq!(open(&mut key(), ListKind::Tools, &c, &b, LOCAL, LIFE), want, "{what}");
        }
        assert_eq!(
            open(&mut CursorKey::new(&[8; 32]), ListKind::Tools, &c, &base, LOCAL, LIFE),
            Err(CursorError::Invalid)
        );
    }

    #[test]
    fn every_flipped_bit_is_refused() {
        let c = sealed(ListKind::Prompts, 2, &binding(), LOCAL);
        let mut raw = URL_SAFE_NO_PAD.decode(&c).unwrap();
        for i in 0..raw.len() * 8 {
            raw[i / 8] ^= 1 << (i % 8);
            let text = URL_SAFE_NO_PAD.encode(&raw);
            assert!(open(&mut key(), ListKind::Prompts, &text, &binding(), LOCAL, LIFE).is_err(), "bit {i}");
            raw[i / 8] ^= 1 << (i % 8);
        }
    }

    #[test]
    fn garbage_is_invalid() {
        let c = sealed(ListKind::Tools, 2, &binding(), LOCAL);
        let long = "A".repeat(100_000);
        let padded = format!("{c}==");
        let std = c.replace('-', "+").replace('_', "/");
        for bad in ["", "!!!!", "a", "é", &c[..39], &padded, &format!("{c}A"), &long, &"A".repeat(40)] {
            assert_eq!(
                open(&mut key(), ListKind::Tools, bad, &binding(), LOCAL, LIFE),
                Err(CursorError::Invalid),
                "{bad:?}"
            );
        }
        if std != c {
            assert_eq!(
                open(&mut key(), ListKind::Tools, &std, &binding(), LOCAL, LIFE),
                Err(CursorError::Invalid)
            );
        }
    }

    #[test]
    fn expiry_on_each_clock() {
        let wall = Clock { mono: 0, wall: Some(1_000_000) };
        let c = sealed(ListKind::Resources, 4, &binding(), wall);
        let at = |w| Clock { mono: 0, wall: Some(w) };
        let open_at = |clock| open(&mut key(), ListKind::Resources, &c, &binding(), clock, LIFE);
        assert_eq!(open_at(at(1_001_010)), Ok(4));
        assert_eq!(open_at(at(1_001_011)), Err(CursorError::Expired));
        assert_eq!(open_at(LOCAL), Err(CursorError::Expired), "no wall clock to judge it on");
        let local = sealed(ListKind::Resources, 4, &binding(), LOCAL);
        let open_local = |clock| open(&mut key(), ListKind::Resources, &local, &binding(), clock, LIFE);
        assert_eq!(open_local(Clock { mono: 1_005, wall: None }), Ok(4));
        assert_eq!(open_local(Clock { mono: 1_006, wall: None }), Err(CursorError::Expired));
        assert_eq!(open_local(at(0)), Err(CursorError::Expired), "sealed before the wall clock was set");
    }
}
