// tool_effects/detail/execute_calls.hpp — internal to <tool_effects/dispatch.hpp>: running the dispatched
// calls, joining the dispatcher's entry points to the plan engine (detail/engine.hpp). `execute_call`, the one
// function every dispatched call runs through (coordination, turn journal, recovery layer, then the call
// itself); `run_one`, which runs a call unless the turn is aborting; the engines for a static list of calls and
// for calls known at runtime; and the blocking drivers of both.
#ifndef TOOL_EFFECTS_DETAIL_EXECUTE_CALLS_HPP
#define TOOL_EFFECTS_DETAIL_EXECUTE_CALLS_HPP

#include <array>
#include <cstddef>
#include <exception>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <tool_effects/call.hpp>
#include <tool_effects/cancellation.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/detail/awaitable.hpp>
#include <tool_effects/detail/across_turns_fwd.hpp>
#include <tool_effects/detail/dispatch_recovery.hpp>
#include <tool_effects/detail/engine.hpp>
#include <tool_effects/detail/executor.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/detail/type_name.hpp>
#include <tool_effects/outcome.hpp>
#include <tool_effects/detail/plans.hpp>  // plan.hpp but waves_c (Boost.Hana): see there
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

struct inline_executor;  // dispatch.hpp

namespace detail {
// to_executor and the blocking-call guard: detail/executor.hpp (shared with the MCP client).
template <class Ex>
void check_not_inside(const Ex& ex, std::string_view what) {
  check_not_inside(ex, what, "use async_run_plan inside the executor");
}

// ---------------------------------------------------------------------------
// THE execution of one call
// ---------------------------------------------------------------------------

/// What the dispatcher knows about the call being executed.
struct call_info {
  std::string_view name;  ///< tool type name (static) or description name (runtime)
  effect_set effects;     ///< declared effects (empty: unknown)
  std::size_t index;      ///< position in the turn
  const call_description* description;  ///< the runtime form's description (static calls: null)
  turn_grant* granted = nullptr;  ///< the coordinator's grant its turn took for it at its start, if any
};

// The grant a turn's start took for a call (call_info::granted): whether it still holds it, and giving it back
// (templates, used only with options_grant_turn_groups: turn_grant is complete only where a coordinator's header
// is included, the only place one is made).
template <class G>
bool holds_turn_grant(const G* g) {
  return g != nullptr && g->held();
}
template <class Options, class G>
void release_turn_grant(G* g) {
  if constexpr (options_grant_turn_groups<Options>) {
    if (g != nullptr) g->release();
  } else {
    (void)g;
  }
}

#include <tool_effects/detail/push_options.hpp>
// Awaits a tool's awaitable and turns its end into an outcome. (The
// completion is not passed into the coroutine: its frame holds only the
// awaitable and the outcome.)
template <class R, class Aw>
boost::asio::awaitable<outcome<R>> await_outcome(Aw aw) {
  try {
    if constexpr (std::is_void_v<R>) {
      co_await std::move(aw);
      co_return outcome<R>::success();
    } else {
      co_return outcome<R>::success(co_await std::move(aw));
    }
  } catch (...) {
    co_return outcome<R>::failure(std::current_exception());
  }
}

#include <tool_effects/detail/pop_options.hpp>

// The plain path of execute_call: no gate, one attempt.
template <class R, class Fn, class Executor, class Done>
void execute_plain(Fn& fn, const Executor& ex, Done&& done) {
  using raw = std::remove_cvref_t<decltype(fn())>;
  if constexpr (awaitable_traits<std::remove_cvref_t<raw>>::is_awaitable) {
    std::optional<raw> aw;
    try {
      aw.emplace(fn());
    } catch (...) {  // fn() threw before returning its awaitable
      done(outcome<R>::failure(std::current_exception()));
      return;
    }
    {
      boost::asio::co_spawn(ex, await_outcome<R>(std::move(*aw)),
                            [done = std::forward<Done>(done)](std::exception_ptr e, outcome<R> o) mutable {
                              // e: only if the wrapper itself could not run (it catches the tool's errors).
                              done(e ? outcome<R>::failure(std::move(e)) : std::move(o));
                            });
    }
  } else {
    outcome<R> o;
    try {
      if constexpr (std::is_void_v<R>) {
        fn();
        o = outcome<R>::success();
      } else {
        o = outcome<R>::success(fn());
      }
    } catch (...) {
      o = outcome<R>::failure(std::current_exception());
    }
    done(std::move(o));
  }
}

template <class R, class Options, class Fn, class Executor, class Done>
void execute_admitted(const Options& opts, Fn& fn, const call_info& info, const Executor& ex, Done&& done);

// Turn journal (journal.hpp): with a journal in the options, an ended call is
// replayed, an in-doubt one runs again only if retry-safe, and *started* is
// recorded durably before the call runs.
template <class R, class Options, class Fn, class Executor, class Done>
void execute_journaled(const Options& opts, Fn& fn, const call_info& info, const Executor& ex, Done&& done) {
  if constexpr (options_have_journal<Options>) {
    const tool_effects::approver* in_doubt_approver = nullptr;
    if constexpr (options_have_approver<Options>) in_doubt_approver = &opts.template get<tool_effects::approver>();
    journal_call<R>(opts.template get<options_journal_t<Options>>(), chosen_idempotency_key(fn), info.name,
                    info.effects, in_doubt_approver, ex, std::forward<Done>(done),
                    // `info` by value: with a batch journal the call runs once its record is committed.
                    [&opts, &fn, info, ex](auto&& journaled_done) {
                      execute_admitted<R>(opts, fn, info, ex, std::move(journaled_done));
                    });
  } else {
    execute_admitted<R>(opts, fn, info, ex, std::forward<Done>(done));
  }
}

// THE one function through which every dispatched call runs (static and
// runtime, sync and awaitable, pooled and inline). `fn()` invokes the call
// (a `bound_call`, or a runtime task); `R` is its result type. Sync calls run
// here, in the current thread; awaitable calls are spawned on `ex`. `done`
// receives the call's outcome exactly once. The recovery layer (retry
// policy, approver) wraps this function, keyed on `Options`' extras.
template <class R, class Options, class Fn, class Executor, class Done>
void execute_call(const Options& opts, Fn& fn, const call_info& info, const Executor& ex, Done&& done) {
  // Turn cancellation (cancellation.hpp): a call of a cancelled turn does not start.
  if constexpr (options_have_cancellation<Options>) {
    if (opts.template get<turn_cancellation>().cancelled()) {
      release_turn_grant<Options>(info.granted);
      done(outcome<R>::abort());
      return;
    }
  }
  // Coordination across turns (coordination.hpp): with a coordinator in the
  // options, the call first holds a grant for all its accesses; the grant is
  // released before its outcome is delivered. `opts` and `fn` are the engine's.
  if constexpr (options_have_coordinator<Options>) {
    using coordinator_t = options_coordinator_t<Options>;
    if constexpr (options_grant_turn_groups<Options>) {
      if (holds_turn_grant(info.granted)) {  // granted with the calls ready at the turn's start
        // (run_granted runs it now: references suffice)
        auto run = [&](auto&& granted_done) { execute_journaled<R>(opts, fn, info, ex, std::move(granted_done)); };
        run_granted<R>(std::forward<Done>(done), *info.granted, info.name, info.effects, run);
        return;
      }
    }
    const call_description* d = info.description;
    if constexpr (is_static_call<Fn>) d = &static_description<typename Fn::tool_type>();
    coordinate_call<R>(opts.template get<coordinator_t>(), *d, info.name, info.effects, ex, options_cancellation(opts),
                       std::forward<Done>(done),
                       [&opts, &fn, info, ex](auto&& granted_done) {  // (may run later: a copy of `info`)
                         execute_journaled<R>(opts, fn, info, ex, std::move(granted_done));
                       });
  } else {
    execute_journaled<R>(opts, fn, info, ex, std::forward<Done>(done));
  }
}

// The end of a turn, before its outcomes are returned: a journal commits what it still holds.
template <class Options>
void journal_turn_end(const Options& opts) {
  if constexpr (options_have_journal<Options>) flush_journal(opts.template get<options_journal_t<Options>>());
  else (void)opts;
}

// Starts a turn's engine. With a journal in the options this is a step of the engine (journal.hpp, hold_journal):
// the *started* records of every call ready at the start are queued within it and, with a batch journal,
// committed together as it ends, in this thread, before any of those calls runs.
// `opts` and `ex` are read before the engine starts, never after: the engine may end in start(), and what owns
// them may end with it (async_run_plan's coroutine frame, resumed and finished on another thread of the pool).
template <class Options, class Executor>
void start_turn(plan_engine& engine, const Options& opts, const Executor& ex) {
  if constexpr (options_have_journal<Options> && !std::is_same_v<Executor, inline_executor>) {
    const auto journal = opts.template get<options_journal_t<Options>>();  // copies, for the reason above
    const Executor executor = ex;
    hold_journal(journal, executor);
    try {
      engine.start();
    } catch (...) {
      release_journal(journal, executor);
      throw;
    }
    release_journal(journal, executor);
  } else {
    (void)opts, (void)ex;
    engine.start();
  }
}

// Whether the engine starts call i in its own thread (launch), rather than posting it: an awaitable call (its
// tool runs in the coroutine that co_spawn posts), and every call of a turn with a batch journal, whose tool
// runs only once its *started* record is committed, from that commit's completion (journal.hpp): the engine's
// step queues the records of the calls it makes ready, in its thread, and commits them as it ends. Not while the
// turn is aborting or cancelled: such a call ends at once, and the step would complete it inside itself.
template <class Options>
bool starts_in_step(const plan_engine& engine, const Options& opts, bool is_awaitable) {
  if (is_awaitable) return true;
  if constexpr (options_have_batch_journal<Options>) {
    if constexpr (options_have_cancellation<Options>)
      if (opts.template get<turn_cancellation>().cancelled()) return false;
    return !engine.abort_requested();
  } else {
    (void)engine, (void)opts;
    return false;
  }
}

// A call admitted to run (coordinated or not).
template <class R, class Options, class Fn, class Executor, class Done>
void execute_admitted(const Options& opts, Fn& fn, const call_info& info, const Executor& ex, Done&& done) {
  // Recovery layer (detail/dispatch_recovery.hpp): a static call that
  // needs_confirmation (destructive or unknown) without an approver does not
  // compile; with a retry policy or an approver in the options, or for a
  // call that needs confirmation, it runs under the gates.
  check_dispatch_confirmation<Options, Fn>();
  using paths = recovery_paths<Options, Fn>;
  if constexpr (!paths::never) {
    if (recovery_needed<Options>(info.effects)) {
      execute_with_recovery<R>(opts, fn, info, ex, std::forward<Done>(done));
      return;
    }
  }
  if constexpr (!paths::always) execute_plain<R>(fn, ex, std::forward<Done>(done));
}

// Where an engine keeps the grants its turn takes at its start (call_info::granted): with a coordinator that
// takes group requests, on a real executor, without a concurrency limit (calls it queues would hold their grants
// while they wait); else nowhere.
struct no_turn_grants {};
template <class Options, class Executor>
inline constexpr bool engine_grants_at_start =
    options_grant_turn_groups<Options> && !std::is_same_v<Executor, inline_executor>;

template <class Fn>
inline constexpr bool returns_awaitable = awaitable_traits<std::remove_cvref_t<decltype(std::declval<Fn&>()())>>::is_awaitable;

// Stores a call's outcome in its slot and reports the call's end to the
// engine: the completion of every dispatched call (one type per result type,
// so calls of one tool share every instantiation below).
template <class R>
struct store_outcome {
  plan_engine* engine;
  outcome<R>* slot;
  std::size_t index;

