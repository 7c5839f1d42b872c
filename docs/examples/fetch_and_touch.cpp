// The bug from the Python package's article: two "fetch" calls were run in
// parallel, but one of them also updated the user's last-seen timestamp, so
// two writes to the same record overlapped. Here the tool says what it
// touches, and the compiler refuses the batch — naming the pair and the
// resource. At runtime we print the same answer through first_conflict_t.
#include <tool_effects/conflict.hpp>
#include <tool_effects/diagnostics.hpp>
#include <tool_effects/side_effects.hpp>

#include <iostream>
#include <string_view>
#include <type_traits>

namespace te = tool_effects;

namespace app {
// Resources: the user table, one of its columns, and an unrelated table.
struct user_db {};
struct users : te::resource<user_db> {};
struct last_seen : te::resource<users> {};  // a column of the user record
struct accounts : te::resource<user_db> {};

struct fetch_user {
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
};
struct fetch_account_status {
  using side_effects = te::effects<te::reads<accounts>, te::idempotent>;
};
// Named like a read; it is not one.
struct fetch_and_touch_user {
  using side_effects = te::effects<te::reads<users>, te::writes<last_seen>>;
};
}  // namespace app

// The two fetches the article parallelised safely:
static_assert(te::ParallelBatch<app::fetch_user, app::fetch_account_status>);
// ...and the one it should not have. A dispatcher constrained on
// ParallelBatch<Calls...> fails to compile here, and the diagnostic shows
//   conflicting_pair<app::fetch_user, app::fetch_and_touch_user, app::last_seen, 0, 1>
static_assert(!te::ParallelBatch<app::fetch_user, app::fetch_and_touch_user>);
// Two calls of the touching fetch conflict with each other, too.
static_assert(!te::ParallelBatch<app::fetch_and_touch_user, app::fetch_and_touch_user>);
// The reference packages' unary answer is also derived: it is not parallel-safe.
static_assert(te::ParallelSafe<app::fetch_user> && !te::ParallelSafe<app::fetch_and_touch_user>);

template <class... Calls>
void explain() {
  using verdict = te::first_conflict_t<Calls...>;
  if constexpr (std::is_same_v<verdict, te::no_conflicting_pair>) {
    std::cout << "  no conflict: the calls may run together\n";
  } else {
    std::cout << "  " << te::type_name<verdict>() << '\n';
  }
}

template <template <class, class, class, std::size_t, std::size_t> class Pair, class A, class B, class R,
          std::size_t I, std::size_t J>
constexpr std::string_view resource_of(Pair<A, B, R, I, J>*) {
  return te::type_name<R>();
}

int main() {
  std::cout << "fetch_user + fetch_account_status:\n";
  explain<app::fetch_user, app::fetch_account_status>();
  std::cout << "fetch_user + fetch_and_touch_user:\n";
  explain<app::fetch_user, app::fetch_and_touch_user>();
  std::cout << "fetch_account_status + fetch_and_touch_user + fetch_and_touch_user:\n";
  explain<app::fetch_account_status, app::fetch_and_touch_user, app::fetch_and_touch_user>();

  using verdict = te::first_conflict_t<app::fetch_user, app::fetch_and_touch_user>;
  constexpr std::string_view resource = resource_of(static_cast<verdict*>(nullptr));
  std::cout << "collision on: " << resource << '\n';
  return resource == "app::last_seen" ? 0 : 1;
}
