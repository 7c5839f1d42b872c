// tool_effects/mcp/host.hpp — internal to <tool_effects/mcp.hpp>: every tool
// of an MCP server registered with a `json_tool_host` in one call.
//
//   auto overlay = tool_effects::parse_manifest(tool_effects::mcp_filesystem_overlay);
//   tool_effects::add_mcp_server(host, client, tool_effects::server_trust::trusted, overlay);
//   auto outcomes = host.run(pool, options.with(te::retry_policy{.is_transient = te::mcp_transient()}), calls);
//
// Annotations give the flags (with the trust given: an untrusted server's
// tools stay unknown, i.e. exclusive), an overlay (the manifest format of
// docs/runtime.md) gives the scope: resources and a target argument, so
// writes to different files run in parallel and writes to one file serialise.
#ifndef TOOL_EFFECTS_MCP_HOST_HPP
#define TOOL_EFFECTS_MCP_HOST_HPP

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/json.hpp>
#include <tool_effects/mcp/client.hpp>

namespace tool_effects {

/// The overlay for `@modelcontextprotocol/server-filesystem` (manifest
/// format): every tool touches resource `fs`; tools on one file name it with
/// target argument `path`, so they conflict only on the same path. Tools on
/// directories (create_directory, listings, search, move_file with two paths)
/// hold the whole of `fs`, so they order against every write. Paths are
/// compared as strings: calls should use one spelling per file.
inline constexpr std::string_view mcp_filesystem_overlay = R"({"version": 1, "tools": [
  {"name": "read_file",                 "reads":  ["fs"], "identity": {"target_arg": "path"}},
  {"name": "read_text_file",            "reads":  ["fs"], "identity": {"target_arg": "path"}},
  {"name": "read_media_file",           "reads":  ["fs"], "identity": {"target_arg": "path"}},
  {"name": "get_file_info",             "reads":  ["fs"], "identity": {"target_arg": "path"}},
  {"name": "read_multiple_files",       "reads":  ["fs"]},
  {"name": "list_directory",            "reads":  ["fs"]},
  {"name": "list_directory_with_sizes", "reads":  ["fs"]},
  {"name": "directory_tree",            "reads":  ["fs"]},
  {"name": "search_files",              "reads":  ["fs"]},
  {"name": "list_allowed_directories",  "reads":  ["fs"]},
  {"name": "write_file",                "writes": ["fs"], "identity": {"target_arg": "path"}},
  {"name": "edit_file",                 "writes": ["fs"], "identity": {"target_arg": "path"}},
  {"name": "create_directory",          "writes": ["fs"]},
  {"name": "move_file",                 "writes": ["fs"]}
]})";

/// The dynamic tool of one server tool: the annotations of `tool` imported
/// with trust `t` give the flags; `overlay` (if any, same name) adds its
/// scoped resources, its own flags and its identity policy. An overlay is
/// your declaration: on an untrusted server its flags are the only ones.
inline dynamic_tool merge_mcp_overlay(const nlohmann::json& tool, server_trust t, const dynamic_tool* overlay) {
  dynamic_tool d = import_mcp_tool(tool, t);
  if (!overlay) return d;
  std::vector<runtime_access> scoped;
  for (const auto& a : overlay->description.accesses)
    if (!a.resource.empty()) scoped.push_back(a);
  effect_set flags = d.description.exclusive ? effect_set{} : d.description.effects;
  if (!overlay->description.exclusive)
    for (const effect e : overlay->description.effects) flags.insert(e);
  d.description = describe_runtime(d.name, flags, std::move(scoped));
  d.identity = overlay->identity;
  return d;
}

/// The dynamic tools of a server's tools/list result (`{"tools": [...]}`),
/// refined by `overlay`. Throws `std::invalid_argument` when the overlay
/// names a tool the server does not have (naming it and the server), and
/// `json_error` for a malformed list.
inline std::vector<dynamic_tool> mcp_server_tools(const nlohmann::json& list_result, server_trust t,
                                                  std::span<const dynamic_tool> overlay = {},
                                                  std::string_view server = "server") {
  (void)import_mcp_tools(list_result, t);  // validates the whole list first
  const auto& tools = list_result.at("tools");
  for (const auto& o : overlay) {
    bool found = false;
    for (const auto& tool : tools) found = found || tool.at("name") == o.name;
    if (!found) {
      std::string m = "mcp overlay: tool \"";
      m += o.name;
      m += "\" is not a tool of MCP server \"";
      m += server;
      m += "\"";
      throw std::invalid_argument(m);
    }
  }
  std::vector<dynamic_tool> out;
  out.reserve(tools.size());
  for (const auto& tool : tools) {
    const dynamic_tool* match = nullptr;
    for (const auto& o : overlay)
      if (tool.at("name") == o.name) match = &o;
    out.push_back(merge_mcp_overlay(tool, t, match));
  }
  return out;
}

/// Registers every tool of `client`'s server with `host` (its tools/list,
/// every page, fetched now): annotations imported with trust `t`, refined
/// by `overlay`. Each call of a registered tool becomes a tools/call on
/// `client` (a shared handle, kept by the host's functions); `isError: true`
/// fails the call with `mcp_tool_error`, connection faults with
/// `mcp_transient_error` (retry with `retry_policy{.is_transient =
/// mcp_transient()}`). The call's result is the MCP result object, with its
/// `content` and `structuredContent`. Returns the tools' indices in the host.
/// Blocking (see `mcp_client`); throws as `mcp_server_tools` and the client.
template <class Host>
std::vector<std::size_t> add_mcp_server(Host& host, const mcp_client& client, server_trust t,
                                        std::span<const dynamic_tool> overlay = {}) {
  mcp_client c = client;
  const nlohmann::json list = c.list_tools();
  std::vector<std::size_t> indices;
  for (auto& tool : mcp_server_tools(list, t, overlay, c.name())) {
    std::string name = tool.name;
    indices.push_back(host.add(std::move(tool), json_async_tool_function(
                                                    [c, name](const attempt_context&, const nlohmann::json& args) mutable {
                                                      return c.async_call(name, args);
                                                    })));
  }
  return indices;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_HOST_HPP
