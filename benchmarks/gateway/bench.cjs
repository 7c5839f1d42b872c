// The gateway benchmark (scripts/bench-gateway runs it): what tool-effects-gateway adds to a tools/call, beside
// two pass-through proxies that do none of its work, mcp-proxy and supergateway (npm, pinned by
// test/mcp/package-lock.json). Same upstream (the npm server-everything over stdio, its `echo` tool), same client
// (the official TypeScript SDK's Client over Streamable HTTP), one run. Measured per target:
//   - latency of one call at a time (p50, p90, p99) and what it adds to the same client calling the upstream
//     directly over stdio (p50 - the direct p50);
//   - calls per second with `concurrency` calls in flight;
//   - CPU of the proxy process alone (utime + stime from /proc, the upstream excluded) per call, in both phases;
//   - its resident memory after the run (VmRSS) and at its peak (VmHWM).
// And, for the gateway with its SQLite journal, the fsync/fdatasync calls per tools/call with 16 in flight
// (strace -f -c), where a journaled call is at most 2 records.
//
//   node bench.cjs <node_modules> <tool-effects-gateway> <work dir> [calls] [concurrency]
'use strict';
const { createRequire } = require('node:module');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const readline = require('node:readline');

const [modulesArg, gatewayArg, workArg, callsArg, concurrencyArg] = process.argv.slice(2);
const [modules, gatewayExe, work] = [modulesArg, gatewayArg, workArg].map((p) => path.resolve(p));
const calls = Number(callsArg || 4000);
const concurrency = Number(concurrencyArg || 16);
const requireSdk = createRequire(modules + '/');
const { Client } = requireSdk('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/streamableHttp.js');

const everything = path.join(modules, '@modelcontextprotocol/server-everything/dist/index.js');
const tick = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
fs.mkdirSync(work, { recursive: true });

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
function cpuMs(pid) {  // utime + stime of the process alone
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / tick;
}
function memoryMiB(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number((status.match(new RegExp(`${k}:\\s+(\\d+)`)) || [0, 0])[1]);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}
function waitForPort(port, ms) {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = net.connect(port, '127.0.0.1', () => { s.end(); resolve(); });
      s.on('error', () => (Date.now() > deadline ? reject(new Error(`nothing listens on ${port}`)) : setTimeout(attempt, 100)));
    };
    attempt();
  });
}
function percentile(sorted, p) { return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]; }

// Starts a proxy; resolves with {child, url}.
async function startProxy(kind, extraConfig) {
  if (kind === 'gateway') {
    const config = path.join(work, `gateway-${extraConfig ? 'journal' : 'plain'}.json`);
    const gateway = { audit: '' };
    if (extraConfig && extraConfig.journal) gateway.journal = extraConfig.journal;
    fs.writeFileSync(config, JSON.stringify({
      mcpServers: { everything: { command: 'node', args: [everything, 'stdio'], tools: { echo: { reads: ['echo'] } } } },
      gateway,
    }));
    const argv = [gatewayExe, '--config', config, '--listen', '127.0.0.1:0'];
    const child = extraConfig && extraConfig.strace
      ? spawn('strace', ['-f', '-c', '-e', 'trace=fsync,fdatasync', '-o', extraConfig.strace, ...argv], { stdio: ['pipe', 'pipe', 'inherit'] })
      : spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
    const port = await new Promise((resolve, reject) => {
      child.on('exit', (c) => reject(new Error(`the gateway exited (${c})`)));
      readline.createInterface({ input: child.stdout }).once('line', (l) => resolve(Number(l)));
    });
    return { child, url: `http://127.0.0.1:${port}/mcp` };
  }
  const port = await freePort();
  const child = kind === 'mcp-proxy'
    ? spawn(process.execPath, [path.join(modules, 'mcp-proxy/dist/bin/mcp-proxy.mjs'), '--port', String(port), '--host',
                               '127.0.0.1', '--server', 'stream', '--', 'node', everything, 'stdio'],
            { stdio: ['ignore', 'ignore', 'ignore'] })
    : spawn(process.execPath, [path.join(modules, 'supergateway/dist/index.js'), '--stdio', `node ${everything} stdio`,
                               '--outputTransport', 'streamableHttp', '--stateful', '--port', String(port),
                               '--logLevel', 'none'], { stdio: ['ignore', 'ignore', 'ignore'] });
  await waitForPort(port, 30000);
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

async function connect(url) {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(url ? new StreamableHTTPClientTransport(new URL(url))
                           : new StdioClientTransport({ command: 'node', args: [everything, 'stdio'], stderr: 'ignore' }));
  return client;
}
const echo = (client, i) => client.callTool({ name: 'echo', arguments: { message: `m${i}` } });

// One target: sequential latencies, then `concurrency` in flight; CPU of `pid` in each phase.
async function measure(client, pid) {
  for (let i = 0; i < 200; ++i) await echo(client, i);  // warm up
  const latencies = [];
  const cpu0 = pid ? cpuMs(pid) : 0;
  for (let i = 0; i < calls; ++i) {
    const t = process.hrtime.bigint();
    const r = await echo(client, i);
    latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (r.isError) throw new Error(`echo failed: ${JSON.stringify(r)}`);
  }
  const cpu1 = pid ? cpuMs(pid) : 0;
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < calls) await echo(client, next++);
  }));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu2 = pid ? cpuMs(pid) : 0;
  latencies.sort((a, b) => a - b);
  return {
    p50_ms: percentile(latencies, 50), p90_ms: percentile(latencies, 90), p99_ms: percentile(latencies, 99),
    calls_per_s: calls / seconds,
    cpu_us_per_call: pid ? ((cpu1 - cpu0) * 1000) / calls : null,
    cpu_us_per_call_concurrent: pid ? ((cpu2 - cpu1) * 1000) / calls : null,
    memory_mib: pid ? memoryMiB(pid) : null,
  };
}

