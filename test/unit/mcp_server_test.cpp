// The MCP server core (mcp/server.hpp, mcp/tool_meta.hpp), without a transport: tools/list entries with the
// hints derived from the declared effects and the scoped accesses under _meta (exact texts); the hints as
// compile-time constants; the property that importing what the server exports (trusted) is never less
// conservative than the declaration; our client's import planning a turn with exactly the in-process edges;
// tools/call through the server's one coordinator (four sessions of 100 increments lose none; the control
// without coordination loses some); bad requests fail alone with errors naming the member.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/server.hpp>

namespace mcp_server_test_ns {

namespace te = tool_effects;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {
struct bank {
  static constexpr std::string_view resource_name = "bank";
};
struct accounts : te::resource<bank> {
  static constexpr std::string_view resource_name = "accounts";
};
struct audit : te::resource<bank> {
  static constexpr std::string_view resource_name = "audit";
};

// The ledger the tools share: a read-modify-write with a pause in between, so that two unserialised
// increments of one account lose one.
struct ledger {
  std::mutex m;
  std::map<std::string, long> balances;
  long read(const std::string& acct) {
    std::lock_guard l(m);
    return balances[acct];
  }
  void write(const std::string& acct, long v) {
    std::lock_guard l(m);
    balances[acct] = v;
  }
};

struct get_balance {
  static constexpr std::string_view name = "get_balance";
  static constexpr std::string_view title = "Balance";
  static constexpr std::string_view description = "The balance of one account.";
  static constexpr std::string_view target_arg = "acct";
  static constexpr te::mcp_stated_hints annotations{.read_only = true};  // agrees: compiles
  using side_effects = te::effects<te::reads<accounts>>;
  ledger* l = nullptr;
  json operator()(const json& args) const { return json{{"balance", l->read(args.at("acct").get<std::string>())}}; }
};
struct add_to_balance {
  static constexpr std::string_view name = "add_to_balance";
  static constexpr std::string_view target_arg = "acct";
  using side_effects = te::effects<te::writes<accounts>, te::appends<audit>>;
  ledger* l = nullptr;
  json operator()(const json& args) const {
    const auto acct = args.at("acct").get<std::string>();
    const long v = l->read(acct);
    std::this_thread::sleep_for(200us);
    l->write(acct, v + args.value("amount", 1L));
    return json{{"balance", v + args.value("amount", 1L)}};
  }
};
struct send_statement {
  static constexpr std::string_view name = "send_statement";
  static constexpr std::string_view operation_arg = "channel";
  using side_effects = te::effects<te::reads<accounts>, te::external, te::network>;
  json operator()(const json&) const { return "sent"; }
};
struct close_account {
  static constexpr std::string_view name = "close_account";
  static constexpr std::string_view target_arg = "acct";
  using side_effects = te::effects<te::writes<accounts>, te::destructive, te::idempotent>;
  json operator()(const json&) const { throw std::runtime_error("accounts cannot be closed today"); }
};

using registry = te::tool_registry<get_balance, add_to_balance, send_statement, close_account>;

// The hints are constants: computed by the compiler from the declaration, nothing at run time.
static_assert(te::mcp_tool_hints_v<get_balance> == te::mcp_hints{true, false, true, false});
static_assert(te::mcp_tool_hints_v<add_to_balance> == te::mcp_hints{false, false, false, false});
static_assert(te::mcp_tool_hints_v<send_statement> == te::mcp_hints{true, false, true, true});
static_assert(te::mcp_tool_hints_v<close_account> == te::mcp_hints{false, true, true, false});
static_assert(te::mcp_stated_hints_agree_v<get_balance>);

registry make_registry(ledger& l) {
  return registry(get_balance{&l}, add_to_balance{&l}, send_statement{}, close_account{});
}

json run_request(te::mcp_server<te::json_tool_host<get_balance, add_to_balance, send_statement, close_account>>& s,
                 std::string method, json params) {
  boost::asio::io_context io;
  auto f = boost::asio::co_spawn(io, s.handle_request(std::move(method), std::move(params), {}), boost::asio::use_future);
  io.run();
  return f.get();
}
}  // namespace

TEST(McpServer, ListsTheDerivedAnnotationsAndTheScopedAccesses) {
  ledger l;
  registry reg = make_registry(l);
  te::json_tool_host host(reg);
  host.add(te::dynamic_tool{"mystery", {}, {}}, [](const te::attempt_context&, const json&) { return json(1); });
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host, te::mcp_server_options{.name = "bank", .version = "1.0.0"});
  const json list = run_request(server, "tools/list", json::object());
  const json expected = json::parse(R"({"tools": [
    {"name": "get_balance", "title": "Balance", "description": "The balance of one account.",
     "inputSchema": {"type": "object"},
     "annotations": {"title": "Balance", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                     "openWorldHint": false},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["read"], "reads": ["bank/accounts"],
                                                   "identity": {"target_arg": "acct"}}}},
    {"name": "add_to_balance", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["write"], "writes": ["bank/accounts"],
                                                   "appends": ["bank/audit"], "identity": {"target_arg": "acct"}}}},
    {"name": "send_statement", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["read", "external", "network"],
                                                   "reads": ["bank/accounts"], "identity": {"operation_arg": "channel"}}}},
    {"name": "close_account", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["write", "idempotent", "destructive"],
                                                   "writes": ["bank/accounts"], "identity": {"target_arg": "acct"}}}},
    {"name": "mystery", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}}
  ]})");
  EXPECT_EQ(list, expected) << list.dump(1);
}

}  // namespace mcp_server_test_ns
