// The four unary rules on `effect_set` (a bitmask) against the same rules
// over std::unordered_set<effect> — the representation of the reference
// packages (Rust `HashSet<SideEffect>`, Python `set`), written as the Rust
// code reads. Method and results: docs/benchmarks.md ("Runtime: the rules on effect_set vs hash sets").
//
// Two hash-set baselines, same table (libstdc++'s std::unordered_set), two
// hashers:
//   * `unordered_set`      std::hash<effect> (libstdc++: the identity) — the
//                          cheapest possible hash, i.e. a lower bound;
//   * `unordered_set_sip13` a SipHash-1-3 hasher over the 8-byte discriminant,
//                          which is what Rust's default `HashSet` hashes
//                          (`#[derive(Hash)]` writes the discriminant as isize;
//                          `RandomState` uses SipHash-1-3). The table is still
//                          libstdc++'s, not hashbrown's.
//
// Per-call benchmarks (`BM_<rule>_<repr>/batch:0|1`): 4096 sets drawn once
// from a fixed-seed PRNG (uniform over the 128 sets), built at run time.
// `batch:0` passes every result through benchmark::DoNotOptimize (latency),
// `batch:1` counts the sets that satisfy the rule.
//
// Batch benchmarks (`BM_batch_<kernel>_<repr>/sets:N`, N = 64, 1024, 16384):
// what a dispatcher does with a turn's or a registry's tools — compute the
// rules for every set into an output array. `all_rules` writes one byte per
// set (parallel | retry << 1 | destructive << 2 | class << 3), `classify`
// writes one side_effect_class per set. The effect_set kernel is a plain loop
// over a std::vector<effect_set> calling the library's constexpr functions;
// no hand-written SIMD. Counter `per_set` = CPU time per set.
#include <tool_effects/rules.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <unordered_set>
#include <vector>

namespace te = tool_effects;
using te::effect;
using te::effect_set;

// SipHash-c-d (Aumasson & Bernstein, "SipHash: a fast short-input PRF", 2012),
// written from the paper's description. Rust's std uses SipHash-1-3.
namespace siphash {
constexpr std::uint64_t rotl(std::uint64_t x, int b) noexcept { return (x << b) | (x >> (64 - b)); }

// Little-endian load of n <= 8 bytes.
constexpr std::uint64_t load_le(const std::uint8_t* p, std::size_t n) noexcept {
  std::uint64_t w = 0;
  for (std::size_t i = 0; i < n; ++i) w |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return w;
}

template <int C, int D>
constexpr std::uint64_t hash(std::uint64_t k0, std::uint64_t k1, const std::uint8_t* m, std::size_t n) noexcept {
  std::uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
  std::uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
  auto sip_round = [&] {
    v0 += v1; v2 += v3; v1 = rotl(v1, 13); v3 = rotl(v3, 16);
    v1 ^= v0; v3 ^= v2; v0 = rotl(v0, 32);
    v2 += v1; v0 += v3; v1 = rotl(v1, 17); v3 = rotl(v3, 21);
    v1 ^= v2; v3 ^= v0; v2 = rotl(v2, 32);
  };
  auto compress = [&](std::uint64_t w) {
    v3 ^= w;
    for (int i = 0; i < C; ++i) sip_round();
    v0 ^= w;
  };
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) compress(load_le(m + i, 8));
  // Last block: the remaining 0..7 bytes, and the length mod 256 in the top byte.
  compress(load_le(m + i, n - i) | (static_cast<std::uint64_t>(n & 0xff) << 56));
  v2 ^= 0xff;
  for (int r = 0; r < D; ++r) sip_round();
  return v0 ^ v1 ^ v2 ^ v3;
}

