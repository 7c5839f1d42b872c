// Protocol versions (issue 20, point 1): every version the official
// TypeScript SDK client accepts, and 2026-07-28 spoken as a dual-era client
// (server/discover probe, fall back to initialize, per-request _meta), against
// test/mcp/fake_server.py in each era (--era legacy|modern|dual) and each
// legacy version. The fake server logs every request line it receives, so the
// tests check what went over the wire, not only what came back.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

namespace mcp_versions_test_ns {

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

te::mcp_client_options fast_options() { return mcp_test::fast_options(); }

using mcp_test::error_kind;

// A file the fake server appends every request line to (--log), removed at the end.
struct wire_log {
  fs::path path;
  wire_log() {
    static int n = 0;
    path = fs::temp_directory_path() / ("te_mcp_versions_" + std::to_string(::getpid()) + "_" + std::to_string(++n) + ".log");
    fs::remove(path);
  }
  ~wire_log() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  wire_log(const wire_log&) = delete;
  wire_log& operator=(const wire_log&) = delete;
  // Every request the server received, in order.
  [[nodiscard]] std::vector<json> requests() const {
    std::vector<json> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(json::parse(line));
    return out;
  }
  [[nodiscard]] std::vector<std::string> methods() const {
    std::vector<std::string> out;
    for (const auto& r : requests()) out.push_back(r.value("method", ""));
    return out;
  }
  [[nodiscard]] std::size_t count(const std::string& method) const {
    std::size_t n = 0;
    for (const auto& m : methods()) n += m == method;
    return n;
  }
};

std::vector<std::string> fake(const wire_log& log, std::vector<std::string> extra) {
  extra.emplace_back("--log");
  extra.push_back(log.path.string());
  return mcp_test::fake_server(std::move(extra));
}

std::vector<std::string> legacy_versions() {
  std::vector<std::string> out;
  for (const auto& v : te::mcp_protocol_versions())
    if (!te::mcp_version_is_modern(v)) out.push_back(v);
  return out;
}

constexpr const char* pv_key = "io.modelcontextprotocol/protocolVersion";
constexpr const char* caps_key = "io.modelcontextprotocol/clientCapabilities";
constexpr const char* info_key = "io.modelcontextprotocol/clientInfo";

TEST(McpVersions, TheListHoldsEveryVersionOfTheTypeScriptSdkClientAndTheModernOne) {
  const auto& v = te::mcp_protocol_versions();
  for (const char* ts : {"2024-10-07", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
    EXPECT_NE(std::find(v.begin(), v.end(), ts), v.end()) << ts;
  EXPECT_EQ(v.front(), "2026-07-28");  // preferred
  for (std::size_t i = 1; i < v.size(); ++i) EXPECT_GT(v[i - 1], v[i]) << "newest first";
  EXPECT_TRUE(te::mcp_version_is_modern("2026-07-28"));
  EXPECT_TRUE(te::mcp_version_is_modern("2027-01-01"));
  EXPECT_FALSE(te::mcp_version_is_modern("2025-11-25"));
  EXPECT_FALSE(te::mcp_version_is_modern("2024-10-07"));
  EXPECT_FALSE(te::mcp_version_is_modern("draft"));
  EXPECT_FALSE(te::mcp_version_is_modern("2026-07-28-x"));
  EXPECT_FALSE(te::mcp_version_is_modern(""));
}

// A 2026-07-28-only server: the probe finds it modern; every request carries
// the per-request _meta (the server refuses any without it); no initialize,
// no notifications/initialized; ping becomes server/discover.
TEST(McpVersions, AModernServerIsProbedAndSpokenToStatelessly) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  wire_log log;
  auto client = te::mcp_client::launch(pool, fake(log, {"--era", "modern"}), fast_options());
  EXPECT_EQ(client.protocol_version(), "2026-07-28");
  const json info = client.server_info();
  EXPECT_EQ(info["serverInfo"]["name"], "fake-modern");
  EXPECT_EQ(info["supportedVersions"], json::array({"2026-07-28"}));
  EXPECT_EQ(info["instructions"], "a fake modern server");
  const json tools = client.list_tools();
  ASSERT_EQ(tools["tools"].size(), 16U);  // both pages
  const json r = client.call("meta");
  EXPECT_EQ(r["resultType"], "complete");
  EXPECT_EQ(r["structuredContent"][pv_key], "2026-07-28");
  EXPECT_EQ(r["structuredContent"][caps_key], json::object());
  EXPECT_EQ(r["structuredContent"][info_key]["name"], "tool_effects");
  EXPECT_EQ(te::mcp_text(client.call("echo", {{"text", "hi"}})), "hi");
  client.ping();
  client.close();

  const auto methods = log.methods();
  ASSERT_FALSE(methods.empty());
  EXPECT_EQ(methods.front(), "server/discover");
  EXPECT_EQ(log.count("initialize"), 0U);
  EXPECT_EQ(log.count("notifications/initialized"), 0U);
  EXPECT_EQ(log.count("ping"), 0U);
  EXPECT_EQ(log.count("server/discover"), 2U);  // the probe and ping()
  for (const auto& req : log.requests()) {
    if (!req.contains("id")) continue;
    EXPECT_EQ(req["params"]["_meta"][pv_key], "2026-07-28") << req.dump();
    EXPECT_TRUE(req["params"]["_meta"][caps_key].is_object()) << req.dump();
  }
}

// The control: a client that only knows initialize (the legacy versions)
// fails against the same server, as the specification's matrix says.
TEST(McpVersions, WithoutTheProbeAModernServerRefusesTheClient) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  wire_log log;
  auto o = fast_options();
  o.protocol_versions = legacy_versions();
  o.restart_on_exit = false;
  std::string what;
  EXPECT_EQ(error_kind([&] { (void)te::mcp_client::launch(pool, fake(log, {"--era", "modern"}), o); }, &what),
            "rpc_error");
  EXPECT_NE(what.find("speaks only 2026-07-28"), std::string::npos) << what;
  EXPECT_EQ(log.count("server/discover"), 0U);
}

// resultType: "input_required" (the client declares no capabilities to
// answer it) and an unknown type fail the call alone; the connection lives on.
TEST(McpVersions, AResultTypeOtherThanCompleteFailsTheCallAlone) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  wire_log log;
  auto client = te::mcp_client::launch(pool, fake(log, {"--era", "modern"}), fast_options());
  std::string what;
  EXPECT_EQ(error_kind([&] { (void)client.call("needs_input"); }, &what), "protocol_error");
  EXPECT_NE(what.find("input_required"), std::string::npos) << what;
  EXPECT_NE(what.find("elicitation/create"), std::string::npos) << what;
  EXPECT_EQ(error_kind([&] { (void)client.call("odd_result"); }, &what), "protocol_error");
  EXPECT_NE(what.find("at /result/resultType: unknown result type \"partial\""), std::string::npos) << what;
  EXPECT_EQ(te::mcp_text(client.call("echo", {{"text", "still here"}})), "still here");
  EXPECT_EQ(client.restarts(), 0U);
  client.close();
}

