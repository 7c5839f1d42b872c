// Clients no one here wrote: the official TypeScript SDK's Client (@modelcontextprotocol/sdk, pinned by
// test/mcp/package-lock.json) in front of the effects gateway, or of an upstream server directly (the controls).
// Prints one JSON line with what it saw; test/unit/gateway_*_test.cpp assert on it.
//
//   node gateway_clients.cjs <node_modules> '<scenario JSON>' stdio <command> [args...]
//   node gateway_clients.cjs <node_modules> '<scenario JSON>' http <url>
//
// Scenarios ({"do": ...}):
//   {"do": "list"}                                     the server's info and tools/list
//   {"do": "call", "tool": T, "arguments": {...}, "key": K?, "elicit": "accept"|"decline"?, "times": n?}
//        calls T (n times, one after the other, default 1) with the idempotency key K under _meta; with `elicit`
//        the client declares elicitation and answers every elicitation/create so (approve: true on accept);
//        prints the results and the elicitation messages it was asked
//   {"do": "increments", "clients": C, "calls": N, "tool": T, "arguments": {...}, "read": R, "read_arguments": {...},
//    "before": {"tool": B, "arguments": {...}}?, "barrier": DIR?, "parties": P?}
//        (after one call of B) C clients (over http each its own Client and session; over stdio one client stands
//        for them), each sending N calls of T at once (not one after the other); "$n" in a string of T's arguments
//        becomes the call's number; then one call of R; prints the errors and R's structuredContent. With
//        `barrier`, the calls start only once P processes (default 2) are connected and waiting in DIR (each
//        leaves a file there; at most 60 s), so that the calls of processes started far apart overlap
// Over stdio the server inherits this process's environment.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');
const [modules, scenarioText, transportKind, ...rest] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const requireSdk = createRequire(modules + '/');
const { Client } = requireSdk('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ElicitRequestSchema } = requireSdk('@modelcontextprotocol/sdk/types.js');

const asked = [];  // the elicitation messages received

// Waits until `parties` processes have reached the barrier directory `dir` (each leaves a file named by its pid).
async function barrier(dir, parties) {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, String(process.pid)), '');
  const until = Date.now() + 60000;
  while (fs.readdirSync(dir).length < parties) {
    if (Date.now() > until) throw new Error(`barrier ${dir}: ${parties} processes never came`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function connect() {
  const capabilities = scenario.elicit ? { elicitation: {} } : {};
  const client = new Client({ name: 'gateway-test-client', version: '1.0.0' }, { capabilities });
  if (scenario.elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return scenario.elicit === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
    });
  }
  const transport = transportKind === 'http'
    ? new StreamableHTTPClientTransport(new URL(rest[0]))
    : new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: { ...process.env }, stderr: 'inherit' });
  await client.connect(transport);
  return client;
}

function callParams(tool, args, key) {
  const p = { name: tool, arguments: args || {} };
  if (key) p._meta = { 'io.github.tool-effects/idempotency-key': key };
  return p;
}

async function main() {
  const client = await connect();
  const out = { server: client.getServerVersion() };
  if (scenario.do === 'list') {
    out.tools = (await client.listTools()).tools;
  } else if (scenario.do === 'call') {
    out.results = [];
    for (let i = 0; i < (scenario.times || 1); ++i)
      out.results.push(await client.callTool(callParams(scenario.tool, scenario.arguments, scenario.key)));
    out.asked = asked;
  } else if (scenario.do === 'increments') {
    const clients = transportKind === 'http'
      ? await Promise.all(Array.from({ length: scenario.clients }, () => connect()))
      : Array.from({ length: scenario.clients }, () => client);
    out.sessions = new Set(clients.map((c) => c.transport.sessionId ?? 'stdio')).size;
    if (scenario.before) await client.callTool(callParams(scenario.before.tool, scenario.before.arguments));
    if (scenario.barrier) await barrier(scenario.barrier, scenario.parties || 2);
    let errors = 0;
    let number = 0;
    const texts = [];
    const numbered = () => JSON.parse(JSON.stringify(scenario.arguments).split('$n').join(String(number++)));
    await Promise.all(clients.flatMap((c) => Array.from({ length: scenario.calls }, async () => {
      const r = await c.callTool(callParams(scenario.tool, numbered()));
      if (r.isError) {
        ++errors;
        if (texts.length < 5) texts.push(r.content.map((x) => x.text).join(' '));
      }
    })));
    out.errors = errors;
    out.error_texts = texts;
    out.read = (await client.callTool(callParams(scenario.read, scenario.read_arguments))).structuredContent;
    if (transportKind === 'http') await Promise.all(clients.filter((c) => c !== client).map((c) => c.close()));
  } else {
    throw new Error(`unknown scenario ${scenario.do}`);
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ failed: String(e && e.stack ? e.stack : e) }) + '\n');
  process.exitCode = 1;
});
