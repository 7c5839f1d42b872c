// A client no one here wrote: the official TypeScript SDK's Client (@modelcontextprotocol/sdk, pinned by
// test/mcp/package-lock.json) over its StdioClientTransport or StreamableHTTPClientTransport, driving a server
// program of ours. Prints one JSON line with what it saw; test/unit/mcp_server_sdk_test.cpp asserts the exact
// texts.
//
//   node sdk_client.cjs <node_modules dir> <stdio|http> <scenario> <server program> [server args...]
//   scenarios: list | increments <workers> <calls each> | cancel | progress
//
// Over http the script starts the server itself (`<server program> [args...] --http`, which prints its port on
// stdout), connects a client to http://127.0.0.1:PORT/mcp, and stops the server by its pid at the end. There,
// `increments` connects one Client per worker (so many clients, each with its own Mcp-Session-Id); over stdio
// one client stands for them (one server process per client).
'use strict';
const { createRequire } = require('node:module');
const { spawn } = require('node:child_process');
const readline = require('node:readline');
const [modules, transportKind, scenario, ...afterScenario] = process.argv.slice(2);
// `increments <workers> <calls>` takes two counts before the server's command line.
const workers = scenario === 'increments' ? Number(afterScenario.shift()) : 0;
const perWorker = scenario === 'increments' ? Number(afterScenario.shift()) : 0;
const [command, ...args] = afterScenario;
const requireSdk = createRequire(modules + '/');
const { Client } = requireSdk('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/streamableHttp.js');

let server = null;  // the HTTP server's process

// Starts `command args --http`; resolves with its port (its first line on stdout), rejects after 10 s.
function startHttpServer() {
  server = spawn(command, [...args, '--http'], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server printed no port within 10 s')), 10000);
    server.on('exit', (code) => reject(new Error(`the server exited (${code}) before printing its port`)));
    readline.createInterface({ input: server.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve(Number(line));
    });
  });
}

async function connect(port) {
  const client = new Client({ name: 'sdk-test-client', version: '1.0.0' });
  const transport = transportKind === 'http'
    ? new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`))
    : new StdioClientTransport({ command, args, stderr: 'inherit' });
  await client.connect(transport);
  return client;
}

async function main() {
  if (transportKind !== 'stdio' && transportKind !== 'http') throw new Error(`transport: ${transportKind}`);
  const port = transportKind === 'http' ? await startHttpServer() : 0;
  const client = await connect(port);
  const out = { server: client.getServerVersion() };
  if (scenario === 'list') {
    out.tools = (await client.listTools()).tools;
  } else if (scenario === 'increments') {
    // `workers` concurrent callers, each making `perWorker` calls one after the other: over http each its own
    // Client (its own session), over stdio all through the one client.
    const clients = transportKind === 'http'
      ? await Promise.all(Array.from({ length: workers }, () => connect(port)))
      : Array.from({ length: workers }, () => client);
    out.sessions = new Set(clients.map((c) => c.transport.sessionId ?? 'stdio')).size;
    let errors = 0;
    const worker = async (c) => {
      for (let i = 0; i < perWorker; ++i) {
        const r = await c.callTool({ name: 'add_to_balance', arguments: { acct: 'shared' } });
        if (r.isError) ++errors;
      }
    };
    await Promise.all(clients.map(worker));
    out.errors = errors;
    out.balance = (await client.callTool({ name: 'get_balance', arguments: { acct: 'shared' } })).structuredContent;
    if (transportKind === 'http') await Promise.all(clients.map((c) => c.close()));
  } else if (scenario === 'progress') {
    const seen = [];
    const r = await client.callTool({ name: 'slow_report', arguments: { ms: 200 } }, undefined,
                                    { onprogress: (p) => seen.push(p) });
    out.progress = seen;
    out.report = r.structuredContent;
  } else if (scenario === 'cancel') {
    // slow_report reads the whole bank for 1.5 s; add_to_balance(a) waits for it (a write under bank) and is
    // cancelled while it waits: it never runs.
    const report = client.callTool({ name: 'slow_report', arguments: { ms: 1500 } });
    await new Promise((r) => setTimeout(r, 200));
    const abort = new AbortController();
    const add = client.callTool({ name: 'add_to_balance', arguments: { acct: 'a', amount: 5 } }, undefined,
                                { signal: abort.signal });
    await new Promise((r) => setTimeout(r, 200));
    abort.abort('the user pressed stop');
    try {
      await add;
      out.add = 'answered';
    } catch (e) {
      out.add = 'cancelled';
    }
    out.report = (await report).structuredContent;
    out.balance = (await client.callTool({ name: 'get_balance', arguments: { acct: 'a' } })).structuredContent;
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + '\n');
}

function stopServer() {
  if (server && server.exitCode === null) server.kill('SIGTERM');  // by its pid
}

main().then(stopServer, (e) => {
  stopServer();
  process.stdout.write(JSON.stringify({ failed: String(e && e.stack ? e.stack : e) }) + '\n');
  process.exitCode = 1;
});