// UnsupportedProtocolVersionError: the client retries with a modern version
// of its own that the server lists; with none, unsupported_protocol_version
// (and no fall back to initialize).
TEST(McpVersions, AnUnsupportedVersionIsRetriedWithOneTheServerNames) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  {
    wire_log log;
    auto o = fast_options();
    o.protocol_versions = {"2027-01-01", "2026-07-28", "2025-11-25"};  // a newer modern version preferred
    auto client = te::mcp_client::launch(pool, fake(log, {"--era", "modern"}), o);
    EXPECT_EQ(client.protocol_version(), "2026-07-28");
    EXPECT_EQ(client.call("meta")["structuredContent"][pv_key], "2026-07-28");
    client.close();
    const auto reqs = log.requests();
    ASSERT_GE(reqs.size(), 2U);
    EXPECT_EQ(reqs[0]["params"]["_meta"][pv_key], "2027-01-01");
    EXPECT_EQ(reqs[1]["method"], "server/discover");
    EXPECT_EQ(reqs[1]["params"]["_meta"][pv_key], "2026-07-28");
    EXPECT_EQ(log.count("initialize"), 0U);
  }
  {
    wire_log log;
    auto o = fast_options();
    o.restart_on_exit = false;
    std::string what;
    EXPECT_EQ(error_kind([&] {
                (void)te::mcp_client::launch(pool, fake(log, {"--era", "modern", "--supported", "2099-01-01"}), o);
              },
                         &what),
              "unsupported_protocol_version");
    EXPECT_NE(what.find("2099-01-01"), std::string::npos) << what;
    EXPECT_EQ(log.count("initialize"), 0U);
  }
}

