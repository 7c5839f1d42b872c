// run_parallel requires ParallelBatch: a batch where a later call writes the users table that an earlier call
// reads does not compile, and the diagnostic names the pair, the resource and the positions.
// expected-error: ParallelBatch
// expected-error: conflicting_pair<.*fetch_user.*update_user.*users_table.*0.*1
// expected-error(gcc): no matching function for call to 'run_parallel
// expected-error(clang): no matching function for call to 'run_parallel'
#include <boost/asio/thread_pool.hpp>

#include <tool_effects/dispatch.hpp>

namespace te = tool_effects;

struct user_db : te::resource<> {};
struct users_table : te::resource<user_db> {};

struct fetch_user {
  using side_effects = te::effects<te::reads<users_table>, te::idempotent>;
  int operator()(int id) const { return id; }
};
struct update_user {
  using side_effects = te::effects<te::writes<users_table>>;
  void operator()(int) const {}
};
struct search_web {
  using side_effects = te::effects<te::network, te::idempotent>;
  int operator()() const { return 0; }
};

int main() {
  boost::asio::thread_pool pool(1);
  // A conflict-free batch is fine:
  auto ok = te::run_parallel(pool, te::call(fetch_user{}, 1), te::call(search_web{}), te::call(fetch_user{}, 2));
  (void)ok;
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  auto bad = te::run_parallel(pool, te::call(fetch_user{}, 1), te::call(update_user{}, 1));
  (void)bad;
#endif
}
