// tool_effects/mcp/tool_meta.hpp — a tool's declaration as an MCP server
// publishes it, and as our client reads it back: the four hints (derived by
// `export_mcp_hints`, the one rule of json/mcp.hpp) and the scoped accesses
// under the `_meta` key `io.github.tool-effects/accesses` (format version 1,
// documented in docs/mcp-server.md, "What a tool_effects server publishes"):
//
//   "_meta": {"io.github.tool-effects/accesses": {
//     "version": 1, "effects": ["write", "idempotent"],
//     "reads": ["bank"], "writes": ["bank/accounts"], "appends": ["bank/audit"],
//     "identity": {"operation_arg": "op", "target_arg": "acct"}}}
//
// The value is a manifest tool entry (docs/runtime.md) without name and
// description, plus its version: one format, read by the manifest's reader.
#ifndef TOOL_EFFECTS_MCP_TOOL_META_HPP
#define TOOL_EFFECTS_MCP_TOOL_META_HPP

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include <tool_effects/json.hpp>
#include <tool_effects/json/arguments.hpp>

namespace tool_effects {

/// The `_meta` key of a tool's scoped accesses. The specification's `_meta`
/// naming rule: a prefix of dot-separated labels (each starting with a letter,
/// ending with a letter or digit, hyphens inside) and a slash, not using the
/// reserved `modelcontextprotocol`/`mcp` labels; the name alphanumeric at
/// both ends. Stable: the format behind it is versioned (`version`).
inline constexpr std::string_view mcp_accesses_meta_key = "io.github.tool-effects/accesses";
/// The format version this library writes and reads (an unknown version is an error).
inline constexpr int mcp_accesses_meta_version = 1;

/// Hints a tool type may state (as other SDKs take `annotations`): every one
/// set must equal the derived one (`mcp_tool_hints_v`), else the program does
/// not compile (the diagnostic names the tool and the hint).
struct mcp_stated_hints {
  std::optional<bool> read_only{};    ///< readOnlyHint
  std::optional<bool> destructive{};  ///< destructiveHint
  std::optional<bool> idempotent{};   ///< idempotentHint
  std::optional<bool> open_world{};   ///< openWorldHint
};

/// The hints of static tool `Tool`: a constant (computed at compile time from
/// its declared effects, by the one rule).
template <class Tool>
inline constexpr mcp_hints mcp_tool_hints_v = export_mcp_hints(side_effects_v<Tool>);

namespace detail {
// Hint tags, so that a mismatch names the hint in the diagnostic.
struct readOnlyHint {};
struct destructiveHint {};
struct idempotentHint {};
struct openWorldHint {};

// Instantiated with `Agree` false only for a stated hint that differs from the derived one: the
// diagnostic names the tool and the hint (`stated_hint_differs_from_derived<my_tool, readOnlyHint, false>`).
template <class Tool, class Hint, bool Agree>
struct stated_hint_differs_from_derived : std::true_type {};
template <class Tool, class Hint>
struct stated_hint_differs_from_derived<Tool, Hint, false> : std::false_type {
  static_assert(!std::is_same_v<Tool, Tool>,
                "mcp_server: this tool's stated annotation contradicts its declared effects (the hints are derived "
                "by export_mcp_hints; remove the stated hint or fix the declaration)");
};

constexpr bool stated_agrees(std::optional<bool> stated, bool derived) { return !stated || *stated == derived; }

template <class Tool, bool Stated = requires { Tool::annotations; }>
struct stated_hints_check : std::true_type {};
template <class Tool>
struct stated_hints_check<Tool, true> {
  static constexpr mcp_stated_hints stated = Tool::annotations;
  static constexpr mcp_hints derived = mcp_tool_hints_v<Tool>;
  static constexpr bool value =
      stated_hint_differs_from_derived<Tool, readOnlyHint, stated_agrees(stated.read_only, derived.read_only)>::value &&
      stated_hint_differs_from_derived<Tool, destructiveHint,
                                       stated_agrees(stated.destructive, derived.destructive)>::value &&
      stated_hint_differs_from_derived<Tool, idempotentHint, stated_agrees(stated.idempotent, derived.idempotent)>::value &&
      stated_hint_differs_from_derived<Tool, openWorldHint, stated_agrees(stated.open_world, derived.open_world)>::value;
};

// `title` / `description` of a static tool, when it has them.
template <class Tool>
void put_static_texts(nlohmann::json& entry, nlohmann::json& annotations) {
  if constexpr (requires { std::string_view(Tool::title); }) {
    entry["title"] = std::string(std::string_view(Tool::title));
    annotations["title"] = entry["title"];
  }
  if constexpr (requires { std::string_view(Tool::description); })
    entry["description"] = std::string(std::string_view(Tool::description));
}
}  // namespace detail

/// Whether `Tool`'s stated hints (if any) equal its derived ones; a
/// contradiction is a compile error naming the tool and the hint.
template <class Tool>
inline constexpr bool mcp_stated_hints_agree_v = detail::stated_hints_check<Tool>::value;

/// The `_meta` accesses value of a tool described by `d` with identity
/// policy `p`. An unknown (exclusive) tool publishes `{"version": 1}`: no
/// effects and no accesses, which reads back as unknown (exclusive), where
/// its default hints alone would read back as a root write. A policy's
/// `target_fn`/`key_fn` cannot travel: without them the importer holds the
/// whole resource (more conservative, never less).
inline nlohmann::json mcp_accesses_meta(const call_description& d, const identity_policy& p) {
  nlohmann::json m = nlohmann::json::object();
  m["version"] = mcp_accesses_meta_version;
  nlohmann::json id = nlohmann::json::object();
  if (p.operation_arg) id["operation_arg"] = *p.operation_arg;
  if (p.target_arg && !p.target_fn) id["target_arg"] = *p.target_arg;
  if (!id.empty()) m["identity"] = std::move(id);
  if (d.exclusive) return m;
  m["effects"] = d.effects;
  for (const auto mode : {access_mode::read, access_mode::write, access_mode::append}) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& a : d.accesses)
      if (a.mode == mode) list.push_back(a.resource);
    if (!list.empty())
      m[mode == access_mode::read ? "reads" : mode == access_mode::write ? "writes" : "appends"] = std::move(list);
  }
  return m;
}

