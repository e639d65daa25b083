//! Sealed session ids (`Mcp-Session-Id` of session-bound Streamable HTTP).
//!
//! On the wire an id is exactly [`SESSION_ID_LEN`] characters of base64url without padding
//! (visible ASCII, as the transport requires) of 33 bytes:
//!
//! | bytes | what |
//! |---|---|
//! | 0 | format version `1` |
//! | 1..17 | the session's 128-bit token: random, its key in the session table and in a store |
//! | 17..33 | HMAC-SHA256 tag over a label (`mcp-engine/session`) and bytes 0..17, truncated to 16 bytes |
//!
//! An id whose tag does not verify under the engine's key is refused without a lookup, so
//! a client guessing ids costs a MAC and nothing else.
//!
//! Tokens come from HMAC-SHA256 in counter mode (NIST SP 800-108) keyed with 32 bytes of
//! entropy the host passes in from the OS random source: the engine does no I/O, and each
//! token is as unpredictable as that entropy, never reused while the counter runs (2^64
//! sessions). Minting and opening work in fixed buffers and never allocate.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Characters of a session id.
pub(crate) const SESSION_ID_LEN: usize = 44;

/// Characters of an SSE event id: base64url of the stream (4 bytes), the event's sequence
/// number in it (4 bytes) and an HMAC-SHA256 tag (16 bytes) over a label, the session's
/// token and both numbers. Only the session that owns the stream can present it.
pub(crate) const EVENT_ID_LEN: usize = 32;
const EVENT_LABEL: &[u8] = b"mcp-engine/sse-event";

/// Bytes of a session's token.
pub(crate) const TOKEN_LEN: usize = 16;

/// A session's 128-bit token.
pub(crate) type Token = [u8; TOKEN_LEN];

const VERSION: u8 = 1;
const BODY_LEN: usize = 1 + TOKEN_LEN;
const TAG_LEN: usize = 16;
const RAW_LEN: usize = BODY_LEN + TAG_LEN;
const SEAL_LABEL: &[u8] = b"mcp-engine/session";
const MINT_LABEL: &[u8] = b"mcp-engine/session-token";

/// Mints and opens session ids (see the module docs).
#[derive(Clone)]
pub(crate) struct SessionIds {
    seal: Hmac<Sha256>,
    /// Earlier keys: they still open the ids and event ids they sealed, and seal nothing.
    previous: heapless::Vec<Hmac<Sha256>, { super::MAX_PREVIOUS_KEYS }>,
    mint: Hmac<Sha256>,
    counter: u64,
}

impl SessionIds {
    /// Ids sealed with `secret` (the engine's key, shared by every node that must accept
    /// them) and opened with it or one of `previous` (key rotation), tokens drawn from
    /// `entropy` (fresh from the OS random source for each process).
    pub(crate) fn new(secret: &[u8; 32], previous: &[[u8; 32]], entropy: &[u8; 32]) -> Self {
        let key =
            |k: &[u8; 32]| <Hmac<Sha256> as KeyInit>::new_from_slice(k).unwrap_or_else(|_| unreachable!());
        let previous = previous.iter().map(key).take(super::MAX_PREVIOUS_KEYS).collect();
        Self { seal: key(secret), previous, mint: key(entropy), counter: 0 }
    }

    /// The sealing key, then the earlier ones.
    fn keys(&self) -> impl Iterator<Item = &Hmac<Sha256>> {
        core::iter::once(&self.seal).chain(self.previous.iter())
    }

    /// A new session: its token and its id.
    pub(crate) fn mint(&mut self) -> (Token, [u8; SESSION_ID_LEN]) {
        let mut m = self.mint.clone();
        m.update(MINT_LABEL);
        m.update(&self.counter.to_le_bytes());
        self.counter = self.counter.wrapping_add(1);
        let mut token = [0u8; TOKEN_LEN];
        token.copy_from_slice(&m.finalize().into_bytes()[..TOKEN_LEN]);
        (token, self.id_of(&token))
    }

