// A grant refers to the description it was granted for until it is released (the Coordinator contract, "the
// description must outlive the grant"), so a coordinator refuses a temporary description at compile time
// instead of letting the grant dangle (a test once passed one and crashed at -O0 under clang).
// expected-error(gcc): use of deleted function .*try_acquire
// expected-error(clang): call to deleted member function 'try_acquire'
#include <optional>

#include <tool_effects/coordination.hpp>

namespace te = tool_effects;

te::call_description account_write() {
  return te::describe_runtime("add_to_balance", {}, {{"accounts", te::access_mode::write, std::nullopt}});
}

int main() {
  te::local_coordinator c;
  const te::call_description named = account_write();  // a named description outlives its grant: fine
  std::optional<te::local_grant> ok = c.try_acquire(named);
  (void)ok;
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  std::optional<te::local_grant> bad = c.try_acquire(account_write());
  (void)bad;
#endif
}
