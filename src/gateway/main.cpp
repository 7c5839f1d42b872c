// tool-effects-gateway: an effects gateway in front of MCP servers (docs/gateway.md).
//
//   tool-effects-gateway --config gateway.json                       serve one client over stdio
//   tool-effects-gateway --config gateway.json --listen 127.0.0.1:0  serve Streamable HTTP at /mcp; the bound
//                                                                    port alone on stdout's first line
//   tool-effects-gateway --check gateway.json [--turn calls.json]    print each tool's effective declaration and
//                                                                    the plan of a sample turn, then exit
// Options: --audit FILE|stderr (one JSON line per call), --journal FILE (the SQLite journal), --help, --version.
// Exit status: 0 after a clean shutdown (stdin closed, or SIGTERM / SIGINT: calls under way finish first, within
// the configuration's shutdown_grace_ms; a second signal exits at once), 1 when the configuration or an
// upstream server is refused (nothing is served), 2 for a bad command line.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <pthread.h>

#include <tool_effects/mcp/gateway.hpp>
#include <tool_effects/mcp/gateway/backends.hpp>
#include <tool_effects/version.hpp>
#if TOOL_EFFECTS_GATEWAY_AUTHORIZATION  // built with OpenSSL 3 (tool_effects::mcp_auth)
#include <tool_effects/mcp/gateway/authorization.hpp>
#endif

namespace te = tool_effects;
using nlohmann::json;

namespace {

constexpr std::string_view usage =
    "usage: tool-effects-gateway --config FILE [--listen HOST:PORT] [--audit FILE|stderr] [--journal FILE]\n"
    "       tool-effects-gateway --check FILE [--turn CALLS.json]\n"
    "Serves the tools of the MCP servers FILE names (the mcpServers shape of Claude Desktop, Claude Code and\n"
    "Cursor) with hints derived from their declared effects, and runs every call under one coordinator\n"
    "(docs/gateway.md). Without --listen it serves one client over stdio.\n";

struct options {
  std::string config;
  std::optional<std::string> listen;
  bool check = false;
  std::string turn;
  std::optional<std::string> audit;
  std::optional<std::string> journal;
};

[[noreturn]] void bad_usage(const std::string& why) {
  std::cerr << "tool-effects-gateway: " << why << "\n" << usage;
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) bad_usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--config") o.config = value();
    else if (a == "--check") o.check = true, o.config = (i + 1 < argc && argv[i + 1][0] != '-') ? value() : o.config;
    else if (a == "--listen") o.listen = value();
    else if (a == "--turn") o.turn = value();
    else if (a == "--audit") o.audit = value();
    else if (a == "--journal") o.journal = value();
    else if (a == "--help" || a == "-h") {
      std::cout << usage;
      std::exit(0);
    } else if (a == "--version") {
      std::cout << "tool-effects-gateway " << TOOL_EFFECTS_VERSION_STRING << "\n";
      std::exit(0);
    } else {
      bad_usage("unknown argument \"" + a + "\"");
    }
  }
  if (o.config.empty()) bad_usage("--config FILE (or --check FILE) is required");
  if (o.check && o.listen) bad_usage("--check and --listen exclude each other");
  return o;
}

// "host:port" (an IPv6 address in brackets).
std::pair<std::string, unsigned short> endpoint_of(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 == s.size()) bad_usage("--listen expects HOST:PORT, got \"" + s + "\"");
  std::string host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const unsigned long port = std::strtoul(s.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port > 65535) bad_usage("--listen: bad port in \"" + s + "\"");
  return {host, static_cast<unsigned short>(port)};
}

// The audit sink: one JSON line per record, appended and flushed.
te::gateway_hooks hooks_for(const std::string& audit) {
  te::gateway_hooks h;
  h.log = [](const std::string& line) { std::cerr << line << std::endl; };
  if (audit.empty()) return h;
  std::FILE* f = audit == "stderr" ? stderr : std::fopen(audit.c_str(), "a");
  if (!f) throw te::gateway_config_error("", "", "", "/gateway/audit", "cannot open the audit log for appending", audit);
  h.audit = [f](const json& record) {
    const std::string line = record.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::fwrite(line.data(), 1, line.size(), f);
    std::fflush(f);
  };
  return h;
}

