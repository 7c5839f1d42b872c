// tool_effects/call_description.hpp — the runtime form of a call's effects,
// for calls and tools that arrive at runtime (model-chosen calls, MCP
// servers, manifests). Resources are "/"-separated paths ("db/users" lies
// under "db"; "" is `everything`), and an access may name a target (a file
// path, a URL): accesses to different targets of the same resource do not
// overlap. Conflicts use the same rule as compile time
// (`access_lists_conflict` in access.hpp); only "overlap" is defined here.
#ifndef TOOL_EFFECTS_CALL_DESCRIPTION_HPP
#define TOOL_EFFECTS_CALL_DESCRIPTION_HPP

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <tool_effects/access.hpp>
#include <tool_effects/effect.hpp>
#include <tool_effects/rules.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

// `paths_overlap(a, b)`, the overlap rule of resource paths, is in
// resource.hpp: compile-time resources are compared by path too.

/// Whether `path` is well formed: empty (the root), or non-empty segments
/// separated by single '/' with no leading or trailing '/'.
constexpr bool is_valid_resource_path(std::string_view path) noexcept {
  if (path.empty()) return true;
  if (path.front() == '/' || path.back() == '/') return false;
  for (std::size_t i = 1; i < path.size(); ++i)
    if (path[i] == '/' && path[i - 1] == '/') return false;
  return true;
}

/// One runtime access: a resource path, a mode, and optionally the target
/// of this particular call (nullopt: the whole resource).
struct runtime_access {
  std::string resource{};
  access_mode mode = access_mode::read;
  std::optional<std::string> target{};

  friend bool operator==(const runtime_access&, const runtime_access&) = default;
};

/// Whether two runtime accesses touch overlapping data: their paths overlap,
/// and unless both name a target on the same resource — then only equal
/// targets overlap. An access without a target holds the whole resource.
inline bool accesses_overlap(const runtime_access& a, const runtime_access& b) noexcept {
  if (!paths_overlap(a.resource, b.resource)) return false;
  if (a.target && b.target && a.resource == b.resource) return *a.target == *b.target;
  return true;
}

/// The effects of one call (or one tool) at runtime: its name, its flags,
/// its accesses, and whether it is exclusive (unknown: conflicts with every
/// call). Default-constructed, it is unknown.
struct call_description {
  std::string name{};
  effect_set effects{};
  std::vector<runtime_access> accesses{};
  bool exclusive = true;
};

/// Whether two described calls conflict: THE rule of access.hpp, with
/// `accesses_overlap` as the overlap.
inline bool conflicts(const call_description& a, const call_description& b) {
  return access_lists_conflict(a.exclusive, a.accesses, b.exclusive, b.accesses,
                               [](const runtime_access& x, const runtime_access& y) { return accesses_overlap(x, y); });
}

/// Describes a tool known only at runtime from its flags and scoped accesses
/// (e.g. from a manifest). Scoped accesses add their implied flags; a flag
/// that no scoped access explains means the root, as the unscoped tags do at
/// compile time: `read` without scoped reads reads everything, `write`
/// without scoped writes or appends writes everything, `destructive` without
/// scoped writes writes everything. Empty flags and no accesses: unknown.
inline call_description describe_runtime(std::string name, effect_set flags, std::vector<runtime_access> scoped) {
  call_description d;
  d.name = std::move(name);
  bool scoped_read = false, scoped_write = false, scoped_write_or_append = false;
  for (const auto& a : scoped) {
    flags.insert(implied_flag(a.mode));
    scoped_read = scoped_read || a.mode == access_mode::read;
    scoped_write = scoped_write || a.mode == access_mode::write;
    scoped_write_or_append = scoped_write_or_append || a.mode != access_mode::read;
  }
  if (flags.empty()) return d;  // unknown: exclusive
  d.effects = flags;
  d.exclusive = false;
  d.accesses = std::move(scoped);
  if (flags.contains(effect::read) && !scoped_read) d.accesses.push_back({"", access_mode::read, std::nullopt});
  if ((flags.contains(effect::write) && !scoped_write_or_append) ||
      (flags.contains(effect::destructive) && !scoped_write))
    d.accesses.push_back({"", access_mode::write, std::nullopt});
  return d;
}

/// Describes a statically declared tool: its flags and exactly its
/// compile-time accesses, as resource paths. `name` defaults to the type's
/// name. An undeclared tool is unknown (exclusive).
template <class Tool>
call_description describe(std::string name = std::string(detail::type_name_v<std::remove_cvref_t<Tool>>)) {
  call_description d;
  d.name = std::move(name);
  d.effects = side_effects_v<Tool>;
  d.exclusive = accesses_v<Tool>.exclusive;
  for (const access& a : accesses_v<Tool>) d.accesses.push_back({std::string(a.resource->path), a.mode, std::nullopt});
  return d;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_CALL_DESCRIPTION_HPP
