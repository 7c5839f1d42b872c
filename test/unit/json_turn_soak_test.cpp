// A fault-injected soak through `json_tool_host` (issue 12): random model turns
// in random vendor shapes (OpenAI Chat message, Anthropic content, plain
// array), mixing good calls with bad model output (truncated argument text,
// arguments that are not an object, hallucinated tool names), against dynamic
// tools (reads, idempotent writes, appends, destructive and unknown tools, on
// targeted and shared resources) whose attempts throw transient and permanent
// errors, time out (fail after a delay) and hang (finish late), under a retry
// policy and a random approver, on a thread pool. Every attempt is
// instrumented (a logical clock at its start and end); after each turn:
//  * every call has exactly one outcome, and a value is the call's own;
//  * a bad call failed with its reason (`invalid_arguments`, `unknown_tool`),
//    ran nothing, and did not stop its neighbours;
//  * no call whose tool may not be retried was invoked twice;
//  * no call that `needs_confirmation` ran without the approver's yes;
//  * no two calls with conflicting accesses (as planned, with targets)
//    overlapped in time;
//  * every attempt of one call carried the call's own idempotency key (the
//    one the approver was asked about), and no two calls of the turn shared one.
// TOOL_EFFECTS_SOAK_TURNS sets the number of turns (default 10,000; 1,000 under
// sanitizers). The figures are printed (docs/recovery.md, "Reliability").
#include <tool_effects/json.hpp>

#include <gtest/gtest.h>

