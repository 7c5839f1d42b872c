// Client capabilities (issue 20, point 4) against test/mcp/fake_server.py:
// elicitation (form mode, SEP-1034 defaults, the content checked against the
// schema), sampling and roots as handlers the application supplies — declared
// only when set, refused without — and progress tokens that reach the call
// (and, through add_mcp_server, the host) that asked. Each protection has its
// control; every hostile request (huge, deep, a flood, a throwing or hanging
// handler) fails alone and the connection lives on.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

namespace mcp_capabilities_test_ns {

namespace te = tool_effects;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

te::mcp_client_options fast_options() { return mcp_test::fast_options(std::chrono::seconds(20)); }

// The JSON-RPC response the fake server got for its request (tools elicit, sample, roots).
using mcp_test::response_of;

json elicit(te::mcp_client& c, const json& params = nullptr) {
  json args = json::object();
  if (!params.is_null()) args["params"] = params;
  return response_of(c.call("elicit", args));
}

json schema_of(json properties, json required = json::array()) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

using mcp_test::error_code;
using mcp_test::error_message;

// The pointer of the json_error `f` throws, or "no error".
std::string pointer_of(const std::function<void()>& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const te::json_error& e) {
    if (what) *what = e.what();
    return e.pointer();
  }
  return "no error";
}

const json sep1034_defaults = {
    {"name", "John Doe"}, {"age", 30}, {"score", 95.5}, {"status", "active"}, {"verified", true}};

}  // namespace

TEST(McpCapabilities, DeclaredInInitializeOnlyForWhatHasAHandler) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto bare = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  EXPECT_EQ(bare.call("caps")["structuredContent"]["capabilities"], json::object());
  bare.close();

  auto o = fast_options();
  o.on_elicitation = [](const te::mcp_elicitation_request&) { return te::mcp_elicitation_response::decline(); };
  auto only_elicitation = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_EQ(only_elicitation.call("caps")["structuredContent"]["capabilities"],
            json::parse(R"({"elicitation": {"form": {}}})"));
  only_elicitation.close();

  o.on_sampling = [](const te::mcp_sampling_request&) { return json::object(); };
  o.roots = [] { return std::vector<te::mcp_root>{}; };
  auto all = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_EQ(all.call("caps")["structuredContent"]["capabilities"],
            json::parse(R"({"elicitation": {"form": {}}, "sampling": {}, "roots": {"listChanged": true}})"));
  all.close();
}

TEST(McpCapabilities, ElicitationIsRefusedWithoutAHandlerAndAnsweredWithOne) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  auto bare = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  const json refused = elicit(bare);
  EXPECT_EQ(error_code(refused), -32601) << refused;  // as before this capability existed
  bare.close();

  auto o = fast_options();
  std::mutex m;
  std::vector<te::mcp_elicitation_request> seen;
  o.on_elicitation = [&](const te::mcp_elicitation_request& r) {
    const std::lock_guard lock(m);
    seen.push_back(r);
    return te::mcp_elicitation_response::accept({{"name", "Ann"}, {"age", 41}});
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  const json answered = elicit(client);
  ASSERT_EQ(error_code(answered), 0) << answered;
  EXPECT_EQ(answered["result"]["action"], "accept");
  json expected = sep1034_defaults;  // what the user gave wins over the defaults; the rest are filled in
  expected["name"] = "Ann";
  expected["age"] = 41;
  EXPECT_EQ(answered["result"]["content"], expected);
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].server, "fake");
  EXPECT_EQ(seen[0].message, "Test client default value handling");
  EXPECT_EQ(seen[0].requested_schema["properties"]["age"]["default"], 30);
  client.close();
}

TEST(McpCapabilities, Sep1034DefaultsFillWhatTheUserLeftOutAndNothingElse) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  auto o = fast_options();
  o.on_elicitation = [](const te::mcp_elicitation_request&) { return te::mcp_elicitation_response::accept(); };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  // The conformance suite's elicitation-sep1034-client-defaults schema: every field optional, with a default.
  const json with_defaults = elicit(client);
  EXPECT_EQ(with_defaults["result"], json({{"action", "accept"}, {"content", sep1034_defaults}})) << with_defaults;
  // Control: the same fields without defaults stay absent (nothing is invented).
  json props = {{"name", {{"type", "string"}}}, {"age", {{"type", "integer"}}}, {"verified", {{"type", "boolean"}}}};
  const json without = elicit(client, {{"message", "m"}, {"requestedSchema", schema_of(props)}});
  EXPECT_EQ(without["result"], json({{"action", "accept"}, {"content", json::object()}})) << without;
  // A required field without a default that the user left out fails that request, naming it.
  const json missing = elicit(client, {{"message", "m"}, {"requestedSchema", schema_of(props, {"age"})}});
  EXPECT_EQ(error_code(missing), -32603) << missing;
  EXPECT_NE(error_message(missing).find("at /content/age: missing"), std::string::npos) << missing;
  client.close();
}

