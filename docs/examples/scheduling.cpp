// Scheduling a turn: the plan (which call waits for which, and why), then the dispatch on an Asio pool with
// threads, with a coroutine, and inline. Exits 0 when every check holds.
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <tool_effects/dispatch.hpp>

namespace te = tool_effects;
namespace asio = boost::asio;

// Resources: a user database with a users table, and a workspace of files.
struct user_db : te::resource<> {
  static constexpr std::string_view resource_name = "db";
};
struct users_table : te::resource<user_db> {
  static constexpr std::string_view resource_name = "users";
};
struct web : te::resource<> {
  static constexpr std::string_view resource_name = "web";
};

struct fetch_user {
  using side_effects = te::effects<te::reads<users_table>, te::idempotent>;
  std::string operator()(const std::vector<std::string>& db, int id) const { return db.at(static_cast<std::size_t>(id)); }
};
struct rename_user {
  using side_effects = te::effects<te::writes<users_table>>;
  void operator()(std::vector<std::string>& db, int id, std::string name) const { db.at(static_cast<std::size_t>(id)) = std::move(name); }
};
// An I/O-bound tool: a coroutine that waits on a timer, holding no thread.
struct search_web {
  using side_effects = te::effects<te::reads<web>, te::network, te::idempotent>;
  asio::awaitable<std::string> operator()(std::string q) const {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(5));
    co_await t.async_wait(asio::use_awaitable);
    co_return "results for " + q;
  }
};

int check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  return ok ? 0 : 1;
}

int main() {
  int failures = 0;

  // 1. Compile time: the waves of a static list of calls.
  constexpr auto waves = te::plan_waves<fetch_user, search_web, rename_user, fetch_user>();
  static_assert(waves[0] == 0 && waves[1] == 0 && waves[2] == 1 && waves[3] == 2);

  // 2. Runtime: the plan of a turn, with reasons.
  std::vector<te::call_description> turn{
      te::describe<fetch_user>("fetch_user"), te::describe<search_web>("search_web"),
      te::describe<rename_user>("rename_user"), te::describe<fetch_user>("fetch_user"),
      te::describe_runtime("write_file", {}, {{"files", te::access_mode::write, "notes.md"}}),
      te::describe_runtime("read_file", {}, {{"files", te::access_mode::read, "notes.md"}}),
      te::describe_runtime("read_file", {}, {{"files", te::access_mode::read, "todo.md"}})};
  const auto plan = te::plan_calls(turn);
  std::printf("plan (%zu waves):\n", plan.wave_count());
  for (std::size_t i = 0; i < turn.size(); ++i) std::printf("  #%zu %-12s wave %zu\n", i, turn[i].name.c_str(), plan.wave(i));
  for (const auto& e : te::explain(turn, plan))
    std::printf("  #%zu %s waits for #%zu %s: %s\n", e.to, turn[e.to].name.c_str(), e.from, turn[e.from].name.c_str(),
                e.reason.c_str());
  failures += check(plan.predecessors(3) == std::vector<std::size_t>{2}, "the second fetch waits for the rename only");
  failures += check(plan.predecessors(6).empty(), "reading todo.md waits for nobody");

  // 3. Dispatch on a thread pool: results in submission order; the read after the write sees it.
  asio::thread_pool pool(2);
  std::vector<std::string> db{"ada", "grace"};
  auto [before, found, renamed, after] =
      te::run_plan(pool, te::call(fetch_user{}, std::cref(db), 1), te::call(search_web{}, "c++ coroutines"),
                   te::call(rename_user{}, std::ref(db), 1, "hopper"), te::call(fetch_user{}, std::cref(db), 1));
  failures += check(before.value() == "grace" && after.value() == "hopper", "program order kept between conflicts");
  failures += check(found.value() == "results for c++ coroutines" && renamed.has_value(), "every outcome delivered");

  // 4. A failure does not lose the other results; with abort_on_error, later dependent calls are not run.
  auto [bad, skipped] = te::run_plan(pool, te::run_options{.abort_on_error = true},
                                     te::call(fetch_user{}, std::cref(db), 7), te::call(rename_user{}, std::ref(db), 0, "x"));
  failures += check(bad.has_error() && skipped.aborted() && db[0] == "ada", "abort_on_error skips what waits for a failure");

  // 5. run_parallel: a conflict-free batch (a conflicting one does not compile).
  auto [p1, p2] = te::run_parallel(pool, te::call(fetch_user{}, std::cref(db), 0), te::call(search_web{}, "asio"));
  failures += check(p1.value() == "ada" && p2.value() == "results for asio", "run_parallel");

  // 6. Inside a coroutine: co_await async_run_plan.
  auto fut = asio::co_spawn(
      pool,
      [&]() -> asio::awaitable<std::string> {
        auto [a, b] = co_await te::async_run_plan(te::call(search_web{}, "x"), te::call(fetch_user{}, std::cref(db), 0));
        co_return a.value() + " / " + b.value();
      },
      asio::use_future);
  failures += check(fut.get() == "results for x / ada", "async_run_plan");

  // 7. Inline: program order in this thread (deterministic tests).
  auto [i1, i2] = te::run_plan(te::inline_executor{}, te::call(rename_user{}, std::ref(db), 0, "lovelace"),
                               te::call(fetch_user{}, std::cref(db), 0));
  failures += check(i1.has_value() && i2.value() == "lovelace", "inline executor");

  pool.join();
  return failures == 0 ? 0 : 1;
}
