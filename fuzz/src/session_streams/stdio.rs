//! The stdio half of `session_streams`: one session-bound client whose requests the host
//! answers with input requests, and the client's responses to them.

use core::time::Duration;
use mcp_engine::Commands;
use std::collections::HashMap;

use mcp_engine::error::{AnswerError, HostError, NotifyError};
use mcp_engine::event::AskError;
use mcp_engine::mrtr::InputRequired;
use mcp_engine::{
    Config, Content, Engine, Event, Instant, PromptMessage, PromptOutput, ResourceContents, Ticket,
    ToolOutput,
};
use serde_json::Value;

use super::model::{self, Ask, AskResult, Found, Outcome, ReqKind, Round, caps_json, expect_ask, same_error};
use crate::common::{Bytes, lossy};

const MAX_OPS: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Live,
    Answered,
    Cancelled,
}

/// A ticket the host was handed.
struct Tk {
    ticket: Ticket,
    seq: u64,
    kind: ReqKind,
    state: State,
    /// The round of input it waits for.
    round: Option<Round>,
    rounds: u32,
    /// A command on it was refused as unknown while the harness held it live: the
    /// client's cancellation was processed, and its event must follow.
    cancel_due: bool,
}

/// A request the client sent with an id.
struct Req {
    id: String,
    /// Where its frame ends in the client's stream.
    end: usize,
    kind: Option<ReqKind>,
    token: bool,
    ticket: Option<usize>,
    responses: u32,
    /// The client sent `notifications/cancelled` for it.
    cancel_sent: bool,
}

/// A response frame the client sent to a request of the server.
struct Sent {
    /// Where it ends in the client's stream.
    end: usize,
    outcome: Outcome,
}

/// A line the host's command wrote, by output offset.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// A request to the client.
    Asked(u64, &'static str),
    /// The response to request `seq` (a result, or the `-32021` of an ask nobody can answer).
    Response(u64),
    Progress(u64),
}

struct StdioHarness {
    e: Engine,
    now: Instant,
    timeout: Duration,
    caps: u8,
    next_seq: u64,
    next_tag: u32,
    /// The id the engine's next request to the client gets.
    next_id: u64,
    backlog: Vec<u8>,
    /// Bytes of the client's stream the engine took.
    taken: usize,
    /// Everything the client sent (the stream), to find where frames end.
    sent_total: usize,
    eof: bool,
    /// Output: consumed bytes, and the offset parsed up to.
    consumed: usize,
    parsed: usize,
    pending_line: Vec<u8>,
    expect: HashMap<usize, Expect>,
    reqs: HashMap<u64, Req>,
    by_id: HashMap<String, u64>,
    tickets: Vec<Tk>,
    /// The server's requests: id → (ticket index, kind).
    asked: HashMap<u64, (usize, model::Kind)>,
    /// The client's responses by the id they answer, in the order sent.
    replies: HashMap<u64, Vec<Sent>>,
    /// What the host asked the client outside any request (`ask_client`): id → (kind,
    /// deadline, whether its reply came).
    host_asks: HashMap<u64, (model::Kind, Instant, bool)>,
    /// `Config::max_in_flight`: the most asks waiting at once.
    max_asks: usize,
    trace: bool,
}

impl StdioHarness {
    fn new(cfg: u8, caps: u8) -> Self {
        let timeout = Duration::from_secs([1, 3][usize::from(cfg >> 3) & 1]);
        let mut c = Config::new("fuzz", "0");
        c.max_in_flight(usize::from(cfg & 3) + 1).input_timeout(timeout).max_frame_len(4096);
        Self {
            e: Engine::new(c, model::catalog(false)),
            now: Instant::ZERO,
            timeout,
            caps,
            next_seq: 0,
            next_tag: 0,
            next_id: 1,
            backlog: Vec::new(),
            taken: 0,
            sent_total: 0,
            eof: false,
            consumed: 0,
            parsed: 0,
            pending_line: Vec::new(),
            expect: HashMap::new(),
            reqs: HashMap::new(),
            by_id: HashMap::new(),
            tickets: Vec::new(),
            asked: HashMap::new(),
            replies: HashMap::new(),
            host_asks: HashMap::new(),
            max_asks: usize::from(cfg & 3) + 1,
            trace: std::env::var_os("MCP_FUZZ_TRACE").is_some(),
        }
    }