std::string hints_of(const te::call_description& d) {
  const json a = te::mcp_annotations(d);
  std::string out;
  for (const char* k : {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"})
    out += std::string(out.empty() ? "" : " ") + k + "=" + (a.value(k, false) ? "true" : "false");
  return out;
}

std::string accesses_of(const te::gateway_tool& t) {
  const json m = te::mcp_accesses_meta(t.declaration.description, t.declaration.identity);
  std::string out;
  for (const char* k : {"reads", "writes", "appends"})
    if (m.contains(k)) out += std::string(out.empty() ? "" : "; ") + k + " " + m[k].dump();
  if (t.declaration.description.exclusive) out = "exclusive (conflicts with every call)";
  if (t.declaration.identity.target_arg) out += "; target argument \"" + *t.declaration.identity.target_arg + "\"";
  return out;
}

// --check: each tool's effective declaration, then the plan of a sample turn.
int check(te::mcp_gateway& g, const std::string& turn_file) {
  const auto& c = g.config();
  std::cout << "configuration " << c.file << ": " << c.servers.size() << " server(s), " << g.tools().size()
            << " tool(s); coordinator " << (c.etcd_coordinator ? "etcd" : "in process") << ", journal "
            << (!c.sqlite_journal.empty() ? "sqlite " + c.sqlite_journal : c.etcd_journal ? "etcd" : "none")
            << ", HTTP authorization "
            << (c.authorization ? c.authorization->verifier + " tokens for " + c.authorization->resource : std::string("none"))
            << "\n\n";
  for (const auto& t : g.tools()) {
    const auto& d = t.declaration.description;
    std::cout << "tool \"" << t.name << "\" (server \"" << t.server << "\", its tool \"" << t.upstream_name << "\")\n"
              << "  effects:  " << json(d.effects).dump() << " from "
              << (t.source == "overlay"          ? "the configuration (overlay)"
                  : t.source == "trusted_server" ? "the server, trusted (its " + t.detail + ")"
                                                 : std::string("nowhere: unknown (untrusted server, no overlay entry)"))
              << "\n  accesses: " << accesses_of(t) << "\n  hints:    " << hints_of(d) << "\n";
    if (const auto a = t.upstream.find("annotations"); a != t.upstream.end() && a->is_object())
      std::cout << "  server claimed: " << a->dump() << (t.source == "trusted_server" && t.detail == "annotations" ? "" : " (not used)")
                << "\n";
    std::cout << "  approval: "
              << (d.exclusive || te::needs_confirmation(d.effects)
                      ? std::string(te::to_string(t.approval)) +
                            (t.approval == te::gateway_approval::ask ? " (the user, by elicitation)" : "")
                      : std::string("not needed"))
              << "\n";
  }
  std::vector<te::tool_call> calls;
  if (!turn_file.empty()) {
    std::ifstream in(turn_file);
    std::stringstream ss;
    ss << in.rdbuf();
    calls = te::parse_tool_calls(ss.str());
  } else {
    for (const auto& t : g.tools()) {
      te::tool_call call;
      call.id = std::to_string(calls.size() + 1);
      call.name = t.name;
      call.arguments = json::object();
      if (t.declaration.identity.target_arg) call.arguments[*t.declaration.identity.target_arg] = "sample";
      calls.push_back(std::move(call));
    }
  }
  std::cout << "\nplan of " << (turn_file.empty() ? "a sample turn (each tool once; target arguments \"sample\")"
                                                  : "the turn in " + turn_file)
            << ":\n"
            << te::to_string(g.plan(calls));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  // SIGTERM and SIGINT are taken by a thread of ours (sigwait), so every other thread has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR1);  // our own: the signal thread's end
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<te::mcp_gateway> gateway;
  std::optional<te::mcp_resource_server> authorization;
  try {
    te::gateway_config config = te::load_gateway_config(o.config);
    if (o.journal) config.sqlite_journal = *o.journal;
    if (o.audit) config.audit = *o.audit;
    gateway = std::make_unique<te::mcp_gateway>(config, te::make_gateway_backends(config), hooks_for(config.audit));
#if TOOL_EFFECTS_GATEWAY_AUTHORIZATION
    authorization = te::make_gateway_authorization(*gateway, [](std::string_view reason, std::string_view message) {
      std::cerr << "tool-effects-gateway: a token was refused (" << reason << "): " << message << std::endl;
    });
#else
    if (config.authorization)
      throw te::gateway_config_error(config.file, "", "", "/gateway/http/authorization",
                                     "this tool-effects-gateway was built without OpenSSL: no authorization", "");
#endif
  } catch (const std::exception& e) {
    std::cerr << "tool-effects-gateway: " << e.what() << "\nnothing was started\n";
    return 1;
  }
  if (o.check) return check(*gateway, o.turn);

  std::thread shutting_down;
  std::thread signal_thread([&] {
    int sig = 0;
    for (int seen = 0;;) {
      if (sigwait(&signals, &sig) != 0 || sig == SIGUSR1) return;
      if (++seen > 1) std::_Exit(128 + sig);  // a second signal: at once
      std::cerr << "tool-effects-gateway: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
                << ": finishing the calls under way" << std::endl;
      shutting_down = std::thread([&] { gateway->shutdown(); });
    }
  });
  int status = 0;
  try {
    if (o.listen) {
      const auto [host, port] = endpoint_of(*o.listen);
      te::mcp_http_server_options http;
      http.authorization = std::move(authorization);
      std::cout << gateway->listen_http(host, port, std::move(http)) << std::endl;
      gateway->wait();
    } else {
      gateway->serve_stdio();
    }
  } catch (const std::exception& e) {
    std::cerr << "tool-effects-gateway: " << e.what() << "\n";
    status = 1;
  }
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();
  if (shutting_down.joinable()) shutting_down.join();
  gateway.reset();
  return status;
}