  void operator()(outcome<R> o) const {
    const bool failed = !o.has_value();
    *slot = std::move(o);
    engine->complete(index, failed);
  }
};

// Runs the call at `info.index` via execute_call, unless the engine is
// aborting; its outcome goes to `*slot`. With `inline_executor`, awaitable
// calls run to their end on a private io_context, in this thread.
template <class R, class Options, class Fn, class Executor>
void run_one(plan_engine& engine, const Options& opts, Fn& fn, const call_info& info, const Executor& ex,
             outcome<R>* slot) {
  const std::size_t i = info.index;
  if (engine.abort_requested()) {
    release_turn_grant<Options>(info.granted);
    *slot = outcome<R>::abort();
    engine.complete(i, false);
    return;
  }
  const store_outcome<R> done{&engine, slot, i};
  if constexpr (returns_awaitable<Fn> && std::is_same_v<Executor, inline_executor>) {
    boost::asio::io_context ctx;
    execute_call<R>(opts, fn, info, ctx.get_executor(), done);
    ctx.run();
  } else {
    execute_call<R>(opts, fn, info, ex, done);
  }
}

// Runs the static call `*call` (of type Call) as call `index`, its outcome
// into `*slot`. One instantiation per call TYPE (and executor and options),
// shared by every call of that type in every turn of the translation unit.
template <class Call, class Executor, class Options>
void run_static_call(plan_engine& engine, const Executor& ex, const Options& opts, void* call, void* slot,
                     std::size_t index, turn_grant* granted) {
  using R = typename Call::result_type;
  using tool = typename Call::tool_type;
  const call_info info{type_name_v<tool>, side_effects_v<tool>, index, nullptr, granted};
  run_one<R>(engine, opts, *static_cast<Call*>(call), info, ex, static_cast<outcome<R>*>(slot));
}

// The engine for a static list of calls: conflict rows from the
// compile-time matrix of the calls' tool types; the calls and their outcomes
// in flat tuples (any number of calls); call i starts through entry i of a
// table of type-erased runners, so nothing is instantiated per call index
// but the table's initializer.
template <class Executor, class Options, class Handler, class... Calls>
class static_engine final : public plan_engine {
 public:
  using results_type = turn_outcomes<typename Calls::result_type...>;
  static constexpr std::size_t N = sizeof...(Calls);
  static constexpr const auto& matrix = conflict_matrix_v<typename Calls::tool_type...>;

