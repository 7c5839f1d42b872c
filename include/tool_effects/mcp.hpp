// tool_effects/mcp.hpp — the optional MCP component (CMake target
// tool_effects::mcp: nlohmann::json, Boost.Asio, Boost.Process v2): a client
// of MCP servers over stdio (the child process's transport:
// mcp/transport/detail/stdio_child.hpp) and the bridge that registers a server's tools
// with a `json_tool_host`. See docs/mcp-client.md ("The client").
//
//   boost::asio::thread_pool pool(2);  // docs/mcp-client.md, "Pool size"
//   auto client = te::mcp_client::launch(pool, {"node", fs_server_js, "/workspace"});
//   te::tool_registry<> registry;
//   te::json_tool_host host(registry);
//   te::add_mcp_server(host, client, te::server_trust::trusted, te::parse_manifest(te::mcp_filesystem_overlay));
//   auto outcomes = host.run(pool, options, te::parse_tool_calls(model_output));
//
// With TOOL_EFFECTS_SEPARATE_COMPILATION (CMake: link tool_effects::mcp_compiled) this header declares the
// client only; the session, the transports and Boost.Process are compiled once, in the translation unit of
// <tool_effects/mcp/client/impl/src.hpp>. See docs/mcp-client.md ("Separate compilation").
#ifndef TOOL_EFFECTS_MCP_HPP
#define TOOL_EFFECTS_MCP_HPP

#include <tool_effects/detail/config.hpp>

#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <tool_effects/detail/executor.hpp>
#include <tool_effects/json.hpp>
#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/mcp/host.hpp>

namespace tool_effects {

template <class Executor>
mcp_client::mcp_client(Executor&& executor, std::vector<std::string> argv, mcp_client_options options)
    : state_(make_stdio_state(boost::asio::any_io_executor(detail::to_executor(std::forward<Executor>(executor))),
                              std::move(argv), std::move(options))) {}

template <class Executor>
mcp_client mcp_client::launch(Executor&& executor, std::vector<std::string> argv, mcp_client_options options) {
  mcp_client c(std::forward<Executor>(executor), std::move(argv), std::move(options));
  c.start();
  return c;
}

}  // namespace tool_effects

#if TOOL_EFFECTS_HEADER_ONLY
#include <tool_effects/mcp/client/impl/stdio.ipp>
#endif

#endif  // TOOL_EFFECTS_MCP_HPP
