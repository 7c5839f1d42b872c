// tool_effects/detail/kept_edges.hpp — the runtime planner's edges: which
// earlier calls each described call waits for directly (the transitive
// reduction of the conflict order, see below and docs/scheduling.md), as CSR
// predecessor lists. `plan_calls` (plan.hpp) makes a `runtime_plan` of them.
#ifndef TOOL_EFFECTS_DETAIL_KEPT_EDGES_HPP
#define TOOL_EFFECTS_DETAIL_KEPT_EDGES_HPP

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <tool_effects/access.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/conflict.hpp>

namespace tool_effects::detail {

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

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_KEPT_EDGES_HPP
