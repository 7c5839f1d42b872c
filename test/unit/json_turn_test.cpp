// Model turns given as JSON: parsing the three call shapes and their errors,
// planning against a registry with call targets, and running the calls.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_turn_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct files {};
struct user_db {};

struct read_file {
  static constexpr std::string_view name = "read_file";
  static constexpr std::string_view target_arg = "path";
  using side_effects = te::effects<te::reads<files>>;
  json operator()(const json& args) const { return "contents of " + args.at("path").get<std::string>(); }
};
struct write_file {
  static constexpr std::string_view name = "write_file";
  static constexpr std::string_view target_arg = "path";
  using side_effects = te::effects<te::writes<files>, te::idempotent>;
  std::vector<std::string>* keys = nullptr;
  json operator()(const te::attempt_context& ctx, const json& args) const {
    if (keys) keys->push_back(ctx.idempotency_key);
    return "wrote " + args.at("path").get<std::string>();
  }
};
struct search_web {
  static constexpr std::string_view name = "search_web";
  using side_effects = te::effects<te::read, te::network>;
  json operator()(const json&) const { return json::array({"result"}); }
};

using registry = te::tool_registry<read_file, write_file, search_web>;

std::vector<std::string> names(const std::vector<te::tool_call>& calls) {
  std::vector<std::string> out;
  for (const auto& c : calls) out.push_back(c.id + ":" + c.name + ":" + c.arguments.dump());
  return out;
}
}  // namespace

TEST(ParseToolCalls, AcceptsPlainOpenAiAndAnthropicShapes) {
  const auto calls = te::parse_tool_calls(R"([
    {"id": "a", "name": "read_file", "arguments": {"path": "x"}},
    {"id": "b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"y\"}"}},
    {"type": "tool_use", "id": "c", "name": "search_web", "input": {"q": 1}},
    {"name": "search_web"}
  ])");
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(names(calls)[0], "a:read_file:{\"path\":\"x\"}");
  EXPECT_EQ(names(calls)[1], "b:read_file:{\"path\":\"y\"}");
  EXPECT_EQ(names(calls)[2], "c:search_web:{\"q\":1}");
  EXPECT_EQ(calls[3].id.substr(0, 7), "call-4-") << "a missing id is generated from the position";
  EXPECT_EQ(calls[3].id.size(), 15u);
  EXPECT_TRUE(calls[3].generated_id && !calls[0].generated_id);
  EXPECT_EQ(calls[0].dialect, te::tool_call_dialect::plain);
  EXPECT_EQ(calls[1].dialect, te::tool_call_dialect::openai_chat);
  EXPECT_EQ(calls[2].dialect, te::tool_call_dialect::anthropic);
  EXPECT_EQ(te::parse_tool_calls(R"([{"name": "search_web"}])")[0].id, calls[3].id.substr(0, 5) + "1" + calls[3].id.substr(6))
      << "the generated id depends on position, name and arguments only";
}

TEST(ParseToolCalls, UnknownEnvelopeKeysAreIgnoredAndUsedFieldsAreStrict) {
  const auto calls = te::parse_tool_calls(R"([{"id": "a", "name": "x", "arguments": {}, "status": "completed",
                                             "caller": {"type": "direct"}, "index": 0}])");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "x");
  auto error_of = [](const char* text) {
    try {
      (void)te::parse_tool_calls(text);
    } catch (const te::json_error& e) {
      return e.pointer() + " | " + e.what();
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(R"(7)"), " | at (root): expected a tool call object, message or response, got number: \"7\"");
  EXPECT_EQ(error_of(R"({"foo": 1})").substr(0, 28), " | at (root): expected tool ");
  EXPECT_EQ(error_of(R"([{"name": "a"}, {"nmae": "b"}])").substr(0, 9), "/1/name |");
  EXPECT_EQ(error_of(R"([{"id": 7, "name": "a"}])").substr(0, 7), "/0/id |");
  EXPECT_EQ(error_of(R"([{"name": ""}])").substr(0, 9), "/0/name |");
  EXPECT_EQ(error_of(R"([{"id": "z"}])").substr(0, 9), "/0/name |");
  EXPECT_EQ(error_of(R"([{"type": 3, "name": "a"}])").substr(0, 9), "/0/type |");
  EXPECT_EQ(error_of(R"([{"type": "function", "function": "f"}])").substr(0, 13), "/0/function |");
  EXPECT_EQ(error_of(R"({"output": [{"type": "function_call", "name": "f", "call_id": 1}]})").substr(0, 20),
            "/output/0/call_id | ");
  EXPECT_EQ(error_of(R"([{"name": "a", "arguments": {}, "input": {}}])").substr(0, 10), "/0/input |");
}

