//! Input asked of a session-bound client (`2025-11-25`, `2025-06-18`): the host answers
//! with `InputRequired` exactly as under `2026-07-28`; the engine sends server-to-client
//! requests on the request's stream, collects the responses and hands the request back
//! to the host as the same event. Over stdio and Streamable HTTP.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_engine::http::{AllowedOrigins, Authorization, ConnId, HttpConfig};
use mcp_engine::mrtr::{InputRequest, InputRequired};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, Prompt, PromptArgument, PromptMessage, PromptOutput,
    ResourceContents, ResourceTemplate, Ticket, Tool, ToolOutput,
};
use mcp_fixture as everything;
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::wire::{Client, client_of, post};
use mcp_tests::{drive, lines, notification, request};
use serde_json::{Value, json};

/// What the test host saw when a request came back to it.
#[derive(Debug, Default, Clone)]
struct Seen {
    arguments: String,
    responses: Vec<(String, String)>,
    errors: Vec<(String, i64, String)>,
    state: Option<Vec<u8>>,
    rounds: usize,
}

const SAMPLE: &str =
    r#"{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":10}"#;
const FORM: &str = r#"{"type":"object","properties":{"name":{"type":"string"}}}"#;

fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("ask"))
        .prompt(Prompt::new("p").argument(PromptArgument::new("a")))
        .template(ResourceTemplate::new("x://r/{id}", "r"))
        .build()
        .unwrap()
}

fn config() -> Config {
    let mut c = Config::new("s", "1");
    c.input_timeout(Duration::from_secs(30));
    c
}

/// A host that asks for `keys` (of "sample", "form", "roots") with state `s1` the first
/// time a request comes, and answers with a text the second time, recording what came back.
fn host(keys: &'static [&'static str], seen: Rc<RefCell<Seen>>) -> impl FnMut(Event<'_>) {
    let sample = serde_json::value::RawValue::from_string(SAMPLE.into()).unwrap();
    let form = serde_json::value::RawValue::from_string(FORM.into()).unwrap();
    move |ev: Event<'_>| {
        let asks: Vec<InputRequest<'_>> = keys
            .iter()
            .map(|k| match *k {
                "sample" => InputRequest::raw("sample", mcp_engine::mrtr::InputKind::Sampling, &sample),
                "form" => InputRequest::elicit("form", "Your name?", &form),
                _ => InputRequest::list_roots("roots"),
            })
            .collect();
        let ir = InputRequired::new(&asks).state(b"s1");
        let record = |args: &str, r: mcp_engine::mrtr::InputResponses<'_>, state: Option<&[u8]>| {
            let mut s = seen.borrow_mut();
            s.rounds += 1;
            s.arguments = args.to_owned();
            s.responses = r.iter().map(|(k, v)| (k.to_owned(), v.raw().to_owned())).collect();
            s.errors = r.errors().map(|(k, e)| (k.to_owned(), e.code(), e.message().into_owned())).collect();
            s.state = state.map(<[u8]>::to_vec);
            r.is_empty()
        };
        match ev {
            Event::CallTool(call) => {
                if record(call.arguments.raw(), call.input_responses, call.request_state) {
                    call.input_required(&ir).unwrap();
                } else {
                    call.answer(&ToolOutput::new(&[Content::text("done")])).unwrap();
                }
            }
            Event::GetPrompt(get) => {
                if record(get.arguments.raw(), get.input_responses, get.request_state) {
                    get.input_required(&ir).unwrap();
                } else {
                    get.answer(&PromptOutput::new(&[PromptMessage::user(Content::text("done"))])).unwrap();
                }
            }
            Event::ReadResource(read) => {
                let id = read.variables.get("id").unwrap_or_default().to_owned();
                if record(&id, read.input_responses, read.request_state) {
                    read.input_required(&ir).unwrap();
                } else {
                    let uri = read.uri;
                    read.answer(&[ResourceContents::text(uri, None, "done")]).unwrap();
                }
            }
            _ => {}
        }
    }
}

fn init(caps: Value) -> String {
    let mut s = request(
        0,
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": { "name": "t", "version": "1" } }),
    );
    s.push_str(&notification("notifications/initialized", json!({})));
    s
}

fn result(id: u64, value: Value) -> String {
    format!("{}\n", json!({ "jsonrpc": "2.0", "id": id, "result": value }))
}

fn error(id: u64, code: i64, message: &str) -> String {
    format!("{}\n", json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }))
}

