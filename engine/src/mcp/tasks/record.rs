//! The task record: what a task store keeps of a task, so that another node sharing the
//! store can read, answer and cancel it, and so that a task's result outlives the process
//! that ran it. `docs/decisions.md` ("The task record") is the format's reference; this
//! file is its only reader and writer.
//!
//! The record holds what `tasks/get`, `tasks/update`, `tasks/cancel` and `tasks/result`
//! need on any node: the status, message, times, TTL and poll interval, the tool's name
//! (not its catalog index: catalogs differ between nodes), the call's arguments and
//! request id, the outcome, the outstanding input requests and the client's answers, the
//! digests of the keys used, and who runs the work (the owner: a boot id drawn from the
//! engine's entropy at start, and the node's configured name) with the lease the owner
//! renews. It holds nothing only one process can use: routes, session serials, the
//! requests waiting on `tasks/result`. The task id is the store's key; the token in the
//! record is checked against it. A task made without a principal in an HTTP session keeps
//! that session's key (`tasks::session_key`, a digest of its token, the same on every
//! node), so every node finds it for that session only.
//!
//! Version 1, all integers big-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 1 | format version, `1` |
//! | 1 | revision: `2` = `2025-11-25`, `3` = `2026-07-28` |
//! | 1 | status: `0` working, `1` input_required, `2` completed, `3` failed, `4` cancelled |
//! | 1 | flags: bit 0 a principal follows, 1 a status message, 2 the outcome is an error object, 3 the host set input state, 4 a session key follows; other bits zero |
//! | 1 | client capabilities (as in the session record) |
//! | 16 | the task's token |
//! | 32 | the principal's digest, when flag bit 0 is set |
//! | 16 | the creating session's key, when flag bit 4 is set (never with bit 0) |
//! | 8 | the record's revision (1 when created, one more with each save) |
//! | 8 | `createdAt`, microseconds since the Unix epoch |
//! | 8 | `lastUpdatedAt`, the same |
//! | 8 | `ttlMs` |
//! | 8 | `pollIntervalMs` |
//! | 16 | the owner's boot id |
//! | 1 + n | the owner's node name (at most 64 bytes, UTF-8; may be empty) |
//! | 8 | the owner's lease: until when (wall clock, microseconds) the owner says it runs the work |
//! | 1 + n | the creating request's JSON-RPC id, as written (at most 128 bytes) |
//! | 2 + n | the status message (at most 1,024 bytes, UTF-8) |
//! | 2 + n | the tool's name (UTF-8, not empty) |
//! | 4 + n | the call's arguments (compact JSON) |
//! | 4 + n | the outcome (a `CallToolResult` or an error object; empty while running) |
//! | 4 + n | the latest round's input requests (keys and bodies, back to back) |
//! | 1 | number of input requests, at most 16 |
//! | 26 each | its JSON-RPC id (8), key and body ranges in the requests (4 + 4, 4 + 4: start, end), kind (1: `0` elicitation, `1` url elicitation, `2` sampling, `3` roots), answered (1: `0` or `1`) |
//! | 4 + n | the client's answers (keys and values, back to back) |
//! | 1 | number of answers, at most 16 |
//! | 17 each | key and value ranges in the answers (4 + 4, 4 + 4), error (1: `0` or `1`) |
//! | 4 + n | the host's input state |
//! | 2 | number of used key digests, at most 256 |
//! | 8 each | a key digest |
//!
//! Decoding refuses anything else (another version, an unknown value or bit, a range
//! outside its buffer or backwards, a count over its bound, a short or long record, text
//! that is not UTF-8) with [`RecordError`], and never panics: the engine then treats the
//! task as not found (`-32602`), which is what the client would see had it expired.
//!
//! Flag bit 4 came later within version 1 (issue 27): a record without it reads as
//! before (bound to no session), and one with it is set only where the binding matters;
//! an engine that predates the bit refuses such a record (an unknown bit), so during a
//! rolling upgrade an old node answers a session's task "not found" rather than show it
//! to another session.

