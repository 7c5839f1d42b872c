// Issue 21's newcomer scenario as a test of the project: two real servers the
// other MCP tests do not cover, both publishing no tool annotations, each on a
// real database the test starts on 127.0.0.1 and stops by pid:
//  - @modelcontextprotocol/server-postgres 0.6.2 on a PostgreSQL cluster made
//    by initdb in a temporary directory (as the `postgres` user when run as
//    root: postgres refuses to run as root);
//  - @modelcontextprotocol/server-redis 2025.4.25 on a redis-server on a free port.
// Both are pinned by test/mcp/newcomer/package-lock.json and installed by the
// mcp_servers fixture. The turns are OpenAI- and Anthropic-shaped; overlays
// declare the unannotated tools, also on a trusted import (point 2); results
// reach the model as the servers' text (point 4); clients are named after the
// servers and close without waiting the whole grace (point 5). A test skips
// only when node, PostgreSQL or redis-server is missing.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_newcomer_test_ns {

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// ---------------------------------------------------------------- processes, by pid

// Starts argv[0] (an absolute path) with stdout/stderr appended to `log`, as `as` when given (we are root).
pid_t spawn(const std::vector<std::string>& argv, const std::string& log, const passwd* as = nullptr) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const uid_t uid = as ? as->pw_uid : 0;
  const gid_t gid = as ? as->pw_gid : 0;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    if (in >= 0) ::dup2(in, 0);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    if (as && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)) ::_exit(126);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (out >= 0) ::close(out);
  return pid;
}

// Waits for `pid` up to `limit`; the exit status, or nullopt when it is still running.
std::optional<int> wait_for(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
}

int run(const std::vector<std::string>& argv, const std::string& log, const passwd* as = nullptr) {
  const pid_t pid = spawn(argv, log, as);
  if (pid < 0) return -1;
  if (auto rc = wait_for(pid, 120s)) return *rc;
  ::kill(pid, SIGKILL);
  (void)wait_for(pid, 5s);
  return -1;
}

// Stops the process `pid` with `sig`, then SIGKILL after 10 s.
void stop(pid_t pid, int sig) {
  if (pid <= 0) return;
  ::kill(pid, sig);
  if (wait_for(pid, 10s)) return;
  ::kill(pid, SIGKILL);
  (void)wait_for(pid, 5s);
}

int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = -1;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

