// A tool that declares an explicit empty set, `effects<>`, has unknown
// effects as much as an undeclared one: dispatched without an approver it
// does not compile, with the same diagnostic.
// expected-error: declare the tool's effects, or pass an approver
// expected-error: unknown_effects_call_without_approver<app::opaque_plugin>
#include <tool_effects/dispatch.hpp>

namespace app {
struct opaque_plugin {
  using side_effects = tool_effects::effects<>;
  int operator()(int x) const { return x; }
};
struct lookup {
  using side_effects = tool_effects::effects<tool_effects::read>;
  int operator()(int x) const { return x; }
};
}  // namespace app

int main() {
  namespace te = tool_effects;
  auto fine = te::run_plan(te::inline_executor{}, te::call(app::lookup{}, 1));
  auto approved = te::run_plan(te::inline_executor{}, te::run_options{}.with(te::approve_all()),
                               te::call(app::opaque_plugin{}, 1), te::call(app::lookup{}, 2));
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  auto bad = te::run_plan(te::inline_executor{}, te::call(app::lookup{}, 1), te::call(app::opaque_plugin{}, 1));
#endif
  return 0;
}
