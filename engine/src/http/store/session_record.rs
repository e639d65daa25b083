//! The session record: what a session store keeps of an HTTP session, so that a session
//! can leave this engine's memory and come back (after a restart, or on another node
//! sharing the key). `docs/decisions.md` ("The session record") is the format's
//! reference; this file is its only reader and writer.
//!
//! The record holds what the client set up and what the engine needs to serve its next
//! request: the revision, `initialized`, the log level, the client's declared input
//! capabilities, the legacy `resources/subscribe` uris, and the principal that created
//! the session (its SHA-256 digest, never the identifier). It holds no stream state and
//! no request in flight: streams, event numbers and the replay buffer stay with the
//! engine that wrote them. The session id is the store's key, not part of the record.
//!
//! Version 1, all integers big-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 1 | format version, `1` |
//! | 1 | revision: `1` = `2025-06-18`, `2` = `2025-11-25` |
//! | 1 | flags: bit 0 `initialized`, bit 1 a principal follows; other bits zero |
//! | 1 | log level: `0` none set, `1`..`8` = `debug`..`emergency` |
//! | 1 | client capabilities (bit 0 elicitation form, 1 elicitation url, 2 sampling, 3 roots, 4 sampling.tools, 5 sampling.context) |
//! | 32 | the principal's digest, when flag bit 1 is set |
//! | 2 | number of subscribed uris, at most 64 |
//! | 2 + n | each uri: its length, then its UTF-8 bytes (whole: a uri is never cut) |
//!
//! Decoding refuses anything else (another version, an unknown bit, a short or long
//! record, bytes that are not UTF-8) with [`RecordError`]: the engine then treats the
//! session as not found and the client opens a new one, which is what it would do had
//! the session expired.

use crate::http::auth::authorize::Principal;
use crate::level::LogLevel;
use crate::mcp::lifecycle::Session;
use crate::mcp::mrtr::ClientCapabilities;
use crate::mcp::subs::MAX_SUBSCRIBED_URIS;
use crate::revision::Revision;
use crate::wire::record::Reader;
pub(crate) use crate::wire::record::RecordError;

/// The format version this engine writes (and the only one it reads).
pub(crate) const VERSION: u8 = 1;

const INITIALIZED: u8 = 1;
const HAS_PRINCIPAL: u8 = 2;

/// Writes the record of `session`, created by `principal`, into `out` (cleared first).
pub(crate) fn encode(session: &Session, principal: Option<&Principal>, out: &mut Vec<u8>) {
    out.clear();
    out.push(VERSION);
    out.push(match session.legacy {
        Some(Revision::V2025_06_18) => 1,
        // A session is only ever opened under a session-bound revision.
        _ => 2,
    });
    let flags =
        (u8::from(session.initialized) * INITIALIZED) | (u8::from(principal.is_some()) * HAS_PRINCIPAL);
    out.push(flags);
    out.push(session.log_level.map_or(0, |l| l as u8 + 1));
    out.push(session.caps.bits());
    if let Some(p) = principal {
        out.extend_from_slice(&p.0);
    }
    // Whole uris only, never cut: one longer than a length field holds is left out (the
    // engine bounds subscribed uris below that, `Config::max_subscribed_uri_len`, so this
    // never happens), and the count is the number written.
    let whole = || session.uris.iter().filter(|u| u.len() <= usize::from(u16::MAX));
    let count = whole().take(MAX_SUBSCRIBED_URIS).count();
    out.extend_from_slice(&(count as u16).to_be_bytes());
    for uri in whole().take(count) {
        out.extend_from_slice(&(uri.len() as u16).to_be_bytes());
        out.extend_from_slice(uri.as_bytes());
    }
}

/// Reads a record: the session (with serial 0: the engine numbers it) and the principal
/// that created it.
pub(crate) fn decode(record: &[u8]) -> Result<(Session, Option<Principal>), RecordError> {
    let mut r = Reader(record);
    let version = r.byte()?;
    if version != VERSION {
        return Err(RecordError::Version(version));
    }
    let legacy = match r.byte()? {
        1 => Revision::V2025_06_18,
        2 => Revision::V2025_11_25,
        _ => return Err(RecordError::Invalid),
    };
    let flags = r.byte()?;
    if flags & !(INITIALIZED | HAS_PRINCIPAL) != 0 {
        return Err(RecordError::Invalid);
    }
    let log_level = match r.byte()? {
        0 => None,
        n => Some(*LogLevel::ALL.get(usize::from(n) - 1).ok_or(RecordError::Invalid)?),
    };
    let caps = ClientCapabilities::from_bits(r.byte()?).ok_or(RecordError::Invalid)?;
    let principal = if flags & HAS_PRINCIPAL != 0 {
        let mut digest = [0u8; 32];
        digest.copy_from_slice(r.take(32)?);
        Some(Principal(digest))
    } else {
        None
    };
    let count = usize::from(r.u16()?);
    if count > MAX_SUBSCRIBED_URIS {
        return Err(RecordError::Invalid);
    }
    let mut uris = Vec::with_capacity(count);
    for _ in 0..count {
        let len = usize::from(r.u16()?);
        let uri = core::str::from_utf8(r.take(len)?).map_err(|_| RecordError::Invalid)?;
        uris.push(Box::from(uri));
    }
    if !r.0.is_empty() {
        return Err(RecordError::Length);
    }
    let session = Session {
        legacy: Some(legacy),
        log_level,
        initialized: flags & INITIALIZED != 0,
        uris,
        caps,
        ..Session::default()
    };
    Ok((session, principal))
}