bool port_open(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

std::string find_binary(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c;
  return {};
}

// The newest /usr/lib/postgresql/<major>/bin.
std::string postgres_bin_dir() {
  std::string best;
  int best_major = -1;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string major = e.path().filename().string();
    if (major.empty() || !std::all_of(major.begin(), major.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    if (::access((e.path() / "bin/postgres").c_str(), X_OK) == 0 && std::stoi(major) > best_major) {
      best_major = std::stoi(major);
      best = (e.path() / "bin").string();
    }
  }
  return best;
}

fs::path make_temp_dir(const char* stem) {
  std::string t = (fs::temp_directory_path() / (std::string(stem) + "-XXXXXX")).string();
  return fs::path(::mkdtemp(t.data()));
}

// ---------------------------------------------------------------- the two databases

// A PostgreSQL cluster on 127.0.0.1:<free port>, with table orders(id, status) holding two rows.
struct postgres_instance {
  fs::path dir;
  int port = -1;
  pid_t pid = -1;
  std::string error;  // why it did not start (empty: it runs)

  postgres_instance() {
    const std::string bin = postgres_bin_dir();
    if (bin.empty()) {
      error = "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres; Debian: apt-get install postgresql)";
      return;
    }
    const passwd* as = nullptr;
    if (::geteuid() == 0) {
      as = ::getpwnam("postgres");
      if (!as) {
        error = "running as root and there is no `postgres` user to run PostgreSQL as";
        return;
      }
    }
    dir = make_temp_dir("te-newcomer-pg");
    const std::string data = (dir / "data").string(), log = (dir / "postgres.log").string();
    if (as && ::chown(dir.c_str(), as->pw_uid, as->pw_gid) != 0) {
      error = "chown of " + dir.string() + " failed";
      return;
    }
    if (const int rc = run({bin + "/initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "--locale=C",
                            "-E", "UTF8"},
                           log, as);
        rc != 0) {
      error = "initdb failed (" + std::to_string(rc) + "), see " + log;
      return;
    }
    port = free_port();
    pid = spawn({bin + "/postgres", "-D", data, "-p", std::to_string(port), "-k", dir.string(), "-c",
                 "listen_addresses=127.0.0.1", "-c", "fsync=off"},
                log, as);
    const std::string psql = bin + "/psql";
    const std::vector<std::string> setup{psql, "-h", "127.0.0.1", "-p", std::to_string(port), "-U", "postgres", "-d",
                                         "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c",
                                         "CREATE TABLE orders (id int PRIMARY KEY, status text NOT NULL);"
                                         "INSERT INTO orders VALUES (1, 'paid'), (2, 'shipped');"};
    for (int attempt = 0; attempt < 150; ++attempt) {  // up to 30 s for the cluster to accept connections
      if (wait_for(pid, 0ms)) break;                    // it exited
      if (port_open(port) && run(setup, (dir / "psql.log").string()) == 0) return;
      std::this_thread::sleep_for(200ms);
    }
    error = "PostgreSQL did not come up on port " + std::to_string(port) + ", see " + log;
  }
  ~postgres_instance() {
    stop(pid, SIGINT);  // fast shutdown
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
  [[nodiscard]] std::string url() const { return "postgresql://postgres@127.0.0.1:" + std::to_string(port) + "/postgres"; }
};

// A redis-server on 127.0.0.1:<free port>, without persistence.
struct redis_instance {
  fs::path dir;
  int port = -1;
  pid_t pid = -1;
  std::string error;

  redis_instance() {
    const std::string bin = find_binary({"/usr/bin/redis-server", "/usr/local/bin/redis-server"});
    if (bin.empty()) {
      error = "redis-server is not installed (Debian: apt-get install redis-server)";
      return;
    }
    dir = make_temp_dir("te-newcomer-redis");
    port = free_port();
    pid = spawn({bin, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", dir.string()},
                (dir / "redis.log").string());
    for (int attempt = 0; attempt < 150; ++attempt) {
      if (wait_for(pid, 0ms)) break;
      if (port_open(port)) return;
      std::this_thread::sleep_for(100ms);
    }
    error = "redis-server did not come up on port " + std::to_string(port);
  }
  ~redis_instance() {
    stop(pid, SIGTERM);
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
  [[nodiscard]] std::string url() const { return "redis://127.0.0.1:" + std::to_string(port); }
};

std::string newcomer_script(const std::string& package) {
  return mcp_test::servers_dir() + "/newcomer/node_modules/@modelcontextprotocol/" + package + "/dist/index.js";
}

#define NEWCOMER_REQUIRE_SERVER(package)                                                                    \
  do {                                                                                                      \
    if (!mcp_test::has_program("node")) GTEST_SKIP() << "node is not installed: real MCP servers skipped";  \
    ASSERT_TRUE(fs::exists(newcomer_script(package)))                                                      \
        << package << " not installed in " << mcp_test::servers_dir()                                      \
        << "/newcomer (ctest runs the fixture mcp.servers.install_newcomer)";                               \
  } while (0)

te::mcp_client launch(boost::asio::thread_pool& pool, const std::string& package, const std::string& url) {
  te::mcp_client_options o;
  o.request_timeout = 20s;
  // server-postgres 0.6.2 (MCP SDK 1.0.1) speaks only protocol version 2024-11-05, which the default list
  // accepts (issue 20): it answers the server/discover probe with -32601 and initialize with 2024-11-05.
  return te::mcp_client::launch(pool, {"node", newcomer_script(package), url}, o);
}

// ---------------------------------------------------------------- overlays: the user's declarations

// server-postgres runs every query in a READ ONLY transaction: `query` reads the database.
constexpr const char* postgres_overlay = R"({"version": 1, "tools": [
  {"name": "query", "reads": ["pg"]}
]})";

// server-redis: per-key tools name their key; `delete` takes one key or a list of keys (one target each).
constexpr const char* redis_overlay = R"({"version": 1, "tools": [
  {"name": "set",    "writes": ["redis"], "effects": ["idempotent"], "identity": {"target_arg": "key"}},
  {"name": "get",    "reads":  ["redis"], "identity": {"target_arg": "key"}},
  {"name": "delete", "writes": ["redis"], "effects": ["destructive"], "identity": {"target_arg": "key"}},
  {"name": "list",   "reads":  ["redis"]}
]})";

