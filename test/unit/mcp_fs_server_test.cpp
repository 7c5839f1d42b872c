// The filesystem tools of `./scripts/demo --mcp` served by our mcp_server (docs/examples/mcp_fs_tools.hpp):
// our client, trusting the server and given no overlay, plans the demo's turn with exactly the waves and
// edges the same tools give in-process (over Streamable HTTP on 127.0.0.1), and the overlay the npm server
// needs gives that plan too; paths are confined to the root: `..` and symbolic links out are refused with
// their stable reasons, over MCP and by `mcp_fs::confine` itself, while paths inside (links included) work.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <stdlib.h>

#include <boost/asio/thread_pool.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/http.hpp>
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server_http.hpp>

#include "../../docs/examples/mcp_fs_tools.hpp"

namespace mcp_fs_server_test_ns {

namespace te = tool_effects;
namespace stdfs = std::filesystem;
using nlohmann::json;

namespace {
// A temporary directory with root/ (README.md, notes.txt, src/app.py, links inside and out) and, beside
// root/, secret.txt and outside/.
struct sandbox {
  stdfs::path base;
  stdfs::path root;
  sandbox() {
    std::string tmpl = (stdfs::temp_directory_path() / "te-fs-test-XXXXXX").string();
    base = stdfs::canonical(::mkdtemp(tmpl.data()));
    root = base / "root";
    stdfs::create_directories(root / "src");
    stdfs::create_directories(base / "outside");
    std::ofstream(root / "README.md") << "# demo\n";
    std::ofstream(root / "notes.txt") << "TODO: write the summary\n";
    std::ofstream(root / "src/app.py") << "print('hello')\n";
    std::ofstream(base / "secret.txt") << "secret\n";
    stdfs::create_symlink(base / "secret.txt", root / "abs_out");        // absolute, out
    stdfs::create_symlink("../secret.txt", root / "rel_out");            // relative, out
    stdfs::create_symlink("../../outside", root / "src/dir_out2");       // base/outside
    stdfs::create_symlink(base / "outside/new.txt", root / "dangling");  // out, to a file that does not exist
    stdfs::create_symlink("src/app.py", root / "app_link");              // inside
    stdfs::create_symlink("../README.md", root / "src/readme_link");     // inside, through ..
  }
  ~sandbox() {
    std::error_code ec;
    stdfs::remove_all(base, ec);
  }
  [[nodiscard]] std::string text(const stdfs::path& p) const {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

std::string reason_of(const stdfs::path& root, std::string_view path) {
  try {
    (void)mcp_fs::confine(root, path);
  } catch (const mcp_fs::fs_error& e) {
    return e.reason();
  }
  return "accepted";
}

// The recorded turn of docs/examples/mcp_turn.cpp ($WS: the root).
std::string demo_turn(const stdfs::path& ws) {
  std::string t = R"([
  {"id": "1",  "name": "list_directory",   "arguments": {"path": "$WS"}},
  {"id": "2",  "name": "read_text_file",   "arguments": {"path": "$WS/README.md"}},
  {"id": "3",  "name": "read_text_file",   "arguments": {"path": "$WS/src/app.py"}},
  {"id": "4",  "name": "read_text_file",   "arguments": {"path": "$WS/notes.txt"}},
  {"id": "5",  "name": "create_directory", "arguments": {"path": "$WS/reports"}},
  {"id": "6",  "name": "write_file",       "arguments": {"path": "$WS/reports/summary.md", "content": "# Summary\n"}},
  {"id": "7",  "name": "write_file",       "arguments": {"path": "$WS/CHANGES.md", "content": "- done\n"}},
  {"id": "8",  "name": "edit_file",        "arguments": {"path": "$WS/notes.txt", "edits": [{"oldText": "TODO", "newText": "DONE"}]}},
  {"id": "9",  "name": "read_text_file",   "arguments": {"path": "$WS/notes.txt"}},
  {"id": "10", "name": "get_file_info",    "arguments": {"path": "$WS/README.md"}},
  {"id": "11", "name": "directory_tree",   "arguments": {"path": "$WS"}},
  {"id": "12", "name": "move_file",        "arguments": {"source": "$WS/CHANGES.md", "destination": "$WS/reports/CHANGES.md"}}
])";
  for (auto p = t.find("$WS"); p != std::string::npos; p = t.find("$WS", p)) t.replace(p, 3, ws.string());
  return t;
}

// Waves and edges with their reasons: the library's plan text.
template <class Host>
std::string plan_of(Host& host, const std::vector<te::tool_call>& calls) {
  return te::to_string(host.plan(calls));
}

te::json_tool_function unused() {
  return [](const te::attempt_context&, const json&) { return json(); };
}

using fs_host = te::json_tool_host<mcp_fs::read_text_file, mcp_fs::get_file_info, mcp_fs::list_directory,
                                   mcp_fs::directory_tree, mcp_fs::write_file, mcp_fs::edit_file,
                                   mcp_fs::create_directory, mcp_fs::move_file>;

// The sandbox's tools served over Streamable HTTP on 127.0.0.1 (every call approved, one coordinator), and our
// client of that server.
struct fs_over_http {
  sandbox s;
  const mcp_fs::root_dir root{s.root};
  mcp_fs::registry reg = mcp_fs::make_registry(root);
  fs_host host{reg};
  boost::asio::thread_pool pool{2};
  te::mcp_server<fs_host, decltype(te::run_options{}.with(te::approve_all()).with(te::local_coordinator{}))> server{
      pool, host, te::mcp_server_options{.name = "fs"}, te::run_options{}.with(te::approve_all()).with(te::local_coordinator{})};
  te::mcp_client client = te::mcp_client::connect(
      pool, te::mcp_http_endpoint{.url = "http://127.0.0.1:" + std::to_string(server.listen_http("127.0.0.1", 0, "/mcp")) + "/mcp"});
};
}  // namespace

// Our client against our server over Streamable HTTP, trusted, no overlay: the demo's turn (and a move_file)
// is planned exactly as in-process. The npm server's hand-written overlay gives the same plan; the server's
// hints alone (its _meta removed) do not, so the accesses it publishes are what makes the plan.
TEST(McpFsServer, TheClientPlansTheTurnAsTheToolsDoInProcess) {
  fs_over_http f;
  sandbox& s = f.s;
  fs_host& host = f.host;
  boost::asio::thread_pool& pool = f.pool;
  te::mcp_client& client = f.client;
  te::tool_registry<> client_reg;
  te::json_tool_host<> over_mcp(client_reg);
  te::add_mcp_server(over_mcp, client, te::server_trust::trusted);

  const auto calls = te::parse_tool_calls(demo_turn(s.root));
  const std::string in_process = plan_of(host, calls);
  EXPECT_EQ(plan_of(over_mcp, calls), in_process);
  EXPECT_GE(host.plan(calls).edges.size(), 10u);  // a turn with edges to compare
  EXPECT_NE(in_process.find("wave 3"), std::string::npos);

  // The overlay the npm server needs, over the same tool list with the server's _meta removed: the same plan.
  json list = client.list_tools();
  for (auto& t : list["tools"]) t.erase("_meta");
  te::tool_registry<> overlay_reg;
  te::json_tool_host<> with_overlay(overlay_reg);
  std::vector<te::dynamic_tool> overlay;  // its entries for the tools our server has (it has 8 of the 14)
  for (auto& o : te::parse_manifest(te::mcp_filesystem_overlay))
    if (std::any_of(list["tools"].begin(), list["tools"].end(), [&](const json& t) { return t["name"] == o.name; }))
      overlay.push_back(std::move(o));
  ASSERT_EQ(overlay.size(), 8u);
  for (auto& t : te::mcp_server_tools(list, te::server_trust::trusted, overlay))
    with_overlay.add(std::move(t), unused());
  EXPECT_EQ(plan_of(with_overlay, calls), in_process);
  // Control: the hints alone order more (every write holds the whole of fs).
  te::tool_registry<> hints_reg;
  te::json_tool_host<> hints_only(hints_reg);
  for (auto& t : te::mcp_server_tools(list, te::server_trust::trusted)) hints_only.add(std::move(t), unused());
  EXPECT_NE(plan_of(hints_only, calls), in_process);

  // The turn runs through the server: every call succeeds and the files are what the calls wrote.
  const auto out = over_mcp.run(pool, te::run_options{}.with(te::approve_all()), calls);
  for (std::size_t i = 0; i < calls.size(); ++i)
    EXPECT_TRUE(out[i].has_value()) << calls[i].id << ": " << te::answer_of(out[i], calls[i].name).content;
  EXPECT_EQ(s.text(s.root / "notes.txt"), "DONE: write the summary\n");
  EXPECT_EQ(s.text(s.root / "reports/CHANGES.md"), "- done\n");
  EXPECT_FALSE(stdfs::exists(s.root / "CHANGES.md"));
  client.close();
}

// Over MCP, a `..` and a symbolic link out of the root are refused with their reasons, and nothing outside
// is read or written; the control reads a file inside, also through a link inside.
TEST(McpFsServer, PathsAreConfinedToTheRootOverMcp) {
  fs_over_http f;
  sandbox& s = f.s;
  te::mcp_client& client = f.client;
  auto call = [&](const std::string& tool, json args) {  // the raw result: isError results do not throw
    return client.request("tools/call", {{"name", tool}, {"arguments", std::move(args)}});
  };
  auto text = [](const json& r) { return r["content"][0]["text"].get<std::string>(); };

  json r = call("read_text_file", {{"path", "../x"}});
  EXPECT_EQ(r.value("isError", false), true);
  EXPECT_EQ(text(r), R"(tool_error: path_has_dotdot: "../x")");
  r = call("read_text_file", {{"path", "rel_out"}});
  EXPECT_EQ(text(r), R"(tool_error: path_outside_root: "rel_out" (through a symbolic link))");
  r = call("write_file", {{"path", "dangling"}, {"content", "x"}});
  EXPECT_EQ(text(r), R"(tool_error: path_outside_root: "dangling" (through a symbolic link))");
  EXPECT_FALSE(stdfs::exists(s.base / "outside/new.txt"));
  r = call("write_file", {{"path", "src/dir_out2/new.txt"}, {"content", "x"}});
  EXPECT_EQ(r.value("isError", false), true);
  EXPECT_FALSE(stdfs::exists(s.base / "outside/new.txt"));
  r = call("read_text_file", {{"path", (s.base / "secret.txt").string()}});
  EXPECT_NE(text(r).find("path_outside_root"), std::string::npos) << text(r);

  // Control: inside, by a relative path, an absolute one and a link that stays inside.
  EXPECT_EQ(text(call("read_text_file", {{"path", "README.md"}})), "# demo\n");
  EXPECT_EQ(text(call("read_text_file", {{"path", (s.root / "src/app.py").string()}})), "print('hello')\n");
  EXPECT_EQ(text(call("read_text_file", {{"path", "src/readme_link"}})), "# demo\n");
  client.close();
}

// confine itself: each refusal's stable reason, and the paths it resolves inside.
TEST(McpFsServer, ConfineNamesEachRefusal) {
  sandbox s;
  const auto& r = s.root;
  EXPECT_EQ(reason_of(r, "../x"), mcp_fs::path_has_dotdot);
  EXPECT_EQ(reason_of(r, "src/../../secret.txt"), mcp_fs::path_has_dotdot);
  EXPECT_EQ(reason_of(r, (r / "src/../../secret.txt").string()), mcp_fs::path_has_dotdot);
  EXPECT_EQ(reason_of(r, (s.base / "secret.txt").string()), mcp_fs::path_outside_root);
  EXPECT_EQ(reason_of(r, "/etc/passwd"), mcp_fs::path_outside_root);
  EXPECT_EQ(reason_of(r, (s.base / "rootx/a").string()), mcp_fs::path_outside_root);  // a sibling sharing the prefix
  EXPECT_EQ(reason_of(r, "abs_out"), mcp_fs::path_outside_root);
  EXPECT_EQ(reason_of(r, "rel_out"), mcp_fs::path_outside_root);
  EXPECT_EQ(reason_of(r, "dangling"), mcp_fs::path_outside_root);
  EXPECT_EQ(reason_of(r, "src/dir_out2/new.txt"), mcp_fs::path_outside_root);
  EXPECT_EQ(reason_of(r, ""), mcp_fs::path_invalid);
  EXPECT_EQ(reason_of(r, std::string(mcp_fs::max_path_bytes + 1, 'a')), mcp_fs::path_invalid);
  EXPECT_EQ(reason_of(r, std::string("a\0b", 3)), mcp_fs::path_invalid);
  stdfs::create_symlink("loop_b", r / "loop_a");
  stdfs::create_symlink("loop_a", r / "loop_b");
  EXPECT_EQ(reason_of(r, "loop_a"), mcp_fs::path_invalid);

  // Control: paths inside, links inside resolved to their real path, files not yet created.
  EXPECT_EQ(mcp_fs::confine(r, "README.md"), r / "README.md");
  EXPECT_EQ(mcp_fs::confine(r, r.string()), r);
  EXPECT_EQ(mcp_fs::confine(r, "./src/app.py"), r / "src/app.py");
  EXPECT_EQ(mcp_fs::confine(r, "app_link"), r / "src/app.py");
  EXPECT_EQ(mcp_fs::confine(r, "src/readme_link"), r / "README.md");
  EXPECT_EQ(mcp_fs::confine(r, "reports/new/summary.md"), r / "reports/new/summary.md");
}

// The bounds: a file above max_file_bytes is not read, content above it is not written, a listing stops
// after max_entries with a marker, and an edit whose text is missing changes nothing.
TEST(McpFsServer, SizesAreBounded) {
  sandbox s;
  const mcp_fs::root_dir root{s.root};
  auto reg = mcp_fs::make_registry(root);
  fs_host host(reg);
  std::ofstream(s.root / "big.txt") << std::string(mcp_fs::max_file_bytes + 1, 'x');
  stdfs::create_directories(s.root / "many");
  for (std::size_t i = 0; i <= mcp_fs::max_entries; ++i) std::ofstream(s.root / "many" / std::to_string(i));
  boost::asio::thread_pool pool(1);
  const auto calls = te::parse_tool_calls(json::array({
      {{"id", "1"}, {"name", "read_text_file"}, {"arguments", {{"path", "big.txt"}}}},
      {{"id", "2"}, {"name", "write_file"}, {"arguments", {{"path", "w.txt"}, {"content", std::string(mcp_fs::max_file_bytes + 1, 'y')}}}},
      {{"id", "3"}, {"name", "list_directory"}, {"arguments", {{"path", "many"}}}},
      {{"id", "4"}, {"name", "edit_file"}, {"arguments", {{"path", "notes.txt"}, {"edits", {{{"oldText", "nope"}, {"newText", "x"}}}}}}},
  }).dump());
  const auto out = host.run(pool, te::run_options{}.with(te::approve_all()), calls);
  auto content = [&](std::size_t i) { return te::answer_of(out[i], calls[i].name).content; };
  EXPECT_NE(content(0).find("too_large: \"big.txt\" has more than 1048576 bytes"), std::string::npos) << content(0);
  EXPECT_NE(content(1).find("too_large: content for \"w.txt\""), std::string::npos) << content(1);
  EXPECT_FALSE(stdfs::exists(s.root / "w.txt"));
  const std::string listing = content(2);
  EXPECT_EQ(std::count(listing.begin(), listing.end(), '\n'), static_cast<long>(mcp_fs::max_entries + 1));
  EXPECT_NE(listing.find("[... more]\n"), std::string::npos);
  EXPECT_NE(content(3).find("edit_not_found: edit 0: oldText is not in \"notes.txt\""), std::string::npos) << content(3);
  EXPECT_EQ(s.text(s.root / "notes.txt"), "TODO: write the summary\n");
}

}  // namespace mcp_fs_server_test_ns
