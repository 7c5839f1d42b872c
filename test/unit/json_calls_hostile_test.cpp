// Hostile model output and hostile values (issue 19): the one bounded parse
// (`parse_untrusted_json`: depth, size, stable reasons, JSON pointers), the
// iterative depth check for values the library did not parse
// (`parse_tool_calls(const json&)`, tool results, calls built by the
// application), unique call ids within a turn (duplicates refused, generated
// ids never equal to model-chosen ones, distinct idempotency keys and
// distinct answers), error messages that stay valid UTF-8 at every cut
// offset, and the probes that held (invalid JSON, effects claimed in
// arguments, hostile tool names) kept as regressions.
#include <tool_effects/json.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_calls_hostile_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {

// `depth` nested arrays (or objects under key "a"), built iteratively.
json nested(std::size_t depth, bool objects) {
  json root = objects ? json::object() : json::array();
  json* cur = &root;
  for (std::size_t i = 1; i < depth; ++i) {
    if (objects) {
      (*cur)["a"] = json::object();
      cur = &(*cur)["a"];
    } else {
      cur->push_back(json::array());
      cur = &(*cur)[0];
    }
  }
  return root;
}

std::string nested_text(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Strict UTF-8 check (no overlongs, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view s) {
  try {
    (void)json(std::string(s)).dump();  // nlohmann's strict dump throws type_error 316 on invalid UTF-8
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

template <class F>
std::optional<te::json_error> error_of(F&& f) {
  try {
    f();
  } catch (const te::json_error& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace

// ---------------------------------------------------------------- the bounded parse

TEST(BoundedParse, DepthLimitIsExactWithPointerAndStableReason) {
  EXPECT_NO_THROW((void)te::parse_untrusted_json(nested_text(64)));
  const auto e = error_of([] { (void)te::parse_untrusted_json(nested_text(65), {}, "in test"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->reason(), te::json_error_reason::too_deep);
  EXPECT_EQ(te::to_string(e->reason()), "too_deep");
  std::string pointer;
  for (int i = 0; i < 64; ++i) pointer += "/0";
  EXPECT_EQ(e->pointer(), pointer) << "the pointer of the 65th container";
  EXPECT_EQ(std::string(e->what()).rfind("in test at /0/0/", 0), 0u) << e->what();
  EXPECT_NE(std::string(e->what()).find("nesting deeper than 64 levels"), std::string::npos);

  const auto o = error_of([] { (void)te::parse_untrusted_json(R"({"a": {"b~/c": [1, {"d": [[]]}]}})", {3}); });
  ASSERT_TRUE(o);
  EXPECT_EQ(o->pointer(), "/a/b~0~1c/1") << "RFC 6901 escaping";
}

TEST(BoundedParse, TenToTheFiveLevelsAreRefusedCheaply) {
  const auto e = error_of([] { (void)te::parse_untrusted_json(nested_text(100000)); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->reason(), te::json_error_reason::too_deep);
}

TEST(BoundedParse, SizeLimitIsCheckedBeforeParsing) {
  const std::string text = R"({"a": ")" + std::string(1000, 'x') + R"("})";
  EXPECT_NO_THROW((void)te::parse_untrusted_json(text, {64, text.size()}));
  const auto e = error_of([&] { (void)te::parse_untrusted_json(text, {64, text.size() - 1}); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->reason(), te::json_error_reason::too_large);
  EXPECT_EQ(e->pointer(), "");
  EXPECT_NE(e->message().find("1009 bytes exceeds the limit of 1008 bytes"), std::string::npos) << e->message();
  // Invalid limits are the caller's bug, not the input's.
  EXPECT_THROW((void)te::parse_untrusted_json("[]", {0}), std::invalid_argument);
  EXPECT_THROW((void)te::parse_untrusted_json("[]", {te::max_safe_json_depth + 1}), std::invalid_argument);
  EXPECT_NO_THROW((void)te::parse_untrusted_json(nested_text(te::max_safe_json_depth), {te::max_safe_json_depth}));
}

TEST(BoundedParse, ValueCountLimitBoundsMemory) {
  // 10 values: the array, then [0,1] (3 values) three times.
  const std::string text = "[[0,1],[0,1],[0,1]]";
  EXPECT_NO_THROW((void)te::parse_untrusted_json(text, {64, 1000, 10}));
  const auto e = error_of([&] { (void)te::parse_untrusted_json(text, {64, 1000, 9}); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->reason(), te::json_error_reason::too_large);
  EXPECT_EQ(e->pointer(), "/2/1") << "the tenth value";
  EXPECT_EQ(e->message(), "more than 9 values");
  // The default: 2^20 values, so 16 MiB of tiny arrays (2.8 million of them) is refused early.
  std::string wide = "[";
  while (wide.size() < (std::size_t{16} << 20) - 8) wide += "[0,1],";
  wide += "0]";
  const auto w = error_of([&] { (void)te::parse_untrusted_json(wide); });
  ASSERT_TRUE(w);
  EXPECT_EQ(w->reason(), te::json_error_reason::too_large);
  EXPECT_EQ(w->message(), "more than 1048576 values");
}

TEST(BoundedParse, EveryRefusalHasItsStableReason) {
  struct row {
    std::string_view text;
    te::json_error_reason reason;
    std::string_view pointer;
  };
  const row rows[] = {
      {R"({"a": 1, "a": 2})", te::json_error_reason::duplicate_key, "/a"},
      {R"({"x": {"a": 1, "a": 2}})", te::json_error_reason::duplicate_key, "/x/a"},
      {R"([1, 2,])", te::json_error_reason::invalid_json, ""},
      {"", te::json_error_reason::invalid_json, ""},
      {"[\"\xff\"]", te::json_error_reason::invalid_json, ""},
      {"[1e999]", te::json_error_reason::invalid_json, ""},
      {"{\"a\": tru}", te::json_error_reason::invalid_json, ""},
  };
  for (const auto& r : rows) {
    const auto e = error_of([&] { (void)te::parse_untrusted_json(r.text); });
    ASSERT_TRUE(e) << r.text;
    EXPECT_EQ(e->reason(), r.reason) << r.text << ": " << e->what();
    EXPECT_EQ(e->pointer(), r.pointer) << r.text;
    EXPECT_TRUE(is_valid_utf8(e->what())) << r.text;
  }
  // Shape errors of the bridge carry the default reason.
  const auto shape = error_of([] { (void)te::parse_tool_calls(std::string_view(R"([{"name": 7}])")); });
  ASSERT_TRUE(shape);
  EXPECT_EQ(shape->reason(), te::json_error_reason::invalid_value);
  EXPECT_EQ(shape->pointer(), "/0/name");
}

TEST(BoundedParse, ManifestsUseTheSameBound) {
  const auto e = error_of([] { (void)te::parse_manifest(R"({"tools": )" + nested_text(70) + "}"); });
  ASSERT_TRUE(e);
  EXPECT_NE(std::string(e->what()).find("nesting deeper than 64 levels"), std::string::npos) << e->what();
}

// ---------------------------------------------------------------- values the library did not parse

TEST(DepthCheck, AgreesWithTheParseOnArraysAndObjects) {
  for (const bool objects : {false, true}) {
    EXPECT_NO_THROW(te::check_json_depth(nested(64, objects)));
    const auto e = error_of([&] { te::check_json_depth(nested(65, objects)); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->reason(), te::json_error_reason::too_deep);
    const auto parsed = error_of([&] { (void)te::parse_untrusted_json(nested(65, objects).dump()); });
    ASSERT_TRUE(parsed);
    EXPECT_EQ(e->pointer(), parsed->pointer()) << "one bound, one pointer, parsed or not";
  }
  EXPECT_NO_THROW(te::check_json_depth(json(7), 1));
  EXPECT_THROW(te::check_json_depth(json::array({json::array()}), 1), te::json_error);
}

TEST(DepthCheck, ToolCallsFromADeepApplicationValueAreRefusedNotACrash) {
  // The probe: an object nested 10^5 deep that the application parsed itself.
  for (const bool objects : {false, true}) {
    json turn = json::array({json{{"id", "a"}, {"name", "f"}, {"arguments", json::object()}}});
    turn[0]["arguments"]["deep"] = nested(100000, objects);
    const auto e = error_of([&] { (void)te::parse_tool_calls(turn); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->reason(), te::json_error_reason::too_deep);
    EXPECT_EQ(e->pointer().rfind("/0/arguments/deep/", 0), 0u) << e->pointer().substr(0, 40);
  }
  // Within the bound the same shape parses.
  json ok = json::array({json{{"name", "f"}, {"arguments", json{{"deep", nested(60, true)}}}}});
  EXPECT_EQ(te::parse_tool_calls(ok).at(0).arguments.at("deep"), nested(60, true));
}

// Control: what the check prevents. nlohmann::json's copy is recursive, so a
// copy of a value nested 10^6 deep overflows the stack and kills the process.
TEST(DepthCheckDeathTest, WithoutTheCheckACopyOfADeepValueCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const json deep = nested(1000000, false);
  EXPECT_DEATH(
      {
        json copy = deep;
        std::fprintf(stderr, "survived %d\n", static_cast<int>(copy.size()));
      },
      "");
}

TEST(DepthCheck, DeepResultsAreAnsweredAsErrorsInEveryDialect) {
  // The probe: an MCP tool result whose structuredContent nests 10^5 deep.
  json result = json::object();
  result["structuredContent"] = nested(100000, true);
  std::vector<te::outcome<json>> outcomes;  // moved in: a copy of `result` would itself overflow the stack
  outcomes.push_back(te::outcome<json>::success(std::move(result)));
  outcomes.push_back(te::outcome<json>::success(json{{"ok", nested(60, false)}}));
  for (const auto dialect : {te::tool_call_dialect::mcp, te::tool_call_dialect::plain, te::tool_call_dialect::gemini,
                             te::tool_call_dialect::anthropic, te::tool_call_dialect::openai_chat,
                             te::tool_call_dialect::openai_responses}) {
    std::vector<te::tool_call> calls(2);
    calls[0].id = "deep";
    calls[0].name = "mcp_tool";
    calls[0].dialect = dialect;
    calls[1].id = "fine";
    calls[1].name = "mcp_tool";
    calls[1].dialect = dialect;
    const json answers = te::tool_results(calls, outcomes);
    const std::string text = answers.dump();  // must not recurse into the deep value: it is not there
    EXPECT_NE(text.find("tool_error: the result of mcp_tool is nested deeper than 64 levels (at "
                        "/structuredContent/a/a/"),
              std::string::npos)
        << te::to_string(dialect);
    EXPECT_NE(text.find("[[[[[[[[[["), std::string::npos) << "the shallow result is answered in full";
  }
}

// ---------------------------------------------------------------- unique call identity

namespace {
// A dynamic write_file tool (target: path) that records the idempotency key and contents of every attempt.
struct recorder {
  std::mutex m;
  std::vector<std::pair<std::string, std::string>> writes;  // (key, contents)
};

te::json_tool_host<> make_host(te::tool_registry<>& reg, recorder& rec) {
  te::json_tool_host<> host(reg);
  te::identity_policy p;
  p.target_arg = "path";
  host.add(te::dynamic_tool{"write_file",
                            te::describe_runtime("write_file", {te::effect::write, te::effect::idempotent},
                                                 {{"files", te::access_mode::write, {}}}),
                            p},
           [&rec](const te::attempt_context& ctx, const json& args) -> json {
             std::lock_guard lock(rec.m);
             rec.writes.emplace_back(ctx.idempotency_key, args.value("contents", ""));
             return "ok";
           });
  return host;
}

std::vector<std::string> answered_ids(const json& results) {
  std::vector<std::string> ids;
  for (const auto& r : results) ids.push_back(r.at("id").get<std::string>());
  return ids;
}
}  // namespace

TEST(CallIds, ADuplicateModelChosenIdFailsTheLaterCallAloneAndIsAnsweredDistinctly) {
  const std::string turn = R"([
    {"id": "x", "name": "write_file", "arguments": {"path": "report.txt", "contents": "the real report"}},
    {"id": "x", "name": "write_file", "arguments": {"path": "report.txt", "contents": "INJECTED"}},
    {"id": "y", "name": "write_file", "arguments": {"path": "other.txt", "contents": "fine"}}
  ])";
  const auto calls = te::parse_tool_calls(turn);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].id, "x");
  EXPECT_TRUE(calls[0].valid());
  EXPECT_EQ(calls[1].id, "x~2");
  EXPECT_FALSE(calls[1].valid());
  EXPECT_TRUE(calls[1].arguments.empty()) << "the refused call's arguments are not kept";
  EXPECT_EQ(calls[1].arguments_error,
            R"(duplicate call id "x": call 1 of this turn already has it; this call (2) was not run and is answered as "x~2")");
  EXPECT_EQ(calls[2].id, "y");

  te::tool_registry<> reg;
  recorder rec;
  auto host = make_host(reg, rec);
  const auto out = host.run(te::inline_executor{}, te::run_options{}, calls, "turn-1");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[0].has_value());
  EXPECT_TRUE(out[2].has_value());
  ASSERT_FALSE(out[1].has_value());
  ASSERT_EQ(rec.writes.size(), 2u) << "the duplicate never ran";
  for (const auto& w : rec.writes) EXPECT_NE(w.second, "INJECTED");

  const json results = te::tool_results(calls, out);
  EXPECT_EQ(answered_ids(results), (std::vector<std::string>{"x", "x~2", "y"}));
  EXPECT_EQ(results[1].at("content").get<std::string>().rfind("invalid_arguments: duplicate call id \"x\"", 0), 0u)
      << results[1].dump();
}

TEST(CallIds, ControlWithoutUniqueIdsTheTwoWritesShareOneKey) {
  // What the fix prevents: both calls target report.txt, so their identity is
  // the target, and with one id in one scope their idempotency keys are equal.
  te::identity_policy p;
  p.target_arg = "path";
  const auto real = te::identify("write_file", p, json{{"path", "report.txt"}, {"contents", "the real report"}});
  const auto injected = te::identify("write_file", p, json{{"path", "report.txt"}, {"contents", "INJECTED"}});
  EXPECT_EQ(te::idempotency_key(real, "turn-1/x"), te::idempotency_key(injected, "turn-1/x"));
  // With the ids the parse gives, they differ.
  EXPECT_NE(te::idempotency_key(real, "turn-1/x"), te::idempotency_key(injected, "turn-1/x~2"));
}

TEST(CallIds, AnExplicitIdEqualToAGeneratedOneNeverCollides) {
  // The generated id of call 1 (no id) is known in advance: it is stable.
  const std::string first = R"({"name": "write_file", "arguments": {"path": "a.txt", "contents": "one"}})";
  const std::string generated = te::parse_tool_calls("[" + first + "]").at(0).id;
  ASSERT_EQ(generated.rfind("call-1-", 0), 0u);
  for (const bool explicit_first : {false, true}) {
    const std::string spoof = R"({"id": ")" + generated +
                              R"(", "name": "write_file", "arguments": {"path": "a.txt", "contents": "two"}})";
    // The spoofing call is second (it names call 1's generated id) or, in
    // the other order, the call without an id is second.
    const std::string turn = explicit_first ? "[" + spoof + "," + first + "]" : "[" + first + "," + spoof + "]";
    const auto calls = te::parse_tool_calls(turn);
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_TRUE(calls[0].valid() && calls[1].valid()) << "neither is a duplicate: both run";
    EXPECT_NE(calls[0].id, calls[1].id);
    const te::tool_call& explicit_call = explicit_first ? calls[0] : calls[1];
    const te::tool_call& generated_call = explicit_first ? calls[1] : calls[0];
    EXPECT_EQ(explicit_call.id, generated) << "the model's id is echoed as sent";
    EXPECT_FALSE(explicit_call.generated_id);
    EXPECT_TRUE(generated_call.generated_id);
    if (!explicit_first) {
      EXPECT_EQ(generated_call.id, generated + "-2") << "the generated id yields";
    }

    te::tool_registry<> reg;
    recorder rec;
    auto host = make_host(reg, rec);
    const auto out = host.run(te::inline_executor{}, te::run_options{}, calls, "turn-1");
    ASSERT_TRUE(out[0].has_value() && out[1].has_value());
    ASSERT_EQ(rec.writes.size(), 2u);
    EXPECT_NE(rec.writes[0].first, rec.writes[1].first) << "two different calls, two idempotency keys";
    const auto ids = answered_ids(te::tool_results(calls, out));
    EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 2u);
  }
}

TEST(CallIds, IdsAreUniqueInEveryDialectAndMixedTurns) {
  const auto calls = te::parse_tool_calls(std::string_view(R"([
    {"type": "function", "id": "c", "function": {"name": "f", "arguments": "{}"}},
    {"type": "tool_use", "id": "c", "name": "f", "input": {}},
    {"functionCall": {"name": "f", "args": {}, "id": "c"}},
    {"type": "function_call", "call_id": "c~2", "name": "f", "arguments": "{}"},
    {"functionCall": {"name": "f", "args": {}}}
  ])"));
  std::set<std::string> ids;
  for (const auto& c : calls) EXPECT_TRUE(ids.insert(c.id).second) << c.id;
  EXPECT_TRUE(calls[0].valid());
  EXPECT_FALSE(calls[1].valid());
  EXPECT_FALSE(calls[2].valid());
  EXPECT_TRUE(calls[3].valid()) << "c~2 was the model's own id: it keeps it";
  EXPECT_EQ(calls[1].id, "c~2~2");
  EXPECT_EQ(calls[2].id, "c~3");
}

TEST(CallIds, TheHostRefusesDuplicateIdsAndDeepArgumentsOfCallsItDidNotParse) {
  te::tool_registry<> reg;
  recorder rec;
  auto host = make_host(reg, rec);
  std::vector<te::tool_call> calls(3);
  for (auto& c : calls) {
    c.id = "same";
    c.name = "write_file";
    c.arguments = json{{"path", "p"}, {"contents", "c"}};
  }
  calls[2].id = "deep";
  calls[2].arguments["x"] = nested(100000, true);
  const auto plan = host.plan(calls);
  EXPECT_FALSE(plan.failures[0]);
  ASSERT_TRUE(plan.failures[1]);
  EXPECT_EQ(plan.failures[1]->reason, te::failure_reason::invalid_arguments);
  EXPECT_EQ(plan.failures[1]->last_error_message,
            R"(duplicate call id "same": call 1 of this turn already has it; this call (2) was not run)");
  ASSERT_TRUE(plan.failures[2]);
  EXPECT_EQ(plan.failures[2]->last_error_message.rfind("arguments of write_file are nested deeper than 64 levels (at /x/a/a/", 0), 0u);
  const auto out = host.run(te::inline_executor{}, te::run_options{}, calls, "t");
  EXPECT_TRUE(out[0].has_value());
  EXPECT_FALSE(out[1].has_value());
  EXPECT_FALSE(out[2].has_value());
  EXPECT_EQ(rec.writes.size(), 1u);
}

// ---------------------------------------------------------------- UTF-8 at every cut offset

TEST(ErrorText, QuotesAreCutAtCharacterBoundariesAtEveryOffset) {
  // Two-, three- and four-byte characters; every shift of the text moves the
  // 60-byte cut (and the 40-byte window of syntax errors) through each of
  // their bytes.
  const std::string chars = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";  // é € 😀
  std::string many;
  for (int i = 0; i < 12; ++i) many += chars;
  std::size_t checked = 0;
  for (std::size_t shift = 0; shift < 9; ++shift) {
    const std::string s = std::string(shift, 'a') + many;
    // 1. a long string value quoted by preview(): method is not "tools/call".
    const auto e1 = error_of([&] { (void)te::parse_tool_calls(json{{"method", s}, {"params", json::object()}}); });
    // 2. a non-string value quoted as canonical JSON, cut after 60 bytes.
    const auto e2 = error_of([&] { (void)te::parse_tool_calls(json{{"method", json::array({s})}, {"params", json::object()}}); });
    // 3. a syntax error with multi-byte text on both sides of it.
    const auto e3 = error_of([&] { (void)te::parse_untrusted_json("[\"" + s + "\" x \"" + s + "\"]"); });
    // 4. arguments that are not valid JSON, quoted in arguments_error.
    const auto calls = te::parse_tool_calls(json::array({json{{"name", "f"}, {"arguments", "{\"a\": \"" + s}}}));
    for (const auto& e : {e1, e2, e3}) {
      ASSERT_TRUE(e);
      EXPECT_TRUE(is_valid_utf8(e->what())) << "shift " << shift;
      EXPECT_TRUE(is_valid_utf8(e->input())) << "shift " << shift;
      ++checked;
    }
    EXPECT_TRUE(is_valid_utf8(calls.at(0).arguments_error)) << "shift " << shift;
    EXPECT_TRUE(is_valid_utf8(json(te::tool_results(calls, std::vector{te::outcome<json>::abort()})).dump()));
  }
  EXPECT_EQ(checked, 27u);
  // Bytes that are not UTF-8 at all (here inside arguments text) are quoted as U+FFFD.
  const auto bad = error_of([] { (void)te::parse_untrusted_json("[\"\xff\xfe\"]"); });
  ASSERT_TRUE(bad);
  EXPECT_TRUE(is_valid_utf8(bad->what()));
  EXPECT_NE(std::string(bad->what()).find("\xef\xbf\xbd"), std::string::npos);
}

TEST(ErrorText, ControlAByteCutSplitsCharacters) {
  // What the fix prevents: cutting the same texts after 60 bytes regardless
  // of characters gives invalid UTF-8 for most shifts.
  const std::string chars = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
  std::string many;
  for (int i = 0; i < 12; ++i) many += chars;
  int invalid = 0;
  for (std::size_t shift = 0; shift < 9; ++shift)
    invalid += !is_valid_utf8((std::string(shift, 'a') + many).substr(0, 60));
  EXPECT_GE(invalid, 5);
}

// ---------------------------------------------------------------- probes that held, kept

TEST(HeldProbes, EffectsClaimedInArgumentsChangeNothing) {
  te::tool_registry<> reg;
  recorder rec;
  auto host = make_host(reg, rec);
  const auto calls = te::parse_tool_calls(std::string_view(R"([
    {"id": "a", "name": "write_file", "arguments": {"path": "p", "effects": ["read"], "readOnlyHint": true,
                                                    "side_effects": "none", "exclusive": false}},
    {"id": "b", "name": "write_file", "arguments": {"path": "p"}}
  ])"));
  const auto plan = host.plan(calls);
  EXPECT_EQ(plan.calls[0].effects, plan.calls[1].effects) << "effects come from the declaration only";
  EXPECT_TRUE(plan.calls[0].effects.contains(te::effect::write));
  ASSERT_EQ(plan.edges.size(), 1u) << "the two writes to p still conflict";
}

TEST(HeldProbes, HostileToolNamesFailAloneWithPrintableValidMessages) {
  te::tool_registry<> reg;
  recorder rec;
  auto host = make_host(reg, rec);
  const std::vector<std::string> names{
      "write_file\r\x1b[2Kread_file", "../../etc/passwd", std::string(100000, 'w'), "write_file\xff",
      "write_file#x",                 "write_fil\xc3\xa9", std::string("write_file\0x", 12)};
  json turn = json::array();
  for (std::size_t i = 0; i < names.size(); ++i)
    turn.push_back(json{{"id", std::to_string(i)}, {"name", te::detail::valid_utf8(names[i])}, {"arguments", json::object()}});
  turn.push_back(json{{"id", "ok"}, {"name", "write_file"}, {"arguments", json{{"path", "p"}}}});
  const auto calls = te::parse_tool_calls(turn);
  const auto out = host.run(te::inline_executor{}, te::run_options{}, calls, "t");
  const json results = te::tool_results(calls, out);
  ASSERT_EQ(results.size(), names.size() + 1);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto content = results[i].at("content").get<std::string>();
    EXPECT_EQ(content.rfind("unknown_tool: ", 0), 0u) << i;
    EXPECT_EQ(content.find('\x1b'), std::string::npos) << "control characters are escaped";
    EXPECT_LT(content.size(), 400u) << "long names are cut";
  }
  EXPECT_TRUE(out.back().has_value());
  EXPECT_EQ(rec.writes.size(), 1u);
}

TEST(HeldProbes, InvalidJsonIsAnErrorNeverACrash) {
  for (const std::string_view text :
       {"", "[", "{\"name\":", "[{\"name\": \"f\"}", "nul", "[1,]", "{\"a\" 1}", "\"\\ud800\"", "[\"\\u00\"]", "\x00",
        "[{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": \"}]"}) {
    try {
      const auto calls = te::parse_tool_calls(text);
      for (const auto& c : calls) EXPECT_FALSE(c.valid()) << text;  // only the last: bad arguments fail the call
    } catch (const te::json_error& e) {
      EXPECT_TRUE(e.reason() == te::json_error_reason::invalid_json || e.reason() == te::json_error_reason::invalid_value)
          << text << ": " << e.what();
    }
  }
}

}  // namespace json_calls_hostile_test_ns
