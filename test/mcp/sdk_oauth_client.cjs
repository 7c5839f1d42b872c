// The official TypeScript SDK client's OAuth flow (@modelcontextprotocol/sdk, pinned by test/mcp/package-lock.json)
// against test/mcp/bank_server.cpp run as an OAuth 2.1 resource server (--authorization), with
// test/mcp/oauth_server.py as the authorization server (dynamic registration, PKCE, RFC 8707 resource, RFC 7662
// introspection for the bank). Prints one JSON line with what it saw; test/unit/auth_sdk_oauth_test.cpp asserts it.
//
//   node sdk_oauth_client.cjs <node_modules dir> <scenario> <oauth_server.py> <bank server> <work dir> [<gateway>]
//   With <gateway> (tool-effects-gateway), the resource server is the gateway (gateway.http.authorization: the
//   same introspection) in front of the bank over stdio, and the scenario also reads the gateway's /metrics
//   without a token and with the client's, and its audit log.
//   scenarios:
//     flow      the SDK's own flow: connect (401, the SDK discovers, registers and "redirects"), the redirect
//               followed by a plain HTTP request (the authorization server approves at once), finishAuth with
//               the code, connect again, tools/list, get_balance and add_to_balance
//     no_token  the control: the same client without an auth provider; its connect must be refused
//
// Both servers are started here on free ports of 127.0.0.1 and stopped by their pids at the end.
'use strict';
const { createRequire } = require('node:module');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

const [modules, scenario, oauthServer, bankServer, workDir, gatewayProgram] = process.argv.slice(2);
const requireSdk = createRequire(modules + '/');
const { Client } = requireSdk('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { UnauthorizedError } = requireSdk('@modelcontextprotocol/sdk/client/auth.js');

const children = [];
function stopAll() {
  for (const c of children) {
    try { c.kill('SIGKILL'); } catch (_) { /* already gone */ }
  }
}

function wait(ms) { return new Promise((r) => setTimeout(r, ms)); }

// The authorization server: its port, once it wrote it.
async function startAuthorizationServer() {
  fs.mkdirSync(workDir, { recursive: true });
  const portFile = path.join(workDir, 'as.port');
  fs.rmSync(portFile, { force: true });
  const as = spawn('python3', [oauthServer, '--port-file', portFile, '--log', path.join(workDir, 'as.log'),
    '--introspection-client', 'bank-rs:bank-rs-secret', '--subject', 'alice'], { stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(as);
  for (let i = 0; i < 200; ++i) {
    if (fs.existsSync(portFile)) {
      const text = fs.readFileSync(portFile, 'utf8').trim();
      if (text) return Number(text);
    }
    await wait(50);
  }
  throw new Error('the authorization server wrote no port within 10 s');
}

// Starts `program` (kept in `children`, stopped at the end); resolves with its port, its first line on stdout,
// within `seconds`.
function startListening(what, program, args, stdin, seconds) {
  const child = spawn(program, args, { stdio: [stdin, 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the ${what} printed no port within ${seconds} s`)), seconds * 1000);
    child.on('exit', (code) => reject(new Error(`the ${what} exited (${code}) before printing its port`)));
    readline.createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve(Number(line));
    });
  });
}

// The bank as a resource server of `issuer`; resolves with its port.
function startBank(issuer) {
  return startListening('bank', bankServer, ['--http', '--authorization', 'http://127.0.0.1:{port}/mcp', issuer,
    issuer + '/introspect', 'bank-rs', 'bank-rs-secret'], 'pipe', 10);
}

// A port free on 127.0.0.1 a moment ago (the gateway's resource URI names its port before it listens).
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = require('node:net').createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// The gateway in front of the bank (stdio, trusted), as a resource server of `issuer` by introspection, with
// scopes derived from the tools' effects; resolves with its port.
async function startGateway(issuer) {
  const port = await freePort();
  const config = path.join(workDir, 'gateway.json');
  fs.writeFileSync(config, JSON.stringify({
    mcpServers: { bank: { command: bankServer, trust: 'trusted' } },
    gateway: {
      audit: path.join(workDir, 'audit.jsonl'),
      http: {
        authorization: {
          resource: `http://127.0.0.1:${port}/mcp`, scopes: 'effects',
          introspection: { endpoint: issuer + '/introspect', client_id: 'bank-rs', client_secret: 'bank-rs-secret', issuer },
        },
      },
    },
  }));
  return startListening('gateway', gatewayProgram, ['--config', config, '--listen', `127.0.0.1:${port}`], 'ignore', 20);
}

