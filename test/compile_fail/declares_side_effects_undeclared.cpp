// A tool that declares nothing, where DeclaresSideEffects is required: rejected,
// naming the tool type and the failed concept.
// expected-error: app::legacy_tool
// expected-error(gcc): requires +DeclaresSideEffects<Tool>.*undeclared.*\[with T = app::legacy_tool\]
// expected-error(clang): 'app::legacy_tool' does not satisfy 'DeclaresSideEffects'
#include <tool_effects/side_effects.hpp>

namespace app {
struct search {
  using side_effects = tool_effects::effects<tool_effects::read, tool_effects::network>;
};
struct legacy_tool {};
}  // namespace app

template <tool_effects::DeclaresSideEffects Tool>
void register_tool(const Tool&) {}

void control() { register_tool(app::search{}); }

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
void bad() { register_tool(app::legacy_tool{}); }
#endif