  static_engine(const Executor& ex, const Options& opts, Handler handler, Calls&&... calls)
      : plan_engine(N, matrix.words_per_row, matrix.row(0), {opts.abort_on_error, opts.max_concurrency}),
        ex_(ex), opts_(opts), handler_(std::move(handler)), calls_{{std::move(calls)}...},
        entries_(make_entries(std::index_sequence_for<Calls...>{})) {
    grant_ready_calls();
  }

  results_type take_results() { return std::move(results_); }

  // Async mode: the engine keeps itself alive until its last call completed.
  void keep_alive(std::shared_ptr<static_engine> self) { self_ = std::move(self); }

 private:
  struct entry {
    void (*run)(plan_engine&, const Executor&, const Options&, void*, void*, std::size_t, turn_grant*);
    void* call;
    void* slot;
    bool is_awaitable;  // co_spawn posts it; a sync call is posted here
  };

  template <std::size_t... I>
  std::array<entry, N> make_entries(std::index_sequence<I...>) {
    auto& slots = turn_outcomes_access::elements(results_);
    return {entry{&run_static_call<Calls, Executor, Options>, &static_cast<leaf<I, Calls>&>(calls_).value,
                  &static_cast<leaf<I, outcome<typename Calls::result_type>>&>(slots).value,
                  Calls::is_awaitable}...};
  }

