// The MCP server core (mcp/server.hpp, mcp/tool_meta.hpp), without a transport: tools/list entries with the
// hints derived from the declared effects and the scoped accesses under _meta (exact texts); the hints as
// compile-time constants; the property that importing what the server exports (trusted) is never less
// conservative than the declaration; our client's import planning a turn with exactly the in-process edges;
// tools/call through the server's one coordinator (four sessions of 100 increments lose none; the control
// without coordination loses some); bad requests fail alone with errors naming the member.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <poll.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/sqlite_journal.hpp>

#include "coordinator_support.hpp"
#include "mcp_test_support.hpp"

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
  json operator()(const json& args) const {
    if (args.value("channel", "") == "fax") throw std::runtime_error("no fax machine");
    return "sent";
  }
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
  const json expected = json::parse(R"x({"tools": [
    {"name": "get_balance", "title": "Balance", "description": "The balance of one account.",
     "inputSchema": {"type": "object", "required": ["acct"], "properties": {"acct": {"description": "what the call acts on (its target)"}}},
     "annotations": {"title": "Balance", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                     "openWorldHint": false},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["read"], "reads": ["bank/accounts"],
                                                   "identity": {"target_arg": "acct"}}}},
    {"name": "add_to_balance", "inputSchema": {"type": "object", "required": ["acct"], "properties": {"acct": {"description": "what the call acts on (its target)"}}},
     "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["write"], "writes": ["bank/accounts"],
                                                   "appends": ["bank/audit"], "identity": {"target_arg": "acct"}}}},
    {"name": "send_statement", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["read", "external", "network"],
                                                   "reads": ["bank/accounts"], "identity": {"operation_arg": "channel"}}}},
    {"name": "close_account", "inputSchema": {"type": "object", "required": ["acct"], "properties": {"acct": {"description": "what the call acts on (its target)"}}},
     "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1, "effects": ["write", "idempotent", "destructive"],
                                                   "writes": ["bank/accounts"], "identity": {"target_arg": "acct"}}}},
    {"name": "mystery", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true},
     "_meta": {"io.github.tool-effects/accesses": {"version": 1}}}
  ]})x");
  EXPECT_EQ(list, expected) << list.dump(1);
}

// mcp_server_options::tool_entry sees each entry as built, with its tool's index in the registry (static tools
// and dynamic alike), and what it changes is what clients list; list_tools() says the same. The control: the same
// server without the hook lists the entries as built.
TEST(McpServer, TheToolEntryHookDecoratesEachEntryByItsIndex) {
  ledger l;
  registry reg = make_registry(l);
  te::json_tool_host host(reg);
  host.add(te::dynamic_tool{"mystery", {}, {}}, [](const te::attempt_context&, const json&) { return json(1); });
  boost::asio::thread_pool pool(2);
  te::mcp_server plain(pool, host, te::mcp_server_options{.name = "bank"});
  const json built = run_request(plain, "tools/list", json::object());
  ASSERT_EQ(built["tools"].size(), 5u);
  EXPECT_FALSE(built["tools"][4].contains("description")) << "the control: as built";

  std::vector<std::pair<std::size_t, std::string>> seen;
  std::mutex m;
  te::mcp_server_options o{.name = "bank"};
  o.tool_entry = [&](std::size_t i, json& e) {
    const std::lock_guard lock(m);
    seen.emplace_back(i, e.at("name").get<std::string>());
    e["description"] = "tool #" + std::to_string(i);
  };
  te::mcp_server decorated(pool, host, o);
  const json list = run_request(decorated, "tools/list", json::object());
  ASSERT_EQ(list["tools"].size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    json want = built["tools"][i];
    want["description"] = "tool #" + std::to_string(i);
    EXPECT_EQ(list["tools"][i], want) << i;
    EXPECT_EQ(seen.at(i), (std::pair<std::size_t, std::string>{i, std::string(reg.name(i))}));
  }
  EXPECT_EQ(decorated.list_tools(), list);
}

namespace {
// What our client makes of one exported entry, from a trusted server (add_mcp_server's import).
te::dynamic_tool imported(const json& entry, te::server_trust t = te::server_trust::trusted) {
  return te::mcp_server_tools(json{{"tools", json::array({entry})}}, t).at(0);
}
// Accesses as sorted text ("mode resource"): the export groups them by mode.
std::vector<std::string> sorted(const std::vector<te::runtime_access>& accesses) {
  std::vector<std::string> out;
  for (const auto& a : accesses) out.push_back(std::string(te::to_string(a.mode)) + " " + a.resource + (a.target ? " @" + *a.target : ""));
  std::sort(out.begin(), out.end());
  return out;
}
// A probe for conflicts: one access of mode m to `resource`, with or without a target.
te::call_description probe(std::string resource, te::access_mode m, std::optional<std::string> target = std::nullopt) {
  auto d = te::describe_runtime("probe", {}, {{std::move(resource), m, std::nullopt}});
  if (target)
    for (auto& a : d.accesses) a.target = target;
  return d;
}
}  // namespace