// A dual-era server: the probe keeps the client modern. A legacy-only client
// gets the legacy side, and then no _meta is sent.
TEST(McpVersions, ADualEraServerServesBothEras) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  {
    wire_log log;
    auto client = te::mcp_client::launch(pool, fake(log, {"--era", "dual"}), fast_options());
    EXPECT_EQ(client.protocol_version(), "2026-07-28");
    EXPECT_EQ(client.call("meta")["structuredContent"][pv_key], "2026-07-28");
    client.close();
    EXPECT_EQ(log.count("initialize"), 0U);
  }
  {
    wire_log log;
    auto o = fast_options();
    o.protocol_versions = legacy_versions();
    auto client = te::mcp_client::launch(pool, fake(log, {"--era", "dual"}), o);
    EXPECT_EQ(client.protocol_version(), "2025-11-25");
    EXPECT_EQ(client.call("meta")["structuredContent"], json::object());  // no _meta on a legacy session
    client.close();
    EXPECT_EQ(log.methods().front(), "initialize");
  }
}

// Every legacy version: the probe gets an error (the fake answers -32601, as
// the TypeScript SDK's servers do), the client falls back to initialize and
// accepts the version. What older versions lack (annotations before
// 2025-03-26, structuredContent/outputSchema/title before 2025-06-18) is
// tolerated: the tools import with the specification's defaults.
TEST(McpVersions, EveryLegacyVersionIsAcceptedAndWhatItLacksIsTolerated) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  for (const auto& v : legacy_versions()) {
    SCOPED_TRACE(v);
    wire_log log;
    auto client = te::mcp_client::launch(pool, fake(log, {"--version", v}), fast_options());
    EXPECT_EQ(client.protocol_version(), v);
    const json tools = client.list_tools();
    ASSERT_EQ(tools["tools"].size(), 13U);
    EXPECT_EQ(tools["tools"][0].contains("annotations"), v >= "2025-03-26");
    const auto imported = te::import_mcp_tools(tools, te::server_trust::trusted);
    ASSERT_EQ(imported.size(), 13U);
    // echo: read-only when annotated; without annotations the defaults (a destructive write)
    EXPECT_EQ(te::is_parallel_safe(imported[0].description.effects), v >= "2025-03-26");
    const json r = client.call("echo", {{"text", "old"}});
    EXPECT_EQ(te::mcp_text(r), "old");
    EXPECT_EQ(r.contains("structuredContent"), v >= "2025-06-18");
    client.ping();
    client.close();
    const auto methods = log.methods();
    ASSERT_GE(methods.size(), 2U);
    EXPECT_EQ(methods[0], "server/discover");
    EXPECT_EQ(methods[1], "initialize");
    EXPECT_EQ(log.requests()[1]["params"]["protocolVersion"], "2025-11-25");  // the newest legacy one offered
    // No _meta reaches a legacy server after the probe.
    for (std::size_t i = 1; i < log.requests().size(); ++i)
      EXPECT_FALSE(log.requests()[i].contains("params") && log.requests()[i]["params"].is_object() &&
                   log.requests()[i]["params"].contains("_meta"));
  }
}

// The control of the bug: the versions accepted before (2025-11-25,
// 2025-06-18 only) refuse a 2024-11-05 server such as server-postgres 0.6.2.
TEST(McpVersions, TheFormerVersionListRefusedA20241105Server) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  wire_log log;
  auto o = fast_options();
  o.protocol_versions = {"2025-11-25", "2025-06-18"};
  o.restart_on_exit = false;
  EXPECT_EQ(error_kind([&] { (void)te::mcp_client::launch(pool, fake(log, {"--version", "2024-11-05"}), o); }),
            "unsupported_protocol_version");
  auto client = te::mcp_client::launch(pool, fake(log, {"--version", "2024-11-05"}), fast_options());
  EXPECT_EQ(client.protocol_version(), "2024-11-05");
  client.close();
}

