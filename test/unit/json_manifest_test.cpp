// Tool manifests: loading dynamic tools (effects, resources, identity), the
// conflicts and identities of their calls, and errors that point at the tool
// and the field — a typo is an error, never a silent default.
#include <tool_effects/json.hpp>

#include <string>

#include <gtest/gtest.h>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_manifest_test_ns {

namespace {

using namespace tool_effects;
using nlohmann::json;

constexpr const char* example = R"({
  "version": 1,
  "tools": [
    {"name": "read_file", "description": "Reads a file", "effects": ["idempotent"], "reads": ["fs/files"],
     "identity": {"target_arg": "path"}},
    {"name": "write_file", "effects": ["idempotent"], "writes": ["fs/files"], "appends": ["logs/audit"],
     "identity": {"target_arg": "path"}},
    {"name": "office", "effects": ["read", "write"], "identity": {"operation_arg": "action", "target_arg": "file"}},
    {"name": "search_web", "effects": ["read", "network"]},
    {"name": "mystery"}
  ]
})";

struct expected_error {
  std::string pointer;
  std::string what_contains;
  std::optional<std::size_t> tool_index;
  std::optional<std::string> tool_name;
};

manifest_error manifest_error_of(std::string_view text) {
  try {
    (void)parse_manifest(text);
  } catch (const manifest_error& e) {
    return e;
  }
  ADD_FAILURE() << "no manifest_error for " << text;
  return manifest_error("?", "?", "?");
}

void expect_error(std::string_view text, const expected_error& x) {
  const auto e = manifest_error_of(text);
  EXPECT_EQ(e.pointer(), x.pointer) << text << "\n" << e.what();
  EXPECT_NE(std::string(e.what()).find(x.what_contains), std::string::npos)
      << "what(): " << e.what() << "\nexpected to contain: " << x.what_contains;
  EXPECT_EQ(e.tool_index(), x.tool_index) << e.what();
  EXPECT_EQ(e.tool_name(), x.tool_name) << e.what();
}

TEST(Manifest, LoadsToolsInOrder) {
  const auto tools = parse_manifest(example);
  ASSERT_EQ(tools.size(), 5u);
  EXPECT_EQ(tools[0].name, "read_file");
  EXPECT_EQ(tools[0].description.name, "read_file");
  EXPECT_EQ(tools[0].description.effects, (effect_set{effect::read, effect::idempotent}));
  EXPECT_EQ(tools[0].description.accesses,
            (std::vector<runtime_access>{{"fs/files", access_mode::read, std::nullopt}}));
  EXPECT_EQ(tools[0].identity.target_arg, "path");
  EXPECT_EQ(tools[0].identity.operation_arg, std::nullopt);
  EXPECT_EQ(tools[2].identity.operation_arg, "action");
  EXPECT_EQ(tools[1].description.accesses.size(), 2u);
}

TEST(Manifest, DescriptionsComeFromDescribeRuntime) {
  const auto tools = parse_manifest(example);
  for (const auto& t : tools) {
    const json j = json::parse(example)["tools"];
    for (const auto& entry : j) {
      if (entry["name"] != t.name) continue;
      std::vector<runtime_access> scoped;
      for (const char* key : {"reads", "writes", "appends"})
        if (entry.contains(key))
          for (const auto& r : entry[key])
            scoped.push_back({r.get<std::string>(),
                              json(std::string(key) == "reads"    ? "read"
                                   : std::string(key) == "writes" ? "write"
                                                                  : "append")
                                  .get<access_mode>(),
                              std::nullopt});
      const auto want = describe_runtime(t.name, entry.value("effects", json::array()).get<effect_set>(), scoped);
      EXPECT_EQ(t.description.effects, want.effects) << t.name;
      EXPECT_EQ(t.description.accesses, want.accesses) << t.name;
      EXPECT_EQ(t.description.exclusive, want.exclusive) << t.name;
    }
  }
}

TEST(Manifest, FlagsWithoutResourcesMeanTheRootAndNothingMeansUnknown) {
  const auto tools = parse_manifest(example);
  const auto& office = tools[2].description;
  EXPECT_EQ(office.accesses, (std::vector<runtime_access>{{"", access_mode::read, std::nullopt},
                                                          {"", access_mode::write, std::nullopt}}));
  EXPECT_TRUE(tools[4].description.exclusive) << "a tool that declares nothing is unknown";
  EXPECT_EQ(classify(tools[4].description.effects), side_effect_class::non_idempotent);
  EXPECT_TRUE(parse_manifest(R"({"tools":[{"name":"x","effects":[]}]})")[0].description.exclusive);
}

