// Randomised property tests of the dispatcher under stress. Every call reports to an instrumented monitor
// when it starts and ends; across thousands of random plans (random static tools, random runtime
// descriptions with hierarchical paths and targets, random durations in 0-200 us, random failures) we assert:
//  1. no two conflicting calls ever overlap in time (checked against the pairwise rule at every start),
//  2. conflicting calls run in program order: every read sees exactly the writes/appends of the earlier
//     calls that overlap it (version counters), never a later one,
//  3. every result or error is delivered exactly once, to the right position, and each call ran once,
//  4. abort_on_error: an aborted call never ran, and every call that waits for a failed call is aborted,
//  5. max_concurrency: never more calls in flight than the limit.
// Sizes are kept small enough for ~seconds per binary, also under TSan and ASan/UBSan.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <tool_effects/dispatch.hpp>

// Unity-built with the other dispatch tests (test/CMakeLists.txt): all below is this file's own.
namespace dispatch_stress_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;

namespace {

struct call_failed : std::runtime_error {
  explicit call_failed(std::size_t i) : std::runtime_error("call " + std::to_string(i) + " failed"), index(i) {}
  std::size_t index;
};

// The instrumented world: who is running, what has been written, what each read saw.
class monitor {
 public:
  explicit monitor(std::vector<te::call_description> calls)
      : calls_(std::move(calls)), runs_(calls_.size(), 0), seen_(calls_.size()) {}

  void enter(std::size_t i) {
    std::lock_guard l(m_);
    ++runs_[i];
    for (const auto j : active_)
      if (te::conflicts(calls_[i], calls_[j])) ++overlaps_;
    active_.push_back(i);
    peak_ = std::max(peak_, active_.size());
    for (const auto& x : calls_[i].accesses)
      if (x.mode == te::access_mode::read) {
        std::size_t v = 0;
        for (const auto& w : writes_)
          if (te::accesses_overlap(x, w)) ++v;
        seen_[i].push_back(v);
      }
    for (const auto& y : calls_[i].accesses)
      if (y.mode != te::access_mode::read) writes_.push_back(y);
  }
  void leave(std::size_t i) {
    std::lock_guard l(m_);
    active_.erase(std::find(active_.begin(), active_.end(), i));
  }

  // The checks that need the outcomes.
  template <class Outcome>
  void verify(const std::vector<Outcome>& out, const std::vector<bool>& fails, bool abort_on_error,
              std::size_t limit, const char* what) {
    const auto plan = te::plan_calls(calls_);
    ASSERT_EQ(overlaps_, 0u) << what << ": conflicting calls overlapped";
    if (limit != 0) {
      ASSERT_LE(peak_, limit) << what;
    }
    std::vector<bool> failed(calls_.size(), false);
    for (std::size_t i = 0; i < calls_.size(); ++i) {
      if (out[i].aborted()) {
        ASSERT_TRUE(abort_on_error) << what << ": call " << i << " aborted without the option";
        ASSERT_EQ(runs_[i], 0) << what << ": aborted call " << i << " ran";
        continue;
      }
      ASSERT_EQ(runs_[i], 1) << what << ": call " << i << " ran " << runs_[i] << " times";
      if (fails[i]) {
        ASSERT_TRUE(out[i].has_error()) << what << " " << i;
        try {
          std::rethrow_exception(out[i].error());
        } catch (const call_failed& e) {
          ASSERT_EQ(e.index, i) << what;
        }
        failed[i] = true;
      } else {
        ASSERT_EQ(out[i].value(), static_cast<int>(i) * 3 + 1) << what;
      }
      // Reads saw exactly the writes of the earlier, executed calls they overlap.
      std::size_t r = 0;
      for (const auto& x : calls_[i].accesses) {
        if (x.mode != te::access_mode::read) continue;
        std::size_t expected = 0;
        for (std::size_t j = 0; j < i; ++j)
          if (runs_[j] == 1)
            for (const auto& y : calls_[j].accesses)
              if (y.mode != te::access_mode::read && te::accesses_overlap(x, y)) ++expected;
        ASSERT_EQ(seen_[i][r], expected) << what << ": call " << i << " read " << x.resource;
        ++r;
      }
    }
    if (!abort_on_error) return;
    for (std::size_t i = 0; i < calls_.size(); ++i)
      for (const auto j : plan.predecessors(i)) {
        if (failed[j] || out[j].aborted()) {
          ASSERT_TRUE(out[i].aborted()) << what << ": call " << i << " waits for failed/aborted call " << j;
        }
      }
  }

