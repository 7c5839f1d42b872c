// The lexers of parse_untrusted_json against nlohmann's (the reference, detail::parse_untrusted_json_nlohmann):
// the default one-pass lexer (json/detail/fast_parse.hpp; issue 29) and the optional Boost.JSON one
// (TOOL_EFFECTS_JSON_BOOST_PARSER, json/detail/boost_json_parse.hpp; issue 20), each feeding the library's
// bounded builder. Whatever a lexer admits must be exactly the value nlohmann's parse builds (same value, same
// number types, same text when dumped); whatever it does not admit goes to nlohmann's parse, so errors are
// unchanged, which is checked too: parse_untrusted_json's error (reason, pointer, message) is the reference's.
// Checked on a corpus of edge cases and on 30,000 random mutations of valid documents per lexer (a
// differential test: it fails on the first input where they disagree).
#include <gtest/gtest.h>

#include <boost/json/src.hpp>  // Boost.JSON's compiled part, in this one translation unit

#include <random>
#include <regex>
#include <string>
#include <vector>

#include <tool_effects/json.hpp>
#include <tool_effects/json/detail/boost_json_parse.hpp>
#include <tool_effects/json/detail/fast_parse.hpp>

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

using lexer_fn = std::optional<json> (*)(std::string_view, const te::json_limits&);
struct lexer {
  const char* name;
  lexer_fn parse;
};
const lexer lexers[] = {{"fast (default)", &te::detail::parse_with_fast_lexer},
                        {"boost.json", &te::detail::parse_with_boost_json}};

// parse_untrusted_json (built without TOOL_EFFECTS_JSON_BOOST_PARSER: the default lexer, then nlohmann) fails
// exactly as nlohmann's parse fails: same reason, pointer and message. Returns the reference's result.
std::optional<json> same_errors(const std::string& text, const te::json_limits& limits) {
  std::optional<json> slow;
  std::optional<te::json_error> slow_error, default_error;
  try {
    slow = te::detail::parse_untrusted_json_nlohmann(text, limits, "ctx");
  } catch (const te::json_error& e) {
    slow_error = e;
  }
  try {
    (void)te::parse_untrusted_json(text, limits, "ctx");
  } catch (const te::json_error& e) {
    default_error = e;
  }
  EXPECT_EQ(slow_error.has_value(), default_error.has_value()) << json(text).dump();
  if (slow_error && default_error) {
    EXPECT_EQ(te::to_string(slow_error->reason()), te::to_string(default_error->reason())) << json(text).dump();
    EXPECT_EQ(slow_error->pointer(), default_error->pointer()) << json(text).dump();
    EXPECT_STREQ(slow_error->what(), default_error->what()) << json(text).dump();
  }
  return slow;
}

// True when `lx` admitted `text` (and then agreed with nlohmann); fails the test on any disagreement.
// `only_reference` collects the texts only nlohmann admitted (parsed twice on the default path).
bool agrees(const std::string& text, const te::json_limits& limits = {}, const lexer& lx = lexers[0],
            std::vector<std::string>* only_reference = nullptr) {
  const auto fast = lx.parse(text, limits);
  const std::optional<json> slow = same_errors(text, limits);
  if (!fast && slow && only_reference) only_reference->push_back(text);
  if (!fast) return false;
  EXPECT_TRUE(slow.has_value()) << "admitted only by the " << lx.name << " lexer: " << json(text).dump();
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
      "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", R"({"a":{"b":[{"c":null}]},"d":[[],{}]})",
      R"("\u0000\u001f\b\f\r\t\u00E9\uFFFF\uD7FF\uE000\uDBFF\uDFFF")", R"({"":[{"":""}]," a ":-12.5E-3})"};
  for (const auto& lx : lexers) {
    SCOPED_TRACE(lx.name);
    int admitted = 0;
    for (const auto& t : valid) admitted += agrees(t, {}, lx) ? 1 : 0;
    EXPECT_GE(admitted, static_cast<int>(valid.size()) - 1);  // all but "1E400x"
  }
}

TEST(WireParse, RefusesWhatNlohmannRefuses) {
  const std::vector<std::string> invalid = {
      "", " ", "{", "[1,]", "{\"a\":1,}", "01", "-", "1.", ".5", "1e", "+1", "[1 2]", "{\"a\" 1}", "\"\x01\"",
      "\"\\x\"", "\"\\ud800\"", "\"\\udc00x\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
      "\"\xe2\x82\"", "\"\x80\"", "NaN", "Infinity", "[1] x", "// c\n1", "\f1", "1e400", "-1e400",
      R"({"a":1,"a":2})", "\"abc", "[\"a\",", "{\"a\":}", "{1:2}", "tru", "nul", "falsey",
      "[true false]", "\"\\u12\"", "\"\\u12G4\"", "\"\\ud800\\u0041\"", "\"\\ud800\\\\\"", "-01", "1.e5", "1e+",
      "[-]", "{\"a\":1 \"b\":2}", "{\"a\":1}}", "[1]]", "\"abcdefgh\x1f" "abcdefgh\"",
      "\"abcdefg\xf0\x9f\x98\"", "\"abcdefghijklmnop\xc3\"", "\"\xf5\x80\x80\x80\"", "\"\xe0\x80\x80\""};
  for (const auto& lx : lexers) {
    SCOPED_TRACE(lx.name);
    for (const auto& t : invalid) {
      EXPECT_FALSE(lx.parse(t, {}).has_value()) << json(t).dump();
      EXPECT_FALSE(same_errors(t, {}).has_value()) << json(t).dump();  // and parse_untrusted_json's error is nlohmann's
    }
    // A UTF-8 byte order mark: the lexers leave it to nlohmann, which skips it.
    EXPECT_FALSE(lx.parse("\xef\xbb\xbf[1]", {}).has_value());
    EXPECT_EQ(te::parse_untrusted_json("\xef\xbb\xbf[1]"), json::array({1}));
  }
}

