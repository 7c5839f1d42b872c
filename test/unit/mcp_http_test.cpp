// The Streamable HTTP transport (issue 20, <tool_effects/mcp/http.hpp>): the same mcp_client API and
// add_mcp_server over HTTP, against real HTTP servers started here and stopped by pid — test/mcp's
// http_server.py (JSON and SSE replies, sessions, the GET stream, fault modes; it logs every request it
// gets, so the tests read what the client sent) and the official TypeScript SDK's server
// (server-everything in its streamableHttp mode).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <optional>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/http.hpp>

#include "mcp_test_support.hpp"

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_http_test_ns {

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A server process started by the test (its own process group), stopped by pid.
class server_process {
 public:
  server_process(std::vector<std::string> argv, std::vector<std::string> env = {}) {
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    const std::string exe = te::mcp_find_program(argv[0]).string();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      for (auto& e : env) ::putenv(e.data());
      ::execv(exe.c_str(), a.data());
      ::_exit(127);
    }
  }
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;
  ~server_process() { stop(); }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
  [[nodiscard]] int pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

fs::path temp_dir() {
  static std::atomic<int> n{0};
  fs::path d = fs::temp_directory_path() / ("te_mcp_http_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// test/mcp/http_server.py with `flags`; its port once it listens.
struct http_server {
  explicit http_server(std::vector<std::string> flags = {}) : dir(temp_dir()) {
    std::vector<std::string> argv{"python3", std::string(TOOL_EFFECTS_MCP_TEST_DIR) + "/http_server.py", "--port-file",
                                  (dir / "port").string(), "--log", (dir / "log").string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    proc = std::make_unique<server_process>(argv);
    for (int i = 0; i < 500 && !fs::exists(dir / "port"); ++i) std::this_thread::sleep_for(10ms);
    std::ifstream(dir / "port") >> port;
  }
  ~http_server() {
    proc.reset();
    fs::remove_all(dir);
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/mcp"; }
  // Every request the server got, in order.
  [[nodiscard]] std::vector<json> log() const {
    std::vector<json> out;
    std::ifstream in(dir / "log");
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }
  // Waits up to 5 s for a logged request matching `pred`.
  template <class Pred>
  [[nodiscard]] std::optional<json> wait_for(Pred pred) const {
    for (int i = 0; i < 500; ++i) {
      for (const auto& e : log())
        if (pred(e)) return e;
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  }
  fs::path dir;
  std::unique_ptr<server_process> proc;
  int port = 0;
};

te::mcp_http_endpoint endpoint(const http_server& s) { return {.url = s.url()}; }

bool is(const json& e, const char* http, const char* rpc = nullptr) {
  return e["http"] == http && (rpc == nullptr || e["rpc"] == rpc);
}

}  // namespace

// The event-stream format (WHATWG HTML "Interpreting an event stream") as the transport reads it, the input
// cut at every byte: LF, CRLF and CR line ends, comments, multi-line data, events of other types skipped,
// empty (priming) events not delivered, id and retry kept.
TEST(McpHttp, SseParserFollowsTheEventStreamFormat) {
  const std::string stream =
      ": keep-alive comment\r\n"
      "id: p-1\r\nretry: 250\r\ndata:\r\n\r\n"
      "event: message\ndata: {\"a\":\ndata: 1}\n\n"
      "event: ping\ndata: {\"skipped\":true}\n\n"
      "id: p-2\rdata:{\"b\":2}\r\r"
      "retry: soon\ndata: {\"c\":3}\n\n";
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    te::detail::mcp_sse_parser p;
    std::vector<std::string> got;
    std::string buf = stream.substr(0, cut);
    p.feed(buf, [&](std::string_view d) { got.emplace_back(d); });
    buf += stream.substr(cut);
    p.feed(buf, [&](std::string_view d) { got.emplace_back(d); });
    ASSERT_EQ(got, (std::vector<std::string>{"{\"a\":\n1}", "{\"b\":2}", "{\"c\":3}"})) << "cut at " << cut;
    EXPECT_EQ(p.last_event_id(), "p-2");
    ASSERT_TRUE(p.retry().has_value());
    EXPECT_EQ(p.retry()->count(), 250);  // "soon" is not a number: ignored
    EXPECT_EQ(p.take_events(), 5u);
    EXPECT_TRUE(buf.empty());
  }
}

// A 1 MiB event read in 4 KiB pieces (as Beast delivers a large SSE response): after every piece the caller's
// buffer is empty, the unfinished line held by the parser (pending_bytes), so no byte is scanned twice (the
// parser used to leave the line in the buffer and scan it again from its start after every piece: quadratic,
// 1.7 s of CPU for one 1 MiB result). A new stream drops the unfinished line of the last one.
TEST(McpHttp, SseParserScansALongEventOnce) {
  const std::string payload = "\"" + std::string(1 << 20, 'x') + "\"";
  const std::string stream = "event: message\r\ndata: " + payload + "\r\n\r\n";
  te::detail::mcp_sse_parser p;
  std::vector<std::string> got;
  std::string buf;
  std::size_t carried = 0;  // bytes left in the caller's buffer after a feed, summed over all pieces
  for (std::size_t at = 0; at < stream.size(); at += 4096) {
    buf += stream.substr(at, 4096);
    p.feed(buf, [&](std::string_view d) { got.emplace_back(d); });
    carried += buf.size();
  }
  ASSERT_EQ(got, std::vector<std::string>{payload});
  EXPECT_LE(carried, stream.size() / 4096 + 1);  // at most a CR per piece waits for its LF
  EXPECT_EQ(p.pending_bytes(), 0u);

  buf = "data: unfinished";
  p.feed(buf, [&](std::string_view d) { got.emplace_back(d); });
  EXPECT_EQ(p.pending_bytes(), 16u);  // the limit of one message counts it
  p.begin_stream(4);
  buf = "data: 1\n\n";
  p.feed(buf, [&](std::string_view d) { got.emplace_back(d); });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got.back(), "1");
  // An event over the limit is not delivered even when it comes whole in one piece (reads of 64 KiB can bring
  // an event that never showed as pending between reads): oversized() tells the caller.
  EXPECT_FALSE(p.oversized());
  buf = "data: 12345\n\ndata: 2\n\n";
  p.feed(buf, [&](std::string_view d) { got.emplace_back(d); });
  EXPECT_TRUE(p.oversized());
  EXPECT_EQ(got.back(), "2");
  EXPECT_EQ(got.size(), 3u);
}

TEST(McpHttp, EndpointUrlsAreCheckedBeforeAnyConnection) {
  const auto u = te::detail::mcp_parse_http_url("http://[::1]:8080/a/b?c=d#frag", "");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, "8080");
  EXPECT_EQ(u.target, "/a/b?c=d");
  EXPECT_EQ(u.authority, "[::1]:8080");
  const auto v = te::detail::mcp_parse_http_url("http://example.org?x=1", "");
  EXPECT_EQ(v.port, "80");
  EXPECT_EQ(v.target, "/?x=1");
  for (const char* bad : {"example.org/mcp", "http://", "http://user@host/", "http://h:port/", "http://[::1/",
                          "http://h:123456/"})
    EXPECT_EQ(mcp_test::error_kind([&] { (void)te::detail::mcp_parse_http_url(bad, "x"); }), "launch_failed") << bad;
}

TEST(McpHttp, ListsAndCallsToolsWithJsonReplies) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  http_server s;
  ASSERT_GT(s.port, 0);
  auto c = te::mcp_client::connect(pool, endpoint(s));
  EXPECT_EQ(c.name(), "http-test-server");  // serverInfo.name adopted, as on stdio
  EXPECT_EQ(c.protocol_version(), "2025-11-25");
  EXPECT_EQ(c.pid(), -1);
  EXPECT_EQ(c.list_tools()["tools"].size(), 14u);
  EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "over http"}})), "over http");
  c.close();
  const auto log = s.log();
  ASSERT_GE(log.size(), 4u);
  // initialize: no session yet, no version header; every later request carries both.
  EXPECT_TRUE(is(log[0], "POST", "initialize"));
  EXPECT_TRUE(log[0]["session"].is_null());
  EXPECT_TRUE(log[0]["version"].is_null());
  EXPECT_EQ(log[0]["accept"], "application/json, text/event-stream");
  const json session = log.back()["session"];
  ASSERT_TRUE(session.is_string());
  for (std::size_t i = 1; i < log.size(); ++i) {
    EXPECT_EQ(log[i]["session"], session) << log[i].dump();
    EXPECT_EQ(log[i]["version"], "2025-11-25") << log[i].dump();
  }
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const json& e) { return is(e, "POST", "notifications/initialized"); }));
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const json& e) {
    return is(e, "GET") && e["accept"] == "text/event-stream";
  }));  // the GET stream
  EXPECT_TRUE(is(log.back(), "DELETE"));  // close() ends the session
  EXPECT_EQ(mcp_test::error_kind([&] { (void)c.list_tools(); }), "closed");
}