TEST(ParseToolCalls, BadArgumentsDoNotThrowButMarkTheCall) {
  const auto calls = te::parse_tool_calls(R"([
    {"name": "a", "arguments": [1]},
    {"function": {"name": "b", "arguments": "{oops"}},
    {"function": {"name": "c", "arguments": "\"text\""}},
    {"function": {"name": "d", "arguments": ""}},
    {"function": {"name": "e", "arguments": null}}
  ])");
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[0].arguments_error, "arguments of a must be a JSON object, got array: \"[1]\"");
  EXPECT_EQ(calls[1].arguments_error.substr(0, 35), "arguments of b are not valid JSON (");
  EXPECT_NE(calls[1].arguments_error.find("\"{oops\""), std::string::npos) << calls[1].arguments_error;
  EXPECT_EQ(calls[2].arguments_error, "arguments of c must be a JSON object, got string: \"\\\"text\\\"\"");
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(!calls[i].valid() && calls[i].arguments == json::object());
  EXPECT_TRUE(calls[3].valid() && calls[3].arguments == json::object()) << "an empty string means {}";
  EXPECT_TRUE(calls[4].valid() && calls[4].arguments == json::object());
}

TEST(JsonToolHost, PlansWithTargetsAndExplainsEveryEdge) {
  registry reg;
  te::json_tool_host host(reg);
  const auto calls = te::parse_tool_calls(R"([
    {"id": "1", "name": "write_file", "arguments": {"path": "notes/a.md"}},
    {"id": "2", "name": "write_file", "arguments": {"path": "notes/b.md"}},
    {"id": "3", "name": "read_file", "arguments": {"path": "notes/a.md"}},
    {"id": "4", "name": "search_web", "arguments": {"q": "x"}},
    {"id": "5", "name": "read_file", "arguments": {}}
  ])");
  const auto p = host.plan(calls);
  ASSERT_EQ(p.calls.size(), 5u);
  EXPECT_EQ(p.calls[2].name, "read_file#3");
  EXPECT_FALSE(p.plan.waits_for(1, 0));  // different files
  EXPECT_TRUE(p.plan.waits_for(2, 0));   // same file: read after write
  EXPECT_FALSE(p.plan.waits_for(2, 1));
  EXPECT_TRUE(p.plan.waits_for(3, 0));   // search_web reads everything
  EXPECT_TRUE(p.plan.waits_for(4, 0) && p.plan.waits_for(4, 1));  // no target: the whole resource
  EXPECT_EQ(p.plan.wave(0), 0u);
  EXPECT_EQ(p.plan.wave(2), 1u);
  std::size_t edges_to_2 = 0;
  for (const auto& e : p.edges)
    if (e.to == 2) {
      ++edges_to_2;
      EXPECT_EQ(e.from, 0u);
      EXPECT_NE(e.reason.find("notes/a.md"), std::string::npos) << e.reason;
    }
  EXPECT_EQ(edges_to_2, 1u);
  EXPECT_EQ(p.identities[0].key, "3f67d0d3-bea7-57fb-a9ee-257754e8679e");
  EXPECT_EQ(p.identities[3].key, te::identify("search_web", {}, calls[3].arguments).key);
}