TEST(McpCapabilities, DeclineAndCancelCarryNoContent) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  auto o = fast_options();
  std::atomic<int> n{0};
  o.on_elicitation = [&](const te::mcp_elicitation_request&) {
    return n++ == 0 ? te::mcp_elicitation_response::decline() : te::mcp_elicitation_response::cancel();
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_EQ(elicit(client)["result"], json({{"action", "decline"}}));
  EXPECT_EQ(elicit(client)["result"], json({{"action", "cancel"}}));
  client.close();
}

TEST(McpCapabilities, ContentThatDoesNotFitTheSchemaFailsThatRequestAlone) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  auto o = fast_options();
  std::mutex m;
  json next;
  o.on_elicitation = [&](const te::mcp_elicitation_request&) {
    const std::lock_guard lock(m);
    return te::mcp_elicitation_response::accept(next);
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  const int pid = client.pid();
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"age", "thirty"}}, "at /content/age: expected an integer, got string"},
      {{{"age", 30.5}}, "at /content/age: expected an integer, got number"},
      {{{"status", "gone"}}, "at /content/status: \"gone\" is not one of the schema's options"},
      {{{"verified", "yes"}}, "at /content/verified: expected a boolean, got string"},
      {{{"extra", 1}}, "at /content/extra: not a property of the requested schema"},
  };
  for (const auto& [content, message] : cases) {
    {
      const std::lock_guard lock(m);
      next = content;
    }
    const json r = elicit(client);
    EXPECT_EQ(error_code(r), -32603) << r;
    EXPECT_NE(error_message(r).find(message), std::string::npos) << message << "\n" << r;
  }
  {
    const std::lock_guard lock(m);
    next = {{"age", 7}};  // control: content that fits goes through, on the same server
  }
  const json ok = elicit(client);
  EXPECT_EQ(ok["result"]["content"]["age"], 7) << ok;
  EXPECT_EQ(client.pid(), pid);
  client.close();
}

