// tool_registry: compile-time tables, lookup by name, dynamic tools, and the
// agreement of the constexpr matrix with the runtime rule.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include <tool_effects/registry.hpp>

namespace registry_test_ns {

namespace te = tool_effects;

namespace {
struct user_db {};
struct users : te::resource<user_db> {};
struct files {};

struct fetch_user {
  static constexpr std::string_view name = "fetch_user";
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
  std::string operator()(int id) const { return "user " + std::to_string(id); }
};
struct fetch_and_touch_user {
  static constexpr std::string_view name = "fetch_and_touch_user";
  using side_effects = te::effects<te::reads<users>, te::writes<users>>;
  std::string operator()(int id) const { return "touched " + std::to_string(id); }
};
struct search_web {
  static constexpr std::string_view name = "search_web";
  using side_effects = te::effects<te::read, te::network>;
  std::string operator()(int) const { return "results"; }
};
struct delete_account {
  static constexpr std::string_view name = "delete_account";
  using side_effects = te::effects<te::writes<user_db>, te::destructive>;
  std::string operator()(int) const { return "deleted"; }
};
struct write_file {
  static constexpr std::string_view name = "write_file";
  using side_effects = te::effects<te::writes<files>, te::idempotent>;
  std::string operator()(int) const { return "written"; }
};

using registry = te::tool_registry<fetch_user, fetch_and_touch_user, search_web, delete_account, write_file>;

// Compile-time tables.
static_assert(registry::static_size == 5);
static_assert(registry::names[3] == "delete_account");
static_assert(registry::static_index_of("write_file") == 4);
static_assert(registry::static_index_of("fetch_user") == 0);
static_assert(!registry::static_index_of("fetch"));
static_assert(registry::effect_sets[2] == te::effect_set{te::effect::read, te::effect::network});
static_assert(registry::classes[0] == te::side_effect_class::none);
static_assert(registry::classes[3] == te::side_effect_class::non_idempotent);
static_assert(registry::conflicts(0, 1) && !registry::conflicts(0, 4) && registry::conflicts(2, 4));
static_assert(std::is_same_v<registry::tool_type<3>, delete_account>);
}  // namespace

TEST(Registry, LookupByNameFindsEveryStaticTool) {
  registry r;
  for (std::size_t i = 0; i < registry::static_size; ++i) {
    EXPECT_EQ(r.index_of(registry::names[i]), i);
    EXPECT_EQ(r.name(i), registry::names[i]);
    EXPECT_TRUE(registry::is_static(i));
  }
  EXPECT_FALSE(r.index_of("no_such_tool"));
}

TEST(Registry, UnknownNameErrorQuotesTheName) {
  registry r;
  try {
    (void)r.at("send_emial");
    FAIL() << "at() accepted an unknown name";
  } catch (const te::unknown_tool_error& e) {
    EXPECT_STREQ(e.what(), "unknown tool: \"send_emial\"");
    EXPECT_EQ(e.name(), "send_emial");
  }
}

TEST(Registry, StaticMatrixAgreesWithRuntimeRuleForEveryPair) {
  registry r;
  for (std::size_t i = 0; i < registry::static_size; ++i)
    for (std::size_t j = 0; j < registry::static_size; ++j)
      EXPECT_EQ(registry::conflicts(i, j), te::conflicts(r.description(i), r.description(j)))
          << registry::names[i] << " vs " << registry::names[j];
}

TEST(Registry, DescriptionsCarryNamesFlagsAndPaths) {
  registry r;
  const auto& d = r.description(*r.index_of("fetch_and_touch_user"));
  EXPECT_EQ(d.name, "fetch_and_touch_user");
  EXPECT_FALSE(d.exclusive);
  EXPECT_EQ(d.effects, (te::effect_set{te::effect::read, te::effect::write}));
  ASSERT_EQ(d.accesses.size(), 2u);
  EXPECT_NE(d.accesses[0].resource.find("users"), std::string::npos);
}

TEST(Registry, DynamicToolsMixWithStaticOnesUnderTheSameRule) {
  registry r;
  const std::string users_path(te::resource_v<users>->path);
  const auto logger = r.add("audit", te::describe_runtime("", {}, {{"audit", te::access_mode::append, {}}}));
  const auto bulk = r.add("bulk_update", te::describe_runtime("", te::effect_set{te::effect::idempotent},
                                                             {{users_path, te::access_mode::write, {}}}));
  const auto mcp = r.add("mcp_untrusted", te::call_description{});  // unknown: exclusive
  EXPECT_EQ(r.size(), registry::static_size + 3);
  EXPECT_FALSE(registry::is_static(logger));
  EXPECT_EQ(r.at("bulk_update"), bulk);
  EXPECT_EQ(r.description(bulk).name, "bulk_update");

  EXPECT_FALSE(r.tools_conflict(logger, *r.index_of("fetch_user")));
  EXPECT_FALSE(r.tools_conflict(logger, logger));                      // appends commute
  EXPECT_TRUE(r.tools_conflict(bulk, *r.index_of("fetch_user")));       // write vs read of users
  EXPECT_TRUE(r.tools_conflict(bulk, *r.index_of("delete_account")));   // users lies under user_db
  EXPECT_FALSE(r.tools_conflict(bulk, *r.index_of("write_file")));
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_TRUE(r.tools_conflict(mcp, i)) << r.name(i);
}

TEST(Registry, RejectsDuplicateAndEmptyDynamicNames) {
  registry r;
  EXPECT_THROW(r.add("search_web", te::call_description{}), std::invalid_argument);
  r.add("x", te::call_description{});
  EXPECT_THROW(r.add("x", te::call_description{}), std::invalid_argument);
  EXPECT_THROW(r.add("", te::call_description{}), std::invalid_argument);
  EXPECT_EQ(r.size(), registry::static_size + 1);
}

TEST(Registry, VisitStaticCallsTheToolAtARuntimeIndex) {
  registry r;
  EXPECT_EQ(r.visit_static(0, [](auto& tool) { return std::string(tool(7)); }), "user 7");
  EXPECT_EQ(r.visit_static(3, [](auto& tool) { return std::string(tool(7)); }), "deleted");
  EXPECT_THROW(r.visit_static(registry::static_size, [](auto& tool) { return std::string(tool(7)); }),
               std::out_of_range);
}

TEST(Registry, WithNoStaticToolsHoldsDynamicToolsOnly) {
  te::tool_registry<> r;
  static_assert(te::tool_registry<>::static_size == 0);
  static_assert(!te::tool_registry<>::static_index_of("x").has_value());
  EXPECT_EQ(r.size(), 0u);
  EXPECT_FALSE(r.index_of("audit").has_value());
  const auto a = r.add("audit", te::describe_runtime("", {}, {{"audit", te::access_mode::append, {}}}));
  const auto b = r.add("scan", te::describe_runtime("", te::effect_set{te::effect::read}, {}));
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(r.at("scan"), 1u);
  EXPECT_EQ(r.name(0), "audit");
  EXPECT_FALSE(te::tool_registry<>::is_static(0));
  EXPECT_TRUE(r.tools_conflict(a, b));  // an unscoped read reads the audit log too
  EXPECT_THROW((void)r.at("nope"), te::unknown_tool_error);
  EXPECT_THROW(r.add("audit", {}), std::invalid_argument);
}

// Issue 19: registration was quadratic (a linear name scan per add: 25k, 50k,
// 100k tools took 1.2, 4.0, 16.0 s). Bound stated here: 100,000 dynamic tools
// register, every name resolves to its index, and a duplicate is refused
// without changing the registry. The time is measured by
// benchmarks/registry.cpp (BM_RegisterDynamicTools), not here.
TEST(Registry, HundredThousandDynamicToolsRegisterAndResolve) {
  constexpr std::size_t n = 100'000;
  registry r;
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(r.add("tool_" + std::to_string(i), te::describe_runtime("", te::effect_set{te::effect::read}, {})),
              registry::static_size + i);
  EXPECT_EQ(r.size(), registry::static_size + n);
  for (std::size_t i = 0; i < n; i += 997) {
    const std::string name = "tool_" + std::to_string(i);
    ASSERT_EQ(r.index_of(name), registry::static_size + i);
    EXPECT_EQ(r.name(registry::static_size + i), name);
    EXPECT_EQ(r.description(registry::static_size + i).name, name);
  }
  EXPECT_EQ(r.index_of("fetch_user"), 0u);  // the static tools still come first
  EXPECT_FALSE(r.index_of("tool_" + std::to_string(n)).has_value());
  EXPECT_THROW(r.add("tool_123", {}), std::invalid_argument);
  EXPECT_THROW(r.add("fetch_user", {}), std::invalid_argument);  // a static name is taken too
  EXPECT_EQ(r.size(), registry::static_size + n);
  EXPECT_EQ(r.at("tool_99999"), registry::static_size + n - 1);
}

TEST(Registry, ACopyResolvesItsOwnDynamicTools) {
  te::tool_registry<> a;
  (void)a.add("x", {});
  te::tool_registry<> b = a;
  (void)b.add("y", {});
  EXPECT_EQ(b.index_of("x"), 0u);
  EXPECT_EQ(b.index_of("y"), 1u);
  EXPECT_FALSE(a.index_of("y").has_value());
  EXPECT_EQ(a.size(), 1u);
}

}  // namespace registry_test_ns