TEST(JsonToolHost, UnknownToolIsAFailureOfThatCallOnly) {
  registry reg;
  te::json_tool_host host(reg);
  const auto calls = te::parse_tool_calls(R"([{"name": "read_fiel", "arguments": {}},
                                              {"name": "write_file", "arguments": {"path": "a"}},
                                              {"name": "launch_rockets", "arguments": {}}])");
  const auto p = host.plan(calls);
  ASSERT_EQ(p.failures.size(), 3u);
  ASSERT_TRUE(p.failures[0] && p.failures[2]);
  EXPECT_FALSE(p.failures[1]);
  EXPECT_EQ(p.failures[0]->reason, te::failure_reason::unknown_tool);
  EXPECT_EQ(p.failures[0]->last_error_message, "unknown tool \"read_fiel\" (did you mean \"read_file\"?)");
  EXPECT_EQ(p.failures[2]->last_error_message,
            "unknown tool \"launch_rockets\" (known: read_file write_file search_web)");
  EXPECT_EQ(p.tools[0], te::turn_plan::npos);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) EXPECT_FALSE(p.plan.waits_for(i, j)) << i << " " << j;
  try {
    (void)host.resolve(calls[0]);
    FAIL() << "resolve found an unknown tool";
  } catch (const te::unknown_tool_error& e) {
    EXPECT_EQ(e.name(), "read_fiel");
  }
}

TEST(JsonToolHost, RunsStaticAndDynamicToolsAndDerivesKeysFromIdentity) {
  std::vector<std::string> keys;
  registry reg(read_file{}, write_file{&keys}, search_web{});
  te::json_tool_host host(reg);
  std::atomic<int> audits{0};
  host.add(te::dynamic_tool{"audit", te::describe_runtime("audit", {}, {{"audit", te::access_mode::append, {}}}), {}},
           [&](const te::attempt_context&, const json& args) -> json {
             ++audits;
             return args;
           });
  const auto calls = te::parse_tool_calls(R"([
    {"id": "w", "name": "write_file", "arguments": {"path": "p"}},
    {"id": "r", "name": "read_file", "arguments": {"path": "p"}},
    {"id": "a", "name": "audit", "arguments": {"event": "x"}},
    {"id": "s", "name": "search_web", "arguments": {}}
  ])");
  for (int run = 0; run < 2; ++run) {
    boost::asio::thread_pool pool(2);
    const auto out = host.run(pool, te::run_options{}, calls, "turn-1");
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].value(), json("wrote p"));
    EXPECT_EQ(out[1].value(), json("contents of p"));
    EXPECT_EQ(out[2].value(), (json{{"event", "x"}}));
    EXPECT_EQ(out[3].value(), json::array({"result"}));
  }
  EXPECT_EQ(audits.load(), 2);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], keys[1]) << "the same call in the same scope has the same idempotency key";
  EXPECT_EQ(keys[0], te::idempotency_key(host.identify(calls[0]), "turn-1/w"));

  const auto other_scope = host.run(te::inline_executor{}, te::run_options{}, calls, "turn-2");
  EXPECT_TRUE(other_scope[0].has_value());
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_NE(keys[2], keys[0]) << "another turn gets another key";
}

TEST(ParseToolCalls, ResponsesWithoutCallsGiveNone) {
  EXPECT_TRUE(te::parse_tool_calls(R"({"choices": []})").empty());
  EXPECT_TRUE(te::parse_tool_calls(R"({"choices": [{"message": {"role": "assistant", "content": "Hi"}}]})").empty());
  EXPECT_TRUE(te::parse_tool_calls(R"({"role": "assistant", "content": null, "tool_calls": null})").empty());
  EXPECT_TRUE(te::parse_tool_calls(R"({"candidates": [{"finishReason": "SAFETY"}]})").empty());
  EXPECT_TRUE(te::parse_tool_calls(R"({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "x"}]})")
                  .empty());
  EXPECT_TRUE(te::parse_tool_calls(R"({"object": "response", "output": [{"type": "reasoning", "summary": []}]})").empty());
  EXPECT_TRUE(te::parse_tool_calls("[]").empty());
}

