// tool_effects/coordination.hpp — safety across turns: turns that run at the
// same time share a coordinator, and a call starts only when it holds a
// grant for all of its accesses against every other turn using it.
//
//   tool_effects::local_coordinator coordinator;               // one per process, shared by sessions
//   auto out = run_plan(pool, run_options{}.with(coordinator), call(a), call(b));
//
// - The rule is THE rule of access.hpp (`conflicts` on call descriptions):
//   resource hierarchy, targets, commuting appends, exclusive/unknown calls.
// - A call's grant covers all its accesses at once (atomic per call).
// - First come, first served among conflicting requests: a request is
//   granted when no OLDER request (held or waiting) conflicts with it, so a
//   write is not starved by a stream of reads, and a request waits only for
//   older ones: no deadlock (the oldest request is always grantable).
// - Cancellable: a per-call wait limit and Asio per-operation cancellation;
//   in the dispatcher a call whose wait ends so fails with
//   `call_failure{coordination_timeout}` and never runs.
// - Released on every path: a grant is an RAII value.
// - Fenced: each grant carries a token, greater than every token granted
//   before by the same coordinator; the tool reads it from
//   `attempt_context::fencing_token`.
// The model and its limits: docs/coordination.md.
//
// The public declarations are below; the queue behind `local_coordinator` is in
// detail/coordination_queue.hpp (included at the end), and the coordinated start of a dispatched call in
// detail/dispatch_coordination.hpp (included at the end; the dispatcher sees only its declaration, in
// detail/across_turns_fwd.hpp, so a program without a coordinator does not parse this header).
#ifndef TOOL_EFFECTS_COORDINATION_HPP
#define TOOL_EFFECTS_COORDINATION_HPP

#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/is_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/system/error_code.hpp>

#include <tool_effects/attempt.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/detail/across_turns_fwd.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/outcome.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects {

/// How long one acquisition may wait. `wait_limit` zero: no limit.
struct acquire_options {
  std::chrono::nanoseconds wait_limit{0};
};

/// Errors a coordinator may complete an acquisition with besides `timed_out`
/// and `operation_aborted` (an etcd coordinator): the dispatcher
/// fails the call with `call_failure{lease_lost}` or, for `unavailable`,
/// `coordination_timeout` (never ran, either way).
enum class coordination_errc { lease_lost = 1, unavailable = 2 };

namespace detail {
struct coordination_category_impl final : boost::system::error_category {
  const char* name() const noexcept override { return "tool_effects.coordination"; }
  std::string message(int v) const override {
    return v == 1 ? "lease_lost" : v == 2 ? "coordinator unavailable" : "unknown coordination error";
  }
};
}  // namespace detail

/// The category of `coordination_errc`.
inline const boost::system::error_category& coordination_category() noexcept {
  static const detail::coordination_category_impl c;
  return c;
}
/// `coordination_errc` as an error code.
inline boost::system::error_code make_error_code(coordination_errc e) noexcept {
  return {static_cast<int>(e), coordination_category()};
}

namespace detail {
// A completion handler of the acquire signature, to state the concept.
template <class Grant>
struct acquire_handler_archetype {
  void operator()(boost::system::error_code, Grant) {}
};
}  // namespace detail

/// A grant of a coordinator: move-only ownership of a call's accesses.
/// `release()` (idempotent) and the destructor give them back;
/// `fencing_token()` is the grant's token; `held()` says whether it is still held.
/// A grant that can be lost while held (a lease) also has `lost()`: when it
/// is true as the call ends, the dispatcher fails the call with
/// `call_failure{lease_lost}` whatever it returned (its token is stale).
template <class G>
concept CoordinatorGrant = std::movable<G> && std::is_default_constructible_v<G> && requires(G& g, const G& cg) {
  { cg.fencing_token() } -> std::convertible_to<std::uint64_t>;
  { cg.held() } -> std::convertible_to<bool>;
  g.release();
};

/// A coordinator: grants calls their accesses against every other holder,
/// under the rule of access.hpp, first come first served, deadlock-free.
/// `async_acquire(description, options, handler)` completes with
/// `(error_code, grant_type)` on the handler's associated executor
/// (`boost::asio::error::timed_out` after the wait limit,
/// `operation_aborted` when cancelled; then the grant is empty).
/// `acquire(description, options)` is the blocking form (throws
/// `boost::system::system_error` on the same errors). The description must
/// outlive the grant. (`etcd_coordinator`, etcd/coordinator.hpp, is one across processes.)
template <class C>
concept Coordinator = requires(const C& c, const call_description& d, acquire_options o) {
  typename C::grant_type;
  requires CoordinatorGrant<typename C::grant_type>;
  c.async_acquire(d, o, detail::acquire_handler_archetype<typename C::grant_type>{});
  { c.acquire(d, o) } -> std::same_as<typename C::grant_type>;
  { c.default_acquire_options() } -> std::convertible_to<acquire_options>;
};

/// A coordinator that can grant without waiting: `try_acquire(d)` returns a
/// grant when one is available now under the same rule (no older
/// conflicting request), else nothing and enqueues nothing.
template <class C>
concept TryAcquireCoordinator = Coordinator<C> && requires(const C& c, const call_description& d) {
  { c.try_acquire(d) } -> std::same_as<std::optional<typename C::grant_type>>;
};

class local_coordinator;
class local_grant;

namespace detail {
struct local_state;
struct local_node;
std::optional<local_grant> try_acquire_in_turn(const local_coordinator& c, const call_description& d);
// Only the queue makes a held grant (passkey: `std::optional<local_grant>` can then make one in place).
class local_grant_key {
  friend struct local_state;
  local_grant_key() = default;
};
}  // namespace detail

