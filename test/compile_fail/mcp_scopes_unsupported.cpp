// A server whose tools need a scope it does not publish: the static check of least privilege fails, and the
// diagnostic names the tool, the resource and the mode.
// expected-error: ScopesSupported
// expected-error: unsupported_scope<.*issue_token.*vault.*
#include <array>
#include <string_view>

#include <tool_effects/mcp/auth/scopes.hpp>

namespace te = tool_effects;

struct accounts : te::resource<> {
  static constexpr std::string_view resource_name = "accounts";
};
struct vault : te::resource<> {
  static constexpr std::string_view resource_name = "vault";
};
struct get_balance {
  using side_effects = te::effects<te::reads<accounts>>;
};
struct issue_token {
  using side_effects = te::effects<te::writes<vault>>;
};
inline constexpr std::array<std::string_view, 2> published{"accounts:read", "accounts:write"};

static_assert(te::ScopesSupported<published, get_balance>);
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
static_assert(te::ScopesSupported<published, get_balance, issue_token>);
#endif

int main() {}
