// RFC 8785 (JCS) canonical JSON: the RFC's own examples, the number table of
// its Appendix B, the sorting and escaping vectors of the reference test data
// (cyberphone/json-canonicalization: values, weird, arrays), and the
// library's decisions (integers as doubles, non-finite numbers rejected).
// test/jcs/check_jcs.py cross-checks random documents against Python.
#include <tool_effects/json.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include <gtest/gtest.h>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_canonical_test_ns {

namespace {

using nlohmann::json;
using tool_effects::canonical_json;

std::string number(std::uint64_t ieee_bits) { return canonical_json(json(std::bit_cast<double>(ieee_bits))); }

TEST(Jcs, RfcSection322Example) {
  const auto in = json::parse(R"({
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  })");
  EXPECT_EQ(canonical_json(in),
            "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
            "\"string\":\"\xE2\x82\xAC$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

TEST(Jcs, AppendixBNumbers) {
  const std::pair<std::uint64_t, const char*> table[] = {
      {0x0000000000000000, "0"},
      {0x8000000000000000, "0"},
      {0x0000000000000001, "5e-324"},
      {0x8000000000000001, "-5e-324"},
      {0x7fefffffffffffff, "1.7976931348623157e+308"},
      {0xffefffffffffffff, "-1.7976931348623157e+308"},
      {0x4340000000000000, "9007199254740992"},
      {0xc340000000000000, "-9007199254740992"},
      {0x4430000000000000, "295147905179352830000"},
      {0x44b52d02c7e14af5, "9.999999999999997e+22"},
      {0x44b52d02c7e14af6, "1e+23"},
      {0x44b52d02c7e14af7, "1.0000000000000001e+23"},
      {0x444b1ae4d6e2ef4e, "999999999999999700000"},
      {0x444b1ae4d6e2ef4f, "999999999999999900000"},
      {0x444b1ae4d6e2ef50, "1e+21"},
      {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
      {0x3eb0c6f7a0b5ed8d, "0.000001"},
      {0x41b3de4355555553, "333333333.3333332"},
      {0x41b3de4355555554, "333333333.33333325"},
      {0x41b3de4355555555, "333333333.3333333"},
      {0x41b3de4355555556, "333333333.3333334"},
      {0x41b3de4355555557, "333333333.33333343"},
      {0xbecbf647612f3696, "-0.0000033333333333333333"},
      {0x43143ff3c1cb0959, "1424953923781206.2"},
  };
  for (const auto& [bits, want] : table) EXPECT_EQ(number(bits), want) << std::hex << bits;
}

TEST(Jcs, NumbersInTheIssuesExamples) {
  EXPECT_EQ(canonical_json(json::parse("[1E30, 4.50, 2e-3, 1e-7, 1e21, 1e20, 0.1, 100, -0.0]")),
            "[1e+30,4.5,0.002,1e-7,1e+21,100000000000000000000,0.1,100,0]");
}

TEST(Jcs, NonFiniteNumbersAndBinaryAreRejected) {
  EXPECT_THROW((void)canonical_json(json(std::numeric_limits<double>::quiet_NaN())), std::invalid_argument);
  EXPECT_THROW((void)canonical_json(json::array({std::numeric_limits<double>::infinity()})), std::invalid_argument);
  EXPECT_THROW((void)canonical_json(json::binary({1, 2})), std::invalid_argument);
}

TEST(Jcs, IntegersAreIeeeDoubles) {
  // Every number is a double, as in JavaScript: int64/uint64 values are rounded.
  EXPECT_EQ(canonical_json(json::parse("9007199254740993")), "9007199254740992");
  EXPECT_EQ(canonical_json(json::parse("18446744073709551615")), "18446744073709552000");
  EXPECT_EQ(canonical_json(json::parse("-9223372036854775808")), "-9223372036854776000");
  EXPECT_EQ(canonical_json(json::parse("123456789012345678901234")), "1.2345678901234569e+23");
  EXPECT_EQ(canonical_json(json(std::int64_t{42})), canonical_json(json(42.0)));
}

TEST(Jcs, MembersSortedByUtf16CodeUnits) {
  // cyberphone testdata weird.json: U+1F602 (surrogates D83D DE02) sorts before U+FB33,
  // although its code point is larger.
  const auto in = json::parse(R"({
    "\u20ac": "Euro Sign", "1": "One", "\u0080": "Control\u007f", "\ud83d\ude02": "Smiley",
    "\u00f6": "Latin Small Letter O With Diaeresis", "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "</script>": "Browser Challenge"
  })");
  EXPECT_EQ(canonical_json(in),
            "{\"1\":\"One\",\"</script>\":\"Browser Challenge\",\"\xC2\x80\":\"Control\x7F\","
            "\"\xC3\xB6\":\"Latin Small Letter O With Diaeresis\",\"\xE2\x82\xAC\":\"Euro Sign\","
            "\"\xF0\x9F\x98\x82\":\"Smiley\",\"\xEF\xAC\xB3\":\"Hebrew Letter Dalet With Dagesh\"}");
}

TEST(Jcs, ArraysKeepOrderAndNestedObjectsSort) {
  // cyberphone testdata arrays.json
  EXPECT_EQ(canonical_json(json::parse(R"([56, {"d": true, "10": null, "1": []}])")),
            R"([56,{"1":[],"10":null,"d":true}])");
}

TEST(Jcs, StringEscaping) {
  std::string all_controls;
  for (char c = 0; c < 0x20; ++c) all_controls += c;
  EXPECT_EQ(canonical_json(json(all_controls)),
            "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f"
            "\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d"
            "\\u001e\\u001f\"");
  EXPECT_EQ(canonical_json(json("/\"\\\x7f")), "\"/\\\"\\\\\x7f\"") << "solidus and DEL verbatim";
  EXPECT_EQ(canonical_json(json(std::string("a\xff" "b"))), "\"a\xEF\xBF\xBD" "b\"") << "invalid UTF-8: U+FFFD";
}

}  // namespace
}  // namespace json_canonical_test_ns
