//! op_sequence: a stdio session driven by a sequence of operations.

use core::time::Duration;
use mcp_engine::Commands;
use std::collections::{HashMap, VecDeque};

use mcp_engine::error::{AnswerError, HostError, NotifyError};
use mcp_engine::{
    Config, Content, Engine, Event, Instant, LogLevel, PromptMessage, PromptOutput, ResourceContents, Ticket,
    ToolOutput,
};
use serde_json::Value;

use crate::common::{Bytes, EvKind, check_line, rich_catalog};
use crate::jsonrpc::{Expect, IdPlan, Json, LOG_LEVEL_NAMES, MsgCfg, REVISIONS, message};

/// Most operations one input runs.
const MAX_OPS: usize = 512;

/// What the harness knows of one generated request (by its sequence number, the marker
/// `~N` it carries where the host sees it).
struct SeqInfo {
    /// The id, when the engine must answer the frame with one: its JSON, and the value.
    id: Option<(String, Value)>,
    /// The method, when it is a string.
    method: Option<String>,
    /// The progress token the engine keeps, as JSON.
    token: Option<String>,
    /// Output offset of the response the host wrote for it.
    responded_at: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TicketState {
    Live,
    Answered,
    Cancelled,
}

/// A ticket the host was handed.
struct Tracked {
    ticket: Ticket,
    seq: u64,
    kind: EvKind,
    state: TicketState,
    /// An answer or notification was refused as unknown while the harness held the ticket
    /// live: the client's cancellation was processed, and its event must follow.
    cancel_due: bool,
    /// Output offset when the harness saw the cancellation.
    cancelled_at: Option<usize>,
    last_progress: f64,
}

/// Per request id: frames the engine took, responses written, cancellations seen.
#[derive(Debug, Default)]
struct IdCount {
    delivered: u32,
    responses: u32,
    cancelled: u32,
}

/// A line the host wrote, by output offset.
#[derive(Debug, Clone, Copy)]
enum HostLine {
    Response(u64),
    Progress(u64),
    Log,
}

/// What the host did with an event.
enum Did {
    Answered,
    Progress,
    Log,
    Kept,
}

struct OpHarness {
    e: Engine,
    now: Instant,
    max_in_flight: usize,
    max_buffered: usize,
    frame_limit: usize,
    depth_limit: usize,
    next_seq: u64,
    /// Bytes the client sent that the engine has not taken.
    backlog: Vec<u8>,
    /// Bytes of the stream the engine took.
    taken: usize,
    /// Frames not wholly taken: where each ends in the stream, and its request.
    queued: VecDeque<(usize, Option<u64>)>,
    eof: bool,
    /// All output seen: what was consumed, then what is pending.
    seen: Vec<u8>,
    consumed: usize,
    /// Where the next unchecked line starts.
    parsed: usize,
    /// Lines not wholly consumed: start, end, whether the host wrote it.
    lines: VecDeque<(usize, usize, bool)>,
    host_lines: HashMap<usize, HostLine>,
    ids: HashMap<String, IdCount>,
    seqs: HashMap<u64, SeqInfo>,
    tickets: Vec<Tracked>,
    /// An event was polled and the engine has not processed frames since: a refused
    /// command may then let the engine write output for frames behind the event.
    unprocessed: bool,
    progress_value: f64,
    /// `MCP_FUZZ_TRACE` is set: print what is sent and read.
    trace: bool,
}

/// The sequence number in a marker `~N` inside `s`.
fn marker_in(s: &str) -> Option<u64> {
    let at = s.find('~')?;
    let digits: String = s[at + 1..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The host acts on an event: answers it (`how` 0-1), fails it (2), reports progress (3),
/// logs (4) or keeps it for later.
fn host_act(ev: Event<'_>, how: u8) -> Did {
    let text = [Content::text("ok")];
    let r = match (how % 8, ev) {
        (0 | 1, Event::CallTool(c)) => c.answer(&ToolOutput::new(&text)),
        (0 | 1, Event::ReadResource(r)) => {
            let uri = r.uri;
            r.answer(&[ResourceContents::text(uri, None, "x")])
        }
        (0 | 1, Event::GetPrompt(p)) => {
            p.answer(&PromptOutput::new(&[PromptMessage::user(Content::text("x"))]))
        }
        (0 | 1, Event::Complete(c)) => {
            let value = c.value;
            c.answer(&[value, "y"], None, false)
        }
        (2, Event::CallTool(c)) => c.fail(HostError::Internal("x")),
        (2, Event::ReadResource(r)) => r.fail(HostError::NotFound),
        (2, Event::GetPrompt(p)) => p.fail(HostError::InvalidParams("x")),
        (2, Event::Complete(c)) => c.fail(HostError::NotFound),
        (3, Event::CallTool(mut c)) => {
            return match c.progress(1.0, Some(4.0), Some("p")) {
                Ok(()) => Did::Progress,
                Err(NotifyError::NoProgressToken) => Did::Kept,
                Err(e) => panic!("progress on a live ticket: {e}"),
            };
        }
        (4, Event::CallTool(mut c)) => {
            return match c.log(LogLevel::Warning, Some("l"), "w") {
                Ok(()) => Did::Log,
                Err(NotifyError::Filtered) => Did::Kept,
                Err(e) => panic!("a log on a live ticket: {e}"),
            };
        }
        _ => return Did::Kept,
    };
    assert_eq!(r, Ok(()), "answering a live ticket through its event");
    Did::Answered
}

impl OpHarness {
    fn new(a: u8, c: u8) -> Self {
        let max_in_flight = 1 + usize::from(a & 3);
        let max_buffered = [1, 300, 4096, 1 << 20][usize::from(a >> 2) & 3];
        let frame_limit = [512, 1024, 2048, 700][usize::from(a >> 4) & 3];
        let depth_limit = [8, 16][usize::from(a >> 6) & 1];
        let mut cfg = Config::new("fuzz", "0");
        cfg.max_frame_len(frame_limit)
            .max_depth(depth_limit)
            .max_in_flight(max_in_flight)
            .max_buffered_output(max_buffered)
            .logging(a & 0x80 != 0)
            .completions(c & 1 == 0)
            .page_size(1 + usize::from((c >> 1) & 3))
            .server_info_in_meta(c & 8 != 0);
        Self {
            e: Engine::new(cfg, rich_catalog()),
            now: Instant::ZERO,
            max_in_flight,
            max_buffered,
            frame_limit,
            depth_limit,
            next_seq: 0,
            backlog: Vec::new(),
            taken: 0,
            queued: VecDeque::new(),
            eof: false,
            seen: Vec::new(),
            consumed: 0,
            parsed: 0,
            lines: VecDeque::new(),
            host_lines: HashMap::new(),
            ids: HashMap::new(),
            seqs: HashMap::new(),
            tickets: Vec::new(),
            unprocessed: false,
            progress_value: 1.0,
            trace: std::env::var_os("MCP_FUZZ_TRACE").is_some(),
        }
    }

    /// Output written so far (consumed and pending).
    fn total(&self) -> usize {
        self.consumed + self.e.pending_output().len()
    }

    /// The client sends a frame (the harness's request `seq`, if any).
    fn send(&mut self, mut bytes: Vec<u8>, seq: Option<u64>) {
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        if self.trace {
            eprintln!("send {seq:?}: {}", String::from_utf8_lossy(&bytes).trim_end());
        }
        self.backlog.extend_from_slice(&bytes);
        self.queued.push_back((self.taken + self.backlog.len(), seq));
    }

    /// A fresh id for request `seq`, of a type `n` picks; no two requests share one, and
    /// no other frame carries one (garbage has no digits and no `~`).
    fn fresh_id(seq: u64, n: usize) -> Value {
        match n % 5 {
            0 => Value::from(seq),
            1 => Value::from(-(seq as i64) - 1),
            2 => Value::from(u64::MAX - seq),
            3 => Value::String(format!("~{seq}")),
            _ => Value::String(format!("~{seq}{}", "_".repeat(130))),
        }
    }

    /// A generated request (or notification) carrying marker `~seq`, with a fresh id or
    /// `reuse`.
    fn request(&mut self, b: &mut Bytes<'_>, reuse: Option<Value>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let id = match reuse {
            Some(v) => IdPlan::Use(v),
            None => match b.below(16) {
                0 => IdPlan::Absent,
                1 => IdPlan::Invalid,
                n => IdPlan::Use(Self::fresh_id(seq, n)),
            },
        };
        let token = match b.below(4) {
            0 | 1 => None,
            2 => Some(Value::String(format!("~p{seq}"))),
            _ => Some(Value::from(4_000_000_000u64 + seq)),
        };
        let marker = format!("~{seq}.");
        let cfg = MsgCfg {
            depth_limit: self.depth_limit,
            frame_limit: self.frame_limit,
            id,
            marker: Some(&marker),
            token,
            ticketed: true,
        };
        let frame = message(b, &cfg);
        let id = match frame.expect {
            Expect::Reply(v) => Some((v.to_string(), v)),
            _ => None,
        };
        let token = frame.token.map(|t| t.to_string());
        self.seqs.insert(seq, SeqInfo { id, method: frame.method, token, responded_at: None });
        self.send(frame.bytes, Some(seq));
    }

    /// A request that reuses the id of an earlier one.
    fn duplicate(&mut self, b: &mut Bytes<'_>) {
        let mut with_ids: Vec<&Value> =
            self.seqs.values().filter_map(|s| s.id.as_ref().map(|(_, v)| v)).collect();
        if with_ids.is_empty() {
            return;
        }
        with_ids.sort_by_key(|v| v.to_string());
        let v = with_ids[b.below(with_ids.len())].clone();
        self.request(b, Some(v));
    }

    /// `initialize` (opening a session-bound stream), then `notifications/initialized`.
    fn initialize(&mut self, b: &mut Bytes<'_>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let id = Self::fresh_id(seq, 0);
        let rev = b.pick(REVISIONS);
        let frame = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{rev}\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"f\",\"version\":\"1\"}}}}}}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n"
        );
        let info = SeqInfo {
            id: Some((id.to_string(), id)),
            method: Some("initialize".into()),
            token: None,
            responded_at: None,
        };
        self.seqs.insert(seq, info);
        let (first, second) = frame.split_at(frame.find('\n').unwrap_or(0) + 1);
        self.send(first.as_bytes().to_vec(), Some(seq));
        self.send(second.as_bytes().to_vec(), None);
    }

    /// `notifications/cancelled` for a live request, any request, or none the harness sent.
    fn cancel(&mut self, b: &mut Bytes<'_>, how: u8) {
        let live: Vec<u64> =
            self.tickets.iter().filter(|t| t.state == TicketState::Live).map(|t| t.seq).collect();
        let mut any: Vec<u64> = self.seqs.iter().filter(|(_, s)| s.id.is_some()).map(|(&k, _)| k).collect();
        any.sort_unstable();
        let seq = match how % 4 {
            0 | 1 if !live.is_empty() => Some(live[b.below(live.len())]),
            0..=2 if !any.is_empty() => Some(any[b.below(any.len())]),
            _ => None,
        };
        let target = seq.and_then(|s| self.seqs.get(&s)).and_then(|s| s.id.as_ref()).map(|(_, v)| v.clone());
        let style = b.u8();
        let j = Json { b, style, depth: 0, max_nest: 0, broken: false, bias: false };
        let mut params: Vec<(String, Vec<u8>)> = Vec::new();
        match target {
            Some(v) => params.push(("requestId".into(), j.id_value(&v))),
            None => match how >> 2 & 3 {
                0 => params.push(("requestId".into(), b"1000000007".to_vec())),
                1 => params.push(("requestId".into(), j.str_value("~x"))),
                2 => params.push(("requestId".into(), b"null".to_vec())),
                _ => {}
            },
        }
        params.push(("reason".into(), j.str_value("r")));
        let mut j = Json { b: j.b, style, depth: 0, max_nest: 0, broken: false, bias: false };
        let p = j.object_at(2, &params);
        let members = [
            ("jsonrpc".to_owned(), j.str_value("2.0")),
            ("method".to_owned(), j.str_value("notifications/cancelled")),
            ("params".to_owned(), p),
        ];
        let frame = j.object_at(1, &members);
        self.send(frame, None);
    }

    /// A frame that is not a request: sanitized bytes (no digit, `~` or `\`, so no valid
    /// request and no id the harness tracks), a cut request, a blank or over-long line.
    fn garbage(&mut self, b: &mut Bytes<'_>) {
        let bytes = match b.below(4) {
            0 | 1 => b
                .bytes(300)
                .iter()
                .map(|&c| match c {
                    b'0'..=b'9' => b'x',
                    b'~' => b'-',
                    b'\\' => b'/',
                    c => c,
                })
                .collect(),
            2 => {
                let cfg = MsgCfg {
                    depth_limit: self.depth_limit,
                    frame_limit: self.frame_limit,
                    id: IdPlan::Random,
                    marker: None,
                    token: None,
                    ticketed: true,
                };
                let frame = message(b, &cfg).bytes;
                let cut = b.below(frame.len());
                frame[..cut].to_vec()
            }
            _ => {
                let mut line = if b.u8() & 1 == 0 { b"{\"jsonrpc\":\"".to_vec() } else { Vec::new() };
                line.resize(self.frame_limit + 1 + b.below(100), b'x');
                line
            }
        };
        self.send(bytes, None);
    }

    /// Offers up to `max` bytes of the backlog.
    fn feed(&mut self, max: usize) {
        if self.eof {
            if !self.backlog.is_empty() {
                assert_eq!(self.e.handle_input(self.now, &self.backlog), 0, "input taken after the end");
            }
            return;
        }
        let k = max.min(self.backlog.len());
        if k == 0 {
            return;
        }
        let n = self.e.handle_input(self.now, &self.backlog[..k]);
        if n > 0 {
            // (Taking nothing, it does not process frames: the next poll does.)
            self.unprocessed = false;
        }
        assert!(n <= k);
        if n < k {
            assert_eq!(self.e.input_capacity(), 0, "took {n} of {k} bytes with room left");
        }
        self.backlog.drain(..n);
        self.taken += n;
        while let Some(&(end, seq)) = self.queued.front() {
            if end > self.taken {
                break;
            }
            self.queued.pop_front();
            self.delivered(seq);
        }
    }

    fn delivered(&mut self, seq: Option<u64>) {
        if let Some((key, _)) = seq.and_then(|s| self.seqs.get(&s)).and_then(|s| s.id.as_ref()) {
            self.ids.entry(key.clone()).or_default().delivered += 1;
        }
    }

    /// The client closes its side: a frame taken but for its newline is processed.
    fn eof(&mut self) {
        if self.eof {
            return;
        }
        self.e.handle_eof(self.now);
        self.unprocessed = false;
        self.eof = true;
        if let Some(&(end, seq)) = self.queued.front()
            && end == self.taken + 1
        {
            self.delivered(seq);
        }
        self.queued.clear();
        assert_eq!(self.e.input_capacity(), 0);
    }

    /// Polls one event, or every event; the host acts on each (`b` says how).
    fn poll(&mut self, b: &mut Bytes<'_>, all: bool, answer_all: bool) {
        loop {
            let Some(ev) = self.e.poll_event() else {
                self.unprocessed = false;
                break;
            };
            self.unprocessed = true;
            if self.trace {
                eprintln!("event {ev:?}");
            }
            if let Event::Cancelled(t) = ev {
                let at = self.consumed + self.e.pending_output().len();
                let Some(tr) = self.tickets.iter_mut().find(|x| x.ticket == t) else {
                    panic!("a cancellation of a ticket never handed out");
                };
                assert_eq!(tr.state, TicketState::Live, "a cancellation of a ticket no longer live");
                tr.state = TicketState::Cancelled;
                tr.cancelled_at = Some(at);
                let key = self.seqs.get(&tr.seq).and_then(|s| s.id.as_ref()).map(|(k, _)| k.clone());
                let key = key.unwrap_or_else(|| panic!("a ticket for request {} that has no id", tr.seq));
                self.ids.entry(key).or_default().cancelled += 1;
            } else {
                let ticket = ev.ticket();
                let (kind, text) = match &ev {
                    Event::CallTool(c) => (EvKind::Tool, c.arguments.raw()),
                    Event::ReadResource(r) => (EvKind::Resource, r.uri),
                    Event::GetPrompt(p) => (EvKind::Prompt, p.arguments.raw()),
                    Event::Complete(c) => (EvKind::Completion, c.value),
                    Event::Cancelled(_) => unreachable!("handled above"),
                    _ => panic!("an event this harness does not know"),
                };
                let Some(seq) = marker_in(text) else {
                    panic!("an event without the request's marker: {text:?}")
                };
                let Some(info) = self.seqs.get(&seq) else {
                    panic!("an event for request {seq}, never sent")
                };
                let want = match kind {
                    EvKind::Tool => "tools/call",
                    EvKind::Resource => "resources/read",
                    EvKind::Prompt => "prompts/get",
                    EvKind::Completion => "completion/complete",
                };
                assert_eq!(
                    info.method.as_deref(),
                    Some(want),
                    "an event of the wrong kind for request {seq}"
                );
                assert!(info.id.is_some(), "an event for request {seq}, which the engine must not answer");
                assert!(!self.tickets.iter().any(|x| x.ticket == ticket), "a ticket handed out twice");
                let has_token = info.token.is_some();
                let how = if answer_all { 0 } else { b.u8() };
                let did = host_act(ev, how);
                let mut tr = Tracked {
                    ticket,
                    seq,
                    kind,
                    state: TicketState::Live,
                    cancel_due: false,
                    cancelled_at: None,
                    last_progress: f64::NEG_INFINITY,
                };
                // The host wrote one line, at the end of the output.
                let last_line = || {
                    let out = self.e.pending_output();
                    let start = out[..out.len().saturating_sub(1)]
                        .iter()
                        .rposition(|&c| c == b'\n')
                        .map_or(0, |i| i + 1);
                    self.consumed + start
                };
                match did {
                    Did::Answered => {
                        tr.state = TicketState::Answered;
                        self.host_lines.insert(last_line(), HostLine::Response(seq));
                    }
                    Did::Progress => {
                        assert!(has_token, "progress accepted for a request without a token");
                        tr.last_progress = 1.0;
                        self.host_lines.insert(last_line(), HostLine::Progress(seq));
                    }
                    Did::Log => {
                        self.host_lines.insert(last_line(), HostLine::Log);
                    }
                    Did::Kept => {}
                }
                self.tickets.push(tr);
                assert!(self.e.in_flight() <= self.max_in_flight);
            }
            if !all {
                return;
            }
        }
        // Every event polled: the engine holds exactly the live tickets.
        let live = self.tickets.iter().filter(|t| t.state == TicketState::Live).count();
        assert_eq!(self.e.in_flight(), live, "tickets in flight");
        assert!(self.tickets.iter().all(|t| !t.cancel_due || t.state == TicketState::Cancelled));
    }

    /// Answers a live ticket: the right kind, an error, or the wrong kind (refused).
    fn answer(&mut self, b: &mut Bytes<'_>, how: u8) {
        let live: Vec<usize> =
            (0..self.tickets.len()).filter(|&i| self.tickets[i].state == TicketState::Live).collect();
        if live.is_empty() {
            return;
        }
        let i = live[b.below(live.len())];
        self.answer_one(i, how);
    }

    fn answer_one(&mut self, i: usize, how: u8) {
        let (t, kind) = (self.tickets[i].ticket, self.tickets[i].kind);
        let before = self.total();
        let unprocessed = self.unprocessed;
        let text = [Content::text("later")];
        let messages = [PromptMessage::assistant(Content::text("x"))];
        let wrong = how % 8 == 6;
        let e = &mut self.e;
        let r = match (how % 8, kind) {
            (4, _) => e.answer_error(t, HostError::Internal("late")),
            (5, _) => e.answer_error(t, HostError::NotFound),
            (7, _) => e.answer_error(t, HostError::InvalidParams("p")),
            (6, EvKind::Tool) => e.answer_completion(t, &["x"], None, false),
            (6, _) => e.answer_tool(t, &ToolOutput::new(&text)),
            (_, EvKind::Tool) => e.answer_tool(t, &ToolOutput::error(&text)),
            (_, EvKind::Resource) => e.answer_resource(t, &[ResourceContents::text("x://r", None, "x")]),
            (_, EvKind::Prompt) => e.answer_prompt(t, &PromptOutput::new(&messages)),
            (_, EvKind::Completion) => e.answer_completion(t, &["a", "b"], Some(1), false),
        };
        self.unprocessed = false;
        match r {
            Ok(()) => {
                assert!(!wrong, "the wrong kind of answer was accepted");
                self.tickets[i].state = TicketState::Answered;
                self.host_lines.insert(before, HostLine::Response(self.tickets[i].seq));
            }
            Err(err) => {
                match err {
                    AnswerError::WrongKind => assert!(wrong, "the right kind of answer was refused"),
                    AnswerError::UnknownTicket => self.tickets[i].cancel_due = true,
                    e => panic!("answering ticket {t:?}: {e}"),
                }
                if !unprocessed {
                    assert_eq!(self.total(), before, "a refused answer wrote output");
                }
            }
        }
    }

    /// Commands on a ticket that is answered or cancelled: all refused, nothing written.
    fn answer_dead(&mut self, b: &mut Bytes<'_>, how: u8) {
        let dead: Vec<usize> =
            (0..self.tickets.len()).filter(|&i| self.tickets[i].state != TicketState::Live).collect();
        if dead.is_empty() {
            return;
        }
        let t = self.tickets[dead[b.below(dead.len())]].ticket;
        let before = self.total();
        let unprocessed = self.unprocessed;
        let e = &mut self.e;
        let r = match how % 6 {
            0 => e.answer_tool(t, &ToolOutput::new(&[])),
            1 => e.answer_resource(t, &[]),
            2 => e.answer_prompt(t, &PromptOutput::new(&[])),
            3 => e.answer_completion(t, &[], None, false),
            _ => e.answer_error(t, HostError::NotFound),
        };
        self.unprocessed = false;
        assert_eq!(r, Err(AnswerError::UnknownTicket), "a command on a dead ticket");
        assert_eq!(e.notify_progress(t, 1e9, None, None), Err(NotifyError::UnknownTicket));
        assert_eq!(e.notify_log(t, LogLevel::Emergency, None, "x"), Err(NotifyError::UnknownTicket));
        if !unprocessed {
            assert_eq!(self.total(), before, "a refused answer wrote output");
        }
    }

    /// `notify_progress` (increasing, repeated, or not finite) or `notify_log` on any
    /// ticket.
    fn notify(&mut self, b: &mut Bytes<'_>, how: u8, log: bool) {
        if self.tickets.is_empty() {
            return;
        }
        let i = b.below(self.tickets.len());
        let (t, seq, state, last) = (
            self.tickets[i].ticket,
            self.tickets[i].seq,
            self.tickets[i].state,
            self.tickets[i].last_progress,
        );
        let before = self.total();
        let (r, progress) = if log {
            let level = LogLevel::parse(LOG_LEVEL_NAMES[usize::from(how & 7)]).unwrap_or(LogLevel::Info);
            let r = if how & 8 != 0 {
                // Data that cannot be serialized: refused, nothing written.
                let bad: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into_iter().collect();
                self.e.notify_log(t, level, Some("l"), &bad)
            } else {
                self.e.notify_log(t, level, None, &serde_json::json!({ "n": how }))
            };
            (r, 0.0)
        } else {
            let p = match how % 4 {
                0 => last,
                1 => f64::INFINITY,
                _ => {
                    self.progress_value += 1.0;
                    self.progress_value
                }
            };
            (self.e.notify_progress(t, p, (how & 4 != 0).then_some(p * 2.0), Some("m")), p)
        };
        use NotifyError as N;
        match (state, r) {
            (TicketState::Answered | TicketState::Cancelled, r) => assert_eq!(r, Err(N::UnknownTicket)),
            (_, Ok(())) => {
                if log {
                    assert!(how & 8 == 0, "unserializable log data was accepted");
                    self.host_lines.insert(before, HostLine::Log);
                } else {
                    assert!(
                        self.seqs[&seq].token.is_some(),
                        "progress accepted for a request without a token"
                    );
                    assert!(progress > last && progress.is_finite());
                    self.tickets[i].last_progress = progress;
                    self.host_lines.insert(before, HostLine::Progress(seq));
                }
            }
            (_, Err(N::UnknownTicket)) => self.tickets[i].cancel_due = true,
            (_, Err(N::NoProgressToken)) => assert!(self.seqs[&seq].token.is_none()),
            (_, Err(N::NotIncreasing)) => assert!(progress <= last),
            (_, Err(N::NotFinite)) => assert!(!progress.is_finite() || (log && how & 8 != 0)),
            (_, Err(N::Filtered)) => assert!(log),
            // The client has not read what was sent: only once the bound is reached.
            (_, Err(N::Backpressure)) => assert!(self.e.pending_output().len() >= self.max_buffered),
            (_, Err(e)) => panic!("a notify error this harness does not know: {e:?}"),
        }
        if r.is_err() {
            assert_eq!(self.total(), before, "a refused notification wrote output");
        }
    }

    /// The client reads `k` bytes of output.
    fn consume(&mut self, k: usize) {
        self.observe();
        let n = k.min(self.e.pending_output().len());
        self.e.consume_output(k);
        if k > 0 {
            self.unprocessed = false;
        }
        self.consumed += n;
        self.observe();
    }

    /// Time passes (or seems to go back): stdio arms no timer.
    fn timeout(&mut self, d: u8) {
        let now = if d == 255 { Instant::ZERO } else { self.now + Duration::from_millis(u64::from(d) * 10) };
        self.now = self.now.max(now);
        self.e.handle_timeout(now);
        assert_eq!(self.e.poll_timeout(), None);
    }

    /// Reads the output written since the last look and checks each new line.
    fn observe(&mut self) {
        let pending = self.e.pending_output();
        let known = self.seen.len() - self.consumed;
        assert!(pending.len() >= known, "output shrank without being consumed");
        assert!(pending[..known] == self.seen[self.consumed..], "output already written changed");
        assert!(pending.is_empty() || pending.ends_with(b"\n"), "pending output ends inside a line");
        self.seen.extend_from_slice(&pending[known..]);
        while let Some(i) = memchr::memchr(b'\n', &self.seen[self.parsed..]) {
            let (start, end) = (self.parsed, self.parsed + i + 1);
            self.parsed = end;
            self.line(start, end);
        }
    }

    fn line(&mut self, start: usize, end: usize) {
        if self.trace {
            eprintln!("read @{start}: {}", String::from_utf8_lossy(&self.seen[start..end - 1]));
        }
        let v = check_line(&self.seen[start..end - 1]);
        let host = self.host_lines.remove(&start);
        self.lines.push_back((start, end, host.is_some()));
        if let Some(method) = v.get("method") {
            match host {
                Some(HostLine::Progress(seq)) => {
                    assert_eq!(method, "notifications/progress", "{v}");
                    let token = v["params"]["progressToken"].to_string();
                    let info = &self.seqs[&seq];
                    assert_eq!(Some(&token), info.token.as_ref(), "progress with another request's token");
                    assert!(info.responded_at.is_none(), "progress after the response: {v}");
                    let tr = self.tickets.iter().find(|t| t.seq == seq);
                    assert!(
                        tr.is_none_or(|t| t.cancelled_at.is_none_or(|c| start < c)),
                        "progress after a cancellation"
                    );
                }
                Some(HostLine::Log) => assert_eq!(method, "notifications/message", "{v}"),
                _ => panic!("a notification the host did not send: {v}"),
            }
            return;
        }
        let Some(id) = v.get("id") else {
            assert!(host.is_none(), "the host's answer has no id: {v}");
            return;
        };
        if host.is_none() && v["error"]["message"].as_str().is_some_and(|m| m.contains("frame longer than")) {
            // A frame past the cap (junk, or a request the model expects no reply to: its
            // `Expect` is `TooLong`), answered with the id it opened with.
            return;
        }
        let key = id.to_string();
        match self.ids.get_mut(&key) {
            Some(c) => {
                c.responses += 1;
                assert!(c.responses <= c.delivered, "id {key} answered more often than sent: {v}");
            }
            None => assert!(
                id.as_str().is_some_and(|s| !s.starts_with('~')),
                "a response to an id the engine never took, or to a frame it must not answer: {v}"
            ),
        }
        match host {
            Some(HostLine::Response(seq)) => {
                let info = self.seqs.get_mut(&seq).unwrap_or_else(|| unreachable!("a tracked request"));
                assert_eq!(
                    Some(&key),
                    info.id.as_ref().map(|(k, _)| k),
                    "the host's answer went to another id"
                );
                info.responded_at = Some(start);
            }
            Some(other) => panic!("{other:?} is a response: {v}"),
            None => {}
        }
        // A request the harness saw cancelled gets no response (unless its id was reused).
        if self.ids.get(&key).is_some_and(|c| c.delivered == 1) {
            for t in &self.tickets {
                let same = self.seqs.get(&t.seq).and_then(|s| s.id.as_ref()).is_some_and(|(k, _)| *k == key);
                assert!(
                    !(same && t.state == TicketState::Cancelled),
                    "a response to a cancelled request: {v}"
                );
            }
        }
    }

    /// After every operation: output checked; buffered output bounded; slots bounded.
    fn check(&mut self) {
        self.observe();
        while self.lines.front().is_some_and(|&(_, end, _)| end <= self.consumed) {
            self.lines.pop_front();
        }
        let engine_bytes: usize = self
            .lines
            .iter()
            .filter(|(_, _, host)| !host)
            .map(|&(start, end, _)| end - start.max(self.consumed))
            .sum();
        // One frame's answer echoes at most two strings of the frame, escaped (6 bytes a
        // character at worst), plus a list page.
        let one_frame = 12 * self.frame_limit + 4096;
        assert!(
            engine_bytes <= self.max_buffered + one_frame,
            "{engine_bytes} bytes of output buffered (the limit is {})",
            self.max_buffered
        );
        assert!(self.e.in_flight() <= self.max_in_flight);
    }

    /// The rest of the session: the client sends what is left and closes; the host answers
    /// everything; the client reads everything. Then the stream must be finished, every
    /// ticket answered or cancelled, every request answered exactly once unless cancelled.
    fn finish(&mut self, b: &mut Bytes<'_>) {
        let mut idle = 0;
        for round in 0.. {
            assert!(round < 100_000, "the session never ends");
            let before = (self.taken, self.total(), self.tickets.len(), self.eof);
            self.poll(b, true, true);
            for i in 0..self.tickets.len() {
                if self.tickets[i].state == TicketState::Live {
                    self.answer_one(i, 0);
                }
            }
            self.poll(b, true, true);
            self.feed(usize::MAX);
            if self.backlog.is_empty() {
                self.eof();
            }
            self.consume(usize::MAX);
            self.check();
            if self.eof && self.e.pending_output().is_empty() && self.e.in_flight() == 0 {
                self.poll(b, true, true);
                if self.e.pending_output().is_empty() && self.e.in_flight() == 0 {
                    break;
                }
            }
            let after = (self.taken, self.total(), self.tickets.len(), self.eof);
            idle = if before == after { idle + 1 } else { 0 };
            assert!(idle < 3, "stalled: {} bytes unsent, engine {:?}", self.backlog.len(), self.e);
        }
        assert!(self.e.is_finished(), "the stream is not finished: {:?}", self.e);
        for t in &self.tickets {
            assert_ne!(t.state, TicketState::Live);
            assert!(
                !t.cancel_due || t.state == TicketState::Cancelled,
                "a refused ticket was never cancelled"
            );
        }
        assert!(self.host_lines.is_empty(), "host lines never seen: {:?}", self.host_lines);
        for (key, c) in &self.ids {
            assert_eq!(c.responses + c.cancelled, c.delivered, "request {key}: {c:?}");
        }
    }
}

/// A stdio session as a sequence of operations.
///
/// Input: two settings bytes (1-4 ticket slots, 1 byte to 1 MiB of output buffered, the
/// frame and depth limits, logging, completions, page size), then operations, each an op
/// byte (low nibble: the operation; high nibble: a choice) and its arguments:
/// - 0-2: the client sends a generated request (`message`, preferring the methods that
///   reach the host; a fresh id of any type, sometimes none or an invalid one; maybe a
///   progress token), and maybe feeds it at once;
/// - 3: a request reusing an earlier request's id;
/// - 4: `notifications/cancelled` for a live request, an answered one, or an unknown id;
/// - 5: garbage: bytes without digits (no valid request, no tracked id), a cut request, a
///   blank or over-long line;
/// - 6: the engine is offered some or all of the bytes the client sent;
/// - 7: poll one event or all; the host answers at once, fails, reports progress, logs,
///   or keeps the ticket;
/// - 8: answer a kept ticket later (the right kind, an error, the wrong kind);
/// - 9: answer, notify on a ticket already answered or cancelled;
/// - 10, 11: `notify_progress` (increasing, repeated, infinite) / `notify_log` (any level,
///   unserializable data) on any ticket;
/// - 12: the client reads some or all output;
/// - 13: time passes (or a clock goes back);
/// - 14: the client closes its side (choice 0) or sends a request;
/// - 15: `initialize` and `notifications/initialized` (choice 0) or a request.
///
/// Then the session ends: what is left is sent, the host answers everything, the client
/// reads everything.
///
/// Asserts: no panic; every output line is a JSON-RPC object (`check_line`); output once
/// written never changes and always ends a line; a response's id is one the engine took
/// (never a request it must not answer), and no id is answered more often than it was
/// sent; the host's answer is the response to its request's id; progress carries the
/// request's token, never after its response or a cancellation the host saw; no response
/// to a cancelled request; a cancellation is only of a live ticket; an event is for a
/// request whose method calls for it, once; every command on an answered or cancelled
/// ticket is refused, and a refused command writes nothing; `handle_input` takes less
/// than offered only when its buffer is full, nothing after the end; buffered output
/// written for frames stays under `max_buffered_output` plus one frame's answer; tickets
/// in flight stay within the slots and, once every event is polled, match the live
/// tickets; at the end the stream is finished, and every request the engine took with a
/// valid id was answered exactly once or cancelled.
pub fn op_sequence(data: &[u8]) {
    let mut b = Bytes::new(data);
    let (a, c) = (b.u8(), b.u8());
    let mut h = OpHarness::new(a, c);
    for _ in 0..MAX_OPS {
        if b.is_empty() {
            break;
        }
        let op = b.u8();
        let arg = op >> 4;
        if h.trace {
            eprintln!("op {} ({arg})", op & 15);
        }
        match op & 15 {
            0..=2 => {
                h.request(&mut b, None);
                if arg & 1 != 0 {
                    h.feed(usize::MAX);
                }
            }
            3 => h.duplicate(&mut b),
            4 => {
                h.cancel(&mut b, arg);
                if arg & 8 != 0 {
                    h.feed(usize::MAX);
                }
            }
            5 => h.garbage(&mut b),
            6 => {
                let k = if arg & 1 != 0 { usize::MAX } else { usize::from(b.u16()) % 700 };
                h.feed(k);
            }
            7 => h.poll(&mut b, arg & 1 != 0, false),
            8 => h.answer(&mut b, arg),
            9 => h.answer_dead(&mut b, arg),
            10 => h.notify(&mut b, arg, false),
            11 => h.notify(&mut b, arg, true),
            12 => {
                let k = if arg & 1 != 0 { usize::MAX } else { usize::from(b.u16()) % 2000 };
                h.consume(k);
            }
            13 => h.timeout(b.u8()),
            14 if arg == 0 => h.eof(),
            15 if arg == 0 => h.initialize(&mut b),
            _ => h.request(&mut b, None),
        }
        h.check();
    }
    h.finish(&mut b);
}
