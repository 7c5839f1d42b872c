// The MCP demo (`./scripts/demo --mcp`, ctest example.mcp_turn): a recorded
// model turn of eleven calls run against the real
// @modelcontextprotocol/server-filesystem on a temporary workspace.
//
// The server is started with `node <servers>/node_modules/@modelcontextprotocol/
// server-filesystem/dist/index.js <workspace>`; <servers> is argv[1], else the
// environment variable TOOL_EFFECTS_MCP_SERVERS, else the build's
// build/<preset>/mcp-servers (installed by the ctest fixture mcp.servers.install,
// or by hand: `npm ci --prefix <dir>` with test/mcp/package*.json copied there).
// Exit status 77 (ctest: skipped) when node or the server is missing.
//
// It prints the tools with the effects their (trusted) annotations and the
// filesystem overlay give, the plan with reasons, runs the turn on an Asio
// pool with the approver consulted for destructive calls, prints the results
// and the workspace afterwards, and compares the wall time with the same calls
// in sequence (max_concurrency = 1) on a fresh copy of the workspace.
//
// Then the same turn against our own filesystem server (example_mcp_fs_server,
// beside this program: docs/examples/mcp_fs_server.cpp), marked trusted and with
// NO overlay: its tools/list publishes the hints derived from its declared
// effects and its scoped accesses under _meta. It prints that plan, which must
// be the npm server's (same waves, same edges and reasons), runs the turn and
// compares the workspace with the npm server's. Exit status 1 when a call
// fails, the plans differ or the workspaces do.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The model's turn, as recorded ($WS is the workspace).
constexpr const char* recorded_turn = R"([
  {"id": "1",  "name": "list_directory",   "arguments": {"path": "$WS"}},
  {"id": "2",  "name": "read_text_file",   "arguments": {"path": "$WS/README.md"}},
  {"id": "3",  "name": "read_text_file",   "arguments": {"path": "$WS/src/app.py"}},
  {"id": "4",  "name": "read_text_file",   "arguments": {"path": "$WS/notes.txt"}},
  {"id": "5",  "name": "create_directory", "arguments": {"path": "$WS/reports"}},
  {"id": "6",  "name": "write_file",       "arguments": {"path": "$WS/reports/summary.md", "content": "# Summary\nThe app prints a greeting.\n"}},
  {"id": "7",  "name": "write_file",       "arguments": {"path": "$WS/CHANGES.md", "content": "- notes: the TODO is done\n"}},
  {"id": "8",  "name": "edit_file",        "arguments": {"path": "$WS/notes.txt", "edits": [{"oldText": "TODO: write the summary", "newText": "DONE: summary in reports/summary.md"}]}},
  {"id": "9",  "name": "read_text_file",   "arguments": {"path": "$WS/notes.txt"}},
  {"id": "10", "name": "get_file_info",    "arguments": {"path": "$WS/README.md"}},
  {"id": "11", "name": "directory_tree",   "arguments": {"path": "$WS"}}
])";

void make_workspace(const fs::path& ws) {
  fs::remove_all(ws);
  fs::create_directories(ws / "src");
  std::ofstream(ws / "README.md") << "# demo app\nRun `python3 src/app.py`.\n";
  std::ofstream(ws / "src/app.py") << "print('hello')\n";
  std::ofstream(ws / "notes.txt") << "TODO: write the summary\nTODO: add tests\n";
}

std::string turn_text(const fs::path& ws) {
  std::string t = recorded_turn;
  const std::string w = ws.string();
  for (auto p = t.find("$WS"); p != std::string::npos; p = t.find("$WS", p + w.size())) t.replace(p, 3, w);
  return t;
}

std::string short_text(std::string s, std::size_t max = 60) {
  for (auto& c : s)
    if (c == '\n') c = '|';
  if (s.size() > max) {
    s.resize(max);
    s += "...";
  }
  return s;
}

std::string label(const te::tool_call& c, const fs::path& ws) {
  std::string a = c.arguments.value("path", "");
  if (const std::string root = ws.string(); a.rfind(root, 0) == 0) a = std::string(".").append(a, root.size());
  std::string out = "#";
  out.append(c.id).append(" ").append(c.name).append("(").append(a).append(")");
  return out;
}

// The tools of a host: name, effects and scoped resources.
void print_tools(const te::tool_registry<>& registry) {
  for (std::size_t i = 0; i < registry.size(); ++i) {
    const auto& d = registry.description(i);
    std::string scope;
    for (const auto& a : d.accesses)
      scope.append(" ").append(te::to_string(a.mode)).append(":").append(a.resource.empty() ? "*" : a.resource);
    std::printf("  %-26s %-34s%s\n", d.name.c_str(), te::to_string(d.effects).c_str(), scope.c_str());
  }
}