struct recording_approver {
  std::shared_ptr<std::mutex> m = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::string>> asked = std::make_shared<std::vector<std::string>>();
  te::confirmation answer = te::confirmation::approve;
  te::confirmation operator()(const te::confirmation_request& r) const {
    const std::lock_guard lock(*m);
    asked->emplace_back(r.tool.substr(0, r.tool.find('#')));
    return answer;
  }
  [[nodiscard]] std::vector<std::string> tools() const {
    const std::lock_guard lock(*m);
    return *asked;
  }
};

bool parallel(const te::turn_plan& p, std::size_t a, std::size_t b) {
  return !p.plan.waits_for(a, b) && !p.plan.waits_for(b, a);
}

std::string get_text(te::mcp_client& client, const std::string& key) {
  return te::mcp_text(client.call("get", json{{"key", key}}));
}

}  // namespace

// ---------------------------------------------------------------- postgres

TEST(NewcomerPostgres, QueriesDeclaredReadOnlyRunInParallelAndABadOneFailsAlone) {
  NEWCOMER_REQUIRE_SERVER("server-postgres");
  postgres_instance pg;
  if (!pg.error.empty()) GTEST_SKIP() << pg.error;
  boost::asio::thread_pool pool(2);
  auto client = launch(pool, "server-postgres", pg.url());
  EXPECT_EQ(client.protocol_version(), "2024-11-05");  // with the default version list (issue 20)
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  // The overlay is the declaration, untrusted or trusted (issue 21, point 2; trusted below).
  te::add_mcp_server(host, client, te::server_trust::untrusted, te::parse_manifest(postgres_overlay));

  // Anthropic-shaped: three queries, one with bad SQL, one that tries to write, and an unknown tool.
  const auto calls = te::parse_tool_calls(json::parse(R"({"type": "message", "role": "assistant", "content": [
    {"type": "text", "text": "Let me look at the orders."},
    {"type": "tool_use", "id": "q1", "name": "query", "input": {"sql": "SELECT status FROM orders WHERE id = 1"}},
    {"type": "tool_use", "id": "q2", "name": "query", "input": {"sql": "SELECT count(*) AS n FROM orders"}},
    {"type": "tool_use", "id": "bad", "name": "query", "input": {"sql": "SELEC nonsense"}},
    {"type": "tool_use", "id": "w", "name": "query", "input": {"sql": "UPDATE orders SET status = 'lost' WHERE id = 2"}},
    {"type": "tool_use", "id": "u", "name": "pg_update", "input": {}}
  ]})"));
  ASSERT_EQ(calls.size(), 5u);
  const auto p = host.plan(calls);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = i + 1; j < 4; ++j) EXPECT_TRUE(parallel(p, i, j)) << i << " " << j << ": reads run together";
  EXPECT_TRUE(p.failures[4].has_value()) << "the unknown tool fails alone";

  recording_approver approver;
  const auto out = host.run(pool, te::run_options{}.with(te::approver(approver)), calls);
  ASSERT_EQ(out.size(), 5u);
  ASSERT_TRUE(out[0].has_value()) << te::detail::message_of(out[0].error());
  EXPECT_EQ(json::parse(te::mcp_text(out[0].value())), json::parse(R"([{"status": "paid"}])"));
  ASSERT_TRUE(out[1].has_value());
  EXPECT_EQ(json::parse(te::mcp_text(out[1].value())), json::parse(R"([{"n": "2"}])"));
  EXPECT_TRUE(out[2].has_error()) << "bad SQL fails that call only";
  EXPECT_TRUE(out[3].has_error()) << "the server's READ ONLY transaction refuses the UPDATE";
  EXPECT_TRUE(out[4].has_error());
  EXPECT_TRUE(approver.tools().empty()) << "reads need no approval";
  // The database holds what it held.
  EXPECT_EQ(json::parse(te::mcp_text(client.call("query", json{{"sql", "SELECT status FROM orders WHERE id = 2"}}))),
            json::parse(R"([{"status": "shipped"}])"));
}