use crate::mcp::mrtr::{ClientCapabilities, Entry, InputKind, MAX_INPUT_REQUESTS};
use crate::mcp::tasks::{
    Asked, MAX_STATUS_MESSAGE_LEN, MAX_TASK_KEYS, Record, SESSION_KEY_LEN, Status, TOKEN_LEN,
};
use crate::mcp::tickets::IdBuf;
use crate::revision::Revision;
use crate::wire::record::{Reader, RecordError};

/// The format version this engine writes (and the only one it reads).
pub(crate) const VERSION: u8 = 1;
/// The longest node name a record holds, in bytes.
pub(crate) const MAX_NODE_NAME_LEN: usize = 64;
/// The longest buffer field a record holds (arguments, outcome, requests, answers,
/// state), in bytes: 16 MiB, above any frame the engine reads.
pub(crate) const MAX_FIELD_LEN: usize = 16 << 20;

const HAS_PRINCIPAL: u8 = 1;
const HAS_MESSAGE: u8 = 2;
const ERROR_OUTCOME: u8 = 4;
const HAS_STATE: u8 = 8;
const HAS_SESSION: u8 = 16;

/// Who runs a task's work: the engine that created it, named by a boot id drawn from
/// its entropy when it started and by the node name its host configured (empty when
/// none). Two engines never share a boot id; an engine that restarts keeps its node name
/// and draws a new boot id, which is how it tells its own dead tasks from live ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) boot: [u8; 16],
    pub(crate) node: [u8; MAX_NODE_NAME_LEN],
    pub(crate) node_len: u8,
}

impl Default for Owner {
    fn default() -> Self {
        Self { boot: [0; 16], node: [0; MAX_NODE_NAME_LEN], node_len: 0 }
    }
}

impl Owner {
    /// An owner named `node` (cut to [`MAX_NODE_NAME_LEN`] bytes on a char boundary).
    pub(crate) fn new(boot: [u8; 16], node: &str) -> Self {
        let node = crate::error::cut(node, MAX_NODE_NAME_LEN).as_bytes();
        let mut o = Self { boot, node: [0; MAX_NODE_NAME_LEN], node_len: node.len() as u8 };
        o.node[..node.len()].copy_from_slice(node);
        o
    }

    pub(crate) fn node(&self) -> &[u8] {
        &self.node[..usize::from(self.node_len)]
    }
}

/// What a record says beside the task itself: its revision, its owner and the lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Counts the saves of this task: 1 when created.
    pub(crate) revision: u64,
    pub(crate) owner: Owner,
    /// Wall clock (microseconds since the Unix epoch) until which the owner runs the work.
    pub(crate) lease_until: u64,
}

/// How a node reads a task record's work (see [`judge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// Finished: nothing runs any more.
    Finished,
    /// This engine runs it.
    Here,
    /// Another live engine runs it (its lease holds).
    Elsewhere,
    /// Nobody runs it any more: it reads as `failed` with this message.
    Dead(&'static str),
}

/// The message of a task whose node restarted while it ran.
pub(crate) const RESTARTED: &str = "the server restarted while the task ran";
/// The message of a task whose owner stopped renewing its lease.
pub(crate) const LEASE_LOST: &str = "the server running the task stopped (its lease ran out)";

/// Who runs the work of a task whose record says `status` and `meta`, seen by engine
/// `me` at wall time `wall` with clock skew `skew_us`: a task of this node name under
/// another boot id was this node's before a restart (dead); one whose lease ended more
/// than the skew ago is dead; one of this boot id is here.
pub(crate) fn judge(status: Status, meta: &Meta, me: &Owner, wall: u64, skew_us: u64) -> Liveness {
    if status.is_terminal() {
        return Liveness::Finished;
    }
    if meta.owner.boot == me.boot {
        return Liveness::Here;
    }
    if !me.node().is_empty() && meta.owner.node() == me.node() {
        return Liveness::Dead(RESTARTED);
    }
    if meta.lease_until.saturating_add(skew_us) < wall {
        return Liveness::Dead(LEASE_LOST);
    }
    Liveness::Elsewhere
}