TEST(McpCapabilities, TheContentCheckCoversEveryKeywordItReads) {
  const json schema = schema_of(
      {{"mail", {{"type", "string"}, {"format", "email"}}},
       {"site", {{"type", "string"}, {"format", "uri"}}},
       {"day", {{"type", "string"}, {"format", "date"}}},
       {"at", {{"type", "string"}, {"format", "date-time"}}},
       {"nick", {{"type", "string"}, {"minLength", 2}, {"maxLength", 4}}},
       {"n", {{"type", "number"}, {"minimum", 0}, {"maximum", 1.5}}},
       {"size", {{"type", "string"}, {"oneOf", {{{"const", "s"}, {"title", "Small"}}, {{"const", "l"}, {"title", "Large"}}}}}},
       {"tags", {{"type", "array"}, {"items", {{"type", "string"}, {"enum", {"a", "b", "c"}}}}, {"minItems", 1}, {"maxItems", 2}}},
       {"legacy", {{"type", "string"}, {"enum", {"x", "y"}}, {"enumNames", {"Ex", "Why"}}}}},
      {"nick"});
  const json good = {{"mail", "a@b.example"}, {"site", "https://example.com/x"}, {"day", "2025-11-25"},
                     {"at", "2025-11-25T07:35:00.5+01:00"}, {"nick", "äbc"}, {"n", 1.5}, {"size", "l"},
                     {"tags", {"a", "c"}}, {"legacy", "y"}};
  EXPECT_EQ(te::mcp_elicitation_content(schema, good), good);  // control: all of it fits
  const json whole = schema_of({{"k", {{"type", "integer"}, {"default", 30.0}}}});  // JSON Schema: 30.0 is an integer
  EXPECT_EQ(te::mcp_elicitation_content(whole, json::object())["k"], 30.0);
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"mail", "no-at-sign"}}, "/content/mail"},   {{{"site", "not a uri"}}, "/content/site"},
      {{{"day", "2025-13-01"}}, "/content/day"},     {{{"at", "2025-11-25 07:35"}}, "/content/at"},
      {{{"nick", "a"}}, "/content/nick"},            {{{"nick", "abcde"}}, "/content/nick"},
      {{{"n", -1}}, "/content/n"},                   {{{"n", 2}}, "/content/n"},
      {{{"size", "Small"}}, "/content/size"},        {{{"tags", json::array()}}, "/content/tags"},
      {{{"tags", {"a", "b", "c"}}}, "/content/tags"}, {{{"tags", {"a", "z"}}}, "/content/tags/1"},
      {{{"legacy", "Ex"}}, "/content/legacy"},       {json::object(), "/content/nick"},
  };
  for (const auto& [delta, pointer] : bad) {
    json content = {{"nick", "ab"}};
    content.update(delta);
    if (delta.empty()) content = json::object();
    EXPECT_EQ(pointer_of([&] { (void)te::mcp_elicitation_content(schema, content); }), pointer) << delta;
  }
  // The schema is checked first, defaults included: pointers into /requestedSchema.
  const std::vector<std::pair<json, std::string>> bad_schemas = {
      {schema_of({{"x", {{"type", "object"}}}}), "/requestedSchema/properties/x/type"},
      {schema_of({{"x", {{"type", "integer"}, {"default", "3"}}}}), "/requestedSchema/properties/x/default"},
      {schema_of({{"x", {{"type", "string"}, {"format", "hostname"}}}}), "/requestedSchema/properties/x/format"},
      {schema_of({{"x", {{"type", "array"}, {"items", {{"type", "string"}}}}}}), "/requestedSchema/properties/x/items"},
      {schema_of({{"a/b", {{"type", "string"}, {"enum", json::array()}}}}), "/requestedSchema/properties/a~1b/enum"},
      {schema_of({{"x", {{"type", "string"}}}}, {"y"}), "/requestedSchema/required/0"},
      {json{{"type", "array"}}, "/requestedSchema/type"},
  };
  for (const auto& [bad_schema, pointer] : bad_schemas) {
    const json& schema_under_test = bad_schema;
    EXPECT_EQ(pointer_of([&] { (void)te::mcp_elicitation_content(schema_under_test, json::object()); }), pointer)
        << bad_schema;
  }
}

TEST(McpCapabilities, ABadOrHugeSchemaIsRefusedBeforeTheHandlerSeesIt) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  auto o = fast_options();
  std::atomic<int> calls{0};
  o.on_elicitation = [&](const te::mcp_elicitation_request&) {
    ++calls;
    return te::mcp_elicitation_response::accept();
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  const int pid = client.pid();
  const json nested = elicit(client, {{"message", "m"},
                                      {"requestedSchema", schema_of({{"x", {{"type", "object"}, {"properties", json::object()}}}})}});
  EXPECT_EQ(error_code(nested), -32602) << nested;
  EXPECT_NE(error_message(nested).find("at /params/requestedSchema/properties/x/type: unsupported type \"object\""),
            std::string::npos)
      << nested;
  const json url_mode = elicit(client, {{"mode", "url"}, {"message", "m"}, {"url", "https://x"}, {"elicitationId", "1"}});
  EXPECT_EQ(error_code(url_mode), -32602) << url_mode;
  EXPECT_EQ(calls.load(), 0);

  // (2000, not more: nlohmann's callback parse, under the bounded parse, takes time quadratic in the members
  // of an object whose members are objects — 8000 such members take 0.8 s at -O2, 20 s at -O0)
  const json huge = response_of(client.call("elicit_big", {{"properties", 2000}}));
  EXPECT_EQ(error_code(huge), -32602) << huge;
  EXPECT_NE(error_message(huge).find("2000 properties, more than 256"), std::string::npos) << huge;
  const json long_enum = response_of(client.call("elicit_big", {{"properties", 1}, {"enum", 100000}}));
  EXPECT_NE(error_message(long_enum).find("100000 options, more than 1024"), std::string::npos) << long_enum;
  const json deep = response_of(client.call("elicit_deep", {{"depth", 100}}));
  EXPECT_EQ(error_code(deep), -32600) << deep;  // the bounded parse refused it; the server's request alone
  EXPECT_EQ(calls.load(), 0);
  // Control: at the bound, the request reaches the handler, and every default is applied.
  const json at_bound = response_of(client.call("elicit_big", {{"properties", 255}, {"enum", 1024}}));
  ASSERT_EQ(error_code(at_bound), 0) << error_message(at_bound);
  EXPECT_EQ(at_bound["result"]["content"].size(), 256U);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(client.pid(), pid);
  client.close();
}

