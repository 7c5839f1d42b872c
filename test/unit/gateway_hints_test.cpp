// Honest hints through the gateway: what it publishes comes from the configuration (overlay), else from a server
// marked trusted, else it is unknown (the conservative defaults). test/mcp/gateway_upstream.py claims
// `readOnlyHint: true` for its `exec` tool, which writes: untrusted, the gateway publishes it as unknown; the
// controls are the server listed directly (the false claim is there) and the same gateway with the server
// trusted (then the claim passes: it is the trust setting that decides). Each tool says where its effects came
// from under `_meta`, beside its accesses, and keeps the upstream's texts and schemas. The TypeScript SDK client
// lists and calls through the gateway and sees the same.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gateway_test_support.hpp"

namespace gateway_hints_test_ns {

using namespace gateway_test;

namespace {
// The tools/list of a gateway for `config` (over stdio), by name.
json tools_by_name(const fs::path& config) {
  rpc client({gateway(), "--config", config.string()});
  client.initialize();
  const json list = client.request("tools/list", json::object());
  json out = json::object();
  for (const auto& t : list.at("tools")) out[t.at("name").get<std::string>()] = t;
  return out;
}
json hints(const json& tool) {
  json a = tool.at("annotations");
  a.erase("title");
  return a;
}
const json unknown_hints =
    json::parse(R"({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})");
}  // namespace

TEST(GatewayHints, AnUntrustedServersFalseReadOnlyClaimIsNotPublished) {
  const auto dir = fresh_dir("untrusted_claim");
  // The control: the server itself claims readOnlyHint for exec.
  rpc direct({"python3", upstream_script(), "--log", (dir / "effects.log").string()});
  direct.initialize();
  const json listed = direct.request("tools/list", json::object());
  ASSERT_EQ(listed.at("tools").at(0).at("name"), "exec");
  EXPECT_EQ(listed["tools"][0]["annotations"]["readOnlyHint"], true) << "the server's claim";

  write_file(dir / "gateway.json", json{{"mcpServers", {{"up", upstream(dir / "effects.log")}}}}.dump());
  const json tools = tools_by_name(dir / "gateway.json");
  const json& exec = tools.at("exec");
  EXPECT_EQ(hints(exec), unknown_hints) << exec.dump();
  EXPECT_EQ(exec["_meta"]["io.github.tool-effects/accesses"], json::parse(R"({"version": 1})")) << "unknown: exclusive";
  EXPECT_EQ(exec["_meta"]["io.github.tool-effects/provenance"],
            json::parse(R"({"version": 1, "source": "unknown", "server": "up", "tool": "exec",
                            "server_annotations": {"title": "Execute", "readOnlyHint": true}})"));
  // The upstream's texts and schema are kept.
  EXPECT_EQ(exec["description"], "Runs a command.");
  EXPECT_EQ(exec["annotations"]["title"], "Execute");
  EXPECT_EQ(exec["inputSchema"], listed["tools"][0]["inputSchema"]);

  // The control: the same server marked trusted has its claim published.
  write_file(dir / "trusted.json",
             json{{"mcpServers", {{"up", upstream(dir / "effects.log", {{"trust", "trusted"}})}}}}.dump());
  const json trusted = tools_by_name(dir / "trusted.json");
  EXPECT_EQ(trusted["exec"]["annotations"]["readOnlyHint"], true);
  EXPECT_EQ(trusted["exec"]["_meta"]["io.github.tool-effects/provenance"]["source"], "trusted_server");
  EXPECT_EQ(trusted["exec"]["_meta"]["io.github.tool-effects/provenance"]["declared_by"], "annotations");
}

// The configuration's declaration replaces what even a trusted server claims: exec declared a destructive write
// of "host" is published so (and its accesses say so), whatever the server's readOnlyHint.
TEST(GatewayHints, TheOverlayDecidesOverATrustedServersClaim) {
  const auto dir = fresh_dir("overlay_decides");
  write_file(dir / "overlay.json", R"({"version": 1, "tools": [
      {"name": "exec", "writes": ["host"], "effects": ["destructive"]},
      {"name": "append", "appends": ["log"], "identity": {"target_arg": "text"}}]})");
  write_file(dir / "gateway.json",
             json{{"mcpServers", {{"up", upstream(dir / "effects.log", {{"trust", "trusted"}, {"overlay", "overlay.json"}})}}}}
                 .dump());
  const json tools = tools_by_name(dir / "gateway.json");
  EXPECT_EQ(hints(tools.at("exec")),
            json::parse(R"({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false})"));
  EXPECT_EQ(tools["exec"]["_meta"]["io.github.tool-effects/accesses"],
            json::parse(R"({"version": 1, "effects": ["write", "destructive"], "writes": ["host"]})"));
  EXPECT_EQ(tools["exec"]["_meta"]["io.github.tool-effects/provenance"]["source"], "overlay");
  EXPECT_EQ(tools["append"]["_meta"]["io.github.tool-effects/accesses"],
            json::parse(R"({"version": 1, "effects": ["write"], "appends": ["log"], "identity": {"target_arg": "text"}})"))
      << "an append implies the write flag";
  EXPECT_EQ(tools["append"]["inputSchema"]["required"], json::array({"text"})) << "the target argument is required";
  // A tool the overlay does not name keeps the trusted server's claim.
  EXPECT_EQ(tools["read"]["annotations"]["readOnlyHint"], true);
  EXPECT_EQ(tools["read"]["_meta"]["io.github.tool-effects/provenance"]["source"], "trusted_server");
}

