// A fault-injected soak of the dispatcher's runtime form (issue 12): random
// turns of runtime-described calls (reads, idempotent writes, appends,
// destructive and unknown tools, on shared and targeted resources) whose
// tasks throw transient and permanent errors, time out (fail after a delay)
// and hang (finish late), under a retry policy and a random approver, on a
// thread pool. Every attempt is instrumented (a logical clock at its start
// and end), and after each turn:
//  * every call has exactly one outcome (a value, an error or aborted), and
//    a value is the call's own;
//  * no call that may not be retried (`may_retry`) was invoked twice;
//  * no call that `needs_confirmation` ran without the approver's yes, and a
//    denied one never ran and failed with `confirmation_denied`;
//  * no two calls with conflicting accesses overlapped in time.
// TOOL_EFFECTS_SOAK_TURNS sets the number of turns (default 10,000; 1,000
// under sanitizers). The figures are printed (docs/recovery.md, "Reliability").
#include <tool_effects/dispatch.hpp>
#include <tool_effects/retry.hpp>

#include <gtest/gtest.h>

#include "soak_support.hpp"

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// Unity-built with the other recovery tests (test/CMakeLists.txt): all below is this file's own.
namespace recovery_soak_test_ns {

namespace te = tool_effects;
using namespace std::chrono_literals;

namespace {

using soak::logical_clock;
using soak::permanent_error;
using soak::timeout_error;
using soak::turns;

// What one call does, and what happened to it.
struct call_log {
  // plan
  int transient_failures = 0;  // attempts that time out before it succeeds
  bool permanent = false;      // every attempt fails permanently
  bool hangs = false;          // attempts take long
  bool approve = false;        // the approver's answer, if asked
  // record
  std::atomic<int> invocations{0};
  std::atomic<int> asked{0};
  std::mutex m;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals;
};

struct catalog_entry {
  const char* name;
  te::effect_set flags;
  std::vector<te::runtime_access> accesses;
  bool targeted;  // scoped accesses get a random target
};

const std::vector<catalog_entry>& catalog() {
  using te::access_mode;
  using te::effect;
  static const std::vector<catalog_entry> c{
      {"read_user", {effect::read}, {{"db/users", access_mode::read, std::nullopt}}, true},
      {"read_orders", {effect::read, effect::network}, {{"db/orders", access_mode::read, std::nullopt}}, false},
      {"set_pref", {effect::write, effect::idempotent}, {{"db/users", access_mode::write, std::nullopt}}, true},
      {"append_log", {effect::write}, {{"logs", access_mode::append, std::nullopt}}, false},
      {"delete_user", {effect::write, effect::destructive, effect::idempotent}, {{"db/users", access_mode::write, std::nullopt}}, true},
      {"drop_db", {effect::destructive}, {{"db", access_mode::write, std::nullopt}}, false},
      {"send_mail", {effect::external, effect::network}, {}, false},
      {"mcp_untrusted", {}, {}, false},  // unknown effects
  };
  return c;
}

struct figures {
  std::size_t turns = 0, calls = 0, attempts = 0, values = 0, errors = 0, aborted = 0, denied = 0, approved = 0,
              retried_calls = 0, exhausted = 0, unsafe = 0, conflicting_pairs = 0;
};

TEST(RecoverySoak, RandomFaultyTurnsKeepEveryGuarantee) {
  boost::asio::thread_pool pool(4);
  std::mt19937_64 rng(20261123);
  const auto policy = te::retry_policy{.max_attempts = 3, .base_delay = 5us, .max_delay = 50us,
                                       .is_transient = te::transient_on<timeout_error>(), .seed = 1};
  figures f;
  const std::size_t n_turns = turns();
  for (std::size_t turn = 0; turn < n_turns; ++turn) {
    const std::size_t n = 1 + rng() % 8;
    std::vector<te::call_description> calls;
    std::vector<std::unique_ptr<call_log>> logs;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& e = catalog()[rng() % catalog().size()];
      auto accesses = e.accesses;
      if (e.targeted && rng() % 3 != 0)
        for (auto& a : accesses) a.target = std::to_string(rng() % 3);
      calls.push_back(std::string(e.name) == "mcp_untrusted"
                          ? te::call_description{std::string(e.name) + "#" + std::to_string(i), {}, {}, true}
                          : te::describe_runtime(std::string(e.name) + "#" + std::to_string(i), e.flags, accesses));
      auto log = std::make_unique<call_log>();
      const auto r = rng() % 100;
      log->permanent = r < 10;
      log->transient_failures = r < 10 ? 0 : r < 40 ? 1 + static_cast<int>(rng() % 3) : 0;
      log->hangs = rng() % 100 < 2;
      log->approve = rng() % 100 < 70;
      logs.push_back(std::move(log));
    }
    std::vector<std::function<int()>> tasks;
    for (std::size_t i = 0; i < n; ++i)
      tasks.emplace_back([log = logs[i].get(), i]() -> int {
        const int k = ++log->invocations;
        const std::uint64_t start = logical_clock.fetch_add(1);
        if (log->hangs) std::this_thread::sleep_for(std::chrono::microseconds(200 + 100 * (i % 5)));
        bool fail_transient = k <= log->transient_failures;
        if (fail_transient) std::this_thread::sleep_for(20us);  // a time-out: fails after a delay
        const std::uint64_t end = logical_clock.fetch_add(1);
        {
          std::lock_guard lock(log->m);
          log->intervals.emplace_back(start, end);
        }
        if (log->permanent) throw permanent_error("permanent");
        if (fail_transient) throw timeout_error("timed out");
        return static_cast<int>(i);
      });
    const te::approver approver([&logs](const te::confirmation_request& req) {
      const std::string name(req.tool);
      call_log& log = *logs.at(std::stoul(name.substr(name.find('#') + 1)));
      ++log.asked;
      return log.approve ? te::confirmation::approve : te::confirmation::deny;
    });
    auto opts = te::run_options{}.with(policy).with(approver);
    opts.abort_on_error = rng() % 10 == 0;
    opts.max_concurrency = rng() % 4;
    const auto out = te::run_plan(pool, opts, std::span<const te::call_description>(calls), tasks);

    ++f.turns;
    ASSERT_EQ(out.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& o = out[i];
      const call_log& log = *logs[i];
      const te::effect_set effects = calls[i].exclusive ? te::effect_set{} : calls[i].effects;
      const int inv = log.invocations.load();
      ++f.calls;
      f.attempts += static_cast<std::size_t>(inv);
      if (inv > 1) ++f.retried_calls;
      // Exactly one outcome, and the call's own value.
      ASSERT_EQ(static_cast<int>(o.has_value()) + static_cast<int>(o.has_error()) + static_cast<int>(o.aborted()), 1)
          << "turn " << turn << " call " << i;
      if (o.has_value()) {
        ++f.values;
        EXPECT_EQ(o.value(), static_cast<int>(i));
      } else if (o.aborted()) {
        ++f.aborted;
        EXPECT_EQ(inv, 0) << "an aborted call never started";
      } else {
        ++f.errors;
        try {
          std::rethrow_exception(o.error());
        } catch (const te::call_failure& cf) {
          if (cf.reason() == te::failure_reason::confirmation_denied) {
            ++f.denied;
            EXPECT_EQ(inv, 0) << "a denied call never ran (turn " << turn << " call " << i << ")";
          }
          if (cf.reason() == te::failure_reason::retries_exhausted) ++f.exhausted;
          if (cf.reason() == te::failure_reason::unsafe_to_retry) ++f.unsafe;
        } catch (...) {
        }
      }
      // No call that may not be retried ran twice.
      if (!te::may_retry(effects)) {
        EXPECT_LE(inv, 1) << calls[i].name << " (turn " << turn << ")";
      }
      // Nothing that needs confirmation ran without a yes.
      if (te::needs_confirmation(effects)) {
        if (inv > 0) {
          EXPECT_EQ(log.asked.load(), 1) << calls[i].name;
          EXPECT_TRUE(log.approve) << calls[i].name << " ran without approval (turn " << turn << ")";
          ++f.approved;
        }
      } else {
        EXPECT_EQ(log.asked.load(), 0) << calls[i].name << " was asked for no reason";
      }
      EXPECT_LE(inv, static_cast<int>(policy.max_attempts));
    }
    // No two conflicting calls overlapped.
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) {
        if (!te::conflicts(calls[i], calls[j])) continue;
        ++f.conflicting_pairs;
        for (const auto& a : logs[i]->intervals)
          for (const auto& b : logs[j]->intervals)
            EXPECT_TRUE(a.second < b.first || b.second < a.first)
                << calls[i].name << " and " << calls[j].name << " overlapped (turn " << turn << ")";
      }
    if (::testing::Test::HasFailure()) break;  // one turn's report is enough
  }
  pool.join();
  std::printf(
      "soak: %zu turns, %zu calls, %zu attempts; outcomes: %zu values, %zu errors (%zu denied, %zu retries "
      "exhausted, %zu unsafe to retry), %zu aborted; %zu calls retried, %zu approved confirmations, %zu "
      "conflicting pairs kept apart\n",
      f.turns, f.calls, f.attempts, f.values, f.errors, f.denied, f.exhausted, f.unsafe, f.aborted, f.retried_calls,
      f.approved, f.conflicting_pairs);
  EXPECT_GT(f.denied, 0u);
  EXPECT_GT(f.retried_calls, 0u);
  EXPECT_GT(f.conflicting_pairs, 0u);
}

}  // namespace
}  // namespace recovery_soak_test_ns
