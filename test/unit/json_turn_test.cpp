// Model turns given as JSON: parsing the three call shapes and their errors,
// planning against a registry with call targets, and running the calls.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/json.hpp>

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
  EXPECT_EQ(names(calls), (std::vector<std::string>{"a:read_file:{\"path\":\"x\"}", "b:read_file:{\"path\":\"y\"}",
                                                    "c:search_web:{\"q\":1}", "call-4:search_web:{}"}));
}

TEST(ParseToolCalls, ErrorsNameTheCallAndTheField) {
  auto error_of = [](const char* text) {
    try {
      (void)te::parse_tool_calls(text);
    } catch (const te::json_error& e) {
      return e.pointer() + " | " + e.what();
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(R"({"name": "x"})"), " | at (root): expected an array of tool calls, got object: \"{\\\"name\\\":\\\"x\\\"}\"");
  EXPECT_EQ(error_of(R"([{"name": "a"}, {"nmae": "b"}])").substr(0, 9), "/1/nmae |");
  EXPECT_EQ(error_of(R"([{"id": 7, "name": "a"}])").substr(0, 7), "/0/id |");
  EXPECT_EQ(error_of(R"([{"name": ""}])").substr(0, 9), "/0/name |");
  EXPECT_EQ(error_of(R"([{"id": "z"}])").substr(0, 9), "/0/name |");
  EXPECT_EQ(error_of(R"([{"name": "a", "arguments": [1]}])").substr(0, 14), "/0/arguments |");
  EXPECT_EQ(error_of(R"([{"function": {"name": "a", "arguments": "{oops"}}])").substr(0, 25), "/0/function/arguments | a");
  EXPECT_EQ(error_of(R"([{"name": "a", "arguments": {}, "input": {}}])").substr(0, 10), "/0/input |");
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

TEST(JsonToolHost, UnknownToolIsAnErrorNamingIt) {
  registry reg;
  te::json_tool_host host(reg);
  const auto calls = te::parse_tool_calls(R"([{"name": "read_fiel", "arguments": {}}])");
  try {
    (void)host.plan(calls);
    FAIL() << "an unknown tool was planned";
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
