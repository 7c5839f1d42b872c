// tool_effects/cancellation.hpp — cancelling a turn from outside it.
//
//   tool_effects::turn_cancellation cancel;
//   std::thread([&] { ...; cancel.cancel(); }).detach();          // e.g. the user pressed stop
//   auto out = run_plan(pool, run_options{}.with(coordinator).with(cancel), descriptions, tasks);
//
// - `cancel()` (any thread, idempotent) stops every turn dispatched with the handle:
//   - a call that has not started yet never starts: its outcome is `aborted()` (as after a failure
//     with `abort_on_error`);
//   - a call waiting for its coordinator grant (coordination.hpp) leaves the coordinator's queue at
//     once and fails with `call_failure{coordination_timeout}` ("cancelled while waiting"); it never runs,
//     and the requests queued behind it are served as if it had never asked;
//   - a call already running is not interrupted: it runs to its end and keeps its outcome.
// - Every entry point that takes dispatch options honours it (static, runtime and awaitable forms, pooled
//   and inline). Cancelling after the turn ended does nothing.
#ifndef TOOL_EFFECTS_CANCELLATION_HPP
#define TOOL_EFFECTS_CANCELLATION_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

namespace tool_effects {

/// A turn's cancellation: a handle (copies share one state) put in the
/// dispatch options with `with(cancel)`. `cancel()` is thread-safe and
/// idempotent; once cancelled, a handle stays cancelled (make a new one per turn).
class turn_cancellation {
 public:
  turn_cancellation() : state_(std::make_shared<state>()) {}

  /// Cancels: no call of the turns using this handle starts any more, and calls waiting
  /// for a coordinator grant stop waiting. Runs the registered reactions (below) in this thread.
  void cancel() const {
    std::lock_guard lock(state_->m);
    if (state_->cancelled.exchange(true, std::memory_order_acq_rel)) return;
    for (auto& r : state_->reactions) r.second();
  }

  /// Whether `cancel()` was called.
  [[nodiscard]] bool cancelled() const noexcept { return state_->cancelled.load(std::memory_order_acquire); }

  /// For dispatchers: `react` runs once when the handle is cancelled (at once, in this thread, if it
  /// already is), unless `forget(id)` with the returned id came first. Reactions run under the handle's
  /// mutex, so once `forget` returned none is running or will run; they must not block nor call back.
  std::uint64_t on_cancel(std::function<void()> react) const {
    std::lock_guard lock(state_->m);
    const std::uint64_t id = ++state_->last_id;
    if (state_->cancelled.load(std::memory_order_acquire)) react();
    else state_->reactions.emplace_back(id, std::move(react));
    return id;
  }
  /// For dispatchers: the reaction `id` will not run (no-op if it ran, or if `id` is unknown).
  void forget(std::uint64_t id) const {
    std::lock_guard lock(state_->m);
    auto& r = state_->reactions;
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (r[i].first == id) {
        r[i] = std::move(r.back());
        r.pop_back();
        return;
      }
    }
  }

 private:
  struct state {
    std::mutex m;
    std::atomic<bool> cancelled{false};
    std::uint64_t last_id = 0;
    std::vector<std::pair<std::uint64_t, std::function<void()>>> reactions;
  };
  std::shared_ptr<state> state_;
};

namespace detail {
// Whether dispatch options carry a turn cancellation.
template <class Options>
inline constexpr bool options_have_cancellation = requires { requires Options::template has<turn_cancellation>; };

// The turn cancellation among dispatch options: a pointer to it, or `nullptr` (a `std::nullptr_t`, so
// that code without one is not even instantiated).
template <class Options>
auto options_cancellation(const Options& o) noexcept {
  if constexpr (options_have_cancellation<Options>) {
    return &o.template get<turn_cancellation>();
  } else {
    (void)o;
    return nullptr;
  }
}
}  // namespace detail

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_CANCELLATION_HPP