  void run(std::size_t i) {
    const entry& e = entries_[i];
    e.run(*this, ex_, opts_, e.call, e.slot, i, granted(i));
  }

  // The turn's coordinator grants the calls ready at its start at once, one request for all of them (a lock and
  // a queue node per turn instead of per call); each call runs under its grant (execute_call), or gives it back
  // if it does not run. Calls that become ready later, or that an older request blocks, ask alone as they run.
  void grant_ready_calls() {
    if constexpr (engine_grants_at_start<Options, Executor>) {
      if (opts_.max_concurrency != 0) return;
      // Which calls wait for none is a property of the calls' types (the conflict matrix): known once.
      static const std::array<const call_description*, N> ready = [] {
        const std::array<const call_description*, N> all{&static_description<typename Calls::tool_type>()...};
        std::array<const call_description*, N> r{};
        for (std::size_t i = 0; i < N; ++i) r[i] = predecessor_count(matrix.row(i), i) == 0 ? all[i] : nullptr;
        return r;
      }();
      grant_group(opts_.template get<options_coordinator_t<Options>>(), ready, grants_);
    }
  }
  turn_grant* granted(std::size_t i) {
    if constexpr (engine_grants_at_start<Options, Executor>) return &grants_[i];
    else return (void)i, nullptr;
  }

  void launch(std::size_t i) override {
    if constexpr (!std::is_same_v<Executor, inline_executor>) {
      if (starts_in_step(*this, opts_, entries_[i].is_awaitable)) run(i);
      else boost::asio::post(ex_, [this, i] { run(i); });
    } else {
      (void)i;
    }
  }
  void run_inline_one(std::size_t i) override { run(i); }
  void finished() override {
    journal_turn_end(opts_);
    if constexpr (std::is_same_v<Handler, std::nullptr_t>) {
      plan_engine::finished();
    } else {
      const auto keep = std::move(self_);  // released when this returns: nothing touches the engine after
      boost::asio::post(ex_, [h = std::move(handler_), r = std::move(results_)]() mutable {
        std::move(h)(std::move(r));
      });
    }
  }

