// Declaring effects: the three routes of side_effects_of (nested alias,
// specialisation, tag()), cv/ref-qualified tools, the `tagged` wrapper's
// call forwarding, and undeclared = conservative. Issue 2, "Declaring effects".
#include <tool_effects/side_effects.hpp>
#include <tool_effects/text.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace declaration_test_ns {

namespace te = tool_effects;
using te::effect;
using te::effect_set;
using te::effects;

namespace app {
// Route 1: nested alias.
struct search {
  using side_effects = effects<te::read, te::network>;
};
struct upsert {
  using side_effects = effects<te::write, te::idempotent>;
};
struct purge {
  using side_effects = effects<te::destructive, te::idempotent>;
};
// Declared, but with nothing in it: unknown.
struct declared_empty {
  using side_effects = effects<>;
};
// Inherits its base's nested alias.
struct search_derived : search {};
// Not declared at all.
struct plain {
  int operator()(int x) const { return x; }
};
}  // namespace app

namespace vendor {
// Route 2: a type we "cannot edit".
struct mailer {
  void send() {}
};
// Has a nested alias AND a specialisation: the specialisation wins.
struct both_ways {
  using side_effects = effects<te::write>;
};
}  // namespace vendor

}  // namespace declaration_test_ns

template <>
struct tool_effects::side_effects_of<declaration_test_ns::vendor::mailer> {
  using type = effects<external, network>;
};
template <>
struct tool_effects::side_effects_of<declaration_test_ns::vendor::both_ways> {
  using type = effects<read>;
};

namespace declaration_test_ns {

namespace {

int twice(int x) { return 2 * x; }
int twice_noexcept(int x) noexcept { return 2 * x; }

// Reports which overload (value category of the callable) was used.
enum class called { lvalue, const_lvalue, rvalue, const_rvalue };
struct category_probe {
  called operator()() & { return called::lvalue; }
  called operator()() const& { return called::const_lvalue; }
  called operator()() && { return called::rvalue; }
  called operator()() const&& { return called::const_rvalue; }
};

struct may_throw {
  int operator()(int) const { return 1; }
};
struct never_throws {
  int operator()(int) const noexcept { return 1; }
};

struct counter {
  int value = 0;
  int bump(int by) {
    value += by;
    return value;
  }
  int peek() const noexcept { return value; }
};

template <class T>
constexpr bool declares = te::DeclaresSideEffects<T>;

}  // namespace

// ---------------------------------------------------------------- the three routes

TEST(Routes, NestedAlias) {
  EXPECT_TRUE(declares<app::search>);
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<app::search>, effects<te::read, te::network>>));
  EXPECT_EQ(te::side_effects_v<app::search>, (effect_set{effect::read, effect::network}));
  EXPECT_EQ(te::side_effect_class_v<app::search>, te::side_effect_class::none);
  EXPECT_TRUE(te::ParallelSafe<app::search>);
  EXPECT_TRUE(te::RetrySafe<app::search>);
  EXPECT_FALSE(te::Destructive<app::search>);

  EXPECT_EQ(te::side_effect_class_v<app::upsert>, te::side_effect_class::idempotent);
  EXPECT_FALSE(te::ParallelSafe<app::upsert>);
  EXPECT_TRUE(te::RetrySafe<app::upsert>);

  EXPECT_EQ(te::side_effect_class_v<app::purge>, te::side_effect_class::non_idempotent);
  EXPECT_TRUE(te::Destructive<app::purge>);
  EXPECT_FALSE(te::RetrySafe<app::purge>);
}

TEST(Routes, NestedAliasIsInheritedByDerivedTools) {
  EXPECT_TRUE(declares<app::search_derived>);
  EXPECT_EQ(te::side_effects_v<app::search_derived>, te::side_effects_v<app::search>);
}

TEST(Routes, Specialisation) {
  EXPECT_TRUE(declares<vendor::mailer>);
  EXPECT_EQ(te::side_effects_v<vendor::mailer>, (effect_set{effect::external, effect::network}));
  EXPECT_EQ(te::side_effect_class_v<vendor::mailer>, te::side_effect_class::non_idempotent);
  EXPECT_FALSE(te::ParallelSafe<vendor::mailer>);
  EXPECT_FALSE(te::RetrySafe<vendor::mailer>);
}

TEST(Routes, SpecialisationTakesPrecedenceOverNestedAlias) {
  EXPECT_EQ(te::side_effects_v<vendor::both_ways>, effect_set{effect::read});
}

TEST(Routes, TagOnALambda) {
  auto fetch = te::tag<te::read, te::idempotent>([](int id) { return id + 1; });
  using T = decltype(fetch);
  EXPECT_TRUE(declares<T>);
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<T>, effects<te::read, te::idempotent>>));
  EXPECT_EQ(te::side_effects_v<T>, (effect_set{effect::read, effect::idempotent}));
  EXPECT_TRUE(te::ParallelSafe<T>);
  EXPECT_EQ(fetch(41), 42);
}

