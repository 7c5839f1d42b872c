// tool_effects/mcp/server/http_options.hpp — the bounds and policies of a server's Streamable HTTP listener
// (mcp_server::listen_http, <tool_effects/mcp/server_http.hpp>). The defaults are the ones docs/mcp-server.md
// states; docs/deploying.md says what a caller sees past each.
#ifndef TOOL_EFFECTS_MCP_SERVER_HTTP_OPTIONS_HPP
#define TOOL_EFFECTS_MCP_SERVER_HTTP_OPTIONS_HPP

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <tool_effects/mcp/auth/resource_server.hpp>

namespace tool_effects {

struct mcp_principal;  // <tool_effects/mcp/auth/principal.hpp>

/// What a route of a listener answers (`mcp_http_server_options::routes`).
struct mcp_http_route_response {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body{};
};

/// A GET route a listener serves beside its MCP endpoint (e.g. Prometheus's `/metrics`). Its requests pass the
/// endpoint's own checks first: DNS-rebinding protection and, with `authorization`, the bearer token (the
/// handler gets the caller; null without authorization). Another method gets 405; a handler that throws, 500.
/// The handler runs on the listener's I/O threads, one request at a time per connection: keep it quick and
/// thread-safe.
struct mcp_http_route {
  std::string path{};  ///< matched exactly, without the query; starts with '/', not the MCP endpoint's path
  std::function<mcp_http_route_response(const mcp_principal* caller)> handler{};
};

/// The bounds and policies of one Streamable HTTP listener.
struct mcp_http_server_options {
  /// Largest request head (request line and header fields) in bytes: past it 431 and the connection closes.
  std::size_t max_header_bytes = 16 * 1024;
  /// Largest request body in bytes: past it 413 and the connection closes.
  std::size_t max_body_bytes = std::size_t{4} << 20;
  /// Largest JSON nesting of a message: deeper is -32700 with 400.
  std::size_t max_depth = 64;
  /// Time for one whole request (head and body) to arrive, and for an idle keep-alive connection to send its
  /// next one (slowloris): past it the connection closes.
  std::chrono::milliseconds read_timeout = std::chrono::seconds(10);
  /// Time for one write to the client: past it the connection closes (an SSE stream can be resumed).
  std::chrono::milliseconds write_timeout = std::chrono::seconds(10);
  /// Open TCP connections. At the bound, a new connection takes the place of the one that has spent longest
  /// reading a request head (a slow or idle client); when every connection is busy with a request or a
  /// stream, the new one is closed at once.
  std::size_t max_connections = 256;
  /// Live sessions. At the bound, initialize ends the least recently used idle session (no open stream, no
  /// pending request) to make room; only when none is idle does it get 503 with Retry-After.
  std::size_t max_sessions = 64;
  /// Live sessions of one principal (with `authorization`): past it, its own least recently used idle session
  /// goes, else 503. Without authorization callers are not told apart and only `max_sessions` holds.
  std::size_t max_sessions_per_principal = 16;
  /// A session with no open stream and no pending request for this long is ended at the next initialize.
  std::chrono::milliseconds session_idle_timeout = std::chrono::minutes(10);
  /// Requests of one session (or, for stateless requests, of one principal; without authorization, of all
  /// stateless requests) not yet answered: past it 429.
  std::size_t max_pending_requests = 64;
  /// GET streams open at once per session: past it 429.
  std::size_t max_get_streams = 4;
  /// Memory held by the requests in flight, as estimated while their bodies are read (the body, and what its
  /// values cost parsed): past it a request gets 503 with Retry-After, and a single request costing more is
  /// refused with 413.
  std::size_t max_bytes_in_flight = std::size_t{256} << 20;
  /// Events kept per stream for resumption with Last-Event-ID (the oldest are dropped first).
  std::size_t max_kept_events = 256;
  /// Bytes of events kept per stream (the oldest are dropped first).
  std::size_t max_kept_bytes = std::size_t{4} << 20;
  /// Finished streams of a session kept for resumption (the oldest are dropped first).
  std::size_t max_kept_streams = 16;
  /// Messages for a session without a GET stream kept until one opens (the oldest are dropped first).
  std::size_t max_backlog = 64;
  /// Events waiting to be written to one connection: past it the connection is closed (a client that does not
  /// read; it may resume the stream).
  std::size_t max_queued_bytes = std::size_t{8} << 20;
  /// The SSE `retry` field (ms) of every priming event.
  std::chrono::milliseconds sse_retry = std::chrono::milliseconds(500);
  /// DNS-rebinding protection: when set, Host must name a loopback host ("localhost", "127.0.0.1", "[::1]", any
  /// port) or one of `allowed_hosts`, and Origin, when present, a loopback origin or one of `allowed_origins`;
  /// else 403. Unset: on when the server listens on a loopback address, off otherwise.
  std::optional<bool> dns_rebinding_protection{};
  std::vector<std::string> allowed_hosts{};    ///< e.g. "mcp.example.com" (no port)
  std::vector<std::string> allowed_origins{};  ///< e.g. "https://app.example.com"
  /// Answer every request as an SSE stream, even when its response is the first message (default: JSON then).
  bool always_sse = false;
  /// https: the listener's certificate chain and key (PEM files); with `client_ca_file`, clients must present a
  /// certificate of that CA (mutual TLS). Unset: plain HTTP (put a TLS proxy in front, or listen on loopback).
  /// Needs a build with TLS (OpenSSL: TOOL_EFFECTS_MCP_TLS); without it listen_http throws net_error("tls_unavailable").
  struct tls_files {
    std::string cert_file;
    std::string key_file;
    std::string client_ca_file{};
  };
  std::optional<tls_files> tls{};
  /// OAuth 2.1 resource server (mcp/auth/resource_server.hpp): off when unset. Set, every request to the
  /// endpoint needs a bearer token issued for `authorization->resource`.
  std::optional<mcp_resource_server> authorization{};
  /// Further GET routes beside the MCP endpoint (none by default). `listen` refuses a path that does not start
  /// with '/', repeats, or is the endpoint's or its protected-resource metadata's.
  std::vector<mcp_http_route> routes{};
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_SERVER_HTTP_OPTIONS_HPP
