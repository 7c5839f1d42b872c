// A varied set of tool types shared by conflict_test, call_description_test
// and test/static/conflict_static.cpp, with the conflicts between them worked
// out BY HAND (`vt::expected_conflicts`), so that the library is checked
// against an answer it did not compute.
#ifndef TOOL_EFFECTS_TEST_VARIED_TOOLS_HPP
#define TOOL_EFFECTS_TEST_VARIED_TOOLS_HPP

#include <tool_effects/composite.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/side_effects.hpp>
#include <tool_effects/tags.hpp>

#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

namespace vt {
namespace te = tool_effects;

// Resources:  db ─┬─ users ── user_row        audit        files ── report
//                 └─ orders
struct db {};
struct users : te::resource<db> {};
struct user_row : te::resource<users> {};
struct orders : te::resource<db> {};
struct audit {};
struct files {
  static constexpr std::string_view resource_name = "files";
};
struct report : te::resource<files> {
  static constexpr std::string_view resource_name = "report";
};

// Tools (index: what it does).
struct read_users {  // 0
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
};
struct read_row {  // 1
  using side_effects = te::effects<te::reads<user_row>, te::network>;
};
struct write_row {  // 2
  using side_effects = te::effects<te::writes<user_row>, te::idempotent>;
};
struct write_orders {  // 3
  using side_effects = te::effects<te::writes<orders>>;
};
struct append_audit {  // 4
  using side_effects = te::effects<te::appends<audit>>;
};
struct read_orders_append_audit {  // 5
  using side_effects = te::effects<te::reads<orders>, te::appends<audit>>;
};
struct read_audit {  // 6
  using side_effects = te::effects<te::reads<audit>>;
};
struct read_all {  // 7: unscoped read = reads everything
  using side_effects = te::effects<te::read, te::network>;
};
struct write_all {  // 8: unscoped write = writes everything
  using side_effects = te::effects<te::write>;
};
struct net_only {  // 9: no accesses at all
  using side_effects = te::effects<te::external, te::network>;
};
struct undeclared {};  // 10: unknown = exclusive
struct drop_orders {   // 11: destructive with a scoped write
  using side_effects = te::effects<te::destructive, te::writes<orders>>;
};
struct drop_unscoped {  // 12: destructive without a scoped write = writes everything
  using side_effects = te::effects<te::destructive, te::reads<files>>;
};
using write_report = te::tagged<te::effects<te::writes<report>>, void (*)()>;  // 13: route 3
struct touch_user : te::composite<read_users, write_row> {};                   // 14: reads users, writes user_row
struct idempotent_only {                                                       // 15: flags, no access
  using side_effects = te::effects<te::idempotent>;
};

inline constexpr std::size_t tool_count = 16;

// Applies F to the whole list: F::template apply<read_users, ..., idempotent_only>.
template <template <class...> class F>
using with_all_tools = F<read_users, read_row, write_row, write_orders, append_audit, read_orders_append_audit,
                         read_audit, read_all, write_all, net_only, undeclared, drop_orders, drop_unscoped,
                         write_report, touch_user, idempotent_only>;

// The conflicting pairs (i <= j), worked out by hand from the rule "some
// access of each touches overlapping resources and they are not both reads
// nor both appends; an exclusive tool conflicts with everything".
inline constexpr std::pair<int, int> conflicting_pairs[] = {
    // self-conflicts: writers, exclusive, destructive, the composite (reads users, writes user_row)
    {2, 2}, {3, 3}, {8, 8}, {10, 10}, {11, 11}, {12, 12}, {13, 13}, {14, 14},
    // undeclared (10) conflicts with every tool
    {0, 10}, {1, 10}, {2, 10}, {3, 10}, {4, 10}, {5, 10}, {6, 10}, {7, 10}, {8, 10}, {9, 10},
    {10, 11}, {10, 12}, {10, 13}, {10, 14}, {10, 15},
    // write_all (8) and drop_unscoped (12) write everything: every tool with an access
    {0, 8}, {1, 8}, {2, 8}, {3, 8}, {4, 8}, {5, 8}, {6, 8}, {7, 8}, {8, 11}, {8, 12}, {8, 13}, {8, 14},
    {0, 12}, {1, 12}, {2, 12}, {3, 12}, {4, 12}, {5, 12}, {6, 12}, {7, 12}, {11, 12}, {12, 13}, {12, 14},
    // read_all (7) reads everything: every tool that writes or appends
    {2, 7}, {3, 7}, {4, 7}, {5, 7}, {7, 11}, {7, 13}, {7, 14},
    // scoped
    {0, 2}, {0, 14},           // reads users vs writes user_row (child)
    {1, 2}, {1, 14},           // reads user_row vs writes user_row
    {2, 14},                   // writes user_row twice
    {3, 5}, {3, 11},           // orders: write vs read, write vs write
    {4, 6}, {5, 6},            // audit: append vs read
    {5, 11},                   // orders: read vs write
};

// The hand-made table as a constexpr N×N matrix of bools.
constexpr std::array<std::array<bool, tool_count>, tool_count> expected_conflicts() {
  std::array<std::array<bool, tool_count>, tool_count> m{};
  for (const auto& [i, j] : conflicting_pairs) {
    m[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = true;
    m[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)] = true;
  }
  return m;
}

// conflicts_v for every ordered pair of a pack, as a matrix.
template <class... Tools>
struct pairwise {
  template <class A>
  static constexpr std::array<bool, sizeof...(Tools)> row() {
    return {te::conflicts_v<A, Tools>...};
  }
  static constexpr std::array<std::array<bool, sizeof...(Tools)>, sizeof...(Tools)> value{row<Tools>()...};
};

}  // namespace vt

#endif  // TOOL_EFFECTS_TEST_VARIED_TOOLS_HPP
