//! stdio_frames: the stdio frame decoder and everything behind it.

use mcp_engine::Commands;
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, Prompt, PromptArgument, PromptMessage, PromptOutput,
    Resource, ResourceContents, ResourceTemplate, Tool, ToolOutput,
};
use serde_json::Value;

/// The catalog of the harness: a plain tool, one with an input schema, a resource, a
/// template, a prompt with a required argument.
fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Tool::new("plain"))
        .tool(Tool::new("typed").input_schema(serde_json::json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 8 } },
            "required": ["text"]
        })))
        .resource(Resource::new("x://r", "r"))
        .template(ResourceTemplate::new("x://t/{id}/{+rest}", "t"))
        .prompt(Prompt::new("p").argument(PromptArgument::required("a")))
        .build()
        .unwrap_or_else(|e| unreachable!("the fuzz catalog is valid: {e}"))
}

/// The stdio frame decoder and everything behind it. The first byte picks the chunk size
/// the rest is fed in; events are answered at once, every other event is deferred and
/// answered later; every output line must be a JSON object, and feeding the same input
/// whole must give the same output.
pub fn stdio_frames(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else { return };
    let chunk = usize::from(first % 64) + 1;
    let chunked = run(input, chunk);
    let whole = run(input, usize::MAX);
    assert_eq!(chunked, whole, "chunking changed the output");
    for line in whole.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).expect("every output line is JSON");
        assert!(v.is_object() && v["jsonrpc"] == "2.0");
    }
}

fn run(input: &[u8], chunk: usize) -> Vec<u8> {
    let mut cfg = Config::new("fuzz", "0");
    cfg.max_frame_len(512).max_in_flight(4).max_depth(16);
    let mut e = Engine::new(cfg, catalog());
    let mut out = Vec::new();
    let mut deferred = Vec::new();
    let mut k = 0usize;
    let mut rest = input;
    let mut stalls = 0;
    loop {
        let take = rest.len().min(chunk);
        let n = e.handle_input(Instant::ZERO, &rest[..take]);
        rest = &rest[n..];
        while let Some(ev) = e.poll_event() {
            k += 1;
            let ticket = ev.ticket();
            match ev {
                Event::Cancelled(_) => {}
                _ if k.is_multiple_of(2) => deferred.push(ticket),
                Event::CallTool(c) => {
                    let text = c.arguments.raw();
                    let _ = c.answer(&ToolOutput::new(&[Content::text(text)]));
                }
                Event::ReadResource(r) => {
                    let uri = r.uri;
                    let _ = r.answer(&[ResourceContents::text(uri, None, "x")]);
                }
                Event::GetPrompt(p) => {
                    let _ = p.answer(&PromptOutput::new(&[PromptMessage::user(Content::text("x"))]));
                }
                Event::Complete(c) => {
                    let value = c.value;
                    let _ = c.answer(&[value, "x"], Some(2), false);
                }
                _ => panic!("an event this harness does not know"),
            }
        }
        if n == 0 {
            // Paused: answer a deferred ticket (or it was cancelled: the answer is refused).
            if let Some(t) = deferred.pop() {
                let _ = e.answer_tool(t, &ToolOutput::new(&[]));
                let _ = e.answer_resource(t, &[]);
                let _ = e.answer_prompt(t, &PromptOutput::new(&[]));
                let _ = e.answer_completion(t, &[], None, false);
                stalls = 0;
            } else if !e.pending_output().is_empty() {
                stalls = 0;
            } else {
                stalls += 1;
            }
        }
        let pending = e.pending_output().len();
        out.extend_from_slice(e.pending_output());
        e.consume_output(pending);
        if rest.is_empty() {
            break;
        }
        assert!(stalls < 3, "the engine stopped taking input with nothing left to do");
    }
    e.handle_eof(Instant::ZERO);
    for t in deferred.drain(..) {
        let _ = e.answer_tool(t, &ToolOutput::new(&[]));
        let _ = e.answer_resource(t, &[]);
        let _ = e.answer_prompt(t, &PromptOutput::new(&[]));
        let _ = e.answer_completion(t, &[], None, false);
    }
    while let Some(ev) = e.poll_event() {
        let _ = ev.ticket();
    }
    out.extend_from_slice(e.pending_output());
    out
}
