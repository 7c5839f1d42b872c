// A tool of mcp_server asks its client (mcp/server/asker.hpp): elicitation/create and
// sampling/createMessage over stdio (a scripted peer on a pipe pair: the exact request, the answer checked)
// and over Streamable HTTP (our own client's handlers answer on the call's POST stream); the capability check
// (no request goes out); a client that never answers (the ask times out, cancellation sent, the call fails
// alone); malformed answers (the error names the member); a 2026-07-28 request (MRTR, answered by our client).
#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <poll.h>
#include <unistd.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/http.hpp>
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server_http.hpp>

#include "mcp_test_support.hpp"

namespace mcp_server_ask_test_ns {

namespace te = tool_effects;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct desk : te::resource<> {
  static constexpr std::string_view resource_name = "desk";
};

const char* const age_schema = R"({"type": "object", "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0, "default": 30}}, "required": ["name"]})";

// Elicits a name and an age (the answer, checked, is the result); a failed ask fails the call with its reason.
struct ask_age {
  static constexpr std::string_view name = "ask_age";
  using side_effects = te::effects<te::reads<desk>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    const te::mcp_client_asker* a = te::mcp_client_asker_of(ctx);
    if (!a) throw std::runtime_error("no asker");
    return a->elicit("Who are you?", json::parse(age_schema));
  }
};
// Samples one answer to its prompt (the CreateMessageResult, checked, is the result).
struct ask_llm {
  static constexpr std::string_view name = "ask_llm";
  using side_effects = te::effects<te::reads<desk>>;
  json operator()(const te::attempt_context& ctx, const json& args) const {
    const te::mcp_client_asker* a = te::mcp_client_asker_of(ctx);
    if (!a) throw std::runtime_error("no asker");
    return a->create_message(
        {{"messages", json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", args.value("prompt", std::string())}}}}})},
         {"maxTokens", 50}});
  }
};
// As ask_age, a coroutine tool: it co_awaits the ask and holds no thread while the client answers.
struct ask_age_async {
  static constexpr std::string_view name = "ask_age_async";
  using side_effects = te::effects<te::reads<desk>>;
  boost::asio::awaitable<json> operator()(const te::attempt_context& ctx, const json&) const {
    const te::mcp_client_asker* a = te::mcp_client_asker_of(ctx);
    if (!a) throw std::runtime_error("no asker");
    co_return co_await a->async_elicit("Who are you?", json::parse(age_schema));
  }
};
// Answers at once (shows that the session serves other calls while one waits for its client).
struct quick {
  static constexpr std::string_view name = "quick";
  using side_effects = te::effects<te::reads<desk>>;
  json operator()(const json&) const { return "quick"; }
};
using registry = te::tool_registry<ask_age, ask_llm, quick, ask_age_async>;
using host_type = te::json_tool_host<ask_age, ask_llm, quick, ask_age_async>;

using mcp_test::pipe_peer;

// One server on stdio (a pipe pair) for a test; stops when the peer closes its input.
struct stdio_fixture {
  registry reg;
  host_type host{reg};
  boost::asio::thread_pool pool{2};
  te::mcp_server<host_type> server;
  pipe_peer peer;
  std::thread serving;
  explicit stdio_fixture(te::mcp_server_options o = {}) : server(pool, host, std::move(o)) {
    serving = std::thread([this] { server.serve_fds(peer.to_server[0], peer.from_server[1]); });
  }
  ~stdio_fixture() {
    peer.close_input();
    serving.join();
  }
  // The text of the call's result (its response to request `id`), and whether it is an error.
  static std::pair<std::string, bool> text_of(const json& response) {
    const json& r = response.at("result");
    return {r.at("content").at(0).at("text").get<std::string>(), r.value("isError", false)};
  }
};

}  // namespace

