// Drives a server's Streamable HTTP endpoint with the official TypeScript SDK client
// (v1, `StreamableHTTPClientTransport`) over a session: initialize, list, call with
// progress, call with logging, terminate (DELETE), and a request after it (must fail).
// Usage: node session-client.mjs URL. Exits non-zero, naming the step, on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2]);
const fail = (step, detail) => {
  console.error(`interop: ${step}: ${detail}`);
  process.exit(1);
};

const transport = new StreamableHTTPClientTransport(url);
const client = new Client({ name: "mcp-engine-interop", version: "1.0.0" }, { capabilities: {} });
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
console.log(`interop: ${version.name} ${version.version}: session, list, progress (${progress.length}), logging (${logs.length}), DELETE, 404 after it: ok`);