/// An engine with a session open under `caps`, driven by `host`.
struct Stdio {
    e: Engine,
    host: Box<dyn FnMut(Event<'_>)>,
    now: Instant,
}

impl Stdio {
    fn new(caps: Value, host: impl FnMut(Event<'_>) + 'static) -> Self {
        Self::with(config(), caps, host)
    }

    fn with(config: Config, caps: Value, host: impl FnMut(Event<'_>) + 'static) -> Self {
        let mut s = Self { e: Engine::new(config, catalog()), host: Box::new(host), now: Instant::ZERO };
        let out = s.send(&init(caps));
        assert_eq!(out.len(), 1, "{out:?}");
        s
    }

    fn send(&mut self, input: &str) -> Vec<Value> {
        mcp_tests::send_with(&mut self.e, self.now, &mut *self.host, input)
    }

    fn pump(&mut self) -> Vec<Value> {
        self.send("")
    }
}

fn sampled() -> Value {
    json!({ "role": "assistant", "content": { "type": "text", "text": "4" }, "model": "m" })
}

#[test]
fn input_goes_out_as_requests_and_the_call_comes_back_with_every_response() {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let caps = json!({ "sampling": {}, "elicitation": {}, "roots": {} });
    let mut s = Stdio::new(caps, host(&["sample", "form", "roots"], seen.clone()));
    let out = s.send(&request("c1", "tools/call", json!({ "name": "ask", "arguments": { "x": 1 } })));
    // Three requests, numbered by the engine, on the request's own stream; no answer yet.
    assert_eq!(out.len(), 3, "{out:?}");
    let methods: Vec<_> = out.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["sampling/createMessage", "elicitation/create", "roots/list"]);
    let ids: Vec<u64> = out.iter().map(|m| m["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3]);
    assert_eq!(out[0]["params"]["maxTokens"], 10);
    assert_eq!(out[1]["params"]["message"], "Your name?");
    assert_eq!(out[1]["params"]["requestedSchema"]["properties"]["name"]["type"], "string");
    assert_eq!(s.e.in_flight(), 1);
    assert_eq!(seen.borrow().rounds, 1);

    // Answered in any order; the call comes back only once every request is answered.
    assert!(s.send(&result(3, json!({ "roots": [{ "uri": "file:///r" }] }))).is_empty());
    assert!(s.send(&error(2, -1, "User rejected")).is_empty());
    assert_eq!(seen.borrow().rounds, 1, "back before every request was answered");
    let out = s.send(&result(1, sampled()));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], "c1");
    assert_eq!(out[0]["result"]["content"][0]["text"], "done");
    assert_eq!(s.e.in_flight(), 0);

    let seen = seen.borrow();
    assert_eq!(seen.rounds, 2);
    assert_eq!(seen.arguments, r#"{"x":1}"#, "the arguments come back as sent");
    assert_eq!(seen.state.as_deref(), Some(&b"s1"[..]), "the host's state comes back");
    let keys: Vec<_> = seen.responses.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["roots", "sample"]);
    let sample: Value = serde_json::from_str(&seen.responses[1].1).unwrap();
    assert_eq!(sample, sampled());
    assert_eq!(seen.errors, [("form".to_owned(), -1, "User rejected".to_owned())]);
}

#[test]
fn only_what_the_client_declared_is_asked() {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let mut s = Stdio::new(json!({ "sampling": {} }), host(&["sample", "roots"], seen.clone()));
    let out = s.send(&request(7, "tools/call", json!({ "name": "ask" })));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["method"], "sampling/createMessage");
    let out = s.send(&result(1, sampled()));
    assert_eq!(out[0]["result"]["content"][0]["text"], "done", "{out:?}");
    assert!(seen.borrow().errors.is_empty(), "a request never sent is not an error");
    assert_eq!(seen.borrow().responses.len(), 1);
}

#[test]
fn an_unanswered_request_times_out_and_the_call_comes_back() {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let mut s = Stdio::new(json!({ "roots": {} }), host(&["roots"], seen.clone()));
    assert_eq!(s.e.poll_timeout(), None, "no timer while nothing waits");
    let out = s.send(&request(1, "tools/call", json!({ "name": "ask" })));
    assert_eq!(out[0]["method"], "roots/list");
    let deadline = s.e.poll_timeout().expect("a deadline while the client is asked");
    assert_eq!(deadline, Instant::ZERO + Duration::from_secs(30));
    s.e.handle_timeout(Instant::from_micros(deadline.as_micros() - 1));
    assert!(s.pump().is_empty());
    s.e.handle_timeout(deadline);
    let out = s.pump();
    assert_eq!(out[0]["result"]["content"][0]["text"], "done", "{out:?}");
    assert_eq!(seen.borrow().errors[0].0, "roots");
    assert_eq!(seen.borrow().errors[0].1, -32001);
    assert_eq!(s.e.poll_timeout(), None);
    // A late response is ignored.
    assert!(s.send(&result(1, json!({ "roots": [] }))).is_empty());
}

#[test]
fn the_end_of_the_stream_fails_what_was_asked_and_refuses_asking_again() {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let mut s = Stdio::new(json!({ "roots": {} }), host(&["roots"], seen.clone()));
    let input = format!(
        "{}{}",
        request(1, "tools/call", json!({ "name": "ask" })),
        request(2, "prompts/get", json!({ "name": "p" }))
    );
    let out = s.send(&input);
    assert_eq!(out.len(), 2, "{out:?}");
    s.e.handle_eof(s.now);
    let out = s.pump();
    // Both come back with -32000 and are answered; the stream then finishes.
    let ids: Vec<_> = out.iter().map(|m| m["id"].clone()).collect();
    assert_eq!(ids, [json!(1), json!(2)], "{out:?}");
    assert_eq!(seen.borrow().errors[0].1, -32000);
    assert!(s.e.is_finished());

    // Asked after the end, the client cannot be: the answer is refused and the ticket
    // stays open for another one.
    let tickets = Rc::new(RefCell::new(Vec::new()));
    let t2 = tickets.clone();
    let mut s = Stdio::new(json!({ "roots": {} }), move |ev: Event<'_>| t2.borrow_mut().push(ev.ticket()));
    s.send(&request(1, "tools/call", json!({ "name": "ask" })));
    s.e.handle_eof(s.now);
    let t = tickets.borrow()[0];
    let roots = [InputRequest::list_roots("roots")];
    assert_eq!(
        s.e.answer_input_required(t, &InputRequired::new(&roots)),
        Err(mcp_engine::error::AnswerError::ClientGone)
    );
    assert!(s.pump().is_empty());
    s.e.answer_tool(t, &ToolOutput::new(&[Content::text("without")])).unwrap();
    assert_eq!(s.pump()[0]["result"]["content"][0]["text"], "without");
    assert!(s.e.is_finished());
}

#[test]
fn responses_that_answer_nothing_are_ignored_and_a_misfit_is_an_error() {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let mut s = Stdio::new(json!({ "sampling": {}, "roots": {} }), host(&["sample", "roots"], seen.clone()));
    s.send(&request(1, "tools/call", json!({ "name": "ask" })));
    // Unknown ids, string ids, a response with both members.
    for r in [
        result(99, sampled()),
        format!("{}\n", json!({ "jsonrpc": "2.0", "id": "1", "result": sampled() })),
        format!("{}\n", json!({ "jsonrpc": "2.0", "id": 1, "result": sampled(), "error": {"code": 1} })),
    ] {
        assert!(s.send(&r).is_empty(), "{r}");
    }
    assert_eq!(seen.borrow().rounds, 1);
    // A sampling result without `model` does not fit its request: an error under its key.
    assert!(
        s.send(&result(1, json!({ "role": "assistant", "content": { "type": "text", "text": "4" } })))
            .is_empty()
    );
    // A second response to the same id counts for nothing.
    assert!(s.send(&result(1, sampled())).is_empty());
    let out = s.send(&result(2, json!({ "roots": [] })));
    assert_eq!(out[0]["result"]["content"][0]["text"], "done", "{out:?}");
    let seen = seen.borrow();
    assert_eq!(seen.errors.len(), 1, "{seen:?}");
    assert_eq!((seen.errors[0].0.as_str(), seen.errors[0].1), ("sample", -32602));
    assert!(seen.errors[0].2.contains("sampling/createMessage"), "{seen:?}");
}

#[test]
fn a_cancelled_call_is_not_brought_back() {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let cancelled = Rc::new(RefCell::new(Vec::<Ticket>::new()));
    let mut inner = host(&["roots"], seen.clone());
    let c2 = cancelled.clone();
    let mut s = Stdio::new(json!({ "roots": {} }), move |ev: Event<'_>| match ev {
        Event::Cancelled(t) => c2.borrow_mut().push(t),
        ev => inner(ev),
    });
    s.send(&request(5, "tools/call", json!({ "name": "ask" })));
    s.send(&notification("notifications/cancelled", json!({ "requestId": 5 })));
    assert_eq!(cancelled.borrow().len(), 1);
    assert!(s.send(&result(1, json!({ "roots": [] }))).is_empty());
    assert_eq!(seen.borrow().rounds, 1);
    assert_eq!(s.e.in_flight(), 0);
    assert_eq!(s.e.poll_timeout(), None);
}

#[test]
fn prompts_and_template_reads_come_back_too() {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let mut s = Stdio::new(json!({ "roots": {} }), host(&["roots"], seen.clone()));
    s.send(&request(1, "prompts/get", json!({ "name": "p", "arguments": { "a": "b" } })));
    let out = s.send(&result(1, json!({ "roots": [] })));
    assert_eq!(out[0]["result"]["messages"][0]["content"]["text"], "done", "{out:?}");
    assert_eq!(seen.borrow().arguments, r#"{"a":"b"}"#);
    s.send(&request(2, "resources/read", json!({ "uri": "x://r/42" })));
    let out = s.send(&result(2, json!({ "roots": [] })));
    assert_eq!(out[0]["result"]["contents"][0]["uri"], "x://r/42", "{out:?}");
    assert_eq!(seen.borrow().arguments, "42", "the template variables are matched again");
}

/// The fixture's two-round tool over a 2025-11-25 session, as one input: whole, byte by
/// byte and split anywhere, the output is the same.
#[test]
fn several_rounds_give_the_same_output_however_the_input_is_split() {
    let mut input = init(json!({ "elicitation": {} }));
    input.push_str(&request(10, "tools/call", json!({ "name": "test_input_required_result_multi_round" })));
    input.push_str(&result(1, json!({ "action": "accept", "content": { "name": "Ann" } })));
    input.push_str(&result(2, json!({ "action": "accept", "content": { "color": "red" } })));
    let run = |chunks: &[usize]| {
        let mut e = Engine::new(everything::config(), everything::catalog());
        drive(&mut e, input.as_bytes(), chunks)
    };
    let whole = run(&[usize::MAX]);
    let out = lines(&whole);
    assert_eq!(out.len(), 4, "{out:?}");
    assert_eq!(out[1]["method"], "elicitation/create");
    assert_eq!(out[2]["params"]["message"], "Step 2: What is your favorite color?");
    assert_eq!(out[3]["id"], 10);
    assert_eq!(out[3]["result"]["content"][0]["text"], "Ann likes red.", "{out:?}");
    assert_eq!(run(&[1]), whole);
    for split in [3, 7, 64, 333] {
        assert_eq!(run(&[split, 1, 5]), whole, "split {split}");
    }
}

// ------------------------------------------------------------------ Streamable HTTP

fn http_client() -> Client {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let mut c = client_of(everything::config(), http, everything::catalog(), Box::new(everything::respond));
    c.e.set_entropy(&[9; 32]);
    c
}

fn session_post(body: &Value, session: Option<&str>) -> Vec<u8> {
    let mut extra = vec![("Mcp-Method", ""), ("Mcp-Name", ""), ("MCP-Protocol-Version", "2025-11-25")];
    if let Some(id) = session {
        extra.push(("Mcp-Session-Id", id));
    }
    post(body, &extra)
}

/// Sends `raw` on `conn` and returns what `conn` wrote.
fn on(c: &mut Client, conn: ConnId, raw: &[u8]) -> String {
    let keep = c.conn;
    c.conn = conn;
    let out = c.feed(raw, usize::MAX);
    c.conn = keep;
    String::from_utf8(out).unwrap()
}

/// What `conn` wrote since last asked.
fn more(c: &mut Client, conn: ConnId) -> String {
    let keep = c.conn;
    c.conn = conn;
    let mut out = Vec::new();
    c.drain(&mut out);
    c.conn = keep;
    String::from_utf8(out).unwrap()
}

/// The JSON of every SSE `data:` line.
fn events(raw: &str) -> Vec<Value> {
    // The priming event (an id, no data) opens a 2025-11-25 stream.
    raw.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn http_open(c: &mut Client, caps: Value) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": { "name": "t", "version": "1" } } });
    let conn = c.e.open(c.now, None).unwrap();
    let raw = on(c, conn, &session_post(&init, None));
    let id = raw.lines().find_map(|l| l.strip_prefix("mcp-session-id: ")).unwrap_or_else(|| panic!("{raw}"));
    id.trim().to_owned()
}

#[test]
fn over_http_the_request_goes_on_the_calls_stream_and_the_response_comes_as_a_post() {
    let mut c = http_client();
    let sid = http_open(&mut c, json!({ "sampling": {} }));
    let other = http_open(&mut c, json!({ "sampling": {} }));
    let call = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": { "name": "test_sampling", "arguments": { "prompt": "Capital of France?" } } });
    let a = c.e.open(c.now, None).unwrap();
    let raw = on(&mut c, a, &session_post(&call, Some(&sid)));
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.to_ascii_lowercase().contains("content-type: text/event-stream"), "{raw}");
    let sent = events(&raw);
    assert_eq!(sent.len(), 1, "{raw}");
    assert_eq!(sent[0]["method"], "sampling/createMessage");
    assert_eq!(sent[0]["params"]["messages"][0]["content"]["text"], "Capital of France?");
    let id = sent[0]["id"].as_u64().unwrap();

    let response = json!({ "jsonrpc": "2.0", "id": id,
        "result": { "role": "assistant", "content": { "type": "text", "text": "Paris" }, "model": "m" } });
    // Posted in another session, the response answers nothing there.
    let b = c.e.open(c.now, None).unwrap();
    let raw = on(&mut c, b, &session_post(&response, Some(&other)));
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
    assert!(more(&mut c, a).is_empty(), "the call moved on a foreign response");
    // In its own session it is taken (202) and the call finishes on its stream.
    let raw = on(&mut c, b, &session_post(&response, Some(&sid)));
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
    let done = events(&more(&mut c, a));
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0]["id"], 5);
    assert_eq!(done[0]["result"]["content"][0]["text"], "LLM response: Paris");
    assert_eq!(c.e.in_flight(), 0);
}

