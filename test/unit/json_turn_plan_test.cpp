// json_tool_host plans a turn once (issue 22) and bounds a hostile one (issue 19): `run` hands its one plan to the
// runtime `run_plan` and builds no explanation; `plan` explains; a turn over `plan_limits::max_calls` fails every
// call with `turn_too_large` and runs nothing; the prompt-injected shape (write_file{path} alternating with an
// untargeted read_file{}) keeps a linear number of edges.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_turn_plan_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct files {};

std::atomic<int> runs{0};

struct read_file {
  static constexpr std::string_view name = "read_file";
  static constexpr std::string_view target_arg = "path";
  using side_effects = te::effects<te::reads<files>>;
  json operator()(const json&) const {
    ++runs;
    return "contents";
  }
};
struct write_file {
  static constexpr std::string_view name = "write_file";
  static constexpr std::string_view target_arg = "path";
  using side_effects = te::effects<te::writes<files>, te::idempotent>;
  json operator()(const json& args) const {
    ++runs;
    return "wrote " + args.at("path").get<std::string>();
  }
};
using registry = te::tool_registry<read_file, write_file>;

// write_file{path: f<i>} at even positions, read_file{} (no path: the whole resource) at odd ones.
std::vector<te::tool_call> alternating(std::size_t n) {
  json arr = json::array();
  for (std::size_t i = 0; i < n; ++i)
    arr.push_back(i % 2 == 0 ? json{{"id", "c" + std::to_string(i)}, {"name", "write_file"},
                                    {"arguments", {{"path", "f" + std::to_string(i)}, {"content", "x"}}}}
                             : json{{"id", "c" + std::to_string(i)}, {"name", "read_file"}, {"arguments", json::object()}});
  return te::parse_tool_calls(arr);
}
}  // namespace

TEST(JsonTurnPlan, RunPlansTheTurnOnce) {
  registry reg;
  te::json_tool_host<read_file, write_file> host(reg);
  const auto calls = alternating(12);
  boost::asio::thread_pool pool(2);

  te::detail::kept_edges_runs() = 0;
  runs = 0;
  const auto out = host.run(pool, te::run_options{}, calls);
  EXPECT_EQ(te::detail::kept_edges_runs(), 1u) << "run planned the turn more than once";
  EXPECT_EQ(runs.load(), 12);
  for (const auto& o : out) EXPECT_TRUE(o.has_value());

  // With failed calls and the loop guard (the plan is made after the guard refused its calls), still once.
  te::repeat_detector detector;
  auto with_repeats = calls;
  with_repeats.push_back(te::parse_tool_calls(R"([{"id": "u", "name": "no_such_tool", "arguments": {}}])")[0]);
  te::detail::kept_edges_runs() = 0;
  (void)host.run(pool, te::run_options{}.with(te::loop_guard{&detector, true}), with_repeats);
  EXPECT_EQ(te::detail::kept_edges_runs(), 1u);

  // plan() explains; it plans once too.
  te::detail::kept_edges_runs() = 0;
  const auto p = host.plan(calls);
  EXPECT_EQ(te::detail::kept_edges_runs(), 1u);
  EXPECT_EQ(p.edges.size(), p.plan.edge_count());
  EXPECT_EQ(p.plan.edge_count(), 11u);
  pool.join();
}

TEST(JsonTurnPlan, ATurnOverTheLimitFailsEveryCallWithTurnTooLarge) {
  registry reg;
  te::json_tool_host<read_file, write_file> host(reg);
  const auto calls = alternating(5);
  boost::asio::thread_pool pool(2);

  runs = 0;
  const auto out = host.run(pool, te::run_options{}.with(te::plan_limits{4}), calls);
  EXPECT_EQ(runs.load(), 0) << "no call of a turn over the limit runs";
  ASSERT_EQ(out.size(), 5u);
  for (const auto& o : out) {
    ASSERT_FALSE(o.has_value());
    try {
      std::rethrow_exception(o.error());
    } catch (const te::call_failure& f) {
      EXPECT_EQ(f.reason(), te::failure_reason::turn_too_large);
      EXPECT_EQ(f.record().attempts, 0u);
      EXPECT_NE(f.record().last_error_message.find("the turn has 5 tool calls, over the limit of 4 per turn"),
                std::string::npos)
          << f.record().last_error_message;
    }
  }
  const auto answers = te::tool_results(calls, out);
  EXPECT_NE(answers.dump().find("turn_too_large"), std::string::npos) << answers.dump();

  const auto p = host.plan(calls, te::plan_limits{4});
  for (const auto& f : p.failures) ASSERT_TRUE(f && f->reason == te::failure_reason::turn_too_large);
  EXPECT_EQ(p.plan.edge_count(), 0u);
  EXPECT_TRUE(p.edges.empty());

  // At the limit, the turn runs.
  runs = 0;
  const auto at_limit = host.run(pool, te::run_options{}.with(te::plan_limits{5}), calls);
  EXPECT_EQ(runs.load(), 5);
  for (const auto& o : at_limit) EXPECT_TRUE(o.has_value());
  pool.join();
}

TEST(JsonTurnPlan, TheInjectedShapeKeepsLinearEdges) {
  // Issue 19's probe through the host: 4,000 calls gave 4,000,000 kept edges (and as many reasons). Now n - 1.
  registry reg;
  te::json_tool_host<read_file, write_file> host(reg);
  const auto calls = alternating(4000);
  const auto p = host.plan(calls);
  EXPECT_EQ(p.plan.edge_count(), 3999u);
  EXPECT_EQ(p.edges.size(), 3999u);
  EXPECT_EQ(p.plan.wave_count(), 4000u);
  // Over the default limit, refused without resolving a call.
  const auto big = alternating(te::default_max_calls_per_turn + 1);
  const auto q = host.plan(big);
  EXPECT_TRUE(q.failures.back() && q.failures.back()->reason == te::failure_reason::turn_too_large);
}

}  // namespace json_turn_plan_test_ns
