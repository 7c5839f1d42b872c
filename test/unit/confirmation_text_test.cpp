// The text form of an approval request (issue 19): safe to print on a
// terminal (every control character, C1, DEL, bidi and invisible format
// character escaped, malformed UTF-8 escaped byte by byte), model-chosen
// strings quoted, and injective: two different requests never render alike.
// Checked with an independent decoder of the output, not the library's own
// predicate; controls run a naive rendering through the same checks.
#include <tool_effects/confirmation.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/retry.hpp>

#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

// Unity-built with the other recovery tests (test/CMakeLists.txt): all below is this file's own.
namespace confirmation_text_test_ns {

namespace te = tool_effects;

namespace {
// UTF-8 of code point `c` (test-side encoder).
std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

// The characters a terminal must never receive raw, listed here
// independently of the library: C0, DEL, C1, and the bidi and invisible
// format characters of Unicode's "Trojan Source" list (CVE-2021-42574) plus
// zero-width ones and tag characters.
std::vector<char32_t> dangerous_code_points() {
  std::vector<char32_t> out;
  for (char32_t c = 0; c < 0x20; ++c) out.push_back(c);
  out.push_back(0x7F);
  for (char32_t c = 0x80; c <= 0x9F; ++c) out.push_back(c);
  for (const char32_t c : {0x061CU, 0x200BU, 0x200CU, 0x200DU, 0x200EU, 0x200FU, 0x2028U, 0x2029U, 0x202AU,
                           0x202BU, 0x202CU, 0x202DU, 0x202EU, 0x2060U, 0x2066U, 0x2067U, 0x2068U, 0x2069U, 0xFEFFU,
                           0xE0001U, 0xE0041U, 0xE007FU})
    out.push_back(c);
  return out;
}

// Test-side check of a rendering: well-formed UTF-8 and none of the
// dangerous code points. Returns a description of the first problem, or "".
std::string terminal_problem(std::string_view s) {
  static const std::vector<char32_t> list = dangerous_code_points();
  static const std::set<char32_t> bad(list.begin(), list.end());
  for (std::size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t n = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return "malformed UTF-8 at byte " + std::to_string(i);
    char32_t c = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (std::size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return "malformed UTF-8 at byte " + std::to_string(i);
      c = (c << 6) | (b & 0x3F);
    }
    if (utf8(c) != s.substr(i, n)) return "overlong or invalid form at byte " + std::to_string(i);
    if (bad.contains(c)) return "raw U+" + std::to_string(static_cast<unsigned>(c)) + " at byte " + std::to_string(i);
    i += n;
  }
  return "";
}

te::confirmation_request destructive_request() {
  te::confirmation_request r;
  r.tool = "delete_file";
  r.effects = te::effect_set{te::effect::write, te::effect::destructive};
  r.effect_class = te::classify(r.effects);
  r.reason = te::confirmation_reason_of(r.effects);
  r.idempotency_key = "k1";
  return r;
}

// What the examples printed before (name#id and effects, raw): the control.
std::string naive_render(const te::confirmation_request& r) {
  return std::string(r.tool) + "#" + std::string(r.call_id) + " (" + std::string(r.arguments.value_or("")) + ")";
}

constexpr std::string_view spoof = "x\r\x1b[2Kread_file#ok (read) -> approved\nconfirm delete_file#y";
}  // namespace

TEST(ConfirmationText, TheSpoofedCallIdIsShownQuotedOnOneLine) {
  te::confirmation_request r = destructive_request();
  r.call_id = spoof;
  const std::string text = te::to_string(r);
  EXPECT_EQ(terminal_problem(text), "") << text;
  EXPECT_EQ(text,
            "tool \"delete_file\", call \"x\\x{0D}\\x{1B}[2Kread_file#ok (read) -> approved\\x{0A}confirm "
            "delete_file#y\": needs approval (destructive); effects {write,destructive}; class non_idempotent; "
            "idempotency key \"k1\"; arguments not shown");
  std::ostringstream os;
  os << r;
  EXPECT_EQ(os.str(), text);
  // Control: printed raw (as the examples did), the same request carries the
  // carriage return, the erase-line sequence and a line the model wrote.
  const std::string raw = naive_render(r);
  EXPECT_NE(terminal_problem(raw), "");
  EXPECT_NE(raw.find("\r\x1b[2K"), std::string::npos);
}

TEST(ConfirmationText, EveryControlC1BidiAndInvisibleCharacterIsEscapedInEveryField) {
  for (const char32_t c : dangerous_code_points()) {
    const std::string s = "a" + utf8(c) + "b";
    SCOPED_TRACE("U+" + std::to_string(static_cast<unsigned>(c)));
    for (int field = 0; field < 5; ++field) {
      te::confirmation_request r = destructive_request();
      std::string args = R"({"path":")" + s + R"("})";
      switch (field) {
        case 0: r.tool = s; break;
        case 1: r.server = s; break;
        case 2: r.call_id = s; break;
        case 3: r.idempotency_key = s; break;
        default: r.arguments = std::string_view(args); break;
      }
      const std::string text = te::to_string(r);
      EXPECT_EQ(terminal_problem(text), "") << "field " << field << ": " << text;
      std::ostringstream hex;
      hex << std::uppercase << std::hex << static_cast<unsigned>(c);
      std::string want = hex.str();
      if (want.size() < 2) want.insert(0, 2 - want.size(), '0');
      EXPECT_NE(text.find("a\\x{" + want + "}b"), std::string::npos) << "field " << field << ": " << text;
      // Control: the field printed raw holds the character.
      EXPECT_NE(terminal_problem(s), "");
    }
  }
}

TEST(ConfirmationText, MalformedUtf8IsEscapedByteByByte) {
  // A lone continuation byte, 0xFF, an overlong '/', a UTF-16 surrogate, a
  // character cut short, an overlong C1 (0xC2 0x9B is CSI; 0xE0 0x82 0x9B is its overlong form).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\x80", "\\x80"},
      {"\xff", "\\xFF"},
      {"\xc0\xaf", "\\xC0\\xAF"},
      {"\xed\xa0\x80", "\\xED\\xA0\\x80"},
      {"\xe2\x80", "\\xE2\\x80"},
      {"\xe0\x82\x9b", "\\xE0\\x82\\x9B"},
      {"\xf4\x90\x80\x80", "\\xF4\\x90\\x80\\x80"},  // above U+10FFFF
  };
  for (const auto& [in, shown] : cases) {
    const std::string q = te::terminal_quote(in);
    EXPECT_EQ(q, "\"" + shown + "\"");
    EXPECT_EQ(terminal_problem(q), "") << q;
  }
  // Well-formed text outside the list passes through unchanged.
  EXPECT_EQ(te::terminal_quote("r\xc3\xa9sum\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x99\x82"),
            "\"r\xc3\xa9sum\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x99\x82\"");
}