    /// The id of `token` (the same every time: a store keeps tokens, not ids).
    pub(crate) fn id_of(&self, token: &Token) -> [u8; SESSION_ID_LEN] {
        let mut raw = [0u8; RAW_LEN];
        raw[0] = VERSION;
        raw[1..BODY_LEN].copy_from_slice(token);
        let tag = self.tag(&raw[..BODY_LEN]).finalize().into_bytes();
        raw[BODY_LEN..].copy_from_slice(&tag[..TAG_LEN]);
        let mut id = [0u8; SESSION_ID_LEN];
        let n = URL_SAFE_NO_PAD.encode_slice(raw, &mut id).unwrap_or(0);
        debug_assert_eq!(n, SESSION_ID_LEN);
        id
    }

    /// The token of `id`, if this key sealed it.
    pub(crate) fn open(&self, id: &[u8]) -> Option<Token> {
        if id.len() != SESSION_ID_LEN {
            return None;
        }
        let mut raw = [0u8; RAW_LEN + 3];
        let n = URL_SAFE_NO_PAD.decode_slice(id, &mut raw).ok()?;
        if n != RAW_LEN || raw[0] != VERSION {
            return None;
        }
        let (body, tag) = (&raw[..BODY_LEN], &raw[BODY_LEN..RAW_LEN]);
        if !self.keys().any(|k| tag_with(k, body).verify_truncated_left(tag).is_ok()) {
            return None;
        }
        let mut token = [0u8; TOKEN_LEN];
        token.copy_from_slice(&raw[1..BODY_LEN]);
        Some(token)
    }

    /// The id of event `seq` of stream `stream` of the session with `token`.
    pub(crate) fn event_id(&self, token: &Token, stream: u32, seq: u32) -> [u8; EVENT_ID_LEN] {
        let mut raw = [0u8; 24];
        raw[..4].copy_from_slice(&stream.to_be_bytes());
        raw[4..8].copy_from_slice(&seq.to_be_bytes());
        let tag = self.event_tag(token, &raw[..8]).finalize().into_bytes();
        raw[8..].copy_from_slice(&tag[..TAG_LEN]);
        let mut id = [0u8; EVENT_ID_LEN];
        let n = URL_SAFE_NO_PAD.encode_slice(raw, &mut id).unwrap_or(0);
        debug_assert_eq!(n, EVENT_ID_LEN);
        id
    }

    /// The stream and sequence number of event id `text`, if it is one this key issued
    /// for the session with `token`.
    pub(crate) fn open_event_id(&self, token: &Token, text: &[u8]) -> Option<(u32, u32)> {
        if text.len() != EVENT_ID_LEN {
            return None;
        }
        let mut raw = [0u8; 27];
        let n = URL_SAFE_NO_PAD.decode_slice(text, &mut raw).ok()?;
        if n != 24 {
            return None;
        }
        let (body, tag) = (&raw[..8], &raw[8..24]);
        if !self.keys().any(|k| event_tag_with(k, token, body).verify_truncated_left(tag).is_ok()) {
            return None;
        }
        let number = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Some((number(&raw[..4]), number(&raw[4..8])))
    }

    fn event_tag(&self, token: &Token, body: &[u8]) -> Hmac<Sha256> {
        event_tag_with(&self.seal, token, body)
    }

    fn tag(&self, body: &[u8]) -> Hmac<Sha256> {
        tag_with(&self.seal, body)
    }
}

/// The tag of an id's `body` under `key`.
fn tag_with(key: &Hmac<Sha256>, body: &[u8]) -> Hmac<Sha256> {
    let mut m = key.clone();
    m.update(SEAL_LABEL);
    m.update(body);
    m
}

/// The tag of an event id's `body` for the session with `token`, under `key`.
fn event_tag_with(key: &Hmac<Sha256>, token: &Token, body: &[u8]) -> Hmac<Sha256> {
    let mut m = key.clone();
    m.update(EVENT_LABEL);
    m.update(token);
    m.update(body);
    m
}

