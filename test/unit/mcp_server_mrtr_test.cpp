// MRTR on the server (mcp/server/detail/mrtr.hpp): a 2026-07-28 call whose tool asks its client is answered
// with an InputRequiredResult and PARKED; the request sent again with inputResponses and the requestState
// resumes it, so what the tool did before its ask happens once. The exact results and error texts; a tampered
// state refused (and the same state untampered resumes); missing responses asked again under a new state;
// several asks in one result; several rounds; the capability check; expiry; the bound on parked calls; strict
// reading of inputResponses; HMAC-SHA256 against RFC 4231.
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <vector>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/auth/principal.hpp>
#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/server.hpp>

namespace mcp_server_mrtr_test_ns {

namespace te = tool_effects;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct guests : te::resource<> {
  static constexpr std::string_view resource_name = "guests";
};

const char* const name_schema = R"({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})";

// What the tools did, seen by the tests.
struct record {
  std::atomic<int> effects{0};  // side effects done before the ask
  std::mutex m;
  std::string failure;  // the reason of the last ask that failed
};
record* rec = nullptr;

const te::mcp_client_asker& asker_of(const te::attempt_context& ctx) {
  const te::mcp_client_asker* a = te::mcp_client_asker_of(ctx);
  if (!a) throw std::runtime_error("no asker");
  return *a;
}
std::string fail(const te::mcp_ask_error& e) {
  std::lock_guard lock(rec->m);
  rec->failure = e.reason();
  throw;
}

// Counts its runs (what an effect before the ask would repeat), then asks the name under key "user_name", and
// greets. Declared a reader so that calls do not wait for each other: a parked call keeps its coordinator grant.
struct greet {
  static constexpr std::string_view name = "greet";
  using side_effects = te::effects<te::reads<guests>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    ++rec->effects;
    try {
      const json r = asker_of(ctx).keyed("user_name").elicit("What is your name?", json::parse(name_schema));
      return "Hello, " + r.at("content").at("name").get<std::string>() + "!";
    } catch (const te::mcp_ask_error& e) {
      fail(e);
    }
    return nullptr;
  }
};
// Asks three things at once: elicitation, sampling and roots.
struct three {
  static constexpr std::string_view name = "three";
  using side_effects = te::effects<te::reads<guests>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    return asker_of(ctx).ask_all(
        {{"who", "elicitation/create", {{"message", "Who?"}, {"requestedSchema", json::parse(name_schema)}}},
         {"hi", "sampling/createMessage",
          {{"messages", json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", "Say hi"}}}}})},
           {"maxTokens", 20}}},
         {"roots", "roots/list", json::object()}});
  }
};
// Two rounds: a name, then a colour.
struct two_rounds {
  static constexpr std::string_view name = "two_rounds";
  using side_effects = te::effects<te::reads<guests>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    const auto& a = asker_of(ctx);
    const json n = a.keyed("step1").elicit("Name?", json::parse(name_schema));
    const json c = a.keyed("step2").elicit(
        "Colour?", json::parse(R"({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]})"));
    return n["content"]["name"].get<std::string>() + " likes " + c["content"]["color"].get<std::string>();
  }
};
// Asks nothing.
struct plain {
  static constexpr std::string_view name = "plain";
  using side_effects = te::effects<te::reads<guests>>;
  json operator()(const json&) const { return "plain"; }
};
using host_type = te::json_tool_host<greet, three, two_rounds, plain>;

json meta(json capabilities = {{"elicitation", json::object()}, {"sampling", json::object()}, {"roots", json::object()}}) {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "1"}}},
          {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)}};
}
json call_params(const std::string& tool, json extra = json::object()) {
  json p = {{"name", tool}, {"arguments", json::object()}, {"_meta", meta()}};
  for (auto& [k, v] : extra.items()) p[k] = v;
  return p;
}

struct fixture {
  record r;
  te::tool_registry<greet, three, two_rounds, plain> reg;
  host_type host{reg};
  boost::asio::thread_pool pool{2};
  std::optional<te::mcp_server<host_type>> server;
  explicit fixture(te::mcp_server_options o = {}) {
    rec = &r;
    server.emplace(pool, host, std::move(o));
  }
  ~fixture() {
    server.reset();  // a call still parked fails its ask (the server stops), and its tool records it
    rec = nullptr;
  }
  // The answer to one request (of `request`'s caller), or "CODE message" of its error.
  json answer(json params, std::string method = "tools/call", te::mcp_server_request request = {}) {
    boost::asio::io_context io;
    auto f = boost::asio::co_spawn(io, server->handle_request(std::move(method), std::move(params), std::move(request)),
                                   boost::asio::use_future);
    io.run();
    try {
      return f.get();
    } catch (const te::mcp_server_error& e) {
      return std::to_string(e.code()) + " " + e.what();
    }
  }
};