#[test]
fn over_http_deleting_the_session_fails_what_its_client_was_asked() {
    let mut c = http_client();
    let sid = http_open(&mut c, json!({ "elicitation": {} }));
    let call = json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": { "name": "test_elicitation", "arguments": { "message": "Name?" } } });
    let a = c.e.open(c.now, None).unwrap();
    let raw = on(&mut c, a, &session_post(&call, Some(&sid)));
    assert_eq!(events(&raw)[0]["method"], "elicitation/create", "{raw}");
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: localhost:3000\r\nMcp-Session-Id: {sid}\r\n\r\n");
    let b = c.e.open(c.now, None).unwrap();
    assert!(on(&mut c, b, delete.as_bytes()).starts_with("HTTP/1.1 200"));
    let done = events(&more(&mut c, a));
    assert_eq!(done[0]["id"], 6, "{done:?}");
    let text = done[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Elicitation not supported or error: Connection closed"), "{text}");
}

#[test]
fn a_response_behind_a_request_waiting_for_a_slot_is_taken_at_once() {
    let mut config = config();
    config.max_in_flight(1);
    let input = || {
        let seen = Rc::new(RefCell::new(Seen::default()));
        let mut s = Stdio::with(config.clone(), json!({ "roots": {} }), host(&["roots"], seen));
        let out = s.send(&request(1, "prompts/get", json!({ "name": "p", "arguments": { "a": "x" } })));
        assert_eq!(out[0]["method"], "roots/list", "{out:?}");
        (s, out[0]["id"].as_u64().unwrap())
    };
    let (mut s, asked) = input();
    // The call behind waits for the only slot, which the prompt holds until its client
    // answers: the answer is read past the waiting call.
    let behind = format!(
        "{}{}",
        request(2, "tools/call", json!({ "name": "ask" })),
        result(asked, json!({ "roots": [] }))
    );
    let out = s.send(&behind);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0]["id"], 1);
    assert_eq!(out[0]["result"]["messages"][0]["content"]["text"], "done", "{out:?}");
    assert_eq!(out[1]["method"], "roots/list", "then the call asks in turn: {out:?}");
    // The same, byte by byte.
    let (mut s, _) = input();
    let mut split = Vec::new();
    for b in behind.as_bytes() {
        split.extend(s.send(core::str::from_utf8(&[*b]).unwrap_or_default()));
    }
    assert_eq!(split, out);
}

