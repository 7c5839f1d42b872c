// Issue 21 point 6: the plan printer (`to_string(turn_plan)`, `print_plan`).
// On a host whose tools are unknown (exclusive: an untrusted MCP server's), a
// call of an unknown tool and one whose arguments do not parse fail before
// running and print as waiting for nothing, as docs/runtime.md says; nothing
// waits for them. Model-chosen strings are printed terminal-safe.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_plan_text_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

struct untrusted_host {
  te::tool_registry<> registry;
  te::json_tool_host<> host{registry};
  untrusted_host() {
    // As an untrusted MCP server's tools: declared nothing, so unknown (exclusive).
    for (const auto& t : te::parse_manifest(R"({"tools": [{"name": "pg_query"}, {"name": "pg_update"}]})"))
      host.add(t, [](const te::attempt_context&, const json&) { return json("ok"); });
  }
};
}  // namespace

TEST(PlanText, CallsThatFailBeforeRunningWaitForNothing) {
  untrusted_host h;
  const auto calls = te::parse_tool_calls(json::parse(R"([
    {"id": "a", "type": "function", "function": {"name": "pg_query", "arguments": "{}"}},
    {"id": "b", "type": "function", "function": {"name": "pg_update", "arguments": "{}"}},
    {"id": "u", "type": "function", "function": {"name": "pg_updaet", "arguments": "{}"}},
    {"id": "j", "type": "function", "function": {"name": "pg_query", "arguments": "{\"sql\": "}},
    {"id": "c", "type": "function", "function": {"name": "pg_query", "arguments": "{}"}}
  ])"));
  const auto plan = h.host.plan(calls);
  const auto lines = lines_of(te::to_string(plan));
  ASSERT_EQ(lines.size(), 5u) << te::to_string(plan);
  EXPECT_EQ(lines[0], "wave 0  \"pg_query#a\": runs at once");
  EXPECT_EQ(lines[1].rfind("wave 1  \"pg_update#b\": waits for \"pg_query#a\" [", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("-       \"pg_updaet#u\": fails before running (unknown_tool: ", 0), 0u) << lines[2];
  EXPECT_NE(lines[2].find("); waits for nothing"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[3].rfind("-       \"pg_query#j\": fails before running (invalid_arguments: ", 0), 0u) << lines[3];
  EXPECT_NE(lines[3].find("); waits for nothing"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[4].rfind("wave 2  \"pg_query#c\": waits for \"pg_update#b\" [", 0), 0u) << lines[4];
  for (const auto& l : lines) {
    EXPECT_EQ(l.find("waits for \"pg_updaet#u\""), std::string::npos) << "nothing waits for a failed call: " << l;
    EXPECT_EQ(l.find("waits for \"pg_query#j\""), std::string::npos) << l;
  }
  // print_plan writes the same.
  std::ostringstream os;
  te::print_plan(os, plan);
  EXPECT_EQ(os.str(), te::to_string(plan));
}

TEST(PlanText, TheControlPlanningFailedCallsWithTheOthersRoutesWaitsThroughThem) {
  // Why the host plans only the calls that can run (as `run` does): an exclusive call conflicts even with a
  // call of no effects, so planning every description, as `plan` did before, made pg_query#c wait for the
  // failed calls and, the reduction dropping the implied edge, not for pg_update#b: what the issue saw.
  untrusted_host h;
  const auto calls = te::parse_tool_calls(json::parse(R"([
    {"id": "b", "name": "pg_update", "arguments": {}},
    {"id": "u", "name": "pg_updaet", "arguments": {}},
    {"id": "c", "name": "pg_query", "arguments": {}}
  ])"));
  const auto plan = h.host.plan(calls);
  EXPECT_TRUE(te::conflicts(plan.calls[2], plan.calls[1])) << "exclusive conflicts with a call of no effects";
  const auto all = te::plan_calls(plan.calls);  // the control: the failed call planned with the others
  EXPECT_TRUE(all.waits_for(2, 1));
  EXPECT_EQ(te::explain(plan.calls, all).size(), 2u) << "b <- u <- c: the wait of c for b goes through u";
  // The host's plan: c waits for b directly, and nothing involves u.
  EXPECT_TRUE(plan.plan.waits_for(2, 0));
  EXPECT_FALSE(plan.plan.waits_for(2, 1));
  EXPECT_FALSE(plan.plan.waits_for(1, 0));
  ASSERT_EQ(plan.edges.size(), 1u);
  EXPECT_EQ(plan.edges[0].from, 0u);
  EXPECT_EQ(plan.edges[0].to, 2u);
}

TEST(PlanText, ModelTextIsTerminalSafeAndLongMessagesAreCut) {
  untrusted_host h;
  const std::string evil = "x\x1b[2Jy" + std::string(500, 'z');
  te::tool_call c;
  c.id = "\x1b]0;pwned\x07";
  c.name = evil;
  c.dialect = te::tool_call_dialect::plain;
  const std::vector<te::tool_call> calls{c};
  const std::string text = te::to_string(h.host.plan(calls));
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_NE(text.find("\\x{1B}"), std::string::npos) << text;
  EXPECT_NE(text.find("); waits for nothing\n"), std::string::npos) << text;
  EXPECT_LT(text.size(), 1500u) << "the name is printed whole, the message cut to 200 bytes";
}

}  // namespace json_plan_text_test_ns
