// Drives a server's Streamable HTTP endpoint with the official TypeScript SDK client
// (v1, `StreamableHTTPClientTransport`) over a session: initialize (declaring sampling,
// elicitation and roots), list, call with progress, call with logging, calls during which
// the server sends requests to the client on the POST's SSE stream (`sampling/createMessage`
// answered, then refused with an error; `elicitation/create`; `roots/list`), terminate
// (DELETE), and a request after it (must fail); a call whose stream the server ends early
// (SSE polling) is resumed with GET and Last-Event-ID; and, through a TCP proxy that cuts
// the connection of a call's SSE response after its first event, a second session's call is
// resumed with GET and Last-Event-ID on a new connection, every event replayed.
// Usage: node session-client.mjs URL. Exits non-zero, naming the step, on any failure.
import net from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2]);
const fail = (step, detail) => {
  console.error(`interop: ${step}: ${detail}`);
  process.exit(1);
};

const transport = new StreamableHTTPClientTransport(url);
const client = new Client(
  { name: "mcp-engine-interop", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {}, roots: {} } },
);
// Server-to-client requests: fixed answers, each request recorded. While `declineSampling`
// is set, the sampling handler throws (the SDK answers with a JSON-RPC error).
const asked = { sampling: [], elicitation: [], roots: [] };
let declineSampling = false;
client.setRequestHandler(CreateMessageRequestSchema, (request) => {
  asked.sampling.push(request.params);
  if (declineSampling) throw new Error("declined");
  return { role: "assistant", content: { type: "text", text: "Paris" }, model: "interop-model" };
});
client.setRequestHandler(ElicitRequestSchema, (request) => {
  asked.elicitation.push(request.params);
  return { action: "accept", content: { response: "hello" } };
});
client.setRequestHandler(ListRootsRequestSchema, (request) => {
  asked.roots.push(request.params);
  return { roots: [{ uri: "file:///interop", name: "interop" }] };
});
await client.connect(transport).catch((e) => fail("initialize", e));
if (!transport.sessionId) fail("initialize", "no Mcp-Session-Id");
if (!/^[\x21-\x7e]+$/.test(transport.sessionId)) fail("initialize", `session id not visible ASCII: ${transport.sessionId}`);
const version = client.getServerVersion();
if (!version?.name) fail("initialize", "no serverInfo");

const tools = await client.listTools().catch((e) => fail("tools/list", e));
if (!tools.tools.some((t) => t.name === "test_simple_text")) fail("tools/list", JSON.stringify(tools));

const progress = [];
const called = await client
  .callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  })
  .catch((e) => fail("tools/call with progress", e));
if (progress.length < 3) fail("tools/call with progress", `progress ${JSON.stringify(progress)}`);
if (!called.content?.[0]?.text) fail("tools/call with progress", JSON.stringify(called));

await client.setLoggingLevel("info").catch((e) => fail("logging/setLevel", e));
const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params.data));
await client.callTool({ name: "test_tool_with_logging", arguments: {} }).catch((e) => fail("tools/call with logging", e));
if (logs.length < 3) fail("tools/call with logging", `messages ${JSON.stringify(logs)}`);

// A tool call during which the server asks the client (`kind` names the handler): the
// handler must have run exactly once, and `check` judges the text and the request's params.
// The other handlers must not have run meanwhile.
const counts = { sampling: 0, elicitation: 0, roots: 0 };
const textOf = (result) => result?.content?.[0]?.text;
const callAsking = async (step, kind, name, args, check) => {
  const before = asked[kind].length;
  const result = await client.callTool({ name, arguments: args }).catch((e) => fail(step, e));
  const calls = asked[kind].length - before;
  if (calls !== 1) fail(step, `${kind} handler called ${calls} times, expected once`);
  if (result.isError) fail(step, `tool error: ${JSON.stringify(result)}`);
  const text = textOf(result);
  if (typeof text !== "string") fail(step, `no text content: ${JSON.stringify(result)}`);
  check(text, asked[kind][before]);
  for (const other of Object.keys(asked)) {
    if (other !== kind && asked[other].length !== counts[other]) {
      fail(step, `${other} handler called unexpectedly: ${JSON.stringify(asked[other].slice(counts[other]))}`);
    }
  }
  counts[kind] = asked[kind].length;
  return text;
};
const exactly = (step, expected) => (text) => {
  if (text !== expected) fail(step, `text ${JSON.stringify(text)}, expected ${JSON.stringify(expected)}`);
};

const prompt = "What is the capital of France?";
await callAsking("tools/call with sampling", "sampling", "test_sampling", { prompt }, (text, params) => {
  exactly("tools/call with sampling", "LLM response: Paris")(text);
  const message = params?.messages?.[0];
  if (params?.messages?.length !== 1 || message.role !== "user" || message.content?.text !== prompt) {
    fail("tools/call with sampling", `request ${JSON.stringify(params)}`);
  }
  if (params.maxTokens !== 100) fail("tools/call with sampling", `maxTokens ${params.maxTokens}, expected 100`);
});

declineSampling = true;
const declined = await callAsking(
  "tools/call with sampling declined",
  "sampling",
  "test_sampling",
  { prompt },
  (text) => {
    if (!text.startsWith("Sampling not supported or error:")) {
      fail("tools/call with sampling declined", `text ${JSON.stringify(text)}`);
    }
  },
);
declineSampling = false;