#[test]
fn a_response_behind_many_cancellations_of_waiting_requests_is_still_taken() {
    let mut config = config();
    config.max_in_flight(1);
    let seen = Rc::new(RefCell::new(Seen::default()));
    let mut s = Stdio::with(config, json!({ "roots": {} }), host(&["roots"], seen));
    let out = s.send(&request(1, "prompts/get", json!({ "name": "p", "arguments": { "a": "x" } })));
    let asked = out[0]["id"].as_u64().unwrap();
    // Ten calls wait for the slot, each cancelled (more cancellations than the engine
    // remembers for early service), then the client answers the prompt's question.
    let mut behind = String::new();
    for id in 2..12 {
        behind.push_str(&request(id, "tools/call", json!({ "name": "ask" })));
    }
    for id in 2..12 {
        behind.push_str(&notification("notifications/cancelled", json!({ "requestId": id })));
    }
    behind.push_str(&result(asked, json!({ "roots": [] })));
    let out = s.send(&behind);
    assert_eq!(out[0]["id"], 1, "{out:?}");
    assert_eq!(out[0]["result"]["messages"][0]["content"]["text"], "done", "{out:?}");
}

/// A host that asks for input in url mode (`elicitation/create` with `mode: "url"`), then
/// answers with what came back.
fn url_host() -> Box<dyn FnMut(Event<'_>)> {
    Box::new(|ev| {
        if let Event::CallTool(call) = ev {
            if call.input_responses.is_empty() {
                let asks =
                    [InputRequest::elicit_url("auth", "Sign in", "https://example.com/auth?x=1", "el-42")];
                call.input_required(&InputRequired::new(&asks)).unwrap();
            } else {
                let text = match call.input_responses.get("auth") {
                    Some(r) => r.raw().to_owned(),
                    None => "no response".to_owned(),
                };
                call.answer(&ToolOutput::new(&[Content::text(&text)])).unwrap();
            }
        }
    })
}