TEST(ConfirmationText, ArgumentsKeepTheirJsonEscapesAndTheReasonIsNamed) {
  te::confirmation_request r = destructive_request();
  const std::string args = R"({"path":"a\"b\\c\u001b[2K"})";
  r.arguments = std::string_view(args);
  EXPECT_EQ(te::to_string(r),
            "tool \"delete_file\": needs approval (destructive); effects {write,destructive}; class non_idempotent; "
            "idempotency key \"k1\"; arguments: {\"path\":\"a\\\"b\\\\c\\u001b[2K\"}");
  te::confirmation_request unknown;
  unknown.tool = "mystery";
  unknown.effect_class = te::classify(unknown.effects);
  unknown.reason = te::confirmation_reason_of(unknown.effects);
  EXPECT_EQ(te::to_string(unknown),
            "tool \"mystery\": needs approval (unknown effects); effects {}; class non_idempotent; idempotency key "
            "\"\"; arguments not shown");
  // A lone backslash (not a JSON escape) is written \x{5C}: it cannot pose as an escape of the renderer.
  const std::string lone = "\\x{1B}";
  r.arguments = std::string_view(lone);
  EXPECT_NE(te::to_string(r).find("arguments: \\x{5C}x{1B}"), std::string::npos) << te::to_string(r);
}

