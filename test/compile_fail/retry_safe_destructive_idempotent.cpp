// A destructive tool is never retry-safe, even when it also says idempotent:
// passing it where RetrySafe is required is rejected, naming the tool type
// and the failed concept.
// expected-error: app::wipe_account
// expected-error(gcc): requires +RetrySafe<Tool>.*is_retry_safe.*\[with T = app::wipe_account\]
// expected-error(clang): 'app::wipe_account' does not satisfy 'RetrySafe'
#include <tool_effects/side_effects.hpp>

namespace app {
struct upsert_prefs {
  using side_effects = tool_effects::effects<tool_effects::write, tool_effects::idempotent>;
};
struct wipe_account {
  using side_effects = tool_effects::effects<tool_effects::destructive, tool_effects::idempotent>;
};
}  // namespace app

template <tool_effects::RetrySafe Tool>
void retry(const Tool&) {}

void control() { retry(app::upsert_prefs{}); }

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
void bad() { retry(app::wipe_account{}); }
#endif
