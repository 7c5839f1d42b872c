// The optional fast lexer of parse_untrusted_json (TOOL_EFFECTS_JSON_BOOST_PARSER, json/detail/
// boost_json_parse.hpp; issue 20): Boost.JSON's basic_parser feeding the library's bounded builder. Whatever it
// admits must be exactly the value nlohmann's parse builds (same value, same number types, same text when
// dumped); whatever it does not admit goes to nlohmann's parse, so errors are unchanged. Checked on a corpus of
// edge cases and on 30,000 random mutations of valid documents (a differential test: it fails on the first
// input where the two disagree).
#include <gtest/gtest.h>

#include <boost/json/src.hpp>  // Boost.JSON's compiled part, in this one translation unit

#include <random>
#include <string>
#include <vector>

#include <tool_effects/json.hpp>
#include <tool_effects/json/detail/boost_json_parse.hpp>

namespace wire_parse_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {

bool same_types(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      const auto jt = b.find(it.key());
      if (jt == b.end() || !same_types(*it, *jt)) return false;
    }
  } else if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_types(a[i], b[i])) return false;
  }
  return true;
}

// True when the fast lexer admitted `text` (and then agreed with nlohmann); fails the test on any disagreement.
bool agrees(const std::string& text, const te::json_limits& limits = {}) {
  const auto fast = te::detail::parse_with_boost_json(text, limits);
  std::optional<json> slow;
  try {
    slow = te::parse_untrusted_json(text, limits);  // this test is built without the macro: nlohmann's parse
  } catch (const te::json_error&) {
  }
  if (!fast) return false;
  EXPECT_TRUE(slow.has_value()) << "admitted only by the fast lexer: " << json(text).dump();
  if (!slow) return false;
  EXPECT_EQ(*fast, *slow) << json(text).dump();
  EXPECT_TRUE(same_types(*fast, *slow)) << json(text).dump();
  EXPECT_EQ(fast->dump(), slow->dump()) << json(text).dump();
  return true;
}

}  // namespace

TEST(WireParse, AdmitsWhatNlohmannAdmitsWithTheSameValue) {
  const std::vector<std::string> valid = {
      "{}", "[]", "0", "-0", "1", "-1", "\"x\"", "true", "null", " \t\r\n[1] \n",
      "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
      "9223372036854775807", "9223372036854775808", "1.5", "-1.5e10", "1E400x", "5e-324", "2.2250738585072014e-308",
      "0.1", "1e23", "123456789012345678901234567890", "[1.0, 2e0, -0.0]",
      R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\nb\u00e9\ud83d\ude00\"\\\/"}]}})",
      "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", R"({"a":{"b":[{"c":null}]},"d":[[],{}]})"};
  int admitted = 0;
  for (const auto& t : valid) admitted += agrees(t) ? 1 : 0;
  EXPECT_GE(admitted, static_cast<int>(valid.size()) - 1);  // all but "1E400x"
}

TEST(WireParse, RefusesWhatNlohmannRefuses) {
  const std::vector<std::string> invalid = {
      "", " ", "{", "[1,]", "{\"a\":1,}", "01", "-", "1.", ".5", "1e", "+1", "[1 2]", "{\"a\" 1}", "\"\x01\"",
      "\"\\x\"", "\"\\ud800\"", "\"\\udc00x\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
      "\"\xe2\x82\"", "\"\x80\"", "NaN", "Infinity", "[1] x", "// c\n1", "\f1", "1e400", "-1e400",
      R"({"a":1,"a":2})", "\xef\xbb\xbf[1]"};
  for (const auto& t : invalid) EXPECT_FALSE(te::detail::parse_with_boost_json(t, {}).has_value()) << json(t).dump();
}

TEST(WireParse, LimitsAreTheBuildersAndErrorsNlohmanns) {
  te::json_limits l;
  l.max_depth = 4;
  EXPECT_TRUE(agrees("[[[[1]]]]", l));
  EXPECT_FALSE(te::detail::parse_with_boost_json("[[[[[1]]]]]", l).has_value());
  l = {};
  l.max_values = 3;
  EXPECT_TRUE(agrees("[1,2]", l));
  EXPECT_FALSE(te::detail::parse_with_boost_json("[1,2,3]", l).has_value());
}

TEST(WireParse, ALargeResultIsAdmitted) {
  std::string text(1 << 20, 'x');
  for (std::size_t i = 64; i < text.size(); i += 65) text[i] = '\n';
  const json msg = {{"jsonrpc", "2.0"}, {"id", 1}, {"result", {{"content", json::array({{{"type", "text"}, {"text", text}}})}}}};
  EXPECT_TRUE(agrees(msg.dump()));
}

TEST(WireParse, RandomMutationsAgree) {
  const std::vector<std::string> seeds = {
      R"({"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"h\u00e9llo \"w\"\n"}],"isError":false}})",
      R"([0,-1,1.25e-3,18446744073709551615,-9223372036854775808,1e308,"\ud83d\ude00",null,true,{"k":[{}]}])",
      "{\"a\xc3\xa9\":\"\xe2\x82\xac\",\"n\":[1,2,3],\"o\":{\"p\":-0.0}}"};
  const std::string alphabet = "{}[]\",:\\/0123456789-+.eEtrufalsn \t\n\r\x01\x7f\x80\xbf\xc3\xed\xf0\xff";
  std::mt19937 rng(20);
  int admitted = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string t = seeds[static_cast<std::size_t>(i) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = rng() % (t.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: if (at < t.size()) t[at] = c; break;
        case 1: t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        default: if (at < t.size()) t.erase(at, 1); break;
      }
    }
    admitted += agrees(t) ? 1 : 0;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(admitted, 1000);  // the mutations that stay valid JSON, all admitted alike
  RecordProperty("admitted", admitted);
}

}  // namespace wire_parse_test_ns
