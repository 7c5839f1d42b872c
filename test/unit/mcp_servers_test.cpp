// The MCP client and host against the real servers, installed at pinned
// versions by the mcp_servers fixture: @modelcontextprotocol/server-filesystem
// and server-memory. Checks what the servers hold after a turn (files on
// disk, the knowledge graph), not just return codes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A fresh temporary directory, removed at the end of the test.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string t = (fs::temp_directory_path() / "te-mcp-XXXXXX").string();
    path = fs::canonical(::mkdtemp(t.data()));
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  [[nodiscard]] std::string operator/(const std::string& f) const { return (path / f).string(); }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

te::mcp_client filesystem_server(boost::asio::thread_pool& pool, const temp_dir& ws) {
  te::mcp_client_options o;
  o.request_timeout = std::chrono::seconds(20);
  return te::mcp_client::launch(pool, {"node", mcp_test::server_script("server-filesystem", "index.js"), ws.path.string()},
                                o);
}

// Records the approver's questions.
struct recording_approver {
  std::shared_ptr<std::mutex> m = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::string>> asked = std::make_shared<std::vector<std::string>>();
  te::confirmation operator()(const te::confirmation_request& r) const {
    const std::lock_guard lock(*m);
    asked->emplace_back(r.tool);
    return te::confirmation::approve;
  }
  [[nodiscard]] std::multiset<std::string> tools() const {
    const std::lock_guard lock(*m);
    std::multiset<std::string> out;
    for (const auto& t : *asked) out.insert(t.substr(0, t.find('#')));
    return out;
  }
};

}  // namespace

TEST(McpFilesystemServer, ListsFourteenToolsWhoseAnnotationsImportAsTheIssueStates) {
  MCP_REQUIRE_NODE_SERVERS();
  boost::asio::thread_pool pool(2);
  temp_dir ws;
  auto client = filesystem_server(pool, ws);
  EXPECT_EQ(client.name(), "secure-filesystem-server");  // its serverInfo.name
  EXPECT_TRUE(client.protocol_version() == "2025-11-25" || client.protocol_version() == "2025-06-18");
  const json list = client.list_tools();
  ASSERT_EQ(list["tools"].size(), 14U);
  // The importer accepts title, outputSchema, execution, ... as they come.
  const auto trusted = te::import_mcp_tools(list, te::server_trust::trusted);
  std::map<std::string, te::effect_set> effects;
  for (const auto& t : trusted) effects[t.name] = t.description.effects;
  using te::effect;
  EXPECT_EQ(effects["read_text_file"], (te::effect_set{effect::read}));
  EXPECT_EQ(effects["list_directory"], (te::effect_set{effect::read}));
  EXPECT_EQ(effects["write_file"], (te::effect_set{effect::write, effect::destructive, effect::idempotent}));
  EXPECT_EQ(effects["create_directory"], (te::effect_set{effect::write, effect::idempotent}));
  EXPECT_EQ(effects["edit_file"], (te::effect_set{effect::write, effect::destructive}));
  EXPECT_EQ(effects["move_file"], (te::effect_set{effect::write, effect::destructive}));
  // Untrusted: every tool is unknown, i.e. exclusive.
  for (const auto& t : te::import_mcp_tools(list, te::server_trust::untrusted)) EXPECT_TRUE(t.description.exclusive);
  // Every tool of the shipped overlay exists on the server.
  EXPECT_NO_THROW((void)te::mcp_server_tools(list, te::server_trust::trusted,
                                             te::parse_manifest(te::mcp_filesystem_overlay), client.name()));
}

TEST(McpFilesystemServer, CallsReadAndWriteFilesAndIsErrorQuotesTheServer) {
  MCP_REQUIRE_NODE_SERVERS();
  boost::asio::thread_pool pool(2);
  temp_dir ws;
  write(ws.path / "a.txt", "alpha\n");
  auto client = filesystem_server(pool, ws);
  const json r = client.call("read_text_file", {{"path", ws / "a.txt"}});
  EXPECT_EQ(te::mcp_text(r), "alpha\n");
  EXPECT_EQ(r["structuredContent"]["content"], "alpha\n");
  (void)client.call("write_file", {{"path", ws / "b.txt"}, {"content", "beta"}});
  EXPECT_EQ(read_file(ws.path / "b.txt"), "beta");
  try {
    (void)client.call("read_text_file", {{"path", ws / "missing.txt"}});
    FAIL() << "no error";
  } catch (const te::mcp_tool_error& e) {
    EXPECT_NE(std::string(e.what()).find("ENOENT"), std::string::npos) << e.what();
  }
}