namespace {
// Random requests whose strings are drawn from pieces that stress the
// escaping: quotes, backslashes, the renderer's own escape syntax, the
// separators of the text form, controls, C1, bidi and malformed bytes.
struct request_values {
  std::string tool, server, call_id, key;
  std::optional<std::string> arguments;
  unsigned effects = 0;
  int effect_class = 0;
  int reason = 0;
  auto tie() const { return std::tie(tool, server, call_id, key, arguments, effects, effect_class, reason); }
  bool operator<(const request_values& o) const { return tie() < o.tie(); }
  bool operator==(const request_values& o) const { return tie() == o.tie(); }

  [[nodiscard]] te::confirmation_request request() const {
    te::confirmation_request r;
    r.tool = tool;
    r.server = server;
    r.call_id = call_id;
    r.idempotency_key = key;
    if (arguments) r.arguments = std::string_view(*arguments);
    for (const te::effect e : te::all_effects)
      if (effects & (1U << static_cast<unsigned>(e))) r.effects.insert(e);
    r.effect_class = static_cast<te::side_effect_class>(effect_class);
    r.reason = static_cast<te::confirmation_reason>(reason);
    return r;
  }
};

const std::array<std::string, 22> pieces = {
    "a",  "\"", "\\", "x",  "{",   "}",  "5C", "u",        "1B",           "\x1b",         "\n",
    " ",  ";",  ":",  ",",  "\\x", "\xff", "\xc2\x85", "\xe2\x80\xae", "\", call \"", "; arguments: ", "#"};

std::string random_string(std::mt19937& rng) {
  std::string s;
  const std::size_t n = rng() % 5;
  for (std::size_t i = 0; i < n; ++i) s += pieces[rng() % pieces.size()];
  return s;
}

request_values random_request(std::mt19937& rng) {
  request_values v;
  v.tool = random_string(rng);
  v.server = random_string(rng);
  v.call_id = random_string(rng);
  v.key = random_string(rng);
  if (rng() % 3 != 0) v.arguments = random_string(rng);
  v.effects = rng() % 128;
  v.effect_class = static_cast<int>(rng() % 3);
  v.reason = static_cast<int>(rng() % 2);
  return v;
}

// The first two distinct requests with one rendering, or nullopt.
template <class Render>
std::optional<std::pair<request_values, request_values>> find_collision(Render render, std::size_t n,
                                                                        std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::map<std::string, request_values> seen;
  for (std::size_t i = 0; i < n; ++i) {
    const request_values v = random_request(rng);
    const auto [it, fresh] = seen.emplace(render(v.request()), v);
    if (!fresh && !(it->second == v)) return std::pair{it->second, v};
  }
  return std::nullopt;
}

// A test-side reader of the text form: the request's values back from its
// rendering (throws on text it cannot read). read(to_string(r)) == r for
// every r proves the rendering injective.
struct reader {
  std::string_view s;
  std::size_t i = 0;

