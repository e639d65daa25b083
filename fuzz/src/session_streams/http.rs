//! The HTTP half of `session_streams`: session-bound clients over Streamable HTTP, their
//! requests' SSE streams, the standalone `GET` stream, event ids and resumption, streams
//! let go (`reconnect_later`) and parked, `DELETE`, input asked of the clients and their
//! responses (in their session, another one, or none).

use core::time::Duration;
use mcp_engine::Commands;
use std::collections::{HashMap, VecDeque};

use mcp_engine::error::{HostError, NotifyError};
use mcp_engine::http::store::{Loaded, LoadedEvents, StoreEvent, StoredEvent};
use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::mrtr::InputRequired;
use mcp_engine::{
    Config, Content, Event, Instant, PromptMessage, PromptOutput, ResourceContents, Ticket, ToolOutput,
};
use serde_json::Value;

use super::model::{self, Ask, AskResult, Found, Outcome, ReqKind, Round, caps_json, expect_ask, same_error};
use crate::common::{Bytes, lossy};

const MAX_OPS: usize = 300;
/// Connections the harness holds at once.
const PEERS: usize = 5;
/// Length of an SSE event id the engine writes.
const EVENT_ID_LEN: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Live,
    Answered,
    Cancelled,
}

/// Which `Mcp-Session-Id` a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    Sess(usize),
    /// None at all.
    Absent,
    /// An id that is not a session's (a real one altered, or made up).
    Bogus,
}

struct Sess {
    id: String,
    caps: u8,
    rev: &'static str,
    created: Instant,
    /// A `DELETE` of it was answered `200`, or a request naming it `404`.
    ended: bool,
    /// `notifications/initialized` was answered `202`.
    initialized: bool,
    /// The connection whose response is its standalone stream.
    standalone: Option<ConnId>,
    /// The step it was seen to end in.
    ended_step: u64,
    /// How often the engine loaded it from the store. Each load's standalone stream is a
    /// stream of its own (`engine/src/http/replay.rs`, `STANDALONE`: every engine's
    /// standalone stream of a session has a number of its own, its events never share
    /// ids), so a resumption replays only the events of the load it names.
    loads: u32,
}

/// A stream whose events have ids: a session's standalone stream, or a call's `POST`
/// response (whichever connection carries it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Standalone(usize),
    Post(usize),
}

/// An event (with an id) the harness saw.
struct EvRec {
    sess: usize,
    key: Key,
    /// Its place among the events of its stream the harness saw.
    index: u32,
    data: Vec<u8>,
    /// The step in which it was first seen.
    step: u64,
    /// Seen on its stream's own response (not only replayed on another).
    live: bool,
    /// Its session's [`Sess::loads`] when it was first seen: which of the engine's
    /// standalone streams of the session a standalone event belongs to.
    loads: u32,
}

/// How an event with an id is seen on a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// For the first time.
    New,
    /// Again, replayed by a resumption.
    Replayed,
    /// On its own stream, after a replay on another connection (read first) carried it.
    Live,
}

/// Where a call's stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    /// Not dispatched yet, or answered at once.
    Waiting,
    On(ConnId),
    Parked,
    Over,
}

struct Call {
    seq: u64,
    id: String,
    kind: ReqKind,
    named: Named,
    http10: bool,
    token: bool,
    ticket: Option<usize>,
    loc: Loc,
    /// Its final response was seen.
    done: bool,
    /// Its response became an SSE stream.
    streamed: bool,
    /// The host let its stream go: a `retry:` field, then the end of the stream.
    retry_due: bool,
}

struct Tk {
    ticket: Ticket,
    call: usize,
    state: State,
    round: Option<Round>,
    /// The step in which time first reached the round's deadline.
    expired: Option<u64>,
    rounds: u32,
    /// Something happened that may cancel it (its connection closed, its session
    /// ended, the client cancelled it).
    may_cancel: bool,
    /// It must be cancelled before the step ends.
    cancel_due: bool,
    /// The host answered it while its stream was on a connection: the answer must be
    /// seen before the step ends.
    answer_due: bool,
}

/// A client's response to a request of the server.
struct Frame {
    named: Named,
    counted: Option<(u64, Outcome)>,
    /// The step in which its `202` was seen.
    dispatched: Option<u64>,
}

/// The `Last-Event-ID` a `GET` carries.
#[derive(Debug, Clone)]
enum LastId {
    None,
    /// An id the engine wrote (perhaps padded with blanks).
    Known(String),
    /// Something else (a real one altered, made-up text).
    Bad,
    /// Two headers.
    Two,
}

#[derive(Debug, Clone)]
struct GetReq {
    named: Named,
    http10: bool,
    accept: bool,
    /// `MCP-Protocol-Version`: absent, the session's, or another.
    version: Option<bool>,
    last: LastId,
    /// The step it was sent in.
    step: u64,
}

/// What a connection sent and has not had a complete response to yet.
#[derive(Debug, Clone)]
enum Sent {
    Init { caps: u8, rev: &'static str },
    Initialized(Named),
    Call(usize),
    Reply(usize),
    Cancel(Named),
    Get(GetReq),
    Delete(Named),
}

/// The response being read on a connection.
#[derive(Debug, Default)]
struct Resp {
    status: u16,
    sse: bool,
    close: bool,
    length: usize,
    /// The stream its events belong to.
    key: Option<Key>,
    events: u32,
    /// A resumption: the events after the one named are replayed first.
    replay: Option<Replay>,
    /// The stream ends after the replay (a request's stream whose request is over).
    end_after_replay: bool,
    /// A resumption that waited for a ticket slot, of a call the harness saw parked:
    /// another resumption served in the same batch may have taken it first. It took the
    /// stream if its response is still open once read (else it ended with its replay).
    maybe_taken: Option<usize>,
    /// The final response of its call was seen: the stream ends next.
    final_seen: bool,
    retry_seen: bool,
    /// A fresh stream of a `2025-11-25` session: its first event is the priming one.
    priming: bool,
}

#[derive(Debug)]
struct Replay {
    /// The index of the event named, and of the last one replayed.
    last: u32,
    gap: bool,
    /// Indices of the stream's events the harness saw before the `GET` was sent, after
    /// the one named: without a gap, each is replayed.
    owed: Vec<u32>,
    over: bool,
}

struct Peer {
    id: ConnId,
    sent: VecDeque<Sent>,
    buf: Vec<u8>,
    resp: Option<Resp>,
    /// A complete response said `connection: close`.
    closed: bool,
    /// Its standalone stream was ended by its session's end: the engine closes it.
    ended_stream: bool,
    /// A request is being sent: a response read now was served at once, in order. One
    /// read later waited for a ticket slot, and was served with others in an order the
    /// harness does not see: what it must be depends on which went first.
    sending: bool,
}

struct HttpHarness {
    e: HttpEngine,
    now: Instant,
    step: u64,
    timeout: Duration,
    idle: Duration,
    max_sessions: usize,
    max_in_flight: usize,
    next_seq: u64,
    next_tag: u32,
    next_id: u64,
    sessions: Vec<Sess>,
    peers: [Option<Peer>; PEERS],
    stale: Vec<ConnId>,
    calls: Vec<Call>,
    tickets: Vec<Tk>,
    /// The server's requests: id → (ticket index, kind).
    asked: HashMap<u64, (usize, model::Kind)>,
    frames: Vec<Frame>,
    /// Counted responses by the id they answer.
    replies: HashMap<u64, Vec<usize>>,
    events: HashMap<String, EvRec>,
    /// Events the harness saw per stream, in order (their ids).
    streams: HashMap<Key, Vec<String>>,
    /// The catalog served has the tool `extra` (replacements toggle it).
    catalog_extra: bool,
    /// List changes each session's standalone stream is owed.
    list_changes: HashMap<usize, i32>,
    /// The host's session and event store (`HttpConfig::session_store` and
    /// `event_store`), in store mode.
    store: Option<HostStore>,
    trace: bool,
}

/// What the host's store keeps: records by session id, and each stream's events in the
/// order they were handed over.
#[derive(Default)]
struct HostStore {
    records: HashMap<String, Vec<u8>>,
    events: HashMap<StoredStream, Vec<KeptEvent>>,
}

/// A stream in the host's store: its session id and its number within the session.
type StoredStream = (String, u32);

/// An event the host's store keeps: its number, its data, and whether it is its stream's last.
type KeptEvent = (u32, Vec<u8>, bool);

/// What a store event asks of the host, copied out of the engine's event.
enum StoreAsk {
    Load(ConnId, String),
    Save(ConnId, String, Option<Vec<u8>>),
    Events(ConnId, String, u32, u32),
}

fn new_peer(id: ConnId) -> Peer {
    Peer {
        id,
        sent: VecDeque::new(),
        buf: Vec::new(),
        resp: None,
        closed: false,
        ended_stream: false,
        sending: false,
    }
}

impl HttpHarness {
    fn new(cfg: u8) -> Self {
        let timeout = Duration::from_secs([1, 3][usize::from(cfg >> 2) & 1]);
        let idle = Duration::from_secs([4, 3600][usize::from(cfg >> 3) & 1]);
        let max_in_flight = usize::from(cfg & 3) + 1;
        let max_sessions = 2 + usize::from((cfg >> 4) & 1);
        let mut c = Config::new("fuzz", "0");
        c.max_in_flight(max_in_flight).input_timeout(timeout).list_changed(true).max_frame_len(4096);
        let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
        http.max_connections(4 * PEERS)
            .max_sessions(max_sessions)
            .session_idle_timeout(idle)
            .replay_buffer([64 * 1024, 600][usize::from(cfg >> 5) & 1])
            .sse_keepalive(Duration::from_millis([0, 1500][usize::from(cfg >> 6) & 1]))
            .max_body(4096);
        // Store mode (a small replay buffer and keep-alives): sessions and their streams'
        // events are kept by the host too, so resumptions the buffer no longer covers are
        // served from the store.
        let store = (cfg >> 5) & 3 == 3;
        http.session_store(store).event_store(store);
        let mut e = HttpEngine::new(c, http, model::catalog(false));
        e.set_entropy(&[cfg | 1; 32]);
        Self {
            e,
            now: Instant::ZERO,
            step: 0,
            timeout,
            idle,
            max_sessions,
            max_in_flight,
            next_seq: 0,
            next_tag: 0,
            next_id: 1,
            sessions: Vec::new(),
            peers: Default::default(),
            stale: Vec::new(),
            calls: Vec::new(),
            tickets: Vec::new(),
            asked: HashMap::new(),
            frames: Vec::new(),
            replies: HashMap::new(),
            events: HashMap::new(),
            streams: HashMap::new(),
            catalog_extra: false,
            list_changes: HashMap::new(),
            store: store.then(HostStore::default),
            trace: std::env::var_os("MCP_FUZZ_TRACE").is_some(),
        }
    }

