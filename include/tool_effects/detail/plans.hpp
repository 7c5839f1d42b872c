// tool_effects/detail/plans.hpp — <tool_effects/plan.hpp> without its Boost.Hana part (`waves_c`): the
// compile-time plans (`plan_v`, `plan_waves`, `dependencies_v`) and the runtime plans (`runtime_plan`,
// `plan_calls`, `explain`), documented in plan.hpp. The dispatcher (dispatch.hpp) includes this header, not
// plan.hpp: Boost.Hana's tuple is 117 of the 872 distinct headers the README example parsed, and
// only `waves_c` needs it. Include <tool_effects/plan.hpp> (or tool_effects.hpp) for `waves_c`.
#ifndef TOOL_EFFECTS_DETAIL_PLANS_HPP
#define TOOL_EFFECTS_DETAIL_PLANS_HPP

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <tool_effects/access.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/detail/kept_edges.hpp>
#include <tool_effects/detail/plan_core.hpp>
#include <tool_effects/detail/str_cat.hpp>

namespace tool_effects {

// ---------------------------------------------------------------------------
// Compile-time plans
// ---------------------------------------------------------------------------

/// The "waits for" relation of N calls: bit (i, j) is set iff j < i and calls
/// i and j conflict. Rows are bitsets, laid out as in `conflict_matrix<N>`.
template <std::size_t N>
class dependency_matrix : public detail::bit_matrix<N> {
  using base = detail::bit_matrix<N>;

 public:
  using base::words_per_row;

  /// How many earlier calls call i waits for.
  [[nodiscard]] constexpr std::size_t count(std::size_t i) const noexcept {
    return detail::predecessor_count(this->row(i), i);
  }
  friend constexpr bool operator==(const dependency_matrix&, const dependency_matrix&) = default;

  // Builder: row i = the bits below i of conflict row `conflicts`.
  constexpr void assign_row(std::size_t i, const std::uint64_t* conflicts) noexcept {
    std::uint64_t* row = this->mutable_row(i);
    for (std::size_t w = 0; w < words_per_row; ++w) row[w] = detail::bits_below(conflicts, w, i);
  }
};

/// A compile-time plan of N calls: each call's wave, the number of waves,
/// the size of each wave, and the dependency relation.
template <std::size_t N>
struct static_plan {
  std::array<std::size_t, N> waves{};        ///< wave of each call
  std::size_t wave_count = 0;                ///< number of waves (0 iff N == 0)
  std::array<std::size_t, N> wave_sizes{};   ///< calls per wave (first `wave_count` used)
  dependency_matrix<N> waits_for{};          ///< which earlier calls each call waits for
};

namespace detail {
template <std::size_t N>
constexpr static_plan<N> make_static_plan(const conflict_matrix<N>& m) noexcept {
  static_plan<N> p;
  std::array<std::size_t, conflict_matrix<N>::words_per_row> blocks{};
  p.wave_count = plan_waves_from_rows(N, [&](std::size_t i) { return m.row(i); }, p.waves, blocks);
  for (std::size_t i = 0; i < N; ++i) {
    ++p.wave_sizes[p.waves[i]];
    p.waits_for.assign_row(i, m.row(i));
  }
  return p;
}
}  // namespace detail

/// The plan of a list of calls of `Tools...` (in program order; a tool may
/// repeat), derived from `conflict_matrix_v<Tools...>`.
template <class... Tools>
inline constexpr static_plan<sizeof...(Tools)> plan_v = detail::make_static_plan(conflict_matrix_v<Tools...>);

/// Each call's wave: 0 if no earlier call conflicts with it, else 1 + the
/// largest wave of the earlier calls it conflicts with.
template <class... Tools>
constexpr std::array<std::size_t, sizeof...(Tools)> plan_waves() noexcept {
  return plan_v<Tools...>.waves;
}

/// Which earlier calls each call waits for: `dependencies_v<T...>(i, j)`.
template <class... Tools>
inline constexpr const dependency_matrix<sizeof...(Tools)>& dependencies_v = plan_v<Tools...>.waits_for;


// ---------------------------------------------------------------------------
// Runtime plans
// ---------------------------------------------------------------------------

/// The plan of calls known at runtime: each call's wave and the edges the
/// dispatcher waits on, as predecessor and successor lists (no dense rows:
/// memory and work O(n + edges)).
///
/// Which edges are kept: `plan_calls(descriptions)` keeps, per resource (and
/// target), only the edges to the latest group of conflicting accesses (the
/// last writer, or the readers / appenders since it), so a chain of writers
/// costs one edge per call, not one per earlier writer, and of those only the
/// ones no other kept edge implies (the transitive reduction; a bounded walk
/// decides, so on very large fan-ins a redundant edge may stay). Every kept
/// edge joins two conflicting calls, and every conflicting pair (j < i) is
/// ordered through a path of kept edges: the order the dispatcher enforces,
/// and the waves, are exactly those of the full "conflicts with an earlier
/// call" relation (docs/scheduling.md). Memory and work are linear in the
/// calls plus kept edges (a turn of many writers of one resource keeps one edge per writer); at most
/// `plan_limits::max_calls` calls are planned. A plan made from conflict rows
/// (`runtime_plan(n, rows)`, `plan_calls(matrix, types)`) keeps every edge.
class runtime_plan {
 public:
  /// An empty plan (no calls).
  runtime_plan() = default;

