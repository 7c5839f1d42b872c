// Pairwise conflicts: every mode pair × overlap, hierarchies, unscoped vs
// scoped, undeclared = exclusive, flags that do not conflict, self-conflict,
// ParallelBatch and first_conflict_t, and conflict_matrix_v against a table
// worked out by hand (test/unit/varied_tools.hpp). Issue 3.
#include <tool_effects/call_description.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/detail/type_name.hpp>

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "varied_tools.hpp"

namespace conflict_test_ns {

namespace te = tool_effects;
using te::access_mode;

namespace modes {
struct parent {};
struct child : te::resource<parent> {};
struct other {};

template <access_mode M, class R>
struct tool;
template <class R>
struct tool<access_mode::read, R> {
  using side_effects = te::effects<te::reads<R>>;
};
template <class R>
struct tool<access_mode::write, R> {
  using side_effects = te::effects<te::writes<R>>;
};
template <class R>
struct tool<access_mode::append, R> {
  using side_effects = te::effects<te::appends<R>>;
};
}  // namespace modes

namespace {
constexpr access_mode all_modes[] = {access_mode::read, access_mode::write, access_mode::append};

// The conflict table, written out: overlapping accesses conflict unless both
// read or both append.
constexpr bool table(access_mode a, access_mode b) {
  constexpr bool t[3][3] = {
      /*            read   write  append */
      /* read   */ {false, true, true},
      /* write  */ {true, true, true},
      /* append */ {true, true, false},
  };
  return t[static_cast<int>(a)][static_cast<int>(b)];
}

template <access_mode A, access_mode B, class RA, class RB>
bool conflict() {
  return te::conflicts_v<modes::tool<A, RA>, modes::tool<B, RB>>;
}

// Calls f.template operator()<A, B>() for the 9 mode pairs.
template <class F>
void for_mode_pairs(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f.template operator()<all_modes[I / 3], all_modes[I % 3]>(), ...);
  }(std::make_index_sequence<9>{});
}

std::string mode_pair(access_mode a, access_mode b) {
  return std::string(te::to_string(a)) + "/" + std::string(te::to_string(b));
}
}  // namespace

TEST(ModeRule, TheTable) {
  for (const auto a : all_modes)
    for (const auto b : all_modes) EXPECT_EQ(te::access_modes_conflict(a, b), table(a, b)) << mode_pair(a, b);
}

TEST(ModeRule, EveryModePairOnTheSameResource) {
  for_mode_pairs([]<access_mode A, access_mode B>() {
    EXPECT_EQ((conflict<A, B, modes::parent, modes::parent>()), table(A, B)) << mode_pair(A, B);
  });
}

TEST(ModeRule, EveryModePairOnParentAndChild) {
  for_mode_pairs([]<access_mode A, access_mode B>() {
    EXPECT_EQ((conflict<A, B, modes::parent, modes::child>()), table(A, B)) << mode_pair(A, B);
    EXPECT_EQ((conflict<A, B, modes::child, modes::parent>()), table(A, B)) << mode_pair(A, B);
  });
}

TEST(ModeRule, EveryModePairWithoutOverlapIsFree) {
  for_mode_pairs([]<access_mode A, access_mode B>() {
    EXPECT_FALSE((conflict<A, B, modes::parent, modes::other>())) << mode_pair(A, B);
    EXPECT_FALSE((conflict<A, B, modes::child, modes::other>())) << mode_pair(A, B);
  });
}

TEST(ModeRule, EveryModePairAgainstTheRoot) {
  for_mode_pairs([]<access_mode A, access_mode B>() {
    EXPECT_EQ((conflict<A, B, te::everything, modes::child>()), table(A, B)) << mode_pair(A, B);
  });
}

TEST(Hierarchy, SiblingsAndCousinsDoNotConflict) {
  EXPECT_FALSE((te::conflicts_v<vt::write_row, vt::write_orders>));  // user_row vs orders (cousins)
  EXPECT_FALSE((te::conflicts_v<vt::read_users, vt::write_orders>));  // siblings
  EXPECT_TRUE((te::conflicts_v<vt::read_users, vt::write_row>));      // parent vs child
  EXPECT_TRUE((te::conflicts_v<vt::write_row, vt::read_users>));      // symmetric
}