    /// Whether session `s` is live for sure (not ended, and younger than its idle timeout).
    fn live(&self, s: usize) -> bool {
        let sess = &self.sessions[s];
        !sess.ended && self.now < sess.created + self.idle
    }

    /// Whether a `DELETE` of session `s` was sent and its response not read yet.
    fn deleting(&self, s: usize) -> bool {
        self.peers
            .iter()
            .flatten()
            .any(|p| p.sent.iter().any(|x| matches!(x, Sent::Delete(Named::Sess(d)) if *d == s)))
    }

    /// Whether session `s` is live (`Some(true)`) or over (`Some(false)`) for whoever is
    /// served now, when the harness is sure: a session ended in an earlier step is over,
    /// one that cannot have expired and that no `DELETE` on its way may end is live.
    fn certain(&self, s: usize) -> Option<bool> {
        let sess = &self.sessions[s];
        if sess.ended && sess.ended_step < self.step {
            Some(false)
        } else if self.live(s) && !self.deleting(s) {
            Some(true)
        } else {
            None
        }
    }

    fn conn_open(&self, id: ConnId) -> bool {
        self.peers.iter().flatten().any(|p| p.id == id)
    }

    /// A free connection (none of its requests waits for a response), opened if need be.
    fn free_peer(&mut self, pick: u8) -> Option<usize> {
        let start = usize::from(pick) % PEERS;
        for i in 0..PEERS {
            let k = (start + i) % PEERS;
            match &self.peers[k] {
                Some(p) if p.sent.is_empty() && !p.closed => return Some(k),
                Some(_) => {}
                None => {
                    let id = self.e.open(self.now, None).unwrap_or_else(|e| panic!("open: {e:?}"));
                    assert!(!self.stale.contains(&id), "a new connection got a closed one's id");
                    self.peers[k] = Some(new_peer(id));
                    return Some(k);
                }
            }
        }
        None
    }

    fn session_header(&self, named: Named, b: u8) -> Option<String> {
        match named {
            Named::Sess(s) => Some(self.sessions[s].id.clone()),
            Named::Absent => None,
            Named::Bogus => {
                let real = self.sessions.first().map(|s| s.id.clone());
                match real {
                    Some(mut id) if b & 1 == 0 && !id.is_empty() => {
                        let at = usize::from(b >> 1) % id.len();
                        let c = if id.as_bytes()[at] == b'A' { "B" } else { "A" };
                        id.replace_range(at..=at, c);
                        Some(id)
                    }
                    _ => Some("nope".into()),
                }
            }
        }
    }

    /// Mostly one of the latest sessions; sometimes none, or a bogus one.
    fn pick_named(&self, pick: u8) -> Named {
        let n = self.sessions.len();
        match pick & 7 {
            6 => Named::Absent,
            7 => Named::Bogus,
            _ if n == 0 => Named::Absent,
            _ => Named::Sess(n - 1 - usize::from(pick >> 3) % n.min(4)),
        }
    }

    /// Sends `raw` on connection `k`, expecting a response to `sent`.
    fn send(&mut self, k: usize, raw: &[u8], sent: Sent) {
        let Some(p) = self.peers[k].as_mut() else { return };
        if self.trace {
            eprintln!("send on {k} ({:?}): {}", p.id, String::from_utf8_lossy(raw));
        }
        p.sent.push_back(sent);
        p.sending = true;
        let n = self.e.handle_input(self.now, p.id, raw);
        assert_eq!(n, raw.len(), "an idle connection did not take a whole request");
        self.read_all();
        if let Some(p) = self.peers[k].as_mut() {
            p.sending = false;
        }
    }

    fn post(&self, body: &str, named: Named, nb: u8, http10: bool, version: Option<&str>) -> Vec<u8> {
        let mut s = format!(
            "POST /mcp HTTP/1.{}\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
            u8::from(!http10)
        );
        if let Some(id) = self.session_header(named, nb) {
            s.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
        }
        if let Some(v) = version {
            s.push_str(&format!("MCP-Protocol-Version: {v}\r\n"));
        }
        s.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        s.into_bytes()
    }

    /// `initialize`, declaring the kinds in `caps`.
    fn initialize(&mut self, k: usize, caps: u8, rev: &'static str) {
        let body = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{rev}\",\"capabilities\":{},\"clientInfo\":{{\"name\":\"f\",\"version\":\"1\"}}}}}}",
            caps_json(caps)
        );
        let raw = self.post(&body, Named::Absent, 0, false, None);
        self.send(k, &raw, Sent::Init { caps, rev });
    }

