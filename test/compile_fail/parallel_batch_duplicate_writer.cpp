// A writing tool listed twice in a batch conflicts with itself: rejected; the
// diagnostic names the tool twice, the resource and the two positions.
// expected-error: conflicting_pair<(app::)?save_draft, (app::)?save_draft, (app::)?drafts, 1, 2>
// expected-error(gcc): requires +ParallelBatch<Tools ...>
// expected-error(clang): 'tool_effects::ParallelBatch<app::read_inbox, app::save_draft, app::save_draft>' evaluated to false
#include <tool_effects/conflict.hpp>

namespace app {
struct mail {};
struct inbox : tool_effects::resource<mail> {};
struct drafts : tool_effects::resource<mail> {};
struct read_inbox {
  using side_effects = tool_effects::effects<tool_effects::reads<inbox>>;
};
struct save_draft {
  using side_effects = tool_effects::effects<tool_effects::writes<drafts>, tool_effects::idempotent>;
};
}  // namespace app

template <class... Tools>
  requires tool_effects::ParallelBatch<Tools...>
void run_together(const Tools&...) {}

void control() { run_together(app::read_inbox{}, app::save_draft{}, app::read_inbox{}); }

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
void bad() { run_together(app::read_inbox{}, app::save_draft{}, app::save_draft{}); }
#endif
