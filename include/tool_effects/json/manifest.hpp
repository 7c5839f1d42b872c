// tool_effects/json/manifest.hpp — internal to <tool_effects/json.hpp>: the
// tool manifest, a JSON file declaring dynamic tools. Include
// <tool_effects/json.hpp>. Format and rules: docs/runtime.md.
//
//   {"version": 1,
//    "tools": [{"name": "write_file",
//               "description": "...",
//               "effects": ["write", "idempotent"],
//               "reads": ["fs"], "writes": ["fs/files"], "appends": ["logs/audit"],
//               "identity": {"operation_arg": "action", "target_arg": "path"}}]}
//
// Strict: an unknown key, an unknown slug, a wrong type, an invalid resource
// path, a duplicate key or a duplicate tool name is a `manifest_error`, never a
// silent default.
#ifndef TOOL_EFFECTS_JSON_MANIFEST_HPP
#define TOOL_EFFECTS_JSON_MANIFEST_HPP

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/call_description.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/effects.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/json/identity.hpp>

namespace tool_effects {

/// A manifest that cannot be loaded. `what()` names the tool (index and, once
/// known, name), the field as a JSON pointer and quotes the bad value:
/// `manifest: tool 2 ("fetch") at /tools/2/effects/1: unknown side-effect tag: "bogus"`.
class manifest_error : public json_error {
 public:
  manifest_error(std::string pointer, std::string message, std::string_view input,
                 std::optional<std::size_t> tool_index = std::nullopt,
                 std::optional<std::string> tool_name = std::nullopt,
                 json_error_reason reason = json_error_reason::invalid_value)
      : json_error(std::move(pointer), std::move(message), input, context(tool_index, tool_name), reason),
        tool_index_(tool_index),
        tool_name_(std::move(tool_name)) {}

  /// Index of the tool in "tools", when the error is inside one.
  [[nodiscard]] const std::optional<std::size_t>& tool_index() const noexcept { return tool_index_; }
  /// Name of that tool, when it was read before the error.
  [[nodiscard]] const std::optional<std::string>& tool_name() const noexcept { return tool_name_; }

 private:
  static std::string context(const std::optional<std::size_t>& index, const std::optional<std::string>& name) {
    std::string out = "manifest:";
    if (index) out.append(" tool ").append(std::to_string(*index));
    if (name) out.append(" (").append(parse_error::quote(*name)).append(")");
    return out;
  }
  std::optional<std::size_t> tool_index_;
  std::optional<std::string> tool_name_;
};

namespace detail {

// Reads one tool of a manifest; throws manifest_error.
class manifest_reader {
 public:
  manifest_reader(std::size_t index, std::string base) : index_(index), base_(std::move(base)) {}

  dynamic_tool read(const nlohmann::json& t) {
    if (!t.is_object()) fail("", expected("a tool object", t), preview(t));
    // The name first, so that every later error can show it.
    const auto name = t.find("name");
    if (name == t.end()) fail("", "missing required key", "name");
    if (!name->is_string()) fail("/name", expected("a string", *name), preview(*name));
    if (name->get_ref<const std::string&>().empty()) fail("/name", "expected a non-empty tool name", "");
    name_ = name->get<std::string>();

    for (auto it = t.begin(); it != t.end(); ++it)
      if (!is_known(it.key()))
        fail(
            str_cat("/", pointer_token(it.key())),
            unknown_key_message(it.key(), {"name", "description", "effects", "reads", "writes", "appends", "identity"}),
            it.key());

    if (const auto d = t.find("description"); d != t.end() && !d->is_string())
      fail("/description", expected("a string", *d), preview(*d));

    effect_set flags;
    if (const auto e = t.find("effects"); e != t.end()) {
      try {
        flags = e->get<effect_set>();
      } catch (const json_error& err) {
        fail(str_cat("/effects", err.pointer()), err.message(), err.input());
      }
    }
    std::vector<runtime_access> scoped;
    resources(t, "reads", access_mode::read, scoped);
    resources(t, "writes", access_mode::write, scoped);
    resources(t, "appends", access_mode::append, scoped);

    dynamic_tool out;
    out.name = name_;
    out.description = describe_runtime(name_, flags, std::move(scoped));
    if (const auto id = t.find("identity"); id != t.end()) out.identity = identity(*id);
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& pointer, std::string message, std::string_view input) const {
    throw manifest_error(base_ + pointer, std::move(message), input, index_,
                         name_.empty() ? std::nullopt : std::optional<std::string>(name_));
  }

  static bool is_known(std::string_view key) {
    for (const auto k : {"name", "description", "effects", "reads", "writes", "appends", "identity"})
      if (key == k) return true;
    return false;
  }

