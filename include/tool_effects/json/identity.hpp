// tool_effects/json/identity.hpp — internal to <tool_effects/json.hpp>: call
// identity over JSON arguments, and `dynamic_tool`, the runtime form of a tool
// that arrives from a manifest or an MCP server. Include <tool_effects/json.hpp>.
#ifndef TOOL_EFFECTS_JSON_IDENTITY_HPP
#define TOOL_EFFECTS_JSON_IDENTITY_HPP

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/call_description.hpp>
#include <tool_effects/identity.hpp>
#include <tool_effects/json/error.hpp>

namespace tool_effects {

/// JSON arguments for the identity code. `string_arg(args, name)`: the
/// top-level member `name` of an object — a string as is, a number, boolean,
/// array or object as canonical JSON; nullopt when `args` is not an object,
/// the member is absent, or it is null. `canonical(args)`: `canonical_json`.
/// `target_list(args, name)`: the targets of the member `name` for
/// conflicts — a string is one target, an array of 1 to `max_call_targets`
/// strings one target per element; nullopt (the whole resource) when absent,
/// null, or of any other shape (docs/runtime.md, "Multi-target arguments").
template <>
struct identity_arguments<nlohmann::json> {
  static std::optional<std::string> string_arg(const nlohmann::json& args, std::string_view name) {
    if (!args.is_object()) return std::nullopt;
    const auto it = args.find(name);
    if (it == args.end() || it->is_null()) return std::nullopt;
    if (it->is_string()) return it->get<std::string>();
    return canonical_json(*it);
  }
  static std::string canonical(const nlohmann::json& args) { return canonical_json(args); }
  static std::optional<std::vector<std::string>> target_list(const nlohmann::json& args, std::string_view name) {
    if (!args.is_object()) return std::nullopt;
    const auto it = args.find(name);
    if (it == args.end()) return std::nullopt;
    if (it->is_string()) return std::vector<std::string>{it->get<std::string>()};
    if (!it->is_array() || it->empty() || it->size() > max_call_targets) return std::nullopt;
    std::vector<std::string> out;
    out.reserve(it->size());
    for (const auto& e : *it) {
      if (!e.is_string()) return std::nullopt;
      out.push_back(e.get<std::string>());
    }
    return out;
  }
};

/// The identity policy of a tool whose calls carry JSON arguments (the usual
/// case: model-chosen calls, MCP, manifests).
using identity_policy = basic_identity_policy<nlohmann::json>;

/// A tool known only at runtime: its name, the description of its calls
/// without targets (built by `describe_runtime`: unknown effects make it
/// exclusive), and its identity policy.
struct dynamic_tool {
  std::string name;
  call_description description;
  identity_policy identity;
};

/// The identity of a call of `tool` with arguments `args` (see `identify`).
inline call_identity identify(const dynamic_tool& tool, const nlohmann::json& args) {
  return identify(tool.name, tool.identity, args);
}

/// The description of a call of `tool` with arguments `args`: the tool's
/// description with the call's targets (per its identity policy, see
/// `targets_of`) on the scoped accesses (see `describe_call`).
inline call_description describe_call(const dynamic_tool& tool, const nlohmann::json& args) {
  return describe_call(tool.description, tool.identity, args);
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_IDENTITY_HPP
