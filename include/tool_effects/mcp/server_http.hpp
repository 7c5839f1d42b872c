// tool_effects/mcp/server_http.hpp — mcp_server over Streamable HTTP (specification 2025-03-26 through
// 2026-07-28, basic/transports), on Boost.Beast: `mcp_server::listen_http`. Its own header, so that stdio servers
// do not compile Beast. See docs/mcp-server.md ("The server over HTTP"), which states every bound of
// `mcp_http_server_options` (mcp/server/http_options.hpp).
//
//   te::mcp_server server(pool, host);
//   unsigned short port = server.listen_http("127.0.0.1", 0, "/mcp");  // 0 picks a free port
//
// One endpoint path. POST carries one JSON-RPC message: a notification or a response is answered 202; a request
// is answered as JSON when its response is the first thing the server sends for it, else as an SSE stream that
// starts with a priming event (an id, a `retry` field, empty data). GET opens an SSE stream for the server's own
// messages (several at once), or resumes a stream with `Last-Event-ID`; DELETE ends a session. 2025-era clients
// get a session (`Mcp-Session-Id`, given with the initialize response); a request that says
// `MCP-Protocol-Version: 2026-07-28` without a session is served statelessly (`Mcp-Method` and `Mcp-Name` are
// checked against the body: -32020 with 400). Each session, and each stateless request, is a transport of its
// own protocol session, served by the same route as stdio's one session (mcp/transport/detail/http_server.hpp).
// `Host` and `Origin` are checked against loopback names by default when the server listens on a loopback
// address (DNS rebinding). Every read is bounded in size and time, and sessions, streams, pending requests and
// kept events are bounded in number; a bad request fails alone.
#ifndef TOOL_EFFECTS_MCP_SERVER_HTTP_HPP
#define TOOL_EFFECTS_MCP_SERVER_HTTP_HPP

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server/http_options.hpp>
#include <tool_effects/mcp/transport/detail/http_server_handle.hpp>

namespace tool_effects {

template <class Host, class Options>
unsigned short mcp_server<Host, Options>::listen_http(std::string_view address, unsigned short port,
                                                      std::string_view path, mcp_http_server_options options) {
  if (!io_) io_ = std::make_unique<io_thread>();
  detail::mcp_listener_hooks hooks;
  hooks.make_session = [this](const detail::mcp_strand& strand) {
    auto s = std::make_shared<detail::mcp_session>(strand, session_settings("HTTP client"));
    bind(*s);
    return s;
  };
  if (options.authorization && options.authorization->tool_scopes)
    hooks.scopes = [this, policy = options.authorization->tool_scopes](
                       const std::string& method, const nlohmann::json& params) -> std::vector<std::string> {
      if (method != "tools/call" || !params.is_object()) return {};
      const auto name = params.find("name");
      if (name == params.end() || !name->is_string()) return {};
      const auto i = host_->registry().index_of(name->get_ref<const std::string&>());
      if (!i) return {};  // the call fails as an unknown tool
      return policy(name->get_ref<const std::string&>(), host_->registry().description(*i));
    };
  hooks.verify_executor = executor_;  // a verifier may block: the application's threads, not the listener's
  auto core =
      std::make_shared<detail::mcp_http_server_core>(io_->io.get_executor(), std::move(hooks), std::move(options));
  const unsigned short bound = core->listen(std::string(address), port, std::string(path));
  listeners_.push_back(std::shared_ptr<void>(nullptr, [core](void*) { core->close(); }));
  return bound;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_SERVER_HTTP_HPP