TEST(NewcomerPostgres, AnOverlayReplacesWhatATrustedServerWithoutAnnotationsImplies) {
  NEWCOMER_REQUIRE_SERVER("server-postgres");
  postgres_instance pg;
  if (!pg.error.empty()) GTEST_SKIP() << pg.error;
  boost::asio::thread_pool pool(2);
  auto client = launch(pool, "server-postgres", pg.url());
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::trusted, te::parse_manifest(postgres_overlay));
  const auto calls = te::parse_tool_calls(json::parse(R"([
    {"id": "a", "type": "function", "function": {"name": "query", "arguments": "{\"sql\": \"SELECT 1\"}"}},
    {"id": "b", "type": "function", "function": {"name": "query", "arguments": "{\"sql\": \"SELECT 2\"}"}}
  ])"));
  const auto p = host.plan(calls);
  const auto& d = p.calls[0];
  EXPECT_EQ(d.effects, (te::effect_set{te::effect::read})) << te::to_string(d.effects);
  EXPECT_TRUE(parallel(p, 0, 1));
  // The control: the same server imported trusted without the overlay runs its queries one after another.
  te::tool_registry<> registry2;
  te::json_tool_host<> bare(registry2);
  te::add_mcp_server(bare, client, te::server_trust::trusted);
  const auto p0 = bare.plan(calls);
  EXPECT_TRUE(p0.calls[0].effects.contains(te::effect::destructive)) << te::to_string(p0.calls[0].effects);
  EXPECT_FALSE(parallel(p0, 0, 1));
  // And the queries run.
  recording_approver approver;
  const auto out = host.run(pool, te::run_options{}.with(te::approver(approver)), calls);
  ASSERT_TRUE(out[0].has_value() && out[1].has_value());
  EXPECT_TRUE(approver.tools().empty()) << "declared reads need no approval";
}

// ---------------------------------------------------------------- redis

