// Namespaced MCP tools (issue 19): two servers on one host. Each server's
// tools are registered with their origin (server, the server's name for the
// tool); the name the model sees is configurable (a prefix or a map); a clash
// is refused before anything is registered; the approver and every error
// name the server. Against two instances of test/mcp's fake server.
#include <gtest/gtest.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_host_naming_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
constexpr std::size_t fake_tool_count = 13;  // test/mcp/fake_server.py's tools/list, both pages

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

struct two_servers {
  boost::asio::thread_pool pool{2};
  te::mcp_client evil = te::mcp_client::launch(pool, mcp_test::fake_server());
  te::mcp_client trusted = te::mcp_client::launch(pool, mcp_test::fake_server());
  te::tool_registry<> registry;
  te::json_tool_host<> host{registry};
};

te::mcp_naming named(std::string server) {
  te::mcp_naming n;
  n.server = std::move(server);
  return n;
}
}  // namespace

TEST(McpHostNaming, ASquattedNameIsRefusedBeforeAnythingIsRegistered) {
  MCP_REQUIRE_PYTHON();
  two_servers s;
  // The untrusted server registers first and takes the plain names.
  ASSERT_EQ(te::add_mcp_server(s.host, s.evil, te::server_trust::untrusted, {}, named("evil")).size(), fake_tool_count);
  const std::size_t before = s.registry.size();
  const std::string e = error_of(
      [&] { (void)te::add_mcp_server(s.host, s.trusted, te::server_trust::trusted, {}, named("filesystem")); });
  EXPECT_NE(e.find("of MCP server \"filesystem\" cannot be registered as \"echo\": the name is taken by MCP server "
                   "\"evil\" (its tool \"echo\")"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("nothing was registered"), std::string::npos) << e;
  EXPECT_EQ(s.registry.size(), before);  // atomic: not one of the trusted server's tools was added
  for (std::size_t i = 0; i < s.registry.size(); ++i) EXPECT_EQ(s.host.origin(i).server, "evil");
  // Control: registering the same server twice under one prefix-free name set clashes with itself too.
  EXPECT_THROW((void)te::add_mcp_server(s.host, s.evil, te::server_trust::untrusted, {}, named("evil")),
               std::invalid_argument);
  EXPECT_EQ(s.registry.size(), before);
}

TEST(McpHostNaming, PrefixedServersEachGetTheirOwnCallsAndTheApproverSeesTheServer) {
  MCP_REQUIRE_PYTHON();
  two_servers s;
  (void)te::add_mcp_server(s.host, s.evil, te::server_trust::untrusted, {}, te::mcp_naming::prefixed("evil"));
  (void)te::add_mcp_server(s.host, s.trusted, te::server_trust::trusted, {}, te::mcp_naming::prefixed("fs"));
  EXPECT_EQ(s.registry.size(), 2 * fake_tool_count);
  ASSERT_TRUE(s.registry.index_of("fs__write"));
  ASSERT_TRUE(s.registry.index_of("evil__write"));
  EXPECT_FALSE(s.registry.index_of("write"));
  const auto& origin = s.host.origin(*s.registry.index_of("fs__write"));
  EXPECT_EQ(origin.server, "fs");
  EXPECT_EQ(origin.tool, "write");

  std::mutex m;
  std::vector<std::string> asked;
  std::vector<std::string> servers;
  const te::approver approver([&](const te::confirmation_request& r) {
    const std::lock_guard lock(m);
    asked.push_back(te::to_string(r));
    servers.emplace_back(r.server);
    return te::confirmation::deny;
  });
  // The secret goes to the trusted server's write (twice: its store grows to 2);
  // the untrusted server's write (unknown effects) is put to the approver, denied.
  const auto calls = te::parse_tool_calls(json::array({
      {{"id", "a"}, {"name", "fs__write"}, {"arguments", {{"key", "env"}, {"value", "API_KEY=sk-live-123"}}}},
      {{"id", "b"}, {"name", "fs__write"}, {"arguments", {{"key", "other"}, {"value", "x"}}}},
      {{"id", "c"}, {"name", "evil__write"}, {"arguments", {{"key", "env"}, {"value", "API_KEY=sk-live-123"}}}},
  }));
  const auto out = s.host.run(s.pool, te::run_options{}.with(approver), calls);
  ASSERT_TRUE(out[0].has_value()) << te::detail::message_of(out[0].error());
  ASSERT_TRUE(out[1].has_value()) << te::detail::message_of(out[1].error());
  EXPECT_TRUE(out[2].has_error());
  EXPECT_EQ(out[1].value()["structuredContent"]["size"], 2);  // both writes reached the trusted server
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(servers[0], "evil");
  EXPECT_EQ(asked[0].rfind("tool \"write\" of MCP server \"evil\", call \"c\": needs approval (unknown effects)", 0), 0u)
      << asked[0];
  // The untrusted server never received the secret: its store is empty.
  EXPECT_EQ(s.evil.call("write", {{"key", "probe"}, {"value", "1"}})["structuredContent"]["size"], 1);
}

TEST(McpHostNaming, AMapRenamesToolsAndItsMistakesNameTheServer) {
  MCP_REQUIRE_PYTHON();
  two_servers s;
  te::mcp_naming n = te::mcp_naming::prefixed("fs");
  n.names = {{"echo", "say"}};
  (void)te::add_mcp_server(s.host, s.trusted, te::server_trust::trusted, {}, n);
  ASSERT_TRUE(s.registry.index_of("say"));
  EXPECT_FALSE(s.registry.index_of("fs__echo"));
  EXPECT_EQ(s.host.origin(*s.registry.index_of("say")).tool, "echo");
  const auto calls = te::parse_tool_calls(R"([{"id": "1", "name": "say", "arguments": {"text": "hi"}}])");
  const auto out = s.host.run(s.pool, te::run_options{}, calls);
  ASSERT_TRUE(out[0].has_value()) << te::detail::message_of(out[0].error());
  EXPECT_EQ(te::mcp_text(out[0].value()), "hi");

  const std::size_t before = s.registry.size();
  te::mcp_naming typo = named("other");
  typo.names = {{"ehco", "x"}};
  std::string e = error_of([&] { (void)te::add_mcp_server(s.host, s.evil, te::server_trust::untrusted, {}, typo); });
  EXPECT_EQ(e, "mcp naming: tool \"ehco\" is not a tool of MCP server \"other\"");
  te::mcp_naming twice = te::mcp_naming::prefixed("other");
  twice.names = {{"echo", "same"}, {"slow", "same"}};
  e = error_of([&] { (void)te::add_mcp_server(s.host, s.evil, te::server_trust::untrusted, {}, twice); });
  EXPECT_NE(e.find("tool \"slow\" of MCP server \"other\" and tool \"echo\" would both be called \"same\""),
            std::string::npos)
      << e;
  te::mcp_naming onto_say = te::mcp_naming::prefixed("other");
  onto_say.names = {{"echo", "say"}};
  e = error_of([&] { (void)te::add_mcp_server(s.host, s.evil, te::server_trust::untrusted, {}, onto_say); });
  EXPECT_NE(e.find("the name is taken by MCP server \"fs\" (its tool \"echo\")"), std::string::npos) << e;
  EXPECT_EQ(s.registry.size(), before);  // none of the refused registrations added anything
  // An overlay naming a tool the server lacks names the server as well (the client's name by default).
  const auto overlay = te::parse_manifest(R"({"version": 1, "tools": [{"name": "nope", "reads": ["x"]}]})");
  e = error_of([&] { (void)te::add_mcp_server(s.host, s.evil, te::server_trust::trusted, overlay); });
  EXPECT_EQ(e, "mcp overlay: tool \"nope\" is not a tool of MCP server \"" + s.evil.name() + "\"");
  EXPECT_EQ(s.registry.size(), before);
}

TEST(McpHostNaming, AMalformedListNamesTheServer) {
  const json list = json::parse(R"({"tools": [{"name": "a"}, {"name": 3}]})");
  try {
    (void)te::mcp_server_tools(list, te::server_trust::trusted, {}, "weather");
    FAIL() << "no error";
  } catch (const te::json_error& e) {
    EXPECT_EQ(e.pointer(), "/tools/1/name");
    EXPECT_EQ(std::string(e.what()).rfind("MCP server \"weather\" tools/list at /tools/1/name", 0), 0u) << e.what();
  }
}

TEST(McpHostNaming, TenThousandToolsOfOneServerRegisterUnderAPrefix) {
  // Linear registration (bound stated: 10,000 tools from one tools/list
  // result, every one resolvable by its prefixed name, the origin kept);
  // timings in benchmarks/registry.cpp.
  constexpr std::size_t n = 10'000;
  json list = {{"tools", json::array()}};
  for (std::size_t i = 0; i < n; ++i) list["tools"].push_back({{"name", "t" + std::to_string(i)}});
  const auto tools = te::mcp_server_tools(list, te::server_trust::untrusted, {}, "big");
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  const auto names = te::mcp_model_names(host, tools, te::mcp_naming::prefixed("big"), "big");
  ASSERT_EQ(names.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    te::dynamic_tool t = tools[i];
    t.name = names[i];
    (void)host.add(std::move(t), te::json_tool_function([](const te::attempt_context&, const json&) { return json(); }),
                   te::tool_origin{"big", tools[i].name});
  }
  EXPECT_EQ(registry.size(), n);
  EXPECT_EQ(registry.index_of("big__t9999"), n - 1);
  EXPECT_EQ(host.origin(n - 1).tool, "t9999");
  EXPECT_THROW((void)te::mcp_model_names(host, tools, te::mcp_naming::prefixed("big"), "big"), std::invalid_argument);
}


TEST(McpHostNaming, AClashOnALaterToolLeavesNoPartialRegistration) {
  MCP_REQUIRE_PYTHON();
  two_servers s;
  // "crash" is the server's seventh tool: a registration that adds tools
  // one by one and throws at the clash would have added the six before it.
  te::dynamic_tool local;
  local.name = "crash";
  local.description = te::describe_runtime("crash", te::effect_set{te::effect::read}, {});
  (void)s.host.add(local, te::json_tool_function([](const te::attempt_context&, const json&) { return json("local"); }));
  const std::string e =
      error_of([&] { (void)te::add_mcp_server(s.host, s.trusted, te::server_trust::trusted, {}, named("fs")); });
  EXPECT_NE(e.find("tool \"crash\" of MCP server \"fs\" cannot be registered as \"crash\": the name is taken by a "
                   "tool not from an MCP server"),
            std::string::npos)
      << e;
  EXPECT_EQ(s.registry.size(), 1u);
  EXPECT_FALSE(s.registry.index_of("echo"));
  // Control: the same tools added one by one, as add_mcp_server did before,
  // stop at the clash with the earlier tools registered.
  const auto tools = te::mcp_server_tools(s.trusted.list_tools(), te::server_trust::trusted, {}, "fs");
  std::size_t added = 0;
  EXPECT_THROW(
      for (auto t : tools) {
        (void)s.host.add(std::move(t), te::json_tool_function([](const te::attempt_context&, const json&) { return json(); }));
        ++added;
      },
      std::invalid_argument);
  EXPECT_EQ(added, 6u);
  EXPECT_EQ(s.registry.size(), 7u);
}

}  // namespace mcp_host_naming_test_ns
