// tool_effects/json/mcp.hpp — internal to <tool_effects/json.hpp>: MCP
// `ToolAnnotations` (specification 2025-11-25) <-> effects. Include
// <tool_effects/json.hpp>. The full table, with every default, is in docs/mcp.md.
//
// Export (our declaration -> hints), all four hints always written:
//   readOnlyHint    = is_parallel_safe(s)
//   destructiveHint = is_destructive(s)                    (false when read-only)
//   idempotentHint  = s contains idempotent                (true when read-only)
//   openWorldHint   = s contains external or network
//   unknown (empty) = the specification's defaults: false, true, false, true
// Import (hints -> effects), after applying the specification's defaults:
//   untrusted server (the default)  -> {} : unknown (exclusive, non_idempotent)
//   trusted, readOnlyHint           -> {read}; destructiveHint, idempotentHint ignored
//   trusted, not readOnlyHint       -> {write} + destructive if destructiveHint
//                                      + idempotent if idempotentHint
//   trusted, openWorldHint          -> + external + network
#ifndef TOOL_EFFECTS_JSON_MCP_HPP
#define TOOL_EFFECTS_JSON_MCP_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/call_description.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/effect.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/json/identity.hpp>
#include <tool_effects/rules.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

/// Whether a server's annotations are believed. The specification: clients
/// MUST treat annotations as untrusted unless they come from trusted servers;
/// every importer defaults to `untrusted`.
enum class server_trust : std::uint8_t {
  untrusted,  ///< annotations are ignored: imported tools are unknown
  trusted     ///< annotations are mapped to effects
};

/// "untrusted" or "trusted".
constexpr std::string_view to_string(server_trust t) noexcept {
  return t == server_trust::trusted ? "trusted" : "untrusted";
}

/// The four MCP hints with every value resolved. Default-constructed, they
/// are the specification's defaults (what a tool without annotations means).
struct mcp_hints {
  bool read_only = false;   ///< readOnlyHint, default false
  bool destructive = true;  ///< destructiveHint, default true; meaningful only when !read_only
  bool idempotent = false;  ///< idempotentHint, default false; meaningful only when !read_only
  bool open_world = true;   ///< openWorldHint, default true

  friend constexpr bool operator==(const mcp_hints&, const mcp_hints&) noexcept = default;
};

/// The hints that describe effect set `s` (table above). The empty (unknown)
/// set gives the specification's defaults; so does "no annotations".
constexpr mcp_hints export_mcp_hints(effect_set s) noexcept {
  if (s.empty()) return {};
  mcp_hints h;
  h.read_only = is_parallel_safe(s);
  h.destructive = !h.read_only && is_destructive(s);
  h.idempotent = h.read_only || s.contains(effect::idempotent);
  h.open_world = s.contains(effect::external) || s.contains(effect::network);
  return h;
}

/// The effects of a tool with hints `h` from a server of trust `t` (table
/// above). From an untrusted server: the empty set, whatever the hints.
constexpr effect_set import_mcp_hints(const mcp_hints& h, server_trust t = server_trust::untrusted) noexcept {
  if (t != server_trust::trusted) return {};
  effect_set s;
  if (h.read_only) {
    s.insert(effect::read);
  } else {
    s.insert(effect::write);
    if (h.destructive) s.insert(effect::destructive);
    if (h.idempotent) s.insert(effect::idempotent);
  }
  if (h.open_world) {
    s.insert(effect::external);
    s.insert(effect::network);
  }
  return s;
}

/// MCP `ToolAnnotations` as sent: every field optional (absent = default).
struct tool_annotations {
  std::optional<std::string> title;
  std::optional<bool> read_only_hint;
  std::optional<bool> destructive_hint;
  std::optional<bool> idempotent_hint;
  std::optional<bool> open_world_hint;

  /// The hints with the specification's defaults applied to absent fields.
  [[nodiscard]] mcp_hints hints() const noexcept {
    const mcp_hints d;
    return {read_only_hint.value_or(d.read_only), destructive_hint.value_or(d.destructive),
            idempotent_hint.value_or(d.idempotent), open_world_hint.value_or(d.open_world)};
  }
  friend bool operator==(const tool_annotations&, const tool_annotations&) = default;
};

/// Annotations stating every hint of `export_mcp_hints(s)` explicitly.
inline tool_annotations mcp_annotations(effect_set s, std::optional<std::string> title = std::nullopt) {
  const mcp_hints h = export_mcp_hints(s);
  return {std::move(title), h.read_only, h.destructive, h.idempotent, h.open_world};
}
/// Annotations of a described call or tool (from its effects; an exclusive,
/// unknown description has none and gets the defaults).
inline tool_annotations mcp_annotations(const call_description& d, std::optional<std::string> title = std::nullopt) {
  return mcp_annotations(d.exclusive ? effect_set{} : d.effects, std::move(title));
}
/// Annotations of a statically declared tool type.
template <class Tool>
tool_annotations mcp_annotations_of(std::optional<std::string> title = std::nullopt) {
  return mcp_annotations(side_effects_v<Tool>, std::move(title));
}