    fn initialized(&mut self, k: usize, named: Named) {
        let raw =
            self.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, named, 0, false, None);
        self.send(k, &raw, Sent::Initialized(named));
    }

    /// A request that reaches the host, in a session (or not).
    fn call(&mut self, k: usize, b: &mut Bytes<'_>) {
        let pick = b.u8();
        let named = self.pick_named(b.u8());
        let http10 = pick & 0xc0 == 0xc0;
        let seq = self.next_seq;
        self.next_seq += 1;
        let id = if pick & 8 != 0 { format!("\"~c{seq}\"") } else { (1_000_000 + seq).to_string() };
        let token = pick & 0x10 == 0;
        let (body, kind) = model::request(seq, &id, pick % 4, token);
        let kind = kind.unwrap_or(ReqKind::Tool);
        let version = match (pick >> 5) & 3 {
            1 => match named {
                Named::Sess(s) => Some(self.sessions[s].rev),
                _ => Some("2025-11-25"),
            },
            _ => None,
        };
        let raw = self.post(&body, named, b.u8(), http10, version);
        let ci = self.calls.len();
        self.calls.push(Call {
            seq,
            id,
            kind,
            named,
            http10,
            token,
            ticket: None,
            loc: Loc::Waiting,
            done: false,
            streamed: false,
            retry_due: false,
        });
        self.send(k, &raw, Sent::Call(ci));
    }

    /// The client answers one of the server's requests, in some session.
    fn reply(&mut self, k: usize, b: &mut Bytes<'_>) {
        let mut ids: Vec<u64> = self.asked.keys().copied().collect();
        ids.sort_unstable();
        let pick = b.u8();
        let target = if ids.is_empty() || pick & 7 == 7 {
            None
        } else {
            let id = ids[ids.len() - 1 - usize::from(pick >> 3) % ids.len().min(4)];
            Some((id, self.asked[&id].1))
        };
        // Mostly in the session of the request it answers.
        let named = match target {
            Some((id, _)) if !b.u8().is_multiple_of(4) => {
                self.calls[self.tickets[self.asked[&id].0].call].named
            }
            _ => self.pick_named(b.u8()),
        };
        let tag = self.next_tag;
        self.next_tag += 1;
        let r = model::reply(b, target, tag);
        let fi = self.frames.len();
        self.frames.push(Frame { named, counted: r.counted, dispatched: None });
        if let Some((id, _)) = r.counted {
            self.replies.entry(id).or_default().push(fi);
        }
        let body = String::from_utf8_lossy(&r.bytes).into_owned();
        let raw = self.post(&body, named, b.u8(), false, None);
        self.send(k, &raw, Sent::Reply(fi));
    }

    /// `notifications/cancelled` for a call, in some session.
    fn cancel(&mut self, k: usize, pick: u8) {
        if self.calls.is_empty() {
            return;
        }
        let ci = usize::from(pick >> 1) % self.calls.len();
        let named = if pick & 1 == 0 { self.calls[ci].named } else { self.pick_named(pick >> 3) };
        if let (Named::Sess(a), Named::Sess(b)) = (named, self.calls[ci].named)
            && a == b
            && let Some(t) = self.calls[ci].ticket
        {
            self.tickets[t].may_cancel = true;
        }
        let body = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{}}}}}",
            self.calls[ci].id
        );
        let raw = self.post(&body, named, 0, false, None);
        self.send(k, &raw, Sent::Cancel(named));
    }

    /// A `GET`: the standalone stream, or a resumption with `Last-Event-ID`, with headers
    /// right or wrong.
    fn get(&mut self, k: usize, b: &mut Bytes<'_>) {
        let pick = b.u8();
        let named = self.pick_named(b.u8());
        let http10 = pick & 0xe0 == 0xe0;
        let accept = pick & 0x60 != 0x60;
        let version = match (pick >> 3) & 3 {
            0 | 1 => None,
            2 => Some(true),
            _ => Some(false),
        };
        let mut known: Vec<&String> = self.events.keys().collect();
        known.sort_unstable();
        let sel = b.u8();
        let (last, header) = match pick & 7 {
            0 | 1 => (LastId::None, Vec::new()),
            2..=4 if !known.is_empty() => {
                // Mostly a recent id of the session named.
                let mine: Vec<&String> =
                    known.iter().copied().filter(|id| Named::Sess(self.events[*id].sess) == named).collect();
                let pool = if mine.is_empty() || sel & 0x80 != 0 { &known } else { &mine };
                let id = pool[usize::from(sel & 0x7f) % pool.len()].clone();
                let text = if pick & 7 == 4 { format!(" {id}\t") } else { id.clone() };
                (LastId::Known(id), vec![text])
            }
            5 if !known.is_empty() => {
                let mut id = known[usize::from(sel) % known.len()].clone();
                let at = usize::from(b.u8()) % id.len();
                let c = if id.as_bytes()[at] == b'A' { "B" } else { "A" };
                id.replace_range(at..=at, c);
                (LastId::Bad, vec![id])
            }
            6 if !known.is_empty() => {
                let id = known[usize::from(sel) % known.len()].clone();
                (LastId::Two, vec![id.clone(), id])
            }
            _ => {
                let text: String = b.bytes(40).iter().map(|&c| char::from(b'!' + c % 94)).collect();
                (LastId::Bad, vec![text])
            }
        };
        let mut s = format!("GET /mcp HTTP/1.{}\r\nHost: localhost\r\n", u8::from(!http10));
        if accept {
            s.push_str(
                [
                    "Accept: text/event-stream\r\n",
                    "Accept: */*\r\n",
                    "Accept: application/json, text/*;q=0.5\r\n",
                ][usize::from(sel) % 3],
            );
        } else if pick & 0x80 != 0 {
            s.push_str("Accept: application/json\r\n");
        }
        if let Some(id) = self.session_header(named, b.u8()) {
            s.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
        }
        if let Some(right) = version {
            let rev = match named {
                Named::Sess(x) => self.sessions[x].rev,
                _ => "2025-11-25",
            };
            let v = if right {
                rev
            } else if rev == "2025-11-25" {
                "2025-06-18"
            } else {
                "2025-11-25"
            };
            s.push_str(&format!("MCP-Protocol-Version: {v}\r\n"));
        }
        for h in &header {
            s.push_str(&format!("Last-Event-ID: {h}\r\n"));
        }
        s.push_str("\r\n");
        let g = GetReq { named, http10, accept, version, last, step: self.step };
        self.send(k, s.as_bytes(), Sent::Get(g));
    }

    fn delete(&mut self, k: usize, named: Named, nb: u8) {
        // Its parked requests may be cancelled as soon as it is served.
        for c in &self.calls {
            if let (Named::Sess(_), Some(t)) = (named, c.ticket)
                && c.named == named
            {
                self.tickets[t].may_cancel = true;
            }
        }
        let mut s = String::from("DELETE /mcp HTTP/1.1\r\nHost: localhost\r\n");
        if let Some(id) = self.session_header(named, nb) {
            s.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
        }
        s.push_str("\r\n");
        self.send(k, s.as_bytes(), Sent::Delete(named));
    }

    /// The status a `GET` must get, when the harness is sure of it.
    fn get_status(&self, g: &GetReq, conn: ConnId) -> Option<u16> {
        if g.http10 {
            return Some(400);
        }
        let s = match g.named {
            Named::Absent => return Some(405),
            Named::Bogus => return Some(404),
            Named::Sess(s) => s,
        };
        match self.certain(s) {
            Some(false) => return Some(404),
            None => return None,
            Some(true) => {}
        }
        if !g.accept {
            return Some(406);
        }
        if g.version == Some(false) {
            return Some(400);
        }
        let standalone = match &g.last {
            LastId::None => true,
            LastId::Bad | LastId::Two => return Some(400),
            LastId::Known(id) => {
                let rec = &self.events[id];
                if rec.sess != s {
                    return Some(400);
                }
                matches!(rec.key, Key::Standalone(_))
            }
        };
        let held = self.sessions[s].standalone.is_some_and(|c| c != conn && self.conn_open(c));
        Some(if standalone && held { 409 } else { 200 })
    }

    /// Where the host's command on ticket `i` must show: whether its call's stream is
    /// on a connection the harness reads.
    fn on_conn(&self, i: usize) -> bool {
        matches!(self.calls[self.tickets[i].call].loc, Loc::On(c) if self.conn_open(c))
    }

    /// Answers what a store event asked (the store never fails here).
    fn answer_store(&mut self, ask: Option<StoreAsk>) {
        let (Some(ask), Some(store)) = (ask, self.store.as_mut()) else { return };
        match ask {
            StoreAsk::Load(conn, id) => {
                super::stat("http session loaded");
                match store.records.get(&id) {
                    Some(r) => {
                        // The engine's standalone stream of this load gets a number of
                        // its own.
                        if let Some(s) = self.sessions.iter_mut().find(|s| s.id == id) {
                            s.loads += 1;
                        }
                        self.e.session_loaded(self.now, conn, Loaded::Record(r))
                    }
                    None => self.e.session_loaded(self.now, conn, Loaded::Missing),
                }
            }
            StoreAsk::Save(conn, id, record) => {
                match record {
                    Some(r) => {
                        store.records.insert(id, r);
                    }
                    None => {
                        store.records.remove(&id);
                        store.events.retain(|(s, _), _| *s != id);
                    }
                }
                self.e.session_saved(self.now, conn, true);
            }
            StoreAsk::Events(conn, id, stream, from) => {
                super::stat("http replay from the store");
                let kept = store.events.get(&(id, stream)).map(Vec::as_slice).unwrap_or_default();
                let events: Vec<StoredEvent<'_>> = kept
                    .iter()
                    .filter(|e| e.0 >= from)
                    .map(|(seq, data, last)| StoredEvent { seq: *seq, data, last: *last })
                    .collect();
                self.e.events_loaded(self.now, conn, LoadedEvents::Events(&events));
            }
        }
    }

    /// Every store event, kept or answered; returns whether there was any.
    fn poll_store(&mut self) -> bool {
        let mut any = false;
        while let Some(ev) = self.e.poll_store() {
            any = true;
            if self.trace {
                eprintln!("store event {ev:?}");
            }
            let ask = store_event(self.store.as_mut(), ev);
            self.answer_store(ask);
        }
        any
    }

    /// Every event: new work is kept or acted on, requests that come back are checked.
    fn poll(&mut self, b: &mut Bytes<'_>) -> bool {
        let mut any = false;
        loop {
            let Some(ev) = self.e.poll_event() else {
                // The store's work, then back to the request path.
                if !self.poll_store() {
                    break;
                }
                any = true;
                continue;
            };
            any = true;
            if self.trace {
                eprintln!("event {ev:?}");
            }
            let ev = match ev {
                HttpEvent::Mcp(ev) => ev,
                other => panic!("an HTTP event this harness does not ask for: {other:?}"),
            };
            let ticket = ev.ticket();
            let work = match &ev {
                Event::Cancelled(_) => None,
                Event::CallTool(c) => Some((
                    ReqKind::Tool,
                    c.arguments.raw().to_owned(),
                    model::entries(&c.input_responses),
                    c.request_state,
                )),
                Event::GetPrompt(p) => Some((
                    ReqKind::Prompt,
                    p.arguments.raw().to_owned(),
                    model::entries(&p.input_responses),
                    p.request_state,
                )),
                Event::ReadResource(r) => Some((
                    ReqKind::Resource,
                    r.uri.to_owned(),
                    model::entries(&r.input_responses),
                    r.request_state,
                )),
                _ => panic!("an event this harness does not know"),
            };
            let work = work.map(|(kind, seen, found, state)| (kind, seen, found, state.map(<[u8]>::to_vec)));
            // What the engine wrote before it came to this event (responses to requests
            // it served first, a client's `202` among them).
            self.read_all();
            let Some((kind, seen, found, state)) = work else {
                self.cancelled(ticket);
                continue;
            };
            let seq = model::seq_of(kind, &seen);
            assert_eq!(seen, model::expected_args(kind, seq), "the host sees other arguments");
            let i = match self.tickets.iter().position(|t| t.ticket == ticket && t.state == State::Live) {
                Some(i) => {
                    let ci = self.tickets[i].call;
                    assert_eq!(self.calls[ci].seq, seq, "a ticket came back for another request");
                    let round = self.tickets[i].round.take();
                    let round = round.unwrap_or_else(|| panic!("ticket {i} came back unasked"));
                    assert_eq!(state, round.state, "the host's state does not come back as given");
                    model::check_keys(&found, &round);
                    super::stat("http came back");
                    for (key, f) in &found {
                        let a = round
                            .asked
                            .iter()
                            .find(|a| a.kind.key() == key)
                            .unwrap_or_else(|| unreachable!());
                        self.check_found(i, a.id, f, &round);
                        super::stat(super::stdio::found_name(f, "http"));
                    }
                    i
                }
                None => {
                    let ci = self.calls.iter().position(|c| c.seq == seq);
                    let ci = ci.unwrap_or_else(|| panic!("an event for request {seq}, never sent"));
                    let c = &self.calls[ci];
                    assert_eq!(c.kind, kind, "an event of the wrong kind");
                    assert!(c.ticket.is_none(), "request {seq} handed out twice");
                    assert!(found.is_empty() && state.is_none(), "a first round with responses");
                    let Named::Sess(s) = c.named else { panic!("work for a request outside a session") };
                    assert!(!self.sessions[s].ended, "work for a request of a session that ended");
                    let k = self.peers.iter().position(|p| {
                        p.as_ref()
                            .is_some_and(|p| p.sent.iter().any(|x| matches!(x, Sent::Call(c) if *c == ci)))
                    });
                    let k = k.unwrap_or_else(|| panic!("work for a request whose connection is gone"));
                    let conn = self.peers[k].as_ref().map(|p| p.id).unwrap_or_else(|| unreachable!());
                    let i = self.tickets.len();
                    self.tickets.push(Tk {
                        ticket,
                        call: ci,
                        state: State::Live,
                        round: None,
                        expired: None,
                        rounds: 0,
                        may_cancel: false,
                        cancel_due: false,
                        answer_due: false,
                    });
                    self.calls[ci].ticket = Some(i);
                    self.calls[ci].loc = Loc::On(conn);
                    i
                }
            };
            let (how, choice) = (b.u8(), b.u8());
            self.act(i, how, choice);
        }
        any
    }

    /// `Event::Cancelled(t)`: only for a live ticket, and only when something called for it.
    fn cancelled(&mut self, t: Ticket) {
        // (A request whose connection closed before the host polled its event is never
        // announced: neither its work nor its cancellation.)
        let Some(i) = self.tickets.iter().position(|x| x.ticket == t && x.state == State::Live) else {
            panic!("a cancellation of a ticket that is not live (before or without its work)");
        };
        let ci = self.tickets[i].call;
        let expiring = match self.calls[ci].named {
            Named::Sess(s) => self.calls[ci].loc == Loc::Parked && !self.live(s),
            _ => false,
        };
        let tk = &mut self.tickets[i];
        assert!(tk.may_cancel || expiring, "a cancellation nothing called for: ticket {i}");
        tk.state = State::Cancelled;
        tk.round = None;
        tk.cancel_due = false;
        super::stat("http cancelled");
        self.calls[ci].loc = Loc::Over;
    }

    /// What the host found under the key of request `id` (of ticket `i`): the first
    /// response to it that the engine took in the ticket's session, or a timeout past the
    /// deadline, or the end of the session, before any such response was taken.
    fn check_found(&self, i: usize, id: u64, found: &Found, round: &Round) {
        let named = self.calls[self.tickets[i].call].named;
        let taken: Vec<(u64, Outcome)> = self
            .replies
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(|&fi| {
                let f = &self.frames[fi];
                Some((f.dispatched?, f.counted?.1)).filter(|_| f.named == named)
            })
            .collect();
        let first = taken.iter().map(|t| t.0).min();
        match found {
            Found::TimedOut => {
                assert!(self.now >= round.deadline, "timed out before the deadline");
                let expired = self.tickets[i].expired.unwrap_or(self.step);
                assert!(
                    first.is_none_or(|f| f >= expired),
                    "timed out after a response was taken: {taken:?}"
                );
            }
            Found::Gone => {
                let Named::Sess(s) = named else { unreachable!() };
                // (Its `DELETE` is served before its response is read.)
                let deleting = self.deleting(s);
                assert!(self.sessions[s].ended || deleting, "gone while the session is live");
                let ended = if deleting { self.step } else { self.sessions[s].ended_step };
                assert!(first.is_none_or(|f| f >= ended), "gone after a response was taken: {taken:?}");
            }
            f => {
                let first = first
                    .unwrap_or_else(|| panic!("{f:?} under request {id}, which no response taken answers"));
                assert!(
                    taken.iter().any(|&(step, o)| step == first && model::is(f, o)),
                    "{f:?} is not what the first response taken became: {taken:?}"
                );
            }
        }
    }

    /// The host acts on ticket `i`: answers, fails, asks for input, reports progress, lets
    /// the stream go, or keeps it.
    fn act(&mut self, i: usize, how: u8, choice: u8) {
        let t = self.tickets[i].ticket;
        let ci = self.tickets[i].call;
        if self.tickets[i].state != State::Live {
            let r = self.e.answer_tool(t, &ToolOutput::new(&[]));
            assert_eq!(
                r,
                Err(mcp_engine::error::AnswerError::UnknownTicket),
                "a command on a ticket that is over"
            );
            assert_eq!(self.e.reconnect_later(t, Duration::from_millis(1)), Err(NotifyError::UnknownTicket));
            return;
        }
        let on = self.on_conn(i);
        let (seq, kind) = (self.calls[ci].seq, self.calls[ci].kind);
        if self.trace {
            eprintln!("host: ticket {i} (call {ci}, {:?}), action {}", self.calls[ci].loc, how % 8);
        }
        let text = [Content::text("done")];
        let r = match how % 8 {
            0 | 1 => match kind {
                ReqKind::Tool => self.e.answer_tool(t, &ToolOutput::new(&text)),
                ReqKind::Prompt => {
                    self.e.answer_prompt(t, &PromptOutput::new(&[PromptMessage::user(Content::text("x"))]))
                }
                ReqKind::Resource => {
                    let uri = model::expected_args(kind, seq);
                    self.e.answer_resource(t, &[ResourceContents::text(&uri, None, "x")])
                }
            },
            2 => self.e.answer_error(t, HostError::Internal("x")),
            3 | 4 => return self.ask(i, choice),
            5 => {
                let p = f64::from(self.tickets[i].rounds) + f64::from(choice);
                match self.e.notify_progress(t, p, None, None) {
                    Ok(()) => assert!(self.calls[ci].token, "progress without a token"),
                    Err(NotifyError::NoProgressToken) => assert!(!self.calls[ci].token),
                    Err(NotifyError::NotIncreasing) => {}
                    Err(NotifyError::UnknownTicket) => self.refused_live(i),
                    Err(e) => panic!("progress on a live ticket: {e}"),
                }
                return;
            }
            6 => {
                let r = self.e.reconnect_later(t, Duration::from_millis(u64::from(choice) + 1));
                if r == Err(NotifyError::UnknownTicket) {
                    return self.refused_live(i);
                }
                let c = &mut self.calls[ci];
                let can = matches!(c.loc, Loc::On(_)) && !c.http10;
                assert_eq!(r, Ok(can), "reconnect_later for a call {:?} (HTTP/1.0: {})", c.loc, c.http10);
                super::stat(if can { "http reconnect_later true" } else { "http reconnect_later false" });
                if can {
                    c.retry_due = on;
                    c.streamed = true;
                    c.loc = Loc::Parked;
                }
                return;
            }
            _ => return,
        };
        if r == Err(mcp_engine::error::AnswerError::UnknownTicket) {
            return self.refused_live(i);
        }
        assert_eq!(r, Ok(()), "answering a live ticket");
        self.answered(i, on);
    }

    fn answered(&mut self, i: usize, on: bool) {
        let tk = &mut self.tickets[i];
        tk.state = State::Answered;
        tk.round = None;
        tk.answer_due = on;
        let c = &mut self.calls[tk.call];
        if !matches!(c.loc, Loc::On(_)) {
            c.loc = Loc::Over;
        }
    }

    fn ask(&mut self, i: usize, choice: u8) {
        let t = self.tickets[i].ticket;
        let ci = self.tickets[i].call;
        let on = self.on_conn(i);
        let ask = Ask::new(choice, u64::from(self.tickets[i].rounds));
        let reqs: Vec<_> = ask.bufs.iter().map(|r| r.as_request()).collect();
        let mut ir = InputRequired::new(&reqs);
        if let Some(s) = &ask.state {
            ir = ir.state(s);
        }
        let r = self.e.answer_input_required(t, &ir);
        let Named::Sess(s) = self.calls[ci].named else { unreachable!() };
        let caps = if self.calls[ci].http10 { 0 } else { self.sessions[s].caps };
        let mut next = self.next_id;
        let want = expect_ask(&ask, caps, false, &mut next);
        if self.trace {
            eprintln!("ask {choice:#x} on ticket {i}: {r:?}, expected {want:?}");
        }
        match (r, want) {
            (Err(mcp_engine::error::AnswerError::UnknownTicket), _) => self.refused_live(i),
            (Err(got), AskResult::Err(want)) => {
                assert!(same_error(&got, &want), "{got:?}, expected {want:?}")
            }
            (Ok(()), AskResult::Refused) => {
                super::stat(if caps == 0 {
                    "http ask refused (HTTP/1.0 or no caps)"
                } else {
                    "http ask refused"
                });
                self.answered(i, on);
            }
            (Ok(()), AskResult::Asked(asked)) => {
                super::stat(if on { "http ask sent" } else { "http ask sent while parked" });
                self.next_id = next;
                for a in &asked {
                    self.asked.insert(a.id, (i, a.kind));
                }
                let deadline = self.now + self.timeout;
                let tk = &mut self.tickets[i];
                tk.round = Some(Round { asked, deadline, state: ask.state.clone() });
                tk.expired = None;
                tk.rounds += 1;
                if on {
                    self.calls[ci].streamed = true;
                }
            }
            (r, want) => panic!("answer_input_required: {r:?}, expected {want:?}"),
        }
    }

    /// A command on live ticket `i` was refused as unknown: something that may cancel
    /// it was served behind the harness's back (by the command before), and the
    /// cancellation's event is due.
    fn refused_live(&mut self, i: usize) {
        let ci = self.tickets[i].call;
        let expiring = match self.calls[ci].named {
            Named::Sess(s) => self.calls[ci].loc == Loc::Parked && !self.live(s),
            _ => false,
        };
        assert!(self.tickets[i].may_cancel || expiring, "a live ticket refused as unknown");
        self.tickets[i].cancel_due = true;
    }

    /// Reads every connection's output, until nothing moves; closes what `wants_close`
    /// names.
    fn settle(&mut self, b: &mut Bytes<'_>) {
        for round in 0.. {
            assert!(round < 1000, "the engine never settles");
            // What the engine wrote first (responses to what was dispatched before the
            // events it holds), then its events.
            let mut moved = self.read_all();
            // (Taking an event lets the engine go on: it may write more.)
            moved |= self.poll(b);
            while let Some(id) = self.e.poll_ended() {
                let k = self.peers.iter().position(|p| p.as_ref().is_some_and(|p| p.id == id));
                let k = k.unwrap_or_else(|| panic!("an ended connection is one that was open"));
                assert!(self.e.pending_output(id).is_empty() && !self.e.wants_close(id));
                self.read_all();
                self.gone(k);
                moved = true;
            }
            moved |= self.read_all();
            for k in 0..PEERS {
                let Some(p) = self.peers[k].as_ref() else { continue };
                let id = p.id;
                let wants = self.e.wants_close(id);
                if p.closed {
                    assert!(wants, "a response said connection: close and the engine keeps the connection");
                }
                if wants {
                    assert!(p.closed || p.ended_stream, "the engine closes a connection its responses keep");
                    assert!(p.resp.is_none() && p.buf.is_empty(), "closed inside a response");
                    self.close(k);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
    }

    /// The peer of connection `k` goes away. Every peer reads what it was sent first, so
    /// that the harness knows what the engine did before the close.
    fn close(&mut self, k: usize) {
        let Some(p) = self.peers[k].as_ref() else { return };
        let id = p.id;
        self.read_all();
        self.gone(k);
        self.e.handle_closed(self.now, id);
    }

    /// Every connection's output, read and parsed; whether there was any.
    fn read_all(&mut self) -> bool {
        let mut moved = false;
        for k in 0..PEERS {
            let Some(p) = self.peers[k].as_ref() else { continue };
            let id = p.id;
            let out = self.e.pending_output(id).to_vec();
            if out.is_empty() {
                continue;
            }
            if self.trace {
                eprintln!("read on {k}: {:?}", String::from_utf8_lossy(&out));
            }
            self.e.consume_output(id, out.len());
            if let Some(p) = self.peers[k].as_mut() {
                p.buf.extend_from_slice(&out);
            }
            self.parse(k);
            moved = true;
        }
        moved
    }

    /// Connection `k` is gone: what its streams become.
    fn gone(&mut self, k: usize) {
        let Some(p) = self.peers[k].take() else { return };
        if self.trace {
            eprintln!("gone: {k} ({:?})", p.id);
        }
        self.stale.push(p.id);
        for s in &mut self.sessions {
            if s.standalone == Some(p.id) {
                s.standalone = None;
            }
        }
        for ci in 0..self.calls.len() {
            if self.calls[ci].loc != Loc::On(p.id) {
                continue;
            }
            let Some(t) = self.calls[ci].ticket else { continue };
            if self.tickets[t].state != State::Live {
                continue;
            }
            let Named::Sess(s) = self.calls[ci].named else { unreachable!() };
            self.tickets[t].may_cancel = true;
            if self.calls[ci].streamed {
                // Disconnection is not cancellation: parked, for the client to resume.
                self.calls[ci].loc = Loc::Parked;
                super::stat(if self.sessions[s].ended {
                    "http closed after its session ended"
                } else {
                    "http parked on close"
                });
                if self.sessions[s].ended {
                    // Nobody can resume it: its session is over.
                    self.tickets[t].cancel_due = true;
                }
            } else {
                self.tickets[t].cancel_due = true;
            }
        }
        // Requests not dispatched yet are dropped with their connection.
        for s in &p.sent {
            if let Sent::Call(ci) = s
                && self.calls[*ci].ticket.is_none()
            {
                self.calls[*ci].loc = Loc::Over;
            }
        }
    }

    /// Parses what connection `k` read: HTTP/1.1 responses, SSE chunks.
    fn parse(&mut self, k: usize) {
        loop {
            let Some(p) = self.peers[k].as_mut() else { return };
            let body_due = p.resp.as_ref().is_some_and(|r| !r.sse && r.length == 0);
            if p.buf.is_empty() && !body_due {
                // Everything written so far is read: a resumption that did not end with
                // its replay took its parked stream back.
                let conn = p.id;
                if let Some(r) = p.resp.as_mut()
                    && let Some(ci) = r.maybe_taken.take()
                {
                    r.end_after_replay = false;
                    super::stat("http GET took a parked stream back (after waiting)");
                    self.calls[ci].loc = Loc::On(conn);
                }
                return;
            }
            assert!(!p.closed, "output after a response that closes the connection: {:?}", lossy(&p.buf));
            match p.resp.as_ref().map(|r| (r.sse, r.length)) {
                Some((true, _)) => {
                    let Some(line) = p.buf.windows(2).position(|w| w == b"\r\n") else { return };
                    let size = core::str::from_utf8(&p.buf[..line])
                        .ok()
                        .and_then(|s| usize::from_str_radix(s, 16).ok());
                    let size = size.unwrap_or_else(|| panic!("a bad chunk size line: {:?}", lossy(&p.buf)));
                    let end = line + 2 + size + 2;
                    if p.buf.len() < end {
                        return;
                    }
                    assert_eq!(&p.buf[end - 2..end], b"\r\n", "a chunk without its CRLF");
                    let chunk: Vec<u8> = p.buf[line + 2..end - 2].to_vec();
                    p.buf.drain(..end);
                    if size == 0 {
                        self.stream_end(k);
                    } else {
                        self.item(k, &chunk);
                    }
                }
                Some((false, length)) => {
                    if p.buf.len() < length {
                        return;
                    }
                    let body: Vec<u8> = p.buf.drain(..length).collect();
                    self.body(k, &body);
                }
                None => {
                    let mut headers = [httparse::EMPTY_HEADER; 32];
                    let mut resp = httparse::Response::new(&mut headers);
                    let n = match resp.parse(&p.buf) {
                        Ok(httparse::Status::Complete(n)) => n,
                        Ok(httparse::Status::Partial) => return,
                        Err(e) => panic!("not an HTTP/1.1 response ({e}): {:?}", lossy(&p.buf)),
                    };
                    assert_eq!(resp.version, Some(1), "{:?}", lossy(&p.buf));
                    let status = resp.code.unwrap_or_default();
                    assert!((200..600).contains(&status), "status {status}");
                    let mut r = Resp { status, ..Resp::default() };
                    let (mut length, mut chunked, mut json, mut session_id) = (None, false, false, None);
                    for h in resp.headers.iter() {
                        let v =
                            core::str::from_utf8(h.value).unwrap_or_else(|_| panic!("{:?}", lossy(&p.buf)));
                        match h.name.to_ascii_lowercase().as_str() {
                            "content-length" => {
                                assert!(length.is_none(), "two content-lengths");
                                length = Some(v.parse::<usize>().unwrap_or_else(|e| panic!("{e}: {v}")));
                            }
                            "transfer-encoding" => {
                                assert_eq!(v, "chunked");
                                chunked = true;
                            }
                            "connection" => r.close = v.eq_ignore_ascii_case("close"),
                            "content-type" => {
                                json = v == "application/json";
                                assert!(json || v == "text/event-stream", "content type {v}");
                            }
                            "mcp-session-id" => session_id = Some(v.to_owned()),
                            _ => {}
                        }
                    }
                    p.buf.drain(..n);
                    if chunked {
                        assert!(
                            length.is_none() && status == 200 && !json,
                            "a chunked response that is not SSE"
                        );
                        r.sse = true;
                    } else {
                        r.length = length.unwrap_or_else(|| panic!("a response without framing"));
                        assert!(json || r.length == 0, "a body without a content type");
                    }
                    p.resp = Some(r);
                    self.head(k, status, session_id);
                }
            }
        }
    }

    fn front(&self, k: usize) -> Sent {
        let p = self.peers[k].as_ref().unwrap_or_else(|| unreachable!());
        p.sent.front().cloned().unwrap_or_else(|| panic!("a response to no request: connection {k}"))
    }

    fn resp(&mut self, k: usize) -> &mut Resp {
        let p = self.peers[k].as_mut().unwrap_or_else(|| unreachable!());
        p.resp.as_mut().unwrap_or_else(|| unreachable!())
    }

    /// A response head: its status is the one the request calls for.
    fn head(&mut self, k: usize, status: u16, session_id: Option<String>) {
        let sent = self.front(k);
        let conn = self.peers[k].as_ref().map(|p| p.id).unwrap_or_else(|| unreachable!());
        let http10 = match &sent {
            Sent::Call(ci) => self.calls[*ci].http10,
            Sent::Get(g) => g.http10,
            _ => false,
        };
        // An HTTP/1.0 response ends its connection (the client asked for no keep-alive).
        let r = self.resp(k);
        r.close |= http10;
        let sse = r.sse;
        if self.trace {
            eprintln!("head on {k}: {status} sse {sse} for {sent:?}");
        }
        assert_eq!(
            session_id.is_some(),
            matches!(sent, Sent::Init { .. }) && status == 200,
            "Mcp-Session-Id on a {status} to {sent:?}"
        );
        if self.store.is_some() && status == 503 && !matches!(sent, Sent::Init { .. }) {
            // A session the store gave back found the table full of sessions that cannot
            // leave it: refused before it was served (`Retry-After`, no body).
            assert!(!sse, "a stream with a 503");
            super::stat("http 503, no room for a stored session");
            return;
        }
        let waited = !self.peers[k].as_ref().is_some_and(|p| p.sending);
        let certain = |h: &Self, named: Named| match named {
            _ if waited => None,
            Named::Sess(s) => h.certain(s),
            Named::Bogus => Some(false),
            Named::Absent => Some(true),
        };
        match sent {
            Sent::Init { caps, rev } => match status {
                200 => {
                    let id = session_id.unwrap_or_default();
                    assert!(
                        id.len() == 44 && id.bytes().all(|c| (0x21..=0x7e).contains(&c)),
                        "session id {id:?}"
                    );
                    assert!(!self.sessions.iter().any(|s| s.id == id), "a session id given twice");
                    let live = (0..self.sessions.len()).filter(|&s| self.live(s)).count();
                    if self.trace {
                        let st: Vec<_> = self.sessions.iter().map(|s| (s.created, s.ended)).collect();
                        eprintln!("engine sessions {} (harness: {live} live) {st:?}", self.e.sessions());
                    }
                    // With a store, a session it holds unchanged leaves memory to make room.
                    assert!(
                        waited || self.store.is_some() || live < self.max_sessions,
                        "a session past the cap"
                    );
                    super::stat("http session");
                    self.sessions.push(Sess {
                        id,
                        caps,
                        rev,
                        created: self.now,
                        ended: false,
                        initialized: false,
                        standalone: None,
                        ended_step: 0,
                        loads: 0,
                    });
                }
                503 => {
                    let open = self.sessions.iter().filter(|s| !s.ended).count();
                    assert!(
                        waited || self.store.is_some() || open >= self.max_sessions,
                        "503 with room for a session"
                    );
                }
                s => panic!("initialize answered {s}"),
            },
            Sent::Initialized(named) | Sent::Cancel(named) => {
                let want = match (certain(self, named), named) {
                    (_, Named::Absent) if matches!(sent, Sent::Initialized(_)) => Some(400),
                    (_, Named::Absent) => None,
                    (Some(true), _) => Some(202),
                    (Some(false), _) => Some(404),
                    (None, _) => None,
                };
                assert!(
                    want.is_none_or(|w| w == status) && matches!(status, 202 | 400 | 404),
                    "{status} to {sent:?}"
                );
                self.learn(named, status);
                if let (Sent::Initialized(Named::Sess(s)), 202) = (&sent, status) {
                    self.sessions[*s].initialized = true;
                }
            }
            Sent::Reply(fi) => {
                let named = self.frames[fi].named;
                let want = match certain(self, named) {
                    Some(true) => 202,
                    Some(false) => 404,
                    None => status,
                };
                assert!(status == want && matches!(status, 202 | 404), "{status} to a response in {named:?}");
                self.learn(named, status);
                if status == 202 {
                    super::stat(if self.frames[fi].counted.is_some() {
                        "http response taken (counted kind)"
                    } else {
                        "http response taken (answers nothing)"
                    });
                    self.frames[fi].dispatched = Some(self.step);
                }
            }
            Sent::Delete(named) => {
                let want = match (certain(self, named), named) {
                    (_, Named::Absent) => Some(400),
                    (Some(true), _) => Some(200),
                    (Some(false), _) => Some(404),
                    (None, _) => None,
                };
                assert!(
                    want.is_none_or(|w| w == status) && matches!(status, 200 | 404 | 400),
                    "{status} to {sent:?}"
                );
                if status == 200 {
                    super::stat("http DELETE 200");
                }
                if let Named::Sess(s) = named
                    && matches!(status, 200 | 404)
                {
                    self.end_session(s, !waited);
                }
            }
            Sent::Call(ci) => {
                let named = self.calls[ci].named;
                // (A call the host works on was served in its session: its answer comes
                // whenever the host gives it.)
                let want = match (certain(self, named), named) {
                    (_, Named::Absent) => Some(400),
                    (Some(false), _) if self.calls[ci].ticket.is_none() => Some(404),
                    _ => None,
                };
                assert!(want.is_none_or(|w| w == status), "{status} to a call in {named:?}");
                self.learn(named, status);
                if sse {
                    assert!(!self.calls[ci].http10, "a stream to an HTTP/1.0 request");
                    let Named::Sess(s) = named else { panic!("a stream outside a session") };
                    self.calls[ci].streamed = true;
                    let priming = self.sessions[s].rev == "2025-11-25";
                    let r = self.resp(k);
                    r.key = Some(Key::Post(ci));
                    r.priming = priming;
                }
            }
            Sent::Get(g) => {
                let want = if waited { None } else { self.get_status(&g, conn) };
                super::stat(match status {
                    200 => "http GET 200",
                    400 => "http GET 400",
                    404 => "http GET 404",
                    405 => "http GET 405",
                    406 => "http GET 406",
                    409 => "http GET 409",
                    _ => "http GET other",
                });
                if self.trace {
                    let held: Vec<_> = self.sessions.iter().map(|s| s.standalone).collect();
                    eprintln!("GET on {conn:?}: expected {want:?}; standalone streams {held:?}");
                }
                assert!(want.is_none_or(|w| w == status), "{status} to {g:?}, expected {want:?}");
                assert_eq!(sse, status == 200, "{status} to a GET");
                self.learn(g.named, status);
                if status != 200 {
                    return;
                }
                let Named::Sess(s) = g.named else { unreachable!() };
                let (key, replay) = match &g.last {
                    LastId::Known(id) => {
                        let rec = &self.events[id];
                        // docs/http.md: a `GET` with `Last-Event-ID` gets what *that
                        // stream* sent after the named event. The harness keeps one list
                        // for a session's standalone stream, but the engine numbers its
                        // standalone stream anew each time it loads the session from the
                        // store ("its events get ids of this node's own standalone
                        // stream"): the events of a later load were not sent on the stream
                        // named, so they are not owed (the client saw them on that load's
                        // stream; they are replayed by naming one of its events).
                        let owed = self.streams[&rec.key]
                            .iter()
                            .map(|x| &self.events[x])
                            .filter(|e| e.index > rec.index && e.step < g.step)
                            .filter(|e| matches!(rec.key, Key::Post(_)) || e.loads == rec.loads)
                            .map(|e| e.index)
                            .collect();
                        (rec.key, Some(Replay { last: rec.index, gap: false, owed, over: false }))
                    }
                    _ => (Key::Standalone(s), None),
                };
                let fresh = replay.is_none();
                let mut end_after_replay = false;
                let mut maybe_taken = None;
                match key {
                    Key::Standalone(_) => {
                        super::stat(if replay.is_some() {
                            "http GET resumed the standalone stream"
                        } else {
                            "http GET opened the standalone stream"
                        });
                        self.sessions[s].standalone = Some(conn);
                        if self.trace {
                            eprintln!("standalone of {s} on {conn:?}");
                        }
                    }
                    Key::Post(ci) => {
                        if self.calls[ci].loc == Loc::Parked && waited {
                            end_after_replay = true;
                            maybe_taken = Some(ci);
                        } else if self.calls[ci].loc == Loc::Parked {
                            super::stat("http GET took a parked stream back");
                            self.calls[ci].loc = Loc::On(conn);
                        } else {
                            super::stat("http GET replayed a request stream that is over");
                            end_after_replay = true;
                        }
                    }
                }
                let priming = fresh && self.sessions[s].rev == "2025-11-25";
                let r = self.resp(k);
                r.key = Some(key);
                r.replay = replay;
                r.end_after_replay = end_after_replay;
                r.maybe_taken = maybe_taken;
                r.priming = priming;
            }
        }
    }

    /// A `404` naming a session the harness was not sure of: it expired.
    fn learn(&mut self, named: Named, status: u16) {
        if let Named::Sess(s) = named
            && status == 404
        {
            assert!(self.certain(s) != Some(true), "404 for a live session");
            self.end_session(s, false);
        }
    }

    /// Session `s` ended: its parked calls are cancelled (`strict`: they must be; else
    /// they may have been taken back first), its rounds come back.
    fn end_session(&mut self, s: usize, strict: bool) {
        if self.sessions[s].ended {
            return;
        }
        self.sessions[s].ended = true;
        self.sessions[s].ended_step = self.step;
        for ci in 0..self.calls.len() {
            if self.calls[ci].named != Named::Sess(s) {
                continue;
            }
            let Some(t) = self.calls[ci].ticket else { continue };
            if self.tickets[t].state == State::Live {
                self.tickets[t].may_cancel = true;
                if self.calls[ci].loc == Loc::Parked && strict {
                    self.tickets[t].cancel_due = true;
                }
            }
        }
        if let Some(c) = self.sessions[s].standalone
            && let Some(p) = self.peers.iter_mut().flatten().find(|p| p.id == c)
        {
            p.ended_stream = true;
        }
    }

    /// A whole JSON body.
    fn body(&mut self, k: usize, body: &[u8]) {
        let sent = self.front(k);
        let r = self.peers[k].as_mut().and_then(|p| p.resp.take()).unwrap_or_else(|| unreachable!());
        if r.close
            && let Some(p) = self.peers[k].as_mut()
        {
            p.closed = true;
        }
        if let Some(p) = self.peers[k].as_mut() {
            p.sent.pop_front();
        }
        if body.is_empty() {
            let refused = self.store.is_some() && r.status == 503;
            assert!(
                refused || !matches!(sent, Sent::Call(_) | Sent::Init { .. }),
                "an empty answer to {sent:?}"
            );
            if let (true, Sent::Call(ci)) = (refused, sent) {
                self.calls[ci].loc = Loc::Over;
            }
            return;
        }
        let v: Value =
            serde_json::from_slice(body).unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", lossy(body)));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        match sent {
            Sent::Call(ci) => self.final_response(ci, &v),
            Sent::Init { rev, .. } => {
                if r.status == 200 {
                    assert_eq!(v["result"]["protocolVersion"], rev, "{v}");
                }
            }
            _ => assert!(v.get("error").is_some(), "a body for a {sent:?}: {v}"),
        }
    }

    /// The final response of call `ci`.
    fn final_response(&mut self, ci: usize, v: &Value) {
        let c = &mut self.calls[ci];
        assert!(v.get("method").is_none(), "not a response: {v}");
        assert_eq!(v["id"].to_string(), c.id, "the answer of another request: {v}");
        assert!(v.get("result").is_some() != v.get("error").is_some(), "{v}");
        assert!(!c.done, "a request answered twice: {v}");
        c.done = true;
        if let Some(t) = c.ticket {
            let tk = &mut self.tickets[t];
            assert_eq!(
                tk.state,
                State::Answered,
                "an answer to ticket {t}, which the host did not answer: {v}"
            );
            tk.answer_due = false;
        }
        c.loc = Loc::Over;
    }

    /// One SSE chunk: an event, a comment, a `retry:` field.
    fn item(&mut self, k: usize, chunk: &[u8]) {
        let text = core::str::from_utf8(chunk).unwrap_or_else(|_| panic!("an SSE chunk that is not UTF-8"));
        if self.trace {
            eprintln!("item on {k}: {text:?}");
        }
        let r = self.resp(k);
        assert!(!r.final_seen && !r.retry_seen, "an SSE item after the stream's last: {text:?}");
        let key = r.key.unwrap_or_else(|| panic!("an SSE item on a stream of no session: {text:?}"));
        if text == ":\n" {
            assert!(matches!(key, Key::Standalone(_)), "a keep-alive on a request's stream");
            super::stat("http keep-alive");
            return;
        }
        if let Some(note) = text.strip_prefix(": ") {
            let events = r.events;
            let replay = r.replay.as_mut().filter(|p| !p.over && events == 0 && !p.gap);
            let replay = replay.unwrap_or_else(|| panic!("a note outside a resumption's start: {text:?}"));
            assert!(note.starts_with("gap"), "{text:?}");
            super::stat("http replay gap");
            replay.gap = true;
            return;
        }
        if let Some(ms) = text.strip_prefix("retry: ") {
            assert!(ms.ends_with("\n\n") && ms.trim_end().parse::<u32>().is_ok_and(|ms| ms > 0), "{text:?}");
            r.retry_seen = true;
            super::stat("http retry");
            let Key::Post(ci) = key else { panic!("retry on a standalone stream") };
            let resumed = r.replay.is_some();
            self.replay_over(k);
            if self.store.is_some() && resumed && !self.calls[ci].retry_due {
                // Resumed from the store, its answer not there: the client is to poll.
                super::stat("http retry after a stored replay");
                return;
            }
            assert!(self.calls[ci].retry_due, "a retry the host did not ask for");
            self.calls[ci].retry_due = false;
            return;
        }
        let body =
            text.strip_suffix("\n\n").unwrap_or_else(|| panic!("an SSE event without its end: {text:?}"));
        let (id, data) = match body.strip_prefix("id: ") {
            Some(rest) => {
                let (id, data) = rest.split_once('\n').unwrap_or_else(|| panic!("{text:?}"));
                (Some(id.to_owned()), data)
            }
            None => (None, body),
        };
        let data = data.strip_prefix("data: ").unwrap_or_else(|| panic!("an event without data: {text:?}"));
        assert!(!data.contains('\n'), "a multi-line event: {text:?}");
        let first = r.events == 0;
        r.events += 1;
        let fresh = r.replay.is_none();
        let priming = r.priming;
        if !data.is_empty() {
            assert!(!(priming && first), "a 2025-11-25 stream without its priming event: {text:?}");
        }
        let sess = match key {
            Key::Standalone(s) => s,
            Key::Post(ci) => match self.calls[ci].named {
                Named::Sess(s) => s,
                _ => unreachable!(),
            },
        };
        let seen = match &id {
            Some(id) => {
                let ok = id.len() == EVENT_ID_LEN
                    && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
                assert!(ok, "event id {id:?}");
                self.event_id(k, key, sess, id, data.as_bytes())
            }
            None => {
                super::stat("http event without id");
                // Ids are sealed to the session: none once it is gone.
                assert!(
                    self.certain(sess) != Some(true),
                    "an event without an id in a live session: {text:?}"
                );
                self.replay_over(k);
                Seen::New
            }
        };
        if data.is_empty() {
            // (A replay may carry an earlier priming event of the stream.)
            assert!(
                seen != Seen::New || (first && fresh),
                "an empty event that does not open a stream: {text:?}"
            );
        }
        if !data.is_empty() && seen != Seen::Replayed {
            let v: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data:?}"));
            self.message(k, key, &v, seen == Seen::New);
        }
    }

    /// An event with an id: the same id always names the same data; a resumption
    /// replays the events after the one named, in order, and (without a gap) each one
    /// the harness saw before it asked; new events come after.
    fn event_id(&mut self, k: usize, key: Key, sess: usize, id: &str, data: &[u8]) -> Seen {
        if let Some(rec) = self.events.get_mut(id) {
            assert_eq!(rec.data, data, "event id {id} names other data");
            assert_eq!(rec.key, key, "a resumption replays another stream's event");
            let index = rec.index;
            let first_live = !rec.live;
            let r = self.resp(k);
            let Some(replay) = r.replay.as_mut().filter(|p| !p.over) else {
                // Seen first in a replay on another connection, read before this one.
                assert!(first_live && r.replay.is_none(), "event id {id} seen again outside a resumption");
                if let Some(rec) = self.events.get_mut(id) {
                    rec.live = true;
                }
                return Seen::Live;
            };
            assert!(index > replay.last, "a resumption replays an event out of order");
            if !replay.gap {
                let skipped = replay.owed.first().is_some_and(|&o| o < index);
                assert!(
                    !skipped,
                    "a resumption skipped events without saying so: {:?} before {index}",
                    replay.owed
                );
            }
            super::stat("http replayed event");
            replay.owed.retain(|&i| i > index);
            replay.last = index;
            return Seen::Replayed;
        }
        self.replay_over(k);
        let live = self.resp(k).replay.is_none();
        let list = self.streams.entry(key).or_default();
        let index = list.len() as u32 + 1;
        list.push(id.to_owned());
        let loads = self.sessions[sess].loads;
        let rec = EvRec { sess, key, index, data: data.to_vec(), step: self.step, live, loads };
        self.events.insert(id.to_owned(), rec);
        Seen::New
    }

    /// The replayed events are over: without a gap, none the harness saw is missing.
    fn replay_over(&mut self, k: usize) {
        let r = self.resp(k);
        if let Some(p) = r.replay.as_mut().filter(|p| !p.over) {
            p.over = true;
            assert!(p.gap || p.owed.is_empty(), "a resumption lost events without saying so: {:?}", p.owed);
        }
    }

    /// A JSON-RPC message on a stream (`new`: not seen before on another response).
    fn message(&mut self, k: usize, key: Key, v: &Value, new: bool) {
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        let method = v.get("method").and_then(Value::as_str);
        match (key, method) {
            (Key::Standalone(s), Some(m)) => {
                assert_eq!(m, "notifications/tools/list_changed", "{v}");
                super::stat("http list changed");
                assert!(v.get("id").is_none(), "{v}");
                if new && self.resp(k).replay.as_ref().is_none_or(|p| p.over) {
                    *self.list_changes.entry(s).or_default() -= 1;
                }
            }
            (Key::Standalone(_), None) => panic!("a response on a standalone stream: {v}"),
            (Key::Post(ci), Some("notifications/progress")) => {
                assert!(self.calls[ci].token, "progress for a request without a token: {v}");
                assert_eq!(v["params"]["progressToken"], format!("~p{}", self.calls[ci].seq), "{v}");
            }
            (Key::Post(ci), Some(m)) => {
                let id = v["id"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("a request to the client without a number id: {v}"));
                let (t, kind) = *self
                    .asked
                    .get(&id)
                    .unwrap_or_else(|| panic!("a request to the client nobody asked for: {v}"));
                assert_eq!(m, kind.method(), "{v}");
                assert_eq!(
                    self.tickets[t].call, ci,
                    "a request to the client on another request's stream: {v}"
                );
                assert!(v["params"].is_object(), "{v}");
            }
            (Key::Post(ci), None) => {
                if new {
                    self.final_response(ci, v);
                } else {
                    assert_eq!(v["id"].to_string(), self.calls[ci].id, "the answer of another request: {v}");
                }
                let r = self.resp(k);
                r.final_seen = true;
            }
        }
    }

    /// The end of an SSE response.
    fn stream_end(&mut self, k: usize) {
        self.replay_over(k);
        let p = self.peers[k].as_mut().unwrap_or_else(|| unreachable!());
        let r = p.resp.take().unwrap_or_else(|| unreachable!());
        let sent = p.sent.pop_front();
        if r.close {
            p.closed = true;
        }
        match r.key {
            Some(Key::Standalone(s)) => {
                // Its connection ends with it.
                p.ended_stream = true;
                let deleting = self.deleting(s);
                assert!(
                    self.sessions[s].ended || deleting,
                    "a standalone stream ended with its session live"
                );
            }
            Some(Key::Post(_)) => assert!(
                r.final_seen || r.retry_seen || r.end_after_replay,
                "a request's stream ended without its answer ({sent:?})"
            ),
            None => panic!("an SSE response of no stream"),
        }
    }

    /// After every step: every ticket cancelled or answered as it must be, rounds within
    /// their deadlines, the engine's counts.
    fn check(&mut self) {
        for (i, t) in self.tickets.iter().enumerate() {
            assert!(!(t.state == State::Live && t.cancel_due), "ticket {i} must have been cancelled");
            assert!(!t.answer_due, "ticket {i}'s answer never reached its stream");
            if let Some(r) = &t.round {
                assert!(r.deadline > self.now, "ticket {i}'s round outlived its deadline");
            }
        }
        let live = self.tickets.iter().filter(|t| t.state == State::Live).count();
        assert_eq!(self.e.in_flight(), live, "tickets in flight");
        assert!(live <= self.max_in_flight);
        assert_eq!(self.e.connections(), self.peers.iter().flatten().count(), "connections");
        let earliest = self.tickets.iter().filter_map(|t| t.round.as_ref()).map(|r| r.deadline).min();
        if let Some(d) = earliest {
            assert!(self.e.poll_timeout().is_some_and(|t| t <= d), "no timer for a round's deadline");
        }
        if let Some(t) = self.e.poll_timeout() {
            assert!(t > self.now, "a deadline left in the past");
        }
        // A response the client sent needs no ticket slot: it is taken at once.
        for p in self.peers.iter().flatten() {
            assert!(
                !matches!(p.sent.front(), Some(Sent::Reply(_))),
                "a response to the server's request waits (every ticket slot is busy)"
            );
        }
        for (&s, &n) in &self.list_changes {
            assert_eq!(n, 0, "list changes owed to session {s}'s standalone stream");
        }
    }

    /// The catalog changes: each initialized session's open standalone stream is told.
    fn replace_catalog(&mut self) {
        self.catalog_extra = !self.catalog_extra;
        let r = self.e.replace_catalog(model::catalog(self.catalog_extra));
        assert!(r.is_ok(), "replace_catalog: {r:?}");
        for s in 0..self.sessions.len() {
            let sess = &self.sessions[s];
            if sess.standalone.is_some_and(|c| self.conn_open(c)) && sess.initialized && !sess.ended {
                *self.list_changes.entry(s).or_default() += 1;
            }
        }
    }

    /// Closed connections' ids do nothing.
    fn probe_stale(&mut self) {
        let open = self.e.connections();
        for &id in self.stale.iter().rev().take(3) {
            assert_eq!(self.e.handle_input(self.now, id, b"GET /mcp HTTP/1.1\r\n\r\n"), 0);
            assert!(self.e.pending_output(id).is_empty() && !self.e.wants_close(id));
            self.e.handle_closed(self.now, id);
        }
        assert_eq!(self.e.connections(), open);
    }

    /// Everything ends: the host answers what is left (or not), every connection closes,
    /// every session is deleted. Nothing may remain in flight.
    fn finish(&mut self, answer: bool) {
        let zeros = [0u8; 0];
        let mut none = Bytes::new(&zeros);
        if answer {
            for i in 0..self.tickets.len() {
                if self.tickets[i].state == State::Live {
                    self.act(i, 0, 0);
                }
            }
            self.settle(&mut none);
            self.check();
        }
        for k in 0..PEERS {
            self.close(k);
        }
        self.settle(&mut none);
        for s in 0..self.sessions.len() {
            if self.sessions[s].ended {
                continue;
            }
            let Some(k) = self.free_peer(0) else { unreachable!() };
            self.delete(k, Named::Sess(s), 0);
            self.settle(&mut none);
            self.close(k);
            self.settle(&mut none);
        }
        // (A `DELETE` may have waited for a ticket slot held by a parked request, and been
        // dropped with its connection.) Every session left expires; every round times out.
        self.step += 1;
        self.now = self.now + self.idle + self.timeout + Duration::from_secs(1);
        self.e.handle_timeout(self.now);
        self.settle(&mut none);
        self.check();
        for k in 0..PEERS {
            self.close(k);
        }
        self.settle(&mut none);
        self.probe_stale();
        assert_eq!(self.e.connections(), 0);
        for (i, t) in self.tickets.iter().enumerate() {
            assert_ne!(t.state, State::Live, "ticket {i} outlives every connection and session");
        }
        assert_eq!(self.e.in_flight(), 0, "tickets outlive every connection and session");
    }
}

