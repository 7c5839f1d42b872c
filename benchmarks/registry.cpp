// Registering many dynamic tools (issue 19: registration was quadratic, a
// linear name scan per add: 25k, 50k and 100k tools took 1.2, 4.0 and 16.0 s),
// and the unknown_tool failure of a call when that many tools are registered
// (its message listed every name: 1.2 MB with 100k tools). Results:
// docs/benchmarks.md ("Registering tools").
//
//   BM_RegisterDynamicTools/N   tool_registry<>::add of N tools (names "tool_<i>")
//   BM_HostRegisterTools/N      json_tool_host<>::add of N tools (the registry plus the host's entry)
//   BM_UnknownToolPlan/N        plan() of one call naming no tool, with N tools registered;
//                               counter msg_bytes = the failure message's length
#include <tool_effects/json.hpp>

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace te = tool_effects;
using nlohmann::json;

namespace {
std::vector<std::string> tool_names(std::size_t n) {
  std::vector<std::string> names;
  names.reserve(n);
  for (std::size_t i = 0; i < n; ++i) names.push_back("tool_" + std::to_string(i));
  return names;
}

void BM_RegisterDynamicTools(benchmark::State& state) {
  const auto names = tool_names(static_cast<std::size_t>(state.range(0)));
  const te::call_description d = te::describe_runtime("", te::effect_set{te::effect::read}, {});
  for (auto _ : state) {
    te::tool_registry<> r;
    for (const auto& n : names) benchmark::DoNotOptimize(r.add(n, d));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_RegisterDynamicTools)->Arg(25'000)->Arg(50'000)->Arg(100'000)->Arg(400'000)->Unit(benchmark::kMillisecond);

void BM_HostRegisterTools(benchmark::State& state) {
  const auto names = tool_names(static_cast<std::size_t>(state.range(0)));
  const te::json_tool_function fn = [](const te::attempt_context&, const json&) { return json(); };
  for (auto _ : state) {
    te::tool_registry<> r;
    te::json_tool_host<> host(r);
    for (const auto& n : names) {
      te::dynamic_tool t;
      t.name = n;
      t.description = te::describe_runtime(n, te::effect_set{te::effect::read}, {});
      benchmark::DoNotOptimize(host.add(std::move(t), fn, te::tool_origin{"server", n}));
    }
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_HostRegisterTools)->Arg(25'000)->Arg(50'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_UnknownToolPlan(benchmark::State& state) {
  te::tool_registry<> r;
  te::json_tool_host<> host(r);
  const te::json_tool_function fn = [](const te::attempt_context&, const json&) { return json(); };
  for (const auto& n : tool_names(static_cast<std::size_t>(state.range(0)))) {
    te::dynamic_tool t;
    t.name = n;
    t.description = te::describe_runtime(n, te::effect_set{te::effect::read}, {});
    (void)host.add(std::move(t), fn);
  }
  const auto calls = te::parse_tool_calls(R"([{"id": "1", "name": "launch_rockets", "arguments": {}}])");
  std::size_t bytes = 0;
  for (auto _ : state) {
    const auto p = host.plan(calls);
    bytes = p.failures[0]->last_error_message.size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["msg_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_UnknownToolPlan)->Arg(1'000)->Arg(25'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
}  // namespace
