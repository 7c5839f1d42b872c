// The server both clients of the side-by-side benchmark call (scripts/bench-mcp-vs-ts): the official
// TypeScript SDK's low-level Server (no schema library on the call path, so the server costs as little as it
// can), over stdio or Streamable HTTP. With --mcp-server, the SDK's high-level McpServer instead (tools
// registered with zod input schemas, as its users write them): the server side of the benchmark compares it
// with this project's mcp_server (server.cpp).
//
//   node server.mjs [--mcp-server]                  stdio (newline-delimited JSON-RPC on stdin/stdout)
//   node server.mjs [--mcp-server] --http PORT      Streamable HTTP on 127.0.0.1:PORT/mcp (one transport per
//                                    session, SSE or JSON responses as the SDK's StreamableHTTPServerTransport
//                                    sends them)
//
// Tools (read-only, idempotent, closed-world: a trusted client may run them in parallel):
//   echo {message}  -> the message as text content (a small call)
//   blob {bytes}    -> one text content of `bytes` ASCII characters (a large result; cached per size)
import { randomUUID } from "node:crypto";
import http from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const annotations = { readOnlyHint: true, idempotentHint: true, openWorldHint: false };
const tools = [
  {
    name: "echo",
    description: "Returns its message.",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
    annotations,
  },
  {
    name: "blob",
    description: "Returns `bytes` characters of text.",
    inputSchema: { type: "object", properties: { bytes: { type: "integer" } }, required: ["bytes"] },
    annotations,
  },
];

const blobs = new Map();
function blob(bytes) {
  const n = Math.max(0, Math.min(Number(bytes) | 0, 64 << 20));
  let s = blobs.get(n);
  if (s === undefined) {
    const line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.\n";
    s = line.repeat(Math.ceil(n / line.length)).slice(0, n);
    blobs.set(n, s);
  }
  return s;
}

// The high-level McpServer, serving the same tools.
function makeMcpServer() {
  const server = new McpServer({ name: "bench-server", version: "1.0.0" });
  server.registerTool("echo", { description: tools[0].description, inputSchema: { message: z.string() }, annotations },
                      async ({ message }) => ({ content: [{ type: "text", text: message }] }));
  server.registerTool("blob", { description: tools[1].description, inputSchema: { bytes: z.number().int() }, annotations },
                      async ({ bytes }) => ({ content: [{ type: "text", text: blob(bytes) }] }));
  return server;
}

function makeServer() {
  if (process.argv.includes("--mcp-server")) return makeMcpServer();
  const server = new Server({ name: "bench-server", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args = {} } = request.params;
    if (name === "echo") return { content: [{ type: "text", text: String(args.message ?? "") }] };
    if (name === "blob") return { content: [{ type: "text", text: blob(args.bytes) }] };
    return { content: [{ type: "text", text: `unknown tool ${name}` }], isError: true };
  });
  return server;
}

const i = process.argv.indexOf("--http");
if (i < 0) {
  await makeServer().connect(new StdioServerTransport());
} else {
  const port = Number(process.argv[i + 1]);
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      if (!req.url.startsWith("/mcp")) {
        res.writeHead(404).end();
        return;
      }
      const sid = req.headers["mcp-session-id"];
      let transport = sid ? sessions.get(sid) : undefined;
      if (!transport) {
        if (sid || req.method !== "POST") {
          res.writeHead(sid ? 404 : 400, { "content-type": "application/json" });
          res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "no such session" }, id: null }));
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await makeServer().connect(transport);
      }
      await transport.handleRequest(req, res);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    }
  });
  httpServer.keepAliveTimeout = 60000;
  httpServer.listen(port, "127.0.0.1", () => process.stderr.write(`listening on ${port}\n`));
}