// For every declared effect set (all 128) and every scoped access mode (none, read, write, append) on "bank/
// accounts", with a target argument or without: what our client imports from the server's entry (trusted)
// conflicts with every probe the declaration conflicts with, needs confirmation when the declaration does, is
// retried and run in parallel only when the declaration is. With the _meta accesses it is the declaration
// itself (its accesses exactly, its flags with those its accesses imply); with the hints alone (a client that ignores _meta) the flag rules still hold.
TEST(McpServer, ImportingWhatTheServerExportsIsNeverLessConservative) {
  std::vector<te::call_description> probes;
  for (const auto m : {te::access_mode::read, te::access_mode::write, te::access_mode::append}) {
    for (const char* r : {"", "bank", "bank/accounts", "bank/accounts/x", "bank/audit", "other"}) {
      probes.push_back(probe(r, m));
      probes.push_back(probe(r, m, "a"));
      probes.push_back(probe(r, m, "b"));
    }
  }
  probes.push_back(te::call_description{});  // unknown
  probes.push_back(te::describe_runtime("flags only", te::effect_set{te::effect::expensive}, {}));
  const json args = {{"acct", "a"}};
  std::size_t checked = 0;
  for (unsigned bits = 0; bits < (1u << te::effect_count); ++bits) {
    te::effect_set flags;
    for (const auto e : te::all_effects)
      if (bits & (1u << static_cast<unsigned>(e))) flags.insert(e);
    for (int mode = -1; mode < 3; ++mode) {
      std::vector<te::runtime_access> scoped;
      if (mode >= 0) scoped.push_back({"bank/accounts", static_cast<te::access_mode>(mode), std::nullopt});
      for (const bool targeted : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "flags " << json(flags).dump() << " mode " << mode << " target "
                                          << targeted);
        const te::call_description declared = te::describe_runtime("t", flags, scoped);
        te::identity_policy policy;
        if (targeted) policy.target_arg = "acct";
        const json entry = te::mcp_tool_entry("t", declared, policy);
        json hints_only = entry;
        hints_only.erase("_meta");
        const te::dynamic_tool with_meta = imported(entry);
        // The same flags, plus those its accesses imply (a destructive tool without scoped writes writes the
        // root: `write` comes back with it).
        EXPECT_EQ(with_meta.description.effects.bits() & declared.effects.bits(), declared.effects.bits());
        EXPECT_EQ(sorted(with_meta.description.accesses), sorted(declared.accesses));
        EXPECT_EQ(with_meta.description.exclusive, declared.exclusive);
        EXPECT_EQ(with_meta.identity.target_arg, policy.target_arg);
        const auto d_call = te::describe_call(declared, policy, args);
        const te::dynamic_tool without_meta = imported(hints_only);
        for (const bool meta : {true, false}) {
          const te::dynamic_tool& got = meta ? with_meta : without_meta;
          const te::effect_set e = got.description.effects;
          const auto g_call = te::describe_call(got.description, got.identity, args);
          if (te::needs_confirmation(declared.effects) || declared.exclusive) {
            EXPECT_TRUE(te::needs_confirmation(e) || got.description.exclusive) << meta;
          }
          if (te::may_retry(e) && !got.description.exclusive) {
            EXPECT_TRUE(te::may_retry(declared.effects) && !declared.exclusive) << meta;
          }
          if (te::is_parallel_safe(e) && !got.description.exclusive) {
            EXPECT_TRUE(te::is_parallel_safe(declared.effects)) << meta;
          }
          if (!meta) continue;
          for (const auto& p : probes)
            if (te::conflicts(d_call, p)) {
              EXPECT_TRUE(te::conflicts(g_call, p)) << p.accesses.size();
            }
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 128u * 4u * 2u);
}

// An untrusted server's _meta is ignored as its hints are: every tool is unknown.
TEST(McpServer, AnUntrustedServersAccessesAreIgnored) {
  const te::call_description declared =
      te::describe_runtime("t", {}, {{"bank/accounts", te::access_mode::read, std::nullopt}});
  const te::dynamic_tool got = imported(te::mcp_tool_entry("t", declared, {}), te::server_trust::untrusted);
  EXPECT_TRUE(got.description.exclusive);
  EXPECT_TRUE(got.description.effects.empty());
}

// A malformed _meta from a trusted server is refused with the pointer into the list, naming the server.
TEST(McpServer, AMalformedAccessesEntryNamesTheMember) {
  json entry = te::mcp_tool_entry("t", te::describe_runtime("t", {}, {{"a", te::access_mode::read, std::nullopt}}), {});
  entry["_meta"]["io.github.tool-effects/accesses"]["reads"][0] = "/bad/";
  try {
    (void)imported(entry);
    ADD_FAILURE() << "accepted";
  } catch (const te::json_error& e) {
    EXPECT_EQ(e.pointer(), "/tools/0/_meta/io.github.tool-effects~1accesses/reads/0");
    EXPECT_NE(std::string(e.what()).find("invalid resource path"), std::string::npos) << e.what();
  }
  entry["_meta"]["io.github.tool-effects/accesses"] = {{"version", 2}};
  try {
    (void)imported(entry);
    ADD_FAILURE() << "accepted";
  } catch (const te::json_error& e) {
    EXPECT_EQ(e.pointer(), "/tools/0/_meta/io.github.tool-effects~1accesses/version");
  }
}

// Our client's host, given what the server lists (trusted), plans a turn with exactly the edges (and
// reasons) the same tools give in-process.
TEST(McpServer, TheClientPlansTheEdgesTheToolsGiveInProcess) {
  ledger l;
  registry reg = make_registry(l);
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  te::mcp_server server(pool, host, te::mcp_server_options{.name = "bank"});
  te::tool_registry<> client_reg;
  te::json_tool_host<> client(client_reg);
  for (auto& t : te::mcp_server_tools(server.list_tools(), te::server_trust::trusted))
    client.add(std::move(t), [](const te::attempt_context&, const json&) { return json(); });
  const auto calls = te::parse_tool_calls(R"([
    {"id": "1", "name": "get_balance", "arguments": {"acct": "a"}},
    {"id": "2", "name": "add_to_balance", "arguments": {"acct": "a", "amount": 5}},
    {"id": "3", "name": "add_to_balance", "arguments": {"acct": "b", "amount": 5}},
    {"id": "4", "name": "send_statement", "arguments": {"channel": "mail"}},
    {"id": "5", "name": "get_balance", "arguments": {"acct": "b"}},
    {"id": "6", "name": "close_account", "arguments": {"acct": "a"}},
    {"id": "7", "name": "add_to_balance", "arguments": {"acct": "c"}}])");
  auto text = [](const std::vector<te::plan_edge>& edges) {
    std::vector<std::string> out;
    for (const auto& e : edges) out.push_back(std::to_string(e.from) + "->" + std::to_string(e.to) + " " + e.reason);
    return out;
  };
  const auto in_process = text(host.plan(calls).edges);
  const auto over_mcp = text(client.plan(calls).edges);
  EXPECT_EQ(over_mcp, in_process);
  EXPECT_GE(in_process.size(), 4u);  // the turn has edges to compare: 1->2, 2->6, 3->4/5, ...
  // Control: the hints alone (no _meta) order far more (every write is a root write).
  te::tool_registry<> hints_reg;
  te::json_tool_host<> hints_host(hints_reg);
  json list = server.list_tools();
  for (auto& t : list["tools"]) t.erase("_meta");
  for (auto& t : te::mcp_server_tools(list, te::server_trust::trusted))
    hints_host.add(std::move(t), [](const te::attempt_context&, const json&) { return json(); });
  EXPECT_NE(text(hints_host.plan(calls).edges), in_process);
}

namespace {
// The control "without the server's coordination": a coordinator that grants every request at once
// (coordinator_support.hpp).
static_assert(te::Coordinator<coordinator_test::grant_everything>);

// Four "sessions" (threads, each with its own io_context, as each transport session has) making 100
// add_to_balance(acct) calls each; returns the final balance.
template <class Server>
long four_sessions_of_100_increments(Server& server, ledger& l) {
  std::vector<std::thread> sessions;
  std::atomic<int> errors{0};
  for (int s = 0; s < 4; ++s)
    sessions.emplace_back([&server, &errors] {
      boost::asio::io_context io;
      for (int i = 0; i < 100; ++i)
        boost::asio::co_spawn(io,
                              server.handle_request("tools/call", json{{"name", "add_to_balance"}, {"arguments", {{"acct", "shared"}}}}, {}),
                              [&errors](std::exception_ptr e, json r) {
                                if (e || r.value("isError", false)) ++errors;
                              });
      io.run();
    });
  for (auto& t : sessions) t.join();
  EXPECT_EQ(errors.load(), 0);
  return l.read("shared");
}
}  // namespace

// The seeds' bug fixed where the record lives: 400 concurrent increments of one account from four sessions
// lose none under the server's one coordinator. Control: with a coordinator that grants everything, the same
// load loses some (checked: 400 expected, fewer observed).
TEST(McpServer, FourSessionsOfIncrementsLoseNone) {
  {
    ledger l;
    registry reg = make_registry(l);
    te::json_tool_host host(reg);
    boost::asio::thread_pool pool(8);
    te::mcp_server server(pool, host, te::mcp_server_options{.max_concurrent_calls = 8});
    EXPECT_EQ(four_sessions_of_100_increments(server, l), 400);
  }
  {
    ledger l;
    registry reg = make_registry(l);
    te::json_tool_host host(reg);
    boost::asio::thread_pool pool(8);
    te::mcp_server server(pool, host, te::mcp_server_options{.max_concurrent_calls = 8},
                          te::run_options{}.with(coordinator_test::grant_everything{}));
    EXPECT_LT(four_sessions_of_100_increments(server, l), 400) << "the control loses increments";
  }
}

// A bad request fails alone, with an error naming the member; a tool's failure is a result with isError.
TEST(McpServer, BadRequestsFailAloneWithTheirMember) {
  ledger l;
  registry reg = make_registry(l);
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host);
  auto error_of = [&](std::string method, json params) -> std::string {
    try {
      (void)run_request(server, std::move(method), std::move(params));
    } catch (const te::mcp_server_error& e) {
      return std::to_string(e.code()) + " " + e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of("tools/call", json::array()), "-32602 Invalid params: at : expected an object, got array: []");
  EXPECT_EQ(error_of("tools/call", json::object()), "-32602 Invalid params: missing required key \"name\"");
  EXPECT_EQ(error_of("tools/call", {{"name", 7}}), "-32602 Invalid params: at /name: expected a string, got number: 7");
  EXPECT_EQ(error_of("tools/call", {{"name", "get_balance"}, {"arguments", "acct=a"}}),
            "-32602 Invalid params: at /arguments: expected an object, got string: acct=a");
  EXPECT_EQ(error_of("tools/call", {{"name", "nope"}}), "-32602 Unknown tool: \"nope\"");
  EXPECT_EQ(error_of("tools/call", {{"name", "get_balance"}, {"_meta", {{"io.github.tool-effects/idempotency-key", ""}}}}),
            "-32602 Invalid params: at /_meta/io.github.tool-effects~1idempotency-key: expected a non-empty string of at "
            "most 256 bytes");
  EXPECT_EQ(error_of("resources/read", json::object()), "-32601 Method not found: \"resources/read\"");
  const json failed = run_request(server, "tools/call", {{"name", "send_statement"}, {"arguments", {{"channel", "fax"}}}});
  EXPECT_EQ(failed, json::parse(R"({"content": [{"type": "text", "text":
      "tool_error: no fax machine"}], "isError": true})"));
  // A destructive tool runs only with an approver in the server's dispatch options (conservative default).
  const json denied = run_request(server, "tools/call", {{"name", "close_account"}, {"arguments", {{"acct", "a"}}}});
  EXPECT_EQ(denied, json::parse(R"x({"content": [{"type": "text", "text": "confirmation_denied: close_account was not run because the user did not approve it (no approver was given for a destructive call)"}], "isError": true})x"));
  const json ok = run_request(server, "tools/call", {{"name", "add_to_balance"}, {"arguments", {{"acct", "a"}, {"amount", 3}}}});
  EXPECT_EQ(ok, json::parse(R"({"content": [{"type": "text", "text": "{\"balance\":3}"}],
                                "structuredContent": {"balance": 3}})"));
}

