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
#include <tool_effects/mcp/client/http_endpoint.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/oauth.hpp>

namespace tool_effects {


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
