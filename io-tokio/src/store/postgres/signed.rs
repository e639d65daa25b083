//! Notices between nodes, authenticated. Any role that can connect to the database can
//! `NOTIFY` on the schema's channels (PostgreSQL has no privilege for it), so a listener
//! takes a notice only when it carries a MAC under the nodes' key, was sent recently, and
//! has not been taken before: a plain `NOTIFY` cannot make a node drop copies, end
//! sessions, re-read tasks or tell its streams that lists changed.
//!
//! A signed payload is `<kind> <node> <when> <n> <mac> <rest>`, fields separated by single
//! spaces: `kind` one upper-case letter (`notify.rs` says which), `node` the sender's id
//! (16 hex digits), `when` the sender's wall clock in milliseconds since the Unix epoch,
//! `n` a number the sender never repeats (per store), `mac` 32 hex digits: the first 16
//! bytes of HMAC-SHA256, under a key derived from the store's secret key
//! ([`PgStoreConfig::secret_key`](super::PgStoreConfig::secret_key)), of the channel's
//! name, a line feed, and the payload without ` <mac>`; and `rest` the session id, task
//! id, uri or lists (possibly empty, spaces included).
//!
//! A listener refuses, counts (in [`IgnoredNotices`]) and logs at `debug`: a payload that
//! does not parse or whose MAC does not verify under the current or a previous key
//! (`unauthenticated`); one whose `when` is further than the allowed age from its own
//! clock, either way, or whose MAC it has taken already (`replayed`). The MACs taken are
//! remembered for twice the allowed age after they arrive, at most [`MAX_REMEMBERED`] of
//! them (past that the oldest is forgotten first).

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// What the notice key is derived with from a secret key: a key of its own, so a notice's
/// MAC is never a MAC the engine makes with the same secret (a session id, a cursor).
const LABEL: &[u8] = b"mcp-io-tokio postgres notices v1";

/// The bytes of the MAC a payload carries.
const TAG_LEN: usize = 16;

/// The most MACs a listener remembers to refuse a replay.
pub(crate) const MAX_REMEMBERED: usize = 65_536;

/// Notices a store's listeners refused ([`PgSessionStore::ignored_notices`](super::PgSessionStore::ignored_notices)),
/// since the store was built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IgnoredNotices {
    /// Payloads without a MAC that verifies under the store's keys: not sent by a node
    /// sharing the secret key (a plain `NOTIFY`, a node of a version before signed
    /// notices, a node given another key), or not parsed.
    pub unauthenticated: u64,
    /// Payloads with a good MAC, sent longer ago (or further ahead) than
    /// [`PgStoreConfig::notice_max_age`](super::PgStoreConfig::notice_max_age) by this
    /// node's clock, or taken once already: replays of a node's notice (or a node whose
    /// clock is off).
    pub replayed: u64,
}

/// The keys, this node's id and counters: shared by a store's writes (which sign) and its
/// listening tasks (which check).
pub(crate) struct NoticeKeys {
    /// Signs, and checks first.
    seal: HmacSha256,
    /// Earlier keys, still checked.
    previous: Vec<HmacSha256>,
    node: String,
    sent: AtomicU64,
    max_age_ms: u64,
    unauthenticated: AtomicU64,
    replayed: AtomicU64,
}

impl fmt::Debug for NoticeKeys {
    /// No key material.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NoticeKeys")
            .field("previous", &self.previous.len())
            .field("node", &self.node)
            .field("max_age_ms", &self.max_age_ms)
            .finish_non_exhaustive()
    }
}

/// The notice key derived from `secret`, ready to MAC.
fn derive(secret: &[u8; 32]) -> HmacSha256 {
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(secret).unwrap_or_else(|_| unreachable!());
    m.update(LABEL);
    let key = m.finalize().into_bytes();
    <HmacSha256 as KeyInit>::new_from_slice(&key).unwrap_or_else(|_| unreachable!())
}

