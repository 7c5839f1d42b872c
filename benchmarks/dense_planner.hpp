// benchmarks/dense_planner.hpp — the runtime planner tool_effects used before the kept-edges planner
// (`plan_calls` since issue 13): dense conflict rows, N^2/64 words. Kept here, out of the library, only as the
// baseline benchmarks/dispatch_overhead.cpp measures the current planner against.
#ifndef TOOL_EFFECTS_BENCHMARKS_DENSE_PLANNER_HPP
#define TOOL_EFFECTS_BENCHMARKS_DENSE_PLANNER_HPP

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <tool_effects/plan.hpp>

namespace bench {
using namespace tool_effects;
using tool_effects::detail::all_access_modes;
using tool_effects::detail::path_key_hash;

// Conflict rows of described calls, by resource (as `build_conflict_matrix`
// does at compile time): each distinct resource path is interned once, and
// each node gets a bitset of the calls that access it per mode. Row i is the
// union, over i's accesses (r, m, target) and the modes m' that conflict with
// m (`access_modes_conflict`), of the calls with a mode-m' access to a strict
// ancestor of r, to a strict descendant of r, or to r itself with an
// overlapping target (`accesses_overlap`: different targets of the same
// resource do not overlap; no target holds the whole resource).
// O(paths × depth + accesses × N/64) word operations, plus N²/64 words of
// rows.
inline std::vector<std::uint64_t> conflict_rows(std::span<const call_description> calls) {
  const std::size_t n = calls.size(), W = (n + 63) / 64;
  std::vector<std::uint64_t> rows(n * W, 0);
  if (n == 0) return rows;

  std::unordered_map<std::string_view, std::uint32_t> node_of;
  std::vector<std::string_view> paths;
  std::unordered_map<std::pair<std::uint32_t, std::string_view>, std::uint32_t, path_key_hash> slot_of;
  struct interned {
    std::uint32_t node, slot;  // slot: npos32 when untargeted
    access_mode mode;
  };
  constexpr std::uint32_t none = ~std::uint32_t{0};
  std::vector<interned> acc;
  std::vector<std::size_t> first(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    first[i] = acc.size();
    if (calls[i].exclusive) continue;
    for (const auto& a : calls[i].accesses) {
      auto [it, fresh] = node_of.try_emplace(a.resource, static_cast<std::uint32_t>(paths.size()));
      if (fresh) paths.push_back(a.resource);
      std::uint32_t slot = none;
      if (a.target) slot = slot_of.try_emplace({it->second, *a.target}, static_cast<std::uint32_t>(slot_of.size())).first->second;
      acc.push_back({it->second, slot, a.mode});
    }
  }
  first[n] = acc.size();
  const std::size_t U = paths.size(), S = slot_of.size();

  // Strict ancestors of each node among the accessed nodes: the prefixes of
  // its path that end before a '/', and the root "" (see `paths_overlap`).
  std::vector<std::vector<std::uint32_t>> ancestors(U);
  for (std::size_t u = 0; u < U; ++u) {
    const std::string_view p = paths[u];
    if (p.empty()) continue;
    if (auto it = node_of.find(std::string_view{}); it != node_of.end()) ancestors[u].push_back(it->second);
    for (std::size_t k = 1; k < p.size(); ++k)
      if (p[k] == '/')
        if (auto it = node_of.find(p.substr(0, k)); it != node_of.end()) ancestors[u].push_back(it->second);
  }

  auto bits = [W](std::size_t count) { return std::vector<std::uint64_t>(3 * count * W, 0); };
  std::vector<std::uint64_t> all = bits(U), untargeted = bits(U), by_slot = bits(S), up = bits(U), down = bits(U);
  std::vector<std::uint64_t> exclusive(W, 0);
  auto at = [W](std::vector<std::uint64_t>& v, std::size_t mode, std::size_t node, std::size_t count) {
    return v.data() + (mode * count + node) * W;
  };
  auto set = [](std::uint64_t* row, std::size_t i) { row[i / 64] |= std::uint64_t{1} << (i % 64); };
  auto merge = [W](std::uint64_t* dst, const std::uint64_t* src) {
    for (std::size_t w = 0; w < W; ++w) dst[w] |= src[w];
  };

  bool any_mode[3] = {false, false, false};  // modes nobody uses are skipped below
  for (std::size_t i = 0; i < n; ++i) {
    if (calls[i].exclusive) set(exclusive.data(), i);
    for (std::size_t k = first[i]; k < first[i + 1]; ++k) {
      const auto m = static_cast<std::size_t>(acc[k].mode);
      any_mode[m] = true;
      set(at(all, m, acc[k].node, U), i);
      if (acc[k].slot == none) set(at(untargeted, m, acc[k].node, U), i);
      else set(at(by_slot, m, acc[k].slot, S), i);
    }
  }
  // up[m][u] = calls with a mode-m access to a strict ancestor of u;
  // down[m][u] = ... to a strict descendant of u.
  for (std::size_t u = 0; u < U; ++u)
    for (const auto a : ancestors[u])
      for (std::size_t m = 0; m < 3; ++m) {
        if (!any_mode[m]) continue;
        merge(at(up, m, u, U), at(all, m, a, U));
        merge(at(down, m, a, U), at(all, m, u, U));
      }

  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t* row = rows.data() + i * W;
    if (calls[i].exclusive) {
      for (std::size_t j = 0; j < n; ++j) set(row, j);
      continue;
    }
    merge(row, exclusive.data());
    for (std::size_t k = first[i]; k < first[i + 1]; ++k) {
      const auto& a = acc[k];
      for (const auto other : all_access_modes) {
        const auto m = static_cast<std::size_t>(other);
        if (!any_mode[m] || !access_modes_conflict(a.mode, other)) continue;
        merge(row, at(up, m, a.node, U));
        merge(row, at(down, m, a.node, U));
        if (a.slot == none) {
          merge(row, at(all, m, a.node, U));
        } else {
          merge(row, at(untargeted, m, a.node, U));
          merge(row, at(by_slot, m, a.slot, S));
        }
      }
    }
  }
  return rows;
}

}  // namespace bench

#endif  // TOOL_EFFECTS_BENCHMARKS_DENSE_PLANNER_HPP
