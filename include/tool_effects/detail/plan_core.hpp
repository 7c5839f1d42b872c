// tool_effects/detail/plan_core.hpp — the planning functions over bitset rows.
//
// Input: n calls and their conflict relation as bitset rows (bit j of row i:
// calls i and j conflict), exactly the layout of `conflict_matrix<N>`. The
// compile-time planner (`plan_v`, over `conflict_matrix_v<Tools...>`) calls
// these functions, and the dispatcher's dataflow engine reads the same rows
// for the static forms (predecessors = bits below i, successors = bits
// above). The runtime planner (`runtime_plan`, plan.hpp) keeps successor
// lists instead, and applies the same wave rule to them; a plan made from
// rows (`runtime_plan(n, rows)`) reads them with `for_each_predecessor`.
#ifndef TOOL_EFFECTS_DETAIL_PLAN_CORE_HPP
#define TOOL_EFFECTS_DETAIL_PLAN_CORE_HPP

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tool_effects::detail {

// Word w of row `row` keeping only bits j < limit (the calls before `limit`).
constexpr std::uint64_t bits_below(const std::uint64_t* row, std::size_t w, std::size_t limit) noexcept {
  const std::size_t full = limit / 64;
  if (w < full) return row[w];
  if (w > full) return 0;
  const std::size_t r = limit % 64;
  return r == 0 ? 0 : row[w] & ((std::uint64_t{1} << r) - 1);
}

// Word w of `row` keeping only bits j > after (the calls after `after`).
constexpr std::uint64_t bits_above(const std::uint64_t* row, std::size_t w, std::size_t after) noexcept {
  const std::size_t first = (after + 1) / 64;
  if (w < first) return 0;
  if (w > first) return row[w];
  return row[w] & (~std::uint64_t{0} << ((after + 1) % 64));
}

inline constexpr std::uint64_t de_bruijn = 0x022fdd63cc95386dULL;  // a B(2, 6) de Bruijn sequence
inline constexpr auto de_bruijn_table = [] {
  std::array<std::uint8_t, 64> t{};
  for (std::size_t k = 0; k < 64; ++k) t[((std::uint64_t{1} << k) * de_bruijn) >> 58] = static_cast<std::uint8_t>(k);
  return t;
}();

// Index of the lowest set bit of x != 0; cheap in constant evaluation too
// (a de Bruijn multiply instead of the library's loop).
constexpr std::size_t lowest_bit(std::uint64_t x) noexcept {
  if (!std::is_constant_evaluated()) return static_cast<std::size_t>(std::countr_zero(x));
  return de_bruijn_table[((x & (~x + 1)) * de_bruijn) >> 58];
}

// Calls `f(j)` for every earlier call j < i that conflicts with call i, in increasing order.
template <class F>
constexpr void for_each_predecessor(const std::uint64_t* row, std::size_t i, F&& f) {
  const std::size_t words = (i + 63) / 64;
  for (std::size_t w = 0; w < words; ++w)
    for (std::uint64_t b = bits_below(row, w, i); b != 0; b &= b - 1)
      f(w * 64 + lowest_bit(b));
}

// Calls `f(j)` for every later call j > i (j < n) that conflicts with call i, in increasing order.
template <class F>
constexpr void for_each_successor(const std::uint64_t* row, std::size_t words, std::size_t i, F&& f) {
  for (std::size_t w = (i + 1) / 64; w < words; ++w)
    for (std::uint64_t b = bits_above(row, w, i); b != 0; b &= b - 1)
      f(w * 64 + lowest_bit(b));
}

// Number of earlier calls call i waits for.
constexpr std::size_t predecessor_count(const std::uint64_t* row, std::size_t i) noexcept {
  std::size_t c = 0;
  for (std::size_t w = 0; w < (i + 63) / 64; ++w) c += static_cast<std::size_t>(std::popcount(bits_below(row, w, i)));
  return c;
}

// THE wave rule: call i's wave is 0 if no earlier call conflicts with it,
// else 1 + the largest wave of the earlier calls it conflicts with.
// `row(i)` returns row i. Writes `waves[0..n)`; `block_max` is scratch of
// (n + 63) / 64 entries (the largest wave per 64 calls, which lets a word of
// the row be skipped, or taken whole when all its bits are set: an exclusive
// call costs O(n/64), not O(n)). Returns the number of waves (0 for no calls).
template <class RowAt, class Waves, class Blocks>
constexpr std::size_t plan_waves_from_rows(std::size_t n, RowAt&& row, Waves& waves, Blocks& block_max) {
  std::size_t count = 0;
  for (std::size_t b = 0; b < (n + 63) / 64; ++b) block_max[b] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t* r = row(i);
    std::size_t w = 0;
    for (std::size_t k = (i + 63) / 64; k-- > 0;) {
      std::uint64_t bits = bits_below(r, k, i);
      if (bits == 0 || block_max[k] + 1 <= w) continue;
      const std::uint64_t valid = k < i / 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << (i % 64)) - 1;
      if (bits == valid) {
        w = block_max[k] + 1;
        continue;
      }
      for (; bits != 0; bits &= bits - 1) {
        const std::size_t j = k * 64 + lowest_bit(bits);
        if (waves[j] + 1 > w) w = waves[j] + 1;
      }
    }
    waves[i] = w;
    if (w > block_max[i / 64]) block_max[i / 64] = w;
    if (w + 1 > count) count = w + 1;
  }
  return count;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_PLAN_CORE_HPP