    fn send(&mut self, frame: &[u8]) {
        if self.trace {
            eprintln!("send {}", String::from_utf8_lossy(frame));
        }
        self.backlog.extend_from_slice(frame);
        self.backlog.push(b'\n');
        self.sent_total += frame.len() + 1;
    }

    fn initialize(&mut self, rev: &str, initialized: bool) {
        let caps = caps_json(self.caps);
        let frame = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"~init\",\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{rev}\",\"capabilities\":{caps},\"clientInfo\":{{\"name\":\"f\",\"version\":\"1\"}}}}}}"
        );
        self.track(u64::MAX, "\"~init\"".into(), None, false, frame.len());
        self.send(frame.as_bytes());
        if initialized {
            self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        }
    }

    /// Request `seq`, whose frame is the next one sent.
    fn track(&mut self, seq: u64, id: String, kind: Option<ReqKind>, token: bool, len: usize) {
        self.by_id.insert(id.clone(), seq);
        let end = self.sent_total + len + 1;
        self.reqs.insert(seq, Req { id, end, kind, token, ticket: None, responses: 0, cancel_sent: false });
    }

    /// Whether the engine took frame ending at `end` (at the end of the stream, a frame
    /// taken but for its newline is served too).
    fn delivered(&self, end: usize) -> bool {
        end <= self.taken || (self.eof && end - 1 <= self.taken)
    }

    /// The client sends a request (a fresh id: a string or a large number).
    fn request(&mut self, pick: u8) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let id = if pick & 0x10 != 0 { format!("\"~r{seq}\"") } else { (1_000_000_000 + seq).to_string() };
        let (frame, kind) = model::request(seq, &id, pick, pick & 0x20 != 0);
        self.track(seq, id, kind, pick & 0x20 != 0, frame.len());
        self.send(frame.as_bytes());
    }

    /// The client answers a request the server sent (or an id it never sent).
    fn reply(&mut self, b: &mut Bytes<'_>) {
        let mut ids: Vec<u64> = self.asked.keys().chain(self.host_asks.keys()).copied().collect();
        ids.sort_unstable();
        let pick = b.u8();
        let target = if ids.is_empty() || pick & 7 == 7 {
            None
        } else {
            // Mostly the latest requests.
            let i = ids.len() - 1 - usize::from(pick >> 3) % ids.len().min(4);
            let id = ids[i];
            Some((id, self.asked.get(&id).map_or_else(|| self.host_asks[&id].0, |a| a.1)))
        };
        let tag = self.next_tag;
        self.next_tag += 1;
        let r = model::reply(b, target, tag);
        self.send(&r.bytes);
        if let Some((id, outcome)) = r.counted {
            self.replies.entry(id).or_default().push(Sent { end: self.sent_total, outcome });
        }
    }

    /// `notifications/cancelled` for a request.
    fn cancel(&mut self, pick: u8) {
        let mut seqs: Vec<u64> = self.reqs.keys().copied().filter(|&s| s != u64::MAX).collect();
        if seqs.is_empty() {
            return;
        }
        seqs.sort_unstable();
        let live: Vec<u64> = self.tickets.iter().filter(|t| t.state == State::Live).map(|t| t.seq).collect();
        let seq = if !live.is_empty() && pick & 1 == 0 {
            live[usize::from(pick >> 1) % live.len()]
        } else {
            seqs[usize::from(pick >> 1) % seqs.len()]
        };
        let r = self.reqs.get_mut(&seq).unwrap_or_else(|| unreachable!());
        r.cancel_sent = true;
        let frame = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{}}}}}",
            r.id
        );
        self.send(frame.as_bytes());
    }

    /// Garbage: no digits and no `~` (it can name no request the harness tracks).
    fn garbage(&mut self, b: &mut Bytes<'_>) {
        let bytes: Vec<u8> = b
            .bytes(120)
            .iter()
            .map(|&c| match c {
                b'0'..=b'9' => b'x',
                b'~' | b'\n' | b'\r' => b'-',
                c => c,
            })
            .collect();
        self.send(&bytes);
    }

    fn feed(&mut self, max: usize) {
        if self.eof || self.backlog.is_empty() {
            return;
        }
        let k = max.min(self.backlog.len());
        let n = self.e.handle_input(self.now, &self.backlog[..k]);
        assert!(n <= k);
        self.backlog.drain(..n);
        self.taken += n;
    }

    fn eof(&mut self) {
        if self.eof {
            return;
        }
        self.eof = true;
        // What the engine did not take was never sent.
        self.backlog.clear();
        self.e.handle_eof(self.now);
    }

    fn timeout(&mut self, step: u8) {
        self.now = self.now + Duration::from_millis(u64::from(step) * 40);
        self.e.handle_timeout(self.now);
    }

    /// The client reads up to `k` bytes of output.
    fn consume(&mut self, k: usize) {
        self.observe();
        let n = k.min(self.e.pending_output().len());
        self.e.consume_output(n);
        self.consumed += n;
        self.observe();
    }

    /// Parses the output written since the last look.
    fn observe(&mut self) {
        let pending = self.e.pending_output();
        let known = self.parsed - self.consumed;
        if pending.len() <= known {
            return;
        }
        let new = pending[known..].to_vec();
        let mut start = self.parsed - self.pending_line.len();
        for &c in &new {
            self.parsed += 1;
            if c == b'\n' {
                let line = core::mem::take(&mut self.pending_line);
                self.line(start, &line);
                start = self.parsed;
            } else {
                self.pending_line.push(c);
            }
        }
    }

    fn line(&mut self, at: usize, line: &[u8]) {
        if self.trace {
            eprintln!("read @{at}: {}", String::from_utf8_lossy(line));
        }
        let v: Value =
            serde_json::from_slice(line).unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", lossy(line)));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        let expect = self.expect.remove(&at);
        if let Some(method) = v.get("method").and_then(Value::as_str) {
            match expect {
                Some(Expect::Asked(id, m)) => {
                    assert_eq!(method, m, "{v}");
                    assert_eq!(v["id"].as_u64(), Some(id), "a request to the client with another id: {v}");
                    assert!(v["params"].is_object(), "{v}");
                }
                Some(Expect::Progress(seq)) => {
                    assert_eq!(method, "notifications/progress", "{v}");
                    assert_eq!(v["params"]["progressToken"], format!("~p{seq}"), "{v}");
                }
                _ => panic!("a message the host did not write: {v}"),
            }
            return;
        }
        assert!(v.get("result").is_some() != v.get("error").is_some(), "{v}");
        let id = v["id"].to_string();
        let Some(&seq) = self.by_id.get(&id) else {
            assert!(
                v["id"].is_null() || v["id"].as_str().is_some_and(|s| !s.starts_with('~')),
                "a response to an id never sent: {v}"
            );
            assert!(expect.is_none(), "the host's answer has an unknown id: {v}");
            return;
        };
        let r = self.reqs.get_mut(&seq).unwrap_or_else(|| unreachable!());
        r.responses += 1;
        assert_eq!(r.responses, 1, "request {id} answered twice: {v}");
        match (r.ticket, expect) {
            (Some(t), Some(Expect::Response(s))) => {
                assert_eq!(s, seq, "the host's answer went to another request: {v}");
                assert_ne!(self.tickets[t].state, State::Cancelled, "an answer to a cancelled request: {v}");
            }
            (None, None) => {}
            (t, x) => panic!("request {id} (ticket {t:?}) answered out of turn ({x:?}): {v}"),
        }
    }

    /// Acts on every event the engine has.
    fn poll(&mut self, b: &mut Bytes<'_>) {
        while let Some(ev) = self.e.poll_event() {
            if self.trace {
                eprintln!("event {ev:?}");
            }
            if let Event::Cancelled(t) = ev {
                let Some(tk) = self.tickets.iter_mut().find(|x| x.ticket == t) else {
                    panic!("a cancellation of a ticket never handed out")
                };
                assert_eq!(tk.state, State::Live, "a cancellation of a ticket no longer live");
                assert!(self.reqs[&tk.seq].cancel_sent, "a cancellation the client never asked for");
                tk.state = State::Cancelled;
                tk.round = None;
                tk.cancel_due = false;
                super::stat("stdio cancelled");
                continue;
            }
            if let Event::ClientReply(r) = ev {
                let id = r.ask.request_id();
                let found = match r.result {
                    Ok(v) => model::classify(false, v.raw(), 0, ""),
                    Err(e) => model::classify(true, e.raw(), e.code(), &e.message()),
                };
                let &(kind, deadline, done) =
                    self.host_asks.get(&id).unwrap_or_else(|| panic!("a reply to {id}, never asked"));
                assert_eq!(r.kind.method(), kind.method());
                assert!(!done, "a second reply to ask {id}");
                self.check_found(id, &found, deadline);
                super::stat(found_name(&found, "stdio"));
                super::stat("stdio ask_client reply");
                self.host_asks.insert(id, (kind, deadline, true));
                continue;
            }
            let ticket = ev.ticket();
            let (kind, seen, found, state) = match &ev {
                Event::CallTool(c) => (
                    ReqKind::Tool,
                    c.arguments.raw().to_owned(),
                    model::entries(&c.input_responses),
                    c.request_state,
                ),
                Event::GetPrompt(p) => (
                    ReqKind::Prompt,
                    p.arguments.raw().to_owned(),
                    model::entries(&p.input_responses),
                    p.request_state,
                ),
                Event::ReadResource(r) => {
                    (ReqKind::Resource, r.uri.to_owned(), model::entries(&r.input_responses), r.request_state)
                }
                _ => panic!("an event this harness does not know"),
            };
            let state = state.map(<[u8]>::to_vec);
            let seq = model::seq_of(kind, &seen);
            assert_eq!(seen, model::expected_args(kind, seq), "the host sees other arguments");
            let i = match self.tickets.iter().position(|t| t.ticket == ticket && t.state == State::Live) {
                Some(i) => {
                    // The request comes back: its round is over.
                    let tk = &mut self.tickets[i];
                    assert_eq!(tk.seq, seq, "a ticket came back for another request");
                    let round =
                        tk.round.take().unwrap_or_else(|| panic!("ticket {ticket:?} came back unasked"));
                    assert_eq!(state, round.state, "the host's state does not come back as given");
                    model::check_keys(&found, &round);
                    super::stat("stdio came back");
                    for (key, f) in &found {
                        let a = round
                            .asked
                            .iter()
                            .find(|a| a.kind.key() == key)
                            .unwrap_or_else(|| unreachable!());
                        self.check_found(a.id, f, round.deadline);
                        super::stat(found_name(f, "stdio"));
                    }
                    i
                }
                None => {
                    assert!(!self.tickets.iter().any(|t| t.ticket == ticket && t.state == State::Live));
                    assert!(found.is_empty() && state.is_none(), "a first round with responses");
                    let r = self
                        .reqs
                        .get_mut(&seq)
                        .unwrap_or_else(|| panic!("an event for request {seq}, never sent"));
                    assert_eq!(r.kind, Some(kind), "an event of the wrong kind");
                    assert!(r.ticket.is_none(), "request {seq} handed out twice");
                    r.ticket = Some(self.tickets.len());
                    self.tickets.push(Tk {
                        ticket,
                        seq,
                        kind,
                        state: State::Live,
                        round: None,
                        rounds: 0,
                        cancel_due: false,
                    });
                    self.tickets.len() - 1
                }
            };
            let how = b.u8();
            self.act(i, how, b.u8());
        }
        self.observe();
    }

    /// What the host found under the key of request `id` is what the client's first
    /// response to it became, or the error of a timeout past the deadline, or of the
    /// stream's end.
    fn check_found(&self, id: u64, found: &Found, deadline: Instant) {
        match found {
            Found::TimedOut => assert!(self.now >= deadline, "timed out before the deadline"),
            Found::Gone => assert!(self.eof, "gone while the stream is open"),
            f => {
                let first = self.replies.get(&id).and_then(|v| v.first());
                let first = first
                    .unwrap_or_else(|| panic!("{f:?} under request {id}, which the client never answered"));
                assert!(first.end <= self.taken, "a response the engine never took counted");
                assert!(
                    model::is(f, first.outcome),
                    "{f:?} is not what the first response ({:?}) became",
                    first.outcome
                );
            }
        }
    }

    /// The host acts on live ticket `i`: answers, fails, asks for input, reports progress,
    /// or keeps it.
    fn act(&mut self, i: usize, how: u8, choice: u8) {
        let (t, seq, kind) = (self.tickets[i].ticket, self.tickets[i].seq, self.tickets[i].kind);
        if self.tickets[i].state != State::Live {
            return self.act_dead(t, how);
        }
        let base = self.consumed + self.e.pending_output().len();
        self.observe();
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
            3..=5 => return self.ask(i, choice, base),
            6 => {
                let r =
                    self.e.notify_progress(t, f64::from(self.tickets[i].rounds) + f64::from(how), None, None);
                match r {
                    Ok(()) => {
                        assert!(self.reqs[&seq].token, "progress without a token");
                        self.expect.insert(base, Expect::Progress(seq));
                    }
                    Err(NotifyError::NoProgressToken) => assert!(!self.reqs[&seq].token),
                    Err(NotifyError::NotIncreasing) => {}
                    Err(NotifyError::UnknownTicket) => return self.refused_live(i),
                    Err(e) => panic!("progress on a live ticket: {e}"),
                }
                assert_eq!(
                    self.e.reconnect_later(t, Duration::from_millis(5)),
                    Ok(false),
                    "stdio has no connection to let go"
                );
                self.observe();
                return;
            }
            _ => return,
        };
        if r == Err(AnswerError::UnknownTicket) {
            return self.refused_live(i);
        }
        assert_eq!(r, Ok(()), "answering a live ticket");
        self.tickets[i].state = State::Answered;
        self.tickets[i].round = None;
        self.expect.insert(base, Expect::Response(seq));
        self.observe();
    }

    fn ask(&mut self, i: usize, choice: u8, base: usize) {
        let (t, seq) = (self.tickets[i].ticket, self.tickets[i].seq);
        let ask = Ask::new(choice, u64::from(self.tickets[i].rounds));
        let reqs: Vec<_> = ask.bufs.iter().map(|r| r.as_request()).collect();
        let mut ir = InputRequired::new(&reqs);
        if let Some(s) = &ask.state {
            ir = ir.state(s);
        }
        let r = self.e.answer_input_required(t, &ir);
        let mut next = self.next_id;
        let want = expect_ask(&ask, self.caps, self.eof, &mut next);
        if self.trace {
            eprintln!("ask {choice:#x} on ticket {i}: {r:?}, expected {want:?}");
        }
        match (r, want) {
            (Err(AnswerError::UnknownTicket), _) => self.refused_live(i),
            (Err(got), AskResult::Err(want)) => {
                assert!(same_error(&got, &want), "{got:?}, expected {want:?}")
            }
            (Ok(()), AskResult::Refused) => {
                super::stat("stdio ask refused");
                self.tickets[i].state = State::Answered;
                self.tickets[i].round = None;
                self.expect.insert(base, Expect::Response(seq));
            }
            (Ok(()), AskResult::Asked(asked)) => {
                super::stat("stdio ask sent");
                self.next_id = next;
                let mut at = base;
                let pending = self.e.pending_output();
                for a in &asked {
                    self.expect.insert(at, Expect::Asked(a.id, a.kind.method()));
                    self.asked.insert(a.id, (i, a.kind));
                    let rel = at - self.consumed;
                    let nl = memchr::memchr(b'\n', &pending[rel..])
                        .unwrap_or_else(|| panic!("a request to the client is missing"));
                    at += nl + 1;
                }
                let deadline = self.now + self.timeout;
                self.tickets[i].round = Some(Round { asked, deadline, state: ask.state.clone() });
                self.tickets[i].rounds += 1;
            }
            (r, want) => panic!("answer_input_required: {r:?}, expected {want:?}"),
        }
        self.observe();
    }

    /// The host asks the client outside any request (`ask_client`): refused when the
    /// input ended, the client did not declare the kind, or as many asks wait as there are
    /// slots; else sent with the next id.
    fn ask_client(&mut self, choice: u8) {
        let kind = model::KINDS[usize::from(choice) % 3];
        let base = self.consumed + self.e.pending_output().len();
        self.observe();
        let request = kind.request();
        let r = self.e.ask_client(&request.as_request());
        let waiting = self.host_asks.values().filter(|a| !a.2).count();
        let want = if self.eof {
            Err(AskError::ClientGone)
        } else if self.caps & kind.bit() == 0 {
            Err(AskError::NotDeclared(request.kind()))
        } else if waiting >= self.max_asks {
            Err(AskError::TooMany)
        } else {
            Ok(self.next_id)
        };
        if self.trace {
            eprintln!("ask_client {kind:?}: {r:?}, expected {want:?}");
        }
        match (r, want) {
            (Ok(ask), Ok(id)) => {
                assert_eq!(ask.request_id(), id, "an ask with another id");
                super::stat("stdio ask_client sent");
                self.next_id += 1;
                self.expect.insert(base, Expect::Asked(id, kind.method()));
                self.host_asks.insert(id, (kind, self.now + self.timeout, false));
            }
            (Err(AskError::Backpressure), _) => super::stat("stdio ask_client backpressure"),
            (Err(got), Err(want)) => {
                assert_eq!(got, want);
                super::stat("stdio ask_client refused");
            }
            (r, want) => panic!("ask_client: {r:?}, expected {want:?}"),
        }
        self.observe();
    }

    /// A command on live ticket `i` was refused as unknown: the client's cancellation
    /// was processed behind the harness's back (by the command before), and its event is
    /// due.
    fn refused_live(&mut self, i: usize) {
        assert!(self.reqs[&self.tickets[i].seq].cancel_sent, "a live ticket refused as unknown");
        self.tickets[i].cancel_due = true;
        self.observe();
    }

    /// Commands on a ticket that is over: refused (what they would write is checked by
    /// `line`: a line of the host's is always expected).
    fn act_dead(&mut self, t: Ticket, how: u8) {
        let e = &mut self.e;
        let r = match how % 4 {
            0 => e.answer_tool(t, &ToolOutput::new(&[])),
            1 => e.answer_error(t, HostError::NotFound),
            2 => {
                let roots = [mcp_engine::mrtr::InputRequest::list_roots("r")];
                e.answer_input_required(t, &InputRequired::new(&roots))
            }
            _ => e.answer_prompt(t, &PromptOutput::new(&[])),
        };
        assert_eq!(r, Err(AnswerError::UnknownTicket), "a command on a ticket that is over");
        assert_eq!(e.reconnect_later(t, Duration::from_millis(1)), Err(NotifyError::UnknownTicket));
        self.observe();
    }

    /// After every operation: the engine holds the live tickets, its timer is the
    /// earliest deadline of a round, no round outlives its deadline or the stream, and
    /// a round whose every request has a response the engine took has come back once
    /// the client has read everything.
    fn check(&mut self) {
        self.observe();
        let live = self.tickets.iter().filter(|t| t.state == State::Live).count();
        assert_eq!(self.e.in_flight(), live, "tickets in flight");
        let waiting = self.tickets.iter().filter_map(|t| t.round.as_ref());
        let asks = self.host_asks.values().filter(|a| !a.2).map(|a| a.1);
        let earliest = waiting.clone().map(|r| r.deadline).chain(asks).min();
        assert_eq!(self.e.poll_timeout(), earliest, "the timer is not the earliest deadline of a round");
        for (id, &(_, deadline, done)) in &self.host_asks {
            assert!(done || deadline > self.now, "ask {id} outlived its deadline");
            assert!(done || !self.eof, "ask {id} outlived the stream");
        }
        for t in &self.tickets {
            assert!(
                !(t.cancel_due && t.state == State::Live),
                "a ticket refused as unknown was never cancelled"
            );
        }
        for r in waiting {
            assert!(r.deadline > self.now, "a round outlived its deadline");
            assert!(!self.eof, "a round outlived the stream");
            if self.e.pending_output().is_empty() {
                let answered = r.asked.iter().all(|a| {
                    self.replies.get(&a.id).and_then(|v| v.first()).is_some_and(|s| s.end <= self.taken)
                });
                // A response needs no ticket slot: one behind a request that waits for a
                // slot must not wait with it (else every slot can be held by requests
                // waiting for responses that wait for a slot, until the input times out).
                assert!(!answered, "every request of a round was answered, and the round did not come back");
            }
        }
    }

    /// The client sends what is left and closes; the host answers everything; the client
    /// reads everything: the stream finishes, every request is answered once unless
    /// cancelled, every ticket is over.
    fn finish(&mut self, b: &mut Bytes<'_>) {
        for round in 0.. {
            assert!(round < 1000, "the session never ends: {:?}", self.e);
            self.feed(usize::MAX);
            if self.backlog.is_empty() {
                self.eof();
            }
            self.poll_all_answering();
            for i in 0..self.tickets.len() {
                if self.tickets[i].state == State::Live {
                    self.act(i, 0, 0);
                }
            }
            self.poll_all_answering();
            self.consume(usize::MAX);
            if self.eof && self.e.is_finished() && self.e.pending_output().is_empty() {
                break;
            }
        }
        let _ = b;
        self.check();
        assert_eq!(self.e.in_flight(), 0);
        assert!(self.pending_line.is_empty(), "output ends inside a line");
        assert!(self.expect.is_empty(), "lines the host wrote were never seen: {:?}", self.expect);
        for t in &self.tickets {
            assert_ne!(t.state, State::Live);
        }
        assert!(self.host_asks.values().all(|a| a.2), "an ask without its reply: {:?}", self.host_asks);
        for (seq, r) in &self.reqs {
            let cancelled = r.ticket.is_some_and(|t| self.tickets[t].state == State::Cancelled);
            let want = u32::from(!cancelled && self.delivered(r.end));
            assert_eq!(r.responses, want, "request {seq} ({}) answered {} times", r.id, r.responses);
        }
    }

    /// Polls every event, answering each at once.
    fn poll_all_answering(&mut self) {
        let zeros = [0u8; 0];
        let mut none = Bytes::new(&zeros);
        self.poll(&mut none);
    }
}

