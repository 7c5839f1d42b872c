// tool_effects/mcp.hpp — the optional MCP component (CMake target
// tool_effects::mcp: nlohmann::json, Boost.Asio, Boost.Process v2): a client
// of MCP servers over stdio (the child process's transport:
// mcp/detail/stdio_child_transport.hpp) and the bridge that registers a server's tools
// with a `json_tool_host`. See docs/mcp.md ("The client").
//
//   boost::asio::thread_pool pool(2);  // docs/mcp.md, "Pool size"
//   auto client = te::mcp_client::launch(pool, {"node", fs_server_js, "/workspace"});
//   te::tool_registry<> registry;
//   te::json_tool_host host(registry);
//   te::add_mcp_server(host, client, te::server_trust::trusted, te::parse_manifest(te::mcp_filesystem_overlay));
//   auto outcomes = host.run(pool, options, te::parse_tool_calls(model_output));
#ifndef TOOL_EFFECTS_MCP_HPP
#define TOOL_EFFECTS_MCP_HPP

#include <tool_effects/json.hpp>
#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/detail/stdio_child_transport.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/mcp/host.hpp>

#endif  // TOOL_EFFECTS_MCP_HPP