TEST(McpFilesystemServer, OverlayPlansWritesToDifferentFilesInParallelAndToOneFileInOrder) {
  MCP_REQUIRE_NODE_SERVERS();
  boost::asio::thread_pool pool(2);
  temp_dir ws;
  auto client = filesystem_server(pool, ws);
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  const auto overlay = te::parse_manifest(te::mcp_filesystem_overlay);
  EXPECT_EQ(te::add_mcp_server(host, client, te::server_trust::trusted, overlay).size(), 14U);
  const auto calls = te::parse_tool_calls(json::array({
      {{"id", "w1"}, {"name", "write_file"}, {"arguments", {{"path", ws / "x.txt"}, {"content", "1"}}}},
      {{"id", "w2"}, {"name", "write_file"}, {"arguments", {{"path", ws / "y.txt"}, {"content", "2"}}}},
      {{"id", "w3"}, {"name", "write_file"}, {"arguments", {{"path", ws / "x.txt"}, {"content", "3"}}}},
      {{"id", "r1"}, {"name", "read_text_file"}, {"arguments", {{"path", ws / "y.txt"}}}},
      {{"id", "r2"}, {"name", "read_text_file"}, {"arguments", {{"path", ws / "z.txt"}}}},
      {{"id", "ls"}, {"name", "list_directory"}, {"arguments", {{"path", ws.path.string()}}}},
  }));
  const auto plan = host.plan(calls);
  // The plan keeps only the edges it needs (an implied wait is not repeated), so "waits for" is reachability.
  std::set<std::pair<std::size_t, std::size_t>> waits;
  for (const auto& e : plan.edges) waits.emplace(e.from, e.to);
  for (std::size_t k = 0; k < calls.size(); ++k)  // transitive closure (Floyd-Warshall on six calls)
    for (std::size_t i = 0; i < calls.size(); ++i)
      for (std::size_t j = 0; j < calls.size(); ++j)
        if (waits.count({i, k}) && waits.count({k, j})) waits.emplace(i, j);
  EXPECT_FALSE(waits.count({0, 1}));  // different files: parallel
  EXPECT_TRUE(waits.count({0, 2}));   // the same file: in order
  EXPECT_TRUE(waits.count({1, 3}));   // the read of y waits for its write
  EXPECT_FALSE(waits.count({0, 3}));
  EXPECT_FALSE(waits.count({0, 4}));  // z is nobody's
  EXPECT_FALSE(waits.count({3, 4}));  // reads never wait for reads
  EXPECT_TRUE(waits.count({0, 5}) && waits.count({1, 5}) && waits.count({2, 5}));  // a listing waits for every write
  // Untrusted, without an overlay: every call waits for the previous one.
  te::tool_registry<> registry2;
  te::json_tool_host<> untrusted(registry2);
  te::add_mcp_server(untrusted, client, te::server_trust::untrusted);
  const auto chain = untrusted.plan(calls);
  for (std::size_t i = 1; i < calls.size(); ++i) {
    bool waits = false;
    for (const auto& e : chain.edges) waits = waits || (e.to == i && e.from == i - 1);
    EXPECT_TRUE(waits) << i;
  }
  // An overlay that names a tool the server does not have is an error.
  const auto bad = te::parse_manifest(R"({"tools": [{"name": "write_fiel", "writes": ["fs"]}]})");
  te::tool_registry<> registry3;
  te::json_tool_host<> host3(registry3);
  try {
    te::add_mcp_server(host3, client, te::server_trust::trusted, bad);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"write_fiel\" is not a tool of MCP server \"secure-filesystem-server\""), std::string::npos)
        << e.what();
  }
}

TEST(McpFilesystemServer, ATurnRunsWithTheApproverAndLeavesTheFilesItShould) {
  MCP_REQUIRE_NODE_SERVERS();
  boost::asio::thread_pool pool(2);
  temp_dir ws;
  write(ws.path / "notes.txt", "draft: TODO\n");
  auto client = filesystem_server(pool, ws);
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::trusted, te::parse_manifest(te::mcp_filesystem_overlay));
  recording_approver approver;
  const auto options = te::run_options{}
                           .with(te::retry_policy{.max_attempts = 3,
                                                  .base_delay = std::chrono::milliseconds(10),
                                                  .is_transient = te::mcp_transient()})
                           .with(te::approver(approver));
  for (int round = 0; round < 5; ++round) {
    const auto calls = te::parse_tool_calls(json::array({
        {{"id", "r"}, {"name", "read_text_file"}, {"arguments", {{"path", ws / "notes.txt"}}}},
        {{"id", "d"}, {"name", "create_directory"}, {"arguments", {{"path", ws / "out"}}}},
        {{"id", "w1"}, {"name", "write_file"}, {"arguments", {{"path", ws / "out/one.txt"}, {"content", "one"}}}},
        {{"id", "w2"}, {"name", "write_file"}, {"arguments", {{"path", ws / "out/two.txt"}, {"content", "two"}}}},
        {{"id", "w3"}, {"name", "write_file"}, {"arguments", {{"path", ws / "out/one.txt"}, {"content", "ONE"}}}},
        {{"id", "e"},
         {"name", "edit_file"},
         {"arguments", {{"path", ws / "notes.txt"}, {"edits", {{{"oldText", "TODO"}, {"newText", "done " + std::to_string(round)}}}}}}},
        {{"id", "r2"}, {"name", "read_text_file"}, {"arguments", {{"path", ws / "notes.txt"}}}},
        {{"id", "missing"}, {"name", "read_text_file"}, {"arguments", {{"path", ws / "nope.txt"}}}},
    }));
    write(ws.path / "notes.txt", "draft: TODO\n");
    const auto out = host.run(pool, options, calls, "turn-" + std::to_string(round));
    ASSERT_EQ(out.size(), calls.size());
    for (std::size_t i = 0; i + 1 < out.size(); ++i) ASSERT_TRUE(out[i].has_value()) << calls[i].id << ": "
                                                                                        << te::detail::message_of(out[i].error());
    EXPECT_EQ(te::mcp_text(out[0].value()), "draft: TODO\n");  // the read came before the edit
    EXPECT_EQ(te::mcp_text(out[6].value()), "draft: done " + std::to_string(round) + "\n");
    EXPECT_TRUE(out[7].has_error());
    EXPECT_EQ(read_file(ws.path / "out/one.txt"), "ONE");  // the same file's writes kept their order
    EXPECT_EQ(read_file(ws.path / "out/two.txt"), "two");
    EXPECT_EQ(read_file(ws.path / "notes.txt"), "draft: done " + std::to_string(round) + "\n");
  }
  // Every destructive call (write_file, edit_file) was put to the approver, nothing else.
  const auto asked = approver.tools();
  EXPECT_EQ(asked.count("write_file"), 15U);
  EXPECT_EQ(asked.count("edit_file"), 5U);
  EXPECT_EQ(asked.size(), 20U);
}