TEST(McpCapabilities, AThrowingHandlerFailsThatRequestAlone) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  auto o = fast_options();
  std::atomic<int> n{0};
  o.on_elicitation = [&](const te::mcp_elicitation_request&) -> te::mcp_elicitation_response {
    if (n++ == 0) throw std::runtime_error("the user interface is gone");
    return te::mcp_elicitation_response::accept();
  };
  o.on_sampling = [](const te::mcp_sampling_request&) -> json { throw 42; };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  const int pid = client.pid();
  const json thrown = elicit(client);
  EXPECT_EQ(error_code(thrown), -32603) << thrown;
  EXPECT_NE(error_message(thrown).find("the handler failed: the user interface is gone"), std::string::npos) << thrown;
  const json not_an_exception = response_of(client.call("sample"));
  EXPECT_EQ(error_code(not_an_exception), -32603) << not_an_exception;
  EXPECT_EQ(elicit(client)["result"]["action"], "accept");  // the next one is served
  EXPECT_EQ(client.pid(), pid);
  client.close();
}

TEST(McpCapabilities, AHangingHandlerIsAnsweredAtTheTimeoutAndTheClientGoesOn) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto o = fast_options();
  o.handler_timeout = milliseconds(300);
  o.on_elicitation = [released](const te::mcp_elicitation_request&) {
    released.wait();
    return te::mcp_elicitation_response::accept();
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  const auto start = std::chrono::steady_clock::now();
  auto pending = std::async(std::launch::async, [&] { return elicit(client); });
  EXPECT_EQ(te::mcp_text(client.call("echo", {{"text", "meanwhile"}})), "meanwhile");  // the client is not held
  const json timed_out = pending.get();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(error_code(timed_out), -32603) << timed_out;
  EXPECT_NE(error_message(timed_out).find("the handler gave no answer within 300 ms (options.handler_timeout)"),
            std::string::npos)
      << timed_out;
  EXPECT_LT(took, std::chrono::seconds(3));
  std::printf("hanging handler (timeout 300 ms): the server had its -32603 after %lld ms\n",
              static_cast<long long>(std::chrono::duration_cast<milliseconds>(took).count()));
  release.set_value();
  client.close();

  // Control: a slow handler within its timeout is answered.
  auto slow = fast_options();
  slow.handler_timeout = std::chrono::seconds(10);
  slow.on_elicitation = [](const te::mcp_elicitation_request&) {
    std::this_thread::sleep_for(milliseconds(500));
    return te::mcp_elicitation_response::accept();
  };
  auto patient = te::mcp_client::launch(pool, mcp_test::fake_server(), slow);
  EXPECT_EQ(elicit(patient)["result"]["action"], "accept");
  patient.close();
}

TEST(McpCapabilities, AHungHandlerStillCountsAfterTheServerRestarts) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls{0};
  auto o = fast_options();
  o.handler_timeout = milliseconds(200);
  o.max_handler_requests = 1;
  o.on_elicitation = [&calls, released](const te::mcp_elicitation_request&) {
    if (calls++ == 0) released.wait();  // the first one hangs until released
    return te::mcp_elicitation_response::accept();
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_EQ(error_code(elicit(client)), -32603);  // timed out; its handler still holds a thread
  const int pid = client.pid();
  EXPECT_EQ(mcp_test::error_kind([&] { (void)client.call("crash"); }), "server_exited");
  const json refused = elicit(client);  // a fresh server process, the same client: no room yet
  EXPECT_NE(client.pid(), pid);
  EXPECT_EQ(error_code(refused), -32000) << refused;
  release.set_value();
  // Control: once the hung handler returned, there is room again.
  json served;
  for (int i = 0; i < 50 && !served.contains("result"); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    served = elicit(client);
  }
  EXPECT_EQ(served["result"]["action"], "accept") << served;
  client.close();
}

