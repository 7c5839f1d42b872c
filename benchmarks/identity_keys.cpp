// The identity key of a call as its arguments grow (issue 20: json_tool_host derived every call's key, RFC 8785
// canonical arguments + SHA-1 UUIDv5, 37% of the MCP client's CPU for large calls; it is now derived only when
// something uses it, see LazyIdentityKey.* in test/unit/json_lazy_identity_test.cpp). Shows that the cost is
// linear in the arguments' size: Google Benchmark fits the complexity (BigO, RMS), and docs/benchmarks.md ("The
// MCP client against the TypeScript SDK") gives callgrind's instruction counts per byte for the same shapes.
//
//   BM_IdentifyString/N   arguments {"blob": <N bytes of text, a newline every 64>}
//   BM_IdentifyObject/N   arguments {"items": [N/32 objects {"k<i>": "v", "n": i}]} (about N bytes)
#include <tool_effects/json.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace te = tool_effects;
using nlohmann::json;

namespace {

json string_arguments(std::size_t n) {
  std::string s(n, 'x');
  for (std::size_t i = 63; i < n; i += 64) s[i] = '\n';
  return json{{"blob", std::move(s)}};
}

json object_arguments(std::size_t n) {
  json items = json::array();
  for (std::size_t i = 0; i < n / 32; ++i) items.push_back(json{{"k" + std::to_string(i), "v"}, {"n", i}});
  return json{{"items", std::move(items)}};
}

void identify(benchmark::State& state, const json& args) {
  const te::identity_policy policy;
  for (auto _ : state) benchmark::DoNotOptimize(te::identify("tool", policy, args).key);
  state.SetComplexityN(state.range(0));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_IdentifyString(benchmark::State& state) {
  identify(state, string_arguments(static_cast<std::size_t>(state.range(0))));
}
BENCHMARK(BM_IdentifyString)->RangeMultiplier(4)->Range(1 << 10, 1 << 20)->Complexity();

void BM_IdentifyObject(benchmark::State& state) {
  identify(state, object_arguments(static_cast<std::size_t>(state.range(0))));
}
BENCHMARK(BM_IdentifyObject)->RangeMultiplier(4)->Range(1 << 10, 1 << 20)->Complexity();

}  // namespace