TEST(McpHttp, SseRepliesAndAServerRequestOnTheResponseStream) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  http_server s({"--sse"});
  auto c = te::mcp_client::connect(pool, endpoint(s));
  EXPECT_EQ(c.list_tools()["tools"].size(), 14u);
  EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "streamed"}})), "streamed");
  // The server's ping on the response stream is answered by a POST.
  EXPECT_EQ(te::mcp_text(c.call("ping_me")), "pong");
  EXPECT_EQ(te::mcp_text(c.call("huge", {{"bytes", 200000}})).size(), 200000u);
}

// A control: a server that names its session in another header. The client never learns it, sends no
// Mcp-Session-Id, and the server refuses every request after initialize — so the header is what lets the
// calls of the test above through.
TEST(McpHttp, WithoutTheSessionHeaderTheServerRefuses) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  http_server s({"--session-header", "X-Elsewhere"});
  auto c = te::mcp_client::connect(pool, endpoint(s));
  std::string what;
  EXPECT_EQ(mcp_test::error_kind([&] { (void)c.list_tools(); }, &what), "rpc_error");
  EXPECT_NE(what.find("HTTP 400: Bad Request: missing Mcp-Session-Id"), std::string::npos) << what;
}

TEST(McpHttp, AServerRequiringTheVersionHeaderIsServed) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  http_server s({"--require-version"});
  te::mcp_client_options o;
  o.protocol_versions = {"2025-06-18"};
  auto c = te::mcp_client::connect(pool, endpoint(s), o);
  EXPECT_EQ(c.protocol_version(), "2025-06-18");
  EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "v"}})), "v");
}

