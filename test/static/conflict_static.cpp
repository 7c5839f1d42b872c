// static_assert suite: the type-level truths of resources, conflicts and
// composition (issue 3) — accesses_v, conflicts_v, ConflictFree,
// ParallelBatch, first_conflict_t, conflict_matrix_v and composite<>.
// Uses the varied tools (and their hand-made conflict table) of the unit tests.
#include <tool_effects/composite.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/resource.hpp>

#include <type_traits>

#include "../unit/varied_tools.hpp"

namespace {
namespace te = tool_effects;
using te::access_mode;

// ---------------------------------------------------------------- resources
static_assert(te::overlaps_v<vt::db, vt::user_row> && te::overlaps_v<vt::user_row, vt::db>);
static_assert(!te::overlaps_v<vt::users, vt::orders> && !te::overlaps_v<vt::db, vt::audit>);
static_assert(te::overlaps_v<te::everything, vt::report>);
static_assert(te::resource_v<vt::report>->path == "files/report");
static_assert(te::resource_v<vt::user_row>->path == "vt::db/vt::users/vt::user_row");
static_assert(te::Resource<vt::db> && !te::Resource<int> && !te::Resource<te::write>);

// ---------------------------------------------------------------- accesses_v
static_assert(te::accesses_v<vt::read_users>.size() == 1);
static_assert(te::accesses_v<vt::read_users>[0] == te::access{te::resource_v<vt::users>, access_mode::read});
static_assert(te::accesses_v<vt::read_all>[0] == te::access{te::resource_v<te::everything>, access_mode::read});
static_assert(te::accesses_v<vt::write_all>[0] == te::access{te::resource_v<te::everything>, access_mode::write});
static_assert(te::accesses_v<vt::net_only>.size() == 0 && !te::accesses_v<vt::net_only>.exclusive);
static_assert(te::accesses_v<vt::undeclared>.exclusive);
static_assert(te::accesses_v<vt::touch_user>.size() == 2);
static_assert(te::accesses_v<vt::touch_user>[1] == te::access{te::resource_v<vt::user_row>, access_mode::write});
// scoped tags imply the unary flags
static_assert(te::side_effects_v<vt::read_users> == te::effect_set{te::effect::read, te::effect::idempotent});
static_assert(te::side_effects_v<vt::append_audit> == te::effect_set{te::effect::write});
static_assert(te::ParallelSafe<vt::read_users> && !te::ParallelSafe<vt::append_audit>);

// ---------------------------------------------------------------- conflicts_v / ConflictFree
static_assert(te::conflicts_v<vt::read_users, vt::write_row>);      // parent read vs child write
static_assert(!te::conflicts_v<vt::write_row, vt::write_orders>);   // cousins
static_assert(!te::conflicts_v<vt::append_audit, vt::append_audit>);  // appends commute
static_assert(te::conflicts_v<vt::append_audit, vt::read_audit>);
static_assert(te::conflicts_v<vt::write_row, vt::write_row>);       // self
static_assert(te::conflicts_v<vt::undeclared, vt::net_only>);       // exclusive vs no access
static_assert(!te::conflicts_v<vt::net_only, vt::write_all>);       // flags only
static_assert(te::conflicts_v<const vt::write_row&, vt::read_row>); // qualifiers see the declaration
static_assert(te::ConflictFree<vt::read_all, vt::read_users> && !te::ConflictFree<vt::read_all, vt::append_audit>);

// the whole hand-made table, every ordered pair
template <class... Tools>
struct agrees_with_hand_table {
  static constexpr bool value = [] {
    constexpr auto expected = vt::expected_conflicts();
    constexpr auto pairs = vt::pairwise<Tools...>::value;
    constexpr const auto& m = te::conflict_matrix_v<Tools...>;
    for (std::size_t i = 0; i < sizeof...(Tools); ++i)
      for (std::size_t j = 0; j < sizeof...(Tools); ++j)
        if (pairs[i][j] != expected[i][j] || m(i, j) != expected[i][j]) return false;
    return true;
  }();
};
static_assert(vt::with_all_tools<agrees_with_hand_table>::value);

// ---------------------------------------------------------------- ParallelBatch / first_conflict_t
static_assert(te::ParallelBatch<vt::read_users, vt::read_row, vt::read_all, vt::net_only>);
static_assert(te::ParallelBatch<vt::write_row, vt::write_orders, vt::append_audit, vt::append_audit>);
static_assert(te::ParallelBatch<> && te::ParallelBatch<vt::write_all>);
static_assert(!te::ParallelBatch<vt::write_orders, vt::write_orders>);   // a writer listed twice
static_assert(!te::ParallelBatch<vt::read_row, vt::undeclared>);
static_assert(std::is_same_v<te::first_conflict_t<vt::read_users, vt::write_row>,
                             te::conflicting_pair<vt::read_users, vt::write_row, vt::user_row, 0, 1>>);
static_assert(std::is_same_v<te::first_conflict_t<vt::net_only, vt::write_orders, vt::drop_orders>,
                             te::conflicting_pair<vt::write_orders, vt::drop_orders, vt::orders, 1, 2>>);
static_assert(std::is_same_v<te::first_conflict_t<vt::read_audit, vt::undeclared>,
                             te::conflicting_pair<vt::read_audit, vt::undeclared, te::everything, 0, 1>>);
static_assert(std::is_same_v<te::first_conflict_t<vt::read_all, vt::read_row>, te::no_conflicting_pair>);

// constrained overloads choose by batch
template <class... T>
constexpr int dispatch() { return 0; }  // sequential
template <class... T>
  requires te::ParallelBatch<T...>
constexpr int dispatch() { return 1; }  // parallel
static_assert(dispatch<vt::read_users, vt::read_row>() == 1);
static_assert(dispatch<vt::read_users, vt::touch_user>() == 0);

// ---------------------------------------------------------------- composite
struct with_unknown : te::composite<vt::read_users, vt::undeclared> {};
static_assert(te::side_effects_v<vt::touch_user> ==
              te::effect_set{te::effect::read, te::effect::write, te::effect::idempotent});
static_assert(te::side_effect_class_v<vt::touch_user> == te::side_effect_class::idempotent);
static_assert(te::side_effects_v<te::composite<vt::read_users, vt::read_row>> ==
              te::effect_set{te::effect::read, te::effect::idempotent, te::effect::network});
static_assert(te::ParallelSafe<te::composite<vt::read_users, vt::read_row>>);
static_assert(!te::RetrySafe<te::composite<vt::write_orders, vt::write_row>>);  // non-idempotent then idempotent
static_assert(te::Destructive<te::composite<vt::read_users, vt::drop_orders>>);
static_assert(te::side_effects_v<with_unknown>.empty() && te::accesses_v<with_unknown>.exclusive);
static_assert(te::conflicts_v<with_unknown, vt::net_only>);
static_assert(te::accesses_v<te::composite<vt::read_users, vt::append_audit, vt::write_report>>.size() == 3);
}  // namespace