json accept(json content) { return {{"action", "accept"}, {"content", std::move(content)}}; }
std::string text_of(const json& result) { return result.at("content").at(0).at("text").get<std::string>(); }

}  // namespace

// RFC 4231 test cases 1, 2 and 6 (a key longer than the block).
TEST(McpServerMrtr, HmacSha256MatchesRfc4231) {
  auto hex = [](const std::array<std::uint8_t, 32>& d) {
    std::string out;
    for (auto b : d) {
      const char* x = "0123456789abcdef";
      out += x[b >> 4];
      out += x[b & 15];
    }
    return out;
  };
  EXPECT_EQ(hex(te::detail::mcp_hmac_sha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(te::detail::mcp_hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hex(te::detail::mcp_hmac_sha256(std::string(131, '\xaa'),
                                            "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

// The first request gets the InputRequiredResult (the tool's key, method and params, a requestState); the
// retry with the answer and the state gets the result of the SAME run: the effect before the ask happened once.
TEST(McpServerMrtr, AnElicitationRoundTripResumesTheParkedCall) {
  fixture f;
  const json first = f.answer(call_params("greet"));
  ASSERT_TRUE(first.is_object()) << first.dump();
  ASSERT_TRUE(first.contains("requestState") && first["requestState"].is_string()) << first.dump();
  EXPECT_EQ(first, (json{{"resultType", "input_required"},
                         {"inputRequests",
                          {{"user_name",
                            {{"method", "elicitation/create"},
                             {"params", {{"message", "What is your name?"}, {"requestedSchema", json::parse(name_schema)}}}}}}},
                         {"requestState", first["requestState"]}}));
  const json done = f.answer(call_params(
      "greet", {{"inputResponses", {{"user_name", accept({{"name", "Alice"}})}}}, {"requestState", first["requestState"]}}));
  EXPECT_EQ(done.value("resultType", ""), "complete") << done.dump();
  EXPECT_EQ(text_of(done), "Hello, Alice!");
  EXPECT_EQ(f.r.effects.load(), 1);
  // The state was used: sent again it names no call.
  EXPECT_EQ(f.answer(call_params("greet", {{"inputResponses", {{"user_name", accept({{"name", "Bob"}})}}},
                                           {"requestState", first["requestState"]}})),
            "-32602 Invalid params: at /requestState: no call waits under this state (it was resumed already, or its "
            "ask expired after client_request_timeout)");
}

// The control: the stateless model re-runs the tool from its start with the answers (here a first request that
// carries them, which the server answers from them at once): the effect before the ask runs again.
TEST(McpServerMrtr, TheReRunModelWouldRepeatTheEffect) {
  fixture f;
  const json first = f.answer(call_params("greet"));
  ASSERT_EQ(first.value("resultType", ""), "input_required") << first.dump();
  const json rerun = f.answer(call_params(
      "greet", {{"inputResponses", {{"user_name", accept({{"name", "Alice"}})}, {"extra", accept({{"x", 1}})}}}}));
  EXPECT_EQ(text_of(rerun), "Hello, Alice!");  // extra keys ignored
  EXPECT_EQ(f.r.effects.load(), 2);            // the effect ran twice: what parking avoids
}

// A state altered is refused with -32602 naming /requestState, and the call stays parked: the same state
// untampered resumes it.
TEST(McpServerMrtr, ATamperedStateIsRefusedAndTheUntamperedOneResumes) {
  fixture f;
  const json first = f.answer(call_params("greet"));
  const std::string state = first.at("requestState");
  const json answers = {{"user_name", accept({{"name", "Alice"}})}};
  for (const std::string& bad : {state + "-TAMPERED", "x" + state, std::string("nodot"), std::string()})
    EXPECT_EQ(f.answer(call_params("greet", {{"inputResponses", answers}, {"requestState", bad}})),
              "-32602 Invalid params: at /requestState: fails its integrity check (not a state this server issued, or "
              "one altered)")
        << bad;
  // Another server's state (another key) is refused the same way.
  fixture g;
  EXPECT_EQ(g.answer(call_params("greet", {{"inputResponses", answers}, {"requestState", state}})),
            "-32602 Invalid params: at /requestState: fails its integrity check (not a state this server issued, or "
            "one altered)");
  // A state for another tool.
  EXPECT_EQ(f.answer(call_params("three", {{"inputResponses", answers}, {"requestState", state}})),
            "-32602 Invalid params: at /requestState: issued for tools/call of \"greet\", not for tools/call of \"three\"");
  EXPECT_EQ(text_of(f.answer(call_params("greet", {{"inputResponses", answers}, {"requestState", state}}))),
            "Hello, Alice!");
  EXPECT_EQ(f.r.effects.load(), 1);
}

// A requestState is its caller's: another principal's (or another session's) retry is refused as if the state
// did not exist, and the call stays parked for its own caller (the control). A stateless request without
// authorization belongs to its connection, but its state to whoever received it: the retry of a client that
// pools connections comes over another one (the conformance suite's does).
TEST(McpServerMrtr, AStateResumesOnlyForItsCaller) {
  auto as = [](const std::string& caller, const std::string& subject = "") {
    te::mcp_server_request r;
    r.caller = caller;
    if (!subject.empty()) {
      auto p = std::make_shared<te::mcp_principal>();
      p->subject = subject;
      r.principal = std::move(p);
    }
    return r;
  };
  const json answers = {{"user_name", accept({{"name", "Alice"}})}};
  const std::string refused =
      "-32602 Invalid params: at /requestState: issued to another caller (state_of_another_caller)";
  fixture f;
  for (const auto& [owner, other] : {std::pair{as("issuer|alice", "alice"), as("issuer|bob", "bob")},
                                     std::pair{as("session:a"), as("session:b")}}) {
    const json first = f.answer(call_params("greet"), "tools/call", owner);
    ASSERT_EQ(first.value("resultType", ""), "input_required") << first.dump();
    const json retry = call_params("greet", {{"inputResponses", answers}, {"requestState", first["requestState"]}});
    EXPECT_EQ(f.answer(retry, "tools/call", other), refused) << other.caller;
    EXPECT_EQ(text_of(f.answer(retry, "tools/call", owner)), "Hello, Alice!") << owner.caller;
  }
  const json first = f.answer(call_params("greet"), "tools/call", as("connection:1"));
  const json retry = call_params("greet", {{"inputResponses", answers}, {"requestState", first.at("requestState")}});
  EXPECT_EQ(text_of(f.answer(retry, "tools/call", as("connection:2"))), "Hello, Alice!");
  EXPECT_EQ(f.r.effects.load(), 3);
}

// A retry without the response asked for gets a new InputRequiredResult asking it again, under a new state
// (the old one is spent); a first request with only unknown keys is asked too.
TEST(McpServerMrtr, AMissingResponseIsAskedAgain) {
  fixture f;
  const json wrong = f.answer(call_params("greet", {{"inputResponses", {{"wrong_key", accept({{"data", "x"}})}}}}));
  ASSERT_EQ(wrong.value("resultType", ""), "input_required") << wrong.dump();
  EXPECT_EQ(wrong["inputRequests"].size(), 1U);
  EXPECT_TRUE(wrong["inputRequests"].contains("user_name"));
  const json again =
      f.answer(call_params("greet", {{"inputResponses", {{"nope", accept({})}}}, {"requestState", wrong["requestState"]}}));
  ASSERT_EQ(again.value("resultType", ""), "input_required") << again.dump();
  EXPECT_EQ(again["inputRequests"], wrong["inputRequests"]);
  EXPECT_NE(again["requestState"], wrong["requestState"]);
  EXPECT_EQ(f.answer(call_params("greet", {{"inputResponses", {{"user_name", accept({{"name", "Al"}})}}},
                                           {"requestState", wrong["requestState"]}}))
                .get<std::string>()
                .substr(0, 62),
            "-32602 Invalid params: at /requestState: no call waits under t");
  EXPECT_EQ(text_of(f.answer(call_params("greet", {{"inputResponses", {{"user_name", accept({{"name", "Al"}})}}},
                                                   {"requestState", again["requestState"]}}))),
            "Hello, Al!");
  EXPECT_EQ(f.r.effects.load(), 1);
}

// ask_all: one InputRequiredResult with the three requests; the retry answers all, each answer checked.
TEST(McpServerMrtr, SeveralInputRequestsInOneResult) {
  fixture f;
  const json first = f.answer(call_params("three"));
  ASSERT_EQ(first.value("resultType", ""), "input_required") << first.dump();
  EXPECT_EQ(first["inputRequests"]["who"]["method"], "elicitation/create");
  EXPECT_EQ(first["inputRequests"]["hi"]["method"], "sampling/createMessage");
  EXPECT_EQ(first["inputRequests"]["roots"], (json{{"method", "roots/list"}, {"params", json::object()}}));
  const json sampled = json::parse(R"({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})");
  const json roots = json::parse(R"({"roots": [{"uri": "file:///r", "name": "R"}]})");
  const json done = f.answer(call_params(
      "three", {{"inputResponses", {{"who", accept({{"name", "Ann"}})}, {"hi", sampled}, {"roots", roots}}},
                {"requestState", first["requestState"]}}));
  EXPECT_EQ(done.at("structuredContent"),
            (json{{"who", accept({{"name", "Ann"}})}, {"hi", sampled}, {"roots", roots}}))
      << done.dump();
  // A malformed roots answer fails the tool's ask with the member named.
  const json again = f.answer(call_params("three"));
  const json bad = f.answer(call_params(
      "three", {{"inputResponses", {{"who", accept({{"name", "Ann"}})}, {"hi", sampled}, {"roots", {{"roots", {{{"uri", "http://x"}}}}}}}},
                {"requestState", again["requestState"]}}));
  EXPECT_TRUE(bad.value("isError", false)) << bad.dump();
  EXPECT_NE(text_of(bad).find("client_answer_invalid: at /roots/0/uri: expected a file:// URI"), std::string::npos)
      << text_of(bad);
}

// Two rounds: each InputRequiredResult has its own state; the third request completes.
TEST(McpServerMrtr, SeveralRounds) {
  fixture f;
  const json r1 = f.answer(call_params("two_rounds"));
  ASSERT_TRUE(r1.at("inputRequests").contains("step1")) << r1.dump();
  const json r2 = f.answer(call_params(
      "two_rounds", {{"inputResponses", {{"step1", accept({{"name", "Ann"}})}}}, {"requestState", r1["requestState"]}}));
  ASSERT_TRUE(r2.at("inputRequests").contains("step2")) << r2.dump();
  EXPECT_NE(r2["requestState"], r1["requestState"]);
  const json r3 = f.answer(call_params(
      "two_rounds", {{"inputResponses", {{"step2", accept({{"color", "blue"}})}}}, {"requestState", r2["requestState"]}}));
  EXPECT_EQ(text_of(r3), "Ann likes blue");
}

// A client that did not declare elicitation gets no InputRequiredResult for it: the ask fails at once with
// the existing reason, and the call's result says so.
TEST(McpServerMrtr, NoInputRequestForACapabilityNotDeclared) {
  fixture f;
  json p = call_params("greet");
  p["_meta"] = meta({{"sampling", json::object()}});
  const json r = f.answer(p);
  EXPECT_EQ(r.value("resultType", ""), "complete") << r.dump();
  EXPECT_TRUE(r.value("isError", false));
  EXPECT_EQ(f.r.failure, "client_capability_missing");
}

// A parked call whose retry never comes: its ask fails with client_ask_timeout after client_request_timeout,
// and its state then names no call.
TEST(McpServerMrtr, AParkedCallExpires) {
  fixture f(te::mcp_server_options{.client_request_timeout = 200ms});
  const json first = f.answer(call_params("greet"));
  ASSERT_EQ(first.value("resultType", ""), "input_required");
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard lock(f.r.m);
      if (!f.r.failure.empty()) break;
    }
    std::this_thread::sleep_for(20ms);
  }
  {
    std::lock_guard lock(f.r.m);
    EXPECT_EQ(f.r.failure, "client_ask_timeout");
  }
  EXPECT_EQ(f.answer(call_params("greet", {{"inputResponses", {{"user_name", accept({{"name", "A"}})}}},
                                           {"requestState", first["requestState"]}})),
            "-32602 Invalid params: at /requestState: no call waits under this state (it was resumed already, or its "
            "ask expired after client_request_timeout)");
}

// At most max_parked_calls wait: the next call's ask fails at once (client_ask_too_many_parked).
TEST(McpServerMrtr, ParkedCallsAreBounded) {
  fixture f(te::mcp_server_options{.max_parked_calls = 1});
  const json first = f.answer(call_params("greet"));
  ASSERT_EQ(first.value("resultType", ""), "input_required");
  const json second = f.answer(call_params("greet"));
  EXPECT_TRUE(second.value("isError", false)) << second.dump();
  EXPECT_EQ(f.r.failure, "client_ask_too_many_parked");
  // The first one still resumes.
  EXPECT_EQ(text_of(f.answer(call_params("greet", {{"inputResponses", {{"user_name", accept({{"name", "A"}})}}},
                                                   {"requestState", first["requestState"]}}))),
            "Hello, A!");
}

// prompts/get of a prompt that asks (get_asking): the same round trip, answered with its GetPromptResult.
TEST(McpServerMrtr, APromptAsksByInputRequiredResult) {
  fixture f;
  f.server->add_prompt(te::mcp_prompt{
      .name = "ctx",
      .get_asking = [](std::map<std::string, std::string>,
                       const te::mcp_client_asker& a) -> boost::asio::awaitable<std::vector<te::mcp_prompt_message>> {
        const te::mcp_client_asker keyed = a.keyed("user_context");
        json schema = json::parse(R"({"type": "object", "properties": {"context": {"type": "string"}}})");
        const json r = co_await keyed.async_elicit("Which context?", std::move(schema));
        co_return std::vector<te::mcp_prompt_message>{
            {.role = "user", .content = te::mcp_text_content(r["content"].value("context", std::string()))}};
      }});
  const json p = {{"name", "ctx"}, {"_meta", meta()}};
  const json first = f.answer(p, "prompts/get");
  ASSERT_EQ(first.value("resultType", ""), "input_required") << first.dump();
  EXPECT_EQ(first["inputRequests"]["user_context"]["params"]["message"], "Which context?");
  json retry = p;
  retry["inputResponses"] = {{"user_context", accept({{"context", "tests"}})}};
  retry["requestState"] = first["requestState"];
  EXPECT_EQ(f.answer(retry, "prompts/get"),
            (json{{"messages", json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", "tests"}}}}})},
                  {"resultType", "complete"}}));
  // A state of a prompt does not resume a tool call.
  const json again = f.answer(p, "prompts/get");
  EXPECT_EQ(f.answer(call_params("greet", {{"requestState", again["requestState"]}})),
            "-32602 Invalid params: at /requestState: issued for prompts/get of \"ctx\", not for tools/call of \"greet\"");
}

// A 2026-07-28 call whose tool asks nothing never waits for the asks thread: with that thread held (by a prompt
// that blocks it), the call is still answered, with and without nonblocking_calls. Before, every such call
// crossed the asks thread twice (its waiter set there, its end delivered there) and this one waited until the
// prompt let go (checked: on that code the check below fails after its 20 s).
TEST(McpServerMrtr, ACallThatAsksNothingDoesNotWaitForTheAsksThread) {
  for (const bool nonblocking : {false, true}) {
    fixture f(te::mcp_server_options{.nonblocking_calls = nonblocking});
    std::promise<void> entered;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    f.server->add_prompt(te::mcp_prompt{
        .name = "hold",
        .get_asking = [&entered, released](std::map<std::string, std::string>, const te::mcp_client_asker&)
            -> boost::asio::awaitable<std::vector<te::mcp_prompt_message>> {
          entered.set_value();
          released.wait();  // holds the asks thread, which runs the prompt
          co_return std::vector<te::mcp_prompt_message>{};
        }});
    std::thread holder([&f] { (void)f.answer({{"name", "hold"}, {"_meta", meta()}}, "prompts/get"); });
    entered.get_future().wait();
    auto answered = std::async(std::launch::async, [&f] { return f.answer(call_params("plain")); });
    const bool in_time = answered.wait_for(20s) == std::future_status::ready;
    release.set_value();
    holder.join();
    ASSERT_TRUE(in_time) << "nonblocking_calls " << nonblocking << ": the call waited for the asks thread";
    EXPECT_EQ(text_of(answered.get()), "plain");
  }
}

// inputResponses and requestState are read strictly.
TEST(McpServerMrtr, InputResponsesAreReadStrictly) {
  fixture f;
  EXPECT_EQ(f.answer(call_params("greet", {{"inputResponses", nullptr}})),
            "-32602 Invalid params: at /inputResponses: expected an object, got null");
  EXPECT_EQ(f.answer(call_params("greet", {{"inputResponses", {{"user_name", 12345}}}})),
            "-32602 Invalid params: at /inputResponses/user_name: expected an object, got number");
  EXPECT_EQ(f.answer(call_params("greet", {{"requestState", 7}})),
            "-32602 Invalid params: at /requestState: expected a string, got number");
  EXPECT_EQ(f.r.effects.load(), 0);
}

}  // namespace mcp_server_mrtr_test_ns
