// Serving declared tools over MCP (ctest example.mcp_server): three bank tools, their hints derived from
// their declarations, served over stdio by `mcp_server`; then the same program, as a client, starts itself as
// that server (`mcp_server --serve`), registers its tools with a host (trusted, no overlay: the server
// publishes its scoped accesses under _meta), and plans and runs a model turn against it.
//
//   ./example_mcp_server --serve      # an MCP server on stdin/stdout (for Claude Code, Codex, Cursor, ...)
//   ./example_mcp_server              # the demonstration: a client of its own server
#include <iostream>
#include <string>
#include <string_view>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/server.hpp>

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct bank {
  static constexpr std::string_view resource_name = "bank";
};
struct accounts : te::resource<bank> {
  static constexpr std::string_view resource_name = "accounts";
};

// Stands for the bank's database (a real server would talk to one).
json& ledger() {
  static json l = {{"alice", 100}, {"bob", 20}};
  return l;
}

struct get_balance {
  static constexpr std::string_view name = "get_balance";
  static constexpr std::string_view description = "The balance of one account.";
  static constexpr std::string_view target_arg = "acct";  // calls on different accounts do not conflict
  using side_effects = te::effects<te::reads<accounts>>;
  json operator()(const json& args) const { return json{{"balance", ledger().value(args.at("acct").get<std::string>(), 0)}}; }
};

struct deposit_args {
  std::string acct;
  long amount = 0;
};
BOOST_DESCRIBE_STRUCT(deposit_args, (), (acct, amount))

struct deposit {
  static constexpr std::string_view name = "deposit";
  static constexpr std::string_view description = "Adds `amount` to one account.";
  static constexpr std::string_view target_arg = "acct";
  using arguments = deposit_args;  // the input schema, and arguments checked before the call
  using side_effects = te::effects<te::writes<accounts>>;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<deposit_args>(args);
    ledger()[a.acct] = ledger().value(a.acct, 0L) + a.amount;
    return json{{"balance", ledger()[a.acct]}};
  }
};

struct audit_report {
  static constexpr std::string_view name = "audit_report";
  static constexpr std::string_view title = "Audit report";
  static constexpr te::mcp_stated_hints annotations{.read_only = true};  // stated: must equal the derived hint
  using side_effects = te::effects<te::reads<bank>, te::idempotent>;
  json operator()(const json&) const { return ledger(); }
};

int serve() {
  te::tool_registry<get_balance, deposit, audit_report> registry;
  te::json_tool_host host(registry);
  boost::asio::thread_pool pool(4);
  te::mcp_server server(pool, host, te::mcp_server_options{.name = "bank", .version = "1.0.0"});
  server.serve_stdio();  // until the client closes our stdin
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--serve") return serve();

  boost::asio::thread_pool pool(4);
  auto client = te::mcp_client::launch(pool, {argv[0], "--serve"});
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  te::add_mcp_server(host, client, te::server_trust::trusted);  // no overlay: the server says what it touches

  const json listed = client.list_tools();
  for (const auto& t : listed["tools"])
    std::cout << t["name"].get<std::string>() << "  " << t["annotations"].dump() << "\n    "
              << t["_meta"]["io.github.tool-effects/accesses"].dump() << "\n";

  const auto calls = te::parse_tool_calls(R"([
    {"id": "1", "name": "deposit",      "arguments": {"acct": "alice", "amount": 5}},
    {"id": "2", "name": "deposit",      "arguments": {"acct": "bob", "amount": 7}},
    {"id": "3", "name": "get_balance",  "arguments": {"acct": "alice"}},
    {"id": "4", "name": "audit_report", "arguments": {}}])");
  const auto plan = host.plan(calls);
  std::cout << "plan:\n";
  for (const auto& e : plan.edges) std::cout << "  #" << calls[e.to].id << " waits for #" << calls[e.from].id << ": " << e.reason << "\n";
  const auto out = host.run(pool, te::run_options{}, calls);
  bool ok = true;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto a = te::answer_of(out[i], calls[i].name);
    std::cout << "#" << calls[i].id << " " << calls[i].name << " -> " << a.content << "\n";
    ok = ok && !a.is_error;
  }
  // #1 and #2 touch different accounts: no edge between them; #3 reads alice after #1 writes it; the audit
  // reads the whole bank after both deposits.
  ok = ok && plan.edges.size() == 3;
  return ok ? 0 : 1;
}