// Over stdio, a tool elicits: the request goes to the client as the tool wrote it; the accepted content is
// checked against the schema with its defaults applied (age: 30), and the call's result is the answer.
TEST(McpServerAsk, AToolElicitsOverStdio) {
  stdio_fixture f;
  f.peer.initialize({{"elicitation", json::object()}});
  f.peer.send(mcp_test::rpc(2, "tools/call", {{"name", "ask_age"}}));
  const json ask = f.peer.next();
  ASSERT_EQ(ask.value("method", ""), "elicitation/create") << ask.dump();
  EXPECT_EQ(ask["params"], (json{{"message", "Who are you?"}, {"requestedSchema", json::parse(age_schema)}}));
  f.peer.send(json{{"jsonrpc", "2.0"}, {"id", ask["id"]}, {"result", {{"action", "accept"}, {"content", {{"name", "Ada"}}}}}});
  const json response = f.peer.next();
  ASSERT_EQ(response["id"], 2) << response.dump();
  EXPECT_EQ(response["result"]["structuredContent"], json::parse(R"({"action": "accept", "content": {"name": "Ada", "age": 30}})"));
  // decline carries no content.
  f.peer.send(mcp_test::rpc(3, "tools/call", {{"name", "ask_age"}}));
  const json ask2 = f.peer.next();
  f.peer.send(json{{"jsonrpc", "2.0"}, {"id", ask2["id"]}, {"result", {{"action", "decline"}}}});
  EXPECT_EQ(f.peer.next()["result"]["structuredContent"], json::parse(R"({"action": "decline"})"));
  // A coroutine tool co_awaits the same ask.
  f.peer.send(mcp_test::rpc(4, "tools/call", {{"name", "ask_age_async"}}));
  const json ask3 = f.peer.next();
  ASSERT_EQ(ask3.value("method", ""), "elicitation/create") << ask3.dump();
  f.peer.send(json{{"jsonrpc", "2.0"}, {"id", ask3["id"]}, {"result", {{"action", "accept"}, {"content", {{"name", "Bo"}, {"age", 7}}}}}});
  EXPECT_EQ(f.peer.next()["result"]["structuredContent"], json::parse(R"({"action": "accept", "content": {"name": "Bo", "age": 7}})"));
}

// Over stdio, a tool samples: the request is the tool's params; the CreateMessageResult comes back checked.
TEST(McpServerAsk, AToolSamplesOverStdio) {
  stdio_fixture f;
  f.peer.initialize({{"sampling", json::object()}});
  f.peer.send(mcp_test::rpc(2, "tools/call", {{"name", "ask_llm"}, {"arguments", {{"prompt", "2+2?"}}}}));
  const json ask = f.peer.next();
  ASSERT_EQ(ask.value("method", ""), "sampling/createMessage") << ask.dump();
  EXPECT_EQ(ask["params"], json::parse(R"({"messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
                                           "maxTokens": 50})"));
  const json answer = json::parse(R"({"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"})");
  f.peer.send(json{{"jsonrpc", "2.0"}, {"id", ask["id"]}, {"result", answer}});
  const json response = f.peer.next();
  EXPECT_EQ(response["result"]["structuredContent"], answer) << response.dump();
}

// A client that did not declare the capability is never asked: the call fails at once with the stable reason,
// and the next message the client sees is the call's response (no request went out). Checked by hand: with
// the capability check removed from mcp_client_asker::ask, the next message is the elicitation/create request
// and this test fails.
TEST(McpServerAsk, AClientWithoutTheCapabilityIsNotAsked) {
  stdio_fixture f;
  f.peer.initialize({{"sampling", json::object()}});  // no elicitation
  f.peer.send(mcp_test::rpc(2, "tools/call", {{"name", "ask_age"}}));
  const json response = f.peer.next();
  ASSERT_EQ(response["id"], 2) << "a request went out: " << response.dump();
  EXPECT_EQ(stdio_fixture::text_of(response),
            std::make_pair(std::string("tool_error: client_capability_missing: elicitation/create: "
                                       "the client did not declare the \"elicitation\" capability"),
                           true));
}

