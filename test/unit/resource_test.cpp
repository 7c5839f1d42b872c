// Resources: parents through the `resource<Parent>` base and through a
// `resource_parent` specialisation, names and paths, and `overlaps` through
// the hierarchy. Issue 3, "Resources are user types".
#include <tool_effects/resource.hpp>
#include <tool_effects/tags.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace te = tool_effects;

namespace app {
struct db {};                                     // top level
struct users : te::resource<app::db> {};          // child of db (base route)
struct orders : te::resource<app::db> {};         // sibling of users
struct user_row : te::resource<users> {};         // grandchild of db
struct mailbox {                                  // top level, with a custom name
  static constexpr std::string_view resource_name = "mailbox";
};
struct inbox : te::resource<mailbox> {
  static constexpr std::string_view resource_name = "inbox";
};
}  // namespace app

namespace vendor {
// Types we "cannot edit": their hierarchy is given by trait specialisations.
struct storage {};
struct bucket {};
struct object {};
}  // namespace vendor

template <>
struct tool_effects::resource_parent<vendor::bucket> {
  using type = vendor::storage;
};
template <>
struct tool_effects::resource_parent<vendor::object> {
  using type = vendor::bucket;
};

namespace {
using info = const te::resource_info*;
template <class R>
info of() {
  return te::resource_v<R>;
}
std::string path_of(info r) { return std::string(r->path); }
}  // namespace

TEST(Hierarchy, ParentsThroughTheBaseClass) {
  EXPECT_TRUE((std::is_same_v<te::resource_parent_t<app::db>, te::everything>));
  EXPECT_TRUE((std::is_same_v<te::resource_parent_t<app::users>, app::db>));
  EXPECT_TRUE((std::is_same_v<te::resource_parent_t<app::user_row>, app::users>));
  EXPECT_EQ(of<app::users>()->parent, of<app::db>());
  EXPECT_EQ(of<app::user_row>()->parent, of<app::users>());
  EXPECT_EQ(of<app::db>()->parent, of<te::everything>());
  EXPECT_EQ(of<te::everything>()->parent, nullptr);
}

TEST(Hierarchy, ParentsThroughTraitSpecialisation) {
  EXPECT_TRUE((std::is_same_v<te::resource_parent_t<vendor::object>, vendor::bucket>));
  EXPECT_EQ(of<vendor::object>()->parent, of<vendor::bucket>());
  EXPECT_EQ(of<vendor::bucket>()->parent, of<vendor::storage>());
  EXPECT_EQ(of<vendor::storage>()->parent, of<te::everything>());
}

TEST(Hierarchy, Depths) {
  EXPECT_EQ(of<te::everything>()->depth, 0u);
  EXPECT_EQ(of<app::db>()->depth, 1u);
  EXPECT_EQ(of<app::users>()->depth, 2u);
  EXPECT_EQ(of<app::user_row>()->depth, 3u);
  EXPECT_EQ(of<vendor::object>()->depth, 3u);
}

TEST(Identity, OneValuePerResourceType) {
  EXPECT_EQ(of<app::users>(), of<app::users>());
  EXPECT_NE(of<app::users>(), of<app::orders>());
  static_assert(te::resource_v<app::users>->parent == te::resource_v<app::db>);
  static_assert(te::resource_v<app::users> != te::resource_v<app::orders>);
}

TEST(Names, TypeNameByDefaultOrResourceName) {
  EXPECT_EQ(of<app::db>()->name, "app::db");
  EXPECT_EQ(of<app::users>()->name, "app::users");
  EXPECT_EQ(of<app::mailbox>()->name, "mailbox");
  EXPECT_EQ(of<app::inbox>()->name, "inbox");
  EXPECT_EQ(of<te::everything>()->name, "tool_effects::everything");
}

TEST(Names, PathsJoinNamesBelowTheRoot) {
  EXPECT_EQ(path_of(of<te::everything>()), "");
  EXPECT_EQ(path_of(of<app::db>()), "app::db");
  EXPECT_EQ(path_of(of<app::users>()), "app::db/app::users");
  EXPECT_EQ(path_of(of<app::user_row>()), "app::db/app::users/app::user_row");
  EXPECT_EQ(path_of(of<app::inbox>()), "mailbox/inbox");
  EXPECT_EQ(path_of(of<vendor::object>()), "vendor::storage/vendor::bucket/vendor::object");
  static_assert(te::resource_v<app::inbox>->path == "mailbox/inbox");
}