  void resources(const nlohmann::json& t, const char* key, access_mode mode, std::vector<runtime_access>& out) const {
    const auto r = t.find(key);
    if (r == t.end()) return;
    const std::string at = std::string("/") + key;
    if (!r->is_array()) fail(at, expected("an array of resource paths", *r), preview(*r));
    for (std::size_t i = 0; i < r->size(); ++i) {
      const auto& p = (*r)[i];
      const std::string pi = detail::str_cat(at, "/", std::to_string(i));
      if (!p.is_string()) fail(pi, expected("a resource path string", p), preview(p));
      const auto& path = p.get_ref<const std::string&>();
      if (!is_valid_resource_path(path))
        fail(pi, "invalid resource path (segments separated by single '/', no leading or trailing '/')", path);
      out.push_back({path, mode, std::nullopt});
    }
  }

  identity_policy identity(const nlohmann::json& id) const {
    if (!id.is_object()) fail("/identity", expected("an object", id), preview(id));
    identity_policy p;
    for (auto it = id.begin(); it != id.end(); ++it) {
      const std::string at = detail::str_cat("/identity/", pointer_token(it.key()));
      std::optional<std::string>* field = it.key() == "operation_arg" ? &p.operation_arg
                                          : it.key() == "target_arg"  ? &p.target_arg
                                                                      : nullptr;
      if (!field) fail(at, unknown_key_message(it.key(), {"operation_arg", "target_arg"}), it.key());
      if (!it->is_string()) fail(at, expected("an argument name string", *it), preview(*it));
      if (it->get_ref<const std::string&>().empty()) fail(at, "expected a non-empty argument name", "");
      *field = it->get<std::string>();
    }
    return p;
  }

  std::size_t index_;
  std::string base_;
  std::string name_;
};

}  // namespace detail

/// The dynamic tools of a parsed manifest, in order. Each tool's description
/// comes from `describe_runtime(name, effects, reads + writes + appends)`, so
/// flags without scoped resources mean the root and a tool declaring nothing
/// is unknown (exclusive). Throws `manifest_error`, also when `manifest`
/// nests deeper than 64 levels (`check_json_depth`, before anything is read).
inline std::vector<dynamic_tool> manifest_from_json(const nlohmann::json& manifest) {
  try {
    check_json_depth(manifest);
  } catch (const json_error& e) {
    throw manifest_error(e.pointer(), e.message(), e.input(), std::nullopt, std::nullopt, e.reason());
  }
  if (!manifest.is_object())
    throw manifest_error("", detail::expected("a manifest object", manifest), detail::preview(manifest));
  for (auto it = manifest.begin(); it != manifest.end(); ++it)
    if (it.key() != "tools" && it.key() != "version")
      throw manifest_error(detail::str_cat("/", detail::pointer_token(it.key())),
                           detail::unknown_key_message(it.key(), {"version", "tools"}), it.key());
  if (const auto v = manifest.find("version"); v != manifest.end() && !(v->is_number_integer() && *v == 1))
    throw manifest_error("/version", "unsupported manifest version (expected 1)", detail::preview(*v));
  const auto tools = manifest.find("tools");
  if (tools == manifest.end()) throw manifest_error("", "missing required key", "tools");
  if (!tools->is_array())
    throw manifest_error("/tools", detail::expected("an array of tools", *tools), detail::preview(*tools));

  std::vector<dynamic_tool> out;
  out.reserve(tools->size());
  std::unordered_map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < tools->size(); ++i) {
    const std::string at = detail::str_cat("/tools/", std::to_string(i));
    out.push_back(detail::manifest_reader(i, at).read((*tools)[i]));
    if (const auto [it, fresh] = seen.emplace(out.back().name, i); !fresh)
      throw manifest_error(at + "/name", detail::str_cat("duplicate tool name (also tool ", std::to_string(it->second), ")"),
                           out.back().name, i, out.back().name);
  }
  return out;
}

/// Parses manifest text with `parse_untrusted_json` (strict JSON: duplicate
/// keys, nesting deeper than 64 levels and text over 16 MiB are errors too,
/// with their `reason()`) and loads it. Throws `manifest_error`.
inline std::vector<dynamic_tool> parse_manifest(std::string_view text) {
  nlohmann::json j;
  try {
    j = detail::parse_json(text, "manifest:");
  } catch (const manifest_error&) {
    throw;
  } catch (const json_error& e) {
    throw manifest_error(e.pointer(), e.message(), e.input(), std::nullopt, std::nullopt, e.reason());
  }
  return manifest_from_json(j);
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_MANIFEST_HPP