TEST(McpCapabilities, AFloodOfRequestsIsBoundedByMaxHandlerRequests) {
  MCP_REQUIRE_PYTHON();
  const auto flood = [](std::size_t max_handlers, std::size_t threads, int* peak) {
    boost::asio::thread_pool pool(threads);
    auto o = fast_options();
    o.max_handler_requests = max_handlers;
    std::atomic<int> running{0};
    std::atomic<int> most{0};
    o.on_elicitation = [&](const te::mcp_elicitation_request&) {
      const int now = ++running;
      int m = most.load();
      while (now > m && !most.compare_exchange_weak(m, now)) {
      }
      std::this_thread::sleep_for(milliseconds(500));  // outlasts the burst, even on a loaded machine
      --running;
      return te::mcp_elicitation_response::accept();
    };
    auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
    const json r = client.call("flood", {{"count", 20}, {"wait", 10}})["structuredContent"]["responses"];
    client.close();
    *peak = most.load();
    std::size_t accepted = 0;
    std::size_t refused = 0;
    for (const auto& x : r) {
      if (x.is_object() && x.contains("result")) ++accepted;
      if (error_code(x) == -32000 && error_message(x).find("too many requests in flight") != std::string::npos)
        ++refused;
    }
    return std::pair{accepted, refused};
  };
  int peak = 0;
  const auto [accepted, refused] = flood(2, 3, &peak);
  EXPECT_EQ(accepted, 2U);
  EXPECT_EQ(refused, 18U);
  EXPECT_LE(peak, 2);
  // Control: with room for all of them, all 20 reach the handler.
  const auto [all, none] = flood(32, 4, &peak);
  EXPECT_EQ(all, 20U);
  EXPECT_EQ(none, 0U);
}

TEST(McpCapabilities, ARequestTheServerCancelsGetsNoAnswer) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  auto o = fast_options();
  o.on_elicitation = [](const te::mcp_elicitation_request&) {
    std::this_thread::sleep_for(milliseconds(800));
    return te::mcp_elicitation_response::accept();
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_TRUE(response_of(client.call("cancel_elicit", {{"ms", 100}})).is_null());
  // Control: not cancelled (cancelled only after the answer), it is answered.
  EXPECT_EQ(response_of(client.call("cancel_elicit", {{"ms", 2500}}))["result"]["action"], "accept");
  client.close();
}

TEST(McpCapabilities, SamplingGoesToTheHandlerAndItsResultIsChecked) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  auto bare = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  EXPECT_EQ(error_code(response_of(bare.call("sample"))), -32601);
  bare.close();

  auto o = fast_options();
  std::mutex m;
  json answer = {{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "hello"}}}, {"model", "test-model"}};
  std::vector<json> seen;
  o.on_sampling = [&](const te::mcp_sampling_request& r) {
    const std::lock_guard lock(m);
    seen.push_back(r.params);
    return answer;
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  const json ok = response_of(client.call("sample"));
  EXPECT_EQ(ok["result"], answer) << ok;
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0]["maxTokens"], 100);
  {
    const std::lock_guard lock(m);
    answer.erase("model");
  }
  const json no_model = response_of(client.call("sample"));
  EXPECT_EQ(error_code(no_model), -32603);
  EXPECT_NE(error_message(no_model).find("at /model"), std::string::npos) << no_model;
  const json no_max = response_of(client.call(
      "sample", {{"params", {{"messages", {{{"role", "user"}, {"content", {{"type", "text"}, {"text", "x"}}}}}}}}}));
  EXPECT_EQ(error_code(no_max), -32602);
  EXPECT_NE(error_message(no_max).find("at /params: missing maxTokens"), std::string::npos) << no_max;
  const json bad_role = response_of(client.call(
      "sample", {{"params", {{"messages", {{{"role", "system"}, {"content", {{"type", "text"}}}}}}, {"maxTokens", 5}}}}));
  EXPECT_NE(error_message(bad_role).find("at /params/messages/0/role"), std::string::npos) << bad_role;
  EXPECT_EQ(seen.size(), 2U);  // the two refused requests never reached the handler
  client.close();
}

