// The code of README.md, compiled and run so that the README cannot drift.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/dispatch.hpp>  // as in the README: declarations and the dispatcher (with retry and approval)
namespace te = tool_effects;

// --- README: the declaration -------------------------------------------------
struct user_db {};                                   // a resource...
struct users : te::resource<user_db> {};             // ...and one inside it
struct audit_log {};

struct fetch_user {
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
  std::string operator()(int id) const { return "user " + std::to_string(id); }
};
struct fetch_and_touch_user {                        // "fetch" that also updates last-seen
  using side_effects = te::effects<te::reads<users>, te::writes<users>>;
  std::string operator()(int id) const { return "touched " + std::to_string(id); }
};
struct record_audit {
  using side_effects = te::effects<te::appends<audit_log>>;
  void operator()(std::string event) const { (void)event; }
};

static_assert(te::ParallelSafe<fetch_user> && te::RetrySafe<fetch_user>);
static_assert(!te::RetrySafe<fetch_and_touch_user>);            // never retried automatically
static_assert(te::ParallelBatch<fetch_user, record_audit, record_audit>);
static_assert(!te::ParallelBatch<fetch_user, fetch_and_touch_user>);
static_assert(std::is_same_v<te::first_conflict_t<fetch_user, fetch_and_touch_user>,
                             te::conflicting_pair<fetch_user, fetch_and_touch_user, users, 0, 1>>);

// --- README: the dispatcher ----------------------------------------------------
struct timeout_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct delete_account {
  using side_effects = te::effects<te::writes<user_db>, te::destructive>;
  std::string operator()(int id) const { return "deleted " + std::to_string(id); }
};
static_assert(te::Destructive<delete_account>);

int main() {
  int asked = 0;
  auto ask_operator = [&](const te::confirmation_request&) {
    ++asked;
    return te::confirmation::approve;
  };

  boost::asio::thread_pool pool(4);
  auto options = te::run_options{}
                     .with(te::retry_policy{.max_attempts = 3, .is_transient = te::transient_on<timeout_error>()})
                     .with(te::approver(ask_operator));              // required: delete_account is Destructive
  auto [user, touched, deleted] = te::run_plan(pool, options,
      te::call(fetch_user{}, 42), te::call(fetch_and_touch_user{}, 42), te::call(delete_account{}, 99));

  std::printf("%s | %s | %s | operator asked %d time(s)\n", user.value().c_str(), touched.value().c_str(),
              deleted.value().c_str(), asked);
  return user.value() == "user 42" && touched.value() == "touched 42" && deleted.value() == "deleted 99" && asked == 1
             ? 0
             : 1;
}
