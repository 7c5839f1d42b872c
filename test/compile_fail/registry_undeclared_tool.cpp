// A tool without a side-effect declaration cannot be registered: the error
// names the tool and the missing property.
// expected-error: tool_registry: this tool declares no side effects
// expected-error(gcc): with T = mystery_tool
// expected-error(clang): 'mystery_tool' does not satisfy 'DeclaresSideEffects'
#include <string_view>
#include <tool_effects/registry.hpp>

namespace te = tool_effects;

struct fetch_user {
  static constexpr std::string_view name = "fetch_user";
  using side_effects = te::effects<te::read>;
};
struct mystery_tool {
  static constexpr std::string_view name = "mystery_tool";
};

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
te::tool_registry<fetch_user, mystery_tool> registry;
#else
te::tool_registry<fetch_user> registry;
#endif

int main() { return registry.size() == 0 ? 1 : 0; }