// A client that never answers: the ask times out (client_request_timeout), a cancellation goes to the client,
// and the call fails alone: another call made meanwhile is answered, and so is the next one.
TEST(McpServerAsk, AnUnansweredAskTimesOutAndTheCallFailsAlone) {
  stdio_fixture f(te::mcp_server_options{.client_request_timeout = 300ms});
  f.peer.initialize({{"elicitation", json::object()}});
  f.peer.send(mcp_test::rpc(2, "tools/call", {{"name", "ask_age"}}));
  const json ask = f.peer.next();
  ASSERT_EQ(ask.value("method", ""), "elicitation/create") << ask.dump();
  f.peer.send(mcp_test::rpc(3, "tools/call", {{"name", "quick"}}));
  const json quick = f.peer.next();
  EXPECT_EQ(quick["id"], 3) << "another call is served while one waits for its client: " << quick.dump();
  const json cancelled = f.peer.next();
  EXPECT_EQ(cancelled, (json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"},
                             {"params", {{"requestId", ask["id"]}, {"reason", "timeout"}}}}));
  const json response = f.peer.next();
  ASSERT_EQ(response["id"], 2) << response.dump();
  const auto [text, is_error] = stdio_fixture::text_of(response);
  EXPECT_TRUE(is_error);
  EXPECT_EQ(text.rfind("tool_error: client_ask_timeout: ", 0), 0u) << text;
  EXPECT_EQ(text, "tool_error: client_ask_timeout: mcp server \"stdio client\": timeout: elicitation/create (request 1) "
                  "got no response within 300 ms; cancellation sent");
  f.peer.send(json{{"jsonrpc", "2.0"}, {"id", ask["id"]}, {"result", {{"action", "decline"}}}});  // late: ignored
  f.peer.send(mcp_test::rpc(4, "tools/call", {{"name", "quick"}}));
  EXPECT_EQ(f.peer.next()["id"], 4);
}

// Malformed answers fail the call with the member named by JSON pointer; an error response is a refusal.
TEST(McpServerAsk, AMalformedAnswerNamesTheMember) {
  stdio_fixture f;
  f.peer.initialize({{"elicitation", json::object()}, {"sampling", json::object()}});
  int id = 10;
  auto failure = [&](const char* tool, const json& answer) {
    f.peer.send(mcp_test::rpc(++id, "tools/call", {{"name", tool}, {"arguments", {{"prompt", "p"}}}}));
    const json ask = f.peer.next();
    json reply = {{"jsonrpc", "2.0"}, {"id", ask["id"]}};
    if (answer.contains("error")) reply["error"] = answer["error"];
    else reply["result"] = answer;
    f.peer.send(reply);
    const json response = f.peer.next();
    EXPECT_EQ(response["id"], id) << response.dump();
    const auto [text, is_error] = stdio_fixture::text_of(response);
    EXPECT_TRUE(is_error) << text;
    return text;
  };
  const std::string prefix = "tool_error: client_answer_invalid: ";
  EXPECT_EQ(failure("ask_age", {{"action", "accept"}, {"content", {{"name", "Ada"}, {"age", -1}}}}),
            prefix + "at /content/age: -1 is less than minimum 0");
  EXPECT_EQ(failure("ask_age", {{"action", "accept"}, {"content", {{"age", 3}}}}),
            prefix + "at /content/name: missing (required, and the schema gives no default)");
  EXPECT_EQ(failure("ask_age", {{"action", "accept"}, {"content", {{"name", "Ada"}, {"admin", true}}}}),
            prefix + "at /content/admin: not a property of the requested schema");
  EXPECT_EQ(failure("ask_age", {{"action", "maybe"}}), prefix + "at /action: expected one of accept, decline, cancel: maybe");
  EXPECT_EQ(failure("ask_llm", {{"role", "assistant"}, {"model", "m"}}),
            "tool_error: client_answer_invalid: at (root): missing content");
  EXPECT_EQ(failure("ask_age", {{"error", {{"code", -1}, {"message", "User rejected"}}}}),
            "tool_error: client_ask_refused: mcp server \"stdio client\": rpc_error: error -1: User rejected");
}