 private:
  std::mutex m_;
  std::vector<te::call_description> calls_;
  std::vector<int> runs_;
  std::vector<std::vector<std::size_t>> seen_;
  std::vector<std::size_t> active_;
  std::vector<te::runtime_access> writes_;
  std::size_t overlaps_ = 0, peak_ = 0;
};

// One call's body: enter, wait, leave, return i*3+1 or throw.
int body(monitor& m, std::size_t i, std::chrono::microseconds d, bool fail) {
  m.enter(i);
  std::this_thread::sleep_for(d);
  m.leave(i);
  if (fail) throw call_failed(i);
  return static_cast<int>(i) * 3 + 1;
}
asio::awaitable<int> async_body(monitor& m, std::size_t i, std::chrono::microseconds d, bool fail) {
  m.enter(i);
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
  m.leave(i);
  if (fail) throw call_failed(i);
  co_return static_cast<int>(i) * 3 + 1;
}

te::call_description random_description(std::mt19937& rng, std::size_t i) {
  static const std::vector<std::string> paths{"", "db", "db/users", "db/orders", "db/users/vip", "files", "log", "dbx"};
  static const std::vector<std::string> targets{"a", "b"};
  std::uniform_int_distribution<int> pct(0, 99);
  if (pct(rng) < 4) return te::call_description{"unknown" + std::to_string(i), {}, {}, true};
  std::vector<te::runtime_access> acc;
  const int k = std::uniform_int_distribution<int>(1, 2)(rng);
  for (int a = 0; a < k; ++a) {
    te::runtime_access x;
    // Bias towards a few resources so conflicts are common.
    x.resource = paths[std::uniform_int_distribution<std::size_t>(0, paths.size() - 1)(rng) % (pct(rng) < 70 ? 4 : 8)];
    if (x.resource.empty() && pct(rng) < 80) x.resource = "db/users";
    x.mode = static_cast<te::access_mode>(std::uniform_int_distribution<int>(0, 2)(rng));
    if (pct(rng) < 30) x.target = targets[std::uniform_int_distribution<std::size_t>(0, 1)(rng)];
    acc.push_back(std::move(x));
  }
  return te::describe_runtime("call" + std::to_string(i), {}, std::move(acc));
}

struct random_turn {
  std::vector<te::call_description> calls;
  std::vector<std::chrono::microseconds> durations;
  std::vector<bool> fails;
};
random_turn make_turn(std::mt19937& rng, std::vector<te::call_description> calls, int fail_pct) {
  random_turn t;
  t.calls = std::move(calls);
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    t.durations.emplace_back(std::uniform_int_distribution<int>(0, 200)(rng));
    t.fails.push_back(std::uniform_int_distribution<int>(0, 99)(rng) < fail_pct);
  }
  return t;
}

// Scheduling stress: unknown (undeclared, exclusive) calls run unconfirmed, by the explicit opt-out.
using stress_options = te::dispatch_options<te::run_unknown_tools_unconfirmed>;

stress_options random_options(std::mt19937& rng) {
  stress_options o;
  o.abort_on_error = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
  o.max_concurrency = std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? std::uniform_int_distribution<std::size_t>(1, 3)(rng) : 0;
  return o;
}

// The fixed family of static tools. Each knows its description (describe<T>), so the monitor checks it with
// the same pairwise rule.
struct users_table : te::resource<> {
  static constexpr std::string_view resource_name = "users";
};
struct vip : te::resource<users_table> {
  static constexpr std::string_view resource_name = "vip";
};
struct audit_log : te::resource<> {
  static constexpr std::string_view resource_name = "audit";
};
struct tool_base {
  monitor* m;
  std::size_t i;
  std::chrono::microseconds d;
  bool fail;
  int operator()() const { return body(*m, i, d, fail); }
};
struct read_users : tool_base { using side_effects = te::effects<te::reads<users_table>>; };
struct write_users : tool_base { using side_effects = te::effects<te::writes<users_table>>; };
struct write_vip : tool_base { using side_effects = te::effects<te::writes<vip>>; };
struct read_vip_append_audit : tool_base { using side_effects = te::effects<te::reads<vip>, te::appends<audit_log>>; };
struct append_audit : tool_base { using side_effects = te::effects<te::appends<audit_log>>; };
struct read_audit : tool_base { using side_effects = te::effects<te::reads<audit_log>>; };
struct undeclared_tool : tool_base {};
struct async_write_vip {
  using side_effects = te::effects<te::writes<vip>>;
  monitor* m;
  std::size_t i;
  std::chrono::microseconds d;
  bool fail;
  asio::awaitable<int> operator()() const { return async_body(*m, i, d, fail); }
};

