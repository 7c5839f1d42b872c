// tool_effects/etcd/coordinator.hpp — the coordinator of the Coordinator concept across processes
// and machines: the lock protocol of etcd/lock.hpp under one lease per coordinator, kept alive by
// a lease_keeper. A drop-in for local_coordinator in `run_options{}.with(coordinator)`:
//
//   tool_effects::etcd::coordinator_options o;
//   o.client.endpoints = {"http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"};
//   tool_effects::etcd::etcd_coordinator coordinator(o);   // one per process, shared by its sessions
//   auto out = run_plan(pool, run_options{}.with(coordinator), call(a), call(b));
//
// - Same rule as local_coordinator (access.hpp's `conflicts`), now against every process using the same
//   etcd key prefix; first come first served by etcd revision; deadlock-free (docs/coordination.md).
// - The fencing token is the create revision of the call's keys: it grows along every chain of conflicting
//   grants of the whole fleet, and reaches the tool as `attempt_context::fencing_token`.
// - When the lease is lost (etcd expired it, or no keepalive succeeded for a TTL), a waiting acquisition
//   fails with `coordination_errc::lease_lost`, and a call that was running when it was lost fails with
//   `call_failure{lease_lost}` as it ends (grant::lost()); its token is stale, so a fenced resource refuses it.
// Include <tool_effects/etcd.hpp>.
#ifndef TOOL_EFFECTS_ETCD_COORDINATOR_HPP
#define TOOL_EFFECTS_ETCD_COORDINATOR_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <tool_effects/call_description.hpp>
#include <tool_effects/coordination.hpp>
#include <tool_effects/etcd/client.hpp>
#include <tool_effects/etcd/error.hpp>
#include <tool_effects/etcd/lease.hpp>
#include <tool_effects/etcd/lock.hpp>

namespace tool_effects::etcd {

/// How an etcd_coordinator reaches etcd and keeps its lease.
struct coordinator_options {
  client_options client;                     ///< endpoints (fail over in order), TLS, user / password, timeouts
  lease_options lease;                       ///< TTL and keepalive period of the process's lease
  std::string prefix = "tool_effects/";      ///< key prefix: processes coordinate iff they share it
  std::chrono::milliseconds wait_limit{0};   ///< default wait limit of an acquisition (0: none)
  /// Where asynchronous acquisitions do their I/O (a strand of it per acquisition); empty: the handler's
  /// associated executor (the dispatcher's). The coordinator has no thread for them. When set, the lease's
  /// keepalive coroutine runs there too (no thread of the coordinator's at all; the lease is renewed only
  /// while it runs). Destroying the last copy of the coordinator never waits for that executor (it may run
  /// on its only thread). When empty, the lease is renewed on an io_context of the lease_keeper's own (one
  /// thread).
  std::optional<boost::asio::any_io_executor> executor;
};

}  // namespace tool_effects::etcd

// The state the copies of a coordinator share (it needs coordinator_options).
#include <tool_effects/etcd/detail/coordinator_state.hpp>

namespace tool_effects::etcd {

namespace detail {
struct acquisition_signal;
}  // namespace detail

class etcd_grant;

namespace detail {
inline boost::asio::awaitable<void> run_acquisition(std::shared_ptr<coordinator_state>, call_description,
                                                    std::chrono::steady_clock::time_point,
                                                    std::shared_ptr<acquisition_signal>);
}  // namespace detail

/// A grant of etcd_coordinator: the call's keys in etcd and their create revision as fencing token.
/// Move-only; released (keys deleted, best effort: the lease takes them otherwise) by `release()` or the
/// destructor. `lost()`: the coordinator's lease was lost while the grant was held (its token is stale).
class etcd_grant {
 public:
  etcd_grant() = default;
  etcd_grant(const etcd_grant&) = delete;
  etcd_grant& operator=(const etcd_grant&) = delete;
  etcd_grant(etcd_grant&& o) noexcept : state_(std::move(o.state_)), grant_(std::move(o.grant_)) { o.grant_ = {}; }
  etcd_grant& operator=(etcd_grant&& o) noexcept {
    if (this != &o) {
      release();
      state_ = std::move(o.state_);
      grant_ = std::move(o.grant_);
      o.grant_ = {};
    }
    return *this;
  }
  ~etcd_grant() { release(); }

  /// The fencing token: the create revision of the call's keys (0 for an empty grant).
  [[nodiscard]] std::uint64_t fencing_token() const noexcept { return static_cast<std::uint64_t>(grant_.token); }
  /// Whether the grant is held (it may still be lost: see lost()).
  [[nodiscard]] bool held() const noexcept { return state_ != nullptr; }
  /// Whether the lease under the grant was lost: its keys may be gone and a conflicting call granted.
  [[nodiscard]] bool lost() const { return state_ != nullptr && state_->keeper.lost(); }
  /// Deletes the call's keys. Idempotent.
  void release() noexcept {
    if (const auto s = std::move(state_)) {
      state_.reset();
      s->release(grant_);
    }
    grant_ = {};
  }