TEST(Names, HashIsTheHashOfThePath) {
  for (const info r : {of<te::everything>(), of<app::db>(), of<app::user_row>(), of<app::inbox>()})
    EXPECT_EQ(r->hash, te::detail::fnv1a(r->path)) << r->path;
  EXPECT_NE(of<app::users>()->hash, of<app::orders>()->hash);
}

TEST(Overlap, AncestorOrSelf) {
  // (a, b, expected): symmetric, so each pair is checked both ways.
  struct row {
    info a, b;
    bool overlap;
    const char* what;
  };
  const std::vector<row> rows{
      {of<app::users>(), of<app::users>(), true, "self"},
      {of<app::db>(), of<app::users>(), true, "parent/child"},
      {of<app::db>(), of<app::user_row>(), true, "grandparent/grandchild"},
      {of<app::users>(), of<app::user_row>(), true, "parent/child (deeper)"},
      {of<app::users>(), of<app::orders>(), false, "siblings"},
      {of<app::orders>(), of<app::user_row>(), false, "uncle/nephew"},
      {of<app::db>(), of<app::mailbox>(), false, "two top-level resources"},
      {of<app::user_row>(), of<app::inbox>(), false, "different trees"},
      {of<te::everything>(), of<app::user_row>(), true, "root/anything"},
      {of<te::everything>(), of<te::everything>(), true, "root/root"},
      {of<te::everything>(), of<vendor::object>(), true, "root/trait-parented"},
      {of<vendor::storage>(), of<vendor::object>(), true, "trait-parented ancestor"},
      {of<vendor::bucket>(), of<app::users>(), false, "trait tree vs base tree"},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(te::overlaps(r.a, r.b), r.overlap) << r.what;
    EXPECT_EQ(te::overlaps(r.b, r.a), r.overlap) << r.what << " (reversed)";
  }
}

// Two resource types with one path: the same resource at compile time, as
// at runtime (where resources are paths).
namespace twins {
struct cache_a {
  static constexpr std::string_view resource_name = "cache";
};
struct cache_b {
  static constexpr std::string_view resource_name = "cache";
};
struct entries_b : te::resource<cache_b> {
  static constexpr std::string_view resource_name = "entries";
};
}  // namespace twins

TEST(Overlap, SamePathIsSameResource) {
  static_assert(te::overlaps_v<twins::cache_a, twins::cache_b>);
  static_assert(te::overlaps_v<twins::cache_a, twins::entries_b>, "cache_a is an ancestor of cache_b's child");
  static_assert(te::access{te::resource_v<twins::cache_a>, te::access_mode::write} ==
                te::access{te::resource_v<twins::cache_b>, te::access_mode::write});
  EXPECT_TRUE(te::is_ancestor_or_self(of<twins::cache_a>(), of<twins::entries_b>()));
  EXPECT_EQ(te::overlaps(of<twins::cache_a>(), of<twins::cache_b>()),
            te::paths_overlap(of<twins::cache_a>()->path, of<twins::cache_b>()->path))
      << "one rule for both forms";
  EXPECT_FALSE(te::paths_overlap("cache", "cachex"));
  EXPECT_TRUE(te::paths_overlap("", "cache/entries"));
}

TEST(Overlap, TypeLevelFormAgrees) {
  static_assert(te::overlaps_v<app::db, app::user_row>);
  static_assert(te::overlaps_v<app::user_row, app::db>);
  static_assert(!te::overlaps_v<app::users, app::orders>);
  static_assert(te::overlaps_v<te::everything, vendor::object>);
  EXPECT_EQ((te::overlaps_v<app::users, app::orders>), te::overlaps(of<app::users>(), of<app::orders>()));
  EXPECT_TRUE(te::is_ancestor_or_self(of<app::db>(), of<app::user_row>()));
  EXPECT_FALSE(te::is_ancestor_or_self(of<app::user_row>(), of<app::db>()));
}

TEST(Concept, WhatIsAResource) {
  static_assert(te::Resource<app::db>);
  static_assert(te::Resource<vendor::object>);
  static_assert(te::Resource<te::everything>);
  static_assert(!te::Resource<int>);
  static_assert(!te::Resource<const app::db>);
  static_assert(!te::Resource<app::db&>);
  static_assert(!te::Resource<te::read>);  // an effect tag is never a resource
  static_assert(!te::Resource<te::reads<app::db>>);
  SUCCEED() << "checked at compile time";
}
