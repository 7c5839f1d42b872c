// MCP faults through the recovery layer: a killed server is restarted and
// retry-safe calls are retried, the others fail with unsafe_to_retry; and a
// bounded randomized soak of turns against the real filesystem server with
// random kills of the server process: every call gets exactly one outcome,
// no turn hangs, no call that is not retry-safe runs twice, and the files
// match a model of what succeeded (a write killed half-way may leave a
// prefix of its content: the server writes in place).
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

std::optional<te::failure_reason> reason_of(const te::outcome<json>& o) {
  try {
    (void)o.value();
  } catch (const te::call_failure& f) {
    return f.reason();
  } catch (...) {
  }
  return std::nullopt;
}

// The attempts a failed call's record counts (0 when the outcome is not a call_failure).
unsigned attempts_of(const te::outcome<json>& o) {
  try {
    (void)o.value();
  } catch (const te::call_failure& f) {
    return static_cast<unsigned>(f.record().attempts);
  } catch (...) {
  }
  return 0;
}

te::retry_policy mcp_retry() {
  return te::retry_policy{.max_attempts = 5,
                          .base_delay = milliseconds(20),
                          .max_delay = milliseconds(200),
                          .is_transient = te::mcp_transient(),
                          .seed = 7};
}

}  // namespace

TEST(McpRecovery, AKilledServerIsRestartedAndOnlyRetrySafeCallsAreRetried) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server());
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  // Scopes that keep the two calls apart, so that both are in flight when the server dies.
  te::add_mcp_server(host, client, te::server_trust::trusted,
                     te::parse_manifest(R"({"tools": [{"name": "slow", "reads": ["store/a"]},
                                                      {"name": "append", "writes": ["store/b"]}]})"));
  const auto calls = te::parse_tool_calls(R"([
    {"id": "read",   "name": "slow",   "arguments": {"ms": 1500, "text": "r"}},
    {"id": "append", "name": "append", "arguments": {"ms": 1500}}
  ])");
  const int pid = client.pid();
  std::thread killer([pid] {
    std::this_thread::sleep_for(milliseconds(400));
    ::kill(pid, SIGKILL);
  });
  const auto start = std::chrono::steady_clock::now();
  const auto out = host.run(pool, te::run_options{}.with(mcp_retry()), calls);
  killer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // The read was retried on the restarted server.
  ASSERT_TRUE(out[0].has_value()) << te::detail::message_of(out[0].error());
  EXPECT_EQ(te::mcp_text(out[0].value()), "r");
  // The plain write may have happened: not retried.
  EXPECT_EQ(reason_of(out[1]), te::failure_reason::unsafe_to_retry);
  try {
    (void)out[1].value();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.record().attempts, 1U);
    EXPECT_NE(f.record().last_error_message.find("was killed by signal 9"), std::string::npos)
        << f.record().last_error_message;
  }
  EXPECT_EQ(client.restarts(), 1U);
  EXPECT_NE(client.pid(), pid);
}

TEST(McpRecovery, ATimedOutCallIsRetriedWhenRetrySafe) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  te::mcp_client_options o;
  o.request_timeout = milliseconds(300);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::trusted);
  // The handshake and tools/list ran under the same 300 ms bound: on a loaded machine one of them may have timed out.
  const auto before = client.timeouts();
  const auto calls = te::parse_tool_calls(R"([{"id": "h", "name": "hang"}, {"id": "a", "name": "append", "arguments": {"ms": 1000}}])");
  const auto start = std::chrono::steady_clock::now();
  const auto out = host.run(pool, te::run_options{}.with(te::retry_policy{.max_attempts = 3,
                                                                            .base_delay = milliseconds(10),
                                                                            .is_transient = te::mcp_transient()}),
                            calls);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(reason_of(out[0]), te::failure_reason::retries_exhausted);  // read-only: retried, 3 timeouts
  EXPECT_EQ(attempts_of(out[0]), 3U);
  EXPECT_EQ(reason_of(out[1]), te::failure_reason::unsafe_to_retry);  // a write: one attempt
  EXPECT_EQ(attempts_of(out[1]), 1U);
  // Exactly those four attempts timed out.
  EXPECT_EQ(client.timeouts() - before, 4U);
}