TEST(Unscoped, ReadAndWriteMeanTheRoot) {
  // `read` reads everything: it conflicts with any writer, and not with readers.
  EXPECT_TRUE((te::conflicts_v<vt::read_all, vt::write_row>));
  EXPECT_TRUE((te::conflicts_v<vt::read_all, vt::append_audit>));
  EXPECT_FALSE((te::conflicts_v<vt::read_all, vt::read_users>));
  EXPECT_FALSE((te::conflicts_v<vt::read_all, vt::read_all>));
  // `write` writes everything: it conflicts with any access.
  EXPECT_TRUE((te::conflicts_v<vt::write_all, vt::read_audit>));
  EXPECT_TRUE((te::conflicts_v<vt::write_all, vt::read_all>));
  EXPECT_TRUE((te::conflicts_v<vt::write_all, vt::write_all>));
  // ... but not with a tool that accesses nothing.
  EXPECT_FALSE((te::conflicts_v<vt::write_all, vt::net_only>));
  EXPECT_FALSE((te::conflicts_v<vt::write_all, vt::idempotent_only>));
}

TEST(Unscoped, DestructiveWithoutScopedWriteWritesTheRoot) {
  ASSERT_EQ(te::accesses_v<vt::drop_unscoped>.size(), 2u);
  EXPECT_EQ(te::accesses_v<vt::drop_unscoped>[1].resource, te::resource_v<te::everything>);
  EXPECT_EQ(te::accesses_v<vt::drop_unscoped>[1].mode, access_mode::write);
  EXPECT_TRUE((te::conflicts_v<vt::drop_unscoped, vt::read_audit>));
  // With a scoped write, destruction is confined to it.
  ASSERT_EQ(te::accesses_v<vt::drop_orders>.size(), 1u);
  EXPECT_FALSE((te::conflicts_v<vt::drop_orders, vt::read_audit>));
  EXPECT_TRUE((te::conflicts_v<vt::drop_orders, vt::read_orders_append_audit>));
}

TEST(Unscoped, DestructiveWithOnlyAnAppendStillWritesTheRoot) {
  // An append is not a write that could "contain" a destruction.
  struct drop_with_append {
    using side_effects = te::effects<te::destructive, te::appends<vt::audit>>;
  };
  ASSERT_EQ(te::accesses_v<drop_with_append>.size(), 2u);
  EXPECT_EQ(te::accesses_v<drop_with_append>[1].resource, te::resource_v<te::everything>);
  EXPECT_TRUE((te::conflicts_v<drop_with_append, vt::read_users>));
}

TEST(Exclusive, UndeclaredConflictsWithEverything) {
  EXPECT_TRUE(te::accesses_v<vt::undeclared>.exclusive);
  EXPECT_TRUE((te::conflicts_v<vt::undeclared, vt::net_only>));         // even a tool with no access
  EXPECT_TRUE((te::conflicts_v<vt::idempotent_only, vt::undeclared>));  // in either order
  EXPECT_TRUE((te::conflicts_v<vt::undeclared, vt::undeclared>));       // and itself
  EXPECT_TRUE((te::conflicts_v<vt::undeclared, int>));
  struct empty_declaration {
    using side_effects = te::effects<>;
  };
  EXPECT_TRUE((te::conflicts_v<empty_declaration, vt::read_audit>));
}

TEST(FlagsOnly, ExternalNetworkConflictsOnlyWithExclusive) {
  EXPECT_FALSE(te::accesses_v<vt::net_only>.exclusive);
  EXPECT_EQ(te::accesses_v<vt::net_only>.size(), 0u);
  EXPECT_FALSE((te::conflicts_v<vt::net_only, vt::net_only>));
  EXPECT_FALSE((te::conflicts_v<vt::net_only, vt::write_all>));
  EXPECT_FALSE((te::conflicts_v<vt::net_only, vt::drop_unscoped>));
  EXPECT_TRUE((te::conflicts_v<vt::net_only, vt::undeclared>));
  struct expensive_external {
    using side_effects = te::effects<te::expensive, te::external, te::network>;
  };
  EXPECT_FALSE((te::conflicts_v<expensive_external, vt::write_all>));
}