/// The HTTP half (see [`super::session_streams`]).
/// Keeps what a store event hands over (store mode only), checking it: a stream's
/// events come numbered one after the other and nothing follows its last; returns
/// what the host must answer.
fn store_event(store: Option<&mut HostStore>, ev: StoreEvent<'_>) -> Option<StoreAsk> {
    let store = store.unwrap_or_else(|| panic!("a store event with no store: {ev:?}"));
    match ev {
        StoreEvent::LoadSession(l) => Some(StoreAsk::Load(l.conn, l.id.to_owned())),
        StoreEvent::SaveSession(sv) => {
            Some(StoreAsk::Save(sv.conn, sv.id.to_owned(), sv.record.map(<[u8]>::to_vec)))
        }
        StoreEvent::SessionExpired(x) => {
            store.records.remove(x.id);
            None
        }
        StoreEvent::AppendEvent(a) => {
            super::stat("http event stored");
            let kept = store.events.entry((a.session.to_owned(), a.stream)).or_default();
            if let Some(&(seq, _, last)) = kept.last() {
                assert!(!last, "an event after its stream's last");
                assert_eq!(a.seq, seq.wrapping_add(1), "a stream's events handed over out of order");
            }
            kept.push((a.seq, a.data.to_vec(), a.last));
            None
        }
        StoreEvent::LoadEvents(l) => Some(StoreAsk::Events(l.conn, l.session.to_owned(), l.stream, l.from)),
        StoreEvent::TouchSession(_) => {
            // Nothing waits for it; this store's records do not expire.
            super::stat("http event touch");
            None
        }
        other => panic!("a store event this harness does not ask for: {other:?}"),
    }
}

