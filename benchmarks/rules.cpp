// The four unary rules on `effect_set` (a bitmask) against the same rules
// over std::unordered_set<effect> — the representation of the reference
// packages (Rust `HashSet<SideEffect>`, Python `set`), written as the Rust
// code reads. Method and results: docs/bench/rules.md.
//
// Workload: 4096 effect sets drawn once from a fixed-seed PRNG (uniform over
// the 128 sets), built at run time so the compiler cannot fold them. Each
// iteration applies one rule to every set, in two modes: `batch:0` passes
// every result through benchmark::DoNotOptimize (latency-bound: each call is
// computed and stored on its own), `batch:1` counts the sets that satisfy the
// rule (throughput; the workload escapes and memory is clobbered every pass,
// so nothing is folded or hoisted). Reported: items_per_second = calls/s.
#include <tool_effects/rules.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <unordered_set>
#include <vector>

namespace te = tool_effects;
using te::effect;
using te::effect_set;

namespace reference {
using side_effects = std::unordered_set<effect>;

bool is_parallel_safe(const side_effects& effects) {
  if (effects.empty()) return false;
  if (effects.count(effect::write) != 0 || effects.count(effect::destructive) != 0) return false;
  return effects.count(effect::read) != 0;
}
bool is_retry_safe(const side_effects& effects) {
  if (effects.empty()) return false;
  if (effects.count(effect::destructive) != 0) return false;
  if (effects.count(effect::idempotent) != 0) return true;
  if (effects.count(effect::read) != 0 && effects.count(effect::write) == 0) return true;
  return false;
}
bool is_destructive(const side_effects& effects) { return effects.count(effect::destructive) != 0; }
te::side_effect_class classify(const side_effects& effects) {
  if (is_parallel_safe(effects)) return te::side_effect_class::none;
  if (is_retry_safe(effects)) return te::side_effect_class::idempotent;
  return te::side_effect_class::non_idempotent;
}
}  // namespace reference

namespace {
constexpr std::size_t workload_size = 4096;

// A fixed xorshift sequence: the same workload on every run and machine.
std::vector<std::uint8_t> masks() {
  std::vector<std::uint8_t> out(workload_size);
  std::uint32_t x = 2463534242u;
  for (auto& m : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    m = static_cast<std::uint8_t>(x & 0x7fu);
  }
  return out;
}
const std::vector<effect_set>& bitmask_workload() {
  static const std::vector<effect_set> sets = [] {
    std::vector<effect_set> v;
    for (const auto m : masks()) v.push_back(effect_set::from_bits(m));
    return v;
  }();
  return sets;
}
const std::vector<reference::side_effects>& hash_workload() {
  static const std::vector<reference::side_effects> sets = [] {
    std::vector<reference::side_effects> v;
    for (const auto s : bitmask_workload()) v.emplace_back(s.begin(), s.end());
    return v;
  }();
  return sets;
}

// Latency-bound: every result is materialised through DoNotOptimize.
template <class Sets, class Rule>
void per_call(benchmark::State& state, const Sets& sets, Rule rule) {
  for (auto _ : state) {
    for (const auto& s : sets) {
      auto r = rule(s);
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(sets.size()));
}

// Throughput: how many sets of the batch satisfy the rule (the question a
// planner asks about a turn). The workload escapes and memory is clobbered
// before every pass, so the pass cannot be hoisted or folded; the compiler
// may vectorise it, which is the point of a bitmask.
template <class Sets, class Rule>
void batch(benchmark::State& state, const Sets& sets, Rule rule) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(sets.data());
    benchmark::ClobberMemory();
    std::size_t n = 0;
    for (const auto& s : sets) n += static_cast<std::size_t>(rule(s));
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(sets.size()));
}
}  // namespace

#define TE_RULE_BENCH(rule)                                                                           \
  void BM_##rule##_effect_set(benchmark::State& state) {                                             \
    const auto f = [](effect_set s) { return te::rule(s); };                                          \
    if (state.range(0) == 0) per_call(state, bitmask_workload(), f);                                  \
    else batch(state, bitmask_workload(), f);                                                         \
  }                                                                                                   \
  void BM_##rule##_unordered_set(benchmark::State& state) {                                          \
    const auto f = [](const reference::side_effects& s) { return reference::rule(s); };              \
    if (state.range(0) == 0) per_call(state, hash_workload(), f);                                     \
    else batch(state, hash_workload(), f);                                                            \
  }                                                                                                   \
  BENCHMARK(BM_##rule##_effect_set)->ArgName("batch")->Arg(0)->Arg(1);                                \
  BENCHMARK(BM_##rule##_unordered_set)->ArgName("batch")->Arg(0)->Arg(1);

TE_RULE_BENCH(is_parallel_safe)
TE_RULE_BENCH(is_retry_safe)
TE_RULE_BENCH(is_destructive)
TE_RULE_BENCH(classify)

// A sanity check run with the benchmarks: both forms agree on the workload.
void BM_agreement_check(benchmark::State& state) {
  const auto& a = bitmask_workload();
  const auto& b = hash_workload();
  for (auto _ : state) {
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      mismatches += (te::classify(a[i]) != reference::classify(b[i])) + (te::is_destructive(a[i]) != reference::is_destructive(b[i]));
    if (mismatches != 0) state.SkipWithError("effect_set and unordered_set rules disagree");
    benchmark::DoNotOptimize(mismatches);
  }
}
BENCHMARK(BM_agreement_check)->Iterations(1);
