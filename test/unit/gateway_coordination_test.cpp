// Coordination across every client of the gateway: four official TypeScript SDK clients (each its own HTTP
// session) send 50 increments each, all at once, of one account of a racy upstream (the bank of
// test/mcp/bank_server.cpp with --uncoordinated: its read-modify-write runs unguarded). Through the gateway none
// is lost: the calls conflict on the account the upstream's declaration names, so the gateway's one coordinator
// runs them one at a time, whichever client sent them. The control: the same clients straight to the same
// upstream (over HTTP) lose many. The audit log says which calls each waited for, and why.
#include <cstddef>
#include <cstdlib>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/gateway/metrics.hpp>

#include "gateway_test_support.hpp"
#include "sanitizers.hpp"

// Every allocation of this program counted, per thread: what gateway_metrics::observe allocates. Not under
// AddressSanitizer or ThreadSanitizer, whose runtimes define operator new themselves (the link would fail).
#if TOOL_EFFECTS_TEST_TSAN || TOOL_EFFECTS_TEST_ASAN
#define GATEWAY_COUNTS_ALLOCATIONS 0
#else
#define GATEWAY_COUNTS_ALLOCATIONS 1
namespace {
thread_local std::size_t allocations = 0;
}  // namespace
void* operator new(std::size_t n) {
  ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// Not inlined: g++ would see free() of operator new's pointer at the call site (-Wmismatched-new-delete).
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace gateway_coordination_test_ns {

using namespace gateway_test;

namespace {
const json increments = {{"do", "increments"},         {"clients", 4},           {"calls", 50},
                         {"tool", "add_to_balance"},   {"arguments", {{"acct", "shared"}}},
                         {"read", "get_balance"},      {"read_arguments", {{"acct", "shared"}}}};

// The samples of a Prometheus exposition (a URL or a file) as the official client library's parser reads them
// (test/mcp/prometheus_parse.py); nullopt when it does not parse.
std::optional<json> prometheus_samples(const std::string& source) {
  const auto [status, out] =
      run("/usr/bin/python3 " TOOL_EFFECTS_MCP_TEST_DIR "/prometheus_parse.py '" + source + "'");
  if (status == 3) throw std::runtime_error("python3-prometheus-client is not installed");
  if (status != 0) return std::nullopt;
  return json::parse(out);
}
#define REQUIRE_PROMETHEUS_PARSER()                                                                          \
  do {                                                                                                       \
    if (gateway_test::run("/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null").first != 0)          \
      GTEST_SKIP() << "python3-prometheus-client is not installed (./scripts/check installs it)";           \
  } while (0)
// The value of the sample `name` whose labels include `labels`; -1 when there is none.
double sample(const json& samples, const std::string& name, const json& labels) {
  for (const auto& s : samples) {
    if (s["name"] != name) continue;
    bool all = true;
    for (const auto& [k, v] : labels.items()) all = all && s["labels"].contains(k) && s["labels"][k] == v;
    if (all) return s["value"].get<double>();
  }
  return -1;
}
}  // namespace

// The gateway's metrics are its audit records counted, written so that the official parser reads them back
// whatever a tool is called: a name with a quote, a backslash and a line feed comes back as it was. The control:
// the same sample written without escaping does not parse.
TEST(GatewayMetrics, TheExpositionParsesBackWithTheOfficialParserWhateverAToolIsCalled) {
  REQUIRE_PROMETHEUS_PARSER();
  const std::string hostile = "a\"b\\c\nd} 1\n";
  tool_effects::gateway_metrics m;
  m.observe({{"server", "fs"}, {"tool", hostile}, {"outcome", "ok"}, {"approval", "approved_by_user"},
             {"waited_for", json::array({{{"call", "x"}}, {{"call", "y"}}})}, {"waited_ms", 12.5}, {"attempts", 3},
             {"duration_ms", 7.0}});
  m.observe({{"server", "fs"}, {"tool", hostile}, {"outcome", "denied"}, {"approval", "declined_by_user"},
             {"waited_for", json::array()}, {"waited_ms", 0.0}, {"attempts", 1}, {"duration_ms", 2000.0}});
  m.observe({{"server", "fs"}, {"tool", "read"}, {"outcome", "in_doubt"}});  // no call ran: no duration
  m.observe({{"tool", "read"}, {"outcome", "ok"}});                          // no server: not counted
  const auto dir = fresh_dir("metrics");
  write_file(dir / "metrics.txt", m.text({{"fs", 2}}));
  const auto samples = prometheus_samples((dir / "metrics.txt").string());
  ASSERT_TRUE(samples) << read_file(dir / "metrics.txt");
  const json tool = {{"server", "fs"}, {"tool", hostile}};
  auto with = [&](const char* k, const char* v) {
    json l = tool;
    l[k] = v;
    return l;
  };
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_calls_total", with("outcome", "ok")), 1);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_calls_total", with("outcome", "denied")), 1);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_calls_total", {{"tool", "read"}, {"outcome", "in_doubt"}}), 1);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_calls_total", {{"tool", "read"}, {"outcome", "ok"}}), -1);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_call_waits_total", tool), 1);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_conflicts_total", tool), 2);
  EXPECT_DOUBLE_EQ(sample(*samples, "tool_effects_gateway_wait_seconds_total", tool), 0.0125);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_retries_total", tool), 2);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_approvals_total", with("decision", "approved_by_user")), 1);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_approvals_total", with("decision", "declined_by_user")), 1);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_call_duration_seconds_bucket", with("le", "0.005")), 0);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_call_duration_seconds_bucket", with("le", "0.01")), 1);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_call_duration_seconds_bucket", with("le", "1")), 1);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_call_duration_seconds_bucket", with("le", "2.5")), 2);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_call_duration_seconds_bucket", with("le", "+Inf")), 2);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_call_duration_seconds_count", tool), 2);
  EXPECT_DOUBLE_EQ(sample(*samples, "tool_effects_gateway_call_duration_seconds_sum", tool), 2.007);
  EXPECT_EQ(sample(*samples, "tool_effects_gateway_upstream_restarts_total", {{"server", "fs"}}), 2);

  write_file(dir / "raw.txt", "# TYPE tool_effects_gateway_calls counter\ntool_effects_gateway_calls_total{tool=\"" +
                                  hostile + "\"} 1\n");
  EXPECT_FALSE(prometheus_samples((dir / "raw.txt").string())) << "the control: unescaped, the name breaks the line";
}