TEST(NewcomerRedis, KeysOrderPerKeyArrayDeletesWaitForEachKeyAndNeedApproval) {
  NEWCOMER_REQUIRE_SERVER("server-redis");
  redis_instance redis;
  if (!redis.error.empty()) GTEST_SKIP() << redis.error;
  boost::asio::thread_pool pool(2);
  auto client = launch(pool, "server-redis", redis.url());
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  // Trusted (the annotations would say nothing anyway): the overlay's entries replace the defaults (point 2).
  EXPECT_EQ(te::add_mcp_server(host, client, te::server_trust::trusted, te::parse_manifest(redis_overlay)).size(), 4u);

  // OpenAI-shaped.
  const auto calls = te::parse_tool_calls(json::parse(R"({"role": "assistant", "content": null, "tool_calls": [
    {"id": "s1", "type": "function", "function": {"name": "set", "arguments": "{\"key\": \"order:1:status\", \"value\": \"paid\"}"}},
    {"id": "s2", "type": "function", "function": {"name": "set", "arguments": "{\"key\": \"session:stale\", \"value\": \"x\"}"}},
    {"id": "s3", "type": "function", "function": {"name": "set", "arguments": "{\"key\": \"cart:7\", \"value\": \"3 items\"}"}},
    {"id": "g1", "type": "function", "function": {"name": "get", "arguments": "{\"key\": \"cart:7\"}"}},
    {"id": "d",  "type": "function", "function": {"name": "delete", "arguments": "{\"key\": [\"order:1:status\", \"session:stale\"]}"}},
    {"id": "g2", "type": "function", "function": {"name": "get", "arguments": "{\"key\": \"order:1:status\"}"}},
    {"id": "bad", "type": "function", "function": {"name": "set", "arguments": "{\"key\": "}}
  ]})"));
  ASSERT_EQ(calls.size(), 7u);
  const auto p = host.plan(calls);
  EXPECT_TRUE(parallel(p, 0, 1) && parallel(p, 0, 2) && parallel(p, 1, 2)) << "sets of different keys";
  EXPECT_TRUE(p.plan.waits_for(3, 2)) << "get cart:7 after set cart:7";
  EXPECT_TRUE(p.plan.waits_for(4, 0)) << "delete [order:1:status, ...] after set order:1:status (point 3)";
  EXPECT_TRUE(p.plan.waits_for(4, 1)) << "delete [..., session:stale] after set session:stale";
  EXPECT_TRUE(parallel(p, 4, 2) && parallel(p, 4, 3)) << "cart:7 is not deleted";
  EXPECT_TRUE(p.plan.waits_for(5, 4)) << "get order:1:status after its delete";
  EXPECT_TRUE(p.failures[6].has_value()) << "arguments that do not parse fail alone";

  recording_approver approver;
  const auto out = host.run(pool, te::run_options{}.with(te::approver(approver)), calls);
  ASSERT_EQ(out.size(), 7u);
  for (std::size_t i = 0; i < 6; ++i)
    ASSERT_TRUE(out[i].has_value()) << calls[i].id << ": " << te::detail::message_of(out[i].error());
  EXPECT_NE(te::mcp_text(out[3].value()).find("3 items"), std::string::npos) << te::mcp_text(out[3].value());
  EXPECT_EQ(te::mcp_text(out[5].value()).find("paid"), std::string::npos) << "read after the delete";
  EXPECT_TRUE(out[6].has_error());
  EXPECT_EQ(approver.tools(), (std::vector<std::string>{"delete"})) << "only the destructive call is approved";
  // What redis holds.
  EXPECT_EQ(get_text(client, "order:1:status").find("paid"), std::string::npos);
  EXPECT_EQ(get_text(client, "session:stale").find("x"), std::string::npos);
  EXPECT_NE(get_text(client, "cart:7").find("3 items"), std::string::npos);
}

TEST(NewcomerRedis, ADeniedDeleteNeverReachesRedis) {
  NEWCOMER_REQUIRE_SERVER("server-redis");
  redis_instance redis;
  if (!redis.error.empty()) GTEST_SKIP() << redis.error;
  boost::asio::thread_pool pool(2);
  auto client = launch(pool, "server-redis", redis.url());
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::untrusted, te::parse_manifest(redis_overlay));
  (void)client.call("set", json{{"key", "keep:me"}, {"value", "still here"}});
  const auto calls = te::parse_tool_calls(json::parse(
      R"([{"type": "tool_use", "id": "d", "name": "delete", "input": {"key": ["keep:me"]}}])"));
  recording_approver approver;
  approver.answer = te::confirmation::deny;
  const auto out = host.run(pool, te::run_options{}.with(te::approver(approver)), calls);
  ASSERT_TRUE(out[0].has_error());
  EXPECT_EQ(approver.tools(), (std::vector<std::string>{"delete"}));
  EXPECT_NE(get_text(client, "keep:me").find("still here"), std::string::npos);
}