namespace {

std::optional<std::string> file_text(const fs::path& p) {
  if (!fs::exists(p)) return std::nullopt;
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(McpRecovery, SoakOfRandomTurnsWithRandomKillsOfTheFilesystemServer) {
  MCP_REQUIRE_NODE_SERVERS();
  std::string t = (fs::temp_directory_path() / "te-mcp-soak-XXXXXX").string();
  const fs::path ws = fs::canonical(::mkdtemp(t.data()));
  boost::asio::thread_pool pool(2);
  te::mcp_client_options o;
  o.request_timeout = std::chrono::seconds(10);
  o.max_restarts = 10000;
  auto client = te::mcp_client::launch(pool, {"node", mcp_test::server_script("server-filesystem", "index.js"), ws.string()}, o);
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::trusted, te::parse_manifest(te::mcp_filesystem_overlay));
  const auto options = te::run_options{}.with(mcp_retry()).with(te::approve_all());

  std::atomic<bool> stop{false};
  std::atomic<int> kills{0};
  std::thread killer([&] {
    std::mt19937 rng(11);
    while (!stop) {
      std::this_thread::sleep_for(milliseconds(150 + rng() % 400));
      if (stop) break;
      if (const int pid = client.pid(); pid > 0 && ::kill(pid, SIGKILL) == 0) ++kills;
    }
  });

  std::mt19937 rng(2024);
  const auto soak_end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::size_t turns = 0, calls_total = 0, ok = 0, unsafe = 0;
  while (std::chrono::steady_clock::now() < soak_end || turns < 3) {
    const fs::path dir = ws / ("t" + std::to_string(turns));
    fs::create_directories(dir);
    // An edit target per turn, holding "A".
    std::ofstream(dir / "e.txt") << "A";
    json calls = json::array();
    std::vector<std::string> files = {"f0", "f1", "f2"};
    const int n = 4 + static_cast<int>(rng() % 6);
    for (int k = 0; k < n; ++k) {
      const std::string id = "c" + std::to_string(k);
      const std::string f = (dir / files[rng() % files.size()]).string();
      switch (rng() % 4) {
        case 0:
        case 1:
          calls.push_back({{"id", id}, {"name", "write_file"}, {"arguments", {{"path", f}, {"content", id}}}});
          break;
        case 2: calls.push_back({{"id", id}, {"name", "read_text_file"}, {"arguments", {{"path", f}}}}); break;
        default:
          calls.push_back({{"id", id},
                           {"name", "edit_file"},
                           {"arguments", {{"path", (dir / "e.txt").string()},
                                          {"edits", {{{"oldText", "A"}, {"newText", "A" + id}}}}}}});
      }
    }
    const auto parsed = te::parse_tool_calls(calls);
    const auto turn_start = std::chrono::steady_clock::now();
    const auto out = host.run(pool, options, parsed, "soak-" + std::to_string(turns));
    ASSERT_LT(std::chrono::steady_clock::now() - turn_start, std::chrono::seconds(60)) << "turn " << turns;
    // Exactly one outcome per call.
    ASSERT_EQ(out.size(), parsed.size());
    std::map<std::string, std::vector<std::size_t>> writes;  // file -> its writes, in call order
    std::size_t edits_ok = 0;
    std::vector<std::string> edit_ids;
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_TRUE(out[i].finished() && !out[i].aborted()) << i;
      ++calls_total;
      if (out[i].has_value()) ++ok;
      const auto& c = parsed[i];
      const bool retry_safe = c.name == "read_text_file";
      if (const auto r = reason_of(out[i])) {
        if (*r == te::failure_reason::unsafe_to_retry) ++unsafe;
        // A call that is not retry-safe is never attempted twice.
        if (!retry_safe) {
          EXPECT_EQ(*r, te::failure_reason::unsafe_to_retry) << c.name;
        }
      }
      if (c.name == "write_file") writes[c.arguments["path"]].push_back(i);
      if (c.name == "edit_file") {
        edit_ids.push_back(c.id);
        if (out[i].has_value()) ++edits_ok;
      }
    }
    // The files match the model: the last successful write of a file, or a
    // later write that failed (it may have happened before the kill).
    for (const auto& [path, idx] : writes) {
      const auto content = file_text(path);
      std::optional<std::size_t> last_ok;
      for (const auto i : idx)
        if (out[i].has_value()) last_ok = i;
      std::vector<std::string> allowed;
      for (const auto i : idx)
        if (!last_ok || i >= *last_ok) allowed.push_back(parsed[i].id);
      if (!last_ok && !content) continue;  // no write happened
      ASSERT_TRUE(content.has_value()) << path;
      // A write killed half-way may leave a prefix of its content (the server
      // writes in place): allowed for the writes that failed.
      bool explained = std::find(allowed.begin(), allowed.end(), *content) != allowed.end();
      for (const auto i : idx)
        if (!out[i].has_value() && (!last_ok || i > *last_ok) && parsed[i].id.rfind(*content, 0) == 0)
          explained = true;
      EXPECT_TRUE(explained) << path << " holds \"" << *content << "\"";
      if (last_ok && idx.back() == *last_ok) {
        EXPECT_EQ(*content, parsed[*last_ok].id);
      }
    }
    // Each edit replaces the first "A": the file is "A" followed by the ids of
    // the edits that happened, newest first; each at most once.
    const auto e = file_text(dir / "e.txt").value_or("");
    std::size_t happened = 0;
    for (const auto& id : edit_ids) {
      const auto first = e.find(id);
      if (first != std::string::npos) {
        ++happened;
        EXPECT_EQ(e.find(id, first + 1), std::string::npos) << "edit " << id << " ran twice: " << e;
      }
    }
    if (edits_ok == edit_ids.size()) {  // (a failed edit may have truncated the file half-way)
      EXPECT_EQ(happened, edits_ok) << e;
    }
    ++turns;
  }
  stop = true;
  killer.join();
  client.close();
  std::error_code ec;
  fs::remove_all(ws, ec);
  std::printf("soak: %zu turns, %zu calls (%zu ok, %zu unsafe_to_retry), %d kills, %zu restarts\n", turns,
              calls_total, ok, unsafe, kills.load(), client.restarts());
  EXPECT_GT(kills.load(), 0);
  EXPECT_GT(ok, 0U);
}