fn status_byte(s: Status) -> u8 {
    match s {
        Status::Working => 0,
        Status::InputRequired => 1,
        Status::Completed => 2,
        Status::Failed => 3,
        Status::Cancelled => 4,
    }
}

fn kind_byte(k: InputKind) -> u8 {
    match k {
        InputKind::Elicitation => 0,
        InputKind::ElicitationUrl => 1,
        InputKind::Sampling => 2,
        InputKind::Roots => 3,
    }
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n.min(u32::MAX as usize) as u32).to_be_bytes());
}

fn put_bytes32(out: &mut Vec<u8>, b: &[u8]) {
    let b = &b[..b.len().min(MAX_FIELD_LEN)];
    put_u32(out, b.len());
    out.extend_from_slice(b);
}

fn put_range(out: &mut Vec<u8>, r: &core::ops::Range<usize>) {
    put_u32(out, r.start);
    put_u32(out, r.end);
}

/// Writes the record of task `r`, whose tool is named `tool`, into `out` (cleared first).
pub(crate) fn encode(r: &Record, tool: &str, meta: &Meta, out: &mut Vec<u8>) {
    out.clear();
    out.push(VERSION);
    out.push(match r.revision {
        Some(Revision::V2025_11_25 | Revision::V2025_06_18) => 2,
        _ => 3,
    });
    out.push(status_byte(r.status()));
    let flags = (u8::from(r.principal.is_some()) * HAS_PRINCIPAL)
        | (u8::from(r.has_message) * HAS_MESSAGE)
        | (u8::from(r.error_outcome) * ERROR_OUTCOME)
        | (u8::from(r.has_state) * HAS_STATE)
        | (u8::from(r.session_key.is_some() && r.principal.is_none()) * HAS_SESSION);
    out.push(flags);
    out.push(r.caps.bits());
    out.extend_from_slice(&r.token);
    match (&r.principal, &r.session_key) {
        (Some(p), _) => out.extend_from_slice(p),
        (None, Some(k)) => out.extend_from_slice(k),
        (None, None) => {}
    }
    for n in [meta.revision, r.created, r.updated, r.ttl_ms, r.poll_ms] {
        out.extend_from_slice(&n.to_be_bytes());
    }
    out.extend_from_slice(&meta.owner.boot);
    out.push(meta.owner.node_len);
    out.extend_from_slice(meta.owner.node());
    out.extend_from_slice(&meta.lease_until.to_be_bytes());
    let id = r.request_id.as_ref().map(IdBuf::as_bytes).unwrap_or_default();
    out.push(id.len() as u8);
    out.extend_from_slice(id);
    let message = crate::error::cut(&r.message, MAX_STATUS_MESSAGE_LEN).as_bytes();
    out.extend_from_slice(&(message.len() as u16).to_be_bytes());
    out.extend_from_slice(message);
    let tool = crate::error::cut(tool, usize::from(u16::MAX)).as_bytes();
    out.extend_from_slice(&(tool.len() as u16).to_be_bytes());
    out.extend_from_slice(tool);
    put_bytes32(out, &r.args);
    put_bytes32(out, &r.outcome);
    put_bytes32(out, &r.requests);
    out.push(r.asked.len() as u8);
    for a in &r.asked {
        out.extend_from_slice(&a.id.to_be_bytes());
        put_range(out, &a.key);
        put_range(out, &a.body);
        out.push(kind_byte(a.kind));
        out.push(u8::from(a.answered));
    }
    put_bytes32(out, &r.responses);
    out.push(r.entries.len() as u8);
    for e in &r.entries {
        put_range(out, &e.key);
        put_range(out, &e.value);
        out.push(u8::from(e.error));
    }
    put_bytes32(out, &r.state);
    let keys = &r.used_keys[..r.used_keys.len().min(MAX_TASK_KEYS)];
    out.extend_from_slice(&(keys.len() as u16).to_be_bytes());
    for k in keys {
        out.extend_from_slice(&k.to_be_bytes());
    }
}