TEST(NewcomerRedis, ResultsReachTheModelAsTheServersText) {
  NEWCOMER_REQUIRE_SERVER("server-redis");
  redis_instance redis;
  if (!redis.error.empty()) GTEST_SKIP() << redis.error;
  boost::asio::thread_pool pool(2);
  auto client = launch(pool, "server-redis", redis.url());
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::untrusted, te::parse_manifest(redis_overlay));
  const auto calls = te::parse_tool_calls(json::parse(R"({"role": "assistant", "tool_calls": [
    {"id": "s", "type": "function", "function": {"name": "set", "arguments": "{\"key\": \"k\", \"value\": \"v\"}"}}
  ]})"));
  const auto out = host.run(pool, te::run_options{}, calls);
  ASSERT_TRUE(out[0].has_value()) << te::detail::message_of(out[0].error());
  const std::string text = te::mcp_text(out[0].value());
  ASSERT_FALSE(text.empty());
  const json replies = te::tool_results(calls, out);
  ASSERT_EQ(replies.size(), 1u);
  const std::string content = replies[0].at("content").get<std::string>();
  EXPECT_EQ(content, text) << "the model reads the server's text, not the result envelope";
  EXPECT_EQ(content.find("\"content\""), std::string::npos) << content;
  // Anthropic-shaped, with a call the server fails (`get` without a key): the error flag, the server's text.
  const auto calls2 = te::parse_tool_calls(json::parse(R"([
    {"type": "tool_use", "id": "g", "name": "get", "input": {"key": "k"}},
    {"type": "tool_use", "id": "x", "name": "get", "input": {}}
  ])"));
  const auto out2 = host.run(pool, te::run_options{}, calls2);
  const json reply = te::tool_results(calls2, out2);
  ASSERT_EQ(reply.size(), 1u);
  const json& blocks = reply[0].at("content");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].at("is_error"), false);
  EXPECT_NE(blocks[0].at("content").get<std::string>().find('v'), std::string::npos) << blocks[0];
  EXPECT_EQ(blocks[0].at("content").get<std::string>().find("\"type\""), std::string::npos) << blocks[0];
  EXPECT_EQ(blocks[1].at("is_error"), true) << blocks[1];
  EXPECT_EQ(blocks[1].at("content").get<std::string>().rfind("tool_error: ", 0), 0u) << blocks[1];
}

TEST(NewcomerRedis, ClientsAreNamedAfterTheServer) {
  NEWCOMER_REQUIRE_SERVER("server-redis");
  redis_instance redis;
  if (!redis.error.empty()) GTEST_SKIP() << redis.error;
  boost::asio::thread_pool pool(2);
  auto client = launch(pool, "server-redis", redis.url());
  EXPECT_GT(client.pid(), 0);
  EXPECT_EQ(client.restarts(), 0u);
  const json info = client.server_info();
  ASSERT_TRUE(info.contains("serverInfo")) << info;
  EXPECT_EQ(client.name(), info["serverInfo"].value("name", std::string()));
  EXPECT_EQ(client.name(), "redis");
  EXPECT_NE(client.name(), "index.js");
  // Errors quote it.
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  try {
    (void)te::add_mcp_server(host, client, te::server_trust::untrusted,
                             te::parse_manifest(R"({"tools": [{"name": "nope", "reads": ["x"]}]})"));
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("MCP server \"redis\""), std::string::npos) << e.what();
  }
  // The control: a name of the user's stays.
  te::mcp_client_options o;
  o.name = "cache";
  o.request_timeout = 20s;
  o.protocol_versions.emplace_back("2024-11-05");
  auto named = te::mcp_client::launch(pool, {"node", newcomer_script("server-redis"), redis.url()}, o);
  EXPECT_EQ(named.name(), "cache");
  // pid() follows a restart; restarts() counts the restarts after a death, not explicit ones.
  const int before = client.pid();
  ::kill(before, SIGKILL);
  (void)wait_for(before, 0ms);
  for (int i = 0; i < 100 && client.pid() == before; ++i) {
    try {
      (void)client.call("list", json::object());
    } catch (const te::mcp_transient_error&) {  // the death is seen by this call; the next restarts
    }
  }
  EXPECT_NE(client.pid(), before);
  EXPECT_EQ(client.restarts(), 1u);
  EXPECT_EQ(client.name(), "redis") << "the name is kept across restarts";
  client.restart();
  EXPECT_EQ(client.restarts(), 1u);
  te::mcp_close_all(client, named);
}