  Executor ex_;
  Options opts_;
  Handler handler_;
  flat_tuple<std::index_sequence_for<Calls...>, Calls...> calls_;
  results_type results_;
  std::array<entry, N> entries_;
  // After opts_ (destroyed before it): a grant does not keep the coordinator's queue alive, opts_' copy does.
  [[no_unique_address]] std::conditional_t<engine_grants_at_start<Options, Executor>, std::array<turn_grant, N>,
                                           no_turn_grants> grants_;
  std::shared_ptr<static_engine> self_;
};

// The engine for calls known at runtime: successor lists from a runtime
// plan. Blocking (Handler std::nullptr_t: the caller owns it and waits for the
// last call, so handlers hold a raw pointer), or asynchronous (the engine keeps
// itself alive and calls `handler(outcomes)` in the thread that ended the turn,
// which must not block; the descriptions and tasks must outlive the turn, as in
// the awaiting coroutine's frame).
struct plan_holder {
  std::optional<runtime_plan> plan;  // none: no call waits for another
};

template <class R, class Executor, class Options, class Task, class Handler = std::nullptr_t>
class runtime_engine final : private plan_holder, public plan_engine {  // plan_holder first: the plan outlives the base
 public:
  runtime_engine(const Executor& ex, const Options& opts, std::span<const call_description> calls,
                 std::optional<runtime_plan> plan, std::span<Task> tasks, Handler handler = {})
      : plan_holder{std::move(plan)},
        plan_engine(tasks.size(), this->plan ? this->plan->predecessor_offsets() : nullptr,
                    this->plan ? this->plan->successor_offsets() : nullptr,
                    this->plan ? this->plan->successor_data() : nullptr, {opts.abort_on_error, opts.max_concurrency}),
        ex_(ex), opts_(opts), handler_(std::move(handler)), calls_(calls), tasks_(tasks), results_(tasks.size()) {
    grant_ready_calls();
  }

  std::vector<outcome<R>> take_results() { return std::move(results_); }

  // Async mode: the engine keeps itself alive until its last call completed.
  void keep_alive(std::shared_ptr<runtime_engine> self) { self_ = std::move(self); }

 private:
  void run(std::size_t i) {
    // An exclusive description is unknown, whatever flags it carries (as in run_with_recovery).
    const call_info info{calls_[i].name, calls_[i].exclusive ? effect_set{} : calls_[i].effects, i, &calls_[i],
                         granted(i)};
    run_one<R>(*this, opts_, tasks_[i], info, ex_, &results_[i]);
  }
  // As static_engine's.
  void grant_ready_calls() {
    if constexpr (engine_grants_at_start<Options, Executor>) {
      if (opts_.max_concurrency != 0) return;
      std::vector<const call_description*> ready(calls_.size());
      for (std::size_t i = 0; i < ready.size(); ++i) ready[i] = starts_ready(i) ? &calls_[i] : nullptr;
      grants_.resize(ready.size());
      grant_group(opts_.template get<options_coordinator_t<Options>>(), ready, grants_);
    }
  }
  turn_grant* granted(std::size_t i) {
    if constexpr (engine_grants_at_start<Options, Executor>) return grants_.empty() ? nullptr : &grants_[i];
    else return (void)i, nullptr;
  }
  void launch(std::size_t i) override {
    if constexpr (!std::is_same_v<Executor, inline_executor>) {
      if (starts_in_step(*this, opts_, returns_awaitable<Task>)) run(i);
      else boost::asio::post(ex_, [s = this, i] { s->run(i); });
    } else {
      (void)i;
    }
  }
  void run_inline_one(std::size_t i) override { run(i); }
  void finished() override {
    journal_turn_end(opts_);
    if constexpr (std::is_same_v<Handler, std::nullptr_t>) {
      plan_engine::finished();
    } else {  // invoked here, in the thread that ended the turn: the handler goes where it belongs
      const auto keep = std::move(self_);  // released when this returns: nothing touches the engine after
      std::move(handler_)(std::move(results_));
    }
  }