TEST(SelfConflict, TwoCallsOfTheSameTool) {
  EXPECT_FALSE((te::conflicts_v<vt::read_users, vt::read_users>));
  EXPECT_TRUE((te::conflicts_v<vt::write_row, vt::write_row>));
  EXPECT_FALSE((te::conflicts_v<vt::append_audit, vt::append_audit>));  // appends commute
  EXPECT_TRUE((te::conflicts_v<vt::touch_user, vt::touch_user>));       // its write meets its own read
  // Reading one resource and writing a disjoint one: two calls still both write orders.
  struct copy_audit_to_orders {
    using side_effects = te::effects<te::reads<vt::audit>, te::writes<vt::orders>>;
  };
  EXPECT_TRUE((te::conflicts_v<copy_audit_to_orders, copy_audit_to_orders>));
}

// ------------------------------------------------------------------ matrix vs hand table

namespace {
template <class... Tools>
struct matrix_check {
  static constexpr const auto& matrix = te::conflict_matrix_v<Tools...>;
  static constexpr auto pairs = vt::pairwise<Tools...>::value;
};
using varied = vt::with_all_tools<matrix_check>;
}  // namespace

TEST(Matrix, PairwiseConflictsMatchTheHandMadeTable) {
  const auto expected = vt::expected_conflicts();
  for (std::size_t i = 0; i < vt::tool_count; ++i)
    for (std::size_t j = 0; j < vt::tool_count; ++j)
      EXPECT_EQ(varied::pairs[i][j], expected[i][j]) << "conflicts_v, tools " << i << " and " << j;
}

TEST(Matrix, MatrixEqualsPairwiseConflictsForAllPairs) {
  static_assert(varied::matrix.size() == vt::tool_count);
  for (std::size_t i = 0; i < vt::tool_count; ++i)
    for (std::size_t j = 0; j < vt::tool_count; ++j)
      EXPECT_EQ(varied::matrix(i, j), varied::pairs[i][j]) << "conflict_matrix_v, tools " << i << " and " << j;
}

TEST(Matrix, RowsAreBitsets) {
  for (std::size_t i = 0; i < vt::tool_count; ++i) {
    ASSERT_EQ(varied::matrix.words_per_row, 1u);
    const std::uint64_t word = varied::matrix.row(i)[0];
    for (std::size_t j = 0; j < vt::tool_count; ++j) EXPECT_EQ(((word >> j) & 1u) != 0, varied::matrix(i, j));
    EXPECT_EQ(word >> vt::tool_count, 0u) << "no bits beyond N";
  }
}

TEST(Matrix, FirstConflictAndConflictFree) {
  // Row-major first (i < j): tool 0 (read_users) conflicts first with tool 2 (write_row).
  const auto first = varied::matrix.first_conflict();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)[0], 0u);
  EXPECT_EQ((*first)[1], 2u);
  EXPECT_FALSE(varied::matrix.conflict_free());

  constexpr const auto& free = te::conflict_matrix_v<vt::read_users, vt::read_row, vt::net_only, vt::read_all>;
  EXPECT_TRUE(free.conflict_free());
  EXPECT_FALSE(free.first_conflict().has_value());
  // The diagonal does not count: a writer alone is conflict-free.
  constexpr const auto& alone = te::conflict_matrix_v<vt::write_all>;
  EXPECT_TRUE(alone(0, 0));
  EXPECT_TRUE(alone.conflict_free());
  EXPECT_TRUE(te::conflict_matrix_v<>.conflict_free());
}

// More than 64 calls: rows span two words. Tool I reads res<I % 5>, and
// every 7th tool writes res<I % 3>.
namespace wide {
template <int K>
struct res {};
template <int I>
struct tool {
  using side_effects = std::conditional_t<I % 7 == 0, te::effects<te::reads<res<I % 5>>, te::writes<res<I % 3>>>,
                                          te::effects<te::reads<res<I % 5>>>>;
};
template <int... I>
constexpr const auto& matrix(std::integer_sequence<int, I...>) {
  return te::conflict_matrix_v<tool<I>...>;
}
template <int... I>
constexpr std::array<te::access_list, sizeof...(I)> lists(std::integer_sequence<int, I...>) {
  return {te::accesses_v<tool<I>>...};
}
}  // namespace wide