TEST(McpHttp, ATimeoutSendsTheCancellationAndTheClientGoesOn) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  for (const char* mode : {"--no-get", "--sse"}) {
    http_server s({mode});
    auto c = te::mcp_client::connect(pool, endpoint(s));
    EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("slow", {{"ms", 3000}}, 200ms); }), "timeout") << mode;
    const auto cancelled = s.wait_for([](const json& e) { return is(e, "POST", "notifications/cancelled"); });
    EXPECT_TRUE(cancelled.has_value()) << mode;
    EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "after"}})), "after") << mode;
    EXPECT_EQ(c.timeouts(), 1u);
  }
}

TEST(McpHttp, FaultsAreTheOutcomesOfStdio) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  for (const char* mode : {"--no-get", "--sse"}) {
    http_server s({mode});
    te::mcp_client_options o;
    o.max_line_bytes = 1 << 16;
    auto c = te::mcp_client::connect(pool, endpoint(s), o);
    std::string what;
    EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("garbage_http"); }, &what), "protocol_error") << what;
    EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("reset"); }, &what), "server_exited") << what;
    EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("status500"); }, &what), "protocol_error") << what;
    EXPECT_NE(what.find("HTTP 500"), std::string::npos) << what;
    EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("rpc_error_http"); }, &what), "rpc_error") << what;
    EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("huge", {{"bytes", 100000}}); }, &what), "protocol_error")
        << what;
    EXPECT_NE(what.find("limit of 65536 bytes"), std::string::npos) << what;
    EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("deep", {{"depth", 100000}}); }, &what), "protocol_error")
        << what;
    EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "still here"}})), "still here") << mode;
    // A body that is not JSON ends the connection, as garbage on stdout does; the next call starts a new session.
    EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("not_json"); }, &what), "protocol_error") << what;
    EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "new session"}})), "new session") << mode;
    EXPECT_EQ(c.restarts(), 1u) << mode;
  }
}

