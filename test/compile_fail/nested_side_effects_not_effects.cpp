// A tool whose nested `side_effects` is not an effects<...> is rejected by a
// static_assert that says so, with the tool type in the instantiation.
// expected-error: nested .side_effects. must be a tool_effects::effects<
// expected-error: nested_side_effects<app::bad_tool>
// expected-error(gcc): is_effects<T>::value \[with T = int\]
// expected-error(clang): 'int'.* does not satisfy 'EffectsList'
#include <tool_effects/side_effects.hpp>

namespace app {
struct good_tool {
  using side_effects = tool_effects::effects<tool_effects::read>;
};
struct bad_tool {
  using side_effects = int;  // meant effects<read>, wrote something else
};
}  // namespace app

static_assert(tool_effects::ParallelSafe<app::good_tool>);

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
constexpr bool bad = tool_effects::ParallelSafe<app::bad_tool>;
#endif