namespace {
struct transfer_args {
  std::string from;
  std::string to;
  long amount = 0;
  std::optional<std::string> memo;
};
BOOST_DESCRIBE_STRUCT(transfer_args, (), (from, to, amount, memo))
struct transfer {
  static constexpr std::string_view name = "transfer";
  using arguments = transfer_args;
  using side_effects = te::effects<te::writes<accounts>>;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<transfer_args>(args);
    return a.from + "->" + a.to + ":" + std::to_string(a.amount);
  }
};
}  // namespace

// A tool whose arguments are a struct described with Boost.Describe lists the struct's schema and gets its
// arguments checked before it is dispatched: a bad call is an invalid_arguments result naming the member.
TEST(McpServer, DescribedArgumentsGiveTheSchemaAndPointerErrors) {
  te::tool_registry<transfer> reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  te::mcp_server server(pool, host);
  EXPECT_EQ(server.list_tools()["tools"][0]["inputSchema"], json::parse(R"({"type": "object",
    "properties": {"from": {"type": "string"}, "to": {"type": "string"}, "amount": {"type": "integer"},
                   "memo": {"type": "string"}},
    "required": ["from", "to", "amount"], "additionalProperties": false})"));
  boost::asio::io_context io;
  auto call = [&](json args) {
    auto f = boost::asio::co_spawn(io, server.handle_request("tools/call", {{"name", "transfer"}, {"arguments", args}}, {}),
                                   boost::asio::use_future);
    io.restart();
    io.run();
    return f.get();
  };
  EXPECT_EQ(call({{"from", "a"}, {"to", "b"}, {"amount", "5"}}),
            json::parse(R"({"content": [{"type": "text", "text":
              "invalid_arguments: at /amount: expected an integer, got string: \"5\""}], "isError": true})"));
  EXPECT_EQ(call({{"from", "a"}, {"to", "b"}, {"amount", 5}, {"memo", "rent"}, {"fee", 1}})["content"][0]["text"],
            "invalid_arguments: at /fee: unknown key (known: from to amount memo): \"fee\"");
  EXPECT_EQ(call({{"from", "a"}, {"amount", 5}})["content"][0]["text"],
            "invalid_arguments: at (root): missing required key: \"to\"");
  EXPECT_EQ(call({{"from", "a"}, {"to", "b"}, {"amount", 5}}),
            json::parse(R"({"content": [{"type": "text", "text": "a->b:5"}]})"));
}

