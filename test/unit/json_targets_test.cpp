// Multi-target arguments (issue 21, point 3): an argument holding a list names
// one target per element, and an argument whose shape the declaration does
// not cover makes the call hold the whole resource — never narrower.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_targets_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
// The redis server's key tools, declared as a user's manifest would (server-redis publishes no annotations).
constexpr const char* redis_manifest = R"({"version": 1, "tools": [
  {"name": "set",    "writes": ["redis"], "effects": ["idempotent"], "identity": {"target_arg": "key"}},
  {"name": "get",    "reads":  ["redis"], "identity": {"target_arg": "key"}},
  {"name": "delete", "writes": ["redis"], "effects": ["destructive"], "identity": {"target_arg": "key"}}
]})";

// The old rule (before issue 21): the argument's text, canonical JSON for an array, as the one target.
te::call_description single_target_description(const te::dynamic_tool& tool, const json& args) {
  return te::describe_call(tool.description, te::target_of(tool.identity, args));
}

const te::dynamic_tool& tool_named(const std::vector<te::dynamic_tool>& tools, std::string_view name) {
  for (const auto& t : tools)
    if (t.name == name) return t;
  throw std::out_of_range(std::string(name));
}

json noop(const te::attempt_context&, const json&) { return "ok"; }
}  // namespace

TEST(MultiTarget, JsonShapesGiveTargetsOrTheWholeResource) {
  using args = te::identity_arguments<json>;
  const json call = json::parse(R"({"s": "a", "list": ["b", "a", "b"], "empty": [], "mixed": ["a", 1],
                                    "obj": {"key": "a"}, "n": 3, "flag": true, "none": null})");
  EXPECT_EQ(args::target_list(call, "s"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(args::target_list(call, "list"), (std::vector<std::string>{"b", "a", "b"}));
  for (const char* whole : {"empty", "mixed", "obj", "n", "flag", "none", "missing"})
    EXPECT_EQ(args::target_list(call, whole), std::nullopt) << whole;
  EXPECT_EQ(args::target_list(json::array({"a"}), "s"), std::nullopt) << "arguments that are not an object";

  te::identity_policy p;
  p.target_arg = "list";
  EXPECT_EQ(te::targets_of(p, call), (std::vector<std::string>{"a", "b"})) << "sorted, duplicates removed";
  p.target_arg = "obj";
  EXPECT_TRUE(te::targets_of(p, call).empty());
  p.target_fn = [](const json&) { return std::optional<std::string>("fn"); };
  EXPECT_EQ(te::targets_of(p, call), (std::vector<std::string>{"fn"})) << "target_fn replaces target_arg";
}

TEST(MultiTarget, MoreThanTheBoundHoldsTheWholeResource) {
  te::identity_policy p;
  p.target_arg = "key";
  json keys = json::array();
  for (std::size_t i = 0; i < te::max_call_targets; ++i) keys.push_back("k" + std::to_string(i));
  EXPECT_EQ(te::targets_of(p, json{{"key", keys}}).size(), te::max_call_targets);
  keys.push_back("one-too-many");
  EXPECT_TRUE(te::targets_of(p, json{{"key", keys}}).empty());
}

TEST(MultiTarget, EveryScopedAccessIsRepeatedPerTargetAndTheRootStaysWhole) {
  const auto tmpl = te::describe_runtime("t", {te::effect::read}, {{"kv", te::access_mode::write, std::nullopt}});
  const auto d = te::describe_call(tmpl, std::vector<std::string>{"a", "b"});
  EXPECT_EQ(d.accesses, (std::vector<te::runtime_access>{{"kv", te::access_mode::write, "a"},
                                                         {"kv", te::access_mode::write, "b"},
                                                         {"", te::access_mode::read, std::nullopt}}));
  EXPECT_EQ(te::describe_call(tmpl, std::vector<std::string>{}).accesses, tmpl.accesses);
}

TEST(MultiTarget, ConflictsPerElementAndWholeResourceForUncoveredShapes) {
  const auto tools = te::parse_manifest(redis_manifest);
  const auto& set = tool_named(tools, "set");
  const auto& del = tool_named(tools, "delete");
  const auto set_status = te::describe_call(set, json{{"key", "order:1:status"}, {"value", "paid"}});
  const auto set_other = te::describe_call(set, json{{"key", "order:2:status"}, {"value", "paid"}});
  const auto del_list = te::describe_call(del, json{{"key", {"order:1:status", "session:stale"}}});
  EXPECT_TRUE(te::conflicts(set_status, del_list)) << "one element is the key set writes";
  EXPECT_FALSE(te::conflicts(set_other, del_list)) << "no element is order:2:status";
  for (const json& uncovered : {json{{"key", {{"k", "order:2:status"}}}}, json{{"key", 7}}, json{{"key", true}},
                                json{{"key", json::array()}}, json{{"key", {"order:9", 1}}}})
    EXPECT_TRUE(te::conflicts(set_other, te::describe_call(del, uncovered))) << uncovered.dump();

  // Control: with the array's text as its one target, the delete misses the key it deletes.
  EXPECT_FALSE(te::conflicts(set_status,
                             single_target_description(del, json{{"key", {"order:1:status", "session:stale"}}})));
}

TEST(MultiTarget, AHostedTurnOrdersTheArrayDeleteAfterTheSet) {
  te::tool_registry<> registry;
  te::json_tool_host host(registry);
  for (auto& t : te::parse_manifest(redis_manifest)) host.add(std::move(t), te::json_tool_function(noop));
  // OpenAI-shaped: set, an unrelated get, then the delete of a list of keys.
  const auto calls = te::parse_tool_calls(R"({"role": "assistant", "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "set", "arguments": "{\"key\": \"order:1:status\", \"value\": \"paid\"}"}},
    {"id": "c2", "type": "function", "function": {"name": "get", "arguments": "{\"key\": \"cart:7\"}"}},
    {"id": "c3", "type": "function", "function": {"name": "delete", "arguments": "{\"key\": [\"order:1:status\", \"session:stale\"]}"}}
  ]})");
  ASSERT_EQ(calls.size(), 3u);
  const auto p = host.plan(calls);
  EXPECT_TRUE(p.plan.waits_for(2, 0)) << "delete [order:1:status, ...] after set order:1:status";
  EXPECT_FALSE(p.plan.waits_for(1, 0));
  EXPECT_FALSE(p.plan.waits_for(2, 1));
  ASSERT_EQ(p.edges.size(), 1u);
  EXPECT_EQ(p.edges[0].from, 0u);
  EXPECT_EQ(p.edges[0].to, 2u);

  // Control: the same turn described with the array's text as one target has no edge.
  std::vector<te::call_description> old;
  for (const auto& c : calls) old.push_back(single_target_description(tool_named(te::parse_manifest(redis_manifest), c.name), c.arguments));
  EXPECT_FALSE(te::plan_calls(old).waits_for(2, 0));
}

}  // namespace json_targets_test_ns
