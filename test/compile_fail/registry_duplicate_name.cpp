// Two tools registered under one name: the error names both tool types.
// expected-error: two tools share a name
// expected-error: duplicate_tool_name<fetch_user, fetch_user_v2, 0, 2>
#include <string_view>
#include <tool_effects/registry.hpp>

namespace te = tool_effects;

struct fetch_user {
  static constexpr std::string_view name = "fetch_user";
  using side_effects = te::effects<te::read>;
};
struct search_web {
  static constexpr std::string_view name = "search_web";
  using side_effects = te::effects<te::read, te::network>;
};
struct fetch_user_v2 {
  static constexpr std::string_view name = "fetch_user";
  using side_effects = te::effects<te::read, te::idempotent>;
};

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
te::tool_registry<fetch_user, search_web, fetch_user_v2> registry;
#else
te::tool_registry<fetch_user, search_web> registry;
#endif

int main() { return registry.size() == 0 ? 1 : 0; }
