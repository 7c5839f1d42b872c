// Sampling with tools (2025-11-25, client/sampling "Tools in Sampling")
// against test/mcp/fake_server.py: `sampling.tools` declared only when the
// application asks (options.sampling_tools), tool-enabled requests refused
// without it (the control: the same request is served with it), the tool
// loop's balance checked before the handler sees a request, and the
// handler's result checked against what the request offered.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

namespace mcp_sampling_tools_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {

const json weather_tool = {{"name", "get_weather"},
                           {"description", "Current weather"},
                           {"inputSchema", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}};

json text(const std::string& t) { return {{"type", "text"}, {"text", t}}; }
json use(const std::string& id, const std::string& city) {
  return {{"type", "tool_use"}, {"id", id}, {"name", "get_weather"}, {"input", {{"city", city}}}};
}
json result_of(const std::string& id) {
  return {{"type", "tool_result"}, {"toolUseId", id}, {"content", json::array({text("18 C")})}};
}
json message(const std::string& role, json content) { return {{"role", role}, {"content", std::move(content)}}; }

json request(json messages, json tools = json::array({weather_tool})) {
  json p = {{"messages", std::move(messages)}, {"maxTokens", 100}};
  if (!tools.is_null()) p["tools"] = std::move(tools);
  return p;
}
const json question = json::array({message("user", text("Weather in Paris and London?"))});

// The JSON-RPC response the fake server got for its sampling/createMessage.
json sample(te::mcp_client& c, const json& params) {
  return c.call("sample", {{"params", params}}).at("structuredContent").at("response");
}
using mcp_test::error_code;
using mcp_test::error_message;

// A client whose sampling handler answers `answer` and counts its calls.
struct model {
  std::mutex m;
  json answer;
  int calls = 0;
  te::mcp_client_options options(bool tools) {
    auto o = mcp_test::fast_options(std::chrono::seconds(20));
    o.sampling_tools = tools;
    o.on_sampling = [this](const te::mcp_sampling_request&) {
      const std::lock_guard lock(m);
      ++calls;
      return answer;
    };
    return o;
  }
  void set(json a) {
    const std::lock_guard lock(m);
    answer = std::move(a);
  }
};

json assistant(json content, const char* stop = nullptr) {
  json r = {{"role", "assistant"}, {"content", std::move(content)}, {"model", "test-model"}};
  if (stop) r["stopReason"] = stop;
  return r;
}

}  // namespace

TEST(McpSamplingTools, DeclaredOnlyWhenTheApplicationAsks) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  model plain, with_tools;
  auto a = te::mcp_client::launch(pool, mcp_test::fake_server(), plain.options(false));
  EXPECT_EQ(a.call("caps")["structuredContent"]["capabilities"], json::parse(R"({"sampling": {}})"));
  a.close();
  auto b = te::mcp_client::launch(pool, mcp_test::fake_server(), with_tools.options(true));
  EXPECT_EQ(b.call("caps")["structuredContent"]["capabilities"], json::parse(R"({"sampling": {"tools": {}}})"));
  b.close();
}

TEST(McpSamplingTools, AToolRequestIsRefusedWithoutTheDeclarationAndServedWithIt) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  const json uses = assistant(json::array({use("c1", "Paris"), use("c2", "London")}), "toolUse");
  model plain;
  plain.set(uses);
  auto old = te::mcp_client::launch(pool, mcp_test::fake_server(), plain.options(false));
  const json refused = sample(old, request(question));
  EXPECT_EQ(error_code(refused), -32602) << refused;
  EXPECT_NE(error_message(refused).find("at /params/tools: sampling with tools is not declared"), std::string::npos)
      << refused;
  json choice_only = request(question, nullptr);
  choice_only["toolChoice"] = {{"mode", "auto"}};
  EXPECT_NE(error_message(sample(old, choice_only)).find("at /params/toolChoice"), std::string::npos);
  EXPECT_EQ(plain.calls, 0);
  old.close();

  model m;
  m.set(uses);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), m.options(true));
  const json first = sample(client, request(question));
  ASSERT_EQ(error_code(first), 0) << first;
  EXPECT_EQ(first["result"], uses);
  // The loop's next round: the tool uses and their results, then a final answer.
  m.set(assistant(text("Paris is warmer."), "endTurn"));
  json history = question;
  history.push_back(message("assistant", json::array({use("c1", "Paris"), use("c2", "London")})));
  history.push_back(message("user", json::array({result_of("c2"), result_of("c1")})));  // any order
  const json second = sample(client, request(history));
  ASSERT_EQ(error_code(second), 0) << second;
  EXPECT_EQ(second["result"]["content"], text("Paris is warmer."));
  EXPECT_EQ(m.calls, 2);
  client.close();
}