// GET /metrics of the server at `mcpUrl`, with `token` or none: its status, and its body when 200.
async function metrics(mcpUrl, token) {
  const r = await fetch(new URL('/metrics', mcpUrl), { headers: token ? { Authorization: 'Bearer ' + token } : {} });
  return { status: r.status, body: r.status === 200 ? await r.text() : '' };
}

// An OAuthClientProvider kept in memory: what a host application would persist.
function memoryProvider(seen) {
  let clientInformation;
  let tokens;
  let codeVerifier;
  return {
    get redirectUrl() { return 'http://127.0.0.1:1/callback'; },
    get clientMetadata() {
      return { client_name: 'tool_effects oauth test', redirect_uris: ['http://127.0.0.1:1/callback'],
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
        token_endpoint_auth_method: 'none' };
    },
    clientInformation() { return clientInformation; },
    saveClientInformation(info) { clientInformation = info; seen.registered = Boolean(info.client_id); },
    tokens() { return tokens; },
    saveTokens(t) { tokens = t; seen.token_scope = t.scope || ''; },
    saveCodeVerifier(v) { codeVerifier = v; },
    codeVerifier() { return codeVerifier; },
    // The user agent: the authorization server approves at once and redirects with the code.
    async redirectToAuthorization(url) {
      seen.authorization_resource = url.searchParams.get('resource');
      seen.authorization_scope = url.searchParams.get('scope');
      seen.pkce = url.searchParams.get('code_challenge_method');
      const r = await fetch(url, { redirect: 'manual' });
      const location = new URL(r.headers.get('location'));
      seen.code = location.searchParams.get('code');
    },
  };
}

function text(result) {
  return result.content && result.content[0] && result.content[0].text;
}

async function main() {
  const asPort = await startAuthorizationServer();
  const issuer = `http://127.0.0.1:${asPort}/as`;
  const bankPort = gatewayProgram ? await startGateway(issuer) : await startBank(issuer);
  const mcpUrl = new URL(`http://127.0.0.1:${bankPort}/mcp`);
  const out = { resource: mcpUrl.href };
  if (scenario === 'no_token') {
    const client = new Client({ name: 'no-token', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(mcpUrl));
      out.connected = true;
      out.tools = (await client.listTools()).tools.map((t) => t.name);
    } catch (e) {
      out.connected = false;
      out.error = String(e && e.message);
    }
    return out;
  }
  if (scenario !== 'flow') throw new Error('unknown scenario ' + scenario);
  const seen = {};
  const provider = memoryProvider(seen);
  const first = new Client({ name: 'oauth-flow', version: '1.0.0' });
  const firstTransport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  try {
    await first.connect(firstTransport);
    out.first_connect = 'connected without a token';
  } catch (e) {
    out.first_connect = e instanceof UnauthorizedError ? 'unauthorized' : 'error: ' + String(e && e.message);
  }
  if (!seen.code) throw new Error('the SDK did not reach the authorization endpoint: ' + JSON.stringify(out));
  await firstTransport.finishAuth(seen.code);
  const client = new Client({ name: 'oauth-flow', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.add = JSON.parse(text(await client.callTool({ name: 'add_to_balance', arguments: { acct: 'alice', amount: 5 } })));
  out.balance = JSON.parse(text(await client.callTool({ name: 'get_balance', arguments: { acct: 'alice' } })));
  await client.close();
  if (gatewayProgram) {
    out.metrics_without_token = (await metrics(mcpUrl, '')).status;
    const m = await metrics(mcpUrl, provider.tokens().access_token);
    out.metrics_with_token = m.status;
    out.metrics_add_ok = (m.body.match(/^tool_effects_gateway_calls_total\{server="bank",tool="add_to_balance",outcome="ok"\} (\d+)$/m) || [])[1];
    out.audit = fs.readFileSync(path.join(workDir, 'audit.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  }
  Object.assign(out, { registered: seen.registered, pkce: seen.pkce, authorization_resource: seen.authorization_resource,
    authorization_scope: seen.authorization_scope, token_scope: seen.token_scope });
  return out;
}

const deadline = setTimeout(() => {
  process.stdout.write(JSON.stringify({ failed: 'the scenario took more than 60 s' }) + '\n');
  stopAll();
  process.exit(1);
}, 60000);
main().then((out) => {
  process.stdout.write(JSON.stringify(out) + '\n');
}, (e) => {
  process.stdout.write(JSON.stringify({ failed: String(e && e.stack || e) }) + '\n');
  process.exitCode = 1;
}).finally(() => {
  clearTimeout(deadline);
  stopAll();
});
