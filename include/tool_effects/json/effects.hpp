// tool_effects/json/effects.hpp — internal to <tool_effects/json.hpp>: the
// nlohmann::json ADL hooks of the vocabulary, so that `json j = set;` and
// `j.get<effect_set>()` work. Include <tool_effects/json.hpp>.
//
// Wire forms (interchangeable with the Rust crate's serde form:
// `rename_all = "lowercase"` tags in a transparent HashSet):
//   effect             "network"
//   effect_set         ["read","network"]   (declaration order; duplicates collapse on input)
//   side_effect_class  "non_idempotent"
//   access_mode        "append"
//   runtime_access     {"resource":"db/users","mode":"write","target":"42"}   (target omitted when none)
//   call_description   {"name":...,"effects":[...],"accesses":[...],"exclusive":false}   (output only)
//   call_identity      {"tool":...,"operation":...,"target":...,"key":...}                (output only)
// Slugs are case-sensitive; a bad element is a `json_error` naming its index
// and value.
#ifndef TOOL_EFFECTS_JSON_EFFECTS_HPP
#define TOOL_EFFECTS_JSON_EFFECTS_HPP

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include <tool_effects/access.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/effect.hpp>
#include <tool_effects/identity.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects {

namespace detail {
// The string at `j`, or a json_error at `pointer`.
inline const std::string& json_string(const nlohmann::json& j, const std::string& pointer) {
  if (!j.is_string()) throw json_error(pointer, expected("a string", j), preview(j));
  return j.get_ref<const std::string&>();
}
}  // namespace detail

/// Writes the slug of `e`.
inline void to_json(nlohmann::json& j, effect e) { j = std::string(to_string(e)); }
/// Reads a slug; throws `json_error` (`unknown side-effect tag`, or a wrong type).
inline void from_json(const nlohmann::json& j, effect& e) {
  const auto& s = detail::json_string(j, "");
  const auto parsed = try_parse_effect(s);
  if (!parsed) throw json_error("", "unknown side-effect tag", s);
  e = *parsed;
}

/// Writes the members' slugs as an array, in declaration order.
inline void to_json(nlohmann::json& j, effect_set s) {
  j = nlohmann::json::array();
  for (const effect e : s) j.push_back(std::string(to_string(e)));
}
/// Reads an array of slugs (duplicates collapse; `[]` is the empty, unknown
/// set). Throws `json_error` whose pointer is the bad element's index, e.g.
/// `at /1: unknown side-effect tag: "bogus"`.
inline void from_json(const nlohmann::json& j, effect_set& out) {
  if (!j.is_array()) throw json_error("", detail::expected("an array of side-effect tags", j), detail::preview(j));
  effect_set s;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string pointer = detail::str_cat("/", std::to_string(i));
    const auto& slug = detail::json_string(j[i], pointer);
    const auto e = try_parse_effect(slug);
    if (!e) throw json_error(pointer, "unknown side-effect tag", slug);
    s.insert(*e);
  }
  out = s;
}

/// Writes the class slug.
inline void to_json(nlohmann::json& j, side_effect_class c) { j = std::string(to_string(c)); }
/// Reads a class slug strictly (`unknown side-effect class`). For the design
/// note's lenient reading use `parse_side_effect_class(j.get<std::string>())`.
inline void from_json(const nlohmann::json& j, side_effect_class& c) {
  const auto& s = detail::json_string(j, "");
  const auto parsed = try_parse_side_effect_class(s);
  if (!parsed) throw json_error("", "unknown side-effect class", s);
  c = *parsed;
}

/// Writes the mode slug.
inline void to_json(nlohmann::json& j, access_mode m) { j = std::string(to_string(m)); }
/// Reads a mode slug strictly (`unknown access mode`).
inline void from_json(const nlohmann::json& j, access_mode& m) {
  const auto& s = detail::json_string(j, "");
  const auto parsed = try_parse_access_mode(s);
  if (!parsed) throw json_error("", "unknown access mode", s);
  m = *parsed;
}

/// Writes `{"resource", "mode"[, "target"]}`.
inline void to_json(nlohmann::json& j, const runtime_access& a) {
  j = nlohmann::json{{"resource", a.resource}, {"mode", a.mode}};
  if (a.target) j["target"] = *a.target;
}

/// Writes `{"name", "effects", "accesses", "exclusive"}`.
inline void to_json(nlohmann::json& j, const call_description& d) {
  j = nlohmann::json{{"name", d.name}, {"effects", d.effects}, {"accesses", d.accesses}, {"exclusive", d.exclusive}};
}

/// Writes `{"tool", "operation", "target" (null when none), "key"}`.
inline void to_json(nlohmann::json& j, const call_identity& id) {
  j = nlohmann::json{{"tool", id.tool}, {"operation", id.operation}, {"key", id.key}};
  j["target"] = id.target ? nlohmann::json(*id.target) : nlohmann::json(nullptr);
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_EFFECTS_HPP
