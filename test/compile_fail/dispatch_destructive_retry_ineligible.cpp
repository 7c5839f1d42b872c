// `allow_destructive_retry()` on a call whose tool may not be retried even
// with the opt-in (here: a non-idempotent write, not retry-safe apart from
// `destructive`) would be silently ignored, so it does not compile. The
// error names the tool. (On an idempotent delete it compiles.)
// expected-error: allow_destructive_retry\(\) on a call that may not be retried
// expected-error: destructive_retry_opt_in_rejected<app::append_log>
#include <tool_effects/call.hpp>
#include <tool_effects/tags.hpp>

namespace app {
struct logs : tool_effects::resource<> {};
struct append_log {
  using side_effects = tool_effects::effects<tool_effects::writes<logs>>;
  bool operator()(int) const { return true; }
};
struct delete_log {
  using side_effects = tool_effects::effects<tool_effects::writes<logs>, tool_effects::idempotent,
                                             tool_effects::destructive>;
  bool operator()(int) const { return true; }
};
}  // namespace app

int main() {
  namespace te = tool_effects;
  auto fine = te::call(app::delete_log{}, 1).allow_destructive_retry();
  (void)fine;
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  auto bad = te::call(app::append_log{}, 1).allow_destructive_retry();
  (void)bad;
#endif
  return 0;
}