TEST(McpCapabilities, RootsAreListedAndTheirChangeIsAnnounced) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  auto bare = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  EXPECT_EQ(error_code(response_of(bare.call("roots"))), -32601);
  EXPECT_THROW(bare.notify_roots_list_changed(), std::logic_error);
  bare.close();

  auto o = fast_options();
  std::mutex m;
  std::vector<te::mcp_root> roots{{"file:///workspace", "workspace"}, {"file:///tmp/x", ""}};
  o.roots = [&] {
    const std::lock_guard lock(m);
    return roots;
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_EQ(response_of(client.call("roots"))["result"],
            json::parse(R"({"roots": [{"uri": "file:///workspace", "name": "workspace"}, {"uri": "file:///tmp/x"}]})"));
  EXPECT_EQ(client.call("caps")["structuredContent"]["roots_changed"], 0);
  {
    const std::lock_guard lock(m);
    roots = {{"https://example.com", "web"}};
  }
  client.notify_roots_list_changed();
  const json bad = response_of(client.call("roots"));
  EXPECT_EQ(error_code(bad), -32603);
  EXPECT_NE(error_message(bad).find("at /roots/0/uri"), std::string::npos) << bad;
  EXPECT_EQ(client.call("caps")["structuredContent"]["roots_changed"], 1);  // sent before the calls that followed
  client.close();
}

TEST(McpCapabilities, ProgressReachesTheCallThatAskedForIt) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto o = fast_options();
  std::atomic<int> client_wide{0};
  o.on_progress = [&](const json&) { ++client_wide; };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  std::mutex m;
  std::vector<json> got;
  const json r = client.call("progress", {{"n", 3}}, std::nullopt, [&](const json& p) {
    const std::lock_guard lock(m);
    got.push_back(p);
  });
  const json token = r["structuredContent"]["token"];
  ASSERT_TRUE(token.is_string()) << r;
  EXPECT_EQ(token.get<std::string>().rfind("tool_effects/", 0), 0U);
  std::this_thread::sleep_for(milliseconds(500));
  client.ping();  // the late notification (sent 200 ms after the answer) is read by now
  {
    const std::lock_guard lock(m);
    ASSERT_EQ(got.size(), 3U);  // the late one, after the call ended, was dropped
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(got[static_cast<std::size_t>(i)]["progress"], i + 1);
      EXPECT_EQ(got[static_cast<std::size_t>(i)]["progressToken"], token);
    }
  }
  EXPECT_EQ(client_wide.load(), 0);
  // Control: a call that does not ask sends no token, and gets nothing.
  EXPECT_TRUE(client.call("progress", {{"n", 3}})["structuredContent"]["token"].is_null());
  client.close();
}

TEST(McpCapabilities, ProgressIsReachableThroughTheHost) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server({"--caps"}), fast_options());
  std::mutex m;
  std::vector<te::mcp_progress> got;
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  (void)te::add_mcp_server(host, client, te::server_trust::trusted, {}, te::mcp_naming::prefixed("fake"),
                           [&](const te::mcp_progress& p) {
                             const std::lock_guard lock(m);
                             got.push_back(p);
                           });
  const auto calls = te::parse_tool_calls(R"([{"id": "p1", "name": "fake__progress", "arguments": {"n": 2}}])");
  const auto out = host.run(pool, te::run_options{}, calls);
  ASSERT_TRUE(out[0].has_value()) << te::detail::message_of(out[0].error());
  EXPECT_TRUE(out[0].value()["structuredContent"]["token"].is_string());
  const std::lock_guard lock(m);
  ASSERT_EQ(got.size(), 2U);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].server, "fake");
    EXPECT_EQ(got[i].tool, "fake__progress");
    EXPECT_EQ(got[i].progress, static_cast<double>(i + 1));
    ASSERT_TRUE(got[i].total.has_value());
    EXPECT_EQ(*got[i].total, 2.0);
    EXPECT_EQ(got[i].message, "step " + std::to_string(i + 1));
    EXPECT_EQ(got[i].idempotency_key, got[0].idempotency_key);
  }
  // Control: registered without on_progress, its calls ask for no progress.
  te::tool_registry<> plain_registry;
  te::json_tool_host<> plain(plain_registry);
  (void)te::add_mcp_server(plain, client, te::server_trust::trusted, {}, te::mcp_naming::prefixed("fake"));
  const auto plain_out = plain.run(pool, te::run_options{}, calls);
  ASSERT_TRUE(plain_out[0].has_value()) << te::detail::message_of(plain_out[0].error());
  EXPECT_TRUE(plain_out[0].value()["structuredContent"]["token"].is_null());
  client.close();
}