const question = "What should I say?";
await callAsking(
  "tools/call with elicitation",
  "elicitation",
  "test_elicitation",
  { message: question },
  (text, params) => {
    exactly("tools/call with elicitation", 'User response: action=accept, content={"response":"hello"}')(text);
    if (params?.message !== question) fail("tools/call with elicitation", `request ${JSON.stringify(params)}`);
    if (params.mode !== undefined && params.mode !== "form") fail("tools/call with elicitation", `mode ${params.mode}`);
    const schema = params.requestedSchema;
    if (schema?.properties?.response?.type !== "string" || !schema.required?.includes("response")) {
      fail("tools/call with elicitation", `requestedSchema ${JSON.stringify(schema)}`);
    }
  },
);

await callAsking(
  "tools/call with roots/list",
  "roots",
  "test_input_required_result_list_roots",
  {},
  exactly("tools/call with roots/list", "Client roots: file:///interop"),
);

// The server ends the POST's stream with `retry:` before the result (SSE polling); the
// client must come back with GET and Last-Event-ID to get it.
const resumed = await client
  .callTool({ name: "test_reconnection", arguments: {} })
  .catch((e) => fail("tools/call resumed after the stream ended", e));
if (!textOf(resumed)?.startsWith("Reconnection test completed successfully")) {
  fail("tools/call resumed after the stream ended", JSON.stringify(resumed));
}

// A dropped connection. A TCP proxy in front of the server forwards everything, except that
// the response to the one POST armed by `cutNext` is cut, once it is an SSE stream, right
// after its first event (the priming event, which carries an id): the proxy forwards that
// far and destroys both sockets. The SDK must come back with GET and Last-Event-ID on a new
// connection, and the server, which kept the stream's events, replays the rest: every
// progress notification and the result.
const drop = { cutNext: false, cut: false, resumedWith: null };
const proxy = net.createServer((down) => {
  const up = net.connect(Number(url.port), url.hostname);
  let method = null; // the method of the request on this connection whose response is read
  let held = null; // bytes of an armed POST's response, held until the cut point is known
  const closeBoth = () => {
    down.destroy();
    up.destroy();
  };
  down.on("error", closeBoth);
  up.on("error", closeBoth);
  down.on("close", () => up.destroy());
  up.on("close", () => down.destroy());
  down.on("data", (bytes) => {
    const text = bytes.toString("latin1");
    const start = /^(GET|POST|DELETE) /.exec(text);
    if (start) {
      method = start[1];
      const resumed = /\r\nlast-event-id:[ \t]*([^\r\n]+)/i.exec(text);
      if (method === "GET" && resumed) drop.resumedWith = resumed[1].trim();
      if (method === "POST" && drop.cutNext) {
        drop.cutNext = false;
        held = Buffer.alloc(0);
      }
    }
    up.write(bytes);
  });
  up.on("data", (bytes) => {
    if (held === null) return void down.write(bytes);
    held = Buffer.concat([held, bytes]);
    const text = held.toString("latin1");
    const headEnd = text.indexOf("\r\n\r\n");
    if (headEnd < 0) return;
    if (!/\r\ncontent-type:[ \t]*text\/event-stream/i.test(text.slice(0, headEnd + 2))) {
      // Not a stream: forwarded whole; the check below fails the step.
      down.write(held);
      held = null;
      return;
    }
    const id = text.indexOf("\nid:", headEnd);
    const eventEnd = id < 0 ? -1 : text.indexOf("\n\n", id + 1);
    if (eventEnd < 0) return;
    down.write(held.subarray(0, eventEnd + 2), closeBoth);
    held = null;
    drop.cut = true;
  });
});
await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
const proxied = new URL(url);
proxied.port = String(proxy.address().port);
const dropTransport = new StreamableHTTPClientTransport(proxied);
const dropClient = new Client({ name: "mcp-engine-interop-drop", version: "1.0.0" }, { capabilities: {} });
dropClient.onerror = () => {}; // the SDK reports the broken stream here, then resumes
await dropClient.connect(dropTransport).catch((e) => fail("initialize through the proxy", e));
const dropProgress = [];
drop.cutNext = true;
const afterDrop = await dropClient
  .callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
    onprogress: (p) => dropProgress.push(p.progress),
  })
  .catch((e) => fail("tools/call resumed after a dropped connection", e));
if (!drop.cut) fail("tools/call resumed after a dropped connection", "the proxy cut nothing (no SSE response?)");
if (!drop.resumedWith) fail("tools/call resumed after a dropped connection", "no GET with Last-Event-ID followed the cut");
if (textOf(afterDrop) !== textOf(called)) {
  fail("tools/call resumed after a dropped connection", `result ${JSON.stringify(afterDrop)}`);
}
if (JSON.stringify(dropProgress) !== JSON.stringify(progress)) {
  fail("tools/call resumed after a dropped connection", `progress ${JSON.stringify(dropProgress)}, expected ${JSON.stringify(progress)}`);
}
await dropTransport.terminateSession().catch((e) => fail("DELETE through the proxy", e));
await dropClient.close();
proxy.close();

const ended = transport.sessionId;
await transport.terminateSession().catch((e) => fail("DELETE", e));
// The ended session's id is refused: a raw request with it is 404.
const after = await fetch(url, {
  method: "POST",
  headers: {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-session-id": ended,
    "mcp-protocol-version": "2025-11-25",
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }),
});
if (after.status !== 404) fail("after DELETE", `status ${after.status}`);
await client.close();
console.log(
  `interop: ${version.name} ${version.version}: session, list, progress (${progress.length}), logging (${logs.length}), ` +
    `sampling, sampling declined (${JSON.stringify(declined)}), elicitation, roots, resumption, resumption after a dropped connection (${dropProgress.length} progress), DELETE, 404 after it: ok`,
);