// Tools keep their names; two servers with a tool of the same name both get their server's name as a prefix
// (only those tools); a server's own "prefix" applies to all its tools. The control: one server alone keeps
// every name.
TEST(GatewayHints, ToolsKeepTheirNamesAndOnlyClashesArePrefixed) {
  const auto dir = fresh_dir("names");
  write_file(dir / "one.json", json{{"mcpServers", {{"one", upstream(dir / "effects.log")}}}}.dump());
  const json alone = tools_by_name(dir / "one.json");
  EXPECT_TRUE(alone.contains("exec") && alone.contains("read")) << alone.dump();

  write_file(dir / "three.json",
             json{{"mcpServers",
                   {{"one", upstream(dir / "effects.log")},
                    {"two", upstream(dir / "effects.log")},
                    {"bank", {{"command", bank_server()}, {"trust", "trusted"}}}}}}
                 .dump());
  const json tools = tools_by_name(dir / "three.json");
  for (const char* t : {"exec", "append", "delete", "read", "die_once"}) {
    EXPECT_TRUE(tools.contains(std::string("one__") + t)) << t;
    EXPECT_TRUE(tools.contains(std::string("two__") + t)) << t;
    EXPECT_FALSE(tools.contains(t)) << t;
  }
  EXPECT_TRUE(tools.contains("get_balance")) << "no clash, no prefix";
  EXPECT_EQ(tools["one__exec"]["_meta"]["io.github.tool-effects/provenance"]["tool"], "exec");
}