// With a journal in the server's dispatch options, a tools/call repeated with the same client-supplied
// idempotency key (a retry after a lost response) is answered from the journal: the increment happens once.
// Control: the same two calls without a key run twice; with two different keys, twice.
TEST(McpServer, AnIdempotencyKeyReplaysTheJournaledCall) {
  const auto dir = std::filesystem::temp_directory_path() / ("mcp_server_journal_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ledger l;
  registry reg = make_registry(l);
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host, te::mcp_server_options{},
                        te::run_options{}.with(te::local_coordinator{}).with(te::sqlite_journal((dir / "j.db").string())));
  auto add = [&](const std::string& acct, std::optional<std::string> key) {
    json params = {{"name", "add_to_balance"}, {"arguments", {{"acct", acct}}}};
    if (key) params["_meta"] = {{"io.github.tool-effects/idempotency-key", *key}};
    boost::asio::io_context io;
    auto f = boost::asio::co_spawn(io, server.handle_request("tools/call", params, {}), boost::asio::use_future);
    io.run();
    return f.get();
  };
  EXPECT_EQ(add("a", "transfer-1")["structuredContent"], json::parse(R"({"balance": 1})"));
  EXPECT_EQ(add("a", "transfer-1")["structuredContent"], json::parse(R"({"balance": 1})")) << "replayed";
  EXPECT_EQ(l.read("a"), 1);
  add("b", std::nullopt);
  add("b", std::nullopt);
  EXPECT_EQ(l.read("b"), 2) << "no key: two calls";
  add("c", "k1");
  add("c", "k2");
  EXPECT_EQ(l.read("c"), 2) << "two keys: two calls";
  std::filesystem::remove_all(dir);
}

namespace {
// A tool that logs one message at each of four levels, then one of `long_bytes` bytes at error (when asked).
struct chatty {
  static constexpr std::string_view name = "chatty";
  using side_effects = te::effects<te::reads<accounts>>;
  json operator()(const te::attempt_context& ctx, const json& args) const {
    ctx.report_log("debug", "d");
    ctx.report_log("info", "i");
    ctx.report_log("warning", "w");
    ctx.report_log("error", "e");
    if (const std::size_t n = args.value("long_bytes", std::size_t{0}); n > 0)
      ctx.report_log("error", std::string(n, 'x'));
    return "done";
  }
};

// Reports four quarters of progress, the last as it returns.
struct quartered {
  static constexpr std::string_view name = "quartered";
  using side_effects = te::effects<te::reads<accounts>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    for (int q = 1; q <= 4; ++q) ctx.report_progress(q, 4, "");
    return "done";
  }
};

