// tool_effects/mcp/http.hpp — the Streamable HTTP transport of the MCP client
// (specification 2026-07-28 and 2025-11-25, basic/transports): `mcp_client::connect`. Its
// own header, so that stdio users do not compile Boost.Beast, and HTTP users
// no Boost.Process (`mcp_client::launch` needs <tool_effects/mcp.hpp>). See docs/mcp.md
// ("The HTTP transport").
//
//   boost::asio::thread_pool pool(2);
//   auto client = tool_effects::mcp_client::connect(pool, {.url = "http://127.0.0.1:3001/mcp"});
//   nlohmann::json tools = client.list_tools();
//   nlohmann::json r = client.call("echo", {{"message", "hi"}});
//   te::add_mcp_server(host, client, te::server_trust::untrusted);  // as with a stdio client
//
// Every JSON-RPC message is one POST (`Accept: application/json,
// text/event-stream`); a response comes as JSON or as an SSE stream. With the
// default versions the client is dual-era: a 2026-07-28 server is spoken to
// statelessly (`server/discover` first; `MCP-Protocol-Version`, `Mcp-Method`
// and `Mcp-Name` headers on every POST; no session, GET stream or DELETE; a
// timeout closes the request's stream), an older one falls back to
// initialize. Then the `Mcp-Session-Id` the server gives at initialize and
// the negotiated `MCP-Protocol-Version` go on every later request; connect()
// returns once `notifications/initialized` was accepted; a GET stream carries
// the server's own messages; an SSE stream that ends before its response is
// resumed with `Last-Event-ID` after the server's `retry`; close() DELETEs the
// session. Faults end as on stdio: timeouts, refused or reset connections,
// garbage, oversized or too deep bodies are `mcp_error`s of the same kinds
// (docs/mcp.md). https needs a build with TOOL_EFFECTS_MCP_TLS=1 and
// OpenSSL (linked by the application); without it such a URL fails with
// launch_failed. With TOOL_EFFECTS_SEPARATE_COMPILATION (CMake: link
// tool_effects::mcp_compiled) the transport and Beast are compiled once, in
// the translation unit of <tool_effects/mcp/client/impl/src.hpp>.
#ifndef TOOL_EFFECTS_MCP_HTTP_HPP
#define TOOL_EFFECTS_MCP_HTTP_HPP

#include <tool_effects/detail/config.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <tool_effects/detail/executor.hpp>
#include <tool_effects/json.hpp>
#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/mcp/host.hpp>
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

template <class Executor>
mcp_client mcp_client::connect(Executor&& executor, const mcp_http_endpoint& endpoint, mcp_client_options options) {
  mcp_client c(make_http_state(boost::asio::any_io_executor(detail::to_executor(std::forward<Executor>(executor))),
                               endpoint, std::move(options)));
  c.start();
  return c;
}

}  // namespace tool_effects

#if TOOL_EFFECTS_HEADER_ONLY
#include <tool_effects/mcp/client/impl/http.ipp>
#endif

#endif  // TOOL_EFFECTS_MCP_HTTP_HPP
