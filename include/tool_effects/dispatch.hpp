// tool_effects/dispatch.hpp — running a turn's calls on Boost.Asio, as fast
// as their conflicts allow and never faster.
//
//   auto [a, b, c] = run_plan(pool, call(search, "q"), call(write_file, p, s), call(read_file, p));
//
// - `run_plan(executor, calls...)`: dataflow. Each call starts as soon as
//   every EARLIER call it conflicts with has finished (plan.hpp); calls that
//   do not conflict never wait for each other, so a turn takes its critical
//   path.
// - `run_parallel(executor, calls...)`: the same, for a batch that must be
//   conflict-free: it requires `ParallelBatch<tools...>`, and a conflicting
//   batch is a compile error naming `conflicting_pair<A, B, Resource, I, J>`.
// - Both block until every call ended and return `turn_outcomes<R...>` (a
//   flat tuple of `outcome<R>`, outcome.hpp; `void` results allowed) in
//   submission order. One failing call never loses the others' results.
// - Options, second argument: `run_options{.abort_on_error = true,
//   .max_concurrency = 4}` (`dispatch_options<Extras...>` carries more
//   policies by type, see below).
// - `co_await async_run_plan(calls...)`: the awaitable form, inside an Asio
//   coroutine; runs on the coroutine's executor and holds no thread while
//   waiting. Tools returning `boost::asio::awaitable<T>` are spawned as
//   coroutines (a timer wait holds no pool thread) in every form; sync and
//   awaitable tools mix freely.
// - `run_plan(executor, descriptions, tasks)`: the runtime, type-erased form
//   for calls known only at runtime (the registry): one task per described
//   call, `std::vector<outcome<R>>` back. Same engine.
// - Executors: any Asio executor (thread_pool, io_context, strand, ...) or an
//   execution context (its `get_executor()`), or `inline_executor{}`: every
//   call runs in the caller's thread in program order (deterministic tests).
//
// Blocking forms block the calling thread: the executor must be run by other
// threads (a thread_pool runs itself; run an io_context in another thread).
// Calling a blocking form from a thread that runs the executor throws
// std::logic_error (it could deadlock); use `async_run_plan` there.
//
// The public declarations are below; the machinery that joins them to the
// plan engine (the execution of one call, the engines, the drivers) is in
// detail/execute_calls.hpp.
#ifndef TOOL_EFFECTS_DISPATCH_HPP
#define TOOL_EFFECTS_DISPATCH_HPP

#include <cstddef>
#include <functional>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/is_executor.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/call.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/detail/awaitable.hpp>
#include <tool_effects/detail/execute_calls.hpp>
#include <tool_effects/detail/executor.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/outcome.hpp>
#include <tool_effects/detail/plans.hpp>  // plan.hpp but waves_c (Boost.Hana): see there
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

/// Options of one dispatch. `abort_on_error`: after a call failed, calls not
/// yet started are not run and their outcome is `aborted()`. Calls already
/// running finish normally. `max_concurrency`: at most that many calls in
/// flight (0: no limit); waiting calls start in program order.
///
/// `Extras...` are further policies carried BY TYPE (the retry policy and
/// the destructive-call approver of the recovery layer plug in here), so a
/// dispatcher can decide at compile time what is present: `has<X>`,
/// `get<X>()`, and `with(x)` returns the options with `x` added.
template <class... Extras>
struct dispatch_options {
  bool abort_on_error = false;
  std::size_t max_concurrency = 0;
  std::tuple<Extras...> extras{};

  /// Whether an extra of type X is present.
  template <class X>
  static constexpr bool has = (std::is_same_v<X, Extras> || ...);

  /// The extra of type X (present: `has<X>`).
  template <class X>
    requires(has<X>)
  [[nodiscard]] const X& get() const noexcept {
    return std::get<X>(extras);
  }

  /// These options plus `x` (type `std::decay_t<X>` must not be present yet).
  template <class X>
    requires(!has<std::decay_t<X>>)
  [[nodiscard]] dispatch_options<Extras..., std::decay_t<X>> with(X&& x) const& {
    return {abort_on_error, max_concurrency, std::tuple_cat(extras, std::make_tuple(std::forward<X>(x)))};
  }
};

