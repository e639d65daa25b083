//! The scope policy of a protected HTTP endpoint (`HttpConfig::scope_policy`,
//! `requires_scopes` on definitions): a method needs its scopes (else `403` with an
//! `insufficient_scope` challenge naming them, and the host is never asked); a definition
//! the caller's scopes do not reach does not exist for it (not listed, not found when
//! named, in calls, reads, `get`s, completions and subscriptions); implied scopes count;
//! `Allow` grants none; `Everyone` and stdio are not scoped; a listen stream ends when its
//! grant expires.

use mcp_engine::Commands;
use std::time::Duration;

use mcp_engine::http::{
    AllowedOrigins, Authorization, Grant, HttpConfig, Principal, ProtectedResource, ScopePolicy,
    ScopePolicyError, Verdict,
};
use mcp_engine::subs::ReplaceError;
use mcp_engine::{
    Catalog, Config, Content, Engine, Event, Instant, Prompt, PromptArgument, PromptMessage, PromptOutput,
    Resource, ResourceContents, ResourceTemplate, Tool, ToolOutput, UnixTime,
};
use mcp_tests::wire::{Client, Response, client_of, one, parse_responses, post, req};
use serde_json::{Value, json};

const METADATA: &str = "http://localhost:3000/.well-known/oauth-protected-resource/mcp";

/// Tools `t0`..`t5` (`t1` and `t3` need `admin`), a resource and a template that need
/// `secret`, a prompt that needs `admin`.
fn catalog() -> Catalog {
    let mut b = Catalog::builder();
    for i in 0..6 {
        let t = Tool::new(format!("t{i}"));
        b = b.tool(if i == 1 || i == 3 { t.requires_scopes(["admin"]) } else { t });
    }
    b.resource(Resource::new("note://open", "open"))
        .resource(Resource::new("note://secret", "secret").requires_scopes(["secret"]))
        .template(ResourceTemplate::new("vault://{id}", "vault").requires_scopes(["secret"]))
        .prompt(Prompt::new("p").argument(PromptArgument::new("x")).requires_scopes(["admin"]))
        .prompt(Prompt::new("q").argument(PromptArgument::new("x")))
        .build()
        .unwrap()
}

fn host(ev: Event<'_>) {
    let _ = match ev {
        Event::CallTool(c) => c.answer(&ToolOutput::new(&[Content::text("ok")])),
        Event::ReadResource(r) => {
            let uri = r.uri.to_owned();
            r.answer(&[ResourceContents::text(&uri, None, "text")])
        }
        Event::GetPrompt(p) => p.answer(&PromptOutput::new(&[PromptMessage::user(Content::text("hi"))])),
        Event::Complete(c) => c.answer(&["a"], None, false),
        _ => Ok(()),
    };
}

fn policy() -> ScopePolicy {
    ScopePolicy::new()
        .require("tools/call", ["tools"])
        .unwrap()
        .require("tools/call", ["admin"])
        .unwrap()
        .implies("admin", ["read"])
        .unwrap()
        .require_all(["tools/list", "resources/read"], ["read"])
        .unwrap()
}

fn client_with(http: HttpConfig, page: usize) -> Client {
    let mut config = Config::new("scopes", "1.0");
    config
        .page_size(page)
        .secret_key([7; 32])
        .completions(true)
        .list_changed(true)
        .resource_subscriptions(true);
    client_of(config, http, catalog(), Box::new(host))
}

fn client(page: usize) -> Client {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    http.scope_policy(policy());
    client_with(http, page)
}

/// Grants `scopes` to alice.
fn grant(c: &mut Client, scopes: &[&str]) {
    let set = c.e.scopes().set_of(scopes.iter().copied());
    c.verdict = Verdict::Grant(Grant::new(Principal::of(b"alice")).scopes(set));
}

fn call(c: &mut Client, id: i64, method: &str, params: Value) -> Response {
    one(c, &post(&req(id, method, params), &[]))
}

