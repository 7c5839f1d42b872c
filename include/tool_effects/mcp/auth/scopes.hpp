// tool_effects/mcp/auth/scopes.hpp — least privilege by construction: the OAuth scopes a tool needs, derived from
// its declared effects by one rule (`mcp_scope_rule`), at run time for the listener's 403 step-up
// (`mcp_scopes_from_effects`, a policy of mcp_resource_server::tool_scopes) and at compile time for static tools
// (`ScopesSupported`: every scope a server's tools need is among those it publishes).
//
//   inline constexpr std::array<std::string_view, 2> bank_scopes{"accounts:read", "accounts:write"};
//   static_assert(te::ScopesSupported<bank_scopes, get_balance, deposit>);
//   // error: ... unsupported_scope<issue_token, vault, access_mode::write> ...
#ifndef TOOL_EFFECTS_MCP_AUTH_SCOPES_HPP
#define TOOL_EFFECTS_MCP_AUTH_SCOPES_HPP

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <tool_effects/call_description.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

/// The rule that names a tool's scopes: a read of resource `R` needs `R` + `read_suffix`, a write or an append
/// `R` + `write_suffix` (an access to every resource names `all` as its resource); an undeclared tool, which may
/// do anything, needs `unknown`.
struct mcp_scope_rule {
  std::string_view read_suffix = ":read";
  std::string_view write_suffix = ":write";
  std::string_view all = "all";
  std::string_view unknown = "tools:unknown";

  /// The suffix of an access in `mode`.
  [[nodiscard]] constexpr std::string_view suffix(access_mode mode) const noexcept {
    return mode == access_mode::read ? read_suffix : write_suffix;
  }
  /// Whether `scope` is the scope of an access of `path` in `mode`, compared without building it.
  [[nodiscard]] constexpr bool names(std::string_view scope, std::string_view path, access_mode mode) const noexcept {
    const std::string_view r = path.empty() ? all : path;
    const std::string_view s = suffix(mode);
    return scope.size() == r.size() + s.size() && scope.substr(0, r.size()) == r && scope.substr(r.size()) == s;
  }
};

/// The tool-scope policy of the rule (mcp_resource_server::tool_scopes): the scopes of every access of the tool's
/// description, each once, and `unknown` for a tool that declares nothing (exclusive).
struct mcp_scopes_from_effects {
  mcp_scope_rule rule{};

  std::vector<std::string> operator()(std::string_view, const call_description& d) const {
    std::vector<std::string> out;
    auto add = [&out](std::string s) {
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
    };
    for (const auto& a : d.accesses)
      add(std::string(a.resource.empty() ? rule.all : std::string_view(a.resource)) + std::string(rule.suffix(a.mode)));
    if (d.exclusive) add(std::string(rule.unknown));
    return out;
  }
};

/// Names, in a compile error, a static tool with an access whose scope (by `mcp_scope_rule`'s defaults) is not
/// among the supported scopes: the tool, the resource and the mode (`everything` for an undeclared tool).
template <class Tool, class Resource, access_mode Mode>
struct unsupported_scope {
  static constexpr bool supported = false;
};
/// The result of checking tools whose every scope is supported.
struct scopes_supported {
  static constexpr bool supported = true;
};

namespace detail {
template <std::size_t N>
constexpr bool scope_listed(const std::array<std::string_view, N>& supported, std::string_view path,
                            access_mode mode) noexcept {
  for (const auto s : supported)
    if (mcp_scope_rule{}.names(s, path, mode)) return true;
  return false;
}
template <std::size_t N>
constexpr bool scope_listed(const std::array<std::string_view, N>& supported, std::string_view scope) noexcept {
  for (const auto s : supported)
    if (s == scope) return true;
  return false;
}
// The index of the first access of `Tool` whose scope `supported` lacks; `size` when none; `size + 1` when the
// tool is undeclared and `supported` lacks the rule's `unknown`.
template <class Tool, std::size_t N>
constexpr std::size_t first_unsupported_scope(const std::array<std::string_view, N>& supported) noexcept {
  const access_list& a = accesses_v<Tool>;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (!scope_listed(supported, a[k].resource->path, a[k].mode)) return k;
  if (a.exclusive && !scope_listed(supported, mcp_scope_rule{}.unknown)) return a.size() + 1;
  return a.size();
}
// State 0: access K's scope is missing; 1: every scope is listed; 2: an undeclared tool lacks `unknown`.
template <class Tool, std::size_t K, int State>
struct scope_result {
  using type = unsupported_scope<Tool, type_at<typename resources_of<side_effects_of_t<Tool>>::type, K>,
                                 accesses_v<Tool>[K].mode>;
};
template <class Tool, std::size_t K>
struct scope_result<Tool, K, 1> {
  using type = scopes_supported;
};
template <class Tool, std::size_t K>
struct scope_result<Tool, K, 2> {
  using type = unsupported_scope<Tool, everything, access_mode::write>;
};
template <auto& Supported, class Tool>
struct tool_scope_check {
  static constexpr std::size_t k = first_unsupported_scope<Tool>(Supported);
  static constexpr std::size_t n = accesses_v<Tool>.size();
  using type = typename scope_result<Tool, k, (k < n ? 0 : k == n ? 1 : 2)>::type;
};
template <class... Results>
struct first_unsupported {
  using type = scopes_supported;
};
template <class R, class... Rest>
struct first_unsupported<R, Rest...> {
  using type = std::conditional_t<R::supported, typename first_unsupported<Rest...>::type, R>;
};
}  // namespace detail

/// `scopes_supported` when every scope the static tools need (by `mcp_scope_rule`'s defaults) is in `Supported`
/// (a constexpr std::array of std::string_view), else `unsupported_scope<Tool, Resource, Mode>` of the first
/// tool and access that needs another.
template <auto& Supported, class... Tools>
using first_unsupported_scope_t =
    typename detail::first_unsupported<typename detail::tool_scope_check<Supported, Tools>::type...>::type;

namespace detail {
template <class Result>
concept AllScopesSupported = Result::supported;
}  // namespace detail

/// Whether the scopes every one of `Tools` needs are among `Supported`; a failed check names the tool, the
/// resource and the mode in `unsupported_scope<...>`.
template <auto& Supported, class... Tools>
concept ScopesSupported = detail::AllScopesSupported<first_unsupported_scope_t<Supported, Tools...>>;

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_AUTH_SCOPES_HPP