TEST(McpCapabilities, AModernServerGetsItsInputThroughMrtr) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  // Control: without handlers, an InputRequiredResult fails the call, as before.
  auto bare = te::mcp_client::launch(pool, mcp_test::fake_server({"--era", "modern"}), fast_options());
  ASSERT_EQ(bare.protocol_version(), "2026-07-28");
  std::string what;
  EXPECT_EQ(mcp_test::error_kind([&] { (void)bare.call("mrtr"); }, &what), "protocol_error");
  EXPECT_NE(what.find("needs input this client cannot give"), std::string::npos) << what;
  EXPECT_EQ(bare.call("meta")["structuredContent"]["io.modelcontextprotocol/clientCapabilities"], json::object());
  bare.close();

  auto o = fast_options();
  o.on_elicitation = [](const te::mcp_elicitation_request&) { return te::mcp_elicitation_response::accept(); };
  o.on_sampling = [](const te::mcp_sampling_request&) {
    return json{{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "Paris"}}}, {"model", "m"}};
  };
  o.roots = [] { return std::vector<te::mcp_root>{{"file:///workspace", ""}}; };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server({"--era", "modern"}), o);
  const json declared = json::parse(R"({"elicitation": {"form": {}}, "sampling": {}, "roots": {"listChanged": true}})");
  EXPECT_EQ(client.call("meta")["structuredContent"]["io.modelcontextprotocol/clientCapabilities"], declared);
  const json r = client.call("mrtr")["structuredContent"];
  EXPECT_EQ(r["requestState"], "opaque-0");  // echoed as it came
  EXPECT_EQ(r["clientCapabilities"], declared);
  EXPECT_EQ(r["inputResponses"]["form"], json({{"action", "accept"}, {"content", sep1034_defaults}}));
  EXPECT_EQ(r["inputResponses"]["model"]["content"]["text"], "Paris");
  EXPECT_EQ(r["inputResponses"]["dirs"], json::parse(R"({"roots": [{"uri": "file:///workspace"}]})"));

  // Bounds: what is not declared, a bad schema, and a server that never stops asking each fail that call alone.
  auto only_form = o;
  only_form.on_sampling = nullptr;
  auto partial = te::mcp_client::launch(pool, mcp_test::fake_server({"--era", "modern"}), only_form);
  EXPECT_EQ(mcp_test::error_kind([&] { (void)partial.call("mrtr", {{"kind", "sample"}}); }, &what), "protocol_error");
  EXPECT_NE(what.find("at /result/inputRequests/model/method: \"sampling/createMessage\" is not a capability this "
                      "client declares"),
            std::string::npos)
      << what;
  EXPECT_EQ(mcp_test::error_kind([&] { (void)partial.call("mrtr", {{"kind", "bad_schema"}}); }, &what), "protocol_error");
  EXPECT_NE(what.find("at /result/inputRequests/form/params/requestedSchema/properties/x/type"), std::string::npos)
      << what;
  EXPECT_EQ(mcp_test::error_kind([&] { (void)partial.request("resources/list"); }, &what), "protocol_error");
  EXPECT_NE(what.find("resources/list at /result/resultType: \"input_required\" is not allowed here"), std::string::npos)
      << what;
  EXPECT_EQ(mcp_test::error_kind([&] { (void)partial.call("mrtr", {{"kind", "forever"}}); }, &what), "protocol_error");
  EXPECT_NE(what.find("the server asked for input 8 times in a row"), std::string::npos) << what;
  EXPECT_EQ(partial.call("mrtr", {{"kind", "elicit"}})["structuredContent"]["inputResponses"]["form"]["action"],
            "accept");  // the same server, served again
  partial.close();
  client.close();
}

// The real thing: @modelcontextprotocol/server-everything registers its elicitation, sampling and roots tools
// only for a client that declares the capability, and its elicitation schema uses every primitive form of
// 2025-11-25 (formats, bounds, untitled/titled/legacy enums, multi-selects) with defaults.
TEST(McpCapabilities, ServerEverythingElicitsSamplesListsRootsAndReportsProgress) {
  MCP_REQUIRE_NODE_SERVERS();
  const std::vector<std::string> argv{"node", mcp_test::server_script("server-everything", "index.js")};
  boost::asio::thread_pool pool(3);
  const auto names_of = [](const json& list) {
    std::vector<std::string> out;
    for (const auto& t : list["tools"]) out.push_back(t["name"].get<std::string>());
    return out;
  };
  const auto has = [](const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  // Control: declaring nothing, the server offers none of those tools.
  auto bare = te::mcp_client::launch(pool, argv, fast_options());
  const auto bare_tools = names_of(bare.list_tools());
  EXPECT_FALSE(has(bare_tools, "trigger-elicitation-request"));
  EXPECT_FALSE(has(bare_tools, "trigger-sampling-request"));
  EXPECT_FALSE(has(bare_tools, "get-roots-list"));
  bare.close();

  auto o = fast_options();
  std::mutex m;
  json schema_seen;
  json sampled;
  std::vector<te::mcp_root> roots{{"file:///workspace", "workspace"}};
  o.on_elicitation = [&](const te::mcp_elicitation_request& r) {
    const std::lock_guard lock(m);
    schema_seen = r.requested_schema;
    return te::mcp_elicitation_response::accept({{"name", "Ann"}, {"email", "ann@example.com"}});
  };
  o.on_sampling = [&](const te::mcp_sampling_request& r) {
    const std::lock_guard lock(m);
    sampled = r.params;
    return json{{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "sampled-answer"}}}, {"model", "test-model"}};
  };
  o.roots = [&] {
    const std::lock_guard lock(m);
    return roots;
  };
  auto client = te::mcp_client::launch(pool, argv, o);
  const auto tools = names_of(client.list_tools());
  ASSERT_TRUE(has(tools, "trigger-elicitation-request"));
  ASSERT_TRUE(has(tools, "trigger-sampling-request"));
  ASSERT_TRUE(has(tools, "get-roots-list"));

  const std::string elicited = te::mcp_text(client.call("trigger-elicitation-request"));
  const auto raw_at = elicited.find("Raw result: ");
  ASSERT_NE(raw_at, std::string::npos) << elicited;
  const json raw = json::parse(elicited.substr(raw_at + 12));
  EXPECT_EQ(raw["action"], "accept");
  EXPECT_EQ(raw["content"]["name"], "Ann");                                          // the user's
  EXPECT_EQ(raw["content"]["firstLine"], "It was a dark and stormy night.");         // SEP-1034 defaults:
  EXPECT_EQ(raw["content"]["integer"], 42);
  EXPECT_EQ(raw["content"]["untitledMultipleSelectEnum"], json::array({"Guitar"}));
  EXPECT_EQ(raw["content"]["titledSingleSelectEnum"], "hero-1");
  EXPECT_EQ(raw["content"]["legacyTitledEnum"], "pet-1");
  EXPECT_FALSE(raw["content"].contains("homepage"));  // no default, left out: stays out
  {
    const std::lock_guard lock(m);
    EXPECT_GE(schema_seen["properties"].size(), 12U);
  }

  const std::string sample = te::mcp_text(client.call("trigger-sampling-request", {{"prompt", "hi"}, {"maxTokens", 5}}));
  EXPECT_NE(sample.find("sampled-answer"), std::string::npos) << sample;
  {
    const std::lock_guard lock(m);
    EXPECT_EQ(sampled["maxTokens"], 5);
  }

  EXPECT_NE(te::mcp_text(client.call("get-roots-list")).find("URI: file:///workspace"), std::string::npos);
  {
    const std::lock_guard lock(m);
    roots.push_back({"file:///data", "data"});
  }
  client.notify_roots_list_changed();  // the server asks again
  std::string listed;
  for (int i = 0; i < 100 && listed.find("file:///data") == std::string::npos; ++i) {
    std::this_thread::sleep_for(milliseconds(50));
    listed = te::mcp_text(client.call("get-roots-list"));
  }
  EXPECT_NE(listed.find("URI: file:///data"), std::string::npos) << listed;

  std::vector<json> progress;
  (void)client.call("trigger-long-running-operation", {{"duration", 0.3}, {"steps", 3}}, std::nullopt,
                    [&](const json& p) {
                      const std::lock_guard lock(m);
                      progress.push_back(p);
                    });
  {
    const std::lock_guard lock(m);
    ASSERT_EQ(progress.size(), 3U);
    EXPECT_EQ(progress[2]["progress"], 3);
    EXPECT_EQ(progress[2]["total"], 3);
  }
  client.close();
}

}  // namespace mcp_capabilities_test_ns
