// `retry_async` on a destructive tool, even one declared idempotent: a
// destructive call is never retried automatically (only a dispatcher call that
// opts in explicitly may be). The error names the tool and the reason.
// expected-error: retry/repair needs a RetrySafe tool
// expected-error: retry_rejected<app::delete_account, tool_effects::reason::destructive>
#include <tool_effects/retry.hpp>

namespace app {
struct delete_account {
  using side_effects = tool_effects::effects<tool_effects::write, tool_effects::destructive, tool_effects::idempotent>;
  int operator()(int) const { return 0; }
};
struct upsert_preferences {
  using side_effects = tool_effects::effects<tool_effects::write, tool_effects::idempotent>;
  int operator()(int) const { return 0; }
};
}  // namespace app

int main() {
  auto fine = tool_effects::retry_async(tool_effects::retry_policy{}, app::upsert_preferences{}, 1);
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  auto bad = tool_effects::retry_async(tool_effects::retry_policy{}, app::delete_account{}, 1);
#endif
  return 0;
}
