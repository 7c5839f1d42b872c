// A filesystem MCP server of ours (ctest example.mcp_fs_server; `./scripts/demo --mcp` runs it against the
// npm @modelcontextprotocol/server-filesystem): the tools of mcp_fs_tools.hpp over one root directory, their
// hints derived from their declared effects and their scoped accesses under _meta, so that a client that
// trusts it needs no overlay.
//
//   ./example_mcp_fs_server --serve ROOT   # an MCP server on stdin/stdout, confined to ROOT
//   ./example_mcp_fs_server                # the demonstration: a client of its own server on a temporary root
//
// The demonstration lists the tools, plans a turn through the server (trusted, no overlay) and in-process
// with the same tools and checks that the edges are the same, and shows three confined paths: a `..`, a
// symbolic link out of the root (both refused with their stable reasons) and a path inside (read).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/server.hpp>

#include "mcp_fs_tools.hpp"

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
int serve(const char* root_path) {
  const mcp_fs::root_dir root{fs::path(root_path)};
  auto registry = mcp_fs::make_registry(root);
  te::json_tool_host host(registry);
  boost::asio::thread_pool pool(2);
  // The client asks its user before a destructive call (the hints say which); what it sends has been approved.
  te::mcp_server server(pool, host, te::mcp_server_options{.name = "tool_effects-fs", .version = "1.0.0"},
                        te::run_options{}.with(te::approve_all()).with(te::local_coordinator{}));
  server.serve_stdio();  // until the client closes our stdin
  return 0;
}

std::string edges_text(const std::vector<te::plan_edge>& edges) {
  std::string out;
  for (const auto& e : edges) out += std::to_string(e.from) + "->" + std::to_string(e.to) + " " + e.reason + "\n";
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::string_view(argv[1]) == "--serve") return serve(argv[2]);

  std::string tmpl = (fs::temp_directory_path() / "te-mcp-fs-XXXXXX").string();
  const fs::path base = fs::canonical(::mkdtemp(tmpl.data()));
  const fs::path ws = base / "root";
  fs::create_directories(ws / "src");
  std::ofstream(ws / "README.md") << "# demo\n";
  std::ofstream(base / "secret.txt") << "outside the root\n";
  fs::create_symlink(base / "secret.txt", ws / "leak.txt");

  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, {argv[0], "--serve", ws.string()});
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::trusted);  // no overlay: the server says what it touches

  const json listed = client.list_tools();
  for (const auto& t : listed["tools"])
    std::cout << t["name"].get<std::string>() << "  " << t["annotations"].dump() << "\n    "
              << t["_meta"][std::string(te::mcp_accesses_meta_key)].dump() << "\n";

  const auto calls = te::parse_tool_calls(R"([
    {"id": "1", "name": "read_text_file", "arguments": {"path": "README.md"}},
    {"id": "2", "name": "write_file",     "arguments": {"path": "notes.txt", "content": "hello\n"}},
    {"id": "3", "name": "write_file",     "arguments": {"path": "README.md", "content": "# demo, read\n"}},
    {"id": "4", "name": "list_directory", "arguments": {"path": "."}},
    {"id": "5", "name": "read_text_file", "arguments": {"path": "../secret.txt"}},
    {"id": "6", "name": "read_text_file", "arguments": {"path": "leak.txt"}},
    {"id": "7", "name": "read_text_file", "arguments": {"path": "notes.txt"}}])");
  const mcp_fs::root_dir root{ws};
  auto local_registry = mcp_fs::make_registry(root);
  te::json_tool_host in_process(local_registry);
  const std::string over_mcp = edges_text(host.plan(calls).edges);
  std::cout << "plan through the server (trusted, no overlay):\n" << over_mcp;
  const bool same_plan = over_mcp == edges_text(in_process.plan(calls).edges);
  std::cout << "the same edges as in-process: " << (same_plan ? "yes" : "NO") << "\n";

  const auto out = host.run(pool, te::run_options{}.with(te::approve_all()), calls);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    std::string text = te::answer_of(out[i], calls[i].name).content;
    std::replace(text.begin(), text.end(), '\n', '|');
    std::cout << "#" << calls[i].id << " " << calls[i].name << " -> " << text << "\n";
  }
  auto says = [&](std::size_t i, std::string_view text) {
    return te::answer_of(out[i], calls[i].name).content.find(text) != std::string::npos;
  };
  const bool confined = says(4, "path_has_dotdot") && says(5, "path_outside_root") && says(6, "hello");
  client.close();
  fs::remove_all(base);
  return same_plan && confined ? 0 : 1;
}