// The pipe peer, and what these tests read from it.
struct pipe_client : mcp_test::pipe_peer {
  // The notifications/message params the server sends before the response to request `id` (which it returns
  // in `response`).
  std::vector<json> logs_until(int id, json& response) {
    std::vector<json> logs;
    for (json m = next(); !m.is_null(); m = next()) {
      if (m.value("method", "") == "notifications/message") logs.push_back(m["params"]);
      if (m.contains("id") && m["id"] == id) {
        response = m;
        break;
      }
    }
    return logs;
  }
};

using mcp_test::rpc;
}  // namespace

// logging/setLevel is read strictly: a level that is not one of the eight names is invalid params naming it.
TEST(McpServer, SetLevelReadsTheLevelStrictly) {
  te::tool_registry<chatty> reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(1);
  te::mcp_server server(pool, host);
  EXPECT_EQ(server.initialize_result("2025-11-25")["capabilities"],
            json::parse(R"({"tools": {"listChanged": false}, "logging": {}})"));
  auto error_of = [&](json params) -> std::string {
    try {
      boost::asio::io_context io;
      auto f = boost::asio::co_spawn(io, server.handle_request("logging/setLevel", std::move(params), {}),
                                     boost::asio::use_future);
      io.run();
      return "answered " + f.get().dump();
    } catch (const te::mcp_server_error& e) {
      return std::to_string(e.code()) + " " + e.what();
    }
  };
  EXPECT_EQ(error_of({{"level", "verbose"}}),
            "-32602 Invalid params: at /level: expected one of debug, info, notice, warning, error, critical, alert, "
            "emergency: verbose");
  EXPECT_EQ(error_of({{"level", "WARNING"}}),
            "-32602 Invalid params: at /level: expected one of debug, info, notice, warning, error, critical, alert, "
            "emergency: WARNING");
  EXPECT_EQ(error_of({{"level", 4}}),
            "-32602 Invalid params: at /level: expected one of debug, info, notice, warning, error, critical, alert, "
            "emergency: 4");
  EXPECT_EQ(error_of(json::object()), "-32602 Invalid params: missing required key \"level\"");
  EXPECT_EQ(error_of(json::array()), "-32602 Invalid params: at : expected an object, got array: []");
  EXPECT_EQ(error_of({{"level", "notice"}}), "answered {}");
  // The filter's one rule, over the enum's order (RFC 5424's, lowest first).
  static_assert(te::mcp_log_level_passes(te::mcp_log_level::warning, te::mcp_log_level::warning));
  static_assert(te::mcp_log_level_passes(te::mcp_log_level::emergency, te::mcp_log_level::debug));
  static_assert(!te::mcp_log_level_passes(te::mcp_log_level::info, te::mcp_log_level::warning));
  static_assert(!te::mcp_log_level_passes(te::mcp_log_level::emergency, te::mcp_log_level::none));
  static_assert(te::mcp_log_level_named("alert") == te::mcp_log_level::alert);
  static_assert(te::mcp_log_level_named("none") == te::mcp_log_level::none);
}

// Over stdio, a tool's log messages reach the client of its request as notifications/message before the
// response: every level until the client sets one, then only those at or above it; a level above every
// message (emergency) suppresses them all (the control: the filter is what removes them). A message longer
// than max_log_bytes is cut, and the session goes on. Checked by hand: with the filter removed from
// request_reporter::log, the warning and emergency expectations fail.
TEST(McpServer, AToolsLogReachesItsStdioClientAtOrAboveTheSessionsLevel) {
  te::tool_registry<chatty> reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host, te::mcp_server_options{.max_log_bytes = 8});
  pipe_client c;
  std::thread serving([&] { server.serve_fds(c.to_server[0], c.from_server[1]); });
  json response;
  c.send(rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()},
                               {"clientInfo", {{"name", "raw"}, {"version", "1"}}}}));
  EXPECT_TRUE(c.logs_until(1, response).empty());
  EXPECT_EQ(response["result"]["capabilities"]["logging"], json::object());
  c.send(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  auto msg = [](const char* level, const char* data) {
    return json{{"level", level}, {"logger", "chatty"}, {"data", data}};
  };
  c.send(rpc(2, "tools/call", {{"name", "chatty"}}));
  EXPECT_EQ(c.logs_until(2, response), (std::vector<json>{msg("debug", "d"), msg("info", "i"), msg("warning", "w"),
                                                          msg("error", "e")}))
      << "every level until the client sets one";
  EXPECT_EQ(response["result"]["content"][0]["text"], "done");
  c.send(rpc(3, "logging/setLevel", {{"level", "warning"}}));
  EXPECT_TRUE(c.logs_until(3, response).empty());
  EXPECT_EQ(response["result"], json::object());
  c.send(rpc(4, "tools/call", {{"name", "chatty"}, {"arguments", {{"long_bytes", 100000}}}}));
  EXPECT_EQ(c.logs_until(4, response), (std::vector<json>{msg("warning", "w"), msg("error", "e"),
                                                          msg("error", "xxxxxxxx...")}))
      << "at or above warning; the long one cut to max_log_bytes";
  c.send(rpc(5, "logging/setLevel", {{"level", "verbose"}}));
  EXPECT_TRUE(c.logs_until(5, response).empty());
  EXPECT_EQ(response["error"]["code"], -32602) << response.dump();
  c.send(rpc(6, "logging/setLevel", {{"level", "emergency"}}));
  EXPECT_TRUE(c.logs_until(6, response).empty());
  c.send(rpc(7, "tools/call", {{"name", "chatty"}}));
  EXPECT_TRUE(c.logs_until(7, response).empty()) << "a level above every message suppresses them all";
  EXPECT_EQ(response["result"]["content"][0]["text"], "done");
  c.close_input();
  serving.join();
}


