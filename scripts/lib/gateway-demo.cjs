// The gateway demo (./scripts/demo --gateway): two clients (the official TypeScript SDK's Client, each its own
// Streamable HTTP session) through tool-effects-gateway in front of @modelcontextprotocol/server-filesystem and
// server-memory from npm. It shows the hints the gateway publishes and where they came from, a conflict between
// the two clients serialised (server-memory's add_observations is a read-modify-write of its file: straight to
// the server, concurrent calls lose observations), and an approval asked of the user by elicitation.
//
//   node gateway-demo.cjs <node_modules> <gateway url> <audit log> <workspace> <memory file for the control>
'use strict';
const { createRequire } = require('node:module');
const fs = require('node:fs');
const path = require('node:path');
const [modulesArg, url, audit, workspace, controlMemory] = process.argv.slice(2);
const modules = path.resolve(modulesArg);
const requireSdk = createRequire(modules + '/');
const { Client } = requireSdk('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ElicitRequestSchema } = requireSdk('@modelcontextprotocol/sdk/types.js');

const say = (s = '') => process.stdout.write(s + '\n');
const text = (r) => (r.content || []).map((c) => c.text || '').join(' ');

async function client(name, answer) {
  const c = new Client({ name, version: '1.0.0' }, { capabilities: answer ? { elicitation: {} } : {} });
  if (answer)
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
      say(`   [${name} is asked] ${req.params.message}`);
      say(`   [${name} answers] ${answer}`);
      return answer === 'yes' ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
    });
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  return c;
}
const addObservations = (c, who, n) => Promise.all(Array.from({ length: n }, (_, i) => c.callTool({
  name: 'add_observations', arguments: { observations: [{ entityName: 'release', contents: [`${who} note ${i}`] }] } })));
async function observations(c) {
  const g = await c.callTool({ name: 'open_nodes', arguments: { names: ['release'] } });
  const graph = g.structuredContent || JSON.parse(text(g));
  return graph.entities.length ? graph.entities[0].observations.length : 0;
}

async function main() {
  const alice = await client('alice', 'yes');
  const bob = await client('bob', null);

  say('1. The hints the gateway publishes (tools/list through it), and where each tool\'s effects came from');
  say('');
  say('   tool                       readOnly destructive idempotent  effects from     server said readOnly');
  for (const t of (await alice.listTools()).tools) {
    const a = t.annotations || {};
    const p = (t._meta || {})['io.github.tool-effects/provenance'] || {};
    const claimed = p.server_annotations && 'readOnlyHint' in p.server_annotations ? String(p.server_annotations.readOnlyHint) : '-';
    say(`   ${t.name.padEnd(26)} ${String(a.readOnlyHint).padEnd(8)} ${String(a.destructiveHint).padEnd(11)} ` +
        `${String(a.idempotentHint).padEnd(11)} ${String(p.source).padEnd(16)} ${claimed}`);
  }

  say('');
  say('2. A conflict serialised across clients: alice and bob each add 10 observations to one entity, all at once');
  await alice.callTool({ name: 'create_entities', arguments: { entities: [{ name: 'release', entityType: 'doc', observations: [] }] } });
  await Promise.all([addObservations(alice, 'alice', 10), addObservations(bob, 'bob', 10)]);
  say(`   through the gateway: ${await observations(bob)} of 20 observations kept`);
  const waits = fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    .filter((r) => r.tool === 'add_observations' && r.waited_for && r.waited_for.length);
  if (waits.length)
    say(`   ${waits.length} of the 20 calls waited for another (audit log: waited_for ${JSON.stringify(waits[0].waited_for[0])})`);
  // The control: the same 20 calls straight to server-memory (one client, no gateway).
  const direct = new Client({ name: 'direct', version: '1.0.0' });
  await direct.connect(new StdioClientTransport({
    command: 'node', args: [path.join(modules, '@modelcontextprotocol/server-memory/dist/index.js')],
    env: { ...process.env, MEMORY_FILE_PATH: controlMemory }, stderr: 'ignore' }));
  await direct.callTool({ name: 'create_entities', arguments: { entities: [{ name: 'release', entityType: 'doc', observations: [] }] } });
  await Promise.all([addObservations(direct, 'alice', 10), addObservations(direct, 'bob', 10)]);
  say(`   straight to server-memory, the same 20 calls at once: ${await observations(direct)} of 20 kept`);
  await direct.close();

  say('');
  say('3. An approval: write_file is destructive (an overwrite), so the gateway asks the user at the client');
  const w = await alice.callTool({ name: 'write_file', arguments: { path: path.join(workspace, 'notes.md'), content: 'approved\n' } });
  say(`   alice: ${w.isError ? 'refused' : 'ran'}: ${text(w).slice(0, 120)}`);
  const m = await bob.callTool({ name: 'write_file', arguments: { path: path.join(workspace, 'other.md'), content: 'x\n' } });
  say(`   bob (a client that cannot be asked): ${m.isError ? 'refused' : 'ran'}: ${text(m).slice(0, 160)}`);
  say(`   in the workspace: ${fs.readdirSync(workspace).filter((f) => f.endsWith('.md')).join(', ')}`);
  const approvals = fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    .filter((r) => r.tool === 'write_file');
  for (const r of approvals)
    say(`   audit: ${JSON.stringify({ tool: r.tool, effects: r.effects, effects_from: r.effects_from, approval: r.approval, outcome: r.outcome })}`);
  await alice.close();
  await bob.close();
}

main().catch((e) => { console.error(e); process.exitCode = 1; });