TEST(WireParse, LimitsAreTheBuildersAndErrorsNlohmanns) {
  for (const auto& lx : lexers) {
    SCOPED_TRACE(lx.name);
    te::json_limits l;
    l.max_depth = 4;
    EXPECT_TRUE(agrees("[[[[1]]]]", l, lx));
    EXPECT_TRUE(agrees(R"({"a":{"b":{"c":[]}}})", l, lx));
    EXPECT_FALSE(lx.parse("[[[[[1]]]]]", l).has_value());
    EXPECT_FALSE(agrees(R"({"a":{"b":{"c":[{}]}}})", l, lx));  // too deep: the reference's error, same_errors
    l = {};
    l.max_values = 3;
    EXPECT_TRUE(agrees("[1,2]", l, lx));
    EXPECT_FALSE(lx.parse("[1,2,3]", l).has_value());
    EXPECT_FALSE(agrees("[1,[2]]", l, lx));
    l = {};
    EXPECT_FALSE(agrees(R"({"a":{"b":1,"c":2,"b":3}})", l, lx));  // duplicate key, pointer /a/b
  }
  // The errors themselves, through the default path.
  try {
    (void)te::parse_untrusted_json(R"({"a":{"b":1,"c":2,"b":3}})");
    ADD_FAILURE() << "a duplicate key was admitted";
  } catch (const te::json_error& e) {
    EXPECT_EQ(e.reason(), te::json_error_reason::duplicate_key);
    EXPECT_EQ(e.pointer(), "/a/b");
  }
}

TEST(WireParse, ALargeResultIsAdmitted) {
  std::string text(1 << 20, 'x');
  for (std::size_t i = 64; i < text.size(); i += 65) text[i] = '\n';
  const json msg = {{"jsonrpc", "2.0"}, {"id", 1}, {"result", {{"content", json::array({{{"type", "text"}, {"text", text}}})}}}};
  for (const auto& lx : lexers) {
    SCOPED_TRACE(lx.name);
    EXPECT_TRUE(agrees(msg.dump(), {}, lx));
  }
}

// Every special byte (quote, backslash, control character, the bytes of a multibyte character) at every
// offset of the eight-byte words the default lexer skips whole.
TEST(WireParse, SpecialBytesAtEveryOffsetOfAWord) {
  const std::vector<std::string> specials = {"\\\"", "\\\\", "\\n", "\\u00e9", "\xc3\xa9", "\xe2\x82\xac",
                                             "\xf0\x9f\x98\x80", "\x7f", "\x1f", "\"", "\x80", "\xc3", "\xed\xa0\x80"};
  for (const auto& lx : lexers) {
    SCOPED_TRACE(lx.name);
    int admitted = 0;
    for (const auto& sp : specials)
      for (std::size_t at = 0; at < 24; ++at) {
        const std::string t = "[\"" + std::string(at, 'a') + sp + std::string(31 - at % 8, 'b') + "\"]";
        admitted += agrees(t, {}, lx) ? 1 : 0;
        if (::testing::Test::HasFailure()) return;
      }
    EXPECT_EQ(admitted, 8 * 24);  // the first eight specials are valid inside a string, the rest are not
  }
}

TEST(WireParse, RandomMutationsAgree) {
  const std::vector<std::string> seeds = {
      R"({"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"h\u00e9llo \"w\"\n"}],"isError":false}})",
      R"([0,-1,1.25e-3,18446744073709551615,-9223372036854775808,1e308,"\ud83d\ude00",null,true,{"k":[{}]}])",
      "{\"a\xc3\xa9\":\"\xe2\x82\xac\",\"n\":[1,2,3],\"o\":{\"p\":-0.0}}",
      "{\"text\":\"abcdefghijklmnopqrstuvwxyz \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 0123456789\\n\\t\\\"quoted\\\" "
      "ABCDEFGHIJKLMNOPQRSTUVWXYZ\\u0041\\ud83d\\ude00 end of a longer run of text\"}"};
  const std::string alphabet = "{}[]\",:\\/0123456789-+.eEtrufalsn \t\n\r\x01\x7f\x80\xbf\xc3\xed\xf0\xff";
  for (const auto& lx : lexers) {
    SCOPED_TRACE(lx.name);
    std::mt19937 rng(20);
    int admitted = 0;
    std::vector<std::string> only_reference;
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
      admitted += agrees(t, {}, lx, &only_reference) ? 1 : 0;
      if (::testing::Test::HasFailure()) break;  // the first disagreement is enough
    }
    EXPECT_GT(admitted, 1000);  // the mutations that stay valid JSON, all admitted alike
    // The default lexer leaves to nlohmann only numbers that underflow a double (from_chars reports them out
    // of range; nlohmann's strtod makes them 0): no other valid text is parsed twice.
    if (std::string_view(lx.name) != "boost.json") {
      for (const auto& t : only_reference) {
        EXPECT_TRUE(std::regex_search(t, std::regex("[eE]-[0-9]{3,}"))) << "parsed twice: " << json(t).dump();
      }
    }
    RecordProperty(std::string("only nlohmann admitted, ") + lx.name, static_cast<int>(only_reference.size()));
    RecordProperty(std::string("admitted by ") + lx.name, admitted);
  }
}

}  // namespace wire_parse_test_ns