 private:
  friend class etcd_coordinator;
  friend boost::asio::awaitable<void> detail::run_acquisition(std::shared_ptr<detail::coordinator_state>, call_description,
                                                              std::chrono::steady_clock::time_point,
                                                              std::shared_ptr<detail::acquisition_signal>);
  etcd_grant(std::shared_ptr<detail::coordinator_state> s, lock_grant g) noexcept
      : state_(std::move(s)), grant_(std::move(g)) {}
  std::shared_ptr<detail::coordinator_state> state_;
  lock_grant grant_;
};

/// The coordinator across processes: a handle (copies share one lease and one client UUID) that grants
/// calls their accesses against every call of every process using the same etcd prefix. Thread-safe.
/// The lease is granted when the coordinator is made (throws etcd::error when no endpoint answers) and
/// revoked when the last copy (and the last grant) goes.
class etcd_coordinator {
 public:
  using grant_type = etcd_grant;

  explicit etcd_coordinator(coordinator_options o)
      : state_(std::make_shared<detail::coordinator_state>(std::move(o))) {
    defaults_.wait_limit = state_->opts.wait_limit;
  }

  /// A handle on the same lease whose acquisitions wait at most `limit` (zero: no limit).
  [[nodiscard]] etcd_coordinator with_wait_limit(std::chrono::nanoseconds limit) const {
    etcd_coordinator c = *this;
    c.defaults_.wait_limit = limit;
    return c;
  }
  /// The options the dispatcher uses for every call (the wait limit).
  [[nodiscard]] acquire_options default_acquire_options() const noexcept { return defaults_; }

  /// The lease id and whether it is lost (for tests and monitoring).
  [[nodiscard]] std::int64_t lease_id() const noexcept { return state_->keeper.id(); }
  [[nodiscard]] bool lease_lost() const { return state_->keeper.lost(); }

  /// Blocking acquisition: the grant, or throws `boost::system::system_error` with `timed_out` (wait limit),
  /// `coordination_errc::lease_lost` or `coordination_errc::unavailable` (no endpoint answered).
  [[nodiscard]] etcd_grant acquire(const call_description& d, acquire_options o) const {
    boost::system::error_code ec;
    auto g = acquire_impl(state_, d, o, nullptr, ec);
    if (ec) throw boost::system::system_error(ec, "tool_effects::etcd::etcd_coordinator::acquire");
    return g;
  }

  /// Asynchronous acquisition, signature `void(error_code, etcd_grant)`: one coroutine on a strand of
  /// `coordinator_options::executor` (else of the handler's associated executor) awaits the protocol's round
  /// trips and its watch, on connections of its own (no thread, no poll loop: a waiting acquisition holds a
  /// watch connection); the handler runs on its associated executor (never inside this call). Per-operation
  /// cancellation completes at once with `operation_aborted` (the request's keys are deleted right after).
  template <class Token>
  auto async_acquire(const call_description& d, acquire_options o, Token&& token) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, etcd_grant)>(
        [this, &d, o](auto handler) { this->initiate(d, o, std::move(handler)); }, token);
  }

  /// The description must outlive the grant (the Coordinator contract): a temporary is refused at compile time.
  etcd_grant acquire(const call_description&&, acquire_options) const = delete;
  template <class Token>
  void async_acquire(const call_description&&, acquire_options, Token&&) const = delete;

 private:
  static etcd_grant acquire_impl(const std::shared_ptr<detail::coordinator_state>& s, const call_description& d,
                                 acquire_options o, const std::atomic<bool>* cancelled,
                                 boost::system::error_code& ec) {
    if (s->keeper.lost()) {
      ec = make_error_code(coordination_errc::lease_lost);
      return {};
    }
    const auto wait = o.wait_limit.count() > 0
                          ? std::chrono::ceil<std::chrono::milliseconds>(o.wait_limit)
                          : std::chrono::milliseconds(std::chrono::hours(24 * 365));
    std::unique_ptr<client> c;
    try {
      c = s->take();
      // one session per acquisition: its id (lease / UUID.n / 1) is unique in the fleet
      lock_session session(*c, s->keeper.id(), s->uuid + "." + std::to_string(++s->calls), s->opts.prefix);
      auto g = session.acquire(d, wait, [&]() -> std::optional<errc> {
        if (cancelled && cancelled->load()) return errc::cancelled;
        if (s->keeper.lost()) return errc::lease_lost;
        return std::nullopt;
      });
      s->give(std::move(c));
      etcd_grant out(s, std::move(g));
      if (s->keeper.lost()) {  // granted under a lease that is gone by now: stale
        ec = make_error_code(coordination_errc::lease_lost);
        return {};
      }
      return out;
    } catch (const error& e) {
      if (c && e.value() != errc::unavailable && e.value() != errc::timeout) s->give(std::move(c));
      ec = detail::acquisition_error(e.value());
      return {};
    }
  }

  // Starts the coroutine of detail/async_acquisition.hpp (defined there).
  template <class Handler>
  void initiate(const call_description& d, acquire_options o, Handler handler) const;

  std::shared_ptr<detail::coordinator_state> state_;
  acquire_options defaults_{};
};

static_assert(Coordinator<etcd_coordinator>);

}  // namespace tool_effects::etcd

// The asynchronous acquisition (etcd_coordinator::initiate and its coroutine).
#include <tool_effects/etcd/detail/async_acquisition.hpp>

#endif  // TOOL_EFFECTS_ETCD_COORDINATOR_HPP