// Over Streamable HTTP, the ask goes on the call's POST stream and our client's handlers answer it; a
// 2026-07-28 request asks by InputRequiredResult, which our client's handlers answer as well.
TEST(McpServerAsk, AToolAsksOurClientOverHttp) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  std::optional<te::mcp_server<host_type>> server;
  server.emplace(pool, host);
  const std::string url = "http://127.0.0.1:" + std::to_string(server->listen_http("127.0.0.1", 0, "/mcp")) + "/mcp";
  {
    te::mcp_client_options o;
    o.protocol_versions = {"2025-11-25"};
    std::string asked;
    o.on_elicitation = [&](const te::mcp_elicitation_request& r) {
      asked = r.message;
      return te::mcp_elicitation_response::accept({{"name", "Ada"}, {"age", 36}});
    };
    o.on_sampling = [](const te::mcp_sampling_request&) {
      return json::parse(R"({"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"})");
    };
    auto c = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url}, o);
    EXPECT_EQ(c.call("ask_age")["structuredContent"], json::parse(R"({"action": "accept", "content": {"name": "Ada", "age": 36}})"));
    EXPECT_EQ(asked, "Who are you?");
    EXPECT_EQ(c.call("ask_llm", {{"prompt", "2+2?"}})["structuredContent"]["content"]["text"], "4");

    // A 2026-07-28 call asks by InputRequiredResult (MRTR): our client's handlers answer it and send the
    // request again with the requestState, which resumes the parked call.
    te::mcp_client_options m = o;
    m.protocol_versions = {"2026-07-28"};
    asked.clear();
    auto modern = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url}, m);
    EXPECT_EQ(modern.call("ask_age")["structuredContent"],
              json::parse(R"({"action": "accept", "content": {"name": "Ada", "age": 36}})"));
    EXPECT_EQ(asked, "Who are you?");
    EXPECT_EQ(modern.call("ask_llm", {{"prompt", "2+2?"}})["structuredContent"]["content"]["text"], "4");
  }
  server.reset();
  pool.join();
}

// Over HTTP, a client that answers too late: the ask times out, the call fails alone with the stable reason, the
// late answer is dropped (202, no request of ours waits for it), and the session's next call is served.
TEST(McpServerAsk, ALateAnswerOverHttpTimesOutAndTheCallFailsAlone) {
  registry reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  std::optional<te::mcp_server<host_type>> server;
  server.emplace(pool, host, te::mcp_server_options{.client_request_timeout = 300ms});
  const std::string url = "http://127.0.0.1:" + std::to_string(server->listen_http("127.0.0.1", 0, "/mcp")) + "/mcp";
  {
    te::mcp_client_options o;
    o.protocol_versions = {"2025-11-25"};
    o.on_elicitation = [](const te::mcp_elicitation_request&) {
      std::this_thread::sleep_for(1s);
      return te::mcp_elicitation_response::accept({{"name", "Ada"}});
    };
    auto c = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url}, o);
    try {
      c.call("ask_age");
      ADD_FAILURE() << "a late answer was taken";
    } catch (const te::mcp_error& e) {
      // The same words as over stdio: one session, whatever the transport.
      EXPECT_NE(std::string(e.what()).find("client_ask_timeout: mcp server \"HTTP client\": timeout: elicitation/create "
                                           "(request 1) got no response within 300 ms; cancellation sent"),
                std::string::npos)
          << e.what();
    }
    std::this_thread::sleep_for(1s);  // the late answer arrives and is dropped
    EXPECT_EQ(c.call("quick")["content"][0]["text"], "quick");
  }
  server.reset();
  pool.join();
}

}  // namespace mcp_server_ask_test_ns