// The library's plan printer, with workspace paths shortened to ".".
std::string plan_text(const te::turn_plan& plan, const fs::path& ws) {
  const std::string root = ws.string();
  const std::string text = te::to_string(plan);
  std::string out;  // appended piece by piece: g++ 12 -O3 warns (-Wrestrict, a false positive) on replace here
  std::size_t from = 0;
  for (std::size_t p; (p = text.find(root, from)) != std::string::npos; from = p + root.size()) {
    out.append(text, from, p - from);
    out += '.';
  }
  out.append(text, from);
  return out;
}

void print_indented(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) std::printf("  %s\n", line.c_str());
}

// Every file and directory of the workspace with its content ("/" for a directory).
std::map<std::string, std::string> snapshot(const fs::path& ws) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(ws)) {
    std::string& v = out[fs::relative(e.path(), ws).string()];
    if (e.is_directory()) {
      v = "/";
      continue;
    }
    std::ifstream in(e.path());
    std::stringstream s;
    s << in.rdbuf();
    v = s.str();
  }
  return out;
}

struct timed_run {
  std::vector<te::outcome<json>> outcomes;
  double wall_ms = 0;
};

template <class Host, class Options>
timed_run run(Host& host, boost::asio::thread_pool& pool, const Options& options, const std::vector<te::tool_call>& calls,
              const std::string& scope) {
  const auto t0 = std::chrono::steady_clock::now();
  timed_run r;
  r.outcomes = host.run(pool, options, calls, scope);
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string servers;
  if (argc > 1) servers = argv[1];
  else if (const char* e = std::getenv("TOOL_EFFECTS_MCP_SERVERS"); e && *e) servers = e;
#ifdef TOOL_EFFECTS_MCP_SERVERS_DIR
  else servers = TOOL_EFFECTS_MCP_SERVERS_DIR;
#endif
  const fs::path script = fs::path(servers) / "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";
  if (te::mcp_find_program("node").empty() || !fs::exists(script)) {
    std::printf("mcp_turn: skipped: needs node and the server at %s (argv[1] or TOOL_EFFECTS_MCP_SERVERS)\n",
                script.string().c_str());
    return 77;
  }

  std::string tmpl = (fs::temp_directory_path() / "te-mcp-demo-XXXXXX").string();
  const fs::path ws = fs::canonical(::mkdtemp(tmpl.data()));
  make_workspace(ws);

  boost::asio::thread_pool pool(2);  // the pool size docs/mcp.md recommends ("Pool size")
  auto client = te::mcp_client::launch(pool, {"node", script.string(), ws.string()});
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  const auto overlay = te::parse_manifest(te::mcp_filesystem_overlay);
  // The server is named for the approver and in errors (a prefix, mcp_naming::prefixed, would also rename its tools).
  te::add_mcp_server(host, client, te::server_trust::trusted, overlay, te::mcp_naming{.server = "filesystem"});

  std::printf("tool_effects — a model turn against a real MCP server\n\n");
  std::printf("Server: %s, protocol %s, workspace %s\n", client.server_info()["serverInfo"].dump().c_str(),
              client.protocol_version().c_str(), ws.string().c_str());
  std::printf("Tools (trusted annotations give the flags, the filesystem overlay the scope):\n");
  print_tools(registry);

  const auto calls = te::parse_tool_calls(turn_text(ws));
  const auto plan = host.plan(calls);
  std::printf("\nThe model's turn: %zu calls. The plan (a call starts once every earlier call it conflicts with\n"
              "has finished; calls on different files do not conflict):\n",
              calls.size());
  const std::string npm_plan = plan_text(plan, ws);
  print_indented(npm_plan);

  std::mutex m;
  std::vector<std::string> asked;
  auto approver = [&](const te::confirmation_request& r) {
    const std::lock_guard lock(m);
    asked.push_back(te::to_string(r));  // terminal-safe: server, call id and arguments are untrusted text
    return te::confirmation::approve;
  };
  const te::retry_policy retry{.max_attempts = 3,
                               .base_delay = std::chrono::milliseconds(20),
                               .is_transient = te::mcp_transient(),
                               .seed = 1};
  const auto options = te::run_options{}.with(retry).with(te::approver(approver));
  const timed_run ours = run(host, pool, options, calls, "demo");

  std::printf("\nThe approver was consulted for the destructive calls:\n");
  for (const auto& a : asked) std::printf("  approve %s\n", a.c_str());
  std::printf("\nResults:\n");
  int failures = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    std::string what;
    if (ours.outcomes[i].has_value()) {
      what = "ok     ";
      what += short_text(te::mcp_text(ours.outcomes[i].value()));
    } else {
      ++failures;
      what = "failed ";
      what += te::error_message(ours.outcomes[i].error());
    }
    std::printf("  %-40s %s\n", label(calls[i], ws).c_str(), what.c_str());
  }

  const auto npm_workspace = snapshot(ws);
  std::printf("\nThe workspace afterwards:\n");
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(ws)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    const std::string rel = fs::relative(p, ws).string();
    if (fs::is_directory(p)) {
      std::printf("  %s/\n", rel.c_str());
      continue;
    }
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    std::printf("  %-22s %s\n", rel.c_str(), short_text(s.str(), 70).c_str());
  }

  // Wall time: the same turn with the plan and in sequence (max_concurrency = 1), each on a fresh workspace,
  // median of 7 runs after the run above warmed the server up.
  const auto silent = te::run_options{}.with(retry).with(te::approve_all());
  auto sequential_options = silent;
  sequential_options.max_concurrency = 1;
  std::vector<double> planned, sequential;
  for (int k = 0; k < 7; ++k) {
    make_workspace(ws);
    planned.push_back(run(host, pool, silent, calls, std::string("demo-plan-").append(std::to_string(k))).wall_ms);
    make_workspace(ws);
    sequential.push_back(run(host, pool, sequential_options, calls, std::string("demo-seq-").append(std::to_string(k))).wall_ms);
  }
  std::sort(planned.begin(), planned.end());
  std::sort(sequential.begin(), sequential.end());
  std::printf("\nWall time of the turn (one server, all calls multiplexed on its stdio; median of 7):\n");
  std::printf("  tool_effects plan      %7.2f ms\n", planned[3]);
  std::printf("  all calls in sequence  %7.2f ms  (%.1fx)\n", sequential[3], sequential[3] / planned[3]);
  std::printf("  (this server answers in a fraction of a millisecond, so the plan mostly buys the order;\n"
              "   with tools that wait on disks or networks the waves are where the wall time goes)\n");

  client.close();

  // The same turn against our own server: C++ tools with declared effects, trusted, no overlay.
  const fs::path fs_server = fs::read_symlink("/proc/self/exe").parent_path() / "example_mcp_fs_server";
  make_workspace(ws);
  auto ours_client = te::mcp_client::launch(pool, {fs_server.string(), "--serve", ws.string()});
  te::tool_registry<> ours_registry;
  te::json_tool_host<> ours_host(ours_registry);
  te::add_mcp_server(ours_host, ours_client, te::server_trust::trusted, {}, te::mcp_naming{.server = "tool_effects-fs"});
  std::printf("\nThe same turn against our own server (docs/examples/mcp_fs_server.cpp), trusted, with NO overlay:\n"
              "Server: %s. Its tools/list gives the flags (hints derived from the declared effects)\n"
              "and the scope (the declared accesses under _meta, io.github.tool-effects/accesses):\n",
              ours_client.server_info()["serverInfo"].dump().c_str());
  print_tools(ours_registry);
  const std::string ours_plan = plan_text(ours_host.plan(calls), ws);
  std::printf("The plan:\n");
  print_indented(ours_plan);
  const bool same_plan = ours_plan == npm_plan;
  std::printf("Same plan as the npm server's with its overlay (waves, edges, reasons): %s\n", same_plan ? "yes" : "NO");
  const std::size_t npm_asked = asked.size();
  asked.clear();
  const timed_run ours_run = run(ours_host, pool, options, calls, "demo-ours");
  std::size_t ours_ok = 0;
  for (const auto& o : ours_run.outcomes) ours_ok += o.has_value() ? 1 : 0;
  const bool same_workspace = snapshot(ws) == npm_workspace;
  std::printf("Run: %zu of %zu calls ok, the approver asked for %zu; the workspace afterwards is the npm server's: %s\n",
              ours_ok, calls.size(), asked.size(), same_workspace ? "yes" : "NO");
  ours_client.close();

  fs::remove_all(ws);
  return failures == 0 && npm_asked == 3 && asked.size() == 3 && same_plan && ours_ok == calls.size() && same_workspace ? 0 : 1;
}
