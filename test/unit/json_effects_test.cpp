// The JSON wire forms of the vocabulary (interchangeable with the Rust crate's
// serde form), canonical JSON, and call identity over JSON arguments.
#include <tool_effects/json.hpp>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_effects_test_ns {

namespace {

using namespace tool_effects;
using nlohmann::json;

// Every one of the 128 effect sets.
effect_set set_from_index(unsigned i) { return effect_set::from_bits(static_cast<std::uint8_t>(i)); }

// The json_error thrown by `f`, or a failure.
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

TEST(EffectSetJson, IsAnArrayOfSlugsInDeclarationOrder) {
  const json j = effect_set{effect::network, effect::read};
  EXPECT_EQ(j, json::parse(R"(["read","network"])"));
  EXPECT_EQ(json(effect_set{}), json::array());
}

TEST(EffectSetJson, EverySetRoundTrips) {
  for (unsigned i = 0; i < 128; ++i) {
    const effect_set s = set_from_index(i);
    const json j = s;
    ASSERT_TRUE(j.is_array());
    EXPECT_EQ(j.size(), s.size());
    EXPECT_EQ(j.get<effect_set>(), s) << j.dump();
    EXPECT_EQ(json::parse(j.dump()).get<effect_set>(), s) << "through text";
  }
}

TEST(EffectSetJson, ReadsTheRustSerdeForm) {
  // serde_json of a HashSet<SideEffect> with rename_all = "lowercase": any order; duplicates collapse.
  EXPECT_EQ(json::parse(R"(["network","read"])").get<effect_set>(), (effect_set{effect::read, effect::network}));
  EXPECT_EQ(json::parse(R"(["write","write","idempotent"])").get<effect_set>(),
            (effect_set{effect::write, effect::idempotent}));
  for (const effect e : all_effects) EXPECT_EQ(json(e), json(std::string(to_string(e))));
}

TEST(EffectSetJson, ErrorNamesIndexAndValue) {
  const auto e = error_of([] { (void)json::parse(R"(["read","bogus"])").get<effect_set>(); });
  EXPECT_EQ(e.pointer(), "/1");
  EXPECT_EQ(e.input(), "bogus");
  EXPECT_STREQ(e.what(), R"(at /1: unknown side-effect tag: "bogus")");

  const auto upper = error_of([] { (void)json::parse(R"(["READ"])").get<effect_set>(); });
  EXPECT_EQ(upper.pointer(), "/0") << "slugs are case-sensitive";

  const auto type = error_of([] { (void)json::parse(R"(["read",3])").get<effect_set>(); });
  EXPECT_EQ(type.pointer(), "/1");
  EXPECT_EQ(type.message(), "expected a string, got number");
  EXPECT_EQ(type.input(), "3");

  const auto not_array = error_of([] { (void)json::parse(R"("read,network")").get<effect_set>(); });
  EXPECT_EQ(not_array.pointer(), "");
  EXPECT_EQ(not_array.message(), "expected an array of side-effect tags, got string");
}

TEST(VocabularyJson, EffectClassAndModeRoundTripStrictly) {
  for (const effect e : all_effects) EXPECT_EQ(json(e).get<effect>(), e);
  for (const auto c : {side_effect_class::none, side_effect_class::idempotent, side_effect_class::non_idempotent})
    EXPECT_EQ(json(c).get<side_effect_class>(), c);
  for (const auto m : {access_mode::read, access_mode::write, access_mode::append})
    EXPECT_EQ(json(m).get<access_mode>(), m);

  EXPECT_EQ(error_of([] { (void)json("Read").get<effect>(); }).message(), "unknown side-effect tag");
  EXPECT_EQ(error_of([] { (void)json("maybe").get<side_effect_class>(); }).input(), "maybe");
  EXPECT_EQ(error_of([] { (void)json("delete").get<access_mode>(); }).message(), "unknown access mode");
  EXPECT_EQ(error_of([] { (void)json(true).get<access_mode>(); }).message(), "expected a string, got boolean");
}

TEST(VocabularyJson, DescriptionsAndIdentitiesAreWritten) {
  const auto d = describe_runtime("write_file", effect_set{effect::idempotent},
                                  {{"fs/files", access_mode::write, std::string("/tmp/a")}});
  const json j = d;
  EXPECT_EQ(j, json::parse(R"({"name":"write_file","effects":["write","idempotent"],"exclusive":false,
                               "accesses":[{"resource":"fs/files","mode":"write","target":"/tmp/a"}]})"));
  EXPECT_EQ(json(call_description{}), json::parse(R"({"name":"","effects":[],"accesses":[],"exclusive":true})"));
  const json id = call_identity{"read_file", "default", std::nullopt, "args=read_file:00"};
  EXPECT_TRUE(id.at("target").is_null());
  EXPECT_EQ(id.at("key"), "args=read_file:00");
}

TEST(CanonicalJson, SortedKeysNoWhitespaceIntegralFloats) {
  EXPECT_EQ(canonical_json(json::parse(R"({ "b": 1, "a": [true, null, "x\"y"], "c": {"z": 1.0, "y": 2.5} })")),
            R"({"a":[true,null,"x\"y"],"b":1,"c":{"y":2.5,"z":1}})");
  EXPECT_EQ(canonical_json(json::parse("[]")), "[]");
  EXPECT_EQ(canonical_json(json::parse("{}")), "{}");
  EXPECT_EQ(canonical_json(json::parse("-0.0")), "0");
  EXPECT_EQ(canonical_json(json::parse("1e300")), "1e+300");
}