  /// Plans n calls from conflict rows (bit j of row i = calls i and j
  /// conflict; `(n + 63) / 64` words per row), keeping every edge. The rows
  /// must be symmetric.
  runtime_plan(std::size_t n, const std::vector<std::uint64_t>& rows) : n_(n) {
    const std::size_t w = (n + 63) / 64;
    if (rows.size() != n * w) throw std::invalid_argument("tool_effects::runtime_plan: rows must hold n * ((n + 63) / 64) words");
    pred_off_.assign(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      detail::for_each_predecessor(rows.data() + i * w, i, [&](std::size_t j) { pred_.push_back(static_cast<std::uint32_t>(j)); });
      pred_off_[i + 1] = static_cast<std::uint32_t>(pred_.size());
    }
    finish();
  }

  /// Number of calls.
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  /// Number of kept edges.
  [[nodiscard]] std::size_t edge_count() const noexcept { return pred_.size(); }
  /// The kept earlier calls call i waits for directly, in increasing order.
  [[nodiscard]] std::span<const std::uint32_t> direct_predecessors(std::size_t i) const noexcept {
    return {pred_.data() + pred_off_[i], pred_.data() + pred_off_[i + 1]};
  }
  /// The kept later calls that wait directly for call i, in increasing order.
  [[nodiscard]] std::span<const std::uint32_t> direct_successors(std::size_t i) const noexcept {
    return {succ_.data() + succ_off_[i], succ_.data() + succ_off_[i + 1]};
  }
  /// `direct_predecessors(i)` as a vector of indices.
  [[nodiscard]] std::vector<std::size_t> predecessors(std::size_t i) const {
    const auto p = direct_predecessors(i);
    return {p.begin(), p.end()};
  }
  /// Whether call i starts only after call j ended: j < i and a path of kept
  /// edges leads from j to i. True for every conflicting pair j < i.
  /// O(edges) per question.
  [[nodiscard]] bool waits_for(std::size_t i, std::size_t j) const {
    if (j >= i || i >= n_) return false;
    std::vector<std::size_t> stack{i};
    std::vector<bool> seen(i + 1, false);
    seen[i] = true;
    while (!stack.empty()) {
      const std::size_t k = stack.back();
      stack.pop_back();
      for (const auto p : direct_predecessors(k)) {
        if (p == j) return true;
        if (p > j && !seen[p]) {
          seen[p] = true;
          stack.push_back(p);
        }
      }
    }
    return false;
  }
  /// Wave of call i.
  [[nodiscard]] std::size_t wave(std::size_t i) const noexcept { return waves_[i]; }
  /// Every call's wave.
  [[nodiscard]] const std::vector<std::size_t>& waves() const noexcept { return waves_; }
  /// Number of waves (0 iff there are no calls).
  [[nodiscard]] std::size_t wave_count() const noexcept { return wave_count_; }