#[test]
fn url_mode_elicitation_goes_to_a_session_client_that_declared_it() {
    let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    let mut c = client_of(config(), http, catalog(), url_host());
    c.e.set_entropy(&[9; 32]);
    let sid = http_open(&mut c, json!({ "elicitation": { "url": {} } }));
    let call = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "name": "ask" } });
    let a = c.e.open(c.now, None).unwrap();
    let raw = on(&mut c, a, &session_post(&call, Some(&sid)));
    let sent = events(&raw);
    assert_eq!(sent.len(), 1, "{raw}");
    assert_eq!(sent[0]["method"], "elicitation/create");
    assert_eq!(sent[0]["params"]["mode"], "url");
    assert_eq!(sent[0]["params"]["url"], "https://example.com/auth?x=1");
    assert_eq!(sent[0]["params"]["elicitationId"], "el-42");
    assert_valid(Rev::V2025_11_25, "ElicitRequest", &sent[0]);
    assert_valid(Rev::V2025_11_25, "ElicitRequestURLParams", &sent[0]["params"]);
    let accepted = json!({ "action": "accept" });
    assert_valid(Rev::V2025_11_25, "ElicitResult", &accepted);
    let response = json!({ "jsonrpc": "2.0", "id": sent[0]["id"], "result": accepted });
    let b = c.e.open(c.now, None).unwrap();
    assert!(on(&mut c, b, &session_post(&response, Some(&sid))).starts_with("HTTP/1.1 202"));
    let done = events(&more(&mut c, a));
    assert_eq!(done[0]["id"], 5, "{done:?}");
    assert_eq!(done[0]["result"]["content"][0]["text"], r#"{"action":"accept"}"#);
    assert_valid(Rev::V2025_11_25, "JSONRPCResponse", &done[0]);

    // A client that declared form mode only is not asked: the call is answered -32021
    // naming what it lacks.
    let sid = http_open(&mut c, json!({ "elicitation": { "form": {} } }));
    let a = c.e.open(c.now, None).unwrap();
    let raw = on(&mut c, a, &session_post(&call, Some(&sid)));
    assert!(!raw.contains("elicitation/create"), "{raw}");
    let body = raw.split("\r\n\r\n").nth(1).unwrap_or_default();
    let answer: Value = serde_json::from_str(body.trim()).unwrap_or_else(|_| panic!("{raw}"));
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(answer["error"]["data"]["requiredCapabilities"], json!({ "elicitation": { "url": {} } }));

    // Over stdio, the same.
    let mut s = Stdio::new(json!({ "elicitation": { "url": {} } }), url_host());
    let out = s.send(&request(1, "tools/call", json!({ "name": "ask" })));
    assert_eq!(out[0]["params"]["mode"], "url", "{out:?}");
    assert_valid(Rev::V2025_11_25, "ElicitRequest", &out[0]);
}
