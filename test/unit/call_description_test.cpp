// The runtime bridge: resource paths, targets, describe<T> and
// describe_runtime. The runtime answers must equal the compile-time ones:
// for the varied tool set of varied_tools.hpp, conflicts between described
// calls equal conflicts_v for every pair. Issue 3 (and the registry's input).
#include <tool_effects/call_description.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/text.hpp>

#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "varied_tools.hpp"

namespace call_description_test_ns {

namespace te = tool_effects;
using te::access_mode;
using te::call_description;
using te::effect;
using te::effect_set;
using te::runtime_access;

namespace {
runtime_access acc(std::string resource, access_mode m, std::optional<std::string> target = std::nullopt) {
  return runtime_access{std::move(resource), m, std::move(target)};
}
}  // namespace

TEST(Paths, Overlap) {
  struct row {
    const char *a, *b;
    bool overlap;
  };
  const row rows[] = {
      {"", "", true},           {"", "db", true},          {"", "db/users/42", true},
      {"db", "db", true},       {"db", "db/users", true},  {"db", "db/users/42", true},
      {"db/users", "db/users/42", true},
      {"db", "dbx", false},     {"db/u", "db/users", false}, {"db/users", "db/orders", false},
      {"db/users", "db", true}, {"db", "files", false},    {"a/b", "b", false},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(te::paths_overlap(r.a, r.b), r.overlap) << '"' << r.a << "\" vs \"" << r.b << '"';
    EXPECT_EQ(te::paths_overlap(r.b, r.a), r.overlap) << '"' << r.b << "\" vs \"" << r.a << '"';
  }
  static_assert(te::paths_overlap("db", "db/users") && !te::paths_overlap("db", "dbx"));
}

TEST(Paths, Validity) {
  for (const char* ok : {"", "db", "db/users", "a/b/c", "vt::db/vt::users"}) EXPECT_TRUE(te::is_valid_resource_path(ok)) << ok;
  for (const char* bad : {"/", "/db", "db/", "db//users", "//"}) EXPECT_FALSE(te::is_valid_resource_path(bad)) << bad;
}

TEST(Targets, OnlyEqualTargetsOfTheSameResourceOverlap) {
  EXPECT_TRUE(te::accesses_overlap(acc("files", access_mode::write, "a.txt"), acc("files", access_mode::write, "a.txt")));
  EXPECT_FALSE(te::accesses_overlap(acc("files", access_mode::write, "a.txt"), acc("files", access_mode::write, "b.txt")));
  // No target = the whole resource.
  EXPECT_TRUE(te::accesses_overlap(acc("files", access_mode::write), acc("files", access_mode::read, "b.txt")));
  EXPECT_TRUE(te::accesses_overlap(acc("files", access_mode::read, "a.txt"), acc("files", access_mode::write)));
  // Targets are compared only on the same resource: a target of the parent overlaps the child.
  EXPECT_TRUE(te::accesses_overlap(acc("files", access_mode::write, "a.txt"), acc("files/tmp", access_mode::read, "b.txt")));
  // Disjoint resources never overlap, whatever the targets.
  EXPECT_FALSE(te::accesses_overlap(acc("files", access_mode::write, "a"), acc("mail", access_mode::write, "a")));
}

TEST(Targets, ConflictsPerTarget) {
  const call_description edit_a = te::describe_runtime("edit", {}, {acc("files", access_mode::write, "a.txt")});
  const call_description edit_b = te::describe_runtime("edit", {}, {acc("files", access_mode::write, "b.txt")});
  const call_description read_a = te::describe_runtime("read", {}, {acc("files", access_mode::read, "a.txt")});
  const call_description list = te::describe_runtime("ls", {}, {acc("files", access_mode::read)});
  EXPECT_FALSE(te::conflicts(edit_a, edit_b)) << "edits of different files run together";
  EXPECT_TRUE(te::conflicts(edit_a, edit_a)) << "two edits of the same file do not";
  EXPECT_TRUE(te::conflicts(edit_a, read_a));
  EXPECT_TRUE(te::conflicts(edit_b, list)) << "a whole-resource read meets every target";
  EXPECT_FALSE(te::conflicts(read_a, list));
}

TEST(Conflicts, DefaultDescriptionIsUnknownAndExclusive) {
  const call_description unknown;
  EXPECT_TRUE(unknown.exclusive);
  const call_description nothing = te::describe_runtime("ping", {effect::network}, {});
  EXPECT_FALSE(nothing.exclusive);
  EXPECT_TRUE(nothing.accesses.empty());
  EXPECT_TRUE(te::conflicts(unknown, nothing));
  EXPECT_TRUE(te::conflicts(nothing, unknown));
  EXPECT_FALSE(te::conflicts(nothing, nothing));
}

// ------------------------------------------------------------------ describe_runtime: the root rules

TEST(DescribeRuntime, UnscopedFlagsMeanTheRoot) {
  const auto r = te::describe_runtime("r", {effect::read}, {});
  EXPECT_EQ(r.accesses, (std::vector{acc("", access_mode::read)}));
  const auto w = te::describe_runtime("w", {effect::write}, {});
  EXPECT_EQ(w.accesses, (std::vector{acc("", access_mode::write)}));
  const auto rw = te::describe_runtime("rw", {effect::read, effect::write}, {acc("db", access_mode::read)});
  EXPECT_EQ(rw.accesses, (std::vector{acc("db", access_mode::read), acc("", access_mode::write)}));
  EXPECT_EQ(rw.name, "rw");
}

TEST(DescribeRuntime, ScopedAccessesExplainTheirFlags) {
  const auto r = te::describe_runtime("r", {effect::read}, {acc("db", access_mode::read)});
  EXPECT_EQ(r.accesses, (std::vector{acc("db", access_mode::read)}));
  const auto w = te::describe_runtime("w", {effect::write}, {acc("log", access_mode::append)});
  EXPECT_EQ(w.accesses, (std::vector{acc("log", access_mode::append)})) << "an append explains `write`";
  // Scoped accesses add their implied flags.
  const auto implied = te::describe_runtime("i", {}, {acc("db", access_mode::read), acc("log", access_mode::append)});
  EXPECT_EQ(implied.effects, (effect_set{effect::read, effect::write}));
  EXPECT_FALSE(implied.exclusive);
}

TEST(DescribeRuntime, DestructiveWithoutAScopedWriteWritesTheRoot) {
  const auto d = te::describe_runtime("d", {effect::destructive}, {});
  EXPECT_EQ(d.accesses, (std::vector{acc("", access_mode::write)}));
  EXPECT_EQ(d.effects, effect_set{effect::destructive});
  const auto da = te::describe_runtime("da", {effect::destructive}, {acc("log", access_mode::append)});
  EXPECT_EQ(da.accesses, (std::vector{acc("log", access_mode::append), acc("", access_mode::write)}))
      << "an append does not confine a destruction";
  const auto dw = te::describe_runtime("dw", {effect::destructive}, {acc("db", access_mode::write)});
  EXPECT_EQ(dw.accesses, (std::vector{acc("db", access_mode::write)}));
}

TEST(DescribeRuntime, NothingDeclaredIsUnknown) {
  const auto u = te::describe_runtime("mystery", {}, {});
  EXPECT_TRUE(u.exclusive);
  EXPECT_TRUE(u.effects.empty());
  EXPECT_TRUE(u.accesses.empty());
  EXPECT_EQ(u.name, "mystery");
}

// ------------------------------------------------------------------ describe<T>

TEST(Describe, CopiesFlagsAccessesAndExclusiveness) {
  const auto d = te::describe<vt::read_orders_append_audit>();
  EXPECT_EQ(d.name, "vt::read_orders_append_audit");
  EXPECT_EQ(d.effects, (effect_set{effect::read, effect::write}));
  EXPECT_FALSE(d.exclusive);
  EXPECT_EQ(d.accesses, (std::vector{acc("vt::db/vt::orders", access_mode::read), acc("vt::audit", access_mode::append)}));
  EXPECT_EQ(te::describe<const vt::write_report&>("report_writer").accesses,
            (std::vector{acc("files/report", access_mode::write)}));
  EXPECT_EQ(te::describe<const vt::write_report&>("report_writer").name, "report_writer");
  const auto u = te::describe<vt::undeclared>();
  EXPECT_TRUE(u.exclusive);
  EXPECT_TRUE(u.effects.empty());
  const auto d2 = te::describe<vt::drop_unscoped>();
  EXPECT_EQ(d2.accesses, (std::vector{acc("files", access_mode::read), acc("", access_mode::write)}));
}

namespace {
template <class... Tools>
struct described {
  static std::vector<call_description> all() { return {te::describe<Tools>()...}; }
  static constexpr std::array<std::array<bool, sizeof...(Tools)>, sizeof...(Tools)> compile_time =
      vt::pairwise<Tools...>::value;
  static constexpr std::array<effect_set, sizeof...(Tools)> flags{te::side_effects_v<Tools>...};
};
using varied = vt::with_all_tools<described>;

// The same tools written as a runtime manifest would give them: flags and
// scoped accesses by path (written by hand, not taken from the types).
std::vector<call_description> manifest() {
  using M = access_mode;
  return {
      te::describe_runtime("read_users", {effect::idempotent}, {acc("vt::db/vt::users", M::read)}),
      te::describe_runtime("read_row", {effect::network}, {acc("vt::db/vt::users/vt::user_row", M::read)}),
      te::describe_runtime("write_row", {effect::idempotent}, {acc("vt::db/vt::users/vt::user_row", M::write)}),
      te::describe_runtime("write_orders", {}, {acc("vt::db/vt::orders", M::write)}),
      te::describe_runtime("append_audit", {}, {acc("vt::audit", M::append)}),
      te::describe_runtime("read_orders_append_audit", {}, {acc("vt::db/vt::orders", M::read), acc("vt::audit", M::append)}),
      te::describe_runtime("read_audit", {}, {acc("vt::audit", M::read)}),
      te::describe_runtime("read_all", {effect::read, effect::network}, {}),
      te::describe_runtime("write_all", {effect::write}, {}),
      te::describe_runtime("net_only", {effect::external, effect::network}, {}),
      te::describe_runtime("undeclared", {}, {}),
      te::describe_runtime("drop_orders", {effect::destructive}, {acc("vt::db/vt::orders", M::write)}),
      te::describe_runtime("drop_unscoped", {effect::destructive}, {acc("files", M::read)}),
      te::describe_runtime("write_report", {}, {acc("files/report", M::write)}),
      te::describe_runtime("touch_user", {effect::idempotent},
                           {acc("vt::db/vt::users", M::read), acc("vt::db/vt::users/vt::user_row", M::write)}),
      te::describe_runtime("idempotent_only", {effect::idempotent}, {}),
  };
}
}  // namespace

TEST(Agreement, DescribeGivesTheCompileTimeAnswerForEveryPair) {
  const auto calls = varied::all();
  ASSERT_EQ(calls.size(), vt::tool_count);
  for (std::size_t i = 0; i < vt::tool_count; ++i) {
    EXPECT_EQ(calls[i].effects, varied::flags[i]) << calls[i].name;
    for (std::size_t j = 0; j < vt::tool_count; ++j)
      EXPECT_EQ(te::conflicts(calls[i], calls[j]), varied::compile_time[i][j]) << calls[i].name << " vs " << calls[j].name;
  }
}

TEST(Agreement, AHandWrittenManifestGivesTheCompileTimeAnswerForEveryPair) {
  const auto calls = manifest();
  ASSERT_EQ(calls.size(), vt::tool_count);
  const auto expected = vt::expected_conflicts();
  for (std::size_t i = 0; i < vt::tool_count; ++i) {
    EXPECT_EQ(te::is_parallel_safe(calls[i].effects), te::is_parallel_safe(varied::flags[i])) << calls[i].name;
    for (std::size_t j = 0; j < vt::tool_count; ++j) {
      EXPECT_EQ(te::conflicts(calls[i], calls[j]), varied::compile_time[i][j]) << calls[i].name << " vs " << calls[j].name;
      EXPECT_EQ(te::conflicts(calls[i], calls[j]), expected[i][j]) << calls[i].name << " vs " << calls[j].name;
    }
  }
}

TEST(Agreement, ManifestFlagsEqualTheDeclaredFlags) {
  const auto calls = manifest();
  for (std::size_t i = 0; i < vt::tool_count; ++i) EXPECT_EQ(calls[i].effects, varied::flags[i]) << calls[i].name;
}

}  // namespace call_description_test_ns