template <class... Tools>
void run_static_pack(asio::thread_pool& pool, std::mt19937& rng, int rounds, const char* what) {
  for (int round = 0; round < rounds; ++round) {
    auto turn = make_turn(rng, {te::describe<Tools>()...}, 10);
    monitor m(turn.calls);
    const auto opts = random_options(rng);
    auto results = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return te::run_plan(pool, opts, te::call(Tools{&m, I, turn.durations[I], turn.fails[I]})...);
    }(std::index_sequence_for<Tools...>{});
    std::vector<te::outcome<int>> out;
    results.apply([&](auto&... o) { (out.push_back(std::move(o)), ...); });
    m.verify(out, turn.fails, opts.abort_on_error, opts.max_concurrency, what);
    if (::testing::Test::HasFatalFailure()) return;
  }
}
}  // namespace

TEST(DispatchStress, RandomStaticTurns) {
  asio::thread_pool pool(4);
  std::mt19937 rng(2024);
  run_static_pack<write_users, read_users, read_vip_append_audit, write_vip, read_users, append_audit, read_audit,
                  write_users>(pool, rng, 150, "pack A");
  run_static_pack<append_audit, append_audit, read_vip_append_audit, write_vip, read_vip_append_audit, read_audit,
                  write_vip, read_users>(pool, rng, 150, "pack B");
  run_static_pack<read_users, read_users, undeclared_tool, read_users, write_vip, read_vip_append_audit,
                  undeclared_tool, read_users>(pool, rng, 100, "pack C");
  run_static_pack<write_vip, async_write_vip, read_vip_append_audit, async_write_vip, read_users, write_users,
                  async_write_vip, read_audit>(pool, rng, 150, "pack D (awaitable)");
}

TEST(DispatchStress, RandomRuntimeTurns) {
  asio::thread_pool pool(4);
  std::mt19937 rng(77);
  for (int round = 0; round < 1200; ++round) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 14)(rng);
    std::vector<te::call_description> calls;
    for (std::size_t i = 0; i < n; ++i) calls.push_back(random_description(rng, i));
    auto turn = make_turn(rng, calls, 8);
    monitor m(turn.calls);
    const auto opts = random_options(rng);
    std::vector<te::outcome<int>> out;
    if (round % 3 == 0) {  // awaitable tasks (timers)
      std::vector<std::function<asio::awaitable<int>()>> tasks;
      for (std::size_t i = 0; i < n; ++i)
        tasks.emplace_back([&m, &turn, i] { return async_body(m, i, turn.durations[i], turn.fails[i]); });
      out = te::run_plan(pool, opts, turn.calls, tasks);
    } else {
      std::vector<std::function<int()>> tasks;
      for (std::size_t i = 0; i < n; ++i)
        tasks.emplace_back([&m, &turn, i] { return body(m, i, turn.durations[i], turn.fails[i]); });
      if (round % 3 == 1)
        out = te::run_plan(asio::make_strand(pool), opts, turn.calls, tasks);
      else
        out = te::run_plan(pool, opts, turn.calls, tasks);
    }
    ASSERT_EQ(out.size(), n);
    m.verify(out, turn.fails, opts.abort_on_error, opts.max_concurrency, "runtime turn");
    if (HasFatalFailure()) return;
  }
}

TEST(DispatchStress, InlineExecutorIsDeterministic) {
  std::mt19937 rng(5);
  for (int round = 0; round < 300; ++round) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 12)(rng);
    std::vector<te::call_description> calls;
    for (std::size_t i = 0; i < n; ++i) calls.push_back(random_description(rng, i));
    auto turn = make_turn(rng, calls, 15);
    for (auto& d : turn.durations) d = std::chrono::microseconds(0);
    monitor m(turn.calls);
    const stress_options opts{.abort_on_error = true};
    std::vector<std::size_t> order;
    std::vector<std::function<int()>> tasks;
    for (std::size_t i = 0; i < n; ++i)
      tasks.emplace_back([&, i] {
        order.push_back(i);
        return body(m, i, turn.durations[i], turn.fails[i]);
      });
    const auto out = te::run_plan(te::inline_executor{}, opts, turn.calls, tasks);
    m.verify(out, turn.fails, true, 1, "inline");
    // Program order, and with abort_on_error nothing runs after the first failure.
    ASSERT_TRUE(std::is_sorted(order.begin(), order.end()));
    const auto first_fail = std::find(turn.fails.begin(), turn.fails.end(), true) - turn.fails.begin();
    ASSERT_EQ(order.size(), std::min<std::size_t>(n, static_cast<std::size_t>(first_fail) + 1));
    if (HasFatalFailure()) return;
  }
}
}  // namespace dispatch_stress_test_ns
