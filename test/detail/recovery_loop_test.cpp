// The awaitable per-call entry point of the recovery loop
// (detail::run_call_async, detail/recovery.hpp), which no public runtime form
// reaches: its confirmation step awaits an awaitable approver, asks once per
// logical call, and a denial never runs the tool. (The dispatcher runs the
// same loop through `recover`: test/unit/dispatch_recovery_test.cpp.)
#include <tool_effects/detail/recovery.hpp>
#include <tool_effects/resource.hpp>
#include <tool_effects/side_effects.hpp>
#include <tool_effects/tags.hpp>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <string>
#include <vector>

namespace recovery_loop_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;

namespace {
struct accounts : te::resource<> {
  static constexpr std::string_view resource_name = "accounts";
};
struct delete_account {  // destructive, idempotent (deleting twice leaves the same state)
  using side_effects = te::effects<te::writes<accounts>, te::destructive, te::idempotent>;
  int calls = 0;
  std::vector<std::string> keys;
  int operator()(const te::attempt_context& c, int id) {
    ++calls;
    keys.push_back(c.idempotency_key);
    return id;
  }
};

template <class T>
T run_io(asio::awaitable<T> a) {
  asio::io_context io;
  auto f = asio::co_spawn(io, std::move(a), asio::use_future);
  io.run();
  return f.get();
}
}  // namespace

TEST(ConfirmationGate, TheAwaitableGateAwaitsAnAwaitableApprover) {
  int answered = 0;
  te::recovery_options o;
  o.approver = [&](const te::confirmation_request& r) -> asio::awaitable<te::confirmation> {
    ++answered;
    co_return r.idempotency_key == "yes" ? te::confirmation::approve : te::confirmation::deny;
  };
  delete_account t;
  int id = 5;
  EXPECT_EQ(run_io(te::detail::run_call_async(o, {"d", "yes", false}, te::side_effects_v<delete_account>, t, id)), 5);
  EXPECT_EQ(t.calls, 1);
  try {
    (void)run_io(te::detail::run_call_async(o, {"d", "no", false}, te::side_effects_v<delete_account>, t, id));
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::confirmation_denied);
  }
  EXPECT_EQ(t.calls, 1);
  EXPECT_EQ(answered, 2);
}
}  // namespace recovery_loop_test_ns
