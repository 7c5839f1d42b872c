// Approvals through the gateway: a destructive or unknown call is asked of the user at the client, by
// elicitation showing the tool, its server, its effects and its arguments, and runs only if the user approves;
// asked once, and honoured once: with the journal, the same call sent again with its key is answered from the
// journal without asking again. The configuration may instead allow or deny a tool (then the user is not
// asked). A call that needs no approval is never asked about. And a clean shutdown (SIGTERM): the calls under
// way finish and are answered, later ones are refused without running, the gateway exits 0.
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gateway_test_support.hpp"

namespace gateway_approval_test_ns {

using namespace gateway_test;

namespace {
// `delete` declared destructive (target: the item) with the approval rule `approval`, a journal.
fs::path config(const fs::path& dir, const std::string& approval) {
  json del = {{"writes", {"items"}}, {"effects", {"destructive", "idempotent"}}, {"target_arg", "item"}};
  if (!approval.empty()) del["approval"] = approval;
  write_file(dir / "gateway.json",
             json{{"mcpServers", {{"up", upstream(dir / "effects.log", {{"tools", {{"delete", del}, {"read", {{"reads", {"items"}}}}}}})}}},
                  {"gateway", {{"journal", (dir / "journal.db").string()}, {"audit", (dir / "audit.jsonl").string()}}}}
                 .dump());
  return dir / "gateway.json";
}
json accept(const json&) { return json::parse(R"({"action": "accept", "content": {"approve": true}})"); }
json decline(const json&) { return json::parse(R"({"action": "decline"})"); }
}  // namespace

TEST(GatewayApproval, ADestructiveCallIsAskedOfTheUserOnceAndHonouredOnce) {
  const auto dir = fresh_dir("asked");
  const fs::path cfg = config(dir, "");
  std::string message;
  {
    rpc client({gateway(), "--config", cfg.string()}, [&](const json& params) {
      message = params.value("message", "");
      return accept(params);
    });
    client.initialize();
    const json r = client.call("delete", {{"item", "x"}}, "del-1");
    EXPECT_EQ(text_of(r), "deleted") << r.dump();
    EXPECT_EQ(client.asked(), 1);
    EXPECT_EQ(message,
              "Approve this call? tool \"delete\" of MCP server \"up\": needs approval (destructive); effects "
              "{write,idempotent,destructive}; class non_idempotent; idempotency key \"" +
                  json::parse(lines_of(dir / "audit.jsonl").back())["idempotency_key"].get<std::string>() +
                  "\"; arguments: {\"item\":\"x\"} (effects from the gateway's configuration)");
    // The same call again, with its key: from the journal, not asked again, not run again.
    EXPECT_EQ(client.call("delete", {{"item", "x"}}, "del-1"), r);
    EXPECT_EQ(client.asked(), 1);
    // A read needs no approval.
    client.call("read", {{"item", "x"}});
    EXPECT_EQ(client.asked(), 1);
  }
  {  // and across a restart
    rpc client({gateway(), "--config", cfg.string()}, accept);
    client.initialize();
    EXPECT_EQ(text_of(client.call("delete", {{"item", "x"}}, "del-1")), "deleted");
    EXPECT_EQ(client.asked(), 0);
  }
  EXPECT_EQ(lines_of(dir / "effects.log"), std::vector<std::string>{"delete x"});
  const json record = json::parse(lines_of(dir / "audit.jsonl").front());
  EXPECT_EQ(record["approval"], "approved_by_user");
  EXPECT_EQ(record["outcome"], "ok");

  // The controls: a user who declines, and a client that cannot be asked (no elicitation): not run.
  rpc declined({gateway(), "--config", cfg.string()}, decline);
  declined.initialize();
  const json d = declined.call("delete", {{"item", "y"}});
  EXPECT_EQ(text_of(d).rfind("confirmation_denied: ", 0), 0u) << d.dump();
  rpc mute({gateway(), "--config", cfg.string()});
  mute.initialize();
  EXPECT_EQ(text_of(mute.call("delete", {{"item", "z"}})).rfind("confirmation_denied: ", 0), 0u);
  EXPECT_EQ(lines_of(dir / "effects.log"), std::vector<std::string>{"delete x"});
}

// "allow" runs the tool's calls without asking; "deny" refuses them without asking, though the user would
// approve.
TEST(GatewayApproval, TheConfigurationAllowsOrDeniesByTool) {
  const auto allowed = fresh_dir("allowed");
  rpc a({gateway(), "--config", config(allowed, "allow").string()}, accept);
  a.initialize();
  EXPECT_EQ(text_of(a.call("delete", {{"item", "x"}})), "deleted");
  EXPECT_EQ(a.asked(), 0);
  EXPECT_EQ(lines_of(allowed / "effects.log"), std::vector<std::string>{"delete x"});

  const auto denied = fresh_dir("denied");
  rpc d({gateway(), "--config", config(denied, "deny").string()}, accept);
  d.initialize();
  const json r = d.call("delete", {{"item", "x"}});
  EXPECT_EQ(text_of(r), "confirmation_denied: delete was not run because the user did not approve it (the gateway's "
                        "configuration denies this tool)");
  EXPECT_EQ(d.asked(), 0);
  EXPECT_FALSE(fs::exists(denied / "effects.log"));
}

// The official TypeScript SDK client answers the elicitation (its ElicitRequestSchema handler): approved, the
// call runs once; sent again with its key, it is answered without a second question.
TEST(GatewayApproval, TheTypeScriptClientIsAskedByElicitation) {
  GATEWAY_REQUIRE_NODE();
  const auto dir = fresh_dir("sdk_asked");
  http_gateway g(config(dir, ""));
  ASSERT_GT(g.port(), 0);
  const json r = sdk({{"do", "call"}, {"tool", "delete"}, {"arguments", {{"item", "x"}}}, {"key", "k"}, {"elicit", "accept"},
                      {"times", 2}},
                     "http " + g.url());
  ASSERT_FALSE(r.contains("failed")) << r.dump();
  EXPECT_EQ(r["asked"].size(), 1u) << r.dump();
  EXPECT_EQ(text_of(r["results"][0]), "deleted");
  EXPECT_EQ(r["results"][1], r["results"][0]);
  EXPECT_EQ(lines_of(dir / "effects.log"), std::vector<std::string>{"delete x"});
  const json declined = sdk({{"do", "call"}, {"tool", "delete"}, {"arguments", {{"item", "y"}}}, {"elicit", "decline"}},
                            "http " + g.url());
  EXPECT_TRUE(declined["results"][0].value("isError", false)) << declined.dump();
  EXPECT_EQ(lines_of(dir / "effects.log"), std::vector<std::string>{"delete x"});
}

// SIGTERM: a call under way (append takes 1.5 s upstream) finishes and is answered; a call sent after the signal
// is refused without running; the gateway exits 0. The control for "under way": without the signal's drain the
// answer of a killed gateway never comes (SIGKILL).
TEST(GatewayShutdown, SigtermFinishesTheCallsUnderWayAndRefusesNewOnes) {
  const auto dir = fresh_dir("sigterm");
  write_file(dir / "gateway.json",
             json{{"mcpServers", {{"up", upstream(dir / "effects.log", {{"tools", {{"append", {{"writes", {"log"}}}}}}})}}}}.dump());
  rpc client({gateway(), "--config", (dir / "gateway.json").string()}, {}, dir / "stderr");
  client.initialize();
  const int slow = client.send_call("append", {{"text", "slow"}, {"ms", 1500}});
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  client.process().signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int late = client.send_call("append", {{"text", "late"}});
  const json late_r = client.await(late, std::chrono::seconds(10));
  EXPECT_TRUE(late_r.value("isError", false)) << late_r.dump();
  EXPECT_NE(text_of(late_r).find("coordination_timeout"), std::string::npos) << late_r.dump();
  const json slow_r = client.await(slow, std::chrono::seconds(10));
  EXPECT_EQ(text_of(slow_r), "appended") << slow_r.dump();
  EXPECT_EQ(client.process().wait(std::chrono::seconds(20)), 0) << read_file(dir / "stderr");
  EXPECT_EQ(lines_of(dir / "effects.log"), std::vector<std::string>{"append slow"});

  const auto control = fresh_dir("sigkill");
  write_file(control / "gateway.json", read_file(dir / "gateway.json"));
  rpc killed({gateway(), "--config", (control / "gateway.json").string()});
  killed.initialize();
  const int lost = killed.send_call("append", {{"text", "slow"}, {"ms", 1500}});
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  killed.process().signal(SIGKILL);
  EXPECT_TRUE(killed.await(lost, std::chrono::seconds(5)).contains("no_response"));
}

}  // namespace gateway_approval_test_ns