fn tool_names(c: &mut Client, cursor: Option<&str>) -> (Vec<String>, Option<String>, Value) {
    let params = cursor.map_or(json!({}), |k| json!({ "cursor": k }));
    let r = call(c, 1, "tools/list", params);
    assert_eq!(r.status, 200, "{r:?}");
    let body = r.json();
    let names =
        body["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned());
    let next = body["result"]["nextCursor"].as_str().map(str::to_owned);
    (names.collect(), next, body)
}

#[test]
fn a_method_without_its_scopes_is_403_with_a_challenge_naming_them_and_the_host_is_not_asked() {
    let mut c = client(10);
    grant(&mut c, &["read"]);
    let r = call(&mut c, 7, "tools/call", json!({ "name": "t0" }));
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(r.header("www-authenticate"), Some("Bearer error=\"insufficient_scope\", scope=\"tools\""));
    let body = r.json();
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["code"], mcp_engine::error::code::INSUFFICIENT_SCOPE);
    assert_eq!(body["error"]["message"], "Insufficient scope");
    assert_eq!(c.e.in_flight(), 0);
    // Any one alternative set suffices; a method the policy does not name needs nothing.
    grant(&mut c, &["tools"]);
    assert_eq!(
        call(&mut c, 8, "tools/call", json!({ "name": "t0" })).json()["result"]["content"][0]["text"],
        "ok"
    );
    assert_eq!(call(&mut c, 9, "prompts/list", json!({})).status, 200);
    // ... while `tools/list` needs `read`, which `admin` implies.
    assert_eq!(call(&mut c, 10, "tools/list", json!({})).status, 403);
    grant(&mut c, &["admin"]);
    assert_eq!(call(&mut c, 11, "tools/list", json!({})).status, 200);
    assert_eq!(call(&mut c, 12, "tools/call", json!({ "name": "t1" })).status, 200);
}

#[test]
fn the_challenge_carries_the_metadata_url_of_a_protected_resource() {
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    let pr = ProtectedResource::new("http://localhost:3000/mcp", ["https://auth.example.com"]).unwrap();
    http.protected_resource(pr).scope_policy(policy());
    let mut c = client_with(http, 10);
    grant(&mut c, &["read"]);
    let raw = post(&req(1, "tools/call", json!({ "name": "t0" })), &[("Authorization", "Bearer abc")]);
    let r = one(&mut c, &raw);
    assert_eq!(r.status, 403);
    assert_eq!(
        r.header("www-authenticate").unwrap(),
        format!("Bearer error=\"insufficient_scope\", scope=\"tools\", resource_metadata=\"{METADATA}\"")
    );
}

#[test]
fn allow_grants_no_scope_under_a_policy_and_everyone_is_not_scoped() {
    let mut c = client(10);
    c.verdict = Verdict::AllowAs(Principal::of(b"alice"));
    assert_eq!(call(&mut c, 1, "tools/call", json!({ "name": "t0" })).status, 403);
    assert_eq!(
        call(&mut c, 2, "prompts/list", json!({})).json()["result"]["prompts"].as_array().unwrap().len(),
        1
    );
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
    http.scope_policy(policy());
    let mut c = client_with(http, 10);
    assert_eq!(call(&mut c, 3, "tools/call", json!({ "name": "t1" })).status, 200);
    assert_eq!(tool_names(&mut c, None).0.len(), 6);
}