// The 2026-07-28 era (no initialize; every request carries its _meta), transport-neutral as on stdio.
namespace {
json modern_meta(std::string version = "2026-07-28", json capabilities = json::object()) {
  return {{"io.modelcontextprotocol/protocolVersion", std::move(version)},
          {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "1"}}},
          {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)}};
}
struct needs_sampling {
  static constexpr std::string_view name = "summarise";
  static constexpr std::string_view mcp_required_client_capability = "sampling";
  using side_effects = te::effects<te::reads<accounts>>;
  std::atomic<int>* runs = nullptr;
  json operator()(const json&) const {
    ++*runs;
    return json("summary");
  }
};
}  // namespace

TEST(McpServer, TheModernEraDiscoversListsAndCallsPerRequest) {
  ledger l;
  registry reg = make_registry(l);
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host, te::mcp_server_options{.name = "bank", .version = "2.0.0"});
  const json discover = run_request(server, "server/discover", {{"_meta", modern_meta()}});
  json versions = json::array();
  for (const auto& v : te::mcp_protocol_versions()) versions.push_back(v);
  EXPECT_EQ(discover, (json{{"supportedVersions", versions},
                            {"capabilities", {{"logging", json::object()}, {"tools", {{"listChanged", false}}}}},
                            {"_meta", {{"io.modelcontextprotocol/serverInfo", {{"name", "bank"}, {"version", "2.0.0"}}}}},
                            {"resultType", "complete"},
                            {"ttlMs", 0},
                            {"cacheScope", "private"}}));
  const json list = run_request(server, "tools/list", {{"_meta", modern_meta()}});
  EXPECT_EQ(list["tools"], server.list_tools()["tools"]);
  EXPECT_EQ(list["resultType"], "complete");
  EXPECT_EQ(list["ttlMs"], 0);
  EXPECT_EQ(list["cacheScope"], "private");
  const json call = run_request(server, "tools/call",
                                {{"name", "add_to_balance"}, {"arguments", {{"acct", "a"}, {"amount", 2}}}, {"_meta", modern_meta()}});
  EXPECT_EQ(call, (json{{"content", json::array({{{"type", "text"}, {"text", "{\"balance\":2}"}}})},
                        {"structuredContent", {{"balance", 2}}},
                        {"resultType", "complete"}}));
  // A legacy request (no protocol version in _meta) gets the legacy result, without the era's fields.
  EXPECT_FALSE(run_request(server, "tools/list", json::object()).contains("resultType"));
}

TEST(McpServer, ABadModernRequestFailsAloneWithItsMember) {
  ledger l;
  registry reg = make_registry(l);
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host);
  auto error_of = [&](std::string method, json params, std::string transport_version = {}) -> std::string {
    boost::asio::io_context io;
    te::mcp_server_request r;
    r.transport_version = std::move(transport_version);
    auto f = boost::asio::co_spawn(io, server.handle_request(std::move(method), std::move(params), std::move(r)),
                                   boost::asio::use_future);
    io.run();
    try {
      (void)f.get();
    } catch (const te::mcp_server_error& e) {
      return std::to_string(e.code()) + " " + e.what() + (e.data().is_null() ? "" : " " + e.data().dump());
    }
    return "no error";
  };
  EXPECT_EQ(error_of("server/discover", json::object()),
            "-32602 Invalid params: missing required key \"_meta\" (the 2026-07-28 era's per-request protocol "
            "version and client capabilities)");
  json m = modern_meta();
  m.erase("io.modelcontextprotocol/clientCapabilities");
  EXPECT_EQ(error_of("tools/list", {{"_meta", m}}),
            "-32602 Invalid params: at /_meta: missing required key \"io.modelcontextprotocol/clientCapabilities\"");
  m = modern_meta();
  m["io.modelcontextprotocol/protocolVersion"] = 2026;
  EXPECT_EQ(error_of("tools/list", {{"_meta", m}}),
            "-32602 Invalid params: at /_meta/io.modelcontextprotocol~1protocolVersion: expected a string, got number");
  EXPECT_EQ(error_of("tools/list", {{"_meta", modern_meta("2099-01-01")}}),
            "-32022 Unsupported protocol version: at /_meta/io.modelcontextprotocol~1protocolVersion: \"2099-01-01\" "
            "(served per request: the modern versions of data.supported; the others after initialize) "
            "{\"requested\":\"2099-01-01\",\"supported\":[\"2026-07-28\",\"2025-11-25\",\"2025-06-18\",\"2025-03-26\","
            "\"2024-11-05\",\"2024-10-07\"]}");
  // A legacy version is served after initialize, not per request.
  EXPECT_EQ(error_of("tools/list", {{"_meta", modern_meta("2025-11-25")}}).substr(0, 40),
            "-32022 Unsupported protocol version: at ");
  EXPECT_EQ(error_of("tools/list", {{"_meta", modern_meta()}}, "2025-11-25"),
            "-32020 Header mismatch: MCP-Protocol-Version \"2025-11-25\" does not match "
            "/_meta/io.modelcontextprotocol~1protocolVersion \"2026-07-28\"");
  // The era removed initialize and ping; an unknown method is as ever.
  EXPECT_EQ(error_of("initialize", {{"protocolVersion", "2026-07-28"}, {"_meta", modern_meta()}}),
            "-32601 Method not found: \"initialize\" (not in the 2026-07-28 era; its requests need no initialize)");
  EXPECT_EQ(error_of("ping", {{"_meta", modern_meta()}}).substr(0, 32), "-32601 Method not found: \"ping\" ");
  EXPECT_EQ(error_of("prompts/list", {{"_meta", modern_meta()}}), "-32601 Method not found: \"prompts/list\"");
  // Each failed alone: the next request is served.
  EXPECT_EQ(error_of("tools/list", {{"_meta", modern_meta()}}), "no error");
}