TEST(McpFilesystemServer, ADeniedDestructiveCallNeverReachesTheServer) {
  MCP_REQUIRE_NODE_SERVERS();
  boost::asio::thread_pool pool(2);
  temp_dir ws;
  auto client = filesystem_server(pool, ws);
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::trusted, te::parse_manifest(te::mcp_filesystem_overlay));
  const auto calls = te::parse_tool_calls(json::array(
      {{{"id", "w"}, {"name", "write_file"}, {"arguments", {{"path", ws / "x.txt"}, {"content", "x"}}}}}));
  const auto out = host.run(pool, te::run_options{}.with(te::deny_all()), calls);
  try {
    (void)out[0].value();
    FAIL() << "no error";
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::confirmation_denied);
  }
  EXPECT_FALSE(fs::exists(ws.path / "x.txt"));
}

TEST(McpMemoryServer, ATurnBuildsTheKnowledgeGraphTheServerHolds) {
  MCP_REQUIRE_NODE_SERVERS();
  boost::asio::thread_pool pool(2);
  temp_dir dir;
  te::mcp_client_options o;
  o.environment["MEMORY_FILE_PATH"] = dir / "memory.jsonl";
  auto client = te::mcp_client::launch(pool, {"node", mcp_test::server_script("server-memory", "index.js")}, o);
  const json list = client.list_tools();
  std::map<std::string, te::effect_set> effects;
  for (const auto& t : te::import_mcp_tools(list, te::server_trust::trusted)) effects[t.name] = t.description.effects;
  using te::effect;
  EXPECT_FALSE(te::is_destructive(effects.at("create_entities")));
  EXPECT_TRUE(effects.at("create_entities").contains(effect::write));
  EXPECT_TRUE(te::is_destructive(effects.at("delete_entities")));
  EXPECT_TRUE(effects.at("delete_entities").contains(effect::idempotent));
  EXPECT_TRUE(te::is_parallel_safe(effects.at("read_graph")));

  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::trusted);
  recording_approver approver;
  const auto calls = te::parse_tool_calls(R"([
    {"id": "c", "name": "create_entities", "arguments": {"entities": [
      {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
      {"name": "Bob", "entityType": "person", "observations": []}]}},
    {"id": "o", "name": "add_observations", "arguments": {"observations": [
      {"entityName": "Ada", "contents": ["liked engines"]}]}},
    {"id": "d", "name": "delete_entities", "arguments": {"entityNames": ["Bob"]}},
    {"id": "g", "name": "read_graph", "arguments": {}}
  ])");
  const auto out = host.run(pool, te::run_options{}.with(te::approver(approver)), calls);
  for (std::size_t i = 0; i < out.size(); ++i)
    ASSERT_TRUE(out[i].has_value()) << calls[i].id << ": " << te::detail::message_of(out[i].error());
  EXPECT_EQ(approver.tools(), (std::multiset<std::string>{"delete_entities"}));
  // The server's own view, asked afresh.
  const json graph = client.call("read_graph")["structuredContent"];
  ASSERT_EQ(graph["entities"].size(), 1U) << graph.dump();
  EXPECT_EQ(graph["entities"][0]["name"], "Ada");
  EXPECT_EQ(graph["entities"][0]["observations"], json({"wrote the first program", "liked engines"}));
  // The turn's own read came after the writes (the plan ordered it).
  EXPECT_EQ(out[3].value()["structuredContent"]["entities"].size(), 1U);
}
