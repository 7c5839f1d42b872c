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
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/json.hpp>
#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/tool_meta.hpp>

namespace tool_effects {

/// The overlay for `@modelcontextprotocol/server-filesystem` (manifest
/// format): every tool touches resource `fs`; tools on one file name it with
/// target argument `path`, so they conflict only on the same path. Tools on
/// directories (create_directory, listings, search, move_file with two paths)
/// hold the whole of `fs`, so they order against every write. Paths are
/// compared as strings: calls should use one spelling per file. An overlay
/// entry replaces the annotations, so each entry also states the flags the
/// server's own annotations give (destructive, idempotent).
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
  {"name": "write_file",                "writes": ["fs"], "effects": ["destructive", "idempotent"], "identity": {"target_arg": "path"}},
  {"name": "edit_file",                 "writes": ["fs"], "effects": ["destructive"], "identity": {"target_arg": "path"}},
  {"name": "create_directory",          "writes": ["fs"], "effects": ["idempotent"]},
  {"name": "move_file",                 "writes": ["fs"], "effects": ["destructive"]}
]})";

/// The dynamic tool of one server tool. Without an overlay entry (same
/// name), the annotations of `tool` imported with trust `t` give the flags
/// (conservative: none is unknown, i.e. exclusive); from a trusted server
/// the declaration it publishes under `_meta` (`mcp_accesses_meta_key`,
/// a tool_effects server's scoped accesses and identity) replaces them, and
/// from an untrusted one it is ignored, as its hints are. With one, the entry is
/// your declaration and *replaces* them, trusted or not: its flags, its
/// scoped resources and its identity policy. An entry that declares no
/// flags or accesses at all (only an identity) keeps the imported flags.
inline dynamic_tool merge_mcp_overlay(const nlohmann::json& tool, server_trust t, const dynamic_tool* overlay) {
  dynamic_tool d = import_mcp_tool(tool, t);
  if (t == server_trust::trusted)
    if (auto published = import_mcp_accesses_meta(tool)) d = std::move(*published);
  if (!overlay) return d;
  if (!overlay->description.exclusive) {
    d.description = overlay->description;
    d.description.name = d.name;
  }
  d.identity = overlay->identity;
  return d;
}

namespace detail {
inline std::string mcp_server_label(std::string_view server) {
  std::string out = "MCP server ";
  out += detail::quote_input(server);
  return out;
}
}  // namespace detail

/// The dynamic tools of a server's tools/list result (`{"tools": [...]}`),
/// refined by `overlay`, under the server's own names. Throws
/// `std::invalid_argument` when the overlay names a tool the server does not
/// have (naming it and the server), and `json_error` for a malformed list
/// (its context names the server). Linear in tools + overlay entries.
inline std::vector<dynamic_tool> mcp_server_tools(const nlohmann::json& list_result, server_trust t,
                                                  std::span<const dynamic_tool> overlay = {},
                                                  std::string_view server = "server") {
  try {
    (void)import_mcp_tools(list_result, t);  // validates the whole list first
    if (t == server_trust::trusted)
      for (std::size_t i = 0; i < list_result.at("tools").size(); ++i) try {
          (void)import_mcp_accesses_meta(list_result.at("tools")[i]);
        } catch (const json_error& e) {
          throw json_error(detail::str_cat("/tools/", std::to_string(i), e.pointer()), e.message(), e.input());
        }
  } catch (const json_error& e) {
    throw json_error(e.pointer(), e.message(), e.input(), detail::str_cat(detail::mcp_server_label(server), " tools/list"));
  }
  const auto& tools = list_result.at("tools");
  std::unordered_map<std::string_view, const nlohmann::json*> by_name;
  by_name.reserve(tools.size());
  for (const auto& tool : tools) by_name.emplace(tool.at("name").get_ref<const std::string&>(), &tool);
  std::unordered_map<std::string_view, const dynamic_tool*> overlay_of;
  for (const auto& o : overlay) {
    if (!by_name.contains(o.name))
      throw std::invalid_argument(detail::str_cat("mcp overlay: tool ", detail::quote_input(o.name), " is not a tool of ",
                                                  detail::mcp_server_label(server)));
    overlay_of[o.name] = &o;  // the last entry of a name wins, as before
  }
  std::vector<dynamic_tool> out;
  out.reserve(tools.size());
  for (const auto& tool : tools) {
    const auto it = overlay_of.find(tool.at("name").get_ref<const std::string&>());
    out.push_back(merge_mcp_overlay(tool, t, it == overlay_of.end() ? nullptr : it->second));
  }
  return out;
}