TEST(Routes, TagOnAFunctionPointer) {
  auto a = te::tag<te::write>(twice);   // function decays to a pointer
  auto b = te::tag<te::write>(&twice);  // explicit pointer: the same type
  EXPECT_TRUE((std::is_same_v<decltype(a), decltype(b)>));
  EXPECT_TRUE((std::is_same_v<decltype(a)::value_type, int (*)(int)>));
  EXPECT_EQ(a(4), 8);
  EXPECT_EQ(b.get(), &twice);
  EXPECT_FALSE(te::ParallelSafe<decltype(a)>);
}

TEST(Routes, TagIsUsableInConstantExpressions) {
  static constexpr auto doubled = te::tag<te::read>([](int x) { return 2 * x; });
  static_assert(doubled(21) == 42);
  static_assert(te::ParallelSafe<decltype(doubled)>);
  EXPECT_EQ(doubled(1), 2);
}

// ---------------------------------------------------------------- cv / ref

template <class T>
void expect_same_declaration_for_every_qualification() {
  using decl = te::side_effects_of_t<T>;
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<const T>, decl>));
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<volatile T>, decl>));
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<const volatile T>, decl>));
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<T&>, decl>));
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<const T&>, decl>));
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<T&&>, decl>));
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<const T&&>, decl>));
  EXPECT_EQ(te::DeclaresSideEffects<const T&>, te::DeclaresSideEffects<T>);
  EXPECT_EQ(te::ParallelSafe<const T&>, te::ParallelSafe<T>);
  EXPECT_EQ(te::RetrySafe<T&&>, te::RetrySafe<T>);
  EXPECT_EQ(te::Destructive<volatile T&>, te::Destructive<T>);
  EXPECT_EQ(te::side_effect_class_v<const T&>, te::side_effect_class_v<T>);
}

TEST(Qualifiers, EveryRouteSeesTheUnqualifiedDeclaration) {
  expect_same_declaration_for_every_qualification<app::search>();
  expect_same_declaration_for_every_qualification<app::purge>();
  expect_same_declaration_for_every_qualification<vendor::mailer>();
  expect_same_declaration_for_every_qualification<decltype(te::tag<te::read>(twice))>();
  expect_same_declaration_for_every_qualification<app::plain>();
  EXPECT_TRUE(declares<const vendor::mailer&>);
  EXPECT_FALSE(declares<const app::plain&>);
}

// ---------------------------------------------------------------- undeclared = conservative

template <class T>
void expect_conservative() {
  EXPECT_TRUE(te::side_effects_v<T>.empty());
  EXPECT_EQ(te::side_effect_class_v<T>, te::side_effect_class::non_idempotent);
  EXPECT_FALSE(te::ParallelSafe<T>);
  EXPECT_FALSE(te::RetrySafe<T>);
  EXPECT_FALSE(te::Destructive<T>);
  EXPECT_TRUE(te::accesses_v<T>.exclusive);
  EXPECT_EQ(te::accesses_v<T>.size(), 0u);
}

TEST(Undeclared, IsUnknownAndConservative) {
  EXPECT_FALSE(declares<app::plain>);
  EXPECT_TRUE((std::is_same_v<te::side_effects_of_t<app::plain>, effects<>>));
  expect_conservative<app::plain>();
  expect_conservative<int>();
  expect_conservative<int (*)(int)>();
  auto lambda = [] {};
  EXPECT_FALSE(declares<decltype(lambda)>);
  expect_conservative<decltype(lambda)>();
}

TEST(Undeclared, AnEmptyDeclarationIsDeclaredButStillUnknown) {
  EXPECT_TRUE(declares<app::declared_empty>);
  expect_conservative<app::declared_empty>();
  expect_conservative<decltype(te::tag<>(twice))>();
}

// ---------------------------------------------------------------- tagged: forwarding

TEST(Tagged, ForwardsLvalueArgumentsByReference) {
  auto inc = te::tag<te::write>([](int& x) { ++x; });
  int n = 1;
  inc(n);
  EXPECT_EQ(n, 2);
  EXPECT_FALSE((std::is_invocable_v<decltype(inc)&, int>)) << "an rvalue cannot bind to int&";
}

