// Turn cancellation through json_tool_host (cancellation.hpp; the dispatcher's forms are tested in
// coordination_test.cpp): a model turn whose call waits for its grant behind another session's holder stops
// waiting when the turn is cancelled. The call fails with coordination_timeout and never runs, its in-turn
// successor never starts, and the session queued behind it is served once the holder releases. Control: the
// same turn without cancel() is still waiting after the same time, and runs once the holder releases.
#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/cancellation.hpp>
#include <tool_effects/coordination.hpp>
#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_coordination_test_ns {

namespace te = tool_effects;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {
bool wait_for_queued(const te::local_coordinator& c, std::size_t n) {
  for (int i = 0; i < 5000 && c.queued() != n; ++i) std::this_thread::sleep_for(1ms);
  return c.queued() == n;
}
te::call_description account_write(std::string name) {
  return te::describe_runtime(std::move(name), {}, {{"accounts", te::access_mode::write, std::nullopt}});
}
}  // namespace

TEST(JsonCoordination, CancellingAHostTurnEndsAWaitForAGrant) {
  boost::asio::thread_pool pool(2);
  for (const bool cancelled : {true, false}) {
    SCOPED_TRACE(cancelled ? "cancelled" : "control");
    te::local_coordinator coord;
    const te::call_description other_session = account_write("other session");  // outlives its grant
    std::optional<te::local_grant> holder = coord.try_acquire(other_session);
    ASSERT_TRUE(holder);
    te::tool_registry<> reg;
    te::json_tool_host<> host{reg};
    std::atomic<int> ran{0};
    host.add(te::dynamic_tool{"add_to_balance", account_write("add_to_balance"), {}},
             [&ran](const te::attempt_context&, const json&) { return json(++ran); });
    const auto calls = te::parse_tool_calls(R"([{"id": "1", "name": "add_to_balance", "arguments": {"n": 1}},
                                                {"id": "2", "name": "add_to_balance", "arguments": {"n": 2}}])");
    te::turn_cancellation cancel;
    const auto opts = te::run_options{}.with(coord).with(cancel);
    std::vector<te::outcome<json>> out;
    auto turn = std::async(std::launch::async, [&] { out = host.run(pool, opts, calls, "turn-1"); });
    struct release_on_exit {
      std::optional<te::local_grant>* g;
      ~release_on_exit() { g->reset(); }
    } release{&holder};
    ASSERT_TRUE(wait_for_queued(coord, 2)) << "the turn's first call waits behind the holder";
    if (cancelled) cancel.cancel();
    const auto waited = turn.wait_for(cancelled ? 10s : 100ms);
    if (cancelled) {
      ASSERT_EQ(waited, std::future_status::ready) << "the cancelled turn ended while its call waited";
      EXPECT_EQ(ran.load(), 0) << "nothing ran";
      ASSERT_EQ(out.size(), 2u);
      ASSERT_TRUE(out[0].has_error());
      try {
        std::rethrow_exception(out[0].error());
      } catch (const te::call_failure& f) {
        EXPECT_EQ(to_string(f.reason()), "coordination_timeout");
        EXPECT_EQ(f.record().last_error_message, "cancelled while waiting for the coordinator");
      } catch (...) {
        ADD_FAILURE() << "not a call_failure";
      }
      EXPECT_TRUE(out[1].aborted()) << "the in-turn successor never started";
      EXPECT_EQ(coord.queued(), 1u) << "only the other session's holder is left";
    } else {
      EXPECT_EQ(waited, std::future_status::timeout) << "without cancel() the call still waits";
      EXPECT_EQ(ran.load(), 0);
      holder.reset();
      ASSERT_EQ(turn.wait_for(10s), std::future_status::ready);
      EXPECT_EQ(ran.load(), 2) << "both calls ran once the holder released";
      ASSERT_EQ(out.size(), 2u);
      EXPECT_TRUE(out[0].has_value() && out[1].has_value());
    }
    holder.reset();
    EXPECT_EQ(coord.queued(), 0u);
  }
}

}  // namespace json_coordination_test_ns