/// How one server's tools are registered with a host (`add_mcp_server`).
/// Every tool is registered under a name qualified by the server: the host
/// records its origin (server, the server's name for the tool), which the
/// approver is shown; the name the model sees is `names[tool]` if given,
/// else `prefix` + the server's name for it. Several servers on one host:
/// give each a prefix (`mcp_naming::prefixed("fs")` makes "fs__write_file";
/// "__" keeps names within the `^[a-zA-Z0-9_-]{1,64}$` vendors accept).
struct mcp_naming {
  std::string server{};  ///< the server's name in errors and approvals (empty: the client's `name()`)
  std::string prefix{};  ///< put before each tool's name for the model
  std::map<std::string, std::string, std::less<>> names{};  ///< server tool name -> model name (overrides the prefix)

  /// Server `server`, whose tools the model sees as `server` + `separator` + name.
  static mcp_naming prefixed(std::string server, std::string_view separator = "__") {
    mcp_naming n;
    n.prefix = server;
    n.prefix += separator;
    n.server = std::move(server);
    return n;
  }
  /// The name the model sees for the server's tool `tool`.
  [[nodiscard]] std::string model_name(std::string_view tool) const {
    if (const auto it = names.find(tool); it != names.end()) return it->second;
    return detail::str_cat(prefix, tool);
  }
};

namespace detail {

// What add_mcp_server reports of one progress notification.
inline mcp_progress mcp_progress_of(const std::string& server, const std::string& tool, const std::string& key,
                                    const nlohmann::json& params) {
  mcp_progress out;
  out.server = server;
  out.tool = tool;
  out.idempotency_key = key;
  out.progress = params.value("progress", 0.0);
  if (const auto t = params.find("total"); t != params.end() && t->is_number()) out.total = t->get<double>();
  if (const auto m = params.find("message"); m != params.end() && m->is_string()) out.message = m->get<std::string>();
  out.params = params;
  return out;
}

}  // namespace detail

/// The names the model will see for `tools` (the server's names) under
/// `naming`, checked against `host` before anything is registered. Throws
/// `std::invalid_argument` naming the server (and the tool, and the owner of
/// a taken name) when `naming.names` names a tool the server does not have,
/// a model name is empty, two of the server's tools would share a model
/// name, or a model name is already registered with `host` (by a static
/// tool, another server, or an earlier registration of this one).
template <class Host>
std::vector<std::string> mcp_model_names(const Host& host, std::span<const dynamic_tool> tools,
                                         const mcp_naming& naming, std::string_view server) {
  const std::string label = detail::mcp_server_label(server);
  std::unordered_map<std::string_view, std::size_t> server_names;
  server_names.reserve(tools.size());
  for (std::size_t i = 0; i < tools.size(); ++i) server_names.emplace(tools[i].name, i);
  for (const auto& [tool, model] : naming.names)
    if (!server_names.contains(tool))
      throw std::invalid_argument(detail::str_cat("mcp naming: tool ", detail::quote_input(tool), " is not a tool of ",
                                                  label));
  std::vector<std::string> out;
  out.reserve(tools.size());
  std::unordered_map<std::string_view, std::size_t> taken;  // model name -> index in `tools`
  taken.reserve(tools.size());
  for (std::size_t i = 0; i < tools.size(); ++i) out.push_back(naming.model_name(tools[i].name));
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string& name = out[i];
    const std::string what = detail::str_cat("tool ", detail::quote_input(tools[i].name), " of ", label);
    if (name.empty()) throw std::invalid_argument(detail::str_cat("mcp naming: ", what, " would have an empty name"));
    if (const auto [it, fresh] = taken.emplace(name, i); !fresh)
      throw std::invalid_argument(detail::str_cat("mcp naming: ", what, " and tool ",
                                                  detail::quote_input(tools[it->second].name), " would both be called ",
                                                  detail::quote_input(name), "; nothing was registered"));
    if (const auto j = host.registry().index_of(name)) {
      const tool_origin& o = host.origin(*j);
      const std::string owner =
          o.server.empty() ? std::string("a tool not from an MCP server")
                           : detail::str_cat(detail::mcp_server_label(o.server), " (its tool ", detail::quote_input(o.tool),
                                             ")");
      throw std::invalid_argument(detail::str_cat(
          "mcp naming: ", what, " cannot be registered as ", detail::quote_input(name), ": the name is taken by ", owner,
          "; give the servers prefixes (mcp_naming::prefixed) or rename the tool (mcp_naming::names); nothing was "
          "registered"));
    }
  }
  return out;
}