TEST(McpSamplingTools, AnUnbalancedOrMalformedToolLoopNeverReachesTheHandler) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  model m;
  m.set(assistant(text("ok")));
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), m.options(true));
  const json uses = message("assistant", json::array({use("c1", "Paris"), use("c2", "London")}));
  // (a vector, not a json: `{one_message}` would be that message on one compiler and [it] on another)
  auto with = [](std::vector<json> extra) {
    json h = question;
    for (auto& e : extra) h.push_back(std::move(e));
    return h;
  };
  json many_tools = json::array();
  for (int i = 0; i < 129; ++i) {
    json t = weather_tool;
    t["name"] = "t" + std::to_string(i);
    many_tools.push_back(std::move(t));
  }
  json bad_choice = request(question);
  bad_choice["toolChoice"] = {{"mode", "always"}};
  const std::vector<std::pair<json, std::string>> bad = {
      {request(with({uses, message("user", json::array({result_of("c1")}))})), "/params/messages/2/content"},
      {request(with({uses, message("user", json::array({result_of("c1"), result_of("c2"), result_of("c3")}))})),
       "/params/messages/2/content"},
      {request(with({uses, message("user", json::array({result_of("c1"), result_of("c2"), text("and")}))})),
       "/params/messages/2/content"},
      {request(with({uses, message("user", text("never mind"))})), "/params/messages/2/content"},
      {request(with({uses})), "/params/messages/1/content"},  // the last message's uses have no results
      {request(with({message("user", json::array({result_of("c9")}))})), "/params/messages/1/content"},
      {request(with({message("user", json::array({use("c1", "Paris")}))})), "/params/messages/1/role"},
      {request(with({message("assistant", json::array({result_of("c1")}))})), "/params/messages/1/role"},
      {request(with({message("assistant", json::array({use("c1", "Paris"), use("c1", "Rome")}))})),
       "/params/messages/1/content"},
      {request(with({message("assistant", json{{"type", "tool_use"}, {"id", "c1"}, {"name", "get_weather"}})})),
       "/params/messages/1/content/input"},
      {request(question, json{{"name", "get_weather"}}), "/params/tools"},
      {request(question, many_tools), "/params/tools"},
      {request(question, json::array({weather_tool, weather_tool})), "/params/tools/1/name"},
      {request(question, json::array({{{"name", "x"}, {"inputSchema", {{"type", "string"}}}}})),
       "/params/tools/0/inputSchema"},
      {bad_choice, "/params/toolChoice/mode"},
  };
  for (const auto& [params, pointer] : bad) {
    const json r = sample(client, params);
    EXPECT_EQ(error_code(r), -32602) << params.dump() << " -> " << r;
    EXPECT_NE(error_message(r).find("at " + pointer), std::string::npos) << pointer << " not in " << r;
  }
  EXPECT_EQ(m.calls, 0) << "a refused request reached the handler";
  // Control: the balanced form of the first case is served.
  EXPECT_EQ(error_code(sample(client, request(with({uses, message("user", json::array({result_of("c1"),
                                                                                          result_of("c2")}))})))),
            0);
  EXPECT_EQ(m.calls, 1);
  client.close();
}

TEST(McpSamplingTools, TheHandlersResultUsesOnlyWhatTheRequestOffered) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  model m;
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), m.options(true));
  json none = request(question);
  none["toolChoice"] = {{"mode", "none"}};
  json required = request(question);
  required["toolChoice"] = {{"mode", "required"}};
  json other_tool = use("c1", "Paris");
  other_tool["name"] = "send_email";
  const std::vector<std::tuple<json, json, std::string>> bad = {
      {request(question), assistant(json::array({other_tool})), "at /content/0/name"},
      {request(question, nullptr), assistant(json::array({use("c1", "Paris")})), "at /content/0"},
      {none, assistant(json::array({use("c1", "Paris")})), "at /content/0"},
      {required, assistant(text("no tools today")), "at /content"},
      {request(question), assistant(text("done"), "toolUse"), "at /stopReason"},
      {request(question), assistant(json::array({result_of("c1")})), "at /content/0"},
      {request(question), assistant(json::array({{{"type", "tool_use"}, {"id", ""}, {"name", "get_weather"},
                                                  {"input", json::object()}}})),
       "at /content/0/id"},
  };
  for (const auto& [params, answer, pointer] : bad) {
    m.set(answer);
    const json r = sample(client, params);
    EXPECT_EQ(error_code(r), -32603) << answer.dump() << " -> " << r;
    EXPECT_NE(error_message(r).find(pointer), std::string::npos) << pointer << " not in " << r;
  }
  // Controls: each request with a fitting answer.
  m.set(assistant(json::array({use("c1", "Paris")}), "toolUse"));
  EXPECT_EQ(error_code(sample(client, required)), 0);
  m.set(assistant(text("no tools")));
  EXPECT_EQ(error_code(sample(client, none)), 0);
  client.close();
}

}  // namespace mcp_sampling_tools_test_ns
