// Composition: the value rule `compose` checked exhaustively over all
// 128×128 pairs of effect sets (and 128³ triples for the class), and
// `composite<Tools...>` at the type level: flags, class, accesses = union,
// unknown part = unknown and exclusive whole. Issue 3, "Composition".
#include <tool_effects/composite.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/text.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "varied_tools.hpp"

namespace composite_test_ns {

namespace te = tool_effects;
using te::effect;
using te::effect_set;
using te::side_effect_class;

namespace {
// The worse of two classes: none < idempotent < non_idempotent.
side_effect_class worse(side_effect_class a, side_effect_class b) {
  auto rank = [](side_effect_class c) {
    switch (c) {
      case side_effect_class::none: return 0;
      case side_effect_class::idempotent: return 1;
      case side_effect_class::non_idempotent: return 2;
    }
    return 2;
  };
  return rank(a) >= rank(b) ? a : b;
}
effect_set set(unsigned mask) { return effect_set::from_bits(static_cast<std::uint8_t>(mask)); }
effect_set compose2(effect_set a, effect_set b) {
  const std::array<effect_set, 2> parts{a, b};
  return te::compose(parts);
}
std::string pair_name(effect_set a, effect_set b) { return "{" + te::to_string(a) + "} then {" + te::to_string(b) + "}"; }
}  // namespace

TEST(Compose, AllPairsClassIsTheWorseClass) {
  for (unsigned i = 0; i < 128; ++i)
    for (unsigned j = 0; j < 128; ++j) {
      const effect_set a = set(i), b = set(j), c = compose2(a, b);
      ASSERT_EQ(te::classify(c), worse(te::classify(a), te::classify(b))) << pair_name(a, b) << " = " << c;
    }
}

TEST(Compose, AllPairsSafetyIsTheConjunctionAndDestructionTheDisjunction) {
  for (unsigned i = 0; i < 128; ++i)
    for (unsigned j = 0; j < 128; ++j) {
      const effect_set a = set(i), b = set(j), c = compose2(a, b);
      ASSERT_EQ(te::is_parallel_safe(c), te::is_parallel_safe(a) && te::is_parallel_safe(b)) << pair_name(a, b);
      ASSERT_EQ(te::is_retry_safe(c), te::is_retry_safe(a) && te::is_retry_safe(b)) << pair_name(a, b);
      if (a.empty() || b.empty()) {
        ASSERT_TRUE(c.empty()) << "an unknown part makes the whole unknown: " << pair_name(a, b);
      } else {
        ASSERT_EQ(te::is_destructive(c), te::is_destructive(a) || te::is_destructive(b)) << pair_name(a, b);
      }
    }
}

TEST(Compose, AllPairsFlagsAreTheUnionWithIdempotentAndWriteAdjusted) {
  for (unsigned i = 0; i < 128; ++i)
    for (unsigned j = 0; j < 128; ++j) {
      const effect_set a = set(i), b = set(j), c = compose2(a, b);
      if (a.empty() || b.empty()) continue;  // covered above
      effect_set expected = a | b;
      if (!(te::is_retry_safe(a) && te::is_retry_safe(b))) expected.erase(effect::idempotent);
      if (!(te::is_parallel_safe(a) && te::is_parallel_safe(b))) expected.insert(effect::write);
      ASSERT_EQ(c, expected) << pair_name(a, b);
      // Every flag other than idempotent and write is exactly the union.
      for (const effect e : {effect::read, effect::destructive, effect::external, effect::expensive, effect::network})
        ASSERT_EQ(c.contains(e), (a | b).contains(e)) << pair_name(a, b);
    }
}

TEST(Compose, AllTriplesClassIsTheWorstClass) {
  std::array<side_effect_class, 128> cls{};
  for (unsigned i = 0; i < 128; ++i) cls[i] = te::classify(set(i));
  for (unsigned i = 0; i < 128; ++i)
    for (unsigned j = 0; j < 128; ++j)
      for (unsigned k = 0; k < 128; ++k) {
        const std::array<effect_set, 3> parts{set(i), set(j), set(k)};
        const auto c = te::classify(te::compose(parts));
        if (c != worse(worse(cls[i], cls[j]), cls[k])) {
          FAIL() << "{" << parts[0] << "} {" << parts[1] << "} {" << parts[2] << "}";
        }
      }
}

TEST(Compose, WhyWriteIsAdded) {
  // An external, non-retry-safe call followed by a read: without adding
  // `write`, {read, external} would classify as `none` (parallel-safe).
  const effect_set c = compose2({effect::external}, {effect::read, effect::idempotent});
  EXPECT_EQ(c, (effect_set{effect::read, effect::write, effect::external}));
  EXPECT_EQ(te::classify(c), side_effect_class::non_idempotent);
}

TEST(Compose, NonIdempotentWriteThenIdempotentWriteIsNotRetrySafe) {
  const effect_set c = compose2({effect::write}, {effect::write, effect::idempotent});
  EXPECT_FALSE(c.contains(effect::idempotent));
  EXPECT_FALSE(te::is_retry_safe(c));
}

TEST(Compose, EdgeCases) {
  EXPECT_TRUE(te::compose(std::span<const effect_set>{}).empty()) << "nothing composed is unknown";
  const std::array<effect_set, 1> one{effect_set{effect::read, effect::network}};
  EXPECT_EQ(te::compose(one), one[0]) << "a single part is itself";
  const std::vector<effect_set> reads(5, effect_set{effect::read});
  EXPECT_EQ(te::compose(reads), effect_set{effect::read}) << "any range of effect_set";
  static_assert(te::compose(std::array<effect_set, 2>{effect_set{effect::read}, effect_set{effect::idempotent}}) ==
                effect_set{effect::read, effect::write, effect::idempotent});
}

// ------------------------------------------------------------------ composite<Tools...>

namespace app {
struct log_db {};
struct prefs {};
struct write_log {  // non-idempotent write
  using side_effects = te::effects<te::appends<log_db>>;
};
struct upsert_prefs {
  using side_effects = te::effects<te::writes<prefs>, te::idempotent>;
};
struct fetch_prefs {
  using side_effects = te::effects<te::reads<prefs>, te::network>;
};
struct purge {
  using side_effects = te::effects<te::destructive>;
};
struct unknown_step {};

struct log_then_upsert : te::composite<write_log, upsert_prefs> {};
struct fetch_twice : te::composite<fetch_prefs, fetch_prefs> {};
struct with_unknown : te::composite<fetch_prefs, unknown_step> {};
struct nested : te::composite<log_then_upsert, fetch_prefs, vt::write_report> {};
}  // namespace app

template <class Composite, class... Parts>
void expect_flags_composed() {
  const std::array<effect_set, sizeof...(Parts)> parts{te::side_effects_v<Parts>...};
  EXPECT_EQ(te::side_effects_v<Composite>, te::compose(parts));
}

TEST(Composite, FlagsAreComposedFromTheParts) {
  expect_flags_composed<app::log_then_upsert, app::write_log, app::upsert_prefs>();
  expect_flags_composed<app::fetch_twice, app::fetch_prefs, app::fetch_prefs>();
  expect_flags_composed<app::with_unknown, app::fetch_prefs, app::unknown_step>();
  expect_flags_composed<app::nested, app::log_then_upsert, app::fetch_prefs, vt::write_report>();
  expect_flags_composed<vt::touch_user, vt::read_users, vt::write_row>();
  expect_flags_composed<te::composite<app::purge, app::fetch_prefs>, app::purge, app::fetch_prefs>();
}

TEST(Composite, ClassIsTheWorstClassOfItsParts) {
  EXPECT_TRUE(te::DeclaresSideEffects<app::log_then_upsert>);
  EXPECT_EQ(te::side_effect_class_v<app::log_then_upsert>, side_effect_class::non_idempotent);
  EXPECT_FALSE(te::RetrySafe<app::log_then_upsert>);
  EXPECT_EQ(te::side_effect_class_v<app::fetch_twice>, side_effect_class::none);
  EXPECT_TRUE(te::ParallelSafe<app::fetch_twice>);
  EXPECT_EQ(te::side_effect_class_v<vt::touch_user>, side_effect_class::idempotent);
  EXPECT_TRUE(te::RetrySafe<vt::touch_user>);
  EXPECT_TRUE((te::Destructive<te::composite<app::purge, app::fetch_prefs>>));
}

TEST(Composite, AccessesAreTheUnionOfThePartsAccesses) {
  const auto list = te::accesses_v<app::nested>;
  EXPECT_FALSE(list.exclusive);
  const std::vector<te::access> got(list.begin(), list.end());
  const std::vector<te::access> expected{{te::resource_v<app::log_db>, te::access_mode::append},
                                         {te::resource_v<app::prefs>, te::access_mode::write},
                                         {te::resource_v<app::prefs>, te::access_mode::read},
                                         {te::resource_v<vt::report>, te::access_mode::write}};
  EXPECT_EQ(got, expected);
  // A destructive part without a scoped write brings its implied write of everything.
  const auto purge_list = te::accesses_v<te::composite<app::purge, app::fetch_prefs>>;
  const std::vector<te::access> got2(purge_list.begin(), purge_list.end());
  const std::vector<te::access> expected2{{te::resource_v<te::everything>, te::access_mode::write},
                                          {te::resource_v<app::prefs>, te::access_mode::read}};
  EXPECT_EQ(got2, expected2);
}

TEST(Composite, ConflictsFollowTheUnionOfAccesses) {
  EXPECT_TRUE((te::conflicts_v<app::log_then_upsert, app::fetch_prefs>));     // prefs: write vs read
  EXPECT_FALSE((te::conflicts_v<app::fetch_twice, app::fetch_prefs>));        // reads only
  EXPECT_TRUE((te::conflicts_v<app::nested, vt::write_report>));              // report: write vs write
  EXPECT_FALSE((te::conflicts_v<app::log_then_upsert, vt::write_report>));
  EXPECT_FALSE((te::conflicts_v<app::log_then_upsert, app::write_log>)) << "appends to log_db commute; no prefs";
}

TEST(Composite, AnUnknownPartMakesTheWholeUnknownAndExclusive) {
  EXPECT_TRUE(te::side_effects_v<app::with_unknown>.empty());
  EXPECT_EQ(te::side_effect_class_v<app::with_unknown>, side_effect_class::non_idempotent);
  EXPECT_FALSE(te::ParallelSafe<app::with_unknown>);
  EXPECT_FALSE(te::RetrySafe<app::with_unknown>);
  EXPECT_TRUE(te::accesses_v<app::with_unknown>.exclusive);
  EXPECT_EQ(te::accesses_v<app::with_unknown>.size(), 0u);
  EXPECT_TRUE((te::conflicts_v<app::with_unknown, vt::net_only>));
  // Unknown-ness propagates through nesting.
  struct outer : te::composite<app::fetch_twice, app::with_unknown> {};
  EXPECT_TRUE(te::accesses_v<outer>.exclusive);
  // An empty composite is unknown too.
  EXPECT_TRUE(te::accesses_v<te::composite<>>.exclusive);
}

}  // namespace composite_test_ns
