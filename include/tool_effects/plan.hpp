// tool_effects/plan.hpp — conflict-aware plans: which earlier calls each
// call of a turn waits for, and in which wave it can run.
//
// The model (docs/scheduling.md): calls are given in program order. Call i
// waits for every EARLIER call it conflicts with (the rule of access.hpp),
// and for nothing else. Its wave is 0 if it waits for nobody, else 1 + the
// largest wave of the calls it waits for. The dispatcher does not use wave
// barriers (a call starts as soon as its own predecessors finished), so
// waves are a summary for people and for heterogeneous code; the dependency
// relation is what runs.
//
// Two front ends:
//  - compile time (detail/plan_core.hpp, on bitset rows): `plan_v<Tools...>`, `plan_waves<Tools...>()`,
//    `dependencies_v<Tools...>`, `waves_c<Tools...>` (a Hana tuple of
//    tuples of `hana::size_t` indices), all derived from
//    `conflict_matrix_v<Tools...>`; O(N²/64) constexpr work, no per-pair
//    instantiation;
//  - runtime: `plan_calls(span<const call_description>)`, with resource
//    paths interned once and only the edges that order conflicting calls
//    kept (successor lists, O(n + edges); see `runtime_plan`), or
//    `plan_calls(matrix, types)` for calls of static tool types (the
//    compile-time matrix, indexed per call; every edge kept).
//    Both compute the same waves: the wave rule over kept edges gives the
//    longest paths of the full relation, which has the same closure.
#ifndef TOOL_EFFECTS_PLAN_HPP
#define TOOL_EFFECTS_PLAN_HPP

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

#include <boost/hana/integral_constant.hpp>
#include <boost/hana/tuple.hpp>

#include <tool_effects/access.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/conflict.hpp>
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

namespace detail {
template <class... Tools>
struct wave_tuple {
  static constexpr const auto& plan = plan_v<Tools...>;
  // The indices of wave W, in program order.
  template <std::size_t W>
  static constexpr auto indices = [] {
    std::array<std::size_t, plan.wave_sizes[W]> out{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < sizeof...(Tools); ++i)
      if (plan.waves[i] == W) out[k++] = i;
    return out;
  }();
  template <std::size_t W, std::size_t... K>
  static constexpr auto wave(std::index_sequence<K...>) {
    return boost::hana::make_tuple(boost::hana::size_c<indices<W>[K]>...);
  }
  template <std::size_t... W>
  static constexpr auto all(std::index_sequence<W...>) {
    return boost::hana::make_tuple(wave<W>(std::make_index_sequence<plan.wave_sizes[W]>{})...);
  }
  static constexpr auto value = all(std::make_index_sequence<plan.wave_count>{});
};
}  // namespace detail

/// The waves as a Boost.Hana tuple of tuples of `hana::size_t<i>` call
/// indices, for heterogeneous code: `hana::for_each(waves_c<A, B, C>, ...)`.
/// Wave k holds the calls of wave k in program order.
template <class... Tools>
inline constexpr auto waves_c = detail::wave_tuple<Tools...>::value;

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
/// costs one edge per call, not one per earlier writer. Every kept edge joins
/// two conflicting calls, and every conflicting pair (j < i) is ordered
/// through a path of kept edges: the order the dispatcher enforces, and the
/// waves, are exactly those of the full "conflicts with an earlier call"
/// relation (docs/scheduling.md). A plan made from conflict rows
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
struct path_key_hash {
  std::size_t operator()(const std::pair<std::uint32_t, std::string_view>& k) const noexcept {
    return std::hash<std::string_view>{}(k.second) * 31u + k.first;
  }
};

// The kept edges of described calls, in O(n + accesses × (depth + keys
// under the accessed resource) + kept edges): the calls are scanned once, in
// program order. A key is a resource node (untargeted accesses) or a
// (node, target) pair. Each key keeps its latest group of accesses that do not
// conflict among themselves (readers, appenders, or one writer) and the group
// before it. An access of call i with mode m waits, in every key it overlaps
// (the key itself, the node's other keys, the keys of strict ancestors and
// descendants: `accesses_overlap`), for the latest group if m conflicts with
// its mode (`access_modes_conflict`), else for the group before it; then i
// joins its own key: into the latest group when its mode is the group's
// shareable mode, else as a new group. Every member of a group waits for every
// member of the group before it, so any earlier conflicting access is ordered
// before i through kept edges. An exclusive call waits for every call since
// the previous exclusive one (or for it) and starts a new epoch in which every
// key is empty; every later call waits for it.
struct kept_edge_lists {
  std::vector<std::uint32_t> pred_off, pred;  // CSR predecessor lists; both empty when there is no edge
};