#include "soak_support.hpp"

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_turn_soak_test_ns {

namespace te = tool_effects;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

using soak::logical_clock;
using soak::permanent_error;
using soak::timeout_error;
using soak::turns;

// What one call of a turn does (decided by the test, found by the tool through the call's "k" argument), and
// what happened to it.
struct call_log {
  int transient_failures = 0;
  bool permanent = false;
  bool hangs = false;
  bool approve = false;
  std::atomic<int> invocations{0};
  std::atomic<int> asked{0};
  std::mutex m;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals;
  std::set<std::string> keys;
};

struct turn_state {
  std::vector<std::unique_ptr<call_log>> logs;
};

struct tool_spec {
  const char* name;
  te::effect_set flags;
  std::vector<te::runtime_access> accesses;
  bool exclusive;  // unknown effects: conflicts with everything
};

const std::vector<tool_spec>& tools() {
  using te::access_mode;
  using te::effect;
  static const std::vector<tool_spec> t{
      {"read_user", {effect::read}, {{"db/users", access_mode::read, std::nullopt}}, false},
      {"read_orders", {effect::read, effect::network}, {{"db/orders", access_mode::read, std::nullopt}}, false},
      {"set_pref", {effect::write, effect::idempotent}, {{"db/users", access_mode::write, std::nullopt}}, false},
      {"append_log", {effect::write}, {{"logs", access_mode::append, std::nullopt}}, false},
      {"delete_user",
       {effect::write, effect::destructive, effect::idempotent},
       {{"db/users", access_mode::write, std::nullopt}},
       false},
      {"send_mail", {effect::external, effect::network}, {}, false},
      {"untrusted_tool", {}, {}, true},
  };
  return t;
}

struct figures {
  std::size_t turns = 0, calls = 0, bad_calls = 0, attempts = 0, values = 0, errors = 0, aborted = 0, denied = 0,
              approved = 0, retried_calls = 0, conflicting_pairs = 0;
};

// The call in the vendor shape `shape` (0: OpenAI Chat, 1: Anthropic, 2: plain); `bad` 1: truncated argument
// text (OpenAI) or a non-object (others), 2: a hallucinated tool name.
json call_item(int shape, const std::string& id, const std::string& name, const json& args, int bad) {
  const std::string tool = bad == 2 ? name + "_v2" : name;
  if (shape == 0) {
    std::string text = args.dump();
    if (bad == 1) text.resize(text.size() / 2);  // what a model emits when it hits its token limit
    return {{"id", id}, {"type", "function"}, {"function", {{"name", tool}, {"arguments", text}}}};
  }
  const json input = bad == 1 ? json("not an object") : args;
  if (shape == 1) return {{"type", "tool_use"}, {"id", id}, {"name", tool}, {"input", input}};
  return {{"id", id}, {"name", tool}, {"arguments", input}};
}

TEST(JsonTurnSoak, RandomFaultyModelTurnsKeepEveryGuarantee) {
  boost::asio::thread_pool pool(4);
  std::mt19937_64 rng(20261124);
  turn_state state;
  std::mutex state_mutex;  // guards `state.logs` (the vector; each log has its own mutex)

  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  for (const auto& spec : tools()) {
    te::dynamic_tool t;
    t.name = spec.name;
    t.description = spec.exclusive ? te::call_description{spec.name, {}, {}, true}
                                   : te::describe_runtime(spec.name, spec.flags, spec.accesses);
    t.identity.target_arg = "id";
    host.add(std::move(t), [&state, &state_mutex](const te::attempt_context& ctx, const json& args) -> json {
      call_log* log = nullptr;
      {
        const std::lock_guard lock(state_mutex);
        log = state.logs.at(args.at("k").get<std::size_t>()).get();
      }
      const int k = ++log->invocations;
      const std::uint64_t start = logical_clock.fetch_add(1);
      if (log->hangs) std::this_thread::sleep_for(300us);
      const bool fail_transient = k <= log->transient_failures;
      if (fail_transient) std::this_thread::sleep_for(20us);  // a time-out: fails after a delay
      const std::uint64_t end = logical_clock.fetch_add(1);
      {
        const std::lock_guard lock(log->m);
        log->intervals.emplace_back(start, end);
        log->keys.insert(ctx.idempotency_key);
      }
      if (log->permanent) throw permanent_error("permanent");
      if (fail_transient) throw timeout_error("timed out");
      return args.at("k");
    });
  }

  const auto policy = te::retry_policy{.max_attempts = 3, .base_delay = 5us, .max_delay = 50us,
                                       .is_transient = te::transient_on<timeout_error>(), .seed = 1};
  figures f;
  const std::size_t n_turns = turns();
  for (std::size_t turn = 0; turn < n_turns; ++turn) {
    const std::size_t n = 1 + rng() % 8;
    const int shape = static_cast<int>(rng() % 3);
    std::vector<int> bad(n, 0);
    std::vector<std::size_t> spec_of(n);
    json items = json::array();
    {
      const std::lock_guard lock(state_mutex);
      state.logs.clear();
      for (std::size_t i = 0; i < n; ++i) {
        auto log = std::make_unique<call_log>();
        const auto r = rng() % 100;
        log->permanent = r < 10;
        log->transient_failures = r < 10 ? 0 : r < 40 ? 1 + static_cast<int>(rng() % 3) : 0;
        log->hangs = rng() % 100 < 2;
        log->approve = rng() % 100 < 70;
        state.logs.push_back(std::move(log));
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      spec_of[i] = rng() % tools().size();
      const auto b = rng() % 100;
      bad[i] = b < 5 ? 1 : b < 10 ? 2 : 0;
      json args = {{"k", i}, {"id", std::to_string(rng() % 3)}, {"note", "turn " + std::to_string(turn)}};
      items.push_back(call_item(shape, "call_" + std::to_string(turn) + "_" + std::to_string(i),
                                tools()[spec_of[i]].name, args, bad[i]));
    }
    const json response = shape == 0   ? json{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", items}}
                          : shape == 1 ? json{{"role", "assistant"}, {"content", items}, {"stop_reason", "tool_use"}}
                                       : items;
    const auto calls = te::parse_tool_calls(response);
    ASSERT_EQ(calls.size(), n) << response.dump();
    const te::turn_plan plan = host.plan(calls);

    // The keys the host derives (identity + scope/id): the approver finds the call by the key it is asked about.
    const std::string scope = "soak/" + std::to_string(turn);
    std::map<std::string, std::size_t> call_of_key;
    std::vector<std::string> expected_key(n);
    for (std::size_t i = 0; i < n; ++i)
      if (!plan.failures[i]) {
        std::string call_scope = scope;
        call_scope += '/';
        call_scope += calls[i].id;
        expected_key[i] = te::idempotency_key(plan.identities[i], call_scope);
        EXPECT_TRUE(call_of_key.emplace(expected_key[i], i).second) << "two calls share the key " << expected_key[i];
      }
    const te::approver approver([&](const te::confirmation_request& req) {
      const auto it = call_of_key.find(std::string(req.idempotency_key));
      if (it == call_of_key.end()) {
        ADD_FAILURE() << "asked about an unknown key " << req.idempotency_key;
        return te::confirmation::deny;
      }
      call_log& log = *state.logs[it->second];
      ++log.asked;
      return log.approve ? te::confirmation::approve : te::confirmation::deny;
    });
    auto opts = te::run_options{}.with(policy).with(approver);
    opts.abort_on_error = rng() % 10 == 0;
    opts.max_concurrency = rng() % 4;
    const auto out = host.run(pool, opts, calls, scope);

    ++f.turns;
    ASSERT_EQ(out.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& o = out[i];
      call_log& log = *state.logs[i];
      const int inv = log.invocations.load();
      ++f.calls;
      f.attempts += static_cast<std::size_t>(inv);
      if (inv > 1) ++f.retried_calls;
      ASSERT_EQ(static_cast<int>(o.has_value()) + static_cast<int>(o.has_error()) + static_cast<int>(o.aborted()), 1)
          << "turn " << turn << " call " << i;
      if (bad[i] != 0) {  // bad model output fails alone, with its reason, and runs nothing
        ++f.bad_calls;
        ASSERT_TRUE(o.has_error()) << "turn " << turn << " call " << i;
        EXPECT_EQ(inv, 0);
        try {
          std::rethrow_exception(o.error());
        } catch (const te::call_failure& cf) {
          EXPECT_EQ(cf.reason(), bad[i] == 1 ? te::failure_reason::invalid_arguments : te::failure_reason::unknown_tool)
              << cf.what();
        } catch (...) {
          ADD_FAILURE() << "a bad call's error is not a call_failure";
        }
        continue;
      }
      if (o.has_value()) {
        ++f.values;
        EXPECT_EQ(o.value(), json(i));
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
            EXPECT_EQ(inv, 0) << "a denied call never ran";
          }
        } catch (...) {
        }
      }
      const auto& spec = tools()[spec_of[i]];
      const te::effect_set effects = spec.exclusive ? te::effect_set{} : plan.calls[i].effects;
      if (!te::may_retry(effects)) {
        EXPECT_LE(inv, 1) << spec.name << " ran twice (turn " << turn << ")";
      }
      if (te::needs_confirmation(effects)) {
        if (inv > 0) {
          EXPECT_EQ(log.asked.load(), 1) << spec.name;
          EXPECT_TRUE(log.approve) << spec.name << " ran without approval (turn " << turn << ")";
          ++f.approved;
        }
      } else {
        EXPECT_EQ(log.asked.load(), 0) << spec.name << " was asked for no reason";
      }
      EXPECT_LE(inv, static_cast<int>(policy.max_attempts));
      EXPECT_LE(log.keys.size(), 1U) << "one key for every attempt of a call";
      for (const auto& k : log.keys) EXPECT_EQ(k, expected_key[i]) << "the attempts carry the call's own key";
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) {
        if (bad[i] != 0 || bad[j] != 0 || !te::conflicts(plan.calls[i], plan.calls[j])) continue;
        ++f.conflicting_pairs;
        for (const auto& a : state.logs[i]->intervals)
          for (const auto& b : state.logs[j]->intervals)
            EXPECT_TRUE(a.second < b.first || b.second < a.first)
                << calls[i].name << " and " << calls[j].name << " overlapped (turn " << turn << ")";
      }
    if (::testing::Test::HasFailure()) break;  // one turn's report is enough
  }
  pool.join();
  std::printf(
      "json soak: %zu turns, %zu calls (%zu bad model output), %zu attempts; outcomes: %zu values, %zu errors (%zu "
      "denied), %zu aborted; %zu calls retried, %zu approved confirmations, %zu conflicting pairs kept apart\n",
      f.turns, f.calls, f.bad_calls, f.attempts, f.values, f.errors, f.denied, f.aborted, f.retried_calls, f.approved,
      f.conflicting_pairs);
  EXPECT_GT(f.bad_calls, 0U);
  EXPECT_GT(f.denied, 0U);
  EXPECT_GT(f.retried_calls, 0U);
  EXPECT_GT(f.conflicting_pairs, 0U);
}

}  // namespace
}  // namespace json_turn_soak_test_ns