async function fsyncsPerCall() {
  const out = {};
  for (const n of [concurrency * 5, concurrency * 25]) {
    const trace = path.join(work, `strace-${n}.txt`);
    const db = path.join(work, `journal-${n}.db`);
    for (const f of [db, `${db}-wal`, `${db}-shm`]) fs.rmSync(f, { force: true });
    const { child, url } = await startProxy('gateway', { journal: db, strace: trace });
    const client = await connect(url);
    let next = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => { while (next < n) await echo(client, next++); }));
    await client.close();
    // SIGTERM to the gateway itself (strace's child): it drains and exits, then strace writes its summary.
    const gateway = Number(execFileSync('pgrep', ['-P', String(child.pid)]).toString().trim().split('\n')[0]);
    await new Promise((r) => { child.on('exit', r); process.kill(gateway, 'SIGTERM'); });
    const text = fs.readFileSync(trace, 'utf8');
    out[n] = ['fsync', 'fdatasync'].reduce((sum, s) => {
      const m = text.match(new RegExp(`\\s(\\d+)(?:\\s+\\d+)?\\s+${s}\\n`));
      return sum + (m ? Number(m[1]) : 0);
    }, 0);
  }
  const [a, b] = Object.keys(out).map(Number);
  // per_call: what 320 more calls added, per call (the run's start and stop are a fixed cost, which varies from
  // run to run: when it varies more than the calls add, this is below zero and meaningless); at_most_per_call:
  // every sync of the longer run, its start and stop included, per call.
  return { syncs: out, per_call: (out[b] - out[a]) / (b - a), at_most_per_call: out[b] / b };
}

async function main() {
  const results = {};
  const direct = await connect(null);
  results.direct = await measure(direct, 0);
  await direct.close();
  for (const kind of ['gateway', 'mcp-proxy', 'supergateway']) {
    const { child, url } = await startProxy(kind);
    const client = await connect(url);
    results[kind] = await measure(client, child.pid);
    results[kind].added_p50_ms = results[kind].p50_ms - results.direct.p50_ms;
    await client.close();
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
  }
  results.setup = { calls, concurrency, node: process.version, upstream: 'server-everything (stdio), echo',
                    client: '@modelcontextprotocol/sdk Client, Streamable HTTP (direct: stdio)' };
  fs.writeFileSync(path.join(work, 'results.json'), JSON.stringify(results, null, 2));
  const f = (x, d = 3) => (x === null || x === undefined ? '-' : x.toFixed(d));
  const g = results.gateway, p = results['mcp-proxy'], s = results.supergateway;
  console.log('| target | p50 ms | p99 ms | added p50 ms | calls/s at ' + concurrency + ' | CPU us/call (1 / ' +
              concurrency + ' in flight) | RSS MiB (peak) |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [name, r] of Object.entries(results).filter(([k]) => !['setup', 'gateway_sqlite_fsyncs'].includes(k)))
    console.log(`| ${name} | ${f(r.p50_ms)} | ${f(r.p99_ms)} | ${name === 'direct' ? '-' : f(r.added_p50_ms)} | ` +
                `${f(r.calls_per_s, 0)} | ${f(r.cpu_us_per_call, 0)} / ${f(r.cpu_us_per_call_concurrent, 0)} | ` +
                `${r.memory_mib ? `${f(r.memory_mib.rss, 1)} (${f(r.memory_mib.peak, 1)})` : '-'} |`);
  console.log(`\ngateway / mcp-proxy: added latency ${f(g.added_p50_ms / p.added_p50_ms, 2)}x, CPU per call ` +
              `${f(g.cpu_us_per_call / p.cpu_us_per_call, 2)}x (${f(g.cpu_us_per_call_concurrent / p.cpu_us_per_call_concurrent, 2)}x ` +
              `at ${concurrency}), RSS ${f(g.memory_mib.rss / p.memory_mib.rss, 2)}x`);
  console.log(`gateway / supergateway: added latency ${f(g.added_p50_ms / s.added_p50_ms, 2)}x, CPU per call ` +
              `${f(g.cpu_us_per_call / s.cpu_us_per_call, 2)}x, RSS ${f(g.memory_mib.rss / s.memory_mib.rss, 2)}x`);
  results.gateway_sqlite_fsyncs = await fsyncsPerCall();
  fs.writeFileSync(path.join(work, 'results.json'), JSON.stringify(results, null, 2));
  const j = results.gateway_sqlite_fsyncs;
  console.log(`gateway with its SQLite journal, ${concurrency} calls in flight: at most ${f(j.at_most_per_call, 2)} ` +
              `fsync+fdatasync per call, start and stop included; ` +
              (j.per_call >= 0 ? `${f(j.per_call, 2)} per additional call`
                               : 'the additional calls added fewer than the fixed cost varies') +
              ` (${JSON.stringify(j.syncs)} in runs of ${Object.keys(j.syncs).join(' and ')} calls)`);
}

main().catch((e) => { console.error(e); process.exitCode = 1; });