#[test]
fn a_definition_out_of_reach_is_not_listed_and_answers_as_an_unknown_name() {
    let mut c = client(10);
    grant(&mut c, &["read", "tools"]);
    let (names, next, body) = tool_names(&mut c, None);
    assert_eq!(names, ["t0", "t2", "t4", "t5"]);
    assert_eq!(next, None);
    assert_eq!(body["result"]["cacheScope"], "private", "the page depends on the caller");
    let hidden = call(&mut c, 2, "tools/call", json!({ "name": "t1" })).json();
    let unknown = call(&mut c, 2, "tools/call", json!({ "name": "t9" })).json();
    assert_eq!(hidden["error"]["code"], unknown["error"]["code"]);
    assert_eq!(hidden["error"]["message"].as_str().unwrap().replace("t1", "t9"), unknown["error"]["message"]);
    assert_eq!(c.e.in_flight(), 0);

    // Reads: a listed resource and a template out of reach are "not found" like any uri.
    let read = |c: &mut Client, uri: &str| call(c, 3, "resources/read", json!({ "uri": uri })).json();
    assert_eq!(read(&mut c, "note://open")["result"]["contents"][0]["uri"], "note://open");
    let missing = read(&mut c, "note://nothing");
    assert_eq!(read(&mut c, "note://secret")["error"]["code"], missing["error"]["code"]);
    assert_eq!(read(&mut c, "vault://1")["error"]["code"], missing["error"]["code"]);
    let resources = call(&mut c, 4, "resources/list", json!({})).json();
    assert_eq!(resources["result"]["resources"].as_array().unwrap().len(), 1);
    let templates = call(&mut c, 5, "resources/templates/list", json!({})).json();
    assert_eq!(templates["result"]["resourceTemplates"], json!([]));
    // Prompts and completions.
    let get = call(&mut c, 6, "prompts/get", json!({ "name": "p", "arguments": { "x": "1" } })).json();
    let other = call(&mut c, 6, "prompts/get", json!({ "name": "zz", "arguments": { "x": "1" } })).json();
    assert_eq!(get["error"]["code"], other["error"]["code"]);
    let complete = |c: &mut Client, r: Value| {
        let name = if r["type"] == "ref/prompt" { "x" } else { "id" };
        call(c, 7, "completion/complete", json!({ "ref": r, "argument": { "name": name, "value": "" } }))
            .json()
    };
    assert!(complete(&mut c, json!({ "type": "ref/prompt", "name": "q" }))["result"].is_object());
    assert!(complete(&mut c, json!({ "type": "ref/prompt", "name": "p" }))["error"].is_object());
    assert!(complete(&mut c, json!({ "type": "ref/resource", "uri": "vault://{id}" }))["error"].is_object());

    // With the scopes, all of it is there.
    grant(&mut c, &["admin", "secret"]);
    assert_eq!(tool_names(&mut c, None).0.len(), 6);
    assert_eq!(read(&mut c, "vault://1")["result"]["contents"][0]["uri"], "vault://1");
    assert!(complete(&mut c, json!({ "type": "ref/resource", "uri": "vault://{id}" }))["result"].is_object());
}

