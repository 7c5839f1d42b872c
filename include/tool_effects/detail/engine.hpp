// tool_effects/detail/engine.hpp — the dataflow engine shared by every
// dispatch entry point (run_plan, run_parallel, async_run_plan, and the
// runtime form over call descriptions).
//
// Input: n calls and either their conflict rows (detail/plan_core.hpp
// layout; the static forms) or successor lists and predecessor counts (CSR;
// the runtime form, from `runtime_plan`). Each
// call has a counter of the earlier calls it waits for; when a call ends,
// the counters of its later conflicting calls are decremented and every
// call that reaches zero is started. No wave barriers: a turn takes its
// critical path. Concurrency limit: at most `max_concurrency` calls in
// flight, the others queue in program order. Abort: once a call failed and
// `abort_on_error` is set, calls not yet started end as "aborted".
//
// The derived class says how call i is started (`launch`), and reports its
// end with `complete(i, failed)` exactly once. The member functions are
// defined in impl/engine.ipp (compiled once with TOOL_EFFECTS_SEPARATE_COMPILATION).
#ifndef TOOL_EFFECTS_DETAIL_ENGINE_HPP
#define TOOL_EFFECTS_DETAIL_ENGINE_HPP

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/plan_core.hpp>

namespace tool_effects::detail {

struct engine_config {
  bool abort_on_error = false;
  std::size_t max_concurrency = 0;  // 0: unlimited
};

class plan_engine {
 public:
  TOOL_EFFECTS_DECL plan_engine(std::size_t n, std::size_t words, const std::uint64_t* rows, engine_config cfg);
  // Successor lists: the successors of call i are
  // succ[succ_off[i] .. succ_off[i + 1]); pred_off likewise gives each call's
  // number of predecessors. The arrays must outlive the engine.
  // All three null: no call waits for another.
  TOOL_EFFECTS_DECL plan_engine(std::size_t n, const std::uint32_t* pred_off, const std::uint32_t* succ_off,
                                const std::uint32_t* succ, engine_config cfg);
  plan_engine(const plan_engine&) = delete;
  plan_engine& operator=(const plan_engine&) = delete;
  // Out of line: with separate compilation the class's vtable is emitted once, where this is defined.
  TOOL_EFFECTS_DECL virtual ~plan_engine();

  // Starts every call that waits for nobody (the others start as their
  // predecessors complete). With no calls, finishes at once.
  TOOL_EFFECTS_DECL void start();

  // Runs every call in the caller's thread, in program order (which keeps
  // every dependency): `run_inline_one(i)` must run call i to its end and
  // call complete(i, failed).
  TOOL_EFFECTS_DECL void run_inline();

  // Blocks until every call completed. A handler may still be returning from
  // complete() when this returns, but touches no engine member after the
  // final notification (sent under the mutex this waits on).
  TOOL_EFFECTS_DECL void wait();

  // Whether calls not yet started must be aborted (an earlier call failed
  // and abort_on_error is set).
  [[nodiscard]] bool abort_requested() const noexcept { return aborting_.load(std::memory_order_acquire); }

  // Call i ended (ran, failed, or was aborted). Exactly once per call.
  TOOL_EFFECTS_DECL void complete(std::size_t i, bool failed);

  [[nodiscard]] std::size_t size() const noexcept { return n_; }

 protected:
  // Before start(): whether call i waits for no other call (it is ready as the turn starts).
  [[nodiscard]] bool starts_ready(std::size_t i) const noexcept {
    return pending_[i].load(std::memory_order_relaxed) == 1;  // only the start token
  }

  // Start call i (post it, spawn it); it must end with complete(i, failed).
  virtual void launch(std::size_t i) = 0;
  // Run call i now, in this thread, to its end (inline mode).
  virtual void run_inline_one(std::size_t i) = 0;
  // Every call completed. Default: wake `wait()`.
  TOOL_EFFECTS_DECL virtual void finished();

 private:
  [[nodiscard]] const std::uint64_t* row(std::size_t i) const noexcept { return rows_ + i * words_; }

  void finish() { finished(); }

  // One unit of call j's counter is in (a predecessor's completion, or the
  // start token); the last one starts it.
  TOOL_EFFECTS_DECL void release(std::size_t j);
  TOOL_EFFECTS_DECL void admit(std::size_t i);
  TOOL_EFFECTS_DECL void release_slot();

  std::size_t n_, words_;
  const std::uint64_t* rows_;
  const std::uint32_t* succ_off_ = nullptr;
  const std::uint32_t* succ_ = nullptr;
  engine_config cfg_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> pending_;
  std::atomic<std::size_t> remaining_;
  std::atomic<bool> aborting_{false};
  bool inline_ = false;

  std::mutex slots_mutex_;
  std::size_t active_ = 0;
  // Calls admitted but over max_concurrency: a binary min-heap (std::push_heap / pop_heap with std::greater, in
  // impl/engine.ipp), so the earliest call starts first. (Not a std::priority_queue: <queue> brings <deque>, which
  // every dispatching translation unit would parse.)
  std::vector<std::size_t> ready_;

  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
};

}  // namespace tool_effects::detail

#if TOOL_EFFECTS_HEADER_ONLY
#include <tool_effects/impl/engine.ipp>
#endif

#endif  // TOOL_EFFECTS_DETAIL_ENGINE_HPP