/// One `tools/list` entry: name, `inputSchema` (`{"type": "object"}` unless
/// given; the identity policy's `target_arg` is a required property of it), `annotations` with the four hints of `d` (an unknown tool: the
/// specification's defaults) and its `_meta` accesses.
inline nlohmann::json mcp_tool_entry(std::string_view name, const call_description& d, const identity_policy& p,
                                     nlohmann::json input_schema = nullptr) {
  nlohmann::json e = nlohmann::json::object();
  e["name"] = std::string(name);
  if (input_schema.is_null()) input_schema = {{"type", "object"}};
  // The argument that names a call's target (the identity policy's target_arg) is a property the call must
  // carry: a client that reads the schema shows it and sends it.
  if (p.target_arg && input_schema.is_object() && input_schema.value("type", nlohmann::json()) == "object") {
    nlohmann::json& props = input_schema["properties"];
    if (!props.is_object()) props = nlohmann::json::object();
    if (!props.contains(*p.target_arg)) props[*p.target_arg] = {{"description", "what the call acts on (its target)"}};
    nlohmann::json& required = input_schema["required"];
    if (!required.is_array()) required = nlohmann::json::array();
    if (std::find(required.begin(), required.end(), *p.target_arg) == required.end()) required.push_back(*p.target_arg);
  }
  e["inputSchema"] = std::move(input_schema);
  e["annotations"] = mcp_annotations(d);
  e["_meta"] = {{std::string(mcp_accesses_meta_key), mcp_accesses_meta(d, p)}};
  return e;
}

/// The entry of static tool `Tool` (its `title`, `description` and
/// `input_schema` members when present; else the schema of its described
/// `arguments` struct, json/arguments.hpp); its hints are `mcp_tool_hints_v<Tool>`.
template <class Tool>
nlohmann::json mcp_static_tool_entry(std::string_view name, const call_description& d, const identity_policy& p) {
  static_assert(mcp_stated_hints_agree_v<Tool>);
  nlohmann::json schema = nullptr;
  if constexpr (requires { std::string_view(Tool::input_schema); })
    schema = nlohmann::json::parse(std::string_view(Tool::input_schema));
  else if constexpr (!std::is_void_v<typename tool_arguments<Tool>::type>)
    schema = json_schema_of<typename tool_arguments<Tool>::type>();
  nlohmann::json e = mcp_tool_entry(name, d, p, std::move(schema));
  constexpr mcp_hints h = mcp_tool_hints_v<Tool>;
  nlohmann::json& a = e["annotations"];  // (set in place: clang 14 -O0 leaked the old object on reassignment)
  a["readOnlyHint"] = h.read_only;
  a["destructiveHint"] = h.destructive;
  a["idempotentHint"] = h.idempotent;
  a["openWorldHint"] = h.open_world;
  detail::put_static_texts<Tool>(e, a);
  return e;
}

/// The declaration a trusted server publishes for `tool` (an MCP `Tool`
/// object): its `_meta` accesses read as a manifest entry (strict:
/// `json_error` pointing into the tool, e.g. `at
/// /_meta/io.github.tool-effects~1accesses/reads/0`), or nullopt when the
/// tool publishes none.
inline std::optional<dynamic_tool> import_mcp_accesses_meta(const nlohmann::json& tool) {
  if (!tool.is_object()) return std::nullopt;
  const auto meta = tool.find("_meta");
  if (meta == tool.end() || !meta->is_object()) return std::nullopt;
  const auto m = meta->find(mcp_accesses_meta_key);
  if (m == meta->end()) return std::nullopt;
  const std::string at = detail::str_cat("/_meta/", detail::pointer_token(mcp_accesses_meta_key));
  if (!m->is_object()) throw json_error(at, detail::expected("an object", *m), detail::preview(*m));
  const auto v = m->find("version");
  if (v == m->end()) throw json_error(at, "missing required key", "version");
  if (!(v->is_number_integer() && *v == mcp_accesses_meta_version))
    throw json_error(at + "/version", "unsupported accesses format version (expected 1)", detail::preview(*v));
  nlohmann::json entry = *m;
  entry.erase("version");
  entry["name"] = tool.at("name");
  try {
    return detail::manifest_reader(0, "").read(entry);
  } catch (const json_error& e) {
    throw json_error(at + e.pointer(), e.message(), e.input());
  }
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_TOOL_META_HPP
