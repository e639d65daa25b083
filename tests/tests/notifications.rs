//! Progress, log messages and cancellation races, each on both transports: what the host
//! may send for a ticket, when, and that nothing is written for a ticket once it is
//! answered or cancelled.

use mcp_engine::Commands;
use std::cell::RefCell;
use std::rc::Rc;

use mcp_engine::error::{AnswerError, NotifyError};
use mcp_engine::{Catalog, Config, Event, LogLevel, Ticket, Tool};
use mcp_tests::peer::{Peer, WIRES, Wire, meta_with};
use mcp_tests::spec::{Rev, assert_valid};
use serde_json::{Value, json};

/// A peer whose host keeps every ticket (answers come later, from the test).
fn keeping(w: Wire, config: Config) -> (Peer, Rc<RefCell<Vec<Ticket>>>) {
    let kept = Rc::new(RefCell::new(Vec::new()));
    let k = Rc::clone(&kept);
    let host = Box::new(move |ev: Event<'_>| {
        if !matches!(ev, Event::Cancelled(_)) {
            k.borrow_mut().push(ev.ticket());
        }
    });
    let catalog = Catalog::builder().tool(Tool::new("t")).build().unwrap();
    (Peer::new(w, config, catalog, host), kept)
}

fn logging() -> Config {
    let mut c = Config::new("s", "1");
    c.logging(true);
    c
}

fn with_meta(extra: Value) -> Value {
    let mut meta = meta_with(json!({}));
    for (k, v) in extra.as_object().unwrap() {
        meta[k] = v.clone();
    }
    json!({ "name": "t", "_meta": meta })
}

#[test]
fn progress_increases_and_stops_with_the_answer() {
    for w in WIRES {
        let (mut p, kept) = keeping(w, Config::new("s", "1"));
        assert!(p.send(1, "tools/call", with_meta(json!({ "progressToken": "tok" }))).is_empty());
        let t = kept.borrow()[0];
        p.progress(t, 0.5, Some(2.0)).unwrap();
        assert_eq!(p.progress(t, 0.5, None), Err(NotifyError::NotIncreasing));
        assert_eq!(p.progress(t, 0.1, None), Err(NotifyError::NotIncreasing));
        assert_eq!(p.progress(t, f64::NAN, None), Err(NotifyError::NotFinite));
        assert_eq!(p.progress(t, 3.0, Some(f64::INFINITY)), Err(NotifyError::NotFinite));
        p.progress(t, 1.5, None).unwrap();
        p.answer(t, "done").unwrap();
        assert_eq!(p.progress(t, 9.0, None), Err(NotifyError::UnknownTicket), "nothing after the answer");
        let msgs = p.poll();
        assert_eq!(msgs.len(), 3, "{w:?}: {msgs:?}");
        assert_eq!(msgs[0]["params"], json!({ "progressToken": "tok", "progress": 0.5, "total": 2 }));
        assert_eq!(msgs[1]["params"]["progress"], 1.5);
        for m in &msgs[..2] {
            assert_valid(Rev::V2026_07_28, "ProgressNotification", m);
        }
        assert_eq!(msgs[2]["id"], 1);
        assert_eq!(msgs[2]["result"]["content"][0]["text"], "done");

        // Without a token there is no progress.
        p.send(2, "tools/call", with_meta(json!({})));
        let t = kept.borrow()[1];
        assert_eq!(p.progress(t, 1.0, None), Err(NotifyError::NoProgressToken));
        p.answer(t, "x").unwrap();
        assert_eq!(p.poll().len(), 1);
    }
}