TEST(Tagged, ForwardsRvalueArgumentsAsRvalues) {
  auto sink = te::tag<te::write>([](std::unique_ptr<int>&& p) { return std::unique_ptr<int>(std::move(p)); });
  auto p = std::make_unique<int>(7);
  const auto q = sink(std::move(p));
  EXPECT_EQ(p, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(*q, 7);
  EXPECT_FALSE((std::is_invocable_v<decltype(sink)&, std::unique_ptr<int>&>));

  auto by_value = te::tag<te::write>([](std::unique_ptr<int> x) { return *x; });
  EXPECT_EQ(by_value(std::make_unique<int>(3)), 3);
}

TEST(Tagged, PreservesTheValueCategoryOfTheWrappedCallable) {
  auto t = te::tag<te::read>(category_probe{});
  const auto ct = te::tag<te::read>(category_probe{});
  EXPECT_EQ(t(), called::lvalue);
  EXPECT_EQ(ct(), called::const_lvalue);
  EXPECT_EQ(std::move(t)(), called::rvalue);
  EXPECT_EQ(std::move(ct)(), called::const_rvalue);
}

TEST(Tagged, PreservesReferenceResults) {
  int storage = 5;
  auto ref = te::tag<te::read>([&storage]() -> int& { return storage; });
  static_assert(std::is_same_v<decltype(ref()), int&>);
  ref() = 9;
  EXPECT_EQ(storage, 9);
  auto id = te::tag<te::read>([](std::string&& s) -> std::string&& { return std::move(s); });
  static_assert(std::is_same_v<decltype(id(std::string{})), std::string&&>);
  EXPECT_EQ(id(std::string("x")), "x");
}

TEST(Tagged, PropagatesNoexcept) {
  auto throwing = te::tag<te::read>(may_throw{});
  auto nothrow = te::tag<te::read>(never_throws{});
  static_assert(!noexcept(throwing(1)));
  static_assert(noexcept(nothrow(1)));
  static_assert(!noexcept(std::as_const(throwing)(1)));
  static_assert(noexcept(std::move(nothrow)(1)));
  auto fp = te::tag<te::read>(twice_noexcept);
  // A pointer to a noexcept function keeps its noexcept in the type (C++17).
  static_assert(noexcept(fp(1)));
  auto fp2 = te::tag<te::read>(twice);
  static_assert(!noexcept(fp2(1)));
  EXPECT_EQ(throwing(0) + nothrow(0) + fp(1) + fp2(1), 6);
}

TEST(Tagged, TagItselfIsNoexceptWhenTheCopyIs) {
  const std::string s = "abc";
  static_assert(noexcept(te::tag<te::read>(twice)));
  static_assert(noexcept(te::tag<te::read>(std::string())));  // moves
  static_assert(!noexcept(te::tag<te::read>(s)));             // copies a std::string
  EXPECT_EQ(te::tag<te::read>(s).get(), "abc");
}

TEST(Tagged, GetReturnsTheWrappedValueInEveryCategory) {
  auto t = te::tag<te::write>(counter{});
  static_assert(std::is_same_v<decltype(t.get()), counter&>);
  static_assert(std::is_same_v<decltype(std::as_const(t).get()), const counter&>);
  static_assert(std::is_same_v<decltype(std::move(t).get()), counter&&>);
  static_assert(std::is_same_v<decltype(std::move(std::as_const(t)).get()), const counter&&>);
  t.get().bump(3);
  EXPECT_EQ(std::as_const(t).get().peek(), 3);
  counter moved = std::move(t).get();
  EXPECT_EQ(moved.value, 3);
}

TEST(Tagged, DefaultConstructibleWhenTheWrappedValueIs) {
  using T = te::tagged<effects<te::read>, counter>;
  T t;
  EXPECT_EQ(t.get().value, 0);
  EXPECT_TRUE((std::is_same_v<T::side_effects, effects<te::read>>));
}

TEST(Tagged, MemberFunctionPointers) {
  auto bump = te::tag<te::write>(&counter::bump);
  auto peek = te::tag<te::read>(&counter::peek);
  counter c;
  EXPECT_EQ(bump(c, 2), 2);         // object by reference
  EXPECT_EQ(bump(&c, 3), 5);        // object by pointer
  EXPECT_EQ(peek(std::as_const(c)), 5);
  EXPECT_EQ(peek(counter{7}), 7);   // rvalue object
  static_assert(noexcept(peek(c)));
  static_assert(!noexcept(bump(c, 1)));
  EXPECT_FALSE((std::is_invocable_v<decltype(bump)&, const counter&, int>)) << "non-const member on const object";
  EXPECT_TRUE(te::ParallelSafe<decltype(peek)>);
  EXPECT_FALSE(te::ParallelSafe<decltype(bump)>);
}

TEST(Tagged, DataMemberPointers) {
  auto value = te::tag<te::read>(&counter::value);
  counter c{4};
  static_assert(std::is_same_v<decltype(value(c)), int&>);
  static_assert(std::is_same_v<decltype(value(std::as_const(c))), const int&>);
  static_assert(std::is_same_v<decltype(value(std::move(c))), int&&>);
  static_assert(std::is_same_v<decltype(value(&c)), int&>);
  value(c) = 8;
  EXPECT_EQ(c.value, 8);
  EXPECT_EQ(value(&c), 8);
}

TEST(Tagged, WrapsNonCallableValues) {
  // "Any value" may carry a declaration; it is just not callable.
  auto handle = te::tag<te::read, te::network>(std::string("https://example.invalid"));
  EXPECT_FALSE((std::is_invocable_v<decltype(handle)&>));
  EXPECT_EQ(handle.get(), "https://example.invalid");
  EXPECT_TRUE(te::ParallelSafe<decltype(handle)>);
}

}  // namespace declaration_test_ns