// --check prints each tool's effective declaration, where it came from, what the server claimed, and the plan of
// a sample turn.
TEST(GatewayHints, CheckPrintsEachDeclarationAndTheSampleTurnsPlan) {
  const auto dir = fresh_dir("check");
  write_file(dir / "gateway.json",
             json{{"mcpServers",
                   {{"up", upstream(dir / "effects.log", {{"tools", {{"append", {{"writes", {"log"}}}}, {"read", {{"reads", {"log"}}}}}}})}}}}
                 .dump());
  const auto [status, out] = run(gateway() + " --check " + (dir / "gateway.json").string());
  EXPECT_EQ(status, 0);
  EXPECT_NE(out.find("tool \"exec\" (server \"up\", its tool \"exec\")\n"
                     "  effects:  [] from nowhere: unknown (untrusted server, no overlay entry)\n"
                     "  accesses: exclusive (conflicts with every call)\n"
                     "  hints:    readOnlyHint=false destructiveHint=true idempotentHint=false openWorldHint=true\n"
                     "  server claimed: {\"readOnlyHint\":true,\"title\":\"Execute\"} (not used)\n"
                     "  approval: ask (the user, by elicitation)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("tool \"append\" (server \"up\", its tool \"append\")\n"
                     "  effects:  [\"write\"] from the configuration (overlay)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("wave 0  \"exec#1\": runs at once\n"
                     "wave 1  \"append#2\": waits for \"exec#1\" [exclusive: exec#1 has unknown effects]\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("wave 3  \"read#4\": waits for \"delete#3\" [exclusive: delete#3 has unknown effects]"), std::string::npos)
      << out;
}

// The official TypeScript SDK client, over stdio and over Streamable HTTP: lists through the gateway (the
// overlay's hints and the provenance), and calls a tool of an npm server the gateway fronts
// (@modelcontextprotocol/server-memory).
class GatewaySdk : public ::testing::TestWithParam<std::string> {};

TEST_P(GatewaySdk, TheTypeScriptClientListsAndCallsThroughTheGateway) {
  GATEWAY_REQUIRE_NODE();
  const auto dir = fresh_dir("sdk_" + GetParam());
  json memory = {{"command", "node"},
                 {"args", {servers_dir() + "/node_modules/@modelcontextprotocol/server-memory/dist/index.js"}},
                 {"env", {{"MEMORY_FILE_PATH", (dir / "memory.json").string()}}},
                 {"tools", {{"read_graph", {{"reads", {"memory"}}}}, {"create_entities", {{"writes", {"memory"}}}}}}};
  write_file(dir / "gateway.json", json{{"mcpServers", {{"up", upstream(dir / "effects.log")}, {"memory", memory}}}}.dump());
  std::unique_ptr<http_gateway> http;
  std::string transport = "stdio " + gateway() + " --config " + (dir / "gateway.json").string();
  if (GetParam() == "http") {
    http = std::make_unique<http_gateway>(dir / "gateway.json");
    ASSERT_GT(http->port(), 0);
    transport = "http " + http->url();
  }
  const json listed = sdk({{"do", "list"}}, transport);
  ASSERT_FALSE(listed.contains("failed")) << listed.dump();
  EXPECT_EQ(listed["server"]["name"], "tool-effects-gateway");
  json by_name = json::object();
  for (const auto& t : listed["tools"]) by_name[t["name"].get<std::string>()] = t;
  EXPECT_EQ(hints(by_name.at("exec")), unknown_hints);
  EXPECT_EQ(by_name["read_graph"]["annotations"]["readOnlyHint"], true);
  EXPECT_EQ(by_name["read_graph"]["_meta"]["io.github.tool-effects/provenance"]["source"], "overlay");
  EXPECT_EQ(by_name["create_entities"]["annotations"]["readOnlyHint"], false);
  EXPECT_TRUE(by_name["create_entities"]["inputSchema"]["properties"].contains("entities")) << "the upstream's schema";

  const json created = sdk({{"do", "call"},
                            {"tool", "create_entities"},
                            {"arguments", {{"entities", {{{"name", "gw"}, {"entityType", "test"}, {"observations", {"seen"}}}}}}}},
                           transport);
  ASSERT_FALSE(created.contains("failed")) << created.dump();
  EXPECT_FALSE(created["results"][0].value("isError", false)) << created.dump();
  const json graph = sdk({{"do", "call"}, {"tool", "read_graph"}, {"arguments", json::object()}}, transport);
  EXPECT_EQ(graph["results"][0]["structuredContent"]["entities"][0]["name"], "gw") << graph.dump();
}

INSTANTIATE_TEST_SUITE_P(Transports, GatewaySdk, ::testing::Values("stdio", "http"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace gateway_hints_test_ns
