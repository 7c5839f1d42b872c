// `retry` on a tool that declares no side effects: unknown is treated as
// non_idempotent (design note), so it is never retried. The error names the
// tool and the reason.
// expected-error: retry/repair needs a RetrySafe tool
// expected-error: retry_rejected<app::legacy_tool, tool_effects::reason::undeclared_side_effects>
#include <tool_effects/retry.hpp>

namespace app {
struct legacy_tool {
  int operator()(int) const { return 0; }
};
}  // namespace app

int main() {
  const tool_effects::retry_policy policy;
  int r = 0;
  (void)policy;
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  r = tool_effects::retry(policy, app::legacy_tool{}, 1);
#endif
  return r;
}
