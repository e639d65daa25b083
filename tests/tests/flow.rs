//! Tickets, deferred answers, cancellation, limits and pagination.

use mcp_engine::Commands;
use mcp_engine::error::{AnswerError, HostError};
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, Prompt, PromptMessage, PromptOutput, Resource,
    ResourceContents, ResourceTemplate, Ticket, Tool, ToolOutput,
};
use mcp_tests::spec::{Rev, assert_valid};
use mcp_tests::{drive, lines, modern, notification};
use serde_json::{Value, json};

fn take_output(e: &mut Engine) -> Vec<Value> {
    let out = e.pending_output().to_vec();
    e.consume_output(out.len());
    lines(&out)
}

/// Feeds `input` and collects the tickets of the events without answering them.
/// Follows the drain rule: feed, poll every event, feed the rest, until nothing moves.
fn feed_collect(e: &mut Engine, input: &str) -> (usize, Vec<Ticket>) {
    let mut taken = 0;
    let mut tickets = Vec::new();
    loop {
        let n = e.handle_input(Instant::ZERO, &input.as_bytes()[taken..]);
        taken += n;
        let before = tickets.len();
        while let Some(ev) = e.poll_event() {
            tickets.push(ev.ticket());
        }
        if n == 0 && tickets.len() == before {
            return (taken, tickets);
        }
    }
}

fn calls(n: usize) -> String {
    (0..n).map(|i| modern(i as i64, "tools/call", json!({"name": "t"}))).collect()
}

fn tool_engine(max_in_flight: usize) -> Engine {
    let mut cfg = Config::new("s", "1");
    // A small frame limit keeps the input buffer (one frame) small.
    cfg.max_in_flight(max_in_flight).max_frame_len(512);
    Engine::new(cfg, Catalog::builder().tool(Tool::new("t")).build().unwrap())
}

