// The bank: an MCP server over stdio or Streamable HTTP serving three declared tools, for the tests that drive it
// with the official TypeScript SDK client (test/mcp/sdk_client.cjs, McpServerSdk.* in
// test/unit/mcp_server_sdk_test.cpp).
// add_to_balance reads the ledger, waits a little and writes it back: the read-modify-write of the seeds' bug,
// which the server's coordinator serialises per account.
//
//   mcp_bank_server [--uncoordinated] [--http]
//                   [--authorization <resource> <issuer> <introspection url> <client id> <client secret>]
//     --uncoordinated  the control: a coordinator that grants everything
//     --http           serve http://127.0.0.1:PORT/mcp (a free port, printed as one line on stdout) until stdin
//                      closes, instead of stdio
//     --authorization  (with --http) an OAuth 2.1 resource server (mcp_resource_server): `resource` is its
//                      canonical URI, where "{port}" stands for the port it listens on (then picked before it
//                      listens: a free one a moment earlier); tokens from the authorization server `issuer`,
//                      verified by RFC 7662 introspection at `introspection url` (client_secret_basic with the
//                      client id and secret); scopes derived from the tools' effects (mcp_scopes_from_effects):
//                      bank/accounts:read (get_balance), bank/accounts:write (add_to_balance), bank:read
//                      (slow_report), all three published as scopes_supported. Refused tokens are told on stderr.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#ifdef TOOL_EFFECTS_BANK_AUTHORIZATION  // built with tool_effects::mcp_auth (OpenSSL)
#include <tool_effects/mcp/auth/introspection.hpp>
#include <tool_effects/mcp/auth/resource_server.hpp>
#include <tool_effects/mcp/auth/scopes.hpp>
#endif
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server_http.hpp>

#include "../unit/coordinator_support.hpp"  // grant_everything: the --uncoordinated control

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct bank {
  static constexpr std::string_view resource_name = "bank";
};
struct accounts : te::resource<bank> {
  static constexpr std::string_view resource_name = "accounts";
};

std::mutex ledger_mutex;  // one read or one write at a time (not a read-modify-write)
json ledger = json::object();

json load() {
  std::lock_guard l(ledger_mutex);
  return ledger;
}
void store(const json& j) {
  std::lock_guard l(ledger_mutex);
  ledger = j;
}

struct get_balance {
  static constexpr std::string_view name = "get_balance";
  static constexpr std::string_view title = "Balance";
  static constexpr std::string_view description = "The balance of one account.";
  static constexpr std::string_view target_arg = "acct";
  static constexpr std::string_view input_schema =
      R"({"type": "object", "properties": {"acct": {"type": "string"}}, "required": ["acct"]})";
  using side_effects = te::effects<te::reads<accounts>>;
  json operator()(const json& args) const { return json{{"balance", load().value(args.at("acct").get<std::string>(), 0)}}; }
};
struct add_to_balance {
  static constexpr std::string_view name = "add_to_balance";
  static constexpr std::string_view description = "Adds `amount` (default 1) to one account.";
  static constexpr std::string_view target_arg = "acct";
  using side_effects = te::effects<te::writes<accounts>>;
  json operator()(const json& args) const {
    const auto acct = args.at("acct").get<std::string>();
    json all = load();
    const long v = all.value(acct, 0L) + args.value("amount", 1L);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    all[acct] = v;
    store(all);
    return json{{"balance", v}};
  }
};
struct slow_report {
  static constexpr std::string_view name = "slow_report";
  static constexpr std::string_view description = "Takes `ms` milliseconds (default 2000) to read every account.";
  using side_effects = te::effects<te::reads<bank>, te::idempotent>;
  json operator()(const te::attempt_context& ctx, const json& args) const {
    const int ms = args.value("ms", 2000);
    for (int step = 1; step <= 4; ++step) {  // four quarters, the first three reported as progress
      std::this_thread::sleep_for(std::chrono::milliseconds(ms / 4));
      if (step < 4) ctx.report_progress(step, 4, "quarter " + std::to_string(step));
    }
    return load();
  }
};

}  // namespace

namespace {
#ifdef TOOL_EFFECTS_BANK_AUTHORIZATION
// The scopes the tools need, by the rule of mcp_scopes_from_effects; checked at compile time.
inline constexpr std::array<std::string_view, 3> bank_scopes{"bank/accounts:read", "bank/accounts:write", "bank:read"};
static_assert(te::ScopesSupported<bank_scopes, get_balance, add_to_balance, slow_report>);

// A port free on 127.0.0.1 a moment ago (the resource must name the port before the listener binds it).
unsigned short free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}
#endif

// --authorization's five values.
struct authorization_args {
  std::string resource, issuer, introspection, client_id, client_secret;
};

template <class Server>
void serve(Server& server, bool http, const std::optional<authorization_args>& auth) {
  if (!http) {
    server.serve_stdio();
    return;
  }
  te::mcp_http_server_options o;
  unsigned short port = 0;
  if (auth) {
#ifndef TOOL_EFFECTS_BANK_AUTHORIZATION
    std::cerr << "mcp_bank_server: built without OpenSSL (tool_effects::mcp_auth): no --authorization\n";
    std::exit(2);
#else
    std::string resource = auth->resource;
    if (const auto at = resource.find("{port}"); at != std::string::npos) {
      port = free_port();
      resource.replace(at, 6, std::to_string(port));
    }
    te::mcp_introspection_verifier verify(
        {.endpoint = auth->introspection,
         .client_id = auth->client_id,
         .client_secret = auth->client_secret,
         .issuer = auth->issuer,
         .log = [](std::string_view reason, std::string_view message) {
           std::cerr << "mcp_bank_server: " << reason << ": " << message << std::endl;
         }});
    o.authorization = te::mcp_resource_server{.resource = resource,
                                              .authorization_servers = {auth->issuer},
                                              .scopes_supported = {bank_scopes.begin(), bank_scopes.end()},
                                              .verify_token = verify,
                                              .resource_name = "bank",
                                              .tool_scopes = te::mcp_scopes_from_effects{}};
#endif
  }
  std::cout << server.listen_http("127.0.0.1", port, "/mcp", std::move(o)) << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
  }
}
}  // namespace

int main(int argc, char** argv) {
  bool uncoordinated = false;
  bool http = false;
  std::optional<authorization_args> auth;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--uncoordinated") uncoordinated = true;
    else if (a == "--http") http = true;
    else if (a == "--authorization" && i + 5 < argc) {
      auth = authorization_args{argv[i + 1], argv[i + 2], argv[i + 3], argv[i + 4], argv[i + 5]};
      i += 5;
    } else {
      std::cerr << "mcp_bank_server: unknown argument " << a << "\n";
      return 2;
    }
  }
  te::tool_registry<get_balance, add_to_balance, slow_report> registry;
  te::json_tool_host host(registry);
  boost::asio::thread_pool pool(8);
  const te::mcp_server_options options{.name = "bank", .version = "1.0.0", .max_concurrent_calls = 8};
  if (uncoordinated) {
    te::mcp_server server(pool, host, options, te::run_options{}.with(coordinator_test::grant_everything{}));
    serve(server, http, auth);
  } else {
    te::mcp_server server(pool, host, options);
    serve(server, http, auth);
  }
  return 0;
}
