// Hostile turns (issue 19), planning and streaming (Google Benchmark). See docs/benchmarks.md.
//
//  - BM_plan_injected/N: N described calls alternating write_file{path: f_i} (a write of one target of "files") and
//    an untargeted read_file{} (a read of all of "files"): the prompt-injected shape. Kept edges: N - 1 (they were
//    N^2 / 4 before the transitive reduction). The counter `edges` is the kept edge count.
//  - BM_plan_bipartite/N: N / 2 targeted writes, then N / 2 untargeted reads. Every read conflicts with every write
//    and no call orders two of them, so the transitive reduction itself has N^2 / 4 edges: the case no edge list
//    between calls can make linear, bounded by `plan_limits::max_calls` (default 4096 calls).
//  - BM_stream_open_items/N: N OpenAI Responses items opened, then completed in reverse order
//    (tool_call_stream with stream_limits{N}): O(log n) per event.
//  - BM_parse_object_of_objects/N: parse_untrusted_json of {"k0":{"a":1},...} with N members, each an object,
//    beside BM_parse_object_of_objects_plain/N (nlohmann::json::parse without limits). With nlohmann 3.11's
//    callback parser, which parse_untrusted_json used before, this shape was quadratic (32,000 members: 5.2 s);
//    the SAX builder is linear.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <tool_effects/json.hpp>
#include <tool_effects/plan.hpp>

namespace te = tool_effects;

namespace {
te::call_description write_of(std::size_t i) {
  return te::describe_runtime("write_file", {}, {{"files", te::access_mode::write, "f" + std::to_string(i)}});
}
te::call_description read_all() { return te::describe_runtime("read_file", {}, {{"files", te::access_mode::read, std::nullopt}}); }

void plan_bench(benchmark::State& state, const std::vector<te::call_description>& calls) {
  std::size_t edges = 0;
  for (auto _ : state) {
    auto p = te::plan_calls(calls, te::plan_limits{calls.size()});
    edges = p.edge_count();
    benchmark::DoNotOptimize(p);
  }
  state.counters["edges"] = static_cast<double>(edges);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(calls.size()));
}

void BM_plan_injected(benchmark::State& state) {
  std::vector<te::call_description> calls;
  for (std::size_t i = 0; i < static_cast<std::size_t>(state.range(0)); ++i) calls.push_back(i % 2 == 0 ? write_of(i) : read_all());
  plan_bench(state, calls);
}
BENCHMARK(BM_plan_injected)->Arg(64)->Arg(1000)->Arg(4000)->Arg(8000)->Unit(benchmark::kMillisecond);

void BM_plan_bipartite(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<te::call_description> calls;
  for (std::size_t i = 0; i < n / 2; ++i) calls.push_back(write_of(i));
  for (std::size_t i = n / 2; i < n; ++i) calls.push_back(read_all());
  plan_bench(state, calls);
}
BENCHMARK(BM_plan_bipartite)->Arg(64)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_stream_open_items(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<nlohmann::json> added, done;
  for (std::size_t i = 0; i < n; ++i) {
    added.push_back({{"type", "response.output_item.added"},
                     {"item", {{"id", "fc_" + std::to_string(i)}, {"type", "function_call"}, {"call_id", "c" + std::to_string(i)},
                               {"name", "read_file"}, {"arguments", ""}}}});
    done.push_back({{"type", "response.function_call_arguments.done"}, {"item_id", "fc_" + std::to_string(n - 1 - i)},
                    {"arguments", "{}"}});
  }
  for (auto _ : state) {
    te::tool_call_stream s(te::stream_limits{n});
    std::size_t yielded = 0;
    for (const auto& e : added) yielded += s.feed(e).size();
    for (const auto& e : done) yielded += s.feed(e).size();
    benchmark::DoNotOptimize(yielded);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
}
BENCHMARK(BM_stream_open_items)->Arg(5000)->Arg(20000)->Unit(benchmark::kMillisecond);
}  // namespace

namespace {
std::string object_of_objects(std::int64_t n) {
  std::string t = "{";
  for (std::int64_t i = 0; i < n; ++i) t += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":{\"a\":1}";
  t += "}";
  return t;
}
void BM_parse_object_of_objects(benchmark::State& state) {
  const std::string text = object_of_objects(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(te::parse_untrusted_json(text));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}
BENCHMARK(BM_parse_object_of_objects)->RangeMultiplier(4)->Range(2000, 128000)->Unit(benchmark::kMillisecond);
void BM_parse_object_of_objects_plain(benchmark::State& state) {
  const std::string text = object_of_objects(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(nlohmann::json::parse(text));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}
BENCHMARK(BM_parse_object_of_objects_plain)->RangeMultiplier(4)->Range(2000, 128000)->Unit(benchmark::kMillisecond);
}  // namespace