#[test]
fn log_messages_follow_the_level_each_request_asks_for() {
    for w in WIRES {
        let (mut p, kept) = keeping(w, logging());
        p.send(1, "tools/call", with_meta(json!({ "io.modelcontextprotocol/logLevel": "warning" })));
        let t = kept.borrow()[0];
        assert_eq!(p.log(t, LogLevel::Info, "quiet"), Err(NotifyError::Filtered));
        p.log(t, LogLevel::Warning, "w").unwrap();
        p.log(t, LogLevel::Emergency, "e").unwrap();
        p.answer(t, "ok").unwrap();
        assert_eq!(p.log(t, LogLevel::Emergency, "late"), Err(NotifyError::UnknownTicket));
        let msgs = p.poll();
        let levels: Vec<_> = msgs.iter().filter_map(|m| m["params"]["level"].as_str()).collect();
        assert_eq!(levels, ["warning", "emergency"], "{w:?}: {msgs:?}");
        for m in &msgs[..2] {
            assert_valid(Rev::V2026_07_28, "LoggingMessageNotification", m);
        }

        // No level asked: no log messages at all.
        p.send(2, "tools/call", with_meta(json!({})));
        let t = kept.borrow()[1];
        assert_eq!(p.log(t, LogLevel::Emergency, "e"), Err(NotifyError::Filtered));
        p.answer(t, "ok").unwrap();
        assert_eq!(p.poll().len(), 1);

        // An unknown level is refused before the host sees the request.
        let (status, r) =
            p.call(3, "tools/call", with_meta(json!({ "io.modelcontextprotocol/logLevel": "loud" })));
        assert_eq!(r["error"]["code"], -32602, "{r}");
        if w == Wire::Http {
            assert_eq!(status, 400, "an envelope error");
        }
        assert_eq!(kept.borrow().len(), 2);
    }
    // Logging off in the configuration: never sent, whatever the request asks.
    for w in WIRES {
        let (mut p, kept) = keeping(w, Config::new("s", "1"));
        p.send(1, "tools/call", with_meta(json!({ "io.modelcontextprotocol/logLevel": "debug" })));
        let t = kept.borrow()[0];
        assert_eq!(p.log(t, LogLevel::Emergency, "e"), Err(NotifyError::Filtered));
    }
}

#[test]
fn an_answer_after_a_cancel_is_dropped() {
    for w in WIRES {
        let (mut p, kept) = keeping(w, logging());
        p.send(
            1,
            "tools/call",
            with_meta(json!({ "progressToken": 1, "io.modelcontextprotocol/logLevel": "debug" })),
        );
        let t = kept.borrow()[0];
        p.progress(t, 1.0, None).unwrap();
        p.poll();
        p.cancel(1);
        assert_eq!(p.answer(t, "late"), Err(AnswerError::UnknownTicket), "{w:?}");
        assert_eq!(p.progress(t, 2.0, None), Err(NotifyError::UnknownTicket));
        assert_eq!(p.log(t, LogLevel::Error, "late"), Err(NotifyError::UnknownTicket));
        assert!(p.poll().is_empty(), "nothing is written for a cancelled ticket");
        // The engine serves what comes next.
        p.send(2, "tools/call", with_meta(json!({})));
        let t2 = kept.borrow()[1];
        p.answer(t2, "next").unwrap();
        let msgs = p.poll();
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0]["id"], 2);
    }
}

#[test]
fn a_cancel_after_the_answer_changes_nothing() {
    for w in WIRES {
        let (mut p, kept) = keeping(w, Config::new("s", "1"));
        p.send(1, "tools/call", with_meta(json!({})));
        let t = kept.borrow()[0];
        p.answer(t, "first").unwrap();
        let msgs = p.poll();
        assert_eq!(msgs[0]["result"]["content"][0]["text"], "first");
        if w == Wire::Stdio {
            // A late cancellation is ignored: no event, no output, the stream goes on.
            p.cancel(1);
            assert!(p.poll().is_empty());
            assert_eq!(p.stdio_engine().in_flight(), 0);
        }
        assert_eq!(p.answer(t, "again"), Err(AnswerError::UnknownTicket), "answered once only");
        assert!(p.poll().is_empty());
    }
}

/// Found writing `docs/features.md`: a stream's `logging/setLevel` is a session setting,
/// so a `2026-07-28` request on the same stream that asks for no logs gets none.
#[test]
fn a_session_log_level_does_not_reach_stateless_requests() {
    let (mut p, kept) = keeping(Wire::Stdio, logging());
    let open = mcp_tests::legacy_open("2025-11-25");
    let set = mcp_tests::request(1, "logging/setLevel", json!({ "level": "debug" }));
    let e = p.stdio_engine();
    for line in [open, set] {
        e.handle_input(mcp_engine::Instant::ZERO, line.as_bytes());
    }
    p.poll();
    // A legacy request on the stream: the session level applies.
    let legacy = json!({ "name": "t" });
    let line = mcp_tests::request(2, "tools/call", legacy);
    p.stdio_engine().handle_input(mcp_engine::Instant::ZERO, line.as_bytes());
    p.poll();
    let t = kept.borrow()[0];
    p.log(t, LogLevel::Debug, "session").unwrap();
    // A 2026-07-28 request without `logLevel`: none.
    p.send(3, "tools/call", with_meta(json!({})));
    let t = kept.borrow()[1];
    assert_eq!(p.log(t, LogLevel::Emergency, "e"), Err(NotifyError::Filtered));
}
