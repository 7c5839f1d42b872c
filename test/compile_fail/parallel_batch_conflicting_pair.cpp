// Two tools that conflict, passed to a function constrained on ParallelBatch:
// rejected; the diagnostic names the pair (fetch_user, fetch_and_touch_user),
// the resource they collide on (user_record) and their positions.
// expected-error: conflicting_pair<(app::)?fetch_user, (app::)?fetch_and_touch_user, (app::)?user_record, 0, 1>
// expected-error(gcc): requires +ParallelBatch<Tools ...>
// expected-error(clang): 'tool_effects::ParallelBatch<app::fetch_user, app::fetch_and_touch_user>' evaluated to false
#include <tool_effects/conflict.hpp>

namespace app {
struct users_db {};
struct user_record : tool_effects::resource<users_db> {};
struct account_status {};
struct fetch_user {
  using side_effects = tool_effects::effects<tool_effects::reads<user_record>>;
};
struct fetch_status {
  using side_effects = tool_effects::effects<tool_effects::reads<account_status>>;
};
struct fetch_and_touch_user {  // also writes last-seen on the record
  using side_effects = tool_effects::effects<tool_effects::reads<user_record>, tool_effects::writes<user_record>>;
};
}  // namespace app

template <class... Tools>
  requires tool_effects::ParallelBatch<Tools...>
void run_together(const Tools&...) {}

void control() { run_together(app::fetch_user{}, app::fetch_status{}); }

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
void bad() { run_together(app::fetch_user{}, app::fetch_and_touch_user{}); }
#endif
