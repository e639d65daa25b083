//! session_streams: the session-bound paths (`2025-11-25`, `2025-06-18`) on stdio and
//! Streamable HTTP, which the other targets do not reach (a session id is sealed: bytes a
//! fuzzer makes up never name a session).
//!
//! The first byte picks the half (even: stdio, odd: HTTP) and its settings (ticket slots,
//! input timeout; over HTTP the session cap and idle timeout, replay buffer size, SSE
//! keep-alives). Then operations, each an op byte and its arguments, drawn from the rest.
//!
//! **stdio** ([`Engine`](mcp_engine::Engine)): one client opens a session declaring a
//! fuzzed subset of `sampling`, `elicitation`, `roots`; then: `tools/call`, `prompts/get`,
//! `resources/read` (and requests the engine answers itself) with fresh ids and maybe a
//! progress token; the client's responses to the server's requests (to the latest ids or
//! made-up ones; a fitting result, one that does not fit, not an object, the client's
//! error, an error that is not an object; a string id, both `result` and `error`, no or
//! another `jsonrpc`, a repeated member: these answer nothing); `notifications/cancelled`;
//! garbage; bytes fed in pieces; output read in pieces; time passing (`handle_timeout`);
//! the end of input. The host acts on every event (answer, error, `answer_input_required`
//! with a fuzzed set of kinds, repeated or empty keys, host state; progress; keep) and
//! later on tickets it kept, or that are over; it also asks the client outside any
//! request (`ask_client`, a fuzzed kind): refused exactly when the input ended, the
//! client did not declare the kind or every ask slot waits; else sent with the next id,
//! its reply heard once, as the first response the engine took for it became, or the
//! timeout (only past its deadline) or `-32000` (only after the end of input), and none
//! outlives its deadline or the stream.
//!
//! **HTTP** ([`HttpEngine`](mcp_engine::http::HttpEngine)), over up to five connections:
//! `initialize` (fuzzed capabilities and revision) and `notifications/initialized`; calls
//! in a session, another one, none, a forged one, some over HTTP/1.0, some with
//! `MCP-Protocol-Version`; the client's responses (as above) posted in the session of the
//! request they answer, another session or none; `GET` with fuzzed headers (`Accept`,
//! `MCP-Protocol-Version`, HTTP/1.0, no or a forged session) and `Last-Event-ID` (event
//! ids the engine wrote, of this session or another, padded, altered, made up, two of
//! them); `DELETE`; `notifications/cancelled`; connections closed (a request's stream is
//! then parked); time passing; catalog replacements (list changes on standalone
//! streams); the host's answers, input requests, progress and `reconnect_later`. In store
//! mode (the small replay buffer with keep-alives: a quarter of the settings) the host
//! keeps sessions and their streams' events too (`session_store`, `event_store`):
//! sessions leave memory at the cap and come back from the store, and resumptions the
//! buffer no longer covers are answered from the stored events; checked: each stream's
//! events are handed over numbered one after the other and none after its last, a
//! session given back at a full table is `503`, and a request's stream resumed from the
//! store may end with `retry:` (its answer not stored yet) where memory would end it.
//!
//! Asserted, beyond no panic:
//! - every ticket handed out is answered or cancelled exactly once; a cancellation is of a
//!   live ticket and has a cause (stdio: the client's `notifications/cancelled`; HTTP: its
//!   connection closed, its session ended, the client's cancellation); at the end, with
//!   everything answered or every connection closed and every session deleted, nothing is
//!   in flight (`in_flight()` matches the live tickets after every step);
//! - `answer_input_required` does what the revision, the client's capabilities, the keys
//!   and the end of the stream call for; the requests sent are exactly the kinds the
//!   client declared, with ids counting up, on the stream of the request they belong to;
//! - a request comes back to the host only when every request of its round is answered,
//!   timed out or gone, with exactly the round's keys and the host's state; under each key
//!   is what the first response the engine took for it became (over HTTP, posted in the
//!   request's session), else the timeout (only past the deadline, and not after a
//!   response was taken) or `-32000` (only once the stream or session ended); a round
//!   never outlives its deadline, and `poll_timeout` is its deadline (stdio: exactly);
//! - stdio: every output line is JSON-RPC; the host's answer is the response to its
//!   request's id, once; no response to a cancelled request; every request the engine
//!   took is answered once unless cancelled; the stream finishes;
//! - HTTP: every response head parses with `httparse` as HTTP/1.1, with its framing; no
//!   output on a connection after a response that closes it or after it ended, and no
//!   response without a request; `wants_close` exactly when a response closes (or a
//!   standalone stream ends with its session); the status each request calls for when the
//!   harness is sure of the session's state (`initialize` 200 with a 44-character id or 503
//!   at the cap, 202/404 for notifications and responses, 200/404/400 for `DELETE`,
//!   200/400/404/405/406/409 for `GET`); every event of a live session's stream has an id,
//!   the same id always names the same data, a `2025-11-25` stream opens with its priming
//!   event; a resumption replays the events after the one named, in order, every one the
//!   harness saw before asking unless the engine says `: gap`, then goes on live (a parked
//!   request's stream, the standalone stream) or ends; a standalone stream ends only with
//!   its session, a request's stream only with its answer or a `retry:` the host asked
//!   for; the host's answer reaches the stream that is on a connection; each catalog
//!   change reaches each open standalone stream of an initialized session once.
//!
//! It found seven engine bugs, fixed since, each with a regression test:
//! - when it was written (commit 25a5128; `tests/tests/http_sessions.rs`,
//!   `server_requests.rs`): a client's response (and a `GET`, a `DELETE`) waited for a
//!   free ticket slot, over HTTP and behind a waiting request on stdio; a request whose
//!   session had been deleted was parked, never cancelled, when its connection closed; the
//!   same when the host let its stream go (`reconnect_later`), found once the first three
//!   were fixed; a request whose connection closed before the host polled its event was
//!   announced `Cancelled` and then handed out as work;
//! - on stdio (a854d5b; `server_requests.rs`
//!   `a_response_behind_many_cancellations_of_waiting_requests_is_still_taken`): past the
//!   eight cancellations of waiting requests the engine remembers, the scan behind a
//!   waiting request stopped, so a client's response further on waited until its input
//!   timed out;
//! - in store mode (769ffeb; `tests/tests/session_store.rs`
//!   `a_session_loaded_for_a_waiting_request_stays_until_the_request_is_served`): a
//!   session loaded from the store for a request that then waited for a ticket slot left
//!   memory again at the cap before the request was served, which got `404`; then (the
//!   commit after 5888b62; `session_store.rs`
//!   `a_session_two_requests_loaded_stays_until_the_second_is_served`) the same for the
//!   second of two requests whose loads of the session were under way at once: the
//!   second load found the session back already and did not hold it.
//!
//! `MCP_FUZZ_TRACE=1` prints what is sent, read and polled; `MCP_FUZZ_STATS=1`
//! prints how often each path was reached (totals after every input: run a corpus with
//! `-runs=0` and read the last line).

mod http;
mod model;
mod stdio;

/// Runs the stdio half (first byte even) or the HTTP half (odd).
pub fn session_streams(data: &[u8]) {
    if data.len() > crate::common::MAX_HTTP_INPUT {
        return;
    }
    let Some((&cfg, rest)) = data.split_first() else { return };
    if cfg & 1 == 0 {
        stdio::run(cfg >> 1, rest);
    } else {
        http::run(cfg >> 1, rest);
    }
    stat("");
}

/// `MCP_FUZZ_STATS` is set: counts of what the harness reached, printed (totals so far)
/// after every input, to see what a corpus covers.
fn stat(name: &'static str) {
    static STATS: std::sync::OnceLock<
        Option<std::sync::Mutex<std::collections::BTreeMap<&'static str, u64>>>,
    > = std::sync::OnceLock::new();
    let stats = STATS.get_or_init(|| std::env::var_os("MCP_FUZZ_STATS").map(|_| Default::default()));
    if let Some(m) = stats {
        let mut m = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if name.is_empty() {
            eprintln!("stats: {m:?}");
        } else {
            *m.entry(name).or_default() += 1;
        }
    }
}