/// Registers every tool of `client`'s server with `host` (its tools/list,
/// every page, fetched now): annotations imported with trust `t`, refined
/// by `overlay` (which uses the server's tool names), named for the model by
/// `naming` (default: the server's own names, the server named by the
/// client's `name()`). Atomic per server: every check (list, overlay,
/// naming, clashes with tools already registered) runs before the first
/// tool is registered, so a refused server leaves the host as it was. Each
/// call of a registered tool becomes a tools/call of the server's name for
/// it on `client` (a shared handle, kept by the host's functions);
/// `isError: true` fails the call with `mcp_tool_error`, connection faults
/// with `mcp_transient_error` (retry with `retry_policy{.is_transient =
/// mcp_transient()}`). The call's result is the MCP result object, with its
/// `content` and `structuredContent`. The approver is shown the server and
/// the server's name for the tool. Returns the tools' indices in the host.
/// With `on_progress`, every call of these tools asks the server for
/// progress (a token of its own) and each notifications/progress for it
/// reaches `on_progress` with the server, the model's name of the tool and
/// the call's idempotency key (on the client's strand; must not block).
/// Blocking (see `mcp_client`); throws as `mcp_server_tools`,
/// `mcp_model_names` and the client.
template <class Host>
std::vector<std::size_t> add_mcp_server(Host& host, const mcp_client& client, server_trust t,
                                        std::span<const dynamic_tool> overlay = {}, const mcp_naming& naming = {},
                                        std::function<void(const mcp_progress&)> on_progress = {}) {
  mcp_client c = client;
  const std::string server = naming.server.empty() ? c.name() : naming.server;
  const nlohmann::json list = c.list_tools();
  std::vector<dynamic_tool> tools = mcp_server_tools(list, t, overlay, server);
  const std::vector<std::string> names = mcp_model_names(host, tools, naming, server);
  std::vector<std::size_t> indices;
  indices.reserve(tools.size());
  for (std::size_t i = 0; i < tools.size(); ++i) {
    std::string remote = std::move(tools[i].name);
    tools[i].name = names[i];
    indices.push_back(host.add(
        std::move(tools[i]),
        json_async_tool_function([c, remote, server, model = names[i], on_progress](const attempt_context& ctx,
                                                                                      const nlohmann::json& args) mutable {
          mcp_call_progress progress;
          if (on_progress)
            progress = [on_progress, server, model, key = ctx.idempotency_key](const nlohmann::json& params) {
              on_progress(detail::mcp_progress_of(server, model, key, params));
            };
          return c.async_call(remote, args, std::nullopt, std::move(progress));
        }),
        tool_origin{server, remote}, on_progress ? idempotency_key_use::used : idempotency_key_use::unused));
  }
  return indices;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_HOST_HPP
