// The effect vocabulary: slugs, parsing (strict and optional), `effect_set`
// and its string form. Issue 2, "Vocabulary".
#include <tool_effects/effect.hpp>
#include <tool_effects/text.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

namespace effect_test_ns {

namespace te = tool_effects;
using te::effect;
using te::effect_set;

namespace {

// The reference packages' slugs, written out independently of the library.
const std::vector<std::pair<effect, std::string>>& reference_slugs() {
  static const std::vector<std::pair<effect, std::string>> v{
      {effect::read, "read"},          {effect::write, "write"},       {effect::idempotent, "idempotent"},
      {effect::destructive, "destructive"}, {effect::external, "external"}, {effect::expensive, "expensive"},
      {effect::network, "network"}};
  return v;
}

// The set whose members are the bits of `mask`, built by insert() (not from_bits).
effect_set set_of_mask(unsigned mask) {
  effect_set s;
  for (unsigned i = 0; i < 7; ++i)
    if (mask & (1u << i)) s.insert(static_cast<effect>(i));
  return s;
}

// The error message of parse_effect_set(s), or "" when it does not throw.
template <class F>
std::string what_of(F&& f) {
  try {
    f();
  } catch (const te::parse_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST(Slugs, ExactlyTheReferenceStrings) {
  ASSERT_EQ(te::all_effects.size(), reference_slugs().size());
  for (std::size_t i = 0; i < reference_slugs().size(); ++i) {
    const auto& [e, slug] = reference_slugs()[i];
    EXPECT_EQ(te::all_effects[i], e) << "declaration order";
    EXPECT_EQ(std::string(te::to_string(e)), slug);
    EXPECT_EQ(static_cast<std::size_t>(e), i);
  }
}

TEST(Slugs, OutOfRangeEnumeratorHasEmptySlug) {
  EXPECT_TRUE(te::to_string(static_cast<effect>(7)).empty());
  EXPECT_TRUE(te::to_string(static_cast<effect>(200)).empty());
}

TEST(Slugs, StreamOutputIsTheSlug) {
  for (const auto& [e, slug] : reference_slugs()) {
    std::ostringstream os;
    os << e;
    EXPECT_EQ(os.str(), slug);
  }
}

TEST(ParseEffect, EverySlugRoundTrips) {
  for (const auto& [e, slug] : reference_slugs()) {
    EXPECT_EQ(te::try_parse_effect(slug), e);
    EXPECT_EQ(te::parse_effect(slug), e);
  }
}

TEST(ParseEffect, IsCaseSensitive) {
  for (const auto& [e, slug] : reference_slugs()) {
    std::string upper = slug, capital = slug;
    for (char& c : upper) c = static_cast<char>(c - 'a' + 'A');
    capital[0] = static_cast<char>(capital[0] - 'a' + 'A');
    EXPECT_EQ(te::try_parse_effect(upper), std::nullopt) << upper;
    EXPECT_EQ(te::try_parse_effect(capital), std::nullopt) << capital;
    EXPECT_THROW((void)te::parse_effect(upper), te::parse_error);
  }
}

TEST(ParseEffect, RejectsNearMisses) {
  for (const char* bad : {"", " read", "read ", "reads", "rea", "write,", "non_idempotent", "READ", "Network"}) {
    EXPECT_EQ(te::try_parse_effect(bad), std::nullopt) << '"' << bad << '"';
    EXPECT_THROW((void)te::parse_effect(bad), te::parse_error) << '"' << bad << '"';
  }
}

TEST(ParseEffect, ErrorQuotesTheInputLikeTheRustCrate) {
  EXPECT_EQ(what_of([] { (void)te::parse_effect("READ"); }), R"(unknown side-effect tag: "READ")");
  EXPECT_EQ(what_of([] { (void)te::parse_effect(""); }), R"(unknown side-effect tag: "")");
  // Rust's {:?} escapes quotes, backslashes and control characters.
  EXPECT_EQ(what_of([] { (void)te::parse_effect("a\"b\\c\n"); }), R"(unknown side-effect tag: "a\"b\\c\n")");
}

TEST(ParseEffect, ErrorIsAnInvalidArgumentAndKeepsTheInput) {
  try {
    (void)te::parse_effect("Write");
    FAIL() << "did not throw";
  } catch (const std::invalid_argument& e) {
    const auto* pe = dynamic_cast<const te::parse_error*>(&e);
    ASSERT_NE(pe, nullptr);
    EXPECT_EQ(pe->input(), "Write");
  }
}

TEST(EffectSet, DefaultIsEmpty) {
  constexpr effect_set s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(s.bits(), 0u);
  EXPECT_EQ(s.begin(), s.end());
  for (const effect e : te::all_effects) EXPECT_FALSE(s.contains(e));
}

TEST(EffectSet, InitializerListCollapsesDuplicates) {
  const effect_set s{effect::network, effect::read, effect::network};
  EXPECT_EQ(s.size(), 2u);
  EXPECT_TRUE(s.contains(effect::read));
  EXPECT_TRUE(s.contains(effect::network));
  EXPECT_FALSE(s.contains(effect::write));
  EXPECT_EQ(s, (effect_set{effect::read, effect::network}));
}

TEST(EffectSet, InsertAndEraseReportWhetherTheSetChanged) {
  effect_set s;
  EXPECT_TRUE(s.insert(effect::write));
  EXPECT_FALSE(s.insert(effect::write));
  EXPECT_TRUE(s.insert(effect::idempotent));
  EXPECT_EQ(s.size(), 2u);
  EXPECT_FALSE(s.erase(effect::read));
  EXPECT_TRUE(s.erase(effect::write));
  EXPECT_FALSE(s.erase(effect::write));
  EXPECT_EQ(s, effect_set{effect::idempotent});
  EXPECT_TRUE(s.erase(effect::idempotent));
  EXPECT_TRUE(s.empty());
}

TEST(EffectSet, FromBitsDropsUnknownBitsAndRoundTrips) {
  for (unsigned mask = 0; mask < 256; ++mask) {
    const effect_set s = effect_set::from_bits(static_cast<std::uint8_t>(mask));
    EXPECT_EQ(s.bits(), mask & 0x7fu);
    EXPECT_EQ(s, set_of_mask(mask & 0x7fu));
  }
}

TEST(EffectSet, AllSetsIterateInDeclarationOrderAndAgreeWithStdSet) {
  for (unsigned mask = 0; mask < 128; ++mask) {
    const effect_set s = set_of_mask(mask);
    std::set<effect> expected;  // std::set orders by enumerator value = declaration order
    for (unsigned i = 0; i < 7; ++i)
      if (mask & (1u << i)) expected.insert(static_cast<effect>(i));
    const std::vector<effect> got(s.begin(), s.end());
    EXPECT_EQ(got, std::vector<effect>(expected.begin(), expected.end())) << "mask " << mask;
    EXPECT_EQ(s.size(), expected.size());
    EXPECT_EQ(s.empty(), expected.empty());
    EXPECT_EQ(static_cast<std::size_t>(std::distance(s.begin(), s.end())), expected.size());
    for (const effect e : te::all_effects) EXPECT_EQ(s.contains(e), expected.count(e) == 1);
  }
}

TEST(EffectSet, IteratorIsAForwardIterator) {
  static_assert(std::forward_iterator<effect_set::iterator>);
  const effect_set s{effect::write, effect::network};
  auto it = s.begin();
  auto old = it++;
  EXPECT_EQ(*old, effect::write);
  EXPECT_EQ(*it, effect::network);
  EXPECT_EQ(++it, s.end());
}

TEST(EffectSet, UnionIntersectionAndEqualityMatchStdSetAlgebraOnAllPairs) {
  for (unsigned a = 0; a < 128; ++a)
    for (unsigned b = 0; b < 128; ++b) {
      const effect_set sa = set_of_mask(a), sb = set_of_mask(b);
      effect_set u = sa, i = sa;
      u |= sb;
      i &= sb;
      for (const effect e : te::all_effects) {
        const bool in_a = sa.contains(e), in_b = sb.contains(e);
        ASSERT_EQ((sa | sb).contains(e), in_a || in_b);
        ASSERT_EQ((sa & sb).contains(e), in_a && in_b);
      }
      ASSERT_EQ(u, sa | sb);
      ASSERT_EQ(i, sa & sb);
      ASSERT_EQ(sa == sb, a == b);
    }
}

TEST(EffectSet, HashIsUsableInUnorderedContainers) {
  std::unordered_set<effect_set> all;
  for (unsigned mask = 0; mask < 128; ++mask) all.insert(set_of_mask(mask));
  all.insert(effect_set{effect::read});  // already present
  EXPECT_EQ(all.size(), 128u);
}

TEST(EffectSetText, ToStringIsDeclarationOrderWithoutSpaces) {
  EXPECT_EQ(te::to_string(effect_set{}), "");
  EXPECT_EQ(te::to_string(effect_set{effect::network, effect::read}), "read,network");
  EXPECT_EQ(te::to_string(effect_set{effect::destructive, effect::write, effect::idempotent}),
            "write,idempotent,destructive");
  std::ostringstream os;
  os << effect_set{effect::expensive, effect::external};
  EXPECT_EQ(os.str(), "external,expensive");
}

TEST(EffectSetText, AllSetsRoundTripThroughToStringAndParse) {
  for (unsigned mask = 0; mask < 128; ++mask) {
    const effect_set s = set_of_mask(mask);
    const std::string text = te::to_string(s);
    // Independent check of the text: the slugs of the members, joined by ','.
    std::string expected;
    for (const auto& [e, slug] : reference_slugs())
      if (s.contains(e)) expected += (expected.empty() ? "" : ",") + slug;
    EXPECT_EQ(text, expected);
    EXPECT_EQ(te::parse_effect_set(text), s) << text;
    EXPECT_EQ(te::try_parse_effect_set(text), s) << text;
  }
}

TEST(EffectSetText, ParseAcceptsWhitespaceAroundTokens) {
  const effect_set expected{effect::read, effect::network};
  for (const char* text : {"read, network", " read ,network ", "\tread,\n network\r", "network,read", "read,network"})
    EXPECT_EQ(te::parse_effect_set(text), expected) << '"' << text << '"';
}

TEST(EffectSetText, ParseCollapsesDuplicates) {
  EXPECT_EQ(te::parse_effect_set("write, write,idempotent ,write"), (effect_set{effect::write, effect::idempotent}));
}

TEST(EffectSetText, EmptyAndBlankStringsAreTheEmptySet) {
  EXPECT_EQ(te::parse_effect_set(""), effect_set{});
  EXPECT_EQ(te::parse_effect_set("   \t"), effect_set{});
  EXPECT_EQ(te::try_parse_effect_set(""), effect_set{});
}

TEST(EffectSetText, EmptyTokensAreErrors) {
  // Only the whole string may be blank; an empty token between commas is not a tag.
  for (const char* text : {",", "read,", ",read", "read,,write", "read, ,write"}) {
    EXPECT_EQ(te::try_parse_effect_set(text), std::nullopt) << '"' << text << '"';
    EXPECT_EQ(what_of([&] { (void)te::parse_effect_set(text); }), R"(unknown side-effect tag: "")") << text;
  }
}

TEST(EffectSetText, ErrorNamesTheFirstUnknownTokenTrimmed) {
  EXPECT_EQ(what_of([] { (void)te::parse_effect_set("read, bogus , Write"); }), R"(unknown side-effect tag: "bogus")");
  EXPECT_EQ(what_of([] { (void)te::parse_effect_set("READ,write"); }), R"(unknown side-effect tag: "READ")");
  EXPECT_EQ(what_of([] { (void)te::parse_effect_set("read write"); }), R"(unknown side-effect tag: "read write")");
  try {
    (void)te::parse_effect_set("network, Expensive, x");
    FAIL() << "did not throw";
  } catch (const te::parse_error& e) {
    EXPECT_EQ(e.input(), "Expensive");
  }
  EXPECT_EQ(te::try_parse_effect_set("read, bogus"), std::nullopt);
}

TEST(EffectSetText, ParsingIsUsableInConstantExpressions) {
  static_assert(te::try_parse_effect_set(" read , network") == effect_set{effect::read, effect::network});
  static_assert(!te::try_parse_effect_set("read,READ").has_value());
  static_assert(te::try_parse_effect("idempotent") == effect::idempotent);
  SUCCEED();
}

}  // namespace effect_test_ns