#[test]
fn pages_hold_only_reachable_definitions_and_never_point_at_an_empty_page() {
    let mut c = client(2);
    grant(&mut c, &["read", "tools"]);
    let (first, next, _) = tool_names(&mut c, None);
    assert_eq!(first, ["t0", "t2"]);
    let (second, next, _) = tool_names(&mut c, next.as_deref());
    assert_eq!(second, ["t4", "t5"]);
    assert_eq!(next, None);
    // A cursor is bound to its principal.
    let (_, next, _) = tool_names(&mut c, None);
    let set = c.e.scopes().set_of(["read", "tools"]);
    c.verdict = Verdict::Grant(Grant::new(Principal::of(b"bob")).scopes(set));
    let r = call(&mut c, 1, "tools/list", json!({ "cursor": next.unwrap() })).json();
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn a_subscription_to_a_resource_out_of_reach_is_not_honoured() {
    let mut c = client(10);
    grant(&mut c, &["read"]);
    let raw = post(
        &req(
            1,
            "subscriptions/listen",
            json!({ "notifications": { "resourceSubscriptions": ["note://secret", "note://open"] } }),
        ),
        &[],
    );
    let out = String::from_utf8(c.feed(&raw, usize::MAX)).unwrap();
    assert!(out.contains("\"resourceSubscriptions\":[\"note://open\"]"), "{out}");
}

#[test]
fn a_listen_stream_ends_when_its_grant_expires() {
    let mut c = client(10);
    let wall = UnixTime::from_secs(1_800_000_000);
    c.e.set_wall_clock(c.now, wall);
    let set = c.e.scopes().set_of(["read"]);
    let expires = wall + Duration::from_secs(30);
    c.verdict = Verdict::Grant(Grant::new(Principal::of(b"alice")).scopes(set).expires(expires));
    let raw =
        post(&req(5, "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } })), &[]);
    let out = String::from_utf8(c.feed(&raw, usize::MAX)).unwrap();
    assert!(out.contains("notifications/subscriptions/acknowledged"), "{out}");
    assert_eq!(c.e.subscriptions(), 1);
    let deadline = c.e.poll_timeout().unwrap();
    assert!(deadline <= Instant::ZERO + Duration::from_secs(30), "{deadline:?}");
    // Keep-alives until then; at the expiry the stream gets its closing result.
    let mut now = c.now;
    while now < Instant::ZERO + Duration::from_secs(30) {
        now = c.e.poll_timeout().unwrap();
        c.now = now;
        c.e.handle_timeout(now);
    }
    let mut rest = Vec::new();
    c.drain(&mut rest);
    let rest = String::from_utf8(rest).unwrap();
    assert!(rest.contains("\"resultType\":\"complete\""), "{rest}");
    assert!(rest.ends_with("0\r\n\r\n"), "the chunked stream ends: {rest}");
    assert_eq!(c.e.subscriptions(), 0);
}

#[test]
fn stdio_is_not_scoped() {
    let mut e = Engine::new(Config::new("scopes", "1.0"), catalog());
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": mcp_tests::wire::meta("2026-07-28") } });
    let mut line = init.to_string().into_bytes();
    line.push(b'\n');
    e.handle_input(Instant::ZERO, &line);
    let out = e.pending_output().to_vec();
    let v: Value = serde_json::from_slice(out.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 6, "{v}");
}

#[test]
fn a_replacement_catalog_may_only_require_known_scopes() {
    let mut c = client(10);
    let more = Catalog::builder()
        .tool(Tool::new("x").requires_scopes(["new"]))
        .resource(Resource::new("note://open", "open"))
        .prompt(Prompt::new("q"))
        .build()
        .unwrap();
    assert_eq!(c.e.replace_catalog(more.clone()).unwrap_err(), ReplaceError::UnknownScope);
    let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Host);
    http.scope_policy(policy().known(["new"]).unwrap());
    let mut c = client_with(http, 10);
    assert!(c.e.replace_catalog(more).is_ok());
    grant(&mut c, &["read"]);
    assert_eq!(tool_names(&mut c, None).0, Vec::<String>::new());
    grant(&mut c, &["read", "new"]);
    assert_eq!(tool_names(&mut c, None).0, ["x"]);
}

#[test]
fn a_policy_refuses_what_it_cannot_honour() {
    let p = ScopePolicy::new;
    assert_eq!(
        p().require("tools/cal", ["a"]).unwrap_err(),
        ScopePolicyError::UnknownMethod("tools/cal".into())
    );
    assert_eq!(p().require("tools/call", ["a b"]).unwrap_err(), ScopePolicyError::InvalidScope("a b".into()));
    assert!(matches!(p().require("tools/call", Vec::<String>::new()), Err(ScopePolicyError::Oversize(_))));
    let many: Vec<String> = (0..65).map(|i| format!("s{i}")).collect();
    assert_eq!(p().known(&many).unwrap_err(), ScopePolicyError::TooManyScopes);
    assert!(p().known(&many[..64]).is_ok());
    let bad = Catalog::builder().tool(Tool::new("x").requires_scopes(["a\"b"])).build();
    assert!(matches!(bad, Err(mcp_engine::CatalogError::InvalidScopes { .. })));
    let mut b = Catalog::builder();
    for i in 0..65 {
        b = b.tool(Tool::new(format!("t{i}")).requires_scopes([format!("s{i}")]));
    }
    assert!(matches!(b.build(), Err(mcp_engine::CatalogError::InvalidScopes { .. })));
}

#[test]
fn split_input_gives_the_same_refusal() {
    let raw = post(&req(3, "tools/call", json!({ "name": "t0" })), &[]);
    let mut whole = client(10);
    grant(&mut whole, &["read"]);
    let expected = whole.feed(&raw, usize::MAX);
    let mut bytewise = client(10);
    grant(&mut bytewise, &["read"]);
    assert_eq!(bytewise.feed(&raw, 1), expected);
    assert_eq!(parse_responses(&expected)[0].status, 403);
}
