// The unary rules on all 128 effect sets, against an independent oracle: a
// line-by-line transcription of the reference Rust crate's code
// (tool-side-effects-tag 0.1.0, lib.rs; /work/shared/seeds/000_*.txt) over
// std::set<effect>. Plus the spot cases issue 2 names, and class slugs.
#include <tool_effects/rules.hpp>
#include <tool_effects/text.hpp>

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

namespace rules_test_ns {

namespace te = tool_effects;
using te::effect;
using te::effect_set;
using te::side_effect_class;

namespace oracle {
// Rust's SideEffects wraps a HashSet<SideEffect>; std::set has the same
// contains/is_empty semantics.
using side_effects = std::set<effect>;
bool contains(const side_effects& s, effect e) { return s.count(e) == 1; }

// pub fn is_parallel_safe(effects: &SideEffects) -> bool {
//     if effects.is_empty() { return false; }
//     if effects.contains(SideEffect::Write) || effects.contains(SideEffect::Destructive) { return false; }
//     effects.contains(SideEffect::Read)
// }
bool is_parallel_safe(const side_effects& effects) {
  if (effects.empty()) return false;
  if (contains(effects, effect::write) || contains(effects, effect::destructive)) return false;
  return contains(effects, effect::read);
}

// pub fn is_retry_safe(effects: &SideEffects) -> bool {
//     if effects.is_empty() { return false; }
//     if effects.contains(SideEffect::Destructive) { return false; }
//     if effects.contains(SideEffect::Idempotent) { return true; }
//     if effects.contains(SideEffect::Read) && !effects.contains(SideEffect::Write) { return true; }
//     false
// }
bool is_retry_safe(const side_effects& effects) {
  if (effects.empty()) return false;
  if (contains(effects, effect::destructive)) return false;
  if (contains(effects, effect::idempotent)) return true;
  if (contains(effects, effect::read) && !contains(effects, effect::write)) return true;
  return false;
}

// pub fn is_destructive(effects: &SideEffects) -> bool { effects.contains(SideEffect::Destructive) }
bool is_destructive(const side_effects& effects) { return contains(effects, effect::destructive); }

// Issue 2 (the design note's classes): none if parallel-safe, else
// idempotent if retry-safe, else non_idempotent.
side_effect_class classify(const side_effects& effects) {
  if (is_parallel_safe(effects)) return side_effect_class::none;
  if (is_retry_safe(effects)) return side_effect_class::idempotent;
  return side_effect_class::non_idempotent;
}
}  // namespace oracle

namespace {
struct both {
  oracle::side_effects reference;
  effect_set set;
};
both make(unsigned mask) {
  both b;
  for (unsigned i = 0; i < 7; ++i)
    if (mask & (1u << i)) {
      b.reference.insert(static_cast<effect>(i));
      b.set.insert(static_cast<effect>(i));
    }
  return b;
}
std::string name(const effect_set s) { return "{" + te::to_string(s) + "}"; }
}  // namespace

TEST(TruthTable, AllCombinationsMatchTheRustCode) {
  int parallel = 0, retry = 0, destructive = 0;
  for (unsigned mask = 0; mask < 128; ++mask) {
    const auto [ref, s] = make(mask);
    EXPECT_EQ(te::is_parallel_safe(s), oracle::is_parallel_safe(ref)) << name(s);
    EXPECT_EQ(te::is_retry_safe(s), oracle::is_retry_safe(ref)) << name(s);
    EXPECT_EQ(te::is_destructive(s), oracle::is_destructive(ref)) << name(s);
    EXPECT_EQ(te::classify(s), oracle::classify(ref)) << name(s);
    parallel += te::is_parallel_safe(s);
    retry += te::is_retry_safe(s);
    destructive += te::is_destructive(s);
  }
  // Counts derived by hand, so that a broken oracle cannot pass with the library:
  // parallel-safe = read, no write, no destructive, any of the other 4 flags: 2^4.
  EXPECT_EQ(parallel, 16);
  // destructive: half of all sets.
  EXPECT_EQ(destructive, 64);
  // retry-safe: not destructive (64 sets) and either idempotent (32) or,
  // without idempotent, read and not write (2^3 over external/expensive/network).
  EXPECT_EQ(retry, 40);
}

TEST(TruthTable, ClassifyIsAFunctionOfTheThreeRulesOnAllSets) {
  for (unsigned mask = 0; mask < 128; ++mask) {
    const effect_set s = make(mask).set;
    const auto c = te::classify(s);
    EXPECT_EQ(c == side_effect_class::none, te::is_parallel_safe(s)) << name(s);
    EXPECT_EQ(te::is_retry_eligible(c), te::is_retry_safe(s)) << name(s);
    if (te::is_destructive(s)) {
      EXPECT_EQ(c, side_effect_class::non_idempotent) << name(s);
    }
  }
}

TEST(TruthTable, RulesAreConstexpr) {
  static_assert(te::is_parallel_safe(effect_set{effect::read}));
  static_assert(!te::is_retry_safe(effect_set{}));
  static_assert(te::classify(effect_set{effect::write, effect::idempotent}) == side_effect_class::idempotent);
  EXPECT_TRUE(te::is_destructive(effect_set{effect::destructive}));
}

// The cases issue 2 names explicitly.
TEST(SpotCases, ParallelSafe) {
  EXPECT_FALSE(te::is_parallel_safe({}));
  EXPECT_FALSE(te::is_parallel_safe({effect::idempotent}));
  EXPECT_TRUE(te::is_parallel_safe({effect::read}));
  for (const effect extra : {effect::idempotent, effect::external, effect::expensive, effect::network}) {
    EXPECT_TRUE(te::is_parallel_safe({effect::read, extra})) << te::to_string(extra);
  }
  EXPECT_TRUE(te::is_parallel_safe({effect::read, effect::idempotent, effect::external, effect::expensive, effect::network}));
  EXPECT_FALSE(te::is_parallel_safe({effect::read, effect::write}));
  EXPECT_FALSE(te::is_parallel_safe({effect::read, effect::destructive}));
  EXPECT_FALSE(te::is_parallel_safe({effect::network}));
}

TEST(SpotCases, RetrySafe) {
  EXPECT_FALSE(te::is_retry_safe({}));
  EXPECT_FALSE(te::is_retry_safe({effect::destructive}));
  EXPECT_FALSE(te::is_retry_safe({effect::destructive, effect::idempotent}));
  EXPECT_FALSE(te::is_retry_safe({effect::read, effect::destructive}));
  EXPECT_TRUE(te::is_retry_safe({effect::idempotent}));
  EXPECT_TRUE(te::is_retry_safe({effect::write, effect::idempotent}));
  EXPECT_TRUE(te::is_retry_safe({effect::read}));
  EXPECT_FALSE(te::is_retry_safe({effect::read, effect::write}));
  EXPECT_FALSE(te::is_retry_safe({effect::write}));
  EXPECT_FALSE(te::is_retry_safe({effect::external, effect::network}));  // not retry-safe without idempotent
  EXPECT_TRUE(te::is_retry_safe({effect::external, effect::idempotent}));
}

TEST(SpotCases, Classify) {
  EXPECT_EQ(te::classify({}), side_effect_class::non_idempotent);  // unknown, as the design note requires
  EXPECT_EQ(te::classify({effect::read, effect::network}), side_effect_class::none);
  EXPECT_EQ(te::classify({effect::write, effect::idempotent}), side_effect_class::idempotent);
  EXPECT_EQ(te::classify({effect::idempotent}), side_effect_class::idempotent);
  EXPECT_EQ(te::classify({effect::write}), side_effect_class::non_idempotent);
  EXPECT_EQ(te::classify({effect::destructive, effect::idempotent}), side_effect_class::non_idempotent);
  EXPECT_EQ(te::classify({effect::external}), side_effect_class::non_idempotent);
}

TEST(Classes, RetryEligibility) {
  EXPECT_TRUE(te::is_retry_eligible(side_effect_class::none));
  EXPECT_TRUE(te::is_retry_eligible(side_effect_class::idempotent));
  EXPECT_FALSE(te::is_retry_eligible(side_effect_class::non_idempotent));
}

TEST(Classes, SlugsAndRoundTrip) {
  const std::pair<side_effect_class, std::string> expected[] = {{side_effect_class::none, "none"},
                                                               {side_effect_class::idempotent, "idempotent"},
                                                               {side_effect_class::non_idempotent, "non_idempotent"}};
  for (const auto& [c, slug] : expected) {
    EXPECT_EQ(std::string(te::to_string(c)), slug);
    EXPECT_EQ(te::try_parse_side_effect_class(slug), c);
    EXPECT_EQ(te::parse_side_effect_class(slug), c);
    EXPECT_EQ(te::parse_side_effect_class_strict(slug), c);
    std::ostringstream os;
    os << c;
    EXPECT_EQ(os.str(), slug);
  }
}

TEST(Classes, LenientParseTreatsUnknownAsNonIdempotent) {
  for (const char* s : {"", "None", "IDEMPOTENT", "non-idempotent", "safe", " none"}) {
    EXPECT_EQ(te::try_parse_side_effect_class(s), std::nullopt) << s;
    EXPECT_EQ(te::parse_side_effect_class(s), side_effect_class::non_idempotent) << s;
  }
  static_assert(te::parse_side_effect_class("bogus") == side_effect_class::non_idempotent);
}

TEST(Classes, StrictParseReportsTheBadInput) {
  for (const char* s : {"", "None", "non-idempotent"}) {
    try {
      (void)te::parse_side_effect_class_strict(s);
      ADD_FAILURE() << "did not throw for " << s;
    } catch (const te::parse_error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("unknown side-effect class: \"") + s + "\"");
      EXPECT_EQ(e.input(), s);
    }
  }
}

// The access-mode parses: the same family as the class parses (try_ gives nullopt, the strict one throws
// parse_error naming the input). Manifests read modes with try_parse_access_mode; parse_access_mode is for
// authoring tools where a typo must be reported.
TEST(AccessModes, SlugsRoundTripAndTheStrictParseReportsTheBadInput) {
  for (const auto m : {te::access_mode::read, te::access_mode::write, te::access_mode::append}) {
    EXPECT_EQ(te::try_parse_access_mode(te::to_string(m)), m);
    EXPECT_EQ(te::parse_access_mode(te::to_string(m)), m);
  }
  for (const char* s : {"", "Read", "writes", "append ", "delete"}) {
    EXPECT_EQ(te::try_parse_access_mode(s), std::nullopt) << s;
    try {
      (void)te::parse_access_mode(s);
      ADD_FAILURE() << "did not throw for " << s;
    } catch (const te::parse_error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("unknown access mode: \"") + s + "\"");
      EXPECT_EQ(e.input(), s);
    }
  }
}

}  // namespace rules_test_ns
