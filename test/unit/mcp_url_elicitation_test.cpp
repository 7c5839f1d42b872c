// URL-mode elicitation (2025-11-25, client/elicitation) against
// test/mcp/fake_server.py: declared only with its handler, refused without
// (the control), the URL checked before the handler sees it (a URL that
// would show the user one host and send them to another never reaches the
// handler), completions reported once and only for what the application
// accepted, and the elicitations of a URLElicitationRequiredError (-32042)
// read and checked by mcp_url_elicitations.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

namespace mcp_url_elicitation_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {

te::mcp_client_options fast_options() { return mcp_test::fast_options(std::chrono::seconds(20)); }

json url_params(const std::string& url, const std::string& id = "e-1") {
  return {{"mode", "url"}, {"message", "Connect your calendar"}, {"url", url}, {"elicitationId", id}};
}

// The JSON-RPC response the fake server got for its elicitation/create.
json elicit(te::mcp_client& c, const json& params) {
  return c.call("elicit", {{"params", params}}).at("structuredContent").at("response");
}

using mcp_test::error_code;
using mcp_test::error_message;

// A client whose URL handler records what it saw and answers `action`.
struct recording {
  std::mutex m;
  std::vector<te::mcp_url_elicitation_request> seen;
  std::vector<std::string> completed;
  te::mcp_elicitation_action action = te::mcp_elicitation_action::accept;

  te::mcp_client_options options() {
    auto o = fast_options();
    o.on_url_elicitation = [this](const te::mcp_url_elicitation_request& r) {
      const std::lock_guard lock(m);
      seen.push_back(r);
      return action;
    };
    o.on_elicitation_complete = [this](const std::string& server, const std::string& id) {
      const std::lock_guard lock(m);
      completed.push_back(server + "/" + id);
    };
    return o;
  }
};

}  // namespace

TEST(McpUrlElicitation, DeclaredOnlyWithItsHandlerBesideFormMode) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto caps_of = [&](const te::mcp_client_options& o) {
    auto c = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
    json caps = c.call("caps")["structuredContent"]["capabilities"];
    c.close();
    return caps;
  };
  EXPECT_EQ(caps_of(fast_options()), json::object());  // control: nothing declared without a handler
  recording rec;
  auto o = rec.options();
  EXPECT_EQ(caps_of(o), json::parse(R"({"elicitation": {"url": {}}})"));
  o.on_elicitation = [](const te::mcp_elicitation_request&) { return te::mcp_elicitation_response::decline(); };
  EXPECT_EQ(caps_of(o), json::parse(R"({"elicitation": {"form": {}, "url": {}}})"));
}

TEST(McpUrlElicitation, AUrlRequestReachesItsHandlerWithTheHostToShow) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  // Control: a client with a form handler only refuses URL mode, as before.
  auto form_only = fast_options();
  form_only.on_elicitation = [](const te::mcp_elicitation_request&) { return te::mcp_elicitation_response::decline(); };
  auto old = te::mcp_client::launch(pool, mcp_test::fake_server(), form_only);
  const json refused = elicit(old, url_params("https://auth.example.com/connect"));
  EXPECT_EQ(error_code(refused), -32602) << refused;
  EXPECT_NE(error_message(refused).find("declares form mode only"), std::string::npos) << refused;
  old.close();

  recording rec;
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), rec.options());
  const json accepted = elicit(client, url_params("HTTPS://Auth.Example.COM:8443/connect?state=x#top", "abc"));
  ASSERT_EQ(error_code(accepted), 0) << accepted;
  EXPECT_EQ(accepted["result"], json::parse(R"({"action": "accept"})"));  // no content in URL mode
  ASSERT_EQ(rec.seen.size(), 1U);
  EXPECT_EQ(rec.seen[0].server, "fake");
  EXPECT_EQ(rec.seen[0].host, "auth.example.com");
  EXPECT_EQ(rec.seen[0].url, "HTTPS://Auth.Example.COM:8443/connect?state=x#top");
  EXPECT_EQ(rec.seen[0].elicitation_id, "abc");
  EXPECT_EQ(rec.seen[0].message, "Connect your calendar");

  rec.action = te::mcp_elicitation_action::decline;
  EXPECT_EQ(elicit(client, url_params("http://[::1]:9/x"))["result"], json::parse(R"({"action": "decline"})"));
  EXPECT_EQ(rec.seen.back().host, "[::1]");
  rec.action = te::mcp_elicitation_action::cancel;
  EXPECT_EQ(elicit(client, url_params("https://a.example"))["result"], json::parse(R"({"action": "cancel"})"));

  // A form request to a client that declares URL mode only is refused.
  const json form = elicit(client, {{"message", "m"}, {"requestedSchema", {{"type", "object"}}}});
  EXPECT_EQ(error_code(form), -32602) << form;
  EXPECT_NE(error_message(form).find("declares url mode only"), std::string::npos) << form;
  EXPECT_EQ(rec.seen.size(), 3U);
  client.close();
}

