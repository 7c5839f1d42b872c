// static_assert suite: the type-level truths of the core (issue 2) — the
// effect vocabulary in constant expressions, effects<...>, the three
// declaration routes, cv/ref, the concepts and their conservative answers.
// Compiled, never run: a false truth is a build failure.
#include <tool_effects/rules.hpp>
#include <tool_effects/side_effects.hpp>
#include <tool_effects/tags.hpp>

#include <type_traits>

namespace {
namespace te = tool_effects;
using te::effect;
using te::effect_set;
using te::effects;
using te::side_effect_class;

// ---------------------------------------------------------------- vocabulary
static_assert(te::to_string(effect::read) == "read" && te::to_string(effect::network) == "network");
static_assert(te::try_parse_effect("destructive") == effect::destructive);
static_assert(!te::try_parse_effect("Destructive").has_value());
static_assert(effect_set{effect::read, effect::read}.size() == 1);
static_assert((effect_set{effect::read} | effect_set{effect::write}) == effect_set{effect::read, effect::write});
static_assert((effect_set{effect::read, effect::write} & effect_set{effect::write}) == effect_set{effect::write});
static_assert(effect_set::from_bits(0xff).size() == 7);
static_assert(*effect_set{effect::network, effect::write}.begin() == effect::write);  // declaration order
static_assert(te::try_parse_effect_set("network , read") == effect_set{effect::read, effect::network});

// ---------------------------------------------------------------- effects<...>
static_assert(effects<>::value.empty() && effects<>::exclusive);
static_assert(effects<te::read, te::network>::value == effect_set{effect::read, effect::network});
static_assert(!effects<te::read, te::network>::exclusive);
static_assert(effects<te::read, te::read>::value == effect_set{effect::read});
static_assert(effects<te::read>::accesses.size() == 1);   // the root
static_assert(effects<te::network>::accesses.size() == 0);
static_assert(effects<te::destructive>::accesses.size() == 1);  // writes everything
static_assert(effects<te::destructive>::accesses[0].mode == te::access_mode::write);
static_assert(te::EffectTag<te::read> && te::EffectTag<te::idempotent>);
static_assert(!te::EffectTag<int> && !te::EffectTag<effect_set>);
static_assert(te::EffectsList<effects<>> && !te::EffectsList<te::read>);

// ---------------------------------------------------------------- routes
struct search {
  using side_effects = effects<te::read, te::network>;
};
struct upsert {
  using side_effects = effects<te::write, te::idempotent>;
};
struct wipe {
  using side_effects = effects<te::destructive, te::idempotent>;
};
struct send_mail {};  // specialised below
struct plain {};
struct empty_decl {
  using side_effects = effects<>;
};
constexpr int fetch(int id) { return id; }
using tagged_fetch = decltype(te::tag<te::read, te::idempotent>(&fetch));
}  // namespace

template <>
struct tool_effects::side_effects_of<send_mail> {
  using type = effects<external, network>;
};

namespace {
static_assert(std::is_same_v<te::side_effects_of_t<search>, effects<te::read, te::network>>);
static_assert(std::is_same_v<te::side_effects_of_t<send_mail>, effects<te::external, te::network>>);
static_assert(std::is_same_v<te::side_effects_of_t<tagged_fetch>, effects<te::read, te::idempotent>>);
static_assert(std::is_same_v<te::side_effects_of_t<plain>, effects<>>);

static_assert(te::DeclaresSideEffects<search> && te::DeclaresSideEffects<send_mail>);
static_assert(te::DeclaresSideEffects<tagged_fetch> && te::DeclaresSideEffects<empty_decl>);
static_assert(!te::DeclaresSideEffects<plain> && !te::DeclaresSideEffects<int>);

// cv/ref see the unqualified declaration
static_assert(std::is_same_v<te::side_effects_of_t<const search&>, te::side_effects_of_t<search>>);
static_assert(std::is_same_v<te::side_effects_of_t<volatile send_mail&&>, te::side_effects_of_t<send_mail>>);
static_assert(std::is_same_v<te::side_effects_of_t<const tagged_fetch>, te::side_effects_of_t<tagged_fetch>>);
static_assert(te::DeclaresSideEffects<const send_mail&> && !te::DeclaresSideEffects<const plain&>);
static_assert(te::ParallelSafe<const search&> && te::RetrySafe<search&&>);

// ---------------------------------------------------------------- concepts and classes
static_assert(te::ParallelSafe<search> && te::RetrySafe<search> && !te::Destructive<search>);
static_assert(!te::ParallelSafe<upsert> && te::RetrySafe<upsert> && !te::Destructive<upsert>);
static_assert(!te::ParallelSafe<wipe> && !te::RetrySafe<wipe> && te::Destructive<wipe>);
static_assert(!te::ParallelSafe<send_mail> && !te::RetrySafe<send_mail>);
static_assert(te::ParallelSafe<tagged_fetch> && te::RetrySafe<tagged_fetch>);
static_assert(te::side_effect_class_v<search> == side_effect_class::none);
static_assert(te::side_effect_class_v<upsert> == side_effect_class::idempotent);
static_assert(te::side_effect_class_v<wipe> == side_effect_class::non_idempotent);
static_assert(te::side_effect_class_v<send_mail> == side_effect_class::non_idempotent);

// undeclared / empty = unknown = conservative
static_assert(te::side_effects_v<plain>.empty() && te::side_effects_v<empty_decl>.empty());
static_assert(!te::ParallelSafe<plain> && !te::RetrySafe<plain> && !te::Destructive<plain>);
static_assert(!te::ParallelSafe<empty_decl> && !te::RetrySafe<empty_decl>);
static_assert(te::side_effect_class_v<plain> == side_effect_class::non_idempotent);
static_assert(te::accesses_v<plain>.exclusive && te::accesses_v<empty_decl>.exclusive);

// concepts constrain overloads: the most specific constraint wins
template <class T>
constexpr int route(const T&) { return 0; }
template <te::ParallelSafe T>
constexpr int route(const T&) { return 1; }
static_assert(route(search{}) == 1 && route(upsert{}) == 0 && route(plain{}) == 0);

// tagged: callable in constant expressions, same declaration through get()
static_assert(te::tag<te::read>(&fetch)(7) == 7);
static_assert(te::tag<te::read>(&fetch).get() == &fetch);
static_assert(std::is_same_v<tagged_fetch::value_type, int (*)(int)>);
}  // namespace
