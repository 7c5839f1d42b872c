// detail::json_dump, the one serializer of what goes on the wire: byte-identical to nlohmann's
// dump(-1, ' ', false, replace) (a differential test over random values whose strings mix ASCII, every control
// character, quotes, valid multi-byte characters and invalid UTF-8), and the cases written out.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/json/detail/dump.hpp>
#include <tool_effects/mcp/protocol/detail/wire.hpp>

namespace json_dump_test_ns {

using nlohmann::json;
namespace td = tool_effects::detail;

namespace {
std::string reference(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string random_text(std::mt19937_64& rng) {
  static const char* const pieces[] = {"a", "Z", " ", "\"", "\\", "/", "\x7f", "\xc3\xa9", "\xe2\x82\xac",
                                       "\xf0\x9f\x98\x80", "\xef\xbf\xbd", "\xed\xa0\x80" /* surrogate */,
                                       "\xc0\xaf" /* overlong */, "\xf4\x90\x80\x80" /* > U+10FFFF */, "\x80",
                                       "\xe2\x82" /* cut short */, "\xff"};
  std::string s;
  if (rng() % 8 == 0) {  // long plain ASCII with a rare special byte: the 8-byte scan must stop at each
    for (std::size_t i = 200 + rng() % 200; i > 0; --i)
      s += rng() % 40 == 0 ? pieces[rng() % (sizeof pieces / sizeof *pieces)] : std::string(1, static_cast<char>('a' + rng() % 26));
    return s;
  }
  const std::size_t n = rng() % 24;
  for (std::size_t i = 0; i < n; ++i) {
    switch (rng() % 4) {
      case 0: s += static_cast<char>(rng() % 0x20); break;     // a control character
      case 1: s += static_cast<char>(0x20 + rng() % 0x60); break;  // printable ASCII
      default: s += pieces[rng() % (sizeof pieces / sizeof *pieces)];
    }
  }
  return s;
}

json random_value(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 3 ? 6 : 8)) {
    case 0: return nullptr;
    case 1: return rng() % 2 == 0;
    case 2: return static_cast<std::int64_t>(rng()) >> (rng() % 64);
    case 3: return static_cast<std::uint64_t>(rng());
    case 4: return std::ldexp(static_cast<double>(rng() % 100000) - 50000.0, static_cast<int>(rng() % 80) - 40);
    case 5: return random_text(rng);
    case 6: {
      json a = json::array();
      for (std::size_t i = rng() % 5; i > 0; --i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (std::size_t i = rng() % 5; i > 0; --i) o[random_text(rng)] = random_value(rng, depth + 1);
      return o;
    }
  }
}
}  // namespace

// 20,000 random values: the same bytes as nlohmann's dump with replacement. (Fails, for example, if an invalid
// sequence went out as is, if a control character were escaped in upper-case hex, or if 0x7f were escaped.)
TEST(JsonDump, IsByteIdenticalToNlohmannsReplacingDump) {
  std::mt19937_64 rng(20261127);
  int differ = 0;
  for (int i = 0; i < 20000; ++i) {
    const json j = random_value(rng, 0);
    const std::string want = reference(j);
    const std::string got = td::json_dump(j);
    if (got != want && ++differ <= 5) ADD_FAILURE() << "value " << i << "\n got: " << got << "\nwant: " << want;
  }
  EXPECT_EQ(differ, 0);
}

TEST(JsonDump, WrittenOutCases) {
  EXPECT_EQ(td::json_dump(json::parse(R"({"b": [1, -2, 3.5, true, null], "a": "x\ny"})")),
            R"({"a":"x\ny","b":[1,-2,3.5,true,null]})");
  EXPECT_EQ(td::json_dump(json(std::string("\x01\x1f\"\\\t\b\f\r\x7f", 9))), R"("\u0001\u001f\"\\\t\b\f\r)" "\x7f\"");
  EXPECT_EQ(td::json_dump(json("caf\xc3\xa9 \xe2\x82\xac")), "\"caf\xc3\xa9 \xe2\x82\xac\"") << "UTF-8 kept";
  EXPECT_EQ(td::json_dump(json("a\xff" "b")), "\"a\xef\xbf\xbd" "b\"") << "an invalid byte becomes U+FFFD";
  EXPECT_EQ(td::json_dump(json(std::numeric_limits<std::uint64_t>::max())), "18446744073709551615");
  EXPECT_EQ(td::json_dump(json(std::numeric_limits<std::int64_t>::min())), "-9223372036854775808");
  EXPECT_EQ(td::json_dump(json::object()), "{}");
  EXPECT_EQ(td::json_dump(json::array()), "[]");
  const std::string big(1 << 20, 'x');
  EXPECT_EQ(td::json_dump(json(big)), reference(json(big)));
}

// The session writes a request's text around its params (mcp_request_text) instead of dumping a message object
// built for it: the same bytes as mcp_dump of that object, for random params (absent, null, any value), methods and
// ids. (Fails if a key were out of nlohmann's sorted order, "params": null were written, or the method unescaped.)
TEST(JsonDump, RequestTextIsTheDumpOfItsMessage) {
  std::mt19937_64 rng(271127);
  int differ = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::string method = random_text(rng);
    const std::int64_t id = static_cast<std::int64_t>(rng()) >> (rng() % 64);
    const json params = random_value(rng, 0);
    const bool absent = rng() % 5 == 0;
    json msg = {{"jsonrpc", "2.0"}, {"method", method}, {"id", id}};
    if (!absent && !params.is_null()) msg["params"] = params;
    const std::string want = td::mcp_dump(msg);
    const std::string got = td::mcp_request_text(id, method, absent ? nullptr : &params);
    if (got != want && ++differ <= 5) ADD_FAILURE() << "request " << i << "\n got: " << got << "\nwant: " << want;
  }
  EXPECT_EQ(differ, 0);
  const json p = {{"name", "echo"}};
  EXPECT_EQ(td::mcp_request_text(7, "tools/call", &p), R"({"id":7,"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}})");
}

// The session writes a response's text around its result (mcp_result_text): the same bytes as mcp_dump of the
// response object, for random ids (numbers and strings, as JSON-RPC allows) and results.
TEST(JsonDump, ResultTextIsTheDumpOfItsMessage) {
  std::mt19937_64 rng(90210);
  int differ = 0;
  for (int i = 0; i < 5000; ++i) {
    const json id = rng() % 2 ? json(static_cast<std::int64_t>(rng()) >> (rng() % 64)) : json(random_text(rng));
    const json result = random_value(rng, 0);
    const std::string want = td::mcp_dump(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
    const std::string got = td::mcp_result_text(id, result);
    if (got != want && ++differ <= 5) ADD_FAILURE() << "response " << i << "\n got: " << got << "\nwant: " << want;
  }
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(td::mcp_result_text(json("a"), json{{"content", json::array()}}), R"({"id":"a","jsonrpc":"2.0","result":{"content":[]}})");
}

}  // namespace json_dump_test_ns
