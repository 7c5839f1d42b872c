// Coordination across every client of the gateway: four official TypeScript SDK clients (each its own HTTP
// session) send 50 increments each, all at once, of one account of a racy upstream (the bank of
// test/mcp/bank_server.cpp with --uncoordinated: its read-modify-write runs unguarded). Through the gateway none
// is lost: the calls conflict on the account the upstream's declaration names, so the gateway's one coordinator
// runs them one at a time, whichever client sent them. The control: the same clients straight to the same
// upstream (over HTTP) lose many. The audit log says which calls each waited for, and why.
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gateway_test_support.hpp"

namespace gateway_coordination_test_ns {

using namespace gateway_test;

namespace {
const json increments = {{"do", "increments"},         {"clients", 4},           {"calls", 50},
                         {"tool", "add_to_balance"},   {"arguments", {{"acct", "shared"}}},
                         {"read", "get_balance"},      {"read_arguments", {{"acct", "shared"}}}};
}  // namespace

TEST(GatewayCoordination, FourClientsOfFiftyConcurrentIncrementsLoseNone) {
  GATEWAY_REQUIRE_NODE();
  const auto dir = fresh_dir("increments");
  // The control: the clients straight to the racy upstream.
  child direct({bank_server(), "--uncoordinated", "--http"});
  const auto port = direct.read_line();
  ASSERT_TRUE(port) << "the bank printed no port";
  const json lost = sdk(increments, "http http://127.0.0.1:" + *port + "/mcp");
  ASSERT_FALSE(lost.contains("failed")) << lost.dump();
  EXPECT_EQ(lost["errors"], 0);
  EXPECT_LT(lost["read"]["balance"].get<int>(), 200) << "the control loses increments";
  std::printf("directly: %d of 200 increments kept\n", lost["read"]["balance"].get<int>());

  // Through the gateway, in front of the same upstream over stdio (trusted: its _meta accesses say that
  // add_to_balance writes bank/accounts, the account being its target).
  write_file(dir / "gateway.json",
             json{{"mcpServers", {{"bank", {{"command", bank_server()}, {"args", {"--uncoordinated"}}, {"trust", "trusted"}}}}},
                  {"gateway", {{"audit", (dir / "audit.jsonl").string()}}}}
                 .dump());
  http_gateway g(dir / "gateway.json");
  ASSERT_GT(g.port(), 0);
  const json kept = sdk(increments, "http " + g.url());
  ASSERT_FALSE(kept.contains("failed")) << kept.dump();
  EXPECT_EQ(kept["sessions"], 4) << "four clients, four sessions";
  EXPECT_EQ(kept["errors"], 0) << kept.dump();
  EXPECT_EQ(kept["read"], json::parse(R"({"balance": 200})"));

  // One audit line per call; the calls that waited name what they waited for and why.
  std::size_t records = 0, waited = 0;
  for (const auto& line : lines_of(dir / "audit.jsonl")) {
    const json r = json::parse(line);
    if (r["tool"] != "add_to_balance") continue;
    ++records;
    EXPECT_EQ(r["outcome"], "ok");
    EXPECT_EQ(r["principal"], "anonymous");
    EXPECT_EQ(r["effects_from"], "trusted_server");
    if (!r["waited_for"].empty()) {
      ++waited;
      EXPECT_EQ(r["waited_for"][0]["call"], "add_to_balance");
      EXPECT_EQ(r["waited_for"][0]["reason"], "bank/accounts[shared]: write / write");
    }
  }
  EXPECT_EQ(records, 200u);
  EXPECT_GT(waited, 0u) << "concurrent increments of one account wait for each other";
}

// The bank declares add_to_balance a write of one account (its target), but it reads and writes back the whole
// ledger: increments of two accounts at once lose each other's. Trusted, that too narrow declaration is what the
// gateway coordinates by, and the control loses increments; the overlay's declaration (a write of all of
// bank/accounts, no target) replaces it, and none is lost. The gateway is as honest as the declaration.
TEST(GatewayCoordination, TheOverlayCorrectsATrustedServersTooNarrowDeclaration) {
  GATEWAY_REQUIRE_NODE();
  const auto run_two_accounts = [](const fs::path& config) {
    http_gateway g(config);
    json results[2];
    std::thread other([&] {
      json s = increments;
      s["clients"] = 2;
      s["calls"] = 50;
      s["arguments"]["acct"] = s["read_arguments"]["acct"] = "b";
      results[1] = sdk(s, "http " + g.url());
    });
    json s = increments;
    s["clients"] = 2;
    s["calls"] = 50;
    s["arguments"]["acct"] = s["read_arguments"]["acct"] = "a";
    results[0] = sdk(s, "http " + g.url());
    other.join();
    return results[0]["read"]["balance"].get<int>() + results[1]["read"]["balance"].get<int>();
  };
  const auto dir = fresh_dir("narrow");
  json bank = {{"command", bank_server()}, {"args", {"--uncoordinated"}}, {"trust", "trusted"}};
  write_file(dir / "trusted.json", json{{"mcpServers", {{"bank", bank}}}}.dump());
  // The control's race needs the two accounts' calls to overlap, which a loaded machine may not give in one run
  // (the clients' processes start far apart): it must lose increments in one of three runs.
  int trusted = 200;
  for (int run = 0; run < 3 && trusted == 200; ++run) trusted = run_two_accounts(dir / "trusted.json");
  EXPECT_LT(trusted, 200) << "the control: per-account grants, a whole-ledger write";
  bank["tools"] = json::parse(R"({"add_to_balance": {"writes": ["bank/accounts"]}})");
  write_file(dir / "overlay.json", json{{"mcpServers", {{"bank", bank}}}}.dump());
  EXPECT_EQ(run_two_accounts(dir / "overlay.json"), 200);
  std::printf("two accounts, 2 x 100 increments: %d kept with the server's declaration, 200 with the overlay's\n", trusted);
}

// A racy server this project did not write: @modelcontextprotocol/server-memory's add_observations reads its
// graph file, adds, and writes it back, so concurrent calls lose observations. Two clients adding 10 observations
// each, all at once, through the gateway (the configuration declares add_observations a write of the memory):
// 20 kept. The control: the same 20 calls straight to the server: fewer.
TEST(GatewayCoordination, ARacyNpmServerLosesNoUpdateBehindTheGateway) {
  GATEWAY_REQUIRE_NODE();
  const auto dir = fresh_dir("memory");
  const std::string memory = servers_dir() + "/node_modules/@modelcontextprotocol/server-memory/dist/index.js";
  const json scenario = {
      {"do", "increments"},
      {"clients", 2},
      {"calls", 10},
      {"before", {{"tool", "create_entities"}, {"arguments", json::parse(R"({"entities": [{"name": "e", "entityType": "t", "observations": []}]})")}}},
      {"tool", "add_observations"},
      {"arguments", json::parse(R"({"observations": [{"entityName": "e", "contents": ["note $n"]}]})")},
      {"read", "open_nodes"},
      {"read_arguments", json::parse(R"({"names": ["e"]})")}};
  const json direct = sdk(scenario, "stdio node " + memory, "MEMORY_FILE_PATH=" + (dir / "direct.json").string());
  ASSERT_FALSE(direct.contains("failed")) << direct.dump();
  const auto kept_directly = direct["read"]["entities"][0]["observations"].size();
  EXPECT_LT(kept_directly, 20u) << "the control loses observations";

  json c = json::object();
  c["mcpServers"]["memory"] = {{"command", "node"},
                               {"args", json::array({memory})},
                               {"env", {{"MEMORY_FILE_PATH", (dir / "gateway.json-memory").string()}}},
                               {"tools", json::parse(R"({"create_entities": {"writes": ["memory"]},
                                                        "add_observations": {"writes": ["memory"]},
                                                        "open_nodes": {"reads": ["memory"]}})")}};
  write_file(dir / "gateway.json", c.dump());
  http_gateway g(dir / "gateway.json");
  ASSERT_GT(g.port(), 0);
  const json through = sdk(scenario, "http " + g.url());
  ASSERT_FALSE(through.contains("failed")) << through.dump();
  EXPECT_EQ(through["errors"], 0) << through.dump();
  EXPECT_EQ(through["read"]["entities"][0]["observations"].size(), 20u) << through.dump();
  std::printf("server-memory, 20 concurrent add_observations: %zu kept directly, %zu through the gateway\n", kept_directly,
              through["read"]["entities"][0]["observations"].size());
}

}  // namespace gateway_coordination_test_ns