/// A grant of `local_coordinator`. Move-only; released by `release()` or
/// its destructor, on whatever path the call ended.
class local_grant {
 public:
  local_grant() = default;
  /// A held grant: made by the queue only (`local_grant_key` can be made nowhere else).
  local_grant(detail::local_grant_key, detail::local_node* n, std::uint64_t t) noexcept : node_(n), token_(t) {}
  local_grant(const local_grant&) = delete;
  local_grant& operator=(const local_grant&) = delete;
  local_grant(local_grant&& o) noexcept
      : node_(std::exchange(o.node_, nullptr)), token_(std::exchange(o.token_, 0)) {}
  local_grant& operator=(local_grant&& o) noexcept {
    if (this != &o) {
      release();
      node_ = std::exchange(o.node_, nullptr);
      token_ = std::exchange(o.token_, 0);
    }
    return *this;
  }
  ~local_grant() { release(); }

  /// The fencing token (0 for an empty grant).
  [[nodiscard]] std::uint64_t fencing_token() const noexcept { return token_; }
  /// Whether the grant is held.
  [[nodiscard]] bool held() const noexcept { return node_ != nullptr; }
  /// Gives the accesses back (waiting requests they blocked may be granted). Idempotent.
  void release() noexcept {
    if (node_ != nullptr) release_held();  // (moved-from and empty grants: nothing to do, inline)
    token_ = 0;
  }

 private:
  inline void release_held() noexcept;
  // The queue's node of this request (non-null: held). While held, the node keeps the queue alive (its
  // `keep`), so a grant is two words, moved as such.
  detail::local_node* node_ = nullptr;
  std::uint64_t token_ = 0;
};

/// The in-process coordinator: a handle (copies share one queue; const
/// members, as the queue is shared) that
/// grants calls their accesses against every other call holding or asking
/// through the same queue. `with(coordinator)` in dispatch options puts
/// every call of the dispatched turn under it. Thread-safe.
class local_coordinator {
 public:
  using grant_type = local_grant;

  inline local_coordinator();

  /// A handle on the same queue whose acquisitions wait at most `limit`
  /// (zero: no limit) before failing with `timed_out`.
  [[nodiscard]] local_coordinator with_wait_limit(std::chrono::nanoseconds limit) const {
    local_coordinator c = *this;
    c.defaults_.wait_limit = limit;
    return c;
  }
  /// The options the dispatcher uses for every call (the wait limit).
  [[nodiscard]] acquire_options default_acquire_options() const noexcept { return defaults_; }

  /// A grant now if no older request conflicts with `d`, else nothing (no request is left behind).
  [[nodiscard]] inline std::optional<local_grant> try_acquire(const call_description& d) const;

  /// Asynchronous acquisition (completion token: a handler, `use_awaitable`,
  /// `use_future`, ...), signature `void(error_code, local_grant)`. The
  /// request is queued at once (its age is its call time); the handler runs
  /// on its associated executor (never inside this call). Waits at most
  /// `o.wait_limit` (`timed_out`); honours per-operation cancellation
  /// (`operation_aborted`). A waiting request holds no thread.
  template <class Token>
  auto async_acquire(const call_description& d, acquire_options o, Token&& token) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, local_grant)>(
        [this, &d, o](auto handler) { this->initiate(d, o, std::move(handler)); }, token);
  }

  /// Blocking acquisition: the grant, or throws `boost::system::system_error`
  /// (`timed_out` after `o.wait_limit`).
  [[nodiscard]] inline local_grant acquire(const call_description& d, acquire_options o) const;

  /// A grant refers to its description until it is released, so a temporary
  /// description (which would dangle) is refused at compile time.
  std::optional<local_grant> try_acquire(const call_description&&) const = delete;
  local_grant acquire(const call_description&&, acquire_options) const = delete;
  template <class Token>
  void async_acquire(const call_description&&, acquire_options, Token&&) const = delete;

  /// Requests in the queue (held and waiting): for tests and monitoring.
  [[nodiscard]] inline std::size_t queued() const;

 private:
  template <class Handler>
  void initiate(const call_description& d, acquire_options o, Handler handler) const;
  friend std::optional<local_grant> detail::try_acquire_in_turn(const local_coordinator&, const call_description&);
  template <class C>
  friend void detail::grant_group(const C&, std::span<const call_description* const>, std::span<detail::turn_grant>);

  std::shared_ptr<detail::local_state> state_;
  acquire_options defaults_{};
};

}  // namespace tool_effects

// The queue behind local_coordinator, and the definitions of its members.
#include <tool_effects/detail/coordination_queue.hpp>

namespace tool_effects {
static_assert(Coordinator<local_coordinator>);
static_assert(TryAcquireCoordinator<local_coordinator>);

namespace detail {
// Coordinators among the dispatch options' extras (detail/across_turns_fwd.hpp).
template <Coordinator C>
struct is_coordinator<C> : std::true_type {};
// local_coordinator grants the calls ready at a turn's start as one request (grant_group).
template <>
struct grants_turn_groups<local_coordinator> : std::true_type {};
}  // namespace detail
}  // namespace tool_effects

// The coordinated start of a dispatched call (declared in detail/across_turns_fwd.hpp, which the dispatcher
// includes instead of this header).
#include <tool_effects/detail/dispatch_coordination.hpp>

#endif  // TOOL_EFFECTS_COORDINATION_HPP