// A legacy server that ignores the probe: after discover_timeout the client
// falls back to initialize; the era is remembered, so a restart does not
// probe again.
TEST(McpVersions, AnUnansweredProbeFallsBackAfterItsTimeoutAndTheEraIsRemembered) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  wire_log log;
  auto o = fast_options();
  o.discover_timeout = milliseconds(300);
  const auto t = std::chrono::steady_clock::now();
  auto client = te::mcp_client::launch(pool, fake(log, {"--silent-probe"}), o);
  EXPECT_GE(std::chrono::steady_clock::now() - t, milliseconds(300));
  EXPECT_EQ(client.protocol_version(), "2025-11-25");
  EXPECT_EQ(client.timeouts(), 1U);
  client.restart();
  EXPECT_EQ(te::mcp_text(client.call("echo", {{"text", "again"}})), "again");
  client.close();
  EXPECT_EQ(log.count("server/discover"), 1U);
  EXPECT_EQ(log.count("initialize"), 2U);
}

// A legacy server that drops requests it does not know reaches the client whatever initialize_timeout is: the
// probe waits at most a quarter of it (and discover_timeout, 1 s by default), so three quarters are left for
// initialize. Control (by hand): with the probe allowed all of discover_timeout (5 s before) the launch below
// times out, the probe having used the whole 1 s.
TEST(McpVersions, AServerThatIgnoresTheProbeStartsWithinAShortInitializeTimeout) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  wire_log log;
  auto o = fast_options();
  o.initialize_timeout = milliseconds(2000);
  o.discover_timeout = milliseconds(10000);
  o.restart_on_exit = false;
  const auto t = std::chrono::steady_clock::now();
  auto client = te::mcp_client::launch(pool, fake(log, {"--silent-probe"}), o);
  EXPECT_LT(std::chrono::steady_clock::now() - t, milliseconds(2000));
  EXPECT_EQ(client.protocol_version(), "2025-11-25");
  EXPECT_EQ(te::mcp_text(client.call("echo", {{"text", "late"}})), "late");
  client.close();
  EXPECT_EQ(te::mcp_client_options{}.discover_timeout, milliseconds(1000));
}

// One deadline for the whole handshake (issue 27): a server that answers
// nothing (sleep(1) reads no request) fails launch with timeout once
// initialize_timeout has passed since the handshake began: the probe's wait
// counts against it. Before, the probe waited discover_timeout and then
// initialize waited initialize_timeout afresh: 4 s here.
TEST(McpVersions, AServerThatAnswersNothingFailsTheHandshakeAtItsOneDeadline) {
  boost::asio::thread_pool pool(2);
  auto o = fast_options();
  o.discover_timeout = milliseconds(3000);
  o.initialize_timeout = milliseconds(1000);
  o.restart_on_exit = false;
  std::string what;
  const auto t = std::chrono::steady_clock::now();
  EXPECT_EQ(error_kind([&] { (void)te::mcp_client::launch(pool, {"sleep", "30"}, o); }, &what), "timeout");
  const auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t);
  EXPECT_GE(took, milliseconds(1000));
  EXPECT_LT(took, milliseconds(2500)) << "the handshake took " << took.count() << " ms: " << what;
  EXPECT_NE(what.find("the handshake did not complete within 1000 ms (options.initialize_timeout)"), std::string::npos)
      << what;
}

// A client that speaks only the modern version, against a legacy server:
// a deterministic unsupported_protocol_version, not an initialize.
TEST(McpVersions, AModernOnlyClientRefusesALegacyServer) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  wire_log log;
  auto o = fast_options();
  o.protocol_versions = {"2026-07-28"};
  o.restart_on_exit = false;
  std::string what;
  EXPECT_EQ(error_kind([&] { (void)te::mcp_client::launch(pool, fake(log, {}), o); }, &what),
            "unsupported_protocol_version");
  EXPECT_NE(what.find("does not speak a modern version"), std::string::npos) << what;
  EXPECT_NE(what.find("-32601"), std::string::npos) << what;
  EXPECT_EQ(log.count("initialize"), 0U);
}

}  // namespace mcp_versions_test_ns