#[test]
fn answers_may_come_later_and_in_any_order() {
    let mut e = tool_engine(64);
    let (_, tickets) = feed_collect(&mut e, &calls(5));
    assert_eq!(tickets.len(), 5);
    assert_eq!(e.in_flight(), 5);
    assert!(e.pending_output().is_empty());
    for (k, t) in tickets.iter().enumerate().rev() {
        let text = format!("answer {k}");
        e.answer_tool(*t, &ToolOutput::new(&[Content::text(&text)])).unwrap();
    }
    let out = take_output(&mut e);
    let ids: Vec<_> = out.iter().map(|o| o["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [4, 3, 2, 1, 0]);
    for o in &out {
        assert_eq!(o["result"]["content"][0]["text"], format!("answer {}", o["id"]));
    }
    assert_eq!(e.in_flight(), 0);
    // A ticket answers once.
    assert_eq!(e.answer_tool(tickets[0], &ToolOutput::new(&[])), Err(AnswerError::UnknownTicket));
    assert!(e.pending_output().is_empty());
}

#[test]
fn the_in_flight_limit_stops_input_and_answers_resume_it() {
    let mut e = tool_engine(4);
    let input = calls(10);
    let (taken, tickets) = feed_collect(&mut e, &input);
    assert_eq!(tickets.len(), 4, "only the limit's worth of work is handed out");
    assert_eq!(e.in_flight(), 4);
    assert!(taken < input.len(), "the engine stops accepting input rather than growing");
    assert_eq!(e.input_capacity(), 0);
    let mut rest = &input.as_bytes()[taken..];
    let mut answered = 0;
    let mut pending = tickets;
    while answered < 10 {
        let t = pending.remove(0);
        e.answer_tool(t, &ToolOutput::new(&[Content::text("x")])).unwrap();
        answered += 1;
        while let Some(ev) = e.poll_event() {
            pending.push(ev.ticket());
        }
        let n = e.handle_input(Instant::ZERO, rest);
        rest = &rest[n..];
        while let Some(ev) = e.poll_event() {
            pending.push(ev.ticket());
        }
        assert!(e.in_flight() <= 4);
    }
    let out = take_output(&mut e);
    let mut ids: Vec<_> = out.iter().map(|o| o["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
}

#[test]
fn cancellation_drops_the_answer() {
    let mut e = tool_engine(8);
    let (_, t) = feed_collect(&mut e, &calls(2));
    let (_, more) = feed_collect(
        &mut e,
        &notification("notifications/cancelled", json!({"requestId": 0, "reason": "user"})),
    );
    assert!(more.contains(&t[0]), "the host learns of the cancellation");
    assert_eq!(e.in_flight(), 1);
    assert_eq!(e.answer_tool(t[0], &ToolOutput::new(&[])), Err(AnswerError::UnknownTicket));
    e.answer_tool(t[1], &ToolOutput::new(&[])).unwrap();
    let out = take_output(&mut e);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], 1);
    // Cancelling after the answer (a late cancel) changes nothing.
    let (_, late) = feed_collect(&mut e, &notification("notifications/cancelled", json!({"requestId": 1})));
    assert!(late.is_empty());
    assert!(take_output(&mut e).is_empty());
}

#[test]
fn a_cancel_names_the_id_with_its_type() {
    let mut e = tool_engine(8);
    let (_, t) = feed_collect(&mut e, &modern("7", "tools/call", json!({"name": "t"})));
    let (_, ev) = feed_collect(&mut e, &notification("notifications/cancelled", json!({"requestId": 7})));
    assert!(ev.is_empty(), "the number 7 is not the string \"7\"");
    let (_, ev) = feed_collect(&mut e, &notification("notifications/cancelled", json!({"requestId": "7"})));
    assert_eq!(ev, vec![t[0]]);
}

#[test]
fn errors_and_kinds() {
    let catalog = Catalog::builder()
        .tool(Tool::new("t"))
        .resource(Resource::new("x://r", "r"))
        .template(ResourceTemplate::new("x://t/{id}", "t"))
        .prompt(Prompt::new("p"))
        .build()
        .unwrap();
    let mut e = Engine::new(Config::new("s", "1"), catalog);
    let input = [
        modern(1, "tools/call", json!({"name": "t"})),
        modern(2, "resources/read", json!({"uri": "x://r"})),
        modern(3, "prompts/get", json!({"name": "p"})),
        modern(4, "resources/read", json!({"uri": "x://t/42"})),
        modern(5, "tools/call", json!({"name": "t"})),
    ]
    .concat();
    e.handle_input(Instant::ZERO, input.as_bytes());
    let mut tickets = Vec::new();
    while let Some(ev) = e.poll_event() {
        if let Event::ReadResource(r) = &ev {
            if r.uri == "x://t/42" {
                assert_eq!(r.variables.get("id"), Some("42"));
                assert_eq!(r.template.unwrap().uri_template, "x://t/{id}");
            } else {
                assert!(r.template.is_none() && r.variables.is_empty());
            }
        }
        tickets.push(ev.ticket());
    }
    assert_eq!(tickets.len(), 5);
    assert_eq!(e.answer_prompt(tickets[0], &PromptOutput::new(&[])), Err(AnswerError::WrongKind));
    e.answer_error(tickets[0], HostError::Internal("boom")).unwrap();
    e.answer_resource(tickets[1], &[]).unwrap();
    e.answer_prompt(tickets[2], &PromptOutput::new(&[PromptMessage::assistant(Content::text("hi"))]))
        .unwrap();
    e.answer_resource(
        tickets[3],
        &[ResourceContents::blob("x://t/42", Some("application/octet-stream"), &[0, 255])],
    )
    .unwrap();
    e.answer_error(tickets[4], HostError::InvalidParams("bad")).unwrap();
    let out = take_output(&mut e);
    assert_eq!(out[0]["error"]["code"], -32603);
    assert_eq!(out[0]["error"]["message"], "Internal error: boom");
    assert_eq!(out[1]["error"]["code"], -32602, "empty contents are never sent: not found");
    assert_eq!(out[2]["result"]["messages"][0]["role"], "assistant");
    assert_valid(Rev::V2026_07_28, "GetPromptResult", &out[2]["result"]);
    assert_eq!(out[3]["result"]["contents"][0]["blob"], "AP8=");
    assert_valid(Rev::V2026_07_28, "ReadResourceResult", &out[3]["result"]);
    assert_eq!(out[4]["error"]["code"], -32602);
}

#[test]
fn output_backpressure_pauses_processing_until_drained() {
    let mut cfg = Config::new("s", "1");
    cfg.max_buffered_output(1);
    let mut e = Engine::new(cfg, mcp_fixture::catalog());
    let input: String = (0..5).map(|i| modern(i, "server/discover", json!({}))).collect();
    e.handle_input(Instant::ZERO, input.as_bytes());
    assert_eq!(lines(e.pending_output()).len(), 1, "one response, then the engine waits");
    let mut all = Vec::new();
    while !e.pending_output().is_empty() {
        let mut buf = [0u8; 100];
        let n = e.poll_transmit(&mut buf);
        all.extend_from_slice(&buf[..n]);
    }
    assert_eq!(lines(&all).len(), 5);
}

#[test]
fn pagination_walks_every_item_once_and_cursors_name_their_list() {
    let catalog_of = || {
        let mut b = Catalog::builder();
        for i in (0..7).rev() {
            b = b
                .tool(Tool::new(format!("t{i}")))
                .resource(Resource::new(format!("x://{i}"), format!("r{i}")));
        }
        b.build().unwrap()
    };
    let mut cfg = Config::new("s", "1");
    cfg.page_size(3).secret_key([1; 32]);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    let mut tools_cursor = None;
    loop {
        let mut e = Engine::new(cfg.clone(), catalog_of());
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let out = lines(&drive(&mut e, modern(1, "tools/list", params).as_bytes(), &[usize::MAX]));
        assert_valid(Rev::V2026_07_28, "ListToolsResult", &out[0]["result"]);
        pages += 1;
        for t in out[0]["result"]["tools"].as_array().unwrap() {
            seen.push(t["name"].as_str().unwrap().to_owned());
        }
        match out[0]["result"]["nextCursor"].as_str() {
            Some(c) => {
                tools_cursor.get_or_insert_with(|| c.to_owned());
                cursor = Some(c.to_owned());
            }
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ["t0", "t1", "t2", "t3", "t4", "t5", "t6"]);
    // A tools cursor given to resources/list is refused by name.
    let mut e = Engine::new(cfg.clone(), catalog_of());
    let out = lines(&drive(
        &mut e,
        modern(1, "resources/list", json!({"cursor": tools_cursor.unwrap()})).as_bytes(),
        &[usize::MAX],
    ));
    assert_eq!(out[0]["error"]["code"], -32602);
    assert!(out[0]["error"]["message"].as_str().unwrap().contains("tools/list"));
}

#[test]
fn cursors_of_a_list_that_changed_are_refused() {
    // A cursor names an offset into the list as it was: once an item before it is
    // removed, the offset means something else, so the cursor is refused (-32602) and the
    // client lists again from the start (tests/tests/cursors.rs has every binding).
    let build = |names: &[&str]| {
        let mut b = Catalog::builder();
        for n in names {
            b = b.tool(Tool::new(*n));
        }
        b.build().unwrap()
    };
    let mut cfg = Config::new("s", "1");
    cfg.page_size(2).secret_key([1; 32]);
    let mut e = Engine::new(cfg.clone(), build(&["a", "b", "c", "d"]));
    let out = lines(&drive(&mut e, modern(1, "tools/list", json!({})).as_bytes(), &[usize::MAX]));
    let cursor = out[0]["result"]["nextCursor"].as_str().unwrap().to_owned();
    let next = modern(2, "tools/list", json!({"cursor": cursor}));
    let mut e = Engine::new(cfg.clone(), build(&["b", "c", "d"]));
    let out = lines(&drive(&mut e, next.as_bytes(), &[usize::MAX]));
    assert_eq!(out[0]["error"]["code"], -32602, "{}", out[0]);
    // The same list in another engine with the same key: the walk goes on.
    let mut e = Engine::new(cfg, build(&["a", "b", "c", "d"]));
    let out = lines(&drive(&mut e, next.as_bytes(), &[usize::MAX]));
    let names: Vec<_> =
        out[0]["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, [json!("c"), json!("d")]);
}

#[test]
fn eof_finishes_only_when_work_is_answered() {
    let mut e = tool_engine(8);
    let (_, t) = feed_collect(&mut e, &calls(1));
    e.handle_eof(Instant::ZERO);
    assert!(!e.is_finished());
    e.answer_tool(t[0], &ToolOutput::new(&[])).unwrap();
    assert!(!e.is_finished(), "output not yet taken");
    take_output(&mut e);
    assert!(e.is_finished());
    assert_eq!(e.handle_input(Instant::ZERO, b"{}\n"), 0, "nothing is read after EOF");
}

#[test]
fn a_cancel_is_taken_while_every_slot_is_busy() {
    let mut e = tool_engine(1);
    let input = [
        modern(1, "tools/call", json!({"name": "t"})),
        modern(2, "tools/call", json!({"name": "t"})),
        modern(3, "tools/list", json!({})),
        notification("notifications/cancelled", json!({"requestId": 1})),
    ]
    .concat();
    let (taken, events) = feed_collect(&mut e, &input);
    assert_eq!(taken, input.len());
    // Call 1 got the only slot; its cancellation was read from behind the waiting call 2,
    // which then took the freed slot; the list, next in order and needing no slot, is served.
    assert_eq!(events.len(), 3, "CallTool(1), Cancelled(1), CallTool(2)");
    assert_eq!(events[0], events[1]);
    assert_ne!(events[2], events[0]);
    assert_eq!(e.in_flight(), 1);
    let ids: Vec<_> = take_output(&mut e).iter().map(|o| o["id"].clone()).collect();
    assert_eq!(ids, [json!(3)], "nothing is written for the cancelled call");
    e.answer_tool(events[2], &ToolOutput::new(&[])).unwrap();
    let ids: Vec<_> = take_output(&mut e).iter().map(|o| o["id"].clone()).collect();
    assert_eq!(ids, [json!(2)]);
}

/// Frames behind a waiting request are parsed only when they may be a cancellation (a
/// cheap byte search first); one written with escapes is still found.
#[test]
fn an_escaped_cancel_is_taken_from_behind_too() {
    let mut e = tool_engine(1);
    let cancel =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications\\/cancel\\u006ced\",\"params\":{\"requestId\":1}}\n";
    let input = [
        modern(1, "tools/call", json!({"name": "t"})),
        modern(2, "tools/call", json!({"name": "t"})),
        cancel.into(),
    ]
    .concat();
    let (_, events) = feed_collect(&mut e, &input);
    assert_eq!(events.len(), 3, "CallTool(1), Cancelled(1), CallTool(2): {events:?}");
    assert_eq!(events[0], events[1]);
}

#[test]
fn requests_that_need_no_ticket_are_served_at_the_head_while_slots_are_busy() {
    let mut e = tool_engine(1);
    let input = [
        modern(1, "tools/call", json!({"name": "t"})),
        modern(2, "tools/list", json!({})),
        "{bad\n".to_owned(),
    ]
    .concat();
    let (_, events) = feed_collect(&mut e, &input);
    assert_eq!(events.len(), 1);
    let out = take_output(&mut e);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["id"], 2);
    assert_eq!(out[1]["error"]["code"], -32700);
}