TEST(Matrix, WideMatrixAgreesWithThePairRuleAcrossWords) {
  constexpr auto seq = std::make_integer_sequence<int, 130>{};
  constexpr const auto& m = wide::matrix(seq);
  constexpr auto lists = wide::lists(seq);
  static_assert(m.words_per_row == 3);
  int conflicting = 0;
  for (std::size_t i = 0; i < 130; ++i)
    for (std::size_t j = 0; j < 130; ++j) {
      ASSERT_EQ(m(i, j), te::conflicts(lists[i], lists[j])) << i << "," << j;
      conflicting += m(i, j);
    }
  EXPECT_GT(conflicting, 0);
  // Tool 0 reads and writes res<0>; the first later tool touching res<0> is tool 5 (reads res<5 % 5>).
  const auto first = m.first_conflict();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)[0], 0u);
  EXPECT_EQ((*first)[1], 5u);
}

TEST(Matrix, FirstConflictFindsAPairInALaterWord) {
  // 70 readers of res<0>, then a writer of res<0>: the first conflict is (0, 70).
  constexpr const auto& m = []<int... I>(std::integer_sequence<int, I...>) -> const auto& {
    return te::conflict_matrix_v<te::tagged<te::effects<te::reads<wide::res<0>>>, int>,
                                 std::conditional_t<(I >= 0), te::tagged<te::effects<te::reads<wide::res<0>>>, int>, void>...,
                                 te::tagged<te::effects<te::writes<wide::res<0>>>, int>>;
  }(std::make_integer_sequence<int, 69>{});
  static_assert(m.size() == 71);
  const auto first = m.first_conflict();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)[0], 0u);
  EXPECT_EQ((*first)[1], 70u);
}

// ------------------------------------------------------------------ ParallelBatch / first_conflict_t

template <class... T>
constexpr bool batch = te::ParallelBatch<T...>;
template <class... T>
struct is_batch {
  static constexpr bool value = te::ParallelBatch<T...>;
};

TEST(Batch, ConflictFreeBatches) {
  EXPECT_TRUE((batch<vt::read_users, vt::read_row, vt::read_audit, vt::read_all, vt::net_only>));
  EXPECT_TRUE((batch<vt::write_row, vt::write_orders, vt::append_audit, vt::idempotent_only>));
  EXPECT_TRUE((batch<vt::append_audit, vt::append_audit, vt::read_orders_append_audit>));
  EXPECT_TRUE((batch<vt::write_all>));  // alone
  EXPECT_TRUE((batch<vt::undeclared>)); // alone, too: it runs alone
  EXPECT_TRUE(batch<>);
  EXPECT_TRUE((std::is_same_v<te::first_conflict_t<vt::read_users, vt::read_row>, te::no_conflicting_pair>));
  EXPECT_TRUE((te::ConflictFree<vt::read_users, vt::write_orders>));
  EXPECT_FALSE((te::ConflictFree<vt::read_users, vt::write_row>));
}

TEST(Batch, ADuplicateWriterIsNotABatch) {
  EXPECT_FALSE((batch<vt::write_row, vt::write_row>));
  EXPECT_FALSE((batch<vt::read_users, vt::write_orders, vt::write_orders>));
  EXPECT_TRUE((std::is_same_v<te::first_conflict_t<vt::read_users, vt::write_orders, vt::write_orders>,
                              te::conflicting_pair<vt::write_orders, vt::write_orders, vt::orders, 1, 2>>));
}