TEST(McpServer, AToolNeedingAClientCapabilityRunsOnlyWhenTheRequestDeclaresIt) {
  std::atomic<int> runs{0};
  te::tool_registry<needs_sampling> reg(needs_sampling{&runs});
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host);
  static_assert(te::mcp_required_client_capability_of<needs_sampling>() == "sampling");
  static_assert(te::mcp_required_client_capability_of<get_balance>().empty());
  boost::asio::io_context io;
  auto f = boost::asio::co_spawn(
      io, server.handle_request("tools/call", {{"name", "summarise"}, {"_meta", modern_meta()}}, {}),
      boost::asio::use_future);
  io.run();
  try {
    (void)f.get();
    ADD_FAILURE() << "no error";
  } catch (const te::mcp_server_error& e) {
    EXPECT_EQ(e.code(), -32021);
    EXPECT_EQ(std::string(e.what()),
              "Missing required client capability: tool \"summarise\" needs \"sampling\", which the request's "
              "/_meta/io.modelcontextprotocol~1clientCapabilities does not declare");
    EXPECT_EQ(e.data(), (json{{"requiredCapabilities", {{"sampling", json::object()}}}}));
  }
  EXPECT_EQ(runs.load(), 0);
  boost::asio::io_context io2;
  auto g = boost::asio::co_spawn(
      io2,
      server.handle_request("tools/call", {{"name", "summarise"}, {"_meta", modern_meta("2026-07-28", {{"sampling", json::object()}})}},
                            {}),
      boost::asio::use_future);
  io2.run();
  EXPECT_EQ(g.get()["content"][0]["text"], "summary");
  EXPECT_EQ(runs.load(), 1);
}

// Over stdio (serve_fds on a pipe pair): server/discover and tools/list with no initialize.
TEST(McpServer, TheModernEraIsServedOverStdio) {
  ledger l;
  registry reg = make_registry(l);
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host, te::mcp_server_options{.name = "bank", .version = "2.0.0"});
  int to_server[2];
  int from_server[2];
  ASSERT_EQ(::pipe(to_server), 0);
  ASSERT_EQ(::pipe(from_server), 0);
  std::thread serving([&] { server.serve_fds(to_server[0], from_server[1]); });
  const std::string in =
      json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "server/discover"}, {"params", {{"_meta", modern_meta()}}}}.dump() +
      "\n" +
      json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}, {"params", {{"_meta", modern_meta("2099-01-01")}}}}
          .dump() +
      "\n" + json{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}, {"params", {{"_meta", modern_meta()}}}}.dump() +
      "\n";
  ASSERT_EQ(::write(to_server[1], in.data(), in.size()), static_cast<ssize_t>(in.size()));
  std::string out;
  std::map<int, json> replies;
  char buf[4096];
  while (replies.size() < 3) {
    const auto n = ::read(from_server[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    for (auto nl = out.find('\n'); nl != std::string::npos; nl = out.find('\n')) {
      const json r = json::parse(out.substr(0, nl));
      out.erase(0, nl + 1);
      replies[r["id"].get<int>()] = r;
    }
  }
  ::close(to_server[1]);
  serving.join();
  ::close(to_server[0]);
  ::close(from_server[0]);
  ::close(from_server[1]);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[1]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "bank");
  EXPECT_EQ(replies[1]["result"]["supportedVersions"][0], "2026-07-28");
  EXPECT_EQ(replies[2]["error"]["code"], -32022);
  EXPECT_EQ(replies[2]["error"]["data"]["requested"], "2099-01-01");
  EXPECT_EQ(replies[3]["result"]["tools"].size(), 4u);
  EXPECT_EQ(replies[3]["result"]["resultType"], "complete");
}


namespace {
struct region_tool {
  static constexpr std::string_view name = "regional";
  static constexpr std::string_view input_schema =
      R"({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"},
          "urgent": {"type": "boolean", "x-mcp-header": "Urgent"}, "note": {"type": "string"}}})";
  using side_effects = te::effects<te::reads<accounts>>;
  json operator()(const json& args) const {
    return json(args.contains("region") && args["region"].is_string() ? args["region"].get<std::string>() : "none");
  }
};
}  // namespace

