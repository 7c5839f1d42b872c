// Quick tour: declare a handful of tools the three ways, and print what the
// library derives from each declaration — its effects, its side-effect class,
// and whether it may run in parallel, be retried, or needs confirmation.
// Run by ./scripts/demo (until the agent-turn demo exists) and by the test
// suite (it must exit 0).
#include <tool_effects/composite.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/side_effects.hpp>
#include <tool_effects/text.hpp>

#include <iomanip>
#include <iostream>
#include <string>
#include <string_view>

namespace te = tool_effects;

// ---------------------------------------------------------------- resources
struct user_db {};
struct users : te::resource<user_db> {};
struct preferences : te::resource<user_db> {};

// ---------------------------------------------------------------- route 1: a nested alias
struct search_web {
  using side_effects = te::effects<te::read, te::network>;  // unscoped read: reads "everything"
  std::string operator()(std::string_view query) const { return "results for " + std::string(query); }
};
struct fetch_user {
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
};
struct upsert_preferences {
  using side_effects = te::effects<te::writes<preferences>, te::idempotent>;
};
struct delete_account {
  using side_effects = te::effects<te::destructive, te::writes<users>>;
};

// ---------------------------------------------------------------- route 2: a specialisation
namespace mail_sdk {  // a third-party type we cannot edit
struct send_email {
  void operator()(std::string_view to, std::string_view body) const;
};
}  // namespace mail_sdk
template <>
struct tool_effects::side_effects_of<mail_sdk::send_email> {
  using type = effects<external, network>;
};

// ---------------------------------------------------------------- route 3: tag() on a lambda
inline const auto lookup_weather =
    te::tag<te::read, te::network, te::expensive>([](std::string_view city) { return std::string(city) + ": 21C"; });

// ---------------------------------------------------------------- derived and undeclared tools
struct onboard_user : te::composite<fetch_user, upsert_preferences> {};  // runs both, in sequence
struct legacy_tool {};                                                    // declares nothing

// ---------------------------------------------------------------- truths checked by the compiler
static_assert(te::ParallelSafe<search_web> && te::RetrySafe<search_web>);
static_assert(!te::ParallelSafe<upsert_preferences> && te::RetrySafe<upsert_preferences>);
static_assert(te::Destructive<delete_account> && !te::RetrySafe<delete_account>);
static_assert(te::DeclaresSideEffects<mail_sdk::send_email> && !te::RetrySafe<mail_sdk::send_email>);
static_assert(te::ParallelSafe<decltype(lookup_weather)>);
static_assert(te::side_effect_class_v<onboard_user> == te::side_effect_class::idempotent);
static_assert(!te::DeclaresSideEffects<legacy_tool> && !te::ParallelSafe<legacy_tool>);
static_assert(te::ParallelBatch<fetch_user, upsert_preferences, mail_sdk::send_email>);  // disjoint resources
static_assert(!te::ParallelBatch<search_web, upsert_preferences>);  // "everything" is read while prefs change

namespace {
const char* yes_no(bool b) { return b ? "yes" : "no"; }

template <class Tool>
void row(std::string_view name, std::string_view route) {
  const te::effect_set s = te::side_effects_v<Tool>;
  std::cout << std::left << std::setw(20) << name << std::setw(16) << route << std::setw(26)
            << (s.empty() ? std::string("(unknown)") : te::to_string(s)) << std::setw(16) << te::side_effect_class_v<Tool>
            << std::setw(10) << yes_no(te::ParallelSafe<Tool>) << std::setw(8) << yes_no(te::RetrySafe<Tool>)
            << (te::Destructive<Tool> ? "confirm first" : "-") << '\n';
}
}  // namespace

int main() {
  std::cout << std::left << std::setw(20) << "tool" << std::setw(16) << "declared by" << std::setw(26) << "effects"
            << std::setw(16) << "class" << std::setw(10) << "parallel" << std::setw(8) << "retry"
            << "destructive\n"
            << std::string(107, '-') << '\n';
  row<search_web>("search_web", "nested alias");
  row<fetch_user>("fetch_user", "nested alias");
  row<upsert_preferences>("upsert_preferences", "nested alias");
  row<delete_account>("delete_account", "nested alias");
  row<mail_sdk::send_email>("send_email", "specialisation");
  row<decltype(lookup_weather)>("lookup_weather", "tag(lambda)");
  row<onboard_user>("onboard_user", "composite");
  row<legacy_tool>("legacy_tool", "nothing");

  // A tagged lambda is still the lambda.
  std::cout << "\nlookup_weather(\"Oslo\") -> " << lookup_weather("Oslo") << '\n';
  std::cout << "search_web{}(\"c++ concepts\") -> " << search_web{}("c++ concepts") << '\n';
  return lookup_weather("Oslo") == "Oslo: 21C" ? 0 : 1;
}