  /// The lists as arrays (CSR), for the dispatcher: predecessors of call i
  /// are `direct_predecessors(i)`; `predecessor_offsets()` has size() + 1
  /// entries, so do `successor_offsets()`, which index `successor_data()`.
  [[nodiscard]] const std::uint32_t* predecessor_offsets() const noexcept { return pred_off_.data(); }
  [[nodiscard]] const std::uint32_t* successor_offsets() const noexcept { return succ_off_.data(); }
  [[nodiscard]] const std::uint32_t* successor_data() const noexcept { return succ_.data(); }

  // For the planners: a plan from predecessor lists (CSR, each list increasing).
  struct from_lists_t {};
  runtime_plan(from_lists_t, std::size_t n, std::vector<std::uint32_t> pred_off, std::vector<std::uint32_t> pred)
      : n_(n), pred_off_(std::move(pred_off)), pred_(std::move(pred)) {
    finish();
  }

 private:
  // Waves (THE wave rule over kept edges: same longest paths as the full
  // relation, since both have the same transitive closure) and successor lists.
  void finish() {
    if (pred_off_.empty()) pred_off_.assign(n_ + 1, 0);
    waves_.assign(n_, 0);
    succ_off_.assign(n_ + 1, 0);
    if (pred_.empty()) {  // no edge: every call in wave 0, no successors
      wave_count_ = n_ == 0 ? 0 : 1;
      return;
    }
    for (std::size_t i = 0; i < n_; ++i) {
      std::size_t w = 0;
      for (const auto j : direct_predecessors(i)) {
        w = std::max(w, waves_[j] + 1);
        ++succ_off_[j + 1];
      }
      waves_[i] = w;
      wave_count_ = std::max(wave_count_, w + 1);
    }
    for (std::size_t i = 0; i < n_; ++i) succ_off_[i + 1] += succ_off_[i];
    succ_.resize(pred_.size());
    std::vector<std::uint32_t> fill(succ_off_.begin(), succ_off_.end() - 1);
    for (std::size_t i = 0; i < n_; ++i)
      for (const auto j : direct_predecessors(i)) succ_[fill[j]++] = static_cast<std::uint32_t>(i);
  }

  std::size_t n_ = 0;
  std::vector<std::uint32_t> pred_off_, pred_, succ_off_, succ_;
  std::vector<std::size_t> waves_;
  std::size_t wave_count_ = 0;
};

namespace detail {
// The kept edges as a plan (waves and successor lists).
inline runtime_plan plan_with_kept_edges(std::span<const call_description> calls) {
  kept_edge_lists e = kept_edges(calls);
  return runtime_plan(runtime_plan::from_lists_t{}, calls.size(), std::move(e.pred_off), std::move(e.pred));
}
}  // namespace detail

/// The most calls a runtime turn may have unless `plan_limits` says
/// otherwise. A model turn has tens of calls; this bounds what a hostile one
/// can cost (docs/scheduling.md: planning is O(n + edges) in memory).
inline constexpr std::size_t default_max_calls_per_turn = 4096;

/// Limits of runtime planning: `plan_calls(calls, limits)`, and a run option
/// of `json_tool_host` (`options.with(plan_limits{...})`).
struct plan_limits {
  std::size_t max_calls = default_max_calls_per_turn;  ///< most calls per turn
};

/// A turn has more calls than `plan_limits::max_calls`. `what()` is
/// `turn_too_large: <n> calls in one turn, over the limit of <max> (plan_limits::max_calls)`.
class turn_too_large : public std::length_error {
 public:
  turn_too_large(std::size_t calls, std::size_t limit)
      : std::length_error(detail::str_cat("turn_too_large: ", std::to_string(calls), " calls in one turn, over the limit of ",
                                          std::to_string(limit), " (plan_limits::max_calls)")),
        calls_(calls), limit_(limit) {}
  /// The number of calls of the turn.
  [[nodiscard]] std::size_t calls() const noexcept { return calls_; }
  /// The limit it is over.
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }

 private:
  std::size_t calls_, limit_;
};

/// Plans calls described at runtime (static tools via `describe<T>()`,
/// dynamic ones via `describe_runtime`), with the conflict rule of
/// `conflicts(call_description, call_description)`. Throws `turn_too_large`
/// for more than `limits.max_calls` calls.
inline runtime_plan plan_calls(std::span<const call_description> calls, plan_limits limits = {}) {
  if (calls.size() > limits.max_calls) throw turn_too_large(calls.size(), limits.max_calls);
  return detail::plan_with_kept_edges(calls);
}

