// Benchmark input (compile time only): a translation unit that declares tools and states static_asserts about
// them, as the README's declaration does, through the light headers only (no Asio). issue 13: the library's
// part of this TU (its time minus an empty TU's) must stay ≤ 0.3 s. Measured by benchmarks/compile_time/cost.py.
#include <string>
#include <type_traits>

#include <tool_effects/conflict.hpp>      // resources, conflicts, ParallelBatch, first_conflict_t
#include <tool_effects/side_effects.hpp>  // effects<...>, tags, ParallelSafe, RetrySafe, Destructive

namespace te = tool_effects;

struct user_db {};
struct users : te::resource<user_db> {};
struct audit_log {};

struct fetch_user {
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
  std::string operator()(int id) const { return "user " + std::to_string(id); }
};
struct fetch_and_touch_user {
  using side_effects = te::effects<te::reads<users>, te::writes<users>>;
  std::string operator()(int id) const { return "touched " + std::to_string(id); }
};
struct record_audit {
  using side_effects = te::effects<te::appends<audit_log>>;
  void operator()(std::string event) const { (void)event; }
};
struct delete_account {
  using side_effects = te::effects<te::writes<user_db>, te::destructive>;
  std::string operator()(int id) const { return "deleted " + std::to_string(id); }
};

static_assert(te::ParallelSafe<fetch_user> && te::RetrySafe<fetch_user>);
static_assert(!te::RetrySafe<fetch_and_touch_user>);
static_assert(te::ParallelBatch<fetch_user, record_audit, record_audit>);
static_assert(!te::ParallelBatch<fetch_user, fetch_and_touch_user>);
static_assert(std::is_same_v<te::first_conflict_t<fetch_user, fetch_and_touch_user>,
                             te::conflicting_pair<fetch_user, fetch_and_touch_user, users, 0, 1>>);
static_assert(te::Destructive<delete_account>);
