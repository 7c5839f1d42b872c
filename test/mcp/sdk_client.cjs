// A client no one here wrote: the official TypeScript SDK's Client (@modelcontextprotocol/sdk, pinned by
// test/mcp/package-lock.json) over its StdioClientTransport, driving a server program of ours. Prints one JSON
// line with what it saw; test/unit/mcp_server_sdk_test.cpp asserts the exact texts.
//
//   node sdk_client.cjs <node_modules dir> <scenario> <server program> [server args...]
//   scenarios: list | increments <workers> <calls each> | cancel | progress
'use strict';
const { createRequire } = require('node:module');
const [modules, scenario, ...afterScenario] = process.argv.slice(2);
// `increments <workers> <calls>` takes two counts before the server's command line.
const workers = scenario === 'increments' ? Number(afterScenario.shift()) : 0;
const perWorker = scenario === 'increments' ? Number(afterScenario.shift()) : 0;
const [command, ...args] = afterScenario;
const requireSdk = createRequire(modules + '/');
const { Client } = requireSdk('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/stdio.js');

async function main() {
  const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
  const client = new Client({ name: 'sdk-test-client', version: '1.0.0' });
  await client.connect(transport);
  const out = { server: client.getServerVersion() };
  if (scenario === 'list') {
    out.tools = (await client.listTools()).tools;
  } else if (scenario === 'increments') {
    // `workers` concurrent callers (as many clients would be), each making `perWorker` calls one after the other.
    let errors = 0;
    const worker = async () => {
      for (let i = 0; i < perWorker; ++i) {
        const r = await client.callTool({ name: 'add_to_balance', arguments: { acct: 'shared' } });
        if (r.isError) ++errors;
      }
    };
    await Promise.all(Array.from({ length: workers }, worker));
    out.errors = errors;
    out.balance = (await client.callTool({ name: 'get_balance', arguments: { acct: 'shared' } })).structuredContent;
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

main().catch((e) => {
  process.stdout.write(JSON.stringify({ failed: String(e && e.stack ? e.stack : e) }) + '\n');
  process.exit(1);
});