pub(super) fn run(cfg: u8, data: &[u8]) {
    let mut b = Bytes::new(data);
    let mut h = HttpHarness::new(cfg);
    // `cfg` has seven bits, all taken by the settings: whether the host answers what is
    // still held at the end comes from the input's length instead.
    let answer_at_end = data.len() % 2 == 1;
    for _ in 0..MAX_OPS {
        if b.is_empty() {
            break;
        }
        h.step += 1;
        let op = b.u8();
        if h.trace {
            eprintln!("op {} ({}) at {:?}, step {}", op & 15, op >> 4, h.now, h.step);
        }
        match op & 15 {
            0 => {
                let caps = b.u8();
                if let Some(k) = h.free_peer(op >> 4) {
                    h.initialize(k, caps & 7, model::REVISIONS[usize::from(caps >> 3) & 1]);
                    if caps & 0x10 == 0 {
                        h.settle(&mut b);
                        let named = h.sessions.len().checked_sub(1).map_or(Named::Absent, Named::Sess);
                        if let Some(k) = h.free_peer(op >> 4) {
                            h.initialized(k, named);
                        }
                    }
                }
            }
            1..=3 => {
                if let Some(k) = h.free_peer(op >> 4) {
                    h.call(k, &mut b);
                }
            }
            4 | 5 => {
                if let Some(k) = h.free_peer(op >> 4) {
                    h.reply(k, &mut b);
                }
            }
            6 => {
                if let Some(k) = h.free_peer(op >> 4) {
                    h.get(k, &mut b);
                }
            }
            7 => {
                if let Some(k) = h.free_peer(op >> 4) {
                    let named = h.pick_named(b.u8());
                    h.delete(k, named, b.u8());
                }
            }
            8 => {
                if let Some(k) = h.free_peer(op >> 4) {
                    h.cancel(k, b.u8());
                }
            }
            9 => h.close(usize::from(op >> 4) % PEERS),
            10 | 11 => {
                h.now = h.now + Duration::from_millis(u64::from(b.u8()) * 50);
                let (now, step) = (h.now, h.step);
                for t in &mut h.tickets {
                    if t.round.as_ref().is_some_and(|r| r.deadline <= now) && t.expired.is_none() {
                        t.expired = Some(step);
                    }
                }
                h.e.handle_timeout(h.now);
            }
            12 | 13 => {
                if !h.tickets.is_empty() {
                    let i = usize::from(b.u8()) % h.tickets.len();
                    let (how, choice) = (b.u8(), b.u8());
                    h.act(i, how, choice);
                }
            }
            14 => {
                h.settle(&mut b);
                h.replace_catalog();
            }
            _ => h.probe_stale(),
        }
        h.settle(&mut b);
        h.check();
    }
    h.finish(answer_at_end);
}