TEST(Batch, FirstConflictNamesThePairAndTheDeeperResource) {
  using r1 = te::first_conflict_t<vt::read_users, vt::write_row>;
  EXPECT_TRUE((std::is_same_v<r1, te::conflicting_pair<vt::read_users, vt::write_row, vt::user_row, 0, 1>>));
  using r2 = te::first_conflict_t<vt::read_users, vt::net_only, vt::write_orders, vt::read_orders_append_audit>;
  EXPECT_TRUE((std::is_same_v<r2, te::conflicting_pair<vt::write_orders, vt::read_orders_append_audit, vt::orders, 2, 3>>));
  using r3 = te::first_conflict_t<vt::read_audit, vt::read_users, vt::append_audit>;
  EXPECT_TRUE((std::is_same_v<r3, te::conflicting_pair<vt::read_audit, vt::append_audit, vt::audit, 0, 2>>));
  // Unscoped read of everything vs a scoped write: the deeper resource is named.
  using r4 = te::first_conflict_t<vt::read_all, vt::write_row>;
  EXPECT_TRUE((std::is_same_v<r4, te::conflicting_pair<vt::read_all, vt::write_row, vt::user_row, 0, 1>>));
  // An exclusive tool collides on `everything`.
  using r5 = te::first_conflict_t<vt::net_only, vt::undeclared>;
  EXPECT_TRUE((std::is_same_v<r5, te::conflicting_pair<vt::net_only, vt::undeclared, te::everything, 0, 1>>));
  // A destructive tool without a scoped write implicitly writes `everything`; the deeper resource is named.
  using r6 = te::first_conflict_t<vt::read_audit, vt::drop_unscoped>;
  EXPECT_TRUE((std::is_same_v<r6, te::conflicting_pair<vt::read_audit, vt::drop_unscoped, vt::audit, 0, 1>>));
  using r7 = te::first_conflict_t<vt::drop_unscoped, vt::write_all>;
  EXPECT_TRUE((std::is_same_v<r7, te::conflicting_pair<vt::drop_unscoped, vt::write_all, vt::files, 0, 1>>))
      << te::detail::type_name_v<r7>;
}

TEST(Batch, FirstConflictThroughACompositeNamesThePartsResource) {
  // touch_user's accesses are [reads users, writes user_row] (from its parts).
  using a = te::first_conflict_t<vt::touch_user, vt::read_row>;
  EXPECT_TRUE((std::is_same_v<a, te::conflicting_pair<vt::touch_user, vt::read_row, vt::user_row, 0, 1>>))
      << te::detail::type_name_v<a>;
  using b = te::first_conflict_t<vt::read_all, vt::touch_user>;
  EXPECT_TRUE((std::is_same_v<b, te::conflicting_pair<vt::read_all, vt::touch_user, vt::user_row, 0, 1>>))
      << te::detail::type_name_v<b>;
}

TEST(Batch, FirstConflictOfTheVariedSet) {
  using r = vt::with_all_tools<te::first_conflict_t>;
  EXPECT_TRUE((std::is_same_v<r, te::conflicting_pair<vt::read_users, vt::write_row, vt::user_row, 0, 2>>))
      << te::detail::type_name_v<r>;
  EXPECT_FALSE(vt::with_all_tools<is_batch>::value);
}

// Two resource types with the same path are one resource at compile time, as
// they are at runtime (call descriptions name resources by path).
namespace twins {
struct cache_a {
  static constexpr std::string_view resource_name = "cache";
};
struct cache_b {
  static constexpr std::string_view resource_name = "cache";
};
struct entries_b : te::resource<cache_b> {
  static constexpr std::string_view resource_name = "entries";
};
struct write_a {
  using side_effects = te::effects<te::writes<cache_a>>;
};
struct read_b {
  using side_effects = te::effects<te::reads<cache_b>>;
};
struct read_entries_b {
  using side_effects = te::effects<te::reads<entries_b>>;
};
}  // namespace twins

TEST(ResourceIdentity, SamePathConflictsAtCompileTimeAndRuntime) {
  static_assert(!te::ParallelBatch<twins::write_a, twins::read_b>);
  static_assert(!te::ParallelBatch<twins::write_a, twins::read_entries_b>);
  static_assert(te::ParallelBatch<twins::read_b, twins::read_entries_b>);
  constexpr const auto& m = te::conflict_matrix_v<twins::write_a, twins::read_b, twins::read_entries_b>;
  EXPECT_TRUE(m(0, 1));
  EXPECT_TRUE(m(0, 2));
  EXPECT_FALSE(m(1, 2));
  const auto w = te::describe<twins::write_a>(), r = te::describe<twins::read_b>();
  EXPECT_EQ(te::conflicts(w, r), m(0, 1)) << "the runtime form agrees";
}

}  // namespace conflict_test_ns
