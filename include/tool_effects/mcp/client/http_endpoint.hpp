// tool_effects/mcp/client/http_endpoint.hpp: where an MCP server is reached over Streamable HTTP, and how
// (`mcp_http_endpoint`), for <tool_effects/mcp/http.hpp> and the client's HTTP transport.
#ifndef TOOL_EFFECTS_MCP_CLIENT_HTTP_ENDPOINT_HPP
#define TOOL_EFFECTS_MCP_CLIENT_HTTP_ENDPOINT_HPP

#include <tool_effects/detail/config.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include <tool_effects/mcp/oauth.hpp>

namespace tool_effects {

/// Where an MCP server is reached over Streamable HTTP, and how.
struct mcp_http_endpoint {
  /// The MCP endpoint, "http://host[:port][/path]" (port 80 when absent), or
  /// "https://..." (443) in a build with TOOL_EFFECTS_MCP_TLS=1 (OpenSSL;
  /// the server's certificate is verified, its name checked).
  std::string url;
  /// https: the CA certificates (PEM) the server's must chain to; empty:
  /// the system's.
  std::string tls_ca_file{};
  /// Headers sent with every request (e.g. a bearer token); never quoted in
  /// errors or logs.
  std::map<std::string, std::string> headers{};
  /// After initialize, open the GET stream for the server's own requests and
  /// notifications (a server without one answers 405: none is kept open).
  /// Legacy versions only: 2026-07-28 has no GET stream.
  bool open_get_stream = true;
  /// Time limit of connecting and sending one request (the response of a
  /// request is bounded by the request's own timeout).
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(10);
  /// Connections kept open between requests for reuse, each for at most 2 s
  /// (under servers' keep-alive timeouts). Requests in flight beyond it
  /// still run, on connections opened for them and closed after; size it to
  /// the concurrency the client runs at (docs/mcp-client.md, "Connections").
  std::size_t max_idle_connections = 32;
  /// Resumptions (or GET-stream reconnections) in a row that delivered no
  /// message, before the stream is given up (its request fails with
  /// server_exited); a blank line, a priming event or a comment is no
  /// message. 2026-07-28: also the reopenings in a row of the client's
  /// `subscriptions/listen` that the server did not acknowledge (then it is
  /// given up, a warning to `on_log`), with the backoff below.
  std::size_t max_reconnects = 8;
  /// Delay before a resumption when the server sent no SSE `retry`. The
  /// delay (a server's `retry` or this) is at least 100 ms and at most
  /// `max_retry`, and doubles with each reconnection in a row that
  /// delivered no message (docs/mcp-security.md, "Transport bounds").
  std::chrono::milliseconds default_retry = std::chrono::milliseconds(1000);
  std::chrono::milliseconds max_retry = std::chrono::seconds(30);
  /// OAuth 2.1 (mcp/oauth.hpp): when set, a 401 (or 403 insufficient_scope) makes the client authorize
  /// itself and send the request again; without it such a request fails with protocol_error.
  std::optional<mcp_oauth_options> authorization{};
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_CLIENT_HTTP_ENDPOINT_HPP