/// What [`decode`] read beside the task: the record's meta and the tool's name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decoded<'a> {
    pub(crate) meta: Meta,
    pub(crate) tool: &'a str,
}

/// Reads a record into `r` (its buffers reused; what only a process holds, its route,
/// session and waiters, cleared; `held` false, `tool` left for the caller to find by
/// name). On an error `r` is left in an unspecified but valid state.
pub(crate) fn decode<'a>(bytes: &'a [u8], r: &mut Record) -> Result<Decoded<'a>, RecordError> {
    let mut rd = Reader(bytes);
    let version = rd.byte()?;
    if version != VERSION {
        return Err(RecordError::Version(version));
    }
    r.revision = Some(match rd.byte()? {
        2 => Revision::V2025_11_25,
        3 => Revision::V2026_07_28,
        _ => return Err(RecordError::Invalid),
    });
    r.status = Some(match rd.byte()? {
        0 => Status::Working,
        1 => Status::InputRequired,
        2 => Status::Completed,
        3 => Status::Failed,
        4 => Status::Cancelled,
        _ => return Err(RecordError::Invalid),
    });
    let flags = rd.byte()?;
    if flags & !(HAS_PRINCIPAL | HAS_MESSAGE | ERROR_OUTCOME | HAS_STATE | HAS_SESSION) != 0
        || flags & (HAS_PRINCIPAL | HAS_SESSION) == HAS_PRINCIPAL | HAS_SESSION
    {
        return Err(RecordError::Invalid);
    }
    r.caps = ClientCapabilities::from_bits(rd.byte()?).ok_or(RecordError::Invalid)?;
    r.token.copy_from_slice(rd.take(TOKEN_LEN)?);
    let _ =
        base64::Engine::encode_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD, r.token, &mut r.id);
    r.principal = if flags & HAS_PRINCIPAL != 0 {
        let mut p = [0u8; 32];
        p.copy_from_slice(rd.take(32)?);
        Some(p)
    } else {
        None
    };
    r.session_key = if flags & HAS_SESSION != 0 {
        let mut k = [0u8; SESSION_KEY_LEN];
        k.copy_from_slice(rd.take(SESSION_KEY_LEN)?);
        Some(k)
    } else {
        None
    };
    let revision = rd.u64()?;
    r.created = rd.u64()?;
    r.updated = rd.u64()?;
    r.ttl_ms = rd.u64()?;
    r.poll_ms = rd.u64()?;
    let mut boot = [0u8; 16];
    boot.copy_from_slice(rd.take(16)?);
    let node_len = usize::from(rd.byte()?);
    if node_len > MAX_NODE_NAME_LEN {
        return Err(RecordError::Invalid);
    }
    let node = core::str::from_utf8(rd.take(node_len)?).map_err(|_| RecordError::Invalid)?;
    let owner = Owner::new(boot, node);
    let lease_until = rd.u64()?;
    let id_len = usize::from(rd.byte()?);
    if id_len == 0 || id_len > crate::error::MAX_TICKET_ID_LEN {
        return Err(RecordError::Invalid);
    }
    let mut id = IdBuf { len: id_len as u8, bytes: [0; crate::error::MAX_TICKET_ID_LEN] };
    id.bytes[..id_len].copy_from_slice(rd.take(id_len)?);
    r.request_id = Some(id);
    let len = usize::from(rd.u16()?);
    if len > MAX_STATUS_MESSAGE_LEN || (flags & HAS_MESSAGE == 0 && len != 0) {
        return Err(RecordError::Invalid);
    }
    let message = core::str::from_utf8(rd.take(len)?).map_err(|_| RecordError::Invalid)?;
    r.message.clear();
    r.message.push_str(message);
    r.has_message = flags & HAS_MESSAGE != 0;
    let len = usize::from(rd.u16()?);
    let tool = core::str::from_utf8(rd.take(len)?).map_err(|_| RecordError::Invalid)?;
    if tool.is_empty() {
        return Err(RecordError::Invalid);
    }
    rd.bytes32(&mut r.args, MAX_FIELD_LEN)?;
    rd.bytes32(&mut r.outcome, MAX_FIELD_LEN)?;
    r.error_outcome = flags & ERROR_OUTCOME != 0;
    rd.bytes32(&mut r.requests, MAX_FIELD_LEN)?;
    let count = usize::from(rd.byte()?);
    if count > MAX_INPUT_REQUESTS {
        return Err(RecordError::Invalid);
    }
    r.asked.clear();
    for _ in 0..count {
        let id = rd.u64()?;
        let key = rd.range(r.requests.len())?;
        let body = rd.range(r.requests.len())?;
        let kind = match rd.byte()? {
            0 => InputKind::Elicitation,
            1 => InputKind::ElicitationUrl,
            2 => InputKind::Sampling,
            3 => InputKind::Roots,
            _ => return Err(RecordError::Invalid),
        };
        let answered = rd.flag()?;
        let _ = r.asked.push(Asked { id, key, body, kind, answered });
    }
    rd.bytes32(&mut r.responses, MAX_FIELD_LEN)?;
    let count = usize::from(rd.byte()?);
    if count > MAX_INPUT_REQUESTS {
        return Err(RecordError::Invalid);
    }
    r.entries.clear();
    for _ in 0..count {
        let key = rd.range(r.responses.len())?;
        let value = rd.range(r.responses.len())?;
        let error = rd.flag()?;
        let _ = r.entries.push(Entry { key, value, error });
    }
    rd.bytes32(&mut r.state, MAX_FIELD_LEN)?;
    r.has_state = flags & HAS_STATE != 0;
    if !r.has_state && !r.state.is_empty() {
        return Err(RecordError::Invalid);
    }
    let count = usize::from(rd.u16()?);
    if count > MAX_TASK_KEYS {
        return Err(RecordError::Invalid);
    }
    r.used_keys.clear();
    for _ in 0..count {
        r.used_keys.push(rd.u64()?);
    }
    if !rd.0.is_empty() {
        return Err(RecordError::Length);
    }
    r.route = None;
    r.session = 0;
    r.waiters.clear();
    r.trace = None;
    r.held = false;
    Ok(Decoded { meta: Meta { revision, owner, lease_until }, tool })
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default, clippy::reversed_empty_ranges)]
mod tests {
    use super::*;