/// The plain options: `run_options{.abort_on_error = true, .max_concurrency = 2}`.
using run_options = dispatch_options<>;

namespace detail {
template <class T>
struct is_dispatch_options : std::false_type {};
template <class... E>
struct is_dispatch_options<dispatch_options<E...>> : std::true_type {};
}  // namespace detail

/// A `dispatch_options<...>`.
template <class T>
concept DispatchOptions = detail::is_dispatch_options<std::remove_cvref_t<T>>::value;

// ---------------------------------------------------------------------------
// Executors
// ---------------------------------------------------------------------------

/// Runs every call in the caller's thread, in program order (which respects
/// every dependency of the plan): deterministic tests. Awaitable tools run
/// to completion on a private io_context in the caller's thread.
struct inline_executor {};

/// An Asio executor (either model).
template <class E>
concept AsioExecutor = boost::asio::execution::is_executor<E>::value || boost::asio::is_executor<E>::value;

/// What the dispatcher accepts: an Asio executor, an execution context with
/// `get_executor()` (thread_pool, io_context), or `inline_executor`.
template <class E>
concept DispatchExecutor =
    AsioExecutor<std::remove_cvref_t<E>> || std::is_same_v<std::remove_cvref_t<E>, inline_executor> ||
    (std::is_base_of_v<boost::asio::execution_context, std::remove_cvref_t<E>> &&
     requires(E& e) { e.get_executor(); });


// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

/// Runs `calls` on `executor` as their conflicts allow: each call starts as
/// soon as every earlier call it conflicts with has finished. Blocks until
/// all ended; returns their outcomes in submission order. Undeclared tools
/// are unknown: they run alone (after every earlier call, before every later one).
template <DispatchExecutor Executor, class... Calls>
  requires detail::all_of_v<BoundCall<Calls>...>
auto run_plan(Executor&& executor, Calls&&... calls) {
  return detail::run_static(detail::to_executor(executor), run_options{}, std::forward<Calls>(calls)...);
}

/// `run_plan` with options (abort after an error, a concurrency limit, extras).
template <DispatchExecutor Executor, DispatchOptions Options, class... Calls>
  requires detail::all_of_v<BoundCall<Calls>...>
auto run_plan(Executor&& executor, const Options& options, Calls&&... calls) {
  return detail::run_static(detail::to_executor(executor), options, std::forward<Calls>(calls)...);
}

/// Runs a conflict-free batch: every call starts at once. A batch with a
/// conflicting pair does not compile (the diagnostic names
/// `conflicting_pair<A, B, Resource, I, J>`).
template <DispatchExecutor Executor, class... Calls>
  requires detail::all_of_v<BoundCall<Calls>...> && ParallelBatch<typename std::remove_cvref_t<Calls>::tool_type...>
auto run_parallel(Executor&& executor, Calls&&... calls) {
  return detail::run_static(detail::to_executor(executor), run_options{}, std::forward<Calls>(calls)...);
}

/// `run_parallel` with options.
template <DispatchExecutor Executor, DispatchOptions Options, class... Calls>
  requires detail::all_of_v<BoundCall<Calls>...> && ParallelBatch<typename std::remove_cvref_t<Calls>::tool_type...>
auto run_parallel(Executor&& executor, const Options& options, Calls&&... calls) {
  return detail::run_static(detail::to_executor(executor), options, std::forward<Calls>(calls)...);
}

#include <tool_effects/detail/push_options.hpp>
/// The awaitable form of `run_plan`, for Asio coroutines:
/// `auto [a, b] = co_await async_run_plan(call(f, 1), call(g));`. Runs on
/// the awaiting coroutine's executor; resumes it there with the outcomes.
template <DispatchOptions Options, class... Calls>
  requires detail::all_of_v<BoundCall<Calls>...>
