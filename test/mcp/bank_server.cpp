// The bank: an MCP server over stdio or Streamable HTTP serving three declared tools, for the tests that drive it
// with the official TypeScript SDK client (test/mcp/sdk_client.cjs, McpServerSdk.* in
// test/unit/mcp_server_sdk_test.cpp).
// add_to_balance reads the ledger, waits a little and writes it back: the read-modify-write of the seeds' bug,
// which the server's coordinator serialises per account.
//
//   mcp_bank_server [--uncoordinated] [--http]
//     --uncoordinated  the control: a coordinator that grants everything
//     --http           serve http://127.0.0.1:PORT/mcp (a free port, printed as one line on stdout) until stdin
//                      closes, instead of stdio
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server_http.hpp>

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

struct grant_everything {  // the control: no coordination at all
  struct grant_type {
    std::uint64_t fencing_token() const { return 0; }
    bool held() const { return false; }
    void release() {}
  };
  template <class Handler>
  void async_acquire(const te::call_description&, te::acquire_options, Handler&& h) const {
    auto ex = boost::asio::get_associated_executor(h);
    boost::asio::post(ex, [h = std::forward<Handler>(h)]() mutable { std::move(h)(boost::system::error_code{}, grant_type{}); });
  }
  grant_type acquire(const te::call_description&, te::acquire_options) const { return {}; }
  te::acquire_options default_acquire_options() const { return {}; }
};
}  // namespace

namespace {
template <class Server>
void serve(Server& server, bool http) {
  if (!http) {
    server.serve_stdio();
    return;
  }
  std::cout << server.listen_http("127.0.0.1", 0, "/mcp") << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
  }
}
}  // namespace

int main(int argc, char** argv) {
  bool uncoordinated = false;
  bool http = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--uncoordinated") uncoordinated = true;
    else if (a == "--http") http = true;
    else {
      std::cerr << "mcp_bank_server: unknown argument " << a << "\n";
      return 2;
    }
  }
  te::tool_registry<get_balance, add_to_balance, slow_report> registry;
  te::json_tool_host host(registry);
  boost::asio::thread_pool pool(8);
  const te::mcp_server_options options{.name = "bank", .version = "1.0.0", .max_concurrent_calls = 8};
  if (uncoordinated) {
    te::mcp_server server(pool, host, options, te::run_options{}.with(grant_everything{}));
    serve(server, http);
  } else {
    te::mcp_server server(pool, host, options);
    serve(server, http);
  }
  return 0;
}
