// A call of a tool that declares nothing (unknown effects: it may do
// anything, destructive included) passed to the dispatcher without an
// approver: it could never be confirmed, so it does not compile, and the
// error says what to do. (With an approver, or the explicit
// `run_unknown_tools_unconfirmed` extra, it compiles.)
// expected-error: declare the tool's effects, or pass an approver
// expected-error: unknown_effects_call_without_approver<app::run_script>
#include <tool_effects/dispatch.hpp>

namespace app {
struct run_script {  // no declaration: unknown
  int operator()(int x) const { return x; }
};
}  // namespace app

int main() {
  namespace te = tool_effects;
  auto approved = te::run_plan(te::inline_executor{}, te::run_options{}.with(te::approve_all()),
                               te::call(app::run_script{}, 1));
  auto unconfirmed = te::run_plan(te::inline_executor{}, te::run_options{}.with(te::run_unknown_tools_unconfirmed{}),
                                  te::call(app::run_script{}, 1));
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  auto bad = te::run_plan(te::inline_executor{}, te::call(app::run_script{}, 1));
#endif
  return 0;
}
