// The server under a client no one here wrote: the official TypeScript SDK's Client (pinned in
// test/mcp/package-lock.json, installed by the mcp_servers fixture) drives test/mcp/bank_server.cpp over stdio
// and over Streamable HTTP through test/mcp/sdk_client.cjs. It lists the tools with their derived annotations
// and _meta accesses (exact texts), makes 4 x 100 concurrent increments of one account (over HTTP from four
// clients, each its own session: none lost; the control without coordination loses some), cancels a call
// waiting for its grant (it never runs) and follows progress. Every test runs once per transport (/stdio,
// /http).
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mcp_test_support.hpp"

namespace mcp_server_sdk_test_ns {

using nlohmann::json;

namespace {
// Runs the SDK client over `transport` ("stdio" or "http") on `scenario` against the bank server (with
// `server_args`); its one JSON line.
json sdk_client(const std::string& transport, const std::string& scenario, const std::string& server_args = "") {
  const std::string cmd = "node " TOOL_EFFECTS_MCP_TEST_DIR "/sdk_client.cjs " + mcp_test::servers_dir() +
                          "/node_modules " + transport + " " + scenario + " " TOOL_EFFECTS_MCP_BANK_SERVER " " +
                          server_args;
  const auto [status, out] = process_test::shell(cmd);
  return process_test::json_result(status, out);
}
}  // namespace

class McpServerSdk : public ::testing::TestWithParam<std::string> {
 protected:
  json run(const std::string& scenario, const std::string& server_args = "") const {
    return sdk_client(GetParam(), scenario, server_args);
  }
};

TEST_P(McpServerSdk, TheTypeScriptClientListsTheDerivedAnnotationsAndAccesses) {
  MCP_REQUIRE_NODE_SERVERS();
  const json got = run("list");
  ASSERT_FALSE(got.contains("failed")) << got.dump();
  EXPECT_EQ(got.at("server"), json::parse(R"({"name": "bank", "version": "1.0.0"})"));
  const json expected = json::parse(R"x([
    {"name": "get_balance", "title": "Balance", "description": "The balance of one account.",
     "inputSchema": {"type": "object", "properties": {"acct": {"type": "string"}}, "required": ["acct"]},
     "annotations": {"title": "Balance", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                     "openWorldHint": false},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["read"], "reads": ["bank/accounts"],
                                                   "identity": {"target_arg": "acct"}}}},
    {"name": "add_to_balance", "description": "Adds `amount` (default 1) to one account.",
     "inputSchema": {"type": "object", "properties": {"acct": {"description": "what the call acts on (its target)"}}, "required": ["acct"]},
     "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["write"], "writes": ["bank/accounts"],
                                                   "identity": {"target_arg": "acct"}}}},
    {"name": "slow_report", "description": "Takes `ms` milliseconds (default 2000) to read every account.",
     "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["read", "idempotent"], "reads": ["bank"]}}}
  ])x");
  EXPECT_EQ(got.at("tools"), expected) << got.at("tools").dump(1);
}

// Four concurrent callers, each making 100 add_to_balance(shared) one after the other: over HTTP four SDK clients
// of one server, each its own session; over stdio one client process stands for them. The server's coordinator
// serialises them, none is lost (400). Control: the same server with a coordinator that grants everything
// loses some.
TEST_P(McpServerSdk, ConcurrentIncrementsFromTheTypeScriptClientLoseNone) {
  MCP_REQUIRE_NODE_SERVERS();
  const json got = run("increments 4 100");
  ASSERT_FALSE(got.contains("failed")) << got.dump();
  EXPECT_EQ(got.at("sessions"), GetParam() == "http" ? 4 : 1) << "distinct Mcp-Session-Ids";
  EXPECT_EQ(got.at("errors"), 0);
  EXPECT_EQ(got.at("balance"), json::parse(R"({"balance": 400})"));
  const json control = run("increments 4 100", "--uncoordinated");
  ASSERT_FALSE(control.contains("failed")) << control.dump();
  EXPECT_LT(control.at("balance").at("balance").get<int>(), 400) << "the control loses increments";
}

// The SDK client cancels (AbortSignal: notifications/cancelled) an add_to_balance waiting behind slow_report
// (which reads the whole bank): the call never runs, the balance stays 0.
TEST_P(McpServerSdk, ACancelledWaitingCallNeverRuns) {
  MCP_REQUIRE_NODE_SERVERS();
  const json got = run("cancel");
  ASSERT_FALSE(got.contains("failed")) << got.dump();
  EXPECT_EQ(got.at("add"), "cancelled");
  EXPECT_EQ(got.at("balance"), json::parse(R"({"balance": 0})"));
  EXPECT_EQ(got.at("report"), json::object());
}

// The SDK client asks for progress (onprogress: a progressToken in _meta); slow_report reports three of its
// four quarters through its attempt_context, which reach the client as notifications/progress, in order.
// The last quarter is not reported: a progress reported as the tool returns is on the wire before the response
// (McpServerStdio.ProgressReachesTheWireBeforeTheResponse), but this SDK client runs notification handlers a
// microtask later and a response at once, so when both arrive in one read it drops the progress (1 run of 30
// over stdio, reporting all four; see docs/mcp.md).
TEST_P(McpServerSdk, TheTypeScriptClientFollowsProgress) {
  MCP_REQUIRE_NODE_SERVERS();
  const json got = run("progress");
  ASSERT_FALSE(got.contains("failed")) << got.dump();
  EXPECT_EQ(got.at("progress"), json::parse(R"([
    {"progress": 1, "total": 4, "message": "quarter 1"}, {"progress": 2, "total": 4, "message": "quarter 2"},
    {"progress": 3, "total": 4, "message": "quarter 3"}])"));
  EXPECT_EQ(got.at("report"), json::object());
}

INSTANTIATE_TEST_SUITE_P(Transports, McpServerSdk, ::testing::Values("stdio", "http"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace mcp_server_sdk_test_ns
