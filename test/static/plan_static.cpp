// Compile-time truths of plan.hpp: plan_waves, dependencies_v, waves_c.
#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include <boost/hana/at.hpp>
#include <boost/hana/size.hpp>

#include <tool_effects/plan.hpp>

namespace {
namespace te = tool_effects;
namespace hana = boost::hana;

struct db : te::resource<> {};
struct users : te::resource<db> {};
struct orders : te::resource<db> {};
struct audit : te::resource<> {};

struct read_users { using side_effects = te::effects<te::reads<users>>; };
struct write_users { using side_effects = te::effects<te::writes<users>>; };
struct write_orders { using side_effects = te::effects<te::writes<orders>>; };
struct read_db { using side_effects = te::effects<te::reads<db>>; };
struct log_audit { using side_effects = te::effects<te::appends<audit>>; };
struct read_audit { using side_effects = te::effects<te::reads<audit>>; };
struct search { using side_effects = te::effects<te::network, te::idempotent>; };  // no access: conflicts with nobody
struct unknown_tool {};                                                          // undeclared: exclusive

template <std::size_t N>
constexpr bool equal(const std::array<std::size_t, N>& a, const std::array<std::size_t, N>& b) {
  for (std::size_t i = 0; i < N; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// The wave rule on a mixed turn.
constexpr auto w = te::plan_waves<read_users, write_users, read_users, write_orders, read_db, log_audit, log_audit,
                                  read_audit, search>();
static_assert(equal(w, {0, 1, 2, 0, 2, 0, 0, 1, 0}));
// read after read: no wait; write after read: waits; different children of db: no wait; read of the parent
// after writes of both children: wave 1 + max(1, 0), not after the reads; appends commute; a read after
// appends waits.
static_assert(te::plan_v<read_users, write_users, read_users, write_orders, read_db>.wave_count == 3);

// The dependency relation: every earlier conflicting call, nothing else.
constexpr const auto& deps_list = te::plan_v<read_users, write_users, read_users, write_orders, read_db>;
constexpr const auto& d = te::dependencies_v<read_users, write_users, read_users, write_orders, read_db>;
static_assert(d(1, 0) && !d(0, 1));            // only earlier calls
static_assert(d(2, 1) && !d(2, 0));            // read waits for the write, not the other read
static_assert(!d(3, 0) && !d(3, 1) && !d(3, 2));  // orders vs users: independent
static_assert(d(4, 1) && d(4, 3) && !d(4, 0) && !d(4, 2));
static_assert(d.count(4) == 2 && d.count(0) == 0);
static_assert(&d == &deps_list.waits_for);

// Unknown tools run alone: they wait for everything before and everything after waits for them.
constexpr auto wu = te::plan_waves<search, unknown_tool, search, search>();
static_assert(equal(wu, {0, 1, 2, 2}));
static_assert(te::dependencies_v<search, unknown_tool, search>(2, 1) &&
              !te::dependencies_v<search, unknown_tool, search>(2, 0));

// Empty and single lists.
static_assert(te::plan_v<>.wave_count == 0);
static_assert(te::plan_v<write_users>.wave_count == 1 && te::plan_waves<write_users>()[0] == 0);
// Two calls of the same writing tool conflict with each other.
static_assert(equal(te::plan_waves<write_users, write_users>(), {0, 1}));

// Wave sizes add up.
constexpr auto p = te::plan_v<read_users, write_users, read_users, write_orders, read_db, log_audit>;
static_assert(p.wave_count == 3 && p.wave_sizes[0] == 3 && p.wave_sizes[1] == 1 && p.wave_sizes[2] == 2);

// The Hana form: a tuple of waves, each a tuple of hana::size_t indices in program order.
constexpr auto hw = te::waves_c<read_users, write_users, read_users, write_orders>;
static_assert(decltype(hana::size(hw))::value == 3);
static_assert(decltype(hana::size(hana::at_c<0>(hw)))::value == 2);
static_assert(std::remove_cvref_t<decltype(hana::at_c<0>(hana::at_c<0>(hw)))>::value == 0);
static_assert(std::remove_cvref_t<decltype(hana::at_c<1>(hana::at_c<0>(hw)))>::value == 3);
static_assert(std::remove_cvref_t<decltype(hana::at_c<0>(hana::at_c<1>(hw)))>::value == 1);
static_assert(std::remove_cvref_t<decltype(hana::at_c<0>(hana::at_c<2>(hw)))>::value == 2);
static_assert(decltype(hana::size(te::waves_c<>))::value == 0);

// Scale: 300 calls, no fold over tools, within both compilers' constexpr limits.
// (a) all unknown (every call waits for all earlier ones: the densest relation),
// (b) alternating writers and readers of one resource, (c) independent readers.
template <std::size_t>
using unknown_at = unknown_tool;
template <std::size_t I>
using alternating_at = std::conditional_t<I % 2 == 0, write_users, read_users>;
template <std::size_t>
using reader_at = read_users;
template <template <std::size_t> class At, std::size_t... I>
constexpr auto waves_of(std::index_sequence<I...>) {
  return te::plan_waves<At<I>...>();
}
constexpr auto dense = waves_of<unknown_at>(std::make_index_sequence<300>{});
static_assert(dense[0] == 0 && dense[150] == 150 && dense[299] == 299);
constexpr auto alt = waves_of<alternating_at>(std::make_index_sequence<300>{});
static_assert(alt[0] == 0 && alt[1] == 1 && alt[2] == 2 && alt[3] == 3 && alt[299] == 299);
constexpr auto flat = waves_of<reader_at>(std::make_index_sequence<300>{});
static_assert(flat[0] == 0 && flat[299] == 0);
template <std::size_t... I>
constexpr std::size_t dense_deps(std::index_sequence<I...>) {
  return te::dependencies_v<unknown_at<I>...>.count(299);
}
static_assert(dense_deps(std::make_index_sequence<300>{}) == 299);

// The low-bit helper used in constant evaluation agrees with std::countr_zero.
static_assert([] {
  for (std::size_t k = 0; k < 64; ++k)
    if (te::detail::lowest_bit((std::uint64_t{1} << k) | (std::uint64_t{1} << 63)) != k) return false;
  return true;
}());
}  // namespace