TEST(McpUrlElicitation, ADeceptiveOrMalformedUrlNeverReachesTheHandler) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  recording rec;
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), rec.options());
  const std::string long_url = "https://a.example/" + std::string(9000, 'x');
  const std::vector<std::pair<json, std::string>> bad = {
      {url_params("https://bank.example@evil.example/login"), "/params/url"},  // shows bank, goes to evil
      {url_params("javascript:alert(1)"), "/params/url"},
      {url_params("file:///etc/passwd"), "/params/url"},
      {url_params("https://exa mple.com/"), "/params/url"},
      {url_params("https://b\xc3\xa4nk.example/"), "/params/url"},  // a homograph must come as punycode
      {url_params("https://a.example/\x1b[2J"), "/params/url"},     // terminal escape
      {url_params("https:///path"), "/params/url"},
      {url_params("https://a.example:port/"), "/params/url"},
      {url_params(long_url), "/params/url"},
      {url_params("https://a.example", ""), "/params/elicitationId"},
      {url_params("https://a.example", std::string(300, 'i')), "/params/elicitationId"},
      {json{{"mode", "url"}, {"message", "m"}, {"url", 7}, {"elicitationId", "1"}}, "/params/url"},
      {json{{"mode", "url"}, {"message", "m"}, {"elicitationId", "1"}}, "/params/url"},
      {json{{"mode", "url"}, {"url", "https://a.example"}, {"elicitationId", "1"}}, "/params/message"},
      {json{{"mode", "telepathy"}, {"message", "m"}}, "/params/mode"},
  };
  for (const auto& [params, pointer] : bad) {
    const json r = elicit(client, params);
    EXPECT_EQ(error_code(r), -32602) << params.dump() << " -> " << r;
    EXPECT_NE(error_message(r).find(pointer), std::string::npos) << pointer << " not in " << r;
  }
  EXPECT_TRUE(rec.seen.empty()) << rec.seen.size() << " bad requests reached the handler";
  // Control: the same client takes a good one, so the refusals above are the checks', not a dead handler's.
  EXPECT_EQ(error_code(elicit(client, url_params("https://bank.example/login"))), 0);
  EXPECT_EQ(rec.seen.size(), 1U);
  client.close();
}

TEST(McpUrlElicitation, ACompletionIsReportedOnceAndOnlyForWhatTheApplicationAccepted) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(3);
  recording rec;
  std::atomic<int> other_notifications{0};
  auto o = rec.options();
  o.on_notification = [&](const std::string& method, const json&) {
    if (method == "notifications/elicitation/complete") ++other_notifications;
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  ASSERT_EQ(error_code(elicit(client, url_params("https://a.example", "accepted"))), 0);
  rec.action = te::mcp_elicitation_action::decline;
  ASSERT_EQ(error_code(elicit(client, url_params("https://a.example", "declined"))), 0);
  // The notifications come before the call's answer, on the same stream: done when call() returns.
  client.call("complete", {{"ids", {"accepted", "declined", "accepted", "never-asked"}}});
  EXPECT_EQ(rec.completed, std::vector<std::string>{"fake/accepted"});
  EXPECT_EQ(other_notifications.load(), 0);  // ignored, not passed on as unknown notifications
  client.call("complete", {{"ids", {"accepted"}}});  // already completed
  EXPECT_EQ(rec.completed.size(), 1U);
  client.close();
}

TEST(McpUrlElicitation, AUrlElicitationRequiredErrorListsItsCheckedElicitations) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  auto error_of = [&](const json& data) -> te::mcp_rpc_error {
    try {
      client.call("url_required", {{"data", data}});
    } catch (const te::mcp_rpc_error& e) {
      return e;
    }
    throw std::runtime_error("no mcp_rpc_error");
  };
  const json data = {{"elicitations",
                      {{{"mode", "url"}, {"elicitationId", "x-1"}, {"url", "https://files.example.com/connect?e=x-1"},
                        {"message", "Authorization is required"}}}}};
  const te::mcp_rpc_error e = error_of(data);
  EXPECT_EQ(e.code(), te::mcp_url_elicitation_required_code);
  const auto list = te::mcp_url_elicitations(e);
  ASSERT_EQ(list.size(), 1U);
  EXPECT_EQ(list[0].host, "files.example.com");
  EXPECT_EQ(list[0].elicitation_id, "x-1");
  EXPECT_EQ(list[0].server, "fake");

  auto pointer_of = [&](const json& bad) {
    try {
      (void)te::mcp_url_elicitations(error_of(bad));
    } catch (const te::json_error& j) {
      return j.pointer();
    }
    return std::string("no error");
  };
  json form = data;
  form["elicitations"][0]["mode"] = "form";
  EXPECT_EQ(pointer_of(form), "/error/data/elicitations/0/mode");
  json spoof = data;
  spoof["elicitations"][0]["url"] = "https://files.example.com@evil.example/";
  EXPECT_EQ(pointer_of(spoof), "/error/data/elicitations/0/url");
  EXPECT_EQ(pointer_of(json::object()), "/error/data/elicitations");
  EXPECT_EQ(pointer_of(json{{"elicitations", json::array()}}), "/error/data/elicitations");
  json many = {{"elicitations", json::array()}};
  for (int i = 0; i < 17; ++i) many["elicitations"].push_back(data["elicitations"][0]);
  EXPECT_EQ(pointer_of(many), "/error/data/elicitations");

  // Control: an error of another code lists nothing.
  EXPECT_TRUE(te::mcp_url_elicitations(te::mcp_rpc_error("fake", -32602, "Invalid params", data)).empty());
  client.close();
}

}  // namespace mcp_url_elicitation_test_ns
