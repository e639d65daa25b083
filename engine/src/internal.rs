//! The internals the fuzz harnesses (the `mcp-engine-fuzz` crate in `fuzz/`) need beyond
//! the public API, exported only under `--cfg fuzzing` (which `cargo fuzz` sets). Not an
//! API: nothing here is stable. Re-exports, and the one harness that needs the sealing
//! internals of `requestState` (`fuzz_request_state`, below); every other harness lives in
//! the fuzz crate but the three re-exported first, which stay with the code they check.

use crate::mcp::mrtr::{
    self, InputKind, InputRequest, InputRequired, MAX_HOST_STATE_LEN, MAX_SEALED_LEN, Method, StateError,
    StateKeys,
};
use crate::time::{Clock, Lifetime};

// The harnesses that stay with the code they check.
pub use crate::catalog::schema::fuzz_schema_differential;
pub use crate::http::store::session_record::fuzz_session_record;
pub use crate::wire::cursor::fuzz_cursor;

// Resource templates.
pub use crate::catalog::uritemplate::{
    Captures, MAX_PATH_EXPRESSIONS, MAX_QUERY_PAIRS, MAX_TEMPLATE_LEN, MAX_TEMPLATE_VARS, UriTemplate,
};

// Pagination cursors.
pub use crate::wire::cursor::{CURSOR_LEN, CursorError, ListKind};

// The MCP header matcher.
pub use crate::wire::headers::{
    BodyValue, Expected, HeaderName, MAX_DECODED_LEN, Mismatch, MismatchReason, ParamCheck,
    check as check_headers, decode_value as decode_header_value,
};

// The HTTP/1.1 connection codec.
pub use crate::wire::http1::{BodyKind, Conn, Head, HttpError, Input, Limits};

// The JSON string writer.
pub use crate::wire::json::write_str as write_json_str;

/// Whether `bytes`, a task record as `StoreEvent::SaveTask` handed it to a store, decodes
/// back (the `task_store` harness checks every record its store keeps).
pub fn task_record_decodes(bytes: &[u8]) -> bool {
    let mut r = crate::mcp::tasks::Record::default();
    crate::mcp::tasks::record::decode(bytes, &mut r).is_ok()
}

/// The `request_state` harness: `requestState` sealing and verification. Anything a
/// client may send never verifies; a state the engine sealed opens to what was sealed, and
/// a changed byte, another method, another digest, another key or a later time refuses it.
pub fn fuzz_request_state(data: &[u8]) {
    let keys_of = |sign: [u8; 32], previous: &[[u8; 32]]| StateKeys {
        sign,
        previous: previous.iter().copied().collect(),
    };
    let key = keys_of([42; 32], &[]);
    const LIFE: Lifetime = Lifetime { ttl: 600_000_000, skew: 30_000_000 };
    let Some((&mode, rest)) = data.split_first() else { return };
    let digest = [mode; 32];
    let mut buf = Vec::with_capacity(MAX_SEALED_LEN + 8);
    if mode % 2 == 0 {
        // Anything a client may send: never a panic, never accepted (that would be a forgery).
        let text = String::from_utf8_lossy(rest);
        let r = mrtr::open(Some(&key), &text, Clock::default(), LIFE, Method::CallTool, &digest, &mut buf);
        assert!(r.is_err(), "an unsealed state verified: {text:?}");
        return;
    }
    // A state the engine sealed: opens to what was sealed, and a changed byte, another
    // method, another digest or a later time refuses it.
    let (spec, host) = rest.split_at(rest.len().min(24));
    let keys: Vec<String> =
        spec.chunks(3).map(|c| format!("k{}", c.iter().map(|b| u32::from(*b)).sum::<u32>())).collect();
    let requests: Vec<InputRequest<'_>> = keys.iter().map(|k| InputRequest::list_roots(k)).collect();
    let host = &host[..host.len().min(MAX_HOST_STATE_LEN)];
    let ir = InputRequired::new(&requests).state(host);
    if mrtr::check(&ir, Some(&key), false).is_err() {
        return; // duplicate keys: refused before anything is sealed
    }
    let sent: Vec<&InputRequest<'_>> = requests.iter().collect();
    let mut out = Vec::new();
    // Odd modes with 0x10 set seal on the wall clock, the others on the Instants.
    let wall = mode & 0x10 != 0;
    let t = u64::from(mode) * 1000;
    let clock = |t: u64| if wall { Clock { mono: 0, wall: Some(t) } } else { Clock { mono: t, wall: None } };
    let expiry = clock(t).expiry(LIFE);
    let last = if wall { expiry.at + LIFE.skew } else { expiry.at };
    mrtr::seal(&mut out, &key, expiry, Method::GetPrompt, &digest, &sent, host);
    let text = core::str::from_utf8(&out[1..out.len() - 1]).expect("base64url is ASCII");
    let opened = mrtr::open(Some(&key), text, clock(last), LIFE, Method::GetPrompt, &digest, &mut buf)
        .expect("a sealed state opens until its expiry");
    assert_eq!(&buf[opened.host.clone()], host);
    assert_eq!(opened.asked.len(), keys.len());
    for ((kind, range), key) in opened.asked.iter().zip(&keys) {
        assert_eq!(*kind, InputKind::Roots);
        assert_eq!(&buf[range.clone()], key.as_bytes());
    }
    assert_eq!(
        mrtr::open(Some(&key), text, clock(last + 1), LIFE, Method::GetPrompt, &digest, &mut buf).err(),
        Some(StateError::Expired)
    );
    let other_clock = if wall { Clock { mono: t, wall: None } } else { Clock { mono: t, wall: Some(t) } };
    assert_eq!(
        mrtr::open(Some(&key), text, other_clock, LIFE, Method::GetPrompt, &digest, &mut buf).err(),
        Some(StateError::Expired)
    );
    assert_eq!(
        mrtr::open(Some(&key), text, clock(t), LIFE, Method::CallTool, &digest, &mut buf).err(),
        Some(StateError::Mismatch)
    );
    let other = [mode.wrapping_add(1); 32];
    assert_eq!(
        mrtr::open(Some(&key), text, clock(t), LIFE, Method::GetPrompt, &other, &mut buf).err(),
        Some(StateError::Mismatch)
    );
    let other_key = keys_of([7; 32], &[]);
    assert_eq!(
        mrtr::open(Some(&other_key), text, clock(t), LIFE, Method::GetPrompt, &digest, &mut buf).err(),
        Some(StateError::Forged)
    );
    // Rotated: a key set that keeps the sealing key as previous opens it.
    let rotated = keys_of([7; 32], &[[9; 32], [42; 32]]);
    assert!(mrtr::open(Some(&rotated), text, clock(t), LIFE, Method::GetPrompt, &digest, &mut buf).is_ok());
    let mut tampered = text.as_bytes().to_vec();
    let at = usize::from(mode) % tampered.len();
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ASCII");
    assert!(
        mrtr::open(Some(&key), &tampered, clock(t), LIFE, Method::GetPrompt, &digest, &mut buf).is_err(),
        "a changed state verified"
    );
}