// A record of a tool already counted is counted without allocating: its row is found through views of the
// record's names, not copies (names longer than std::string's inline buffer, so a copy would allocate). The
// control: the first record of a tool allocates its row.
TEST(GatewayMetrics, ARecordOfAToolAlreadyCountedAllocatesNothing) {
#if !GATEWAY_COUNTS_ALLOCATIONS
  GTEST_SKIP() << "allocations are not counted under a sanitizer (its runtime defines operator new)";
#else
  const json record = {{"server", "a-server-with-a-long-name"}, {"tool", "a-tool-with-a-longer-name-still"},
                       {"outcome", "ok"},
                       {"approval", "approved_by_user"},
                       {"waited_for", json::array({{{"call", "x"}}})},
                       {"waited_ms", 1.5},
                       {"attempts", 2},
                       {"duration_ms", 3.0}};
  tool_effects::gateway_metrics m;
  const std::size_t before_first = allocations;
  m.observe(record);
  EXPECT_GT(allocations - before_first, 0u) << "the control: a new tool's row is allocated";
  const std::size_t before = allocations;
  m.observe(record);
  m.observe(record);
  EXPECT_EQ(allocations - before, 0u);
  EXPECT_NE(m.text().find("tool_effects_gateway_calls_total{server=\"a-server-with-a-long-name\",tool=\"a-tool-with-"
                          "a-longer-name-still\",outcome=\"ok\"} 3\n"),
            std::string::npos)
      << m.text();
#endif
}

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

  // The same calls in the metrics the listener serves at /metrics: the audit log, counted.
  if (run("/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null").first != 0)
    GTEST_SKIP() << "python3-prometheus-client is not installed: /metrics not checked (./scripts/check installs it)";
  const auto metrics = prometheus_samples("http://127.0.0.1:" + std::to_string(g.port()) + "/metrics");
  ASSERT_TRUE(metrics);
  const json add = {{"server", "bank"}, {"tool", "add_to_balance"}};
  json ok = add;
  ok["outcome"] = "ok";
  EXPECT_EQ(sample(*metrics, "tool_effects_gateway_calls_total", ok), 200);
  EXPECT_EQ(sample(*metrics, "tool_effects_gateway_call_waits_total", add), static_cast<double>(waited));
  EXPECT_GE(sample(*metrics, "tool_effects_gateway_conflicts_total", add), static_cast<double>(waited));
  EXPECT_EQ(sample(*metrics, "tool_effects_gateway_call_duration_seconds_count", add), 200);
  EXPECT_EQ(sample(*metrics, "tool_effects_gateway_upstream_restarts_total", {{"server", "bank"}}), 0);
}

// The bank declares add_to_balance a write of one account (its target), but it reads and writes back the whole
// ledger: increments of two accounts at once lose each other's. Trusted, that too narrow declaration is what the
// gateway coordinates by, and the control loses increments; the overlay's declaration (a write of all of
// bank/accounts, no target) replaces it, and none is lost. The gateway is as honest as the declaration.
TEST(GatewayCoordination, TheOverlayCorrectsATrustedServersTooNarrowDeclaration) {
  GATEWAY_REQUIRE_NODE();
  const auto dir = fresh_dir("narrow");
  int runs = 0;
  // Two processes, one per account, whose calls start together (a barrier: the processes may start far apart).
  const auto run_two_accounts = [&](const fs::path& config) {
    http_gateway g(config);
    json results[2];
    const auto scenario = [&](const char* acct) {
      json s = increments;
      s["clients"] = 2;
      s["calls"] = 50;
      s["arguments"]["acct"] = s["read_arguments"]["acct"] = acct;
      s["barrier"] = (dir / ("barrier" + std::to_string(runs))).string();
      return s;
    };
    std::thread other([&] { results[1] = sdk(scenario("b"), "http " + g.url()); });
    results[0] = sdk(scenario("a"), "http " + g.url());
    other.join();
    ++runs;
    return results[0]["read"]["balance"].get<int>() + results[1]["read"]["balance"].get<int>();
  };
  json bank = {{"command", bank_server()}, {"args", {"--uncoordinated"}}, {"trust", "trusted"}};
  write_file(dir / "trusted.json", json{{"mcpServers", {{"bank", bank}}}}.dump());
  // The control's race needs the two accounts' calls to overlap: they start together, and on a loaded machine
  // may still be served one account after the other, so it must lose increments in one of three runs.
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
