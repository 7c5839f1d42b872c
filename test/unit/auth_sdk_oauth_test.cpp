// The OAuth flow of a client no one here wrote: the official TypeScript SDK's Client (pinned in
// test/mcp/package-lock.json, installed by the mcp_servers fixture) against test/mcp/bank_server.cpp serving as an
// OAuth 2.1 resource server (`--authorization`: mcp_resource_server with RFC 7662 introspection and scopes derived
// from the tools' effects), with test/mcp/oauth_server.py as the local authorization server. Driven by
// test/mcp/sdk_oauth_client.cjs, which starts both servers on free ports of 127.0.0.1 and stops them by pid.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "process_support.hpp"

namespace {

using nlohmann::json;

using process_test::servers_dir;

bool has_program(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

// Runs the scenario (with `gateway`, through tool-effects-gateway in front of the bank); its one JSON line (or
// {"failed": what it printed}).
json sdk_oauth_client(const std::string& scenario, const std::string& gateway = "") {
  const auto work = std::filesystem::temp_directory_path() /
                    ("te-sdk-oauth-" + std::to_string(::getpid()) + "-" + scenario + (gateway.empty() ? "" : "-gw"));
  const std::string cmd = "node " TOOL_EFFECTS_MCP_TEST_DIR "/sdk_oauth_client.cjs " + servers_dir() +
                          "/node_modules " + scenario + " " TOOL_EFFECTS_MCP_TEST_DIR "/oauth_server.py " +
                          TOOL_EFFECTS_MCP_BANK_SERVER " " + work.string() + (gateway.empty() ? "" : " " + gateway);
  const auto [status, out] = process_test::shell(cmd);
  std::filesystem::remove_all(work);
  return process_test::json_result(status, out);
}

#define REQUIRE_SDK_AND_AUTHORIZATION()                                                                       \
  do {                                                                                                       \
    if (!has_program("node") || !has_program("python3")) GTEST_SKIP() << "node or python3 is not installed"; \
    ASSERT_TRUE(std::filesystem::exists(servers_dir() + "/node_modules/@modelcontextprotocol/sdk"))          \
        << "the TypeScript SDK is not installed in " << servers_dir();                                       \
    if (!kAuthorization) GTEST_SKIP() << "built without OpenSSL: the bank serves no --authorization";       \
  } while (0)

#ifdef TOOL_EFFECTS_BANK_AUTHORIZATION
constexpr bool kAuthorization = true;
#else
constexpr bool kAuthorization = false;
#endif

}  // namespace

// The SDK's own flow, end to end: the first connect is refused with 401, the SDK finds the authorization server
// through the RFC 9728 document, registers, sends the user to authorize with PKCE and the resource's canonical URI
// (RFC 8707), exchanges the code, and the second connect lists and calls the tools with the token, whose scopes
// are those the server derived from the effects and published.
TEST(SdkOauth, TheTypeScriptClientsFlowCompletesAndItsTokenCallsTheTools) {
  REQUIRE_SDK_AND_AUTHORIZATION();
  const json got = sdk_oauth_client("flow");
  ASSERT_FALSE(got.contains("failed")) << got.dump();
  EXPECT_EQ(got.at("first_connect"), "unauthorized") << got.dump();
  EXPECT_EQ(got.at("registered"), true);
  EXPECT_EQ(got.at("pkce"), "S256");
  EXPECT_EQ(got.at("authorization_resource"), got.at("resource")) << got.dump();
  const std::string scope = got.at("token_scope").get<std::string>();
  for (const char* s : {"bank/accounts:read", "bank/accounts:write", "bank:read"}) {
    EXPECT_NE(scope.find(s), std::string::npos) << s << " not in the token's scope: " << scope;
  }
  EXPECT_EQ(got.at("tools"), json::parse(R"(["add_to_balance", "get_balance", "slow_report"])"));
  EXPECT_EQ(got.at("add"), json::parse(R"({"balance": 5})"));
  EXPECT_EQ(got.at("balance"), json::parse(R"({"balance": 5})"));
}

// The control: the same client and servers without the flow get nothing.
TEST(SdkOauth, WithoutATokenTheSameClientIsRefused) {
  REQUIRE_SDK_AND_AUTHORIZATION();
  const json got = sdk_oauth_client("no_token");
  ASSERT_FALSE(got.contains("failed")) << got.dump();
  EXPECT_EQ(got.at("connected"), false) << got.dump();
  EXPECT_FALSE(got.contains("tools")) << got.dump();
  EXPECT_NE(got.value("error", "").find("Unauthorized: a bearer token is required"), std::string::npos) << got.dump();
}

#ifdef TOOL_EFFECTS_GATEWAY
// The same flow through tool-effects-gateway, whose configuration makes its HTTP listener a resource server of the
// same authorization server (gateway.http.authorization: introspection, scopes from the tools' effects), in front
// of the bank over stdio: the SDK is refused, finds the authorization server through the gateway's RFC 9728
// document, gets a token for the gateway's URI with the scopes the gateway derived, and calls the bank's tools
// through it. The audit log names the token's subject; /metrics wants the token too.
TEST(SdkOauth, TheTypeScriptClientsFlowCompletesThroughTheGateway) {
  REQUIRE_SDK_AND_AUTHORIZATION();
  const json got = sdk_oauth_client("flow", TOOL_EFFECTS_GATEWAY);
  ASSERT_FALSE(got.contains("failed")) << got.dump();
  EXPECT_EQ(got.at("first_connect"), "unauthorized") << got.dump();
  EXPECT_EQ(got.at("authorization_resource"), got.at("resource")) << got.dump();
  const std::string scope = got.at("token_scope").get<std::string>();
  for (const char* s : {"bank/accounts:read", "bank/accounts:write", "bank:read"})
    EXPECT_NE(scope.find(s), std::string::npos) << s << " not in the token's scope: " << scope;
  EXPECT_EQ(got.at("tools"), json::parse(R"(["add_to_balance", "get_balance", "slow_report"])"));
  EXPECT_EQ(got.at("add"), json::parse(R"({"balance": 5})"));
  EXPECT_EQ(got.at("balance"), json::parse(R"({"balance": 5})"));
  EXPECT_EQ(got.at("metrics_without_token"), 401);
  EXPECT_EQ(got.at("metrics_with_token"), 200);
  EXPECT_EQ(got.at("metrics_add_ok"), "1");
  ASSERT_EQ(got.at("audit").size(), 2u) << got.dump();
  for (const auto& r : got.at("audit")) EXPECT_EQ(r.at("principal"), "alice") << r.dump();
}

// The control: the same client without the flow is refused by the gateway.
TEST(SdkOauth, WithoutATokenTheGatewayRefusesTheSameClient) {
  REQUIRE_SDK_AND_AUTHORIZATION();
  const json got = sdk_oauth_client("no_token", TOOL_EFFECTS_GATEWAY);
  ASSERT_FALSE(got.contains("failed")) << got.dump();
  EXPECT_EQ(got.at("connected"), false) << got.dump();
  EXPECT_FALSE(got.contains("tools")) << got.dump();
  EXPECT_NE(got.value("error", "").find("Unauthorized: a bearer token is required"), std::string::npos) << got.dump();
}
#endif
