// A destructive call passed to the dispatcher without an approver in the
// options: it could never be confirmed, so it does not compile. The error
// names the tool. (With `.with(tool_effects::approver(...))` it compiles.)
// expected-error: dispatched without an approver
// expected-error: destructive_call_without_approver<app::delete_account>
#include <tool_effects/dispatch.hpp>

namespace app {
struct accounts : tool_effects::resource<> {};
struct delete_account {
  using side_effects = tool_effects::effects<tool_effects::writes<accounts>, tool_effects::destructive>;
  bool operator()(int) const { return true; }
};
struct fetch_account {
  using side_effects = tool_effects::effects<tool_effects::reads<accounts>>;
  int operator()(int id) const { return id; }
};
}  // namespace app

int main() {
  namespace te = tool_effects;
  const auto approved = te::run_options{}.with(te::approver([](const te::confirmation_request&) {
    return te::confirmation::approve;
  }));
  auto fine = te::run_plan(te::inline_executor{}, approved, te::call(app::delete_account{}, 1));
  auto also_fine = te::run_plan(te::inline_executor{}, te::call(app::fetch_account{}, 1));
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  auto bad = te::run_plan(te::inline_executor{}, te::call(app::fetch_account{}, 1), te::call(app::delete_account{}, 1));
#endif
  return 0;
}
