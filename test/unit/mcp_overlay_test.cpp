// Issue 21 point 2: an overlay entry is the user's declaration and replaces,
// per tool, what a server's annotations imply — trusted or not. Tools the
// overlay does not name keep the conservative import. On tools/list results
// shaped like server-postgres 0.6.2 and server-redis 2025.4.25 (no
// annotations) and one that annotates; the real servers run in
// mcp_newcomer_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <tool_effects/mcp.hpp>

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_overlay_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
const json& list() {
  static const json l = json::parse(R"({"tools": [
    {"name": "query", "inputSchema": {"type": "object"}},
    {"name": "set", "inputSchema": {"type": "object"}},
    {"name": "drop", "annotations": {"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false}},
    {"name": "peek", "annotations": {"readOnlyHint": true, "openWorldHint": false}}
  ]})");
  return l;
}

const te::dynamic_tool& by_name(const std::vector<te::dynamic_tool>& tools, const std::string& name) {
  for (const auto& t : tools)
    if (t.name == name) return t;
  throw std::out_of_range(name);
}

constexpr const char* overlay_text = R"({"version": 1, "tools": [
  {"name": "query", "reads": ["pg"]},
  {"name": "drop",  "reads": ["pg"]},
  {"name": "peek",  "identity": {"target_arg": "key"}}
]})";
}  // namespace

TEST(McpOverlay, AnEntryReplacesWhatATrustedServerWithoutAnnotationsImplies) {
  const auto overlay = te::parse_manifest(overlay_text);
  const auto tools = te::mcp_server_tools(list(), te::server_trust::trusted, overlay, "pg");
  const auto& q = by_name(tools, "query").description;
  EXPECT_EQ(q.effects, (te::effect_set{te::effect::read})) << te::to_string(q.effects);
  EXPECT_FALSE(q.exclusive);
  ASSERT_EQ(q.accesses.size(), 1u);
  EXPECT_EQ(q.accesses[0].resource, "pg");
  EXPECT_EQ(q.name, "query");
  // Two declared reads do not conflict; the control: without the overlay they do.
  EXPECT_FALSE(te::conflicts(q, q));
  const auto bare = te::mcp_server_tools(list(), te::server_trust::trusted, {}, "pg");
  const auto& q0 = by_name(bare, "query").description;
  EXPECT_EQ(q0.effects, (te::effect_set{te::effect::write, te::effect::destructive, te::effect::external,
                                        te::effect::network}))
      << te::to_string(q0.effects);
  EXPECT_TRUE(te::conflicts(q0, q0));
}

TEST(McpOverlay, AnEntryReplacesATrustedServersAnnotationsToo) {
  const auto tools = te::mcp_server_tools(list(), te::server_trust::trusted, te::parse_manifest(overlay_text), "pg");
  // "drop" is annotated destructive; the user says it reads: the user's word stands (no union).
  EXPECT_EQ(by_name(tools, "drop").description.effects, (te::effect_set{te::effect::read}));
}

TEST(McpOverlay, TrustAndUntrustGiveTheSameToolsForNamedEntries) {
  const auto overlay = te::parse_manifest(overlay_text);
  const auto trusted = te::mcp_server_tools(list(), te::server_trust::trusted, overlay, "pg");
  const auto untrusted = te::mcp_server_tools(list(), te::server_trust::untrusted, overlay, "pg");
  for (const char* name : {"query", "drop"}) {
    EXPECT_EQ(by_name(trusted, name).description.effects, by_name(untrusted, name).description.effects) << name;
    EXPECT_EQ(by_name(trusted, name).description.exclusive, by_name(untrusted, name).description.exclusive) << name;
  }
}

TEST(McpOverlay, ToolsTheOverlayDoesNotNameKeepTheConservativeImport) {
  const auto overlay = te::parse_manifest(overlay_text);
  // Untrusted and not named: unknown (exclusive).
  const auto untrusted = te::mcp_server_tools(list(), te::server_trust::untrusted, overlay, "redis");
  EXPECT_TRUE(by_name(untrusted, "set").description.exclusive);
  EXPECT_TRUE(by_name(untrusted, "set").description.effects.empty());
  // Trusted, not named, no annotations: the MCP defaults.
  const auto trusted = te::mcp_server_tools(list(), te::server_trust::trusted, overlay, "redis");
  EXPECT_EQ(by_name(trusted, "set").description.effects,
            (te::effect_set{te::effect::write, te::effect::destructive, te::effect::external, te::effect::network}));
}

TEST(McpOverlay, AnEntryWithOnlyAnIdentityKeepsTheImportedFlags) {
  const auto overlay = te::parse_manifest(overlay_text);
  const auto trusted = te::mcp_server_tools(list(), te::server_trust::trusted, overlay, "pg");
  const auto& peek = by_name(trusted, "peek");
  EXPECT_EQ(peek.description.effects, (te::effect_set{te::effect::read}));
  EXPECT_EQ(peek.identity.target_arg, "key");
  const auto untrusted = te::mcp_server_tools(list(), te::server_trust::untrusted, overlay, "pg");
  EXPECT_TRUE(by_name(untrusted, "peek").description.exclusive) << "declaring nothing stays unknown untrusted";
}

}  // namespace mcp_overlay_test_ns