/// The effects of a tool annotated `a`, from a server of trust `t`.
inline effect_set import_mcp_annotations(const tool_annotations& a, server_trust t = server_trust::untrusted) noexcept {
  return import_mcp_hints(a.hints(), t);
}

/// Writes the fields that are set, with MCP's names (`title`, `readOnlyHint`,
/// `destructiveHint`, `idempotentHint`, `openWorldHint`).
inline void to_json(nlohmann::json& j, const tool_annotations& a) {
  j = nlohmann::json::object();
  if (a.title) j["title"] = *a.title;
  if (a.read_only_hint) j["readOnlyHint"] = *a.read_only_hint;
  if (a.destructive_hint) j["destructiveHint"] = *a.destructive_hint;
  if (a.idempotent_hint) j["idempotentHint"] = *a.idempotent_hint;
  if (a.open_world_hint) j["openWorldHint"] = *a.open_world_hint;
}

/// Reads `ToolAnnotations`: an object whose hints are booleans (null = absent)
/// and whose title is a string. Other members are ignored (the specification
/// may add hints; an ignored hint leaves the conservative default). A wrong
/// type is a `json_error` pointing at the member (`at /readOnlyHint: ...`).
inline void from_json(const nlohmann::json& j, tool_annotations& out) {
  if (!j.is_object()) throw json_error("", detail::expected("an object", j), detail::preview(j));
  tool_annotations a;
  auto hint = [&j](const char* key, std::optional<bool>& field) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_boolean())
      throw json_error(std::string("/") + key, detail::expected("a boolean", *it), detail::preview(*it));
    field = it->get<bool>();
  };
  if (const auto it = j.find("title"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) throw json_error("/title", detail::expected("a string", *it), detail::preview(*it));
    a.title = it->get<std::string>();
  }
  hint("readOnlyHint", a.read_only_hint);
  hint("destructiveHint", a.destructive_hint);
  hint("idempotentHint", a.idempotent_hint);
  hint("openWorldHint", a.open_world_hint);
  out = std::move(a);
}

namespace detail {
inline json_error rebase(const json_error& e, const std::string& prefix) {
  return json_error(prefix + e.pointer(), e.message(), e.input());
}
}  // namespace detail

/// A dynamic tool from one MCP `Tool` object (`{"name", "annotations"?, ...}`;
/// other members such as `inputSchema` are ignored). Annotations are
/// validated either way, but only a trusted server's are mapped: from an
/// untrusted server the tool is unknown (exclusive, non_idempotent). The
/// identity policy is the default one. Errors are `json_error`s pointing at
/// the member (`at /annotations/readOnlyHint: expected a boolean, got string`).
inline dynamic_tool import_mcp_tool(const nlohmann::json& tool, server_trust t = server_trust::untrusted) {
  if (!tool.is_object()) throw json_error("", detail::expected("an MCP tool object", tool), detail::preview(tool));
  const auto name = tool.find("name");
  if (name == tool.end()) throw json_error("", "missing required key", "name");
  if (!name->is_string() || name->get_ref<const std::string&>().empty())
    throw json_error("/name", name->is_string() ? "expected a non-empty string" : detail::expected("a string", *name),
                     detail::preview(*name));
  tool_annotations a;
  if (const auto it = tool.find("annotations"); it != tool.end() && !it->is_null()) {
    try {
      from_json(*it, a);
    } catch (const json_error& e) {
      throw detail::rebase(e, "/annotations");
    }
  }
  dynamic_tool out;
  out.name = name->get<std::string>();
  out.description = describe_runtime(out.name, import_mcp_annotations(a, t), {});
  return out;
}

/// The dynamic tools of an MCP `tools/list` result (`{"tools": [...]}`), in
/// order. Errors point into the result (`at /tools/3/annotations/...`); a
/// duplicate tool name is an error.
inline std::vector<dynamic_tool> import_mcp_tools(const nlohmann::json& list_result,
                                                  server_trust t = server_trust::untrusted) {
  if (!list_result.is_object())
    throw json_error("", detail::expected("a tools/list result object", list_result), detail::preview(list_result));
  const auto tools = list_result.find("tools");
  if (tools == list_result.end()) throw json_error("", "missing required key", "tools");
  if (!tools->is_array()) throw json_error("/tools", detail::expected("an array", *tools), detail::preview(*tools));
  std::vector<dynamic_tool> out;
  std::unordered_map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < tools->size(); ++i) {
    const std::string at = detail::str_cat("/tools/", std::to_string(i));
    try {
      out.push_back(import_mcp_tool((*tools)[i], t));
    } catch (const json_error& e) {
      throw detail::rebase(e, at);
    }
    if (const auto [it, fresh] = seen.emplace(out.back().name, i); !fresh)
      throw json_error(at + "/name", detail::str_cat("duplicate tool name (also /tools/", std::to_string(it->second), ")"),
                       out.back().name);
  }
  return out;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_MCP_HPP