/// The MAC of `body` (`<kind> <node> <when> <n>`) and `rest` on `channel`.
fn tag(key: &HmacSha256, channel: &str, body: &str, rest: &str) -> HmacSha256 {
    let mut m = key.clone();
    m.update(channel.as_bytes());
    m.update(b"\n");
    m.update(body.as_bytes());
    m.update(b" ");
    m.update(rest.as_bytes());
    m
}

/// The wall clock in milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A notice that passed: what it says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Opened<'a> {
    pub(crate) kind: &'a str,
    pub(crate) node: &'a str,
    pub(crate) rest: &'a str,
}

/// Why a notice was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    Unauthenticated,
    Replayed,
}

impl NoticeKeys {
    /// Keys derived from `secret` (signing and checking) and `previous` (checking), for
    /// node `node`, taking notices at most `max_age` old (or ahead).
    pub(crate) fn new(secret: &[u8; 32], previous: &[[u8; 32]], node: String, max_age: Duration) -> Self {
        Self {
            seal: derive(secret),
            previous: previous.iter().map(derive).collect(),
            node,
            sent: AtomicU64::new(0),
            max_age_ms: u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX),
            unauthenticated: AtomicU64::new(0),
            replayed: AtomicU64::new(0),
        }
    }

    /// This node's id.
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// The payload of a notice of `kind` about `rest` on `channel`, signed now.
    pub(crate) fn sign(&self, channel: &str, kind: char, rest: &str) -> String {
        self.sign_at(channel, kind, rest, now_ms())
    }

    fn sign_at(&self, channel: &str, kind: char, rest: &str, when: u64) -> String {
        let n = self.sent.fetch_add(1, Ordering::Relaxed);
        let body = format!("{kind} {} {when} {n}", self.node);
        let mac = tag(&self.seal, channel, &body, rest).finalize().into_bytes();
        let mut payload = String::with_capacity(body.len() + 2 + 2 * TAG_LEN + rest.len());
        payload.push_str(&body);
        payload.push(' ');
        for b in &mac[..TAG_LEN] {
            payload.push_str(&format!("{b:02x}"));
        }
        payload.push(' ');
        payload.push_str(rest);
        payload
    }

    /// What a listener saw refused so far.
    pub(crate) fn ignored(&self) -> IgnoredNotices {
        IgnoredNotices {
            unauthenticated: self.unauthenticated.load(Ordering::Relaxed),
            replayed: self.replayed.load(Ordering::Relaxed),
        }
    }

    /// Checks `payload` heard on `channel` at `now` (ms): what it says, or why it is
    /// refused (counted and logged here).
    pub(crate) fn open<'a>(
        &self,
        channel: &str,
        payload: &'a str,
        now: u64,
        seen: &mut Seen,
    ) -> Result<Opened<'a>, Refused> {
        let outcome = self.check(channel, payload, now, seen);
        match outcome {
            Ok(_) => {}
            Err(Refused::Unauthenticated) => {
                self.unauthenticated.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(channel, "a notice without a valid MAC on the nodes' channel: ignored");
            }
            Err(Refused::Replayed) => {
                self.replayed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(channel, "a notice sent too long ago, or seen already: ignored");
            }
        }
        outcome
    }

    fn check<'a>(
        &self,
        channel: &str,
        payload: &'a str,
        now: u64,
        seen: &mut Seen,
    ) -> Result<Opened<'a>, Refused> {
        let bad = Refused::Unauthenticated;
        // The first four spaces end kind, node, when and n; the fifth the MAC.
        let mut spaces = payload.match_indices(' ').map(|(i, _)| i);
        let (a, b, c, d) = (spaces.next(), spaces.next(), spaces.next(), spaces.next());
        let (Some(a), Some(b), Some(c), Some(d)) = (a, b, c, d) else { return Err(bad) };
        let (mac_hex, rest) = match spaces.next() {
            Some(e) => (&payload[d + 1..e], &payload[e + 1..]),
            None => (&payload[d + 1..], ""),
        };
        let (kind, node, when, n) =
            (&payload[..a], &payload[a + 1..b], &payload[b + 1..c], &payload[c + 1..d]);
        let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|c| c.is_ascii_digit());
        if kind.len() != 1 || node.is_empty() || !digits(when) || !digits(n) || mac_hex.len() != 2 * TAG_LEN {
            return Err(bad);
        }
        let mut mac = [0u8; TAG_LEN];
        for (i, byte) in mac.iter_mut().enumerate() {
            *byte = u8::from_str_radix(mac_hex.get(2 * i..2 * i + 2).ok_or(bad)?, 16).map_err(|_| bad)?;
        }
        let body = &payload[..d];
        let valid = core::iter::once(&self.seal)
            .chain(&self.previous)
            .any(|key| tag(key, channel, body, rest).verify_truncated_left(&mac).is_ok());
        if !valid {
            return Err(bad);
        }
        let when: u64 = when.parse().map_err(|_| bad)?;
        if now.abs_diff(when) > self.max_age_ms || !seen.first_time(mac, now, self.max_age_ms) {
            return Err(Refused::Replayed);
        }
        Ok(Opened { kind, node, rest })
    }
}

