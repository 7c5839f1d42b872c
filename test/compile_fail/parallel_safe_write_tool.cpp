// A tool that writes, passed to a function template constrained on
// ParallelSafe: rejected, naming the tool type and the failed concept.
// expected-error: app::write_user
// expected-error(gcc): requires +ParallelSafe<Tool>.*is_parallel_safe.*\[with T = app::write_user\]
// expected-error(clang): 'app::write_user' does not satisfy 'ParallelSafe'
#include <tool_effects/side_effects.hpp>

namespace app {
struct users {};
struct read_user {
  using side_effects = tool_effects::effects<tool_effects::reads<users>>;
};
struct write_user {
  using side_effects = tool_effects::effects<tool_effects::writes<users>>;
};
}  // namespace app

template <tool_effects::ParallelSafe Tool>
void run_in_parallel(const Tool&) {}

void control() { run_in_parallel(app::read_user{}); }

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
void bad() { run_in_parallel(app::write_user{}); }
#endif