/// The name a stat counts `found` under.
pub(super) fn found_name(f: &Found, half: &str) -> &'static str {
    match (f, half) {
        (Found::Response(_), "stdio") => "stdio found response",
        (Found::ClientError(..), "stdio") => "stdio found client error",
        (Found::Misfit, "stdio") => "stdio found misfit",
        (Found::TimedOut, "stdio") => "stdio found timeout",
        (Found::Gone, "stdio") => "stdio found gone",
        (Found::Response(_), _) => "http found response",
        (Found::ClientError(..), _) => "http found client error",
        (Found::Misfit, _) => "http found misfit",
        (Found::TimedOut, _) => "http found timeout",
        (Found::Gone, _) => "http found gone",
    }
}

/// The stdio half (see [`super::session_streams`]).
pub(super) fn run(cfg: u8, data: &[u8]) {
    let mut b = Bytes::new(data);
    let setup = b.u8();
    let caps = setup & 7;
    let mut h = StdioHarness::new(cfg, caps);
    h.initialize(model::REVISIONS[usize::from(setup >> 3) & 1], setup & 0x10 == 0);
    h.feed(usize::MAX);
    h.poll(&mut b);
    for _ in 0..MAX_OPS {
        if b.is_empty() {
            break;
        }
        let op = b.u8();
        if h.trace {
            eprintln!("op {} ({})", op & 15, op >> 4);
        }
        if h.eof && matches!(op & 15, 0..=8) {
            // The client closed its side: it sends nothing more.
            continue;
        }
        match op & 15 {
            0..=2 => {
                h.request(b.u8());
                if op & 0x10 != 0 {
                    h.feed(usize::MAX);
                }
            }
            3..=5 => {
                h.reply(&mut b);
                if op & 0x10 != 0 {
                    h.feed(usize::MAX);
                }
            }
            6 => h.cancel(b.u8()),
            7 => h.garbage(&mut b),
            8 => {
                let k = if op & 0x10 != 0 { usize::MAX } else { usize::from(b.u16()) % 600 };
                h.feed(k);
            }
            9 => {
                let k = if op & 0x10 != 0 { usize::MAX } else { usize::from(b.u16()) % 900 };
                h.consume(k);
            }
            10 | 11 => h.timeout(b.u8()),
            12 => {
                // The host acts later on a ticket it kept (or one that is over).
                if !h.tickets.is_empty() {
                    let i = usize::from(b.u8()) % h.tickets.len();
                    let (how, choice) = (b.u8(), b.u8());
                    h.act(i, how, choice);
                }
            }
            13 if op >> 4 == 0 => h.eof(),
            14 => h.ask_client(b.u8()),
            _ => h.feed(usize::MAX),
        }
        h.poll(&mut b);
        h.check();
    }
    h.finish(&mut b);
}