  Executor ex_;
  Options opts_;
  [[no_unique_address]] Handler handler_;
  std::span<const call_description> calls_;
  std::span<Task> tasks_;
  std::vector<outcome<R>> results_;
  // After opts_ (destroyed before it), as in static_engine.
  [[no_unique_address]] std::conditional_t<engine_grants_at_start<Options, Executor>, std::vector<turn_grant>,
                                           no_turn_grants> grants_;
  std::shared_ptr<runtime_engine> self_;
};

template <class Ex, class Options, class... Calls>
auto run_static(const Ex& ex, const Options& opts, Calls&&... calls) {
  using engine_t = static_engine<Ex, Options, std::nullptr_t, std::remove_cvref_t<Calls>...>;
  if constexpr (!std::is_same_v<Ex, inline_executor>) check_not_inside(ex, "run_plan");
  const auto engine = std::make_unique<engine_t>(ex, opts, nullptr, std::forward<Calls>(calls)...);
  if constexpr (std::is_same_v<Ex, inline_executor>) {
    engine->run_inline();
  } else {
    start_turn(*engine, opts, ex);
    engine->wait();
  }
  return engine->take_results();
}

template <bool...>
struct bool_pack {};
// Whether all of B... hold, without a fold expression: clang expands a fold
// (and a constrained parameter pack, `Concept... Ts`) into nested operands and
// stops at 256 by default; a static turn may have more calls.
template <bool... B>
inline constexpr bool all_of_v = std::is_same_v<bool_pack<true, B...>, bool_pack<B..., true>>;

// A contiguous, sized range of tasks (vector, array, span, ...): `std::data`
// and `std::size` apply, and its elements are invocable with no arguments.
// (Stated with <iterator>'s std::data/std::size: <ranges> costs 0.1-0.3 s of
// every dispatcher TU's compile time.)
template <class Tasks>
concept TaskRange = requires(Tasks& t) {
  { std::data(t) } -> std::convertible_to<const volatile void*>;
  { std::size(t) } -> std::convertible_to<std::size_t>;
} && std::is_invocable_v<std::remove_pointer_t<decltype(std::data(std::declval<Tasks&>()))>&>;

template <class Tasks>
using task_t = std::remove_pointer_t<decltype(std::data(std::declval<Tasks&>()))>;

// The plan a runtime engine is given (run_runtime, start_runtime): `plan`, or none for a turn without any edge
// (e.g. only reads), which needs no successor lists at all.
inline std::optional<runtime_plan> runtime_edges(runtime_plan&& plan) {
  std::optional<runtime_plan> edges;
  if (plan.edge_count() != 0) edges.emplace(std::move(plan));
  return edges;
}

// The runtime form of run_plan, sizes checked: runs `tasks[i]` for `calls[i]`
// on the edges of `plan` (the plan of `calls`), blocking.
template <class R, class Ex, class Options, class Task>
std::vector<outcome<R>> run_runtime(const Ex& ex, const Options& options, std::span<const call_description> calls,
                                    runtime_plan plan, std::span<Task> task_span) {
  using engine_t = runtime_engine<R, Ex, Options, Task>;
  if constexpr (!std::is_same_v<Ex, inline_executor>) check_not_inside(ex, "run_plan");
  const auto engine = std::make_unique<engine_t>(ex, options, calls, runtime_edges(std::move(plan)), task_span);
  if constexpr (std::is_same_v<Ex, inline_executor>) {
    engine->run_inline();
  } else {
    start_turn(*engine, options, ex);
    engine->wait();
  }
  return engine->take_results();
}

// The asynchronous runtime form: as run_runtime, but returns at once; `handler(std::vector<outcome<R>>)` is
// called in the thread that ended the last call (it must not block: post it on). `calls` and `tasks` must
// outlive the turn.
template <class R, class Ex, class Options, class Task, class Handler>
void start_runtime(const Ex& ex, const Options& options, std::span<const call_description> calls,
                   runtime_plan plan, std::span<Task> task_span, Handler handler) {
  using engine_t = runtime_engine<R, Ex, Options, Task, Handler>;
  auto engine =
      std::make_shared<engine_t>(ex, options, calls, runtime_edges(std::move(plan)), task_span, std::move(handler));
  engine->keep_alive(engine);
  start_turn(*engine, options, ex);
}
}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_DETAIL_EXECUTE_CALLS_HPP