/// Plans calls of static tool types: call i is a call of tool `types[i]`, an
/// index into the tools of `matrix` (e.g. `conflict_matrix_v<Tools...>`).
/// No resource work at runtime: each call copies its tool's precomputed row.
/// Throws std::out_of_range naming the call whose tool index is too large.
template <std::size_t K>
runtime_plan plan_calls(const conflict_matrix<K>& matrix, std::span<const std::size_t> types) {
  const std::size_t n = types.size(), W = (n + 63) / 64;
  for (std::size_t i = 0; i < n; ++i)
    if (types[i] >= K)
      throw std::out_of_range(detail::str_cat("tool_effects::plan_calls: call ", std::to_string(i), " has tool index ",
                                              std::to_string(types[i]), ", but there are only ", std::to_string(K),
                                              " tools"));
  // calls_of[t] = calls of tool t; by_tool[t] = calls that conflict with a call of t.
  std::vector<std::uint64_t> calls_of(K * W, 0), by_tool(K * W, 0), rows(n * W, 0);
  for (std::size_t i = 0; i < n; ++i) calls_of[types[i] * W + i / 64] |= std::uint64_t{1} << (i % 64);
  for (std::size_t t = 0; t < K; ++t)
    for (std::size_t u = 0; u < K; ++u)
      if (matrix(t, u))
        for (std::size_t w = 0; w < W; ++w) by_tool[t * W + w] |= calls_of[u * W + w];
  for (std::size_t i = 0; i < n; ++i) std::copy_n(by_tool.begin() + static_cast<std::ptrdiff_t>(types[i] * W), W, rows.begin() + static_cast<std::ptrdiff_t>(i * W));
  return runtime_plan(n, rows);
}

/// Why two described calls conflict, for people: "exclusive: <name> has
/// unknown effects", or the first conflicting pair of accesses as
/// `<resource>[<target>]: <mode of a> / <mode of b>` (the root resource is
/// shown as `*`). `std::nullopt` when they do not conflict.
inline std::optional<std::string> conflict_reason(const call_description& a, const call_description& b) {
  if (a.exclusive || b.exclusive)
    return detail::str_cat("exclusive: ", a.exclusive ? a.name : b.name, " has unknown effects");
  for (const auto& x : a.accesses)
    for (const auto& y : b.accesses)
      if (access_modes_conflict(x.mode, y.mode) && accesses_overlap(x, y)) {
        auto show = [](const runtime_access& r) {
          std::string s = r.resource.empty() ? std::string("*") : r.resource;
          if (r.target) s.append("[").append(*r.target).append("]");
          return s;
        };
        std::string s = show(x);
        if (x.resource != y.resource || x.target != y.target) s.append(" ~ ").append(show(y));
        return detail::str_cat(s, ": ", to_string(x.mode), " / ", to_string(y.mode));
      }
  return std::nullopt;
}

/// One dependency of a plan: call `to` waits for the earlier call `from`, because of `reason`.
struct plan_edge {
  std::size_t from = 0;
  std::size_t to = 0;
  std::string reason;
};

/// The kept edges of `plan` (made from `calls`) with their reasons, ordered
/// by `to`, then `from`: "which call waits for which, and why". Only the edges
/// the dispatcher waits on are listed (see `runtime_plan`): a call that
/// conflicts with an earlier one it has no edge to waits for it through the
/// listed edges. Every listed pair conflicts, so every reason is a real one.
inline std::vector<plan_edge> explain(std::span<const call_description> calls, const runtime_plan& plan) {
  if (calls.size() != plan.size())
    throw std::invalid_argument(detail::str_cat("tool_effects::explain: ", std::to_string(calls.size()),
                                                " calls for a plan of ", std::to_string(plan.size())));
  std::vector<plan_edge> out;
  out.reserve(plan.edge_count());
  for (std::size_t i = 0; i < plan.size(); ++i)
    for (const std::size_t j : plan.direct_predecessors(i))
      out.push_back({j, i, conflict_reason(calls[j], calls[i]).value_or("conflict")});
  return out;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_DETAIL_PLANS_HPP