TEST(ParseToolCalls, LegacyFunctionCallAndSingleItems) {
  const auto legacy =
      te::parse_tool_calls(R"({"role": "assistant", "function_call": {"name": "f", "arguments": "{\"a\": 1}"}})");
  ASSERT_EQ(legacy.size(), 1u);
  EXPECT_EQ(legacy[0].arguments, (json{{"a", 1}}));
  EXPECT_TRUE(legacy[0].generated_id);
  const auto single = te::parse_tool_calls(R"({"type": "tool_use", "id": "t", "name": "f", "input": {}})");
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].dialect, te::tool_call_dialect::anthropic);
  EXPECT_EQ(te::to_string(te::tool_call_dialect::openai_responses), "openai_responses");
}

TEST(ParseToolCalls, QuotedBadInputStaysValidUtf8) {
  std::string text = R"({"x": ")";
  for (int i = 0; i < 40; ++i) text += "\xc3\xa9";  // é, two bytes each: the cut falls inside one
  json turn = json::array({json{{"name", "f"}, {"arguments", text}}});
  const auto calls = te::parse_tool_calls(turn);
  ASSERT_FALSE(calls[0].valid());
  EXPECT_NO_THROW((void)json(calls[0].arguments_error).dump()) << "a strict dump rejects invalid UTF-8";
  EXPECT_NE(calls[0].arguments_error.find("...\""), std::string::npos);
}

// Issue 19: with many tools, one unknown_tool message listed every name
// (1.2 MB with 100,000 tools). Bound stated here: with 100,000 registered
// tools (names up to 200 bytes) the message is under 2 KiB and names at most
// te::max_suggested_tools of them, and a near miss is still suggested.
TEST(JsonToolHost, UnknownToolMessageStaysShortWithManyTools) {
  constexpr std::size_t n = 100'000;
  te::tool_registry<> reg;
  te::json_tool_host host(reg);
  const std::string long_tail(180, 'z');
  for (std::size_t i = 0; i < n; ++i) {
    te::dynamic_tool t;
    t.name = "tool_" + std::to_string(i) + (i % 2 ? long_tail : "");
    t.description = te::describe_runtime(t.name, te::effect_set{te::effect::read}, {});
    (void)host.add(std::move(t), te::json_tool_function([](const te::attempt_context&, const json&) { return json(); }));
  }
  const auto calls = te::parse_tool_calls(R"([{"name": "launch_rockets", "arguments": {}},
                                              {"name": "tool_4x", "arguments": {}},
                                              {"name": "tool_77776", "arguments": {}}])");
  const auto p = host.plan(calls);
  ASSERT_TRUE(p.failures[0] && p.failures[1]);
  const std::string& far = p.failures[0]->last_error_message;
  EXPECT_LT(far.size(), 2048u) << far.substr(0, 300);
  EXPECT_EQ(far.rfind("unknown tool \"launch_rockets\" (known: tool_0 tool_1", 0), 0u) << far.substr(0, 300);
  EXPECT_NE(far.find(" and " + std::to_string(n - te::max_suggested_tools) + " more)"), std::string::npos) << far;
  EXPECT_EQ(far.find("tool_" + std::to_string(te::max_suggested_tools) + " "), std::string::npos) << far;
  EXPECT_NO_THROW((void)json(far).dump()) << "cut at character boundaries";
  const std::string& near = p.failures[1]->last_error_message;
  EXPECT_LT(near.size(), 2048u);
  EXPECT_EQ(near, "unknown tool \"tool_4x\" (did you mean \"tool_4\"?)");
  EXPECT_FALSE(p.failures[2]);  // a registered name resolves
}
}  // namespace json_turn_test_ns
