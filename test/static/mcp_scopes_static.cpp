// The scopes of least privilege (<tool_effects/mcp/auth/scopes.hpp>): derived from the declared effects by one
// rule, checked at compile time against the scopes a server publishes; the failed check names the tool, the
// resource and the mode. Compile-only.
#include <array>
#include <string_view>
#include <type_traits>

#include <tool_effects/mcp/auth/scopes.hpp>

namespace te = tool_effects;

namespace mcp_scopes_static {
struct db : te::resource<> {
  static constexpr std::string_view resource_name = "db";
};
struct accounts : te::resource<db> {
  static constexpr std::string_view resource_name = "accounts";
};
struct vault : te::resource<> {
  static constexpr std::string_view resource_name = "vault";
};
struct get_balance {
  using side_effects = te::effects<te::reads<accounts>>;
};
struct deposit {
  using side_effects = te::effects<te::reads<accounts>, te::writes<accounts>>;
};
struct audit {
  using side_effects = te::effects<te::appends<vault>>;
};
struct read_all {
  using side_effects = te::effects<te::read>;  // unscoped: every resource
};
struct mystery {};  // undeclared: unknown

inline constexpr std::array<std::string_view, 2> bank{"db/accounts:read", "db/accounts:write"};
inline constexpr std::array<std::string_view, 5> wide{"db/accounts:read", "db/accounts:write", "vault:write",
                                                      "all:read", "tools:unknown"};

// The rule, on values: a read needs ":read", a write or an append ":write"; the root is "all".
static_assert(te::mcp_scope_rule{}.names("db/accounts:read", "db/accounts", te::access_mode::read));
static_assert(te::mcp_scope_rule{}.names("vault:write", "vault", te::access_mode::append));
static_assert(te::mcp_scope_rule{}.names("all:read", "", te::access_mode::read));
static_assert(!te::mcp_scope_rule{}.names("db/accounts:read", "db/accounts", te::access_mode::write));
static_assert(!te::mcp_scope_rule{}.names("db/accounts:reads", "db/accounts", te::access_mode::read));

static_assert(te::ScopesSupported<bank, get_balance, deposit>);
static_assert(te::ScopesSupported<wide, get_balance, deposit, audit, read_all, mystery>);
static_assert(!te::ScopesSupported<bank, get_balance, audit>);
static_assert(std::is_same_v<te::first_unsupported_scope_t<bank, get_balance, audit>,
                             te::unsupported_scope<audit, vault, te::access_mode::append>>);
static_assert(std::is_same_v<te::first_unsupported_scope_t<bank, mystery>,
                             te::unsupported_scope<mystery, te::everything, te::access_mode::write>>);
static_assert(std::is_same_v<te::first_unsupported_scope_t<bank, read_all>,
                             te::unsupported_scope<read_all, te::everything, te::access_mode::read>>);
}  // namespace mcp_scopes_static