// server-redis does not exit when its stdin closes (server-postgres 0.6.2 does, here). close() used to wait
// the whole shutdown_grace (2 s) before SIGTERM, one server after another; a server that within
// shutdown_sign has neither exited nor closed its stdout now gets SIGTERM then, and mcp_close_all closes
// servers concurrently. A generous grace (3 s) makes the difference unmistakable without timing finely.
TEST(NewcomerServers, CloseSendsSigtermSoonAndClosesServersConcurrently) {
  NEWCOMER_REQUIRE_SERVER("server-redis");
  NEWCOMER_REQUIRE_SERVER("server-postgres");
  redis_instance redis;
  if (!redis.error.empty()) GTEST_SKIP() << redis.error;
  postgres_instance pg;
  if (!pg.error.empty()) GTEST_SKIP() << pg.error;
  boost::asio::thread_pool pool(4);
  const auto start = [&](const std::string& package, const std::string& url, std::chrono::milliseconds sign) {
    te::mcp_client_options o;
    o.request_timeout = 20s;
    o.protocol_versions.emplace_back("2024-11-05");
    o.shutdown_grace = 3s;
    o.shutdown_sign = sign;
    return te::mcp_client::launch(pool, {"node", newcomer_script(package), url}, o);
  };
  const auto seconds_of = [](auto f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // The control: without the early SIGTERM (shutdown_sign = grace), closing server-redis takes the whole grace.
  {
    auto r = start("server-redis", redis.url(), 3s);
    const int pid = r.pid();
    const double t = seconds_of([&] { r.close(); });
    EXPECT_GE(t, 2.9) << "the old behaviour: stdin closed, the whole grace, then SIGTERM";
    EXPECT_NE(::kill(pid, 0), 0) << "the server is gone";
    std::printf("control: server-redis closed without an early SIGTERM in %.2f s\n", t);
  }
  // Now: two server-redis and a server-postgres closed at once; redis gets SIGTERM after shutdown_sign.
  {
    auto r1 = start("server-redis", redis.url(), 200ms);
    auto r2 = start("server-redis", redis.url(), 200ms);
    auto p = start("server-postgres", pg.url(), 200ms);
    const int pids[] = {r1.pid(), r2.pid(), p.pid()};
    const double t = seconds_of([&] { te::mcp_close_all(r1, r2, p); });
    EXPECT_LT(t, 2.5) << "nobody waited for the grace";
    for (const int pid : pids) EXPECT_NE(::kill(pid, 0), 0) << pid;
    std::printf("mcp_close_all of two server-redis and a server-postgres: %.2f s\n", t);
    try {
      (void)r1.call("list", json::object());
      ADD_FAILURE() << "no error after close";
    } catch (const te::mcp_error& e) {
      EXPECT_EQ(e.kind(), te::mcp_error_kind::closed);
    }
  }
  // Concurrency on its own: two server-redis that each take 1.5 s to get their SIGTERM, closed together,
  // take about 1.5 s, not 3 s.
  {
    auto r1 = start("server-redis", redis.url(), 1500ms);
    auto r2 = start("server-redis", redis.url(), 1500ms);
    const double t = seconds_of([&] { te::mcp_close_all(std::vector<te::mcp_client>{r1, r2}); });
    EXPECT_GE(t, 1.4);
    EXPECT_LT(t, 2.9) << "one after another would take 3 s";
    std::printf("mcp_close_all of two server-redis with a 1.5 s shutdown_sign each: %.2f s\n", t);
  }
}

}  // namespace mcp_newcomer_test_ns
