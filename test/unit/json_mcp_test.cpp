// MCP ToolAnnotations <-> effects: export from static tools, import for dynamic
// tools with the specification's defaults, the trusted/untrusted split, and
// round trips. The table these tests check is docs/mcp.md.
#include <tool_effects/json.hpp>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_mcp_test_ns {

namespace {

using namespace tool_effects;
using nlohmann::json;

struct users : resource<> {
  static constexpr std::string_view resource_name = "users";
};
struct search_web {
  using side_effects = effects<tool_effects::read, network>;
};
struct write_file {
  using side_effects = effects<writes<users>, idempotent>;
};
struct delete_account {
  using side_effects = effects<writes<users>, destructive>;
};
struct send_email {
  using side_effects = effects<tool_effects::write, external, network>;
};
struct undeclared_tool {};

// The MCP defaults, stated from the specification (not from the library).
constexpr bool spec_read_only = false, spec_destructive = true, spec_idempotent = false, spec_open_world = true;

mcp_hints hints_from_index(unsigned i) { return {(i & 1) != 0, (i & 2) != 0, (i & 4) != 0, (i & 8) != 0}; }

// What a hint combination means once "meaningful only when not read-only" is applied.
mcp_hints normalised(mcp_hints h) {
  if (h.read_only) h.destructive = false, h.idempotent = true;
  return h;
}

template <class F>
json_error error_of(F&& f) {
  try {
    f();
  } catch (const json_error& e) {
    return e;
  }
  ADD_FAILURE() << "no json_error thrown";
  return json_error("?", "?", "?");
}

static_assert(export_mcp_hints(effect_set{}) == mcp_hints{}, "unknown exports the specification's defaults");
static_assert(import_mcp_hints(mcp_hints{true, false, true, false}, server_trust::untrusted).empty());
static_assert(import_mcp_hints(mcp_hints{true, false, true, false}, server_trust::trusted) == effect_set{effect::read});

TEST(McpDefaults, DefaultHintsAreTheSpecifications) {
  const mcp_hints d;
  EXPECT_EQ(d.read_only, spec_read_only);
  EXPECT_EQ(d.destructive, spec_destructive);
  EXPECT_EQ(d.idempotent, spec_idempotent);
  EXPECT_EQ(d.open_world, spec_open_world);
  EXPECT_EQ(tool_annotations{}.hints(), d) << "absent fields take the defaults";
  EXPECT_EQ(json::parse("{}").get<tool_annotations>().hints(), d);
}

TEST(McpExport, StaticToolsStateEveryHint) {
  const json search = mcp_annotations_of<search_web>("Search the web");
  EXPECT_EQ(search, json::parse(R"({"title":"Search the web","readOnlyHint":true,"destructiveHint":false,
                                    "idempotentHint":true,"openWorldHint":true})"));
  EXPECT_EQ(json(mcp_annotations_of<write_file>()), json::parse(R"({"readOnlyHint":false,"destructiveHint":false,
                                                                   "idempotentHint":true,"openWorldHint":false})"));
  EXPECT_EQ(json(mcp_annotations_of<delete_account>()), json::parse(R"({"readOnlyHint":false,"destructiveHint":true,
                                                                       "idempotentHint":false,"openWorldHint":false})"));
  EXPECT_EQ(json(mcp_annotations_of<send_email>()), json::parse(R"({"readOnlyHint":false,"destructiveHint":false,
                                                                   "idempotentHint":false,"openWorldHint":true})"));
}

TEST(McpExport, UnknownToolsExportTheDefaults) {
  const auto a = mcp_annotations_of<undeclared_tool>();
  EXPECT_EQ(a.read_only_hint, spec_read_only);
  EXPECT_EQ(a.destructive_hint, spec_destructive);
  EXPECT_EQ(a.idempotent_hint, spec_idempotent);
  EXPECT_EQ(a.open_world_hint, spec_open_world);
  EXPECT_EQ(mcp_annotations(call_description{}), a) << "an exclusive description is unknown";
  EXPECT_EQ(mcp_annotations(describe<search_web>("s")), mcp_annotations_of<search_web>());
}

TEST(McpExport, EachHintFollowsItsRule) {
  for (unsigned i = 1; i < 128; ++i) {
    const effect_set s = effect_set::from_bits(static_cast<std::uint8_t>(i));
    const mcp_hints h = export_mcp_hints(s);
    EXPECT_EQ(h.read_only, is_parallel_safe(s)) << s;
    EXPECT_EQ(h.destructive, is_destructive(s)) << s;
    EXPECT_EQ(h.idempotent, is_parallel_safe(s) || s.contains(effect::idempotent)) << s;
    EXPECT_EQ(h.open_world, s.contains(effect::external) || s.contains(effect::network)) << s;
  }
}

TEST(McpImport, UntrustedServersGiveUnknownEffects) {
  for (unsigned i = 0; i < 16; ++i) {
    const effect_set s = import_mcp_hints(hints_from_index(i), server_trust::untrusted);
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(classify(s), side_effect_class::non_idempotent);
  }
  const auto tool =
      import_mcp_tool(json::parse(R"({"name":"ls","annotations":{"readOnlyHint":true}})"), server_trust::untrusted);
  EXPECT_TRUE(tool.description.exclusive);
  EXPECT_TRUE(conflicts(tool.description, tool.description));
  EXPECT_TRUE(
      import_mcp_tool(json::parse(R"({"name":"ls","annotations":{"readOnlyHint":true}})")).description.exclusive)
      << "untrusted is the default";
  EXPECT_TRUE(import_mcp_hints(mcp_hints{true, false, true, false}).empty());
  EXPECT_EQ(server_trust{}, server_trust::untrusted);
}

TEST(McpImport, TrustedTableWithDefaults) {
  auto imported = [](const char* annotations) {
    return import_mcp_annotations(json::parse(annotations).get<tool_annotations>(), server_trust::trusted);
  };
  using E = effect;
  EXPECT_EQ(imported("{}"), (effect_set{E::write, E::destructive, E::external, E::network})) << "all defaults";
  EXPECT_EQ(imported(R"({"readOnlyHint":true})"), (effect_set{E::read, E::external, E::network}));
  EXPECT_EQ(imported(R"({"readOnlyHint":true,"openWorldHint":false})"), (effect_set{E::read}));
  EXPECT_EQ(imported(R"({"readOnlyHint":true,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false})"),
            (effect_set{E::read}))
      << "destructive and idempotent are not meaningful when read-only";
  EXPECT_EQ(imported(R"({"destructiveHint":false})"), (effect_set{E::write, E::external, E::network}));
  EXPECT_EQ(imported(R"({"destructiveHint":false,"idempotentHint":true,"openWorldHint":false})"),
            (effect_set{E::write, E::idempotent}));
  EXPECT_EQ(imported(R"({"idempotentHint":true,"openWorldHint":false})"),
            (effect_set{E::write, E::destructive, E::idempotent}));
  EXPECT_EQ(imported(R"({"readOnlyHint":null,"destructiveHint":null})"), imported("{}")) << "null is absent";
  EXPECT_EQ(imported(R"({"futureHint":true,"title":"x"})"), imported("{}")) << "unknown members are ignored";
}

TEST(McpImport, TrustedRulesFollowTheHints) {
  for (unsigned i = 0; i < 16; ++i) {
    const mcp_hints h = hints_from_index(i);
    const effect_set s = import_mcp_hints(h, server_trust::trusted);
    EXPECT_EQ(is_parallel_safe(s), h.read_only) << i;
    EXPECT_EQ(is_destructive(s), !h.read_only && h.destructive) << i;
    EXPECT_EQ(is_retry_safe(s), h.read_only || (!h.destructive && h.idempotent)) << i;
  }
}

TEST(McpRoundTrip, EffectsThroughHintsKeepEveryRule) {
  for (unsigned i = 1; i < 128; ++i) {
    const effect_set s = effect_set::from_bits(static_cast<std::uint8_t>(i));
    const effect_set back = import_mcp_hints(export_mcp_hints(s), server_trust::trusted);
    EXPECT_EQ(is_parallel_safe(back), is_parallel_safe(s)) << s << " -> " << back;
    EXPECT_EQ(is_retry_safe(back), is_retry_safe(s)) << s << " -> " << back;
    EXPECT_EQ(is_destructive(back), is_destructive(s)) << s << " -> " << back;
    EXPECT_EQ(classify(back), classify(s)) << s << " -> " << back;
  }
}

TEST(McpRoundTrip, HintsThroughEffectsAreNormalised) {
  for (unsigned i = 0; i < 16; ++i) {
    const mcp_hints h = hints_from_index(i);
    EXPECT_EQ(export_mcp_hints(import_mcp_hints(h, server_trust::trusted)), normalised(h)) << i;
  }
}

TEST(McpRoundTrip, AnnotationsThroughJson) {
  for (unsigned i = 0; i < 128; ++i) {
    const auto a = mcp_annotations(effect_set::from_bits(static_cast<std::uint8_t>(i)), "t" + std::to_string(i));
    EXPECT_EQ(json(a).get<tool_annotations>(), a);
  }
  const tool_annotations partial{std::nullopt, true, std::nullopt, std::nullopt, false};
  EXPECT_EQ(json(partial), json::parse(R"({"readOnlyHint":true,"openWorldHint":false})")) << "absent stays absent";
}

TEST(McpErrors, WrongTypesNameTheMember) {
  const auto e = error_of([] { (void)json::parse(R"({"readOnlyHint":"yes"})").get<tool_annotations>(); });
  EXPECT_EQ(e.pointer(), "/readOnlyHint");
  EXPECT_STREQ(e.what(), R"(at /readOnlyHint: expected a boolean, got string: "yes")");
  EXPECT_EQ(error_of([] { (void)json::parse(R"({"title":3})").get<tool_annotations>(); }).pointer(), "/title");
  EXPECT_EQ(error_of([] { (void)json::parse("[]").get<tool_annotations>(); }).message(),
            "expected an object, got array");
}

TEST(McpTools, ImportsToolObjectsAndLists) {
  const json list = json::parse(R"({"tools":[
      {"name":"read_file","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"openWorldHint":false}},
      {"name":"write_file","annotations":{"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}},
      {"name":"mystery"}]})");
  const auto tools = import_mcp_tools(list, server_trust::trusted);
  ASSERT_EQ(tools.size(), 3u);
  EXPECT_EQ(tools[0].name, "read_file");
  EXPECT_EQ(tools[0].description.effects, effect_set{effect::read});
  EXPECT_TRUE(is_parallel_safe(tools[0].description.effects));
  EXPECT_TRUE(is_retry_safe(tools[1].description.effects));
  EXPECT_TRUE(is_destructive(tools[2].description.effects)) << "no annotations: the defaults";
  EXPECT_FALSE(conflicts(tools[0].description, tools[0].description)) << "two reads";
  EXPECT_TRUE(conflicts(tools[0].description, tools[1].description)) << "root read vs root write";

  for (const auto& t : import_mcp_tools(list, server_trust::untrusted)) EXPECT_TRUE(t.description.exclusive) << t.name;
}

TEST(McpTools, ErrorsPointIntoTheDocument) {
  const auto bad_hint = error_of([] {
    (void)import_mcp_tools(json::parse(R"({"tools":[{"name":"a"},{"name":"b","annotations":{"idempotentHint":1}}]})"),
                           server_trust::untrusted);
  });
  EXPECT_EQ(bad_hint.pointer(), "/tools/1/annotations/idempotentHint") << "validated even when untrusted";
  EXPECT_EQ(bad_hint.input(), "1");

  const auto dup = error_of(
      [] { (void)import_mcp_tools(json::parse(R"({"tools":[{"name":"a"},{"name":"a"}]})"), server_trust::trusted); });
  EXPECT_EQ(dup.pointer(), "/tools/1/name");
  EXPECT_EQ(dup.message(), "duplicate tool name (also /tools/0)");

  EXPECT_EQ(error_of([] { (void)import_mcp_tool(json::parse(R"({"title":"x"})"), server_trust::trusted); }).input(),
            "name");
  EXPECT_EQ(error_of([] { (void)import_mcp_tool(json::parse(R"({"name":""})"), server_trust::trusted); }).pointer(),
            "/name");
  EXPECT_EQ(error_of([] { (void)import_mcp_tools(json::parse(R"({"tools":{}})"), server_trust::trusted); }).pointer(),
            "/tools");
}

}  // namespace
}  // namespace json_mcp_test_ns