  bool eat(std::string_view lit) {
    if (s.substr(i, lit.size()) != lit) return false;
    i += lit.size();
    return true;
  }
  void expect(std::string_view lit) {
    if (!eat(lit)) throw std::runtime_error("expected '" + std::string(lit) + "' at " + std::to_string(i));
  }
  // After a backslash and 'x': \xNN (a byte) or \x{HEX} (a code point).
  std::string hex_escape() {
    if (eat("{")) {
      const std::size_t end = s.find('}', i);
      const auto c = static_cast<char32_t>(std::stoul(std::string(s.substr(i, end - i)), nullptr, 16));
      i = end + 1;
      return utf8(c);
    }
    const auto b = static_cast<char>(std::stoul(std::string(s.substr(i, 2)), nullptr, 16));
    i += 2;
    return std::string(1, b);
  }
  std::string quoted() {
    expect("\"");
    std::string out;
    for (;;) {
      if (i >= s.size()) throw std::runtime_error("unterminated string");
      const char c = s[i++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = s[i++];
      if (e == 'x') out += hex_escape();
      else out += e;  // an escaped quote or backslash
    }
  }
  std::string json_tail() {
    std::string out;
    while (i < s.size()) {
      const char c = s[i++];
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = s[i++];
      if (e == 'x') out += hex_escape();
      else out += std::string{'\\', e};  // a JSON escape, copied
    }
    return out;
  }
  std::string word(std::string_view stop) {
    const std::size_t end = s.find(stop, i);
    if (end == std::string_view::npos) throw std::runtime_error("no '" + std::string(stop) + "'");
    std::string out(s.substr(i, end - i));
    i = end + stop.size();
    return out;
  }
};

request_values read_back(std::string_view text) {
  reader rd{text};
  request_values v;
  rd.expect("tool ");
  v.tool = rd.quoted();
  if (rd.eat(" of MCP server ")) v.server = rd.quoted();
  if (rd.eat(", call ")) v.call_id = rd.quoted();
  rd.expect(": needs approval (");
  const std::string reason = rd.word("); effects {");
  v.reason = reason == "destructive" ? 0 : reason == "unknown effects" ? 1 : -1;
  const std::string effects = rd.word("}; class ");
  if (!effects.empty()) {
    const auto parsed = te::try_parse_effect_set(effects);
    if (!parsed) throw std::runtime_error("bad effects " + effects);
    for (const te::effect e : *parsed) v.effects |= 1U << static_cast<unsigned>(e);
  }
  const auto cls = te::try_parse_side_effect_class(rd.word("; idempotency key "));
  if (!cls) throw std::runtime_error("bad class");
  v.effect_class = static_cast<int>(*cls);
  v.key = rd.quoted();
  if (!rd.eat("; arguments not shown")) {
    rd.expect("; arguments: ");
    v.arguments = rd.json_tail();
  }
  if (rd.i != text.size()) throw std::runtime_error("trailing text");
  return v;
}
}  // namespace

TEST(ConfirmationText, DistinctRequestsRenderDistinctly) {
  // Property: every request can be read back from its text (so no two
  // distinct requests share a text), and the text is terminal-safe.
  std::mt19937 rng(19);
  for (int n = 0; n < 50'000; ++n) {
    const request_values v = random_request(rng);
    const std::string text = te::to_string(v.request());
    ASSERT_EQ(terminal_problem(text), "") << text;
    request_values back;
    ASSERT_NO_THROW(back = read_back(text)) << text;
    ASSERT_TRUE(back == v) << text;
  }
  // And directly: no collision among 50,000 random requests.
  const auto collision = find_collision([](const te::confirmation_request& r) { return te::to_string(r); }, 50'000, 3);
  EXPECT_FALSE(collision) << te::to_string(collision->first.request()) << "\nrendered alike from two requests";
  // Control: the same search finds two requests that a naive rendering
  // (name#id, arguments raw) shows alike, and the reader rejects it.
  EXPECT_TRUE(find_collision(naive_render, 50'000, 3));
  te::confirmation_request spoofed = destructive_request();
  spoofed.call_id = "a\", call \"b";
  std::string unescaped = te::to_string(spoofed);
  unescaped.replace(unescaped.find("a\\\""), 3, "a\"");  // as if the quote were not escaped
  unescaped.replace(unescaped.find("call \\\"b"), 8, "call \"b");
  EXPECT_ANY_THROW((void)read_back(unescaped)) << unescaped;
}

TEST(ConfirmationText, AllShortCallIdsRenderDistinctly) {
  // Exhaustive over strings of up to three pieces in the call id (22^3 + 22^2 + 22 + 1 of them).
  std::set<std::string> seen;
  std::size_t count = 0;
  std::vector<std::string> ids{""};
  for (int len = 0; len < 3; ++len) {
    std::vector<std::string> longer;
    for (const auto& id : ids)
      for (const auto& p : pieces) longer.push_back(id + p);
    for (auto& id : longer) ids.push_back(std::move(id));
  }
  std::set<std::string> distinct_ids(ids.begin(), ids.end());
  for (const auto& id : distinct_ids) {
    te::confirmation_request r = destructive_request();
    r.call_id = id;
    seen.insert(te::to_string(r));
    ++count;
  }
  EXPECT_EQ(seen.size(), count);
}

TEST(ConfirmationText, CallSettingsCarryTheSubjectToTheApprover) {
  // The per-call entry point shows the approver what `call_settings::subject` says.
  te::recovery_options o;
  std::vector<std::string> seen;
  std::optional<std::string> args_seen;
  std::string server_seen;
  o.approver = [&](const te::confirmation_request& r) {
    seen.push_back(te::to_string(r));
    server_seen = std::string(r.server);
    if (r.arguments) args_seen = std::string(*r.arguments);
    return te::confirmation::deny;
  };
  int ran = 0;
  auto tool = [&] { ++ran; };
  te::call_settings s{"rm#c1", {}, false, te::call_subject{"rm", "c1", "shell", std::string(R"({"path":"/"})")}};
  EXPECT_THROW(te::detail::run_call(o, s, te::effect_set{te::effect::write, te::effect::destructive}, {}, tool),
               te::call_failure);
  EXPECT_EQ(ran, 0);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(server_seen, "shell");
  EXPECT_EQ(args_seen, R"({"path":"/"})");
  EXPECT_EQ(seen[0].rfind("tool \"rm\" of MCP server \"shell\", call \"c1\": needs approval (destructive)", 0), 0u)
      << seen[0];
  // Without a subject (a static call): the call's name, arguments not shown.
  seen.clear();
  EXPECT_THROW(te::detail::run_call(o, te::call_settings{"purge"}, te::effect_set{}, {}, tool), te::call_failure);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].rfind("tool \"purge\": needs approval (unknown effects)", 0), 0u) << seen[0];
  EXPECT_NE(seen[0].find("; arguments not shown"), std::string::npos);
}


namespace {
struct wipe_disk {  // a static tool: its C++ arguments are not required to be printable
  static constexpr std::string_view name = "wipe_disk";
  using side_effects = te::effects<te::write, te::destructive>;
  int operator()(int disk) const { return disk; }
};
}  // namespace

TEST(ConfirmationText, AStaticCallThroughTheDispatcherShowsNoArguments) {
  boost::asio::thread_pool pool(1);
  std::mutex m;
  std::vector<std::string> seen;
  std::vector<bool> has_arguments;
  const auto opts = te::run_options{}.with(te::approver([&](const te::confirmation_request& r) {
    const std::lock_guard lock(m);
    seen.push_back(te::to_string(r));
    has_arguments.push_back(r.arguments.has_value());
    return te::confirmation::deny;
  }));
  auto [w] = te::run_plan(pool, opts, te::call(wipe_disk{}, 3));
  EXPECT_TRUE(w.has_error());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(has_arguments[0]);
  // The dispatcher names a static call by its type (spelled by the compiler).
  EXPECT_EQ(seen[0].rfind("tool \"", 0), 0u) << seen[0];
  EXPECT_NE(seen[0].find("wipe_disk\": needs approval (destructive); effects {write,destructive}"), std::string::npos)
      << seen[0];
  EXPECT_NE(seen[0].find("; arguments not shown"), std::string::npos) << seen[0];
}

}  // namespace confirmation_text_test_ns
