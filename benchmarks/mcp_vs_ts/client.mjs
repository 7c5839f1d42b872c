// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json) in the side-by-side
// benchmark (scripts/bench-mcp-vs-ts). Same protocol work as bench_mcp_vs_ts_client: connect, list tools,
// warm up, then `batches` batches of `concurrency` tools/call in flight at once (Promise.all), each batch
// waiting for the last. Prints one JSON line: calls, result bytes, wall seconds, this process's CPU seconds
// (process.cpuUsage: user + system, the server excluded: it is another process) over the timed part, peak RSS
// (VmHWM).
//
//   node client.mjs --transport stdio --server "node server.mjs" --tool blob --bytes 1048576 --concurrency 1 --calls 100
//   node client.mjs --transport http --url http://127.0.0.1:PORT/mcp --tool echo --concurrency 16 --calls 20000
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const opt = { transport: "stdio", tool: "echo", bytes: 0, concurrency: 1, calls: 1000, warmup: 50 };
for (let i = 2; i < process.argv.length; i += 2) opt[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const concurrency = Number(opt.concurrency), calls = Number(opt.calls), warmup = Number(opt.warmup);

const client = new Client({ name: "bench-ts-sdk", version: "1.0.0" });
let transport;
if (opt.transport === "stdio") {
  const [command, ...args] = opt.server.split(" ");
  transport = new StdioClientTransport({ command, args, stderr: "inherit" });
} else {
  transport = new StreamableHTTPClientTransport(new URL(opt.url));
}
await client.connect(transport);
await client.listTools();

const args = opt.tool === "blob" ? { bytes: Number(opt.bytes) } : { message: "hello, benchmark" };
const one = async () => {
  const r = await client.callTool({ name: opt.tool, arguments: args });
  if (r.isError) throw new Error(JSON.stringify(r));
  return r.content[0].text.length;
};
for (let i = 0; i < warmup; ++i) await one();

const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
let done = 0, bytes = 0;
while (done < calls) {
  const n = Math.min(concurrency, calls - done);
  const lens = await Promise.all(Array.from({ length: n }, one));
  for (const l of lens) bytes += l;
  done += n;
}
const wall = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
// VmHWM of /proc/self/status, kB (process.resourceUsage().maxRSS is getrusage's, which survives exec: it
// would report the driver's peak when that is larger).
const rss = Number(/VmHWM:\s*(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))[1]);
if (opt.transport !== "stdio" && transport.terminateSession) await transport.terminateSession().catch(() => {});
await client.close();
process.stdout.write(JSON.stringify({ client: "ts-sdk", calls: done, bytes, wall_s: wall,
  cpu_s: (cpu.user + cpu.system) / 1e6, maxrss_kb: rss }) + "\n");
process.exit(0);
