// tool_effects/mcp/server/detail/methods.hpp — internal to <tool_effects/mcp/server.hpp>: the shape of the
// server's one method table (mcp_server::methods(), the TypeScript SDK's setRequestHandler in one place): for
// each method, the eras it is served in, whether it needs the catalog (resources, prompts), whether a modern
// result carries caching hints, and its handler. mcp_server::bind registers every row on a session, and
// mcp_server::handle_request serves a request by its row, whatever the transport.
#ifndef TOOL_EFFECTS_MCP_SERVER_DETAIL_METHODS_HPP
#define TOOL_EFFECTS_MCP_SERVER_DETAIL_METHODS_HPP

#include <cstdint>
#include <span>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/mcp/server/request.hpp>

namespace tool_effects::detail {

// The eras a method is served in: before 2026-07-28 (a session, after initialize) and in it (per request).
enum class mcp_eras : std::uint8_t { legacy = 1, modern = 2, both = 3 };
constexpr bool mcp_serves(mcp_eras eras, bool modern) noexcept {
  return (static_cast<std::uint8_t>(eras) & (modern ? 2 : 1)) != 0;
}

// One row of a server's method table.
template <class Server>
struct mcp_method {
  std::string_view name;
  mcp_eras eras;
  bool catalog;    // served only while the catalog has something of the kind (mcp_catalog::serves)
  bool cacheable;  // a modern result gets the caching hints (mcp_mark_modern_result)
  bool early;      // served on a legacy session before initialize (initialize, ping)
  boost::asio::awaitable<nlohmann::json> (Server::*handler)(nlohmann::json params, mcp_server_request request);
};

// The row of `method` in `table`, or null.
template <class Server>
const mcp_method<Server>* mcp_find_method(std::span<const mcp_method<Server>> table, std::string_view method) {
  for (const auto& m : table)
    if (m.name == method) return &m;
  return nullptr;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_SERVER_DETAIL_METHODS_HPP