TEST(Manifest, CallsConflictPerTarget) {
  const auto tools = parse_manifest(example);
  const auto& read_file = tools[0];
  const auto& write_file = tools[1];
  const auto w_a = describe_call(write_file, json{{"path", "/a"}, {"content", "1"}});
  const auto w_b = describe_call(write_file, json{{"path", "/b"}, {"content", "2"}});
  const auto r_a = describe_call(read_file, json{{"path", "/a"}});
  const auto r_b = describe_call(read_file, json{{"path", "/b"}});
  EXPECT_FALSE(conflicts(w_a, w_b)) << "writes to different files";
  EXPECT_TRUE(conflicts(w_a, describe_call(write_file, json{{"path", "/a"}}))) << "writes to the same file";
  EXPECT_TRUE(conflicts(w_a, r_a));
  EXPECT_FALSE(conflicts(w_a, r_b));
  EXPECT_TRUE(conflicts(w_a, describe_call(read_file, json::object()))) << "no target: the whole resource";
  EXPECT_FALSE(conflicts(r_a, describe_call(tools[3], json{{"q", "x"}}))) << "reads never conflict";
  EXPECT_TRUE(conflicts(r_a, describe_call(tools[4], json::object()))) << "unknown conflicts with everything";
}

TEST(Manifest, IdentitiesFollowTheDeclaredPolicy) {
  const auto tools = parse_manifest(example);
  EXPECT_EQ(identify(tools[1], json{{"path", "/a"}, {"content", "x"}}).key, "3b261d0b-94e4-555a-b8a6-8616fa0e4625");
  const auto office = identify(tools[2], json{{"action", "pdf_fields"}, {"file", "f.pdf"}});
  EXPECT_EQ(office.operation, "pdf_fields");
  EXPECT_EQ(office.key, "748be094-0996-53bf-841d-3568d6c7304f");
  EXPECT_EQ(identify(tools[3], json{{"q", "x"}}).key, "58b21934-4443-5b03-9b85-4d5c686dc481");

  repeat_detector guard({.threshold = 3, .last_calls = 10, .within = std::nullopt});
  bool flagged = false;
  for (int i = 0; i < 3; ++i)
    flagged = guard.observe(identify(tools[2], json{{"action", "pdf_fields"}, {"file", "f.pdf"}, {"try", i}})).repeated;
  EXPECT_TRUE(flagged) << "the same office.pdf_fields call three times";
}

TEST(Manifest, AcceptsAParsedDocument) {
  const auto a = manifest_from_json(json::parse(example));
  const auto b = parse_manifest(example);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].description.accesses, b[i].description.accesses);
}

TEST(ManifestErrors, WhatNamesToolFieldAndValue) {
  const auto e = manifest_error_of(R"({"tools":[{"name":"a"},{"name":"b","effects":["read","bogus"]}]})");
  EXPECT_STREQ(e.what(), R"(manifest: tool 1 ("b") at /tools/1/effects/1: unknown side-effect tag: "bogus")");
  EXPECT_EQ(e.input(), "bogus");
  const parse_error& base = e;  // callers may catch the library's parse_error
  EXPECT_EQ(base.input(), "bogus");
}

TEST(ManifestErrors, TyposAreErrors) {
  expect_error(R"({"tools":[{"name":"a","efects":["read"]}]})",
               {"/tools/0/efects", R"(unknown key (did you mean "effects"?): "efects")", 0, "a"});
  expect_error(R"({"tools":[{"name":"a","identity":{"target":"path"}}]})",
               {"/tools/0/identity/target", R"(did you mean "target_arg"?)", 0, "a"});
  expect_error(R"({"tool":[]})", {"/tool", R"(did you mean "tools"?)", std::nullopt, std::nullopt});
  expect_error(R"({"tools":[{"name":"a","effects":["Read"]}]})", {"/tools/0/effects/0", R"("Read")", 0, "a"});
  expect_error(R"({"tools":[{"name":"a","xyzzy":1}]})", {"/tools/0/xyzzy", "known: name description", 0, "a"});
}