TEST(McpHttp, ARefusedConnectionIsServerExited) {
  boost::asio::thread_pool pool(2);
  // A port nobody listens on: bind one, note it, close it.
  int port = 0;
  {
    http_server s;
    port = s.port;
  }
  std::string what;
  EXPECT_EQ(mcp_test::error_kind(
                [&] { (void)te::mcp_client::connect(pool, {.url = "http://127.0.0.1:" + std::to_string(port) + "/mcp"}); },
                &what),
            "server_exited")
      << what;
  EXPECT_NE(what.find("connecting"), std::string::npos) << what;
  EXPECT_EQ(mcp_test::error_kind([&] { (void)te::mcp_client::connect(pool, {.url = "ftp://x"}); }), "launch_failed");
  EXPECT_EQ(mcp_test::error_kind([&] { (void)te::mcp_client::connect(pool, {.url = "http://h:99999/"}); }),
            "launch_failed");
}

TEST(McpHttp, AnEndedStreamIsResumedWithLastEventId) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  http_server s;
  auto c = te::mcp_client::connect(pool, endpoint(s));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(te::mcp_text(c.call("drop_stream")), "resumed");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 140ms);  // the server's retry: 150
  const auto resumed = s.wait_for([](const json& e) { return is(e, "GET") && e["last_event_id"].is_string(); });
  ASSERT_TRUE(resumed.has_value());
  // The control: a stream that ended without an event id cannot be resumed; its call fails at once.
  std::string what;
  EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("drop_stream_no_id"); }, &what), "server_exited") << what;
  EXPECT_NE(what.find("without an event id to resume from"), std::string::npos) << what;
}

TEST(McpHttp, TheGetStreamCarriesTheServersNotifications) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  http_server s;
  std::mutex m;
  std::vector<json> logs;
  te::mcp_client_options o;
  o.on_log = [&](const json& p) {
    const std::lock_guard lock(m);
    logs.push_back(p);
  };
  auto c = te::mcp_client::connect(pool, endpoint(s), o);
  EXPECT_EQ(te::mcp_text(c.call("notify")), "queued");
  for (int i = 0; i < 500; ++i) {
    {
      const std::lock_guard lock(m);
      if (!logs.empty()) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  const std::lock_guard lock(m);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0]["data"], "from the GET stream");
}

TEST(McpHttp, AnExpiredSessionIsRestarted) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  http_server s({"--no-get"});
  auto c = te::mcp_client::connect(pool, endpoint(s));
  // connect() returns once initialize is answered; its notifications/initialized POST may still be on its way
  // on another connection. Expiring the session before it arrives would make that POST the one answered 404
  // (the client does not wait for the notification's 202: see docs/mcp.md, "What the client does on the wire").
  for (int i = 0; i < 500; ++i) {
    const auto log = s.log();
    if (std::any_of(log.begin(), log.end(), [](const json& e) { return is(e, "POST", "notifications/initialized"); }))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(te::mcp_text(c.call("expire")), "expired");
  std::string what;
  EXPECT_EQ(mcp_test::error_kind([&] { (void)c.call("echo", {{"text", "x"}}); }, &what), "server_exited") << what;
  EXPECT_NE(what.find("HTTP 404"), std::string::npos) << what;
  EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "again"}})), "again");
  EXPECT_EQ(c.restarts(), 1u);
  const auto log = s.log();
  EXPECT_EQ(std::count_if(log.begin(), log.end(), [](const json& e) { return is(e, "POST", "initialize"); }), 2);
}

TEST(McpHttp, AddMcpServerWorksOverHttp) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  http_server s;
  auto c = te::mcp_client::connect(pool, endpoint(s));
  te::tool_registry<> registry;
  te::json_tool_host<> host{registry};
  EXPECT_EQ(te::add_mcp_server(host, c, te::server_trust::trusted).size(), 14u);
  const auto calls = te::parse_tool_calls(R"([{"id": "1", "name": "echo", "arguments": {"text": "via host"}}])");
  const auto out = host.run(pool, te::run_options{}, calls);
  ASSERT_TRUE(out[0].has_value()) << te::detail::message_of(out[0].error());
  EXPECT_EQ(te::mcp_text(out[0].value()), "via host");
}