impl core::fmt::Debug for SessionIds {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SessionIds").field("minted", &self.counter).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_id_opens_only_for_its_session_and_unchanged() {
        let mut ids = ids();
        let (a, _) = ids.mint();
        let (b, _) = ids.mint();
        let id = ids.event_id(&a, 3, 77);
        assert!(id.iter().all(|c| c.is_ascii_graphic()));
        assert_eq!(ids.open_event_id(&a, &id), Some((3, 77)));
        assert_eq!(ids.open_event_id(&b, &id), None, "another session's");
        for i in 0..EVENT_ID_LEN {
            let mut bad = id;
            bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
            assert_eq!(ids.open_event_id(&a, &bad), None, "changed at {i}");
        }
        assert_eq!(ids.open_event_id(&a, &id[..EVENT_ID_LEN - 1]), None);
        let other = SessionIds::new(&[8; 32], &[], &[9; 32]);
        assert_eq!(other.open_event_id(&a, &id), None, "another key's");
    }

    fn ids() -> SessionIds {
        SessionIds::new(&[7; 32], &[], &[9; 32])
    }

    #[test]
    fn a_minted_id_opens_to_its_token_and_is_visible_ascii() {
        let mut ids = ids();
        let (token, id) = ids.mint();
        assert_eq!(id.len(), SESSION_ID_LEN);
        assert!(id.iter().all(|b| (0x21..=0x7e).contains(b)), "{id:?}");
        assert_eq!(ids.open(&id), Some(token));
        assert_eq!(ids.id_of(&token), id);
    }

    #[test]
    fn every_mint_is_a_new_token() {
        let mut ids = ids();
        let mut seen: Vec<Token> = (0..1000).map(|_| ids.mint().0).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 1000);
    }

    #[test]
    fn other_entropy_gives_other_tokens() {
        let a = SessionIds::new(&[7; 32], &[], &[1; 32]).mint().0;
        let b = SessionIds::new(&[7; 32], &[], &[2; 32]).mint().0;
        assert_ne!(a, b);
    }

    #[test]
    fn forged_altered_or_foreign_ids_do_not_open() {
        let mut ids = ids();
        let (_, id) = ids.mint();
        // Each character changed in turn.
        for i in 0..SESSION_ID_LEN {
            let mut bad = id;
            bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
            assert_eq!(ids.open(&bad), None, "position {i}");
        }
        assert_eq!(ids.open(&id[..SESSION_ID_LEN - 1]), None);
        assert_eq!(ids.open(b""), None);
        assert_eq!(ids.open(&[b'!'; SESSION_ID_LEN]), None);
        // Sealed by another key: another deployment's id.
        let other = SessionIds::new(&[8; 32], &[], &[9; 32]);
        assert_eq!(other.open(&id), None);
        // The same key on another node (other entropy) opens it.
        let node2 = SessionIds::new(&[7; 32], &[], &[3; 32]);
        assert!(node2.open(&id).is_some());
    }

    #[test]
    fn a_rotated_key_still_opens_what_it_sealed_and_seals_nothing() {
        let mut old = ids();
        let (token, id) = old.mint();
        let event = old.event_id(&token, 0, 3);
        let mut rotated = SessionIds::new(&[8; 32], &[[7; 32]], &[9; 32]);
        assert_eq!(rotated.open(&id), Some(token), "an id of the previous key");
        assert_eq!(rotated.open_event_id(&token, &event), Some((0, 3)), "an event id of the previous key");
        // What the new key seals, only the new key opens.
        let (t2, id2) = rotated.mint();
        assert_eq!(old.open(&id2), None);
        assert_eq!(SessionIds::new(&[8; 32], &[], &[1; 32]).open(&id2), Some(t2));
        assert_ne!(rotated.id_of(&token), id, "ids are sealed with the new key");
        // Once the previous key is dropped, its ids are refused.
        assert_eq!(SessionIds::new(&[8; 32], &[], &[9; 32]).open(&id), None);
    }
}