// Test vectors. Key 00 01 .. 0f and message 00 01 .. 0e (15 bytes):
// SipHash-2-4 = a129ca6149be45e5 (the paper, Appendix A).
constexpr std::array<std::uint8_t, 15> bytes_0_to_14 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
constexpr std::uint64_t paper_k0 = 0x0706050403020100ull, paper_k1 = 0x0f0e0d0c0b0a0908ull;
static_assert(hash<2, 4>(paper_k0, paper_k1, bytes_0_to_14.data(), 15) == 0xa129ca6149be45e5ull);
// The paper gives no SipHash-1-3 vector. These were checked against CPython
// 3.11's siphash13 (`PYTHONHASHSEED=0` gives the all-zero key;
// hash(bytes(range(8))) and hash(bytes(range(15))) as unsigned 64-bit).
static_assert(hash<1, 3>(0, 0, bytes_0_to_14.data(), 8) == 0xead411e67ebe2eeaull);
static_assert(hash<1, 3>(0, 0, bytes_0_to_14.data(), 15) == 0xf30eb725bb91c9eaull);
}  // namespace siphash

// Hashes an effect as Rust's `#[derive(Hash)]` + SipHasher13 does: the
// discriminant as an 8-byte isize. Fixed keys (Rust draws them at random per
// process; the cost is the same). Deliberately NOT noexcept: libstdc++ then
// caches the hash code in each node, so a lookup hashes the key once (as
// hashbrown does) instead of re-hashing nodes while walking a bucket.
struct sip13_effect_hash {
  std::size_t operator()(effect e) const {
    const auto d = static_cast<std::uint64_t>(static_cast<std::int64_t>(e));
    std::array<std::uint8_t, 8> b{};
    for (std::size_t i = 0; i < 8; ++i) b[i] = static_cast<std::uint8_t>(d >> (8 * i));
    return static_cast<std::size_t>(siphash::hash<1, 3>(0x243f6a8885a308d3ull, 0x13198a2e03707344ull, b.data(), 8));
  }
};

namespace reference {
template <class Hash>
using side_effects = std::unordered_set<effect, Hash>;

template <class Hash>
bool is_parallel_safe(const side_effects<Hash>& effects) {
  if (effects.empty()) return false;
  if (effects.count(effect::write) != 0 || effects.count(effect::destructive) != 0) return false;
  return effects.count(effect::read) != 0;
}
template <class Hash>
bool is_retry_safe(const side_effects<Hash>& effects) {
  if (effects.empty()) return false;
  if (effects.count(effect::destructive) != 0) return false;
  if (effects.count(effect::idempotent) != 0) return true;
  if (effects.count(effect::read) != 0 && effects.count(effect::write) == 0) return true;
  return false;
}
template <class Hash>
bool is_destructive(const side_effects<Hash>& effects) { return effects.count(effect::destructive) != 0; }
template <class Hash>
te::side_effect_class classify(const side_effects<Hash>& effects) {
  if (is_parallel_safe(effects)) return te::side_effect_class::none;
  if (is_retry_safe(effects)) return te::side_effect_class::idempotent;
  return te::side_effect_class::non_idempotent;
}
}  // namespace reference

