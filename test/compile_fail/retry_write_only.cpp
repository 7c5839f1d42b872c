// `retry` on a tool that writes without declaring `idempotent`: re-running it
// may repeat its effect (a second email), so it is not RetrySafe. The error
// names the tool and the reason.
// expected-error: retry/repair needs a RetrySafe tool
// expected-error: retry_rejected<app::send_email, tool_effects::reason::non_idempotent_side_effect>
#include <tool_effects/retry.hpp>

namespace app {
struct send_email {
  using side_effects = tool_effects::effects<tool_effects::write, tool_effects::external, tool_effects::network>;
  int operator()(int) const { return 0; }
};
struct fetch_user {
  using side_effects = tool_effects::effects<tool_effects::read, tool_effects::idempotent>;
  int operator()(int) const { return 0; }
};
}  // namespace app

int main() {
  const tool_effects::retry_policy policy;
  int r = tool_effects::retry(policy, app::fetch_user{}, 1);  // fine: RetrySafe
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  r += tool_effects::retry(policy, app::send_email{}, 1);
#endif
  return r;
}