/// Fuzz harness (`cargo fuzz run session_record`): any bytes decode to a record or a
/// refusal, never a panic; a record that decodes is canonical (it encodes back to the
/// same bytes), so reading and writing a store never changes what it holds.
#[cfg(fuzzing)]
#[doc(hidden)]
pub fn fuzz_session_record(data: &[u8]) {
    if let Ok((session, principal)) = decode(data) {
        let mut out = Vec::new();
        encode(&session, principal.as_ref(), &mut out);
        assert_eq!(out, data, "a record that decodes is written back the same");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::mrtr::InputKind;

    fn full() -> (Session, Principal) {
        let session = Session {
            legacy: Some(Revision::V2025_06_18),
            log_level: Some(LogLevel::Warning),
            initialized: true,
            uris: vec!["file:///a".into(), "mem://b/é".into()],
            caps: ClientCapabilities::NONE.with(InputKind::Roots).with_sampling_tools(),
            serial: 7,
            token: None,
            changes: 3,
        };
        (session, Principal::of(b"alice"))
    }

    #[test]
    fn a_record_reads_back_as_the_session_it_was_written_from() {
        let (session, alice) = full();
        let mut out = Vec::new();
        encode(&session, Some(&alice), &mut out);
        let (back, principal) = decode(&out).unwrap();
        assert_eq!(principal, Some(alice));
        assert_eq!(back.legacy, session.legacy);
        assert_eq!(back.log_level, session.log_level);
        assert!(back.initialized);
        assert_eq!(back.uris, session.uris);
        assert_eq!(back.caps, session.caps);
        assert_eq!(back.serial, 0, "the engine numbers a loaded session itself");
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        let session = Session {
            legacy: Some(Revision::V2025_11_25),
            log_level: Some(LogLevel::Debug),
            initialized: true,
            uris: vec!["a://b".into()],
            ..Session::default()
        };
        let mut out = Vec::new();
        encode(&session, None, &mut out);
        assert_eq!(out, [&[1, 2, 1, 1, 0, 0, 1, 0, 5][..], b"a://b"].concat());
        let empty = Session { legacy: Some(Revision::V2025_11_25), ..Session::default() };
        encode(&empty, Some(&Principal([9; 32])), &mut out);
        assert_eq!(out.len(), 5 + 32 + 2);
        assert_eq!(&out[..5], &[1, 2, 2, 0, 0]);
    }

    #[test]
    fn a_record_with_the_longest_allowed_uris_reads_back_whole() {
        // The longest uri a subscription may have (`Config::max_subscribed_uri_len` is at
        // most 65,535 bytes), ending in a two-byte character across the last bytes.
        let longest = |c: char| {
            let mut uri = String::from("test://template/");
            while uri.len() + c.len_utf8() + 2 <= usize::from(u16::MAX) {
                uri.push(c);
            }
            while uri.len() + 2 < usize::from(u16::MAX) {
                uri.push('x');
            }
            uri.push('é');
            assert_eq!(uri.len(), usize::from(u16::MAX));
            Box::<str>::from(uri)
        };
        let session = Session {
            legacy: Some(Revision::V2025_11_25),
            uris: vec![longest('a'), longest('€'), longest('𝄞')],
            ..Session::default()
        };
        let mut out = Vec::new();
        encode(&session, None, &mut out);
        let (back, _) = decode(&out).expect("a record with the longest uris reads back");
        assert_eq!(back.uris, session.uris);
        // A uri past what the format holds (the engine never keeps one) is left out whole,
        // never cut inside a character: the record still reads back.
        // Six bytes, then two-byte characters: the old writer cut at 65,535, inside one.
        let mut too_long = String::from("test:/");
        while too_long.len() <= usize::from(u16::MAX) {
            too_long.push('é');
        }
        let session = Session {
            legacy: Some(Revision::V2025_11_25),
            uris: vec!["a://1".into(), too_long.into(), "a://2".into()],
            ..Session::default()
        };
        encode(&session, None, &mut out);
        let (back, _) = decode(&out).expect("readable");
        assert_eq!(back.uris, [Box::from("a://1"), Box::from("a://2")]);
    }

    #[test]
    fn every_malformed_record_is_refused_without_a_panic() {
        let (session, alice) = full();
        let mut good = Vec::new();
        encode(&session, Some(&alice), &mut good);
        for n in 0..good.len() {
            assert_eq!(decode(&good[..n]).map(|_| ()), Err(RecordError::Length), "cut at {n}");
        }
        let mut long = good.clone();
        long.push(0);
        assert_eq!(decode(&long).map(|_| ()), Err(RecordError::Length));
        let with = |i: usize, b: u8| {
            let mut r = good.clone();
            r[i] = b;
            decode(&r).map(|_| ())
        };
        assert_eq!(with(0, 2), Err(RecordError::Version(2)));
        assert_eq!(with(1, 3), Err(RecordError::Invalid), "no such revision");
        assert_eq!(with(1, 0), Err(RecordError::Invalid));
        assert_eq!(with(2, 4 | HAS_PRINCIPAL), Err(RecordError::Invalid), "an unknown flag");
        assert_eq!(with(3, 9), Err(RecordError::Invalid), "no such level");
        assert_eq!(with(4, 64), Err(RecordError::Invalid), "an unknown capability");
        let mut bad_utf8 = Vec::new();
        encode(
            &Session { legacy: Some(Revision::V2025_11_25), uris: vec!["ab".into()], ..Session::default() },
            None,
            &mut bad_utf8,
        );
        let at = bad_utf8.len() - 1;
        bad_utf8[at] = 0xff;
        assert_eq!(decode(&bad_utf8).map(|_| ()), Err(RecordError::Invalid));
        let too_many = [&[1, 2, 0, 0, 0][..], &65u16.to_be_bytes()].concat();
        assert_eq!(decode(&too_many).map(|_| ()), Err(RecordError::Invalid));
    }
}