namespace {
using identity_sets = reference::side_effects<std::hash<effect>>;
using sip13_sets = reference::side_effects<sip13_effect_hash>;

constexpr std::size_t workload_size = 4096;
constexpr std::size_t max_batch = 16384;

// A fixed xorshift sequence: the same workload on every run and machine.
std::vector<std::uint8_t> masks(std::size_t n) {
  std::vector<std::uint8_t> out(n);
  std::uint32_t x = 2463534242u;
  for (auto& m : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    m = static_cast<std::uint8_t>(x & 0x7fu);
  }
  return out;
}
// The first n sets of the sequence (n <= max_batch), in each representation.
std::vector<effect_set> bitmask_sets(std::size_t n) {
  std::vector<effect_set> v;
  for (const auto m : masks(n)) v.push_back(effect_set::from_bits(m));
  return v;
}
template <class Sets>
Sets hash_sets(std::size_t n) {
  Sets v;
  for (const auto s : bitmask_sets(n)) v.emplace_back(s.begin(), s.end());
  return v;
}
const std::vector<effect_set>& bitmask_workload() {
  static const auto sets = bitmask_sets(workload_size);
  return sets;
}
template <class Set>
const std::vector<Set>& hash_workload() {
  static const auto sets = hash_sets<std::vector<Set>>(workload_size);
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

// Throughput: how many sets of the batch satisfy the rule. The workload
// escapes and memory is clobbered before every pass, so the pass cannot be
// hoisted or folded.
template <class Sets, class Rule>
void count(benchmark::State& state, const Sets& sets, Rule rule) {
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
    else count(state, bitmask_workload(), f);                                                         \
  }                                                                                                   \
  void BM_##rule##_unordered_set(benchmark::State& state) {                                          \
    const auto f = [](const identity_sets& s) { return reference::rule(s); };                        \
    if (state.range(0) == 0) per_call(state, hash_workload<identity_sets>(), f);                      \
    else count(state, hash_workload<identity_sets>(), f);                                             \
  }                                                                                                   \
  void BM_##rule##_unordered_set_sip13(benchmark::State& state) {                                    \
    const auto f = [](const sip13_sets& s) { return reference::rule(s); };                           \
    if (state.range(0) == 0) per_call(state, hash_workload<sip13_sets>(), f);                         \
    else count(state, hash_workload<sip13_sets>(), f);                                                \
  }                                                                                                   \
  BENCHMARK(BM_##rule##_effect_set)->ArgName("batch")->Arg(0)->Arg(1);                                \
  BENCHMARK(BM_##rule##_unordered_set)->ArgName("batch")->Arg(0)->Arg(1);                             \
  BENCHMARK(BM_##rule##_unordered_set_sip13)->ArgName("batch")->Arg(0)->Arg(1);

TE_RULE_BENCH(is_parallel_safe)
TE_RULE_BENCH(is_retry_safe)
TE_RULE_BENCH(is_destructive)
TE_RULE_BENCH(classify)

// ---- Batch: every rule for every set of a turn / registry -----------------

namespace {
// The four answers in one byte: bit 0 parallel-safe, bit 1 retry-safe,
// bit 2 destructive, bits 3-4 the class.
constexpr std::uint8_t pack(bool parallel, bool retry, bool destructive, te::side_effect_class c) noexcept {
  return static_cast<std::uint8_t>(static_cast<unsigned>(parallel) | (static_cast<unsigned>(retry) << 1) |
                                   (static_cast<unsigned>(destructive) << 2) | (static_cast<unsigned>(c) << 3));
}
constexpr std::uint8_t all_rules(effect_set s) noexcept {
  return pack(te::is_parallel_safe(s), te::is_retry_safe(s), te::is_destructive(s), te::classify(s));
}
template <class Hash>
std::uint8_t all_rules(const reference::side_effects<Hash>& s) {
  return pack(reference::is_parallel_safe(s), reference::is_retry_safe(s), reference::is_destructive(s),
              reference::classify(s));
}

// The kernels: plain loops over contiguous input into contiguous output
// (spans over the caller's vectors). Out of line so that their code, and
// whether it was vectorised, can be inspected; see docs/benchmarks.md ("Runtime: the rules on effect_set vs hash sets").
[[gnu::noinline]] void all_rules_batch(std::span<const effect_set> in, std::span<std::uint8_t> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = all_rules(in[i]);
}
[[gnu::noinline]] void classify_batch(std::span<const effect_set> in, std::span<te::side_effect_class> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = te::classify(in[i]);
}
template <class Hash>
[[gnu::noinline]] void all_rules_batch(std::span<const reference::side_effects<Hash>> in, std::span<std::uint8_t> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = all_rules(in[i]);
}
template <class Hash>
[[gnu::noinline]] void classify_batch(std::span<const reference::side_effects<Hash>> in,
                                      std::span<te::side_effect_class> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = reference::classify(in[i]);
}

template <class Sets, class Out, class Kernel>
void run_batch(benchmark::State& state, const Sets& in, Kernel kernel) {
  Out out(in.size());
  for (auto _ : state) {
    benchmark::DoNotOptimize(in.data());
    benchmark::ClobberMemory();
    kernel(in, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const auto n = static_cast<double>(in.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(in.size()));
  state.counters["per_set"] =
      benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

template <class Sets>
const Sets& batch_workload(std::size_t n) {
  // One workload per size, built once; sizes are the benchmark arguments.
  static std::array<Sets, 3> cache;
  const std::size_t k = n == 64 ? 0 : n == 1024 ? 1 : 2;
  if (cache[k].empty()) {
    if constexpr (std::is_same_v<Sets, std::vector<effect_set>>) cache[k] = bitmask_sets(n);
    else cache[k] = hash_sets<Sets>(n);
  }
  return cache[k];
}

using all_out = std::vector<std::uint8_t>;
using class_out = std::vector<te::side_effect_class>;
}  // namespace

void BM_batch_all_rules_effect_set(benchmark::State& state) {
  const auto& in = batch_workload<std::vector<effect_set>>(static_cast<std::size_t>(state.range(0)));
  run_batch<std::vector<effect_set>, all_out>(state, in, [](const auto& i, auto& o) { all_rules_batch(std::span(i), std::span(o)); });
}
void BM_batch_all_rules_unordered_set(benchmark::State& state) {
  const auto& in = batch_workload<std::vector<identity_sets>>(static_cast<std::size_t>(state.range(0)));
  run_batch<std::vector<identity_sets>, all_out>(state, in, [](const auto& i, auto& o) { all_rules_batch(std::span(i), std::span(o)); });
}
void BM_batch_all_rules_unordered_set_sip13(benchmark::State& state) {
  const auto& in = batch_workload<std::vector<sip13_sets>>(static_cast<std::size_t>(state.range(0)));
  run_batch<std::vector<sip13_sets>, all_out>(state, in, [](const auto& i, auto& o) { all_rules_batch(std::span(i), std::span(o)); });
}
void BM_batch_classify_effect_set(benchmark::State& state) {
  const auto& in = batch_workload<std::vector<effect_set>>(static_cast<std::size_t>(state.range(0)));
  run_batch<std::vector<effect_set>, class_out>(state, in, [](const auto& i, auto& o) { classify_batch(std::span(i), std::span(o)); });
}
void BM_batch_classify_unordered_set(benchmark::State& state) {
  const auto& in = batch_workload<std::vector<identity_sets>>(static_cast<std::size_t>(state.range(0)));
  run_batch<std::vector<identity_sets>, class_out>(state, in, [](const auto& i, auto& o) { classify_batch(std::span(i), std::span(o)); });
}
void BM_batch_classify_unordered_set_sip13(benchmark::State& state) {
  const auto& in = batch_workload<std::vector<sip13_sets>>(static_cast<std::size_t>(state.range(0)));
  run_batch<std::vector<sip13_sets>, class_out>(state, in, [](const auto& i, auto& o) { classify_batch(std::span(i), std::span(o)); });
}
#define TE_BATCH_SIZES ->ArgName("sets")->Arg(64)->Arg(1024)->Arg(max_batch)
BENCHMARK(BM_batch_all_rules_effect_set) TE_BATCH_SIZES;
BENCHMARK(BM_batch_all_rules_unordered_set) TE_BATCH_SIZES;
BENCHMARK(BM_batch_all_rules_unordered_set_sip13) TE_BATCH_SIZES;
BENCHMARK(BM_batch_classify_effect_set) TE_BATCH_SIZES;
BENCHMARK(BM_batch_classify_unordered_set) TE_BATCH_SIZES;
BENCHMARK(BM_batch_classify_unordered_set_sip13) TE_BATCH_SIZES;

// A sanity check run with the benchmarks: all three forms agree on every set
// of the largest batch, rule by rule.
void BM_agreement_check(benchmark::State& state) {
  const auto& a = batch_workload<std::vector<effect_set>>(max_batch);
  const auto& b = batch_workload<std::vector<identity_sets>>(max_batch);
  const auto& c = batch_workload<std::vector<sip13_sets>>(max_batch);
  for (auto _ : state) {
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto x = all_rules(a[i]);
      mismatches += (x != all_rules(b[i])) + (x != all_rules(c[i]));
      mismatches += a[i].size() != b[i].size() || a[i].size() != c[i].size();
    }
    if (mismatches != 0) state.SkipWithError("effect_set and unordered_set rules disagree");
    benchmark::DoNotOptimize(mismatches);
  }
}
BENCHMARK(BM_agreement_check)->Iterations(1);