// 2026-07-28 over HTTP: a parameter the schema mirrors in a header (x-mcp-header) must come with that header,
// equal to the body's value; stdio (no param_headers) checks nothing.
TEST(McpServer, AMirroredParameterMustMatchItsHeader) {
  te::tool_registry<region_tool> reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host);
  using headers = std::map<std::string, std::optional<std::string>>;
  auto outcome = [&](json args, std::optional<headers> h) -> std::string {
    boost::asio::io_context io;
    te::mcp_server_request r;
    r.param_headers = std::move(h);
    auto f = boost::asio::co_spawn(
        io, server.handle_request("tools/call", {{"name", "regional"}, {"arguments", args}, {"_meta", modern_meta()}}, r),
        boost::asio::use_future);
    io.run();
    try {
      return f.get()["content"][0]["text"].get<std::string>();
    } catch (const te::mcp_server_error& e) {
      return std::to_string(e.code()) + " " + e.what();
    }
  };
  EXPECT_EQ(outcome({{"region", "eu"}, {"urgent", true}}, headers{{"region", "eu"}, {"urgent", "true"}}), "eu");
  EXPECT_EQ(outcome({{"region", "eu"}}, headers{}),
            "-32020 Header mismatch: Mcp-Param-Region is missing (/arguments/region is set)");
  EXPECT_EQ(outcome({{"region", "eu"}}, headers{{"region", "us"}}),
            "-32020 Header mismatch: Mcp-Param-Region does not match /arguments/region");
  EXPECT_EQ(outcome({{"region", "eu"}}, headers{{"region", std::nullopt}}),
            "-32020 Header mismatch: Mcp-Param-Region is not valid Base64");
  EXPECT_EQ(outcome({{"region", "eu"}, {"urgent", false}}, headers{{"region", "eu"}, {"urgent", "true"}}),
            "-32020 Header mismatch: Mcp-Param-Urgent does not match /arguments/urgent");
  // A null or absent value needs no header; an unmirrored parameter is not looked at.
  EXPECT_EQ(outcome({{"region", nullptr}, {"note", "x"}}, headers{}), "none");
  // Without param headers (stdio) nothing is checked.
  EXPECT_EQ(outcome({{"region", "eu"}}, std::nullopt), "eu");
}

// A 2026-07-28 request has no session to set a level on: its own _meta logLevel is its level (read as strictly as
// setLevel's), and one without it asks for no log messages. Over stdio, as the tool logs through its context.
// Control (by hand): with handle_modern_request not reading the level, the session's (every level) applies and the
// first expectation fails.
TEST(McpServer, AModernRequestLogsAtTheLevelItsMetaNames) {
  te::tool_registry<chatty> reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host);
  pipe_client c;
  std::thread serving([&] { server.serve_fds(c.to_server[0], c.from_server[1]); });
  auto msg = [](const char* level, const char* data) {
    return json{{"level", level}, {"logger", "chatty"}, {"data", data}};
  };
  json meta = modern_meta();
  meta["io.modelcontextprotocol/logLevel"] = "warning";
  json response;
  c.send(rpc(1, "tools/call", {{"name", "chatty"}, {"_meta", meta}}));
  EXPECT_EQ(c.logs_until(1, response), (std::vector<json>{msg("warning", "w"), msg("error", "e")}));
  EXPECT_EQ(response["result"]["content"][0]["text"], "done") << response.dump();
  c.send(rpc(2, "tools/call", {{"name", "chatty"}, {"_meta", modern_meta()}}));
  EXPECT_TRUE(c.logs_until(2, response).empty()) << "no logLevel: no log messages";
  EXPECT_EQ(response["result"]["content"][0]["text"], "done") << response.dump();
  meta["io.modelcontextprotocol/logLevel"] = "verbose";
  c.send(rpc(3, "tools/call", {{"name", "chatty"}, {"_meta", meta}}));
  EXPECT_TRUE(c.logs_until(3, response).empty());
  EXPECT_EQ(response["error"]["code"], -32602) << response.dump();
  EXPECT_EQ(response["error"]["message"],
            "Invalid params: at /_meta/io.modelcontextprotocol~1logLevel: expected one of debug, info, notice, "
            "warning, error, critical, alert, emergency: verbose");
  c.close_input();
  serving.join();
}

// Over stdio, a call's progress reaches the wire in order and before its response, the progress reported as the
// tool returns included: 50 calls, each P1 P2 P3 P4 then the response. (The TypeScript SDK client may still drop
// that last one: it runs notification handlers a microtask later but handles a response at once, so when both
// arrive in one read the response removes the progress handler first; see docs/mcp.md.) Control (by hand): with
// each progress posted onto the session's strand 1 ms late (from a thread of its own), 39 of the 50 calls fail.
// (One more hop through the pool before the strand did not reorder anything: the response takes three.)
TEST(McpServerStdio, ProgressReachesTheWireBeforeTheResponse) {
  te::tool_registry<quartered> reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host);
  pipe_client c;
  std::thread serving([&] { server.serve_fds(c.to_server[0], c.from_server[1]); });
  c.send(rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()},
                               {"clientInfo", {{"name", "raw"}, {"version", "1"}}}}));
  ASSERT_FALSE(c.next().is_null());
  c.send(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  int out_of_order = 0;
  for (int id = 2; id < 52; ++id) {
    c.send(rpc(id, "tools/call", {{"name", "quartered"}, {"_meta", {{"progressToken", id}}}}));
    std::string seen;
    for (json m = c.next(); !m.is_null(); m = c.next()) {
      if (m.value("method", "") == "notifications/progress") seen += "P" + std::to_string(m["params"]["progress"].get<int>()) + " ";
      if (m.contains("id") && m["id"] == id) {
        seen += "R";
        break;
      }
    }
    if (seen != "P1 P2 P3 P4 R") {
      ++out_of_order;
      ADD_FAILURE() << "call " << id << ": " << seen;
    }
  }
  EXPECT_EQ(out_of_order, 0);
  c.close_input();
  serving.join();
}

}  // namespace mcp_server_test_ns