TEST(ManifestErrors, WrongTypes) {
  expect_error(R"({"tools":[{"name":"a","effects":"read"}]})",
               {"/tools/0/effects", R"(expected an array of side-effect tags, got string: "read")", 0, "a"});
  expect_error(R"({"tools":[{"name":"a","effects":["read",7]}]})", {"/tools/0/effects/1", "got number: \"7\"", 0, "a"});
  expect_error(R"({"tools":[{"name":"a","reads":"db"}]})", {"/tools/0/reads", "expected an array", 0, "a"});
  expect_error(R"({"tools":[{"name":"a","writes":[["db"]]}]})",
               {"/tools/0/writes/0", R"(got array: "[\"db\"]")", 0, "a"});
  expect_error(R"({"tools":[{"name":"a","identity":{"operation_arg":1}}]})",
               {"/tools/0/identity/operation_arg", "expected an argument name string", 0, "a"});
  expect_error(R"({"tools":[{"name":"a","identity":"path"}]})", {"/tools/0/identity", "expected an object", 0, "a"});
  expect_error(R"({"tools":[{"name":"a","description":false}]})",
               {"/tools/0/description", "expected a string", 0, "a"});
  expect_error(R"({"tools":[{"name":5}]})", {"/tools/0/name", "expected a string, got number", 0, std::nullopt});
  expect_error(R"({"tools":[7]})", {"/tools/0", "expected a tool object, got number", 0, std::nullopt});
  expect_error(R"({"tools":{}})", {"/tools", "expected an array of tools", std::nullopt, std::nullopt});
  expect_error(R"([])", {"", "expected a manifest object, got array", std::nullopt, std::nullopt});
  expect_error(R"({"version":2,"tools":[]})", {"/version", "unsupported manifest version", std::nullopt, std::nullopt});
}

TEST(ManifestErrors, MissingOrEmptyValues) {
  expect_error(R"({})", {"", R"(missing required key: "tools")", std::nullopt, std::nullopt});
  expect_error(R"({"tools":[{"effects":["read"]}]})", {"/tools/0", R"(missing required key: "name")", 0, std::nullopt});
  expect_error(R"({"tools":[{"name":""}]})", {"/tools/0/name", "expected a non-empty tool name", 0, std::nullopt});
  expect_error(R"({"tools":[{"name":"a","identity":{"target_arg":""}}]})",
               {"/tools/0/identity/target_arg", "non-empty argument name", 0, "a"});
}

TEST(ManifestErrors, InvalidResourcePaths) {
  for (const char* bad : {"db//users", "/db", "db/"}) {
    const std::string text = std::string(R"({"tools":[{"name":"a","reads":["ok/path",")") + bad + R"("]}]})";
    expect_error(text, {"/tools/0/reads/1", std::string("invalid resource path"), 0, "a"});
    EXPECT_EQ(manifest_error_of(text).input(), bad);
  }
}

TEST(ManifestErrors, DuplicatesAreErrors) {
  expect_error(R"({"tools":[{"name":"a"},{"name":"b"},{"name":"a"}]})",
               {"/tools/2/name", R"(duplicate tool name (also tool 0): "a")", 2, "a"});
  expect_error(R"({"tools":[{"name":"a","effects":["read"],"effects":["write"]}]})",
               {"/tools/0/effects", R"(duplicate key: "effects")", std::nullopt, std::nullopt});
  expect_error(R"({"tools":[{"name":"a"}],"tools":[]})", {"/tools", "duplicate key", std::nullopt, std::nullopt});
}

TEST(ManifestErrors, MalformedText) {
  const auto e = manifest_error_of(R"({"tools":[{"name":"a",}]})");
  EXPECT_EQ(e.pointer(), "");
  EXPECT_NE(std::string(e.what()).find("invalid JSON at byte 23"), std::string::npos) << e.what();
  expect_error("", {"", "invalid JSON at byte 1", std::nullopt, std::nullopt});
  // Found by fuzz_manifest_fuzz: nlohmann reports an overflowing number as out_of_range, not parse_error.
  expect_error(R"({"tools":[{"name":"a","x":1e999}]})",
               {"", "number overflow parsing '1e999'", std::nullopt, std::nullopt});

  std::string deep = R"({"tools":)";
  for (int i = 0; i < 100; ++i) deep += "[";
  std::string pointer = "/tools";
  for (int i = 0; i < 63; ++i) pointer += "/0";  // the root object and 63 arrays make 64 levels
  expect_error(deep, {pointer, "nesting deeper than 64 levels", std::nullopt, std::nullopt});
}

}  // namespace
}  // namespace json_manifest_test_ns