// How many times this thread computed kept edges (planned a runtime turn):
// lets tests check that a turn is planned once.
inline std::size_t& kept_edges_runs() noexcept {
  thread_local std::size_t runs = 0;
  return runs;
}

inline kept_edge_lists kept_edges(std::span<const call_description> calls) {
  ++kept_edges_runs();
  const std::size_t n = calls.size();
  constexpr std::uint32_t none = ~std::uint32_t{0};
  // A turn in which no call is exclusive and no two of the access modes
  // present conflict (`access_modes_conflict`: e.g. only reads, or only
  // appends) has no edge at all, whatever the resources: one pass, no keys.
  {
    bool exclusive = false;
    unsigned modes = 0;  // bit m: some access has mode m
    for (const auto& c : calls) {
      exclusive = exclusive || c.exclusive;
      for (const auto& a : c.accesses) modes |= 1u << static_cast<unsigned>(a.mode);
    }
    bool conflict = exclusive;
    for (const access_mode x : all_access_modes)
      for (const access_mode y : all_access_modes)
        conflict = conflict || ((modes >> static_cast<unsigned>(x) & 1u) != 0 &&
                                (modes >> static_cast<unsigned>(y) & 1u) != 0 && access_modes_conflict(x, y));
    if (!conflict) return {};
  }
  std::unordered_map<std::string_view, std::uint32_t> node_of;
  std::vector<std::string_view> paths;
  std::unordered_map<std::pair<std::uint32_t, std::string_view>, std::uint32_t, path_key_hash> slot_of;
  struct interned {
    std::uint32_t node, key;  // key: the node's whole key or a (node, target) key
    access_mode mode;
  };
  std::vector<interned> acc;
  std::vector<std::uint32_t> whole;               // node -> its untargeted key
  std::vector<std::uint32_t> key_node;            // key -> its node
  std::vector<std::vector<std::uint32_t>> slots;  // node -> its targeted keys
  std::uint32_t keys = 0;
  std::vector<std::size_t> first(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    first[i] = acc.size();
    if (calls[i].exclusive) continue;
    for (const auto& a : calls[i].accesses) {
      auto [it, fresh] = node_of.try_emplace(a.resource, static_cast<std::uint32_t>(paths.size()));
      if (fresh) {
        paths.push_back(a.resource);
        key_node.push_back(static_cast<std::uint32_t>(paths.size() - 1));
        whole.push_back(keys++);
        slots.emplace_back();
      }
      const std::uint32_t u = it->second;
      std::uint32_t key = whole[u];
      if (a.target) {
        auto [st, new_slot] = slot_of.try_emplace({u, *a.target}, keys);
        if (new_slot) {
          key_node.push_back(u);
          slots[u].push_back(keys++);
        }
        key = st->second;
      }
      acc.push_back({u, key, a.mode});
    }
  }
  first[n] = acc.size();
  const std::size_t U = paths.size();

  // Strict ancestors (prefixes ending before a '/', and the root "") and
  // strict descendants of each accessed node, among the accessed nodes.
  std::vector<std::vector<std::uint32_t>> ancestors(U), descendants(U);
  for (std::size_t u = 0; u < U; ++u) {
    const std::string_view p = paths[u];
    if (p.empty()) continue;
    auto add = [&](std::string_view prefix) {
      if (auto it = node_of.find(prefix); it != node_of.end()) {
        ancestors[u].push_back(it->second);
        descendants[it->second].push_back(static_cast<std::uint32_t>(u));
      }
    };
    add(std::string_view{});
    for (std::size_t k = 1; k < p.size(); ++k)
      if (p[k] == '/') add(p.substr(0, k));
  }

  // A group is a list in `groups` (most recent member first), so no key allocates.
  struct group_node {
    std::uint32_t call, next;
  };
  std::vector<group_node> groups;
  groups.reserve(acc.size());
  auto push = [&](std::uint32_t call, std::uint32_t next) {
    groups.push_back({call, next});
    return static_cast<std::uint32_t>(groups.size() - 1);
  };
  struct key_state {
    std::uint32_t epoch = 0;
    access_mode mode = access_mode::read;
    std::uint32_t latest = none, before = none;  // heads of the two groups
  };
  std::vector<key_state> state(keys);
  std::uint32_t epoch = 1;  // key states of other epochs are empty
  std::uint32_t last_exclusive = none;
  std::vector<std::uint32_t> stamp(n, none);  // stamp[j] == i: j is already a candidate of i
  std::vector<std::uint32_t> reach(n, 0);  // reach[j] == gen: a path of kept edges leads from j to the call being planned
  std::uint32_t gen = 0;                   // one per reduction (a call may reduce twice)
  // Per node: its targeted keys in the order calls joined them (a key once per join), and, per access mode, the
  // latest untargeted access of the node (call, log size after its joins). See `scan_slots`.
  std::vector<std::vector<std::uint32_t>> slot_log(U);
  struct untargeted_mark {
    std::uint32_t call = none, log = 0;
  };
  std::vector<std::array<untargeted_mark, 3>> untargeted_at(U);
  struct deferred_scan {
    std::uint32_t node, since;
    access_mode mode;
  };
  std::vector<deferred_scan> deferred;
  std::vector<std::uint32_t> pred_off(n + 1, 0), pred, kept, walk;
  std::vector<std::pair<std::uint32_t, access_mode>> joins, covers;
  // Two accesses of one call to one key act as one: the mode, or a write when they differ.
  auto add = [](std::vector<std::pair<std::uint32_t, access_mode>>& list, std::uint32_t key, access_mode m) {
    auto same = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == key; });
    if (same == list.end()) list.emplace_back(key, m);
    else if (same->second != m) same->second = access_mode::write;
  };

  for (std::size_t i = 0; i < n; ++i) {
    const auto self = static_cast<std::uint32_t>(i);
    const std::size_t begin = pred.size();
    // Call i joins key `key` with mode m: into the latest group if m is its shareable mode, else as a new group.
    auto join = [&](std::uint32_t key, access_mode m) {
      if (const std::uint32_t u = key_node[key]; key != whole[u]) slot_log[u].push_back(key);
      key_state& k = state[key];
      if (k.epoch != epoch) {
        k.epoch = epoch;
        k.before = none;
        k.latest = push(self, none);
        k.mode = m;
      } else if (groups[k.latest].call == self) {
        if (k.mode != m) k.mode = access_mode::write;  // i covered the key, and accesses it in another mode too
      } else if (!access_modes_conflict(m, k.mode)) {
        // The group's latest members that already reach i are implied by i: leave them out (each is
        // passed over once, so this costs O(1) amortized).
        std::uint32_t rest = k.latest;
        while (rest != none && reach[groups[rest].call] == gen) rest = groups[rest].next;
        k.latest = push(self, rest);
      } else {
        k.before = k.latest;
        k.latest = push(self, none);
        k.mode = m;
      }
    };
    auto wait = [&](std::uint32_t j) {
      if (stamp[j] != self) {
        stamp[j] = self;
        pred.push_back(j);
      }
    };
    // The transitive reduction of i's candidates pred[begin..): from the
    // latest down, a candidate that reaches an already kept one (reach[j] ==
    // gen) is dropped; a kept one marks every call that reaches it by a walk of
    // the kept predecessor lists, bounded below by the earliest candidate (or `floor`).
    // The walk has a budget proportional to the number of candidates (so
    // this costs what collecting them did); past it, the calls it did not
    // reach stay unmarked and are kept: a redundant edge, never a missing one.
    // `floor`: walk down to it at least (to learn whether a given earlier call reaches i).
    auto reduce = [&](std::uint32_t floor) {
      ++gen;
      const std::size_t count = pred.size() - begin;
      if (count == 0) return;
      const auto first_candidate = pred.begin() + static_cast<std::ptrdiff_t>(begin);
      if (count > 1) std::sort(first_candidate, pred.end());
      if (count == 1 && floor == none) {  // nothing to drop, no call to ask about: no walk
        reach[*first_candidate] = gen;
        return;
      }
      const std::uint32_t low = std::min(*first_candidate, floor);
      std::size_t budget = 64 + 16 * count;
      kept.clear();
      for (std::size_t a = pred.size(); a-- > begin;) {
        const std::uint32_t c = pred[a];
        if (reach[c] == gen) continue;
        reach[c] = gen;
        kept.push_back(c);
        walk.assign(1, c);
        while (!walk.empty() && budget > 0) {
          const std::uint32_t k = walk.back();
          walk.pop_back();
          for (std::uint32_t e = pred_off[k]; e < pred_off[k + 1] && budget > 0; ++e, --budget)
            if (const std::uint32_t p = pred[e]; p >= low && reach[p] != gen) {
              reach[p] = gen;
              walk.push_back(p);
            }
        }
      }
      pred.resize(begin);
      pred.insert(pred.end(), kept.rbegin(), kept.rend());
    };
    if (calls[i].exclusive) {
      // The calls since the previous exclusive call are exactly those after it.
      const std::uint32_t from = last_exclusive == none ? 0 : last_exclusive + 1;
      if (from == self) {
        if (last_exclusive != none) wait(last_exclusive);
      } else {
        for (std::uint32_t j = from; j < self; ++j) wait(j);
      }
      last_exclusive = self;
      ++epoch;
      reduce(none);
    } else {
      if (last_exclusive != none) wait(last_exclusive);
      // below: `key` lies under an untargeted access (a descendant node's
      // key, or a target of the node): if i waits for its whole latest group,
      // i covers it (joins it as a new group, below), so later calls wait for
      // i rather than for that group again. Every call that checks `key`
      // overlaps i's access then (not so under a targeted access: two
      // targets of one node do not overlap).
      auto check = [&](std::uint32_t key, access_mode m, bool below) {
        const key_state& k = state[key];
        if (k.epoch != epoch) return;
        const bool conflict = access_modes_conflict(m, k.mode);
        for (std::uint32_t g = conflict ? k.latest : k.before; g != none; g = groups[g].next) wait(groups[g].call);
        if (conflict && below) add(covers, key, m);
      };
      auto check_node = [&](std::uint32_t u, access_mode m, bool whole_below, bool slots_below) {
        check(whole[u], m, whole_below);
        for (const auto key : slots[u]) check(key, m, slots_below);
      };
      // The targeted keys of node u for an untargeted access of mode m. All of
      // them, unless an earlier untargeted access y of u has a mode that
      // conflicts with everything m conflicts with (m itself, or write): y
      // then waited (directly or through kept edges) for every access of
      // those keys before it that conflicts with m, so if y is ordered
      // before i, only the keys joined since y need looking at. Whether it
      // is, the reduction tells (`reach`): the scan is deferred until then.
      // This makes a turn that alternates targeted writes and untargeted
      // reads of one resource linear instead of reads x writes.
      auto scan_slots = [&](std::uint32_t u, access_mode m) {
        if (slots[u].empty()) return;
        untargeted_mark y = untargeted_at[u][static_cast<std::size_t>(m)];
        const untargeted_mark w = untargeted_at[u][static_cast<std::size_t>(access_mode::write)];
        if (w.call != none && (y.call == none || w.call > y.call)) y = w;
        if (y.call == none || slot_log[u].size() - y.log >= slots[u].size()) {  // no y, or no fewer keys since it
          for (const auto key : slots[u]) check(key, m, true);
          return;
        }
        for (std::size_t e = y.log; e < slot_log[u].size(); ++e) check(slot_log[u][e], m, true);
        deferred.push_back({u, y.call, m});
      };
      joins.clear();
      covers.clear();
      deferred.clear();
      for (std::size_t a = first[i]; a < first[i + 1]; ++a) {
        const auto& x = acc[a];
        if (x.key == whole[x.node]) {  // untargeted: the node's every key
          check(whole[x.node], x.mode, false);
          scan_slots(x.node, x.mode);
        } else {
          check(whole[x.node], x.mode, false);
          check(x.key, x.mode, false);
        }
        for (const auto v : ancestors[x.node]) check_node(v, x.mode, false, false);
        const bool untargeted = x.key == whole[x.node];
        for (const auto v : descendants[x.node]) check_node(v, x.mode, untargeted, untargeted);
        add(joins, x.key, x.mode);
      }
      std::uint32_t floor = none;
      for (const auto& d : deferred) floor = std::min(floor, d.since);
      reduce(floor);  // before joining: the joins read the marks
      bool rescanned = false;
      for (const auto& d : deferred)
        if (reach[d.since] != gen) {  // not known to be ordered before i: every targeted key, after all
          for (const auto key : slots[d.node]) check(key, d.mode, true);
          rescanned = true;
        }
      if (rescanned) reduce(none);
      // Covered keys first: a key i also accesses itself then gets i's own mode too.
      for (const auto& [key, m] : covers) join(key, m);
      for (const auto& [key, m] : joins) join(key, m);
      for (const auto& [key, m] : joins)
        if (const std::uint32_t u = key_node[key]; key == whole[u])
          untargeted_at[u][static_cast<std::size_t>(m)] = {self, static_cast<std::uint32_t>(slot_log[u].size())};
    }
    pred_off[i + 1] = static_cast<std::uint32_t>(pred.size());
  }
  if (pred.empty()) return {};
  return {std::move(pred_off), std::move(pred)};
}

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

#endif  // TOOL_EFFECTS_PLAN_HPP