TEST(CanonicalJson, EqualValuesGiveEqualText) {
  EXPECT_EQ(canonical_json(json::parse(R"({"path":"/a","mode":{"x":1,"y":[1,2]}})")),
            canonical_json(json::parse(R"({"mode":{"y":[1,2],"x":1.0},"path":"/a"})")));
  EXPECT_NE(canonical_json(json::parse(R"({"y":[1,2]})")), canonical_json(json::parse(R"({"y":[2,1]})")));
}

TEST(CanonicalJson, DeepNestingIsSafe) {
  json deep = json::array();
  for (int i = 0; i < 20000; ++i) deep = json::array({std::move(deep)});
  const std::string text = canonical_json(deep);
  EXPECT_EQ(text.size(), 2u * 20001u);
}

TEST(JsonIdentity, StringArgumentsOfJsonCalls) {
  using args = identity_arguments<json>;
  const json call = json::parse(R"({"path":"/a","n":3,"flag":true,"none":null,"obj":{"b":1,"a":2}})");
  EXPECT_EQ(args::string_arg(call, "path"), "/a");
  EXPECT_EQ(args::string_arg(call, "n"), "3");
  EXPECT_EQ(args::string_arg(call, "flag"), "true");
  EXPECT_EQ(args::string_arg(call, "none"), std::nullopt);
  EXPECT_EQ(args::string_arg(call, "missing"), std::nullopt);
  EXPECT_EQ(args::string_arg(call, "obj"), R"({"a":2,"b":1})");
  EXPECT_EQ(args::string_arg(json::array({1}), "path"), std::nullopt);
}

TEST(JsonIdentity, DynamicToolIdentityAndCallDescription) {
  dynamic_tool tool;
  tool.name = "write_file";
  tool.description = describe_runtime(tool.name, {}, {{"fs", access_mode::write, std::nullopt}});
  tool.identity.target_arg = "path";

  const json a = json::parse(R"({"path":"/tmp/a","content":"x"})");
  const json b = json::parse(R"({"path":"/tmp/b","content":"x"})");
  EXPECT_EQ(identify(tool, a).key, "2f175d67-ff1d-5faa-99f6-b272bd21a21d");
  EXPECT_FALSE(conflicts(describe_call(tool, a), describe_call(tool, b)));
  EXPECT_TRUE(conflicts(describe_call(tool, a), describe_call(tool, a)));

  dynamic_tool opaque;
  opaque.name = "search";
  const json q1 = json::parse(R"({"q":"x","n":1})");
  const json q2 = json::parse(R"({"n":1.0,"q":"x"})");
  EXPECT_EQ(identify(opaque, q1).key, "b9facc05-6bd0-52c3-bfba-586390bff50b");
  EXPECT_EQ(identify(opaque, q1).key, identify(opaque, q2).key) << "canonical: key order and 1.0 == 1";
}

}  // namespace
}  // namespace json_effects_test_ns