// The ports of the connections the POSTs of tools/call came on.
std::set<int> call_ports(const http_server& s) {
  std::set<int> ports;
  for (const auto& e : s.log())
    if (is(e, "POST", "tools/call")) ports.insert(e["port"].get<int>());
  return ports;
}

// A POST whose JSON response kept the connection alive leaves it for the next one; the control is a server
// that speaks HTTP/1.0 (a connection per request).
TEST(McpHttp, KeptAliveConnectionsServeLaterRequests) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  for (const bool http10 : {false, true}) {
    http_server s(http10 ? std::vector<std::string>{"--http10", "--no-get"} : std::vector<std::string>{"--no-get"});
    auto c = te::mcp_client::connect(pool, endpoint(s));
    for (int i = 0; i < 20; ++i) EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "k"}})), "k");
    const auto ports = call_ports(s);
    if (http10)
      EXPECT_GE(ports.size(), 15u);
    else
      EXPECT_LE(ports.size(), 3u);
  }
}

// A kept-alive connection the server closed while idle is not reused (a peek sees its end): the calls after
// each pause succeed.
TEST(McpHttp, AConnectionClosedWhileIdleIsNotReused) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  http_server s({"--no-get", "--idle-close-ms", "100"});
  auto c = te::mcp_client::connect(pool, endpoint(s));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "p"}})), "p");
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(call_ports(s).size(), 5u);
}

// https (TOOL_EFFECTS_MCP_TLS, OpenSSL): the server's certificate must chain to the CA given (or the system's)
// and name the host. The control: the same server without its CA is refused at the handshake.
TEST(McpHttp, HttpsVerifiesTheServersCertificate) {
#if !(defined(TOOL_EFFECTS_MCP_TLS) && TOOL_EFFECTS_MCP_TLS)
  GTEST_SKIP() << "built without TOOL_EFFECTS_MCP_TLS (OpenSSL)";
#else
  MCP_REQUIRE_PYTHON();
  if (!mcp_test::has_program("openssl")) GTEST_SKIP() << "openssl is not installed";
  const fs::path certs = temp_dir();
  ASSERT_EQ(std::system(("bash " TOOL_EFFECTS_MCP_MAKE_CERTS " " + certs.string()).c_str()), 0);
  boost::asio::thread_pool pool(2);
  http_server s({"--tls", (certs / "server.pem").string(), (certs / "server-key.pem").string()});
  ASSERT_GT(s.port, 0);
  const std::string url = "https://127.0.0.1:" + std::to_string(s.port) + "/mcp";
  auto c = te::mcp_client::connect(pool, {.url = url, .tls_ca_file = (certs / "ca.pem").string()});
  EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "over tls"}})), "over tls");
  c.close();
  std::string what;
  EXPECT_EQ(mcp_test::error_kind([&] { (void)te::mcp_client::connect(pool, {.url = url}); }, &what), "server_exited")
      << what;
  EXPECT_NE(what.find("TLS handshake"), std::string::npos) << what;
  fs::remove_all(certs);
#endif
}

// The official TypeScript SDK's server (StreamableHTTPServerTransport, in server-everything 2026.8.31).
TEST(McpHttp, TheOfficialSdkServer) {
  MCP_REQUIRE_NODE_SERVERS();
  boost::asio::thread_pool pool(2);
  int port = 0;
  {
    http_server probe;  // a free port
    port = probe.port;
  }
  server_process p({"node", mcp_test::server_script("server-everything", "index.js"), "streamableHttp"},
                   {"PORT=" + std::to_string(port)});
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  std::optional<te::mcp_client> c;
  for (int i = 0; i < 300 && !c; ++i) {
    try {
      c = te::mcp_client::connect(pool, {.url = url});
    } catch (const te::mcp_transient_error&) {
      std::this_thread::sleep_for(50ms);  // not listening yet
    }
  }
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->protocol_version(), "2025-11-25");
  const json tools = c->list_tools()["tools"];
  EXPECT_TRUE(std::any_of(tools.begin(), tools.end(), [](const json& t) { return t["name"] == "echo"; }));
  EXPECT_EQ(te::mcp_text(c->call("echo", {{"message", "sdk"}})), "Echo: sdk");
  c->close();
}

}  // namespace mcp_http_test_ns