boost::asio::awaitable<turn_outcomes<typename std::remove_cvref_t<Calls>::result_type...>> async_run_plan(
    Options options, Calls... calls) {  // by value: the coroutine outlives its caller's temporaries
  using results = turn_outcomes<typename std::remove_cvref_t<Calls>::result_type...>;
  auto ex = co_await boost::asio::this_coro::executor;
  co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(results)>(
      [&](auto handler) {
        using engine_t = detail::static_engine<decltype(ex), Options, decltype(handler), Calls...>;
        auto engine = std::make_shared<engine_t>(ex, options, std::move(handler), std::move(calls)...);
        engine->keep_alive(engine);
        detail::start_turn(*engine, options, ex);
      },
      boost::asio::use_awaitable);
}

#include <tool_effects/detail/pop_options.hpp>

/// `async_run_plan` with default options.
template <class... Calls>
  requires detail::all_of_v<BoundCall<Calls>...>
auto async_run_plan(Calls... calls) {
  return async_run_plan(run_options{}, std::move(calls)...);
}


/// The runtime form with the plan made beforehand: runs `tasks[i]` for the
/// described call `calls[i]` (same sizes), waiting on the edges of `plan`,
/// which must be the plan of `calls` (`plan_calls(calls)`, e.g. kept to
/// explain the turn): the turn is not planned again. `tasks` is a contiguous
/// range (e.g. a `std::vector<std::function<R()>>`) of tasks invocable with
/// no arguments that return `R` or `boost::asio::awaitable<R>`; tasks are
/// invoked as lvalues. Both must outlive the call. Returns
/// `std::vector<outcome<R>>` in the order of `calls`. Throws
/// std::invalid_argument if the sizes differ.
template <DispatchExecutor Executor, DispatchOptions Options, class Tasks>
  requires detail::TaskRange<Tasks>
auto run_plan(Executor&& executor, const Options& options, std::span<const call_description> calls, runtime_plan plan,
              Tasks&& tasks) {
  using Task = detail::task_t<Tasks>;
  using raw = std::remove_cvref_t<std::invoke_result_t<Task&>>;
  using R = std::remove_cvref_t<typename detail::awaitable_traits<raw>::value_type>;
  const std::span<Task> task_span(std::data(tasks), std::size(tasks));
  if (calls.size() != task_span.size() || plan.size() != calls.size())
    throw std::invalid_argument(detail::str_cat("tool_effects::run_plan: ", std::to_string(calls.size()),
                                                " call descriptions, ", std::to_string(task_span.size()), " tasks and a plan of ",
                                                std::to_string(plan.size()), " calls"));
  return detail::run_runtime<R>(detail::to_executor(executor), options, calls, std::move(plan), task_span);
}

/// The runtime form: as above, planned with `plan_calls(calls, limits)`,
/// where `limits` is the options' `plan_limits` if they have one (throws
/// `turn_too_large` for more calls than it allows; default
/// `default_max_calls_per_turn`). Throws std::invalid_argument if the sizes differ.
template <DispatchExecutor Executor, DispatchOptions Options, class Tasks>
  requires detail::TaskRange<Tasks>
auto run_plan(Executor&& executor, const Options& options, std::span<const call_description> calls, Tasks&& tasks) {
  if (calls.size() != std::size(tasks))
    throw std::invalid_argument(detail::str_cat("tool_effects::run_plan: ", std::to_string(calls.size()),
                                                " call descriptions but ", std::to_string(std::size(tasks)), " tasks"));
  plan_limits limits;
  if constexpr (requires { requires Options::template has<plan_limits>; }) limits = options.template get<plan_limits>();
  return run_plan(std::forward<Executor>(executor), options, calls, plan_calls(calls, limits), std::forward<Tasks>(tasks));
}

/// The runtime form with default options.
template <DispatchExecutor Executor, class Tasks>
  requires detail::TaskRange<Tasks>
auto run_plan(Executor&& executor, std::span<const call_description> calls, Tasks&& tasks) {
  return run_plan(std::forward<Executor>(executor), run_options{}, calls, std::forward<Tasks>(tasks));
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_DISPATCH_HPP
