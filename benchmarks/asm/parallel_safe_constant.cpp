// Not built by CMake (benchmarks/ globs only its top-level *.cpp). Compile by
// hand to see that a predicate on a declared tool type is a constant:
//   g++ -std=c++20 -O2 -S -masm=intel -Iinclude -o - benchmarks/asm/parallel_safe_constant.cpp
//   clang++ -std=c++20 -O2 -S -masm=intel -Iinclude -o - benchmarks/asm/parallel_safe_constant.cpp
// Expected: each function is `mov eax, 1; ret` (true) or `xor eax, eax; ret`
// (false); no call, no load, no table. Results quoted in docs/benchmarks.md ("Runtime: the rules on effect_set vs hash sets").
#include <tool_effects/conflict.hpp>
#include <tool_effects/side_effects.hpp>

namespace app {
struct users {};
struct fetch_user {
  using side_effects = tool_effects::effects<tool_effects::reads<users>, tool_effects::idempotent>;
};
struct update_user {
  using side_effects = tool_effects::effects<tool_effects::writes<users>>;
};
}  // namespace app

bool fetch_is_parallel_safe() { return tool_effects::ParallelSafe<app::fetch_user>; }
bool update_is_parallel_safe() { return tool_effects::ParallelSafe<app::update_user>; }
bool update_is_retry_safe() { return tool_effects::RetrySafe<app::update_user>; }
bool fetch_and_update_conflict() { return tool_effects::conflicts_v<app::fetch_user, app::update_user>; }