    fn sample() -> (Record, Meta) {
        let mut r = Record::default();
        r.token = [5; TOKEN_LEN];
        let _ = base64::Engine::encode_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            r.token,
            &mut r.id,
        );
        r.principal = Some([9; 32]);
        r.revision = Some(Revision::V2026_07_28);
        r.status = Some(Status::InputRequired);
        r.set_message(Some("waiting for you"), 7);
        r.created = 1_700_000_000_000_000;
        r.updated = 1_700_000_000_500_000;
        r.ttl_ms = 60_000;
        r.poll_ms = 250;
        r.args.extend_from_slice(br#"{"a":1}"#);
        r.request_id = IdBuf::of(crate::jsonrpc::IdRef::Str("req-1"));
        r.caps = ClientCapabilities::from_bits(0b11).unwrap_or(ClientCapabilities::NONE);
        r.requests.extend_from_slice(br#""k1"{"method":"roots/list"}"k2"{"method":"roots/list"}"#);
        let _ = r.asked.push(Asked { id: 3, key: 0..4, body: 4..27, kind: InputKind::Roots, answered: true });
        let _ =
            r.asked.push(Asked { id: 4, key: 27..31, body: 31..54, kind: InputKind::Roots, answered: false });
        r.responses.extend_from_slice(br#"k1{"roots":[]}"#);
        let _ = r.entries.push(Entry { key: 0..2, value: 2..14, error: false });
        r.state.extend_from_slice(b"opaque");
        r.has_state = true;
        r.used_keys.extend([1, 2, u64::MAX]);
        let meta =
            Meta { revision: 3, owner: Owner::new([1; 16], "node-a"), lease_until: 1_700_000_030_000_000 };
        (r, meta)
    }

    fn same(a: &Record, b: &Record) {
        assert_eq!(a.token, b.token);
        assert_eq!(a.id, b.id);
        assert_eq!(a.principal, b.principal);
        assert_eq!(a.session_key, b.session_key);
        assert_eq!(a.revision, b.revision);
        assert_eq!(a.status, b.status);
        assert_eq!((a.message.as_str(), a.has_message), (b.message.as_str(), b.has_message));
        assert_eq!((a.created, a.updated, a.ttl_ms, a.poll_ms), (b.created, b.updated, b.ttl_ms, b.poll_ms));
        assert_eq!(a.args, b.args);
        assert_eq!(a.request_id.map(|i| i.as_bytes().to_vec()), b.request_id.map(|i| i.as_bytes().to_vec()));
        assert_eq!(a.caps.bits(), b.caps.bits());
        assert_eq!((&a.outcome, a.error_outcome), (&b.outcome, b.error_outcome));
        assert_eq!(a.requests, b.requests);
        assert_eq!(a.asked.len(), b.asked.len());
        for (x, y) in a.asked.iter().zip(&b.asked) {
            assert_eq!(
                (x.id, &x.key, &x.body, x.kind, x.answered),
                (y.id, &y.key, &y.body, y.kind, y.answered)
            );
        }
        assert_eq!(a.responses, b.responses);
        assert_eq!(a.entries.as_slice(), b.entries.as_slice());
        assert_eq!((&a.state, a.has_state), (&b.state, b.has_state));
        assert_eq!(a.used_keys, b.used_keys);
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let (r, meta) = sample();
        let mut bytes = Vec::new();
        encode(&r, "slow_tool", &meta, &mut bytes);
        let mut back = Record::default();
        let d = decode(&bytes, &mut back).expect("reads");
        same(&r, &back);
        assert_eq!(d.meta, meta);
        assert_eq!(d.tool, "slow_tool");
        assert!(!back.held);
        // A finished task with an error outcome and nothing asked, no principal.
        let mut r = Record::default();
        let _ = base64::Engine::encode_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            r.token,
            &mut r.id,
        );
        r.revision = Some(Revision::V2025_11_25);
        r.status = Some(Status::Failed);
        r.outcome.extend_from_slice(br#"{"code":-32603,"message":"x"}"#);
        r.error_outcome = true;
        r.request_id = IdBuf::of(crate::jsonrpc::IdRef::I(-4));
        let meta = Meta { revision: 1, owner: Owner::default(), lease_until: 0 };
        encode(&r, "t", &meta, &mut bytes);
        assert_eq!(bytes[3] & HAS_SESSION, 0, "a record bound to no session is as before");
        back.session_key = Some([1; SESSION_KEY_LEN]);
        let d = decode(&bytes, &mut back).expect("reads");
        same(&r, &back);
        assert_eq!(back.session_key, None, "a record without the key reads as bound to no session");
        assert_eq!(d.meta, meta);
        // A session's task (no principal): its key, right after the token.
        r.session_key = Some([7; SESSION_KEY_LEN]);
        encode(&r, "t", &meta, &mut bytes);
        assert_eq!(bytes[3] & HAS_SESSION, HAS_SESSION);
        assert_eq!(&bytes[5 + TOKEN_LEN..5 + TOKEN_LEN + SESSION_KEY_LEN], &[7; SESSION_KEY_LEN]);
        decode(&bytes, &mut back).expect("reads");
        same(&r, &back);
        // A principal's task keeps no session key (its principal binds it).
        let (mut p, meta) = sample();
        p.session_key = Some([7; SESSION_KEY_LEN]);
        encode(&p, "t", &meta, &mut bytes);
        assert_eq!(bytes[3] & HAS_SESSION, 0);
        decode(&bytes, &mut back).expect("reads");
        assert_eq!((back.principal, back.session_key), (p.principal, None));
    }

    #[test]
    fn every_cut_and_every_flipped_byte_is_refused_or_read_without_a_panic() {
        let (r, meta) = sample();
        let mut bytes = Vec::new();
        encode(&r, "slow_tool", &meta, &mut bytes);
        let mut into = Record::default();
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n], &mut into).is_err(), "cut at {n}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(decode(&long, &mut into).err(), Some(RecordError::Length));
        for i in 0..bytes.len() {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = bytes.clone();
                b[i] = v;
                // Either refused or read: never a panic, never a range outside its buffer.
                if decode(&b, &mut into).is_ok() {
                    for a in &into.asked {
                        assert!(into.requests.get(a.key.clone()).is_some());
                        assert!(into.requests.get(a.body.clone()).is_some());
                    }
                    for e in &into.entries {
                        assert!(into.responses.get(e.value.clone()).is_some());
                    }
                }
            }
        }
    }

    #[test]
    fn malformed_fields_are_refused() {
        let (r, meta) = sample();
        let mut bytes = Vec::new();
        encode(&r, "slow_tool", &meta, &mut bytes);
        let mut into = Record::default();
        let mut b = bytes.clone();
        b[0] = 2;
        assert_eq!(decode(&b, &mut into).err(), Some(RecordError::Version(2)));
        for (at, v) in [(1, 1), (1, 4), (2, 5), (3, 0x20), (3, 0x11), (4, 0xff)] {
            let mut b = bytes.clone();
            b[at] = v;
            assert_eq!(decode(&b, &mut into).err(), Some(RecordError::Invalid), "byte {at} = {v}");
        }
        // A range past its buffer, and a backwards one.
        let mut r2 = Record::default();
        r2.request_id = IdBuf::of(crate::jsonrpc::IdRef::I(1));
        r2.requests.extend_from_slice(b"ab");
        let _ =
            r2.asked.push(Asked { id: 0, key: 0..3, body: 0..0, kind: InputKind::Roots, answered: false });
        encode(&r2, "t", &meta, &mut b);
        assert_eq!(decode(&b, &mut into).err(), Some(RecordError::Invalid));
        r2.asked[0].key = 2..1;
        encode(&r2, "t", &meta, &mut b);
        assert_eq!(decode(&b, &mut into).err(), Some(RecordError::Invalid));
        // An empty tool name, and a request id missing.
        r2.asked.clear();
        encode(&r2, "", &meta, &mut b);
        assert_eq!(decode(&b, &mut into).err(), Some(RecordError::Invalid));
        r2.request_id = None;
        encode(&r2, "t", &meta, &mut b);
        assert_eq!(decode(&b, &mut into).err(), Some(RecordError::Invalid));
    }

    #[test]
    fn who_runs_the_work() {
        let me = Owner::new([1; 16], "node-a");
        let meta =
            |boot, node: &str, lease| Meta { revision: 1, owner: Owner::new(boot, node), lease_until: lease };
        let skew = 5_000_000;
        let wall = 100_000_000;
        let judge_at = |m: &Meta| judge(Status::Working, m, &me, wall, skew);
        assert_eq!(
            judge(Status::Completed, &meta([2; 16], "node-a", 0), &me, wall, skew),
            Liveness::Finished
        );
        assert_eq!(judge_at(&meta([1; 16], "node-a", 0)), Liveness::Here);
        assert_eq!(judge_at(&meta([2; 16], "node-a", u64::MAX)), Liveness::Dead(RESTARTED));
        assert_eq!(judge_at(&meta([2; 16], "node-b", wall)), Liveness::Elsewhere);
        assert_eq!(judge_at(&meta([2; 16], "node-b", wall - skew)), Liveness::Elsewhere);
        assert_eq!(judge_at(&meta([2; 16], "node-b", wall - skew - 1)), Liveness::Dead(LEASE_LOST));
        // Without node names only the lease tells.
        let anon = Owner::new([3; 16], "");
        assert_eq!(judge(Status::Working, &meta([2; 16], "", wall), &anon, wall, skew), Liveness::Elsewhere);
    }
}