/// The MACs a listener took, to refuse them a second time: each for twice the allowed age
/// after it arrived (a notice is taken until its `when` is that age behind, and `when`
/// may be that age ahead of its arrival), at most [`MAX_REMEMBERED`].
#[derive(Debug, Default)]
pub(crate) struct Seen {
    macs: HashSet<[u8; TAG_LEN]>,
    /// In order of arrival, with the time each arrived.
    order: VecDeque<([u8; TAG_LEN], u64)>,
}

impl Seen {
    /// Whether `mac` is new (then remembered), at `now`.
    fn first_time(&mut self, mac: [u8; TAG_LEN], now: u64, max_age_ms: u64) -> bool {
        let keep = max_age_ms.saturating_mul(2);
        while let Some(&(old, at)) = self.order.front() {
            if now.saturating_sub(at) <= keep && self.order.len() < MAX_REMEMBERED {
                break;
            }
            self.order.pop_front();
            self.macs.remove(&old);
        }
        if !self.macs.insert(mac) {
            return false;
        }
        self.order.push_back((mac, now));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;
    const CHANNEL: &str = "mcp.sessions";

    fn keys(secret: u8) -> NoticeKeys {
        NoticeKeys::new(&[secret; 32], &[], "00000000000000bb".into(), Duration::from_secs(30))
    }

    #[test]
    fn a_signed_notice_opens_once_and_only_as_it_was_sent() {
        let k = keys(1);
        let mut seen = Seen::default();
        let p = k.sign_at(CHANNEL, 'C', "a session id", NOW);
        assert_eq!(
            k.open(CHANNEL, &p, NOW + 5, &mut seen),
            Ok(Opened { kind: "C", node: "00000000000000bb", rest: "a session id" })
        );
        assert_eq!(k.open(CHANNEL, &p, NOW + 6, &mut seen), Err(Refused::Replayed), "once");
        // An empty rest.
        let m = k.sign_at(CHANNEL, 'M', "", NOW);
        assert_eq!(k.open(CHANNEL, &m, NOW, &mut seen).map(|o| o.rest), Ok(""));
        // Another channel, another kind, node, time, number or rest: refused.
        let fresh = |s: &str| k.open(CHANNEL, s, NOW, &mut Seen::default()).map(|_| ());
        assert_eq!(k.open("mcp.catalog", &p, NOW, &mut Seen::default()), Err(Refused::Unauthenticated));
        let mut parts: Vec<String> = p.splitn(6, ' ').map(str::to_owned).collect();
        for (i, other) in [(0, "E"), (1, "00000000000000cc"), (2, "1800000000001"), (3, "7"), (5, "another")]
        {
            let was = std::mem::replace(&mut parts[i], other.to_owned());
            assert_eq!(fresh(&parts.join(" ")), Err(Refused::Unauthenticated), "field {i} changed");
            parts[i] = was;
        }
        assert_eq!(fresh(&parts.join(" ")), Ok(()), "as sent");
        assert_eq!(k.ignored(), IgnoredNotices { unauthenticated: 6, replayed: 1 });
    }

    #[test]
    fn plain_and_malformed_payloads_are_unauthenticated() {
        let k = keys(1);
        for payload in [
            "c 00000000000000aa s1",
            "l 00000000000000aa trp",
            "? 00000000000000aa",
            "",
            "C 00000000000000aa 1800000000000 1",
            "C 00000000000000aa 1800000000000 1 00 s",
            "C 00000000000000aa 1800000000000 1 zz000000000000000000000000000000 s",
            "CC 00000000000000aa 1800000000000 1 00000000000000000000000000000000 s",
            "C 00000000000000aa -1 1 00000000000000000000000000000000 s",
            "C 00000000000000aa 1800000000000 1 00000000000000000000000000000000 s",
        ] {
            assert_eq!(
                k.open(CHANNEL, payload, NOW, &mut Seen::default()),
                Err(Refused::Unauthenticated),
                "{payload:?}"
            );
        }
        // Another key.
        let p = keys(2).sign_at(CHANNEL, 'C', "s", NOW);
        assert_eq!(k.open(CHANNEL, &p, NOW, &mut Seen::default()), Err(Refused::Unauthenticated));
        assert_eq!(k.ignored().unauthenticated, 11);
    }

    #[test]
    fn a_previous_key_still_opens_while_the_keys_rotate() {
        let old = keys(1);
        let rotated =
            NoticeKeys::new(&[2; 32], &[[1; 32]], "00000000000000cc".into(), Duration::from_secs(30));
        let p = old.sign_at(CHANNEL, 'C', "s", NOW);
        assert!(rotated.open(CHANNEL, &p, NOW, &mut Seen::default()).is_ok());
        let q = rotated.sign_at(CHANNEL, 'C', "s", NOW);
        assert_eq!(old.open(CHANNEL, &q, NOW, &mut Seen::default()), Err(Refused::Unauthenticated));
    }

    #[test]
    fn too_old_or_too_far_ahead_is_a_replay() {
        let k = keys(1);
        let p = k.sign_at(CHANNEL, 'C', "s", NOW);
        assert!(k.open(CHANNEL, &p, NOW + 30_000, &mut Seen::default()).is_ok(), "at the allowed age");
        assert_eq!(k.open(CHANNEL, &p, NOW + 30_001, &mut Seen::default()), Err(Refused::Replayed));
        assert_eq!(k.open(CHANNEL, &p, NOW - 30_001, &mut Seen::default()), Err(Refused::Replayed));
        assert_eq!(k.ignored(), IgnoredNotices { unauthenticated: 0, replayed: 2 });
    }

    #[test]
    fn the_macs_taken_are_remembered_for_twice_the_age_and_bounded() {
        let mut seen = Seen::default();
        assert!(seen.first_time([1; TAG_LEN], NOW, 30_000));
        assert!(!seen.first_time([1; TAG_LEN], NOW + 60_000, 30_000));
        assert!(seen.first_time([2; TAG_LEN], NOW + 60_001, 30_000), "another");
        assert!(seen.first_time([1; TAG_LEN], NOW + 60_001, 30_000), "forgotten past twice the age");
        let mut seen = Seen::default();
        for i in 0..=MAX_REMEMBERED as u32 {
            assert!(seen.first_time(tag_of(i), NOW, 30_000));
        }
        assert!(seen.macs.len() <= MAX_REMEMBERED && seen.order.len() <= MAX_REMEMBERED);
        assert!(seen.first_time(tag_of(0), NOW, 30_000), "the oldest forgotten first");
        assert!(!seen.first_time(tag_of(MAX_REMEMBERED as u32), NOW, 30_000), "the newest kept");
    }

    fn tag_of(i: u32) -> [u8; TAG_LEN] {
        let mut t = [0; TAG_LEN];
        t[..4].copy_from_slice(&i.to_le_bytes());
        t
    }

    #[test]
    fn no_key_in_debug() {
        let text = format!("{:?}", keys(0xab));
        assert!(!text.contains("171") && !text.contains("ab, "), "{text}");
    }
}
