// tool_effects/etcd/lease.hpp — a process's etcd lease, renewed by a coroutine (steady_timer + async_client
// keepalive) on an Asio executor, that knows when it must be treated as lost: etcd said it expired, or no
// keepalive succeeded for a whole TTL (a paused process, a partition). Include <tool_effects/etcd.hpp>.
#ifndef TOOL_EFFECTS_ETCD_LEASE_HPP
#define TOOL_EFFECTS_ETCD_LEASE_HPP

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <tool_effects/etcd/async_client.hpp>
#include <tool_effects/etcd/client.hpp>

namespace tool_effects::etcd {

/// Lease TTL and keepalive period.
struct lease_options {
  std::chrono::seconds ttl{10};                 ///< granted TTL (etcd may raise it to its minimum)
  std::chrono::milliseconds keepalive{0};       ///< period; 0: a third of the TTL
};

/// Grants a lease (blocking, in the constructor) and renews it from one coroutine on a strand of the given
/// executor, until stop() or the destructor (which then revokes it, best effort). Without an executor the
/// coroutine runs on an io_context of the keeper's own, run by one thread that runs nothing else.
/// `lost()` becomes true, and stays true, once etcd reports the lease expired or no keepalive succeeded
/// within the TTL since the last success: from then on every grant made under it must be treated as lost
/// (in-flight calls fail with `lease_lost`; their fencing tokens are stale).
/// With an executor given, it must be run until stop() (or the destructor) returns: stop() waits for the
/// coroutine, which ends on that executor; do not call stop() from inside that executor's only thread.
class lease_keeper {
 public:
  using executor_type = boost::asio::any_io_executor;

  /// Grants the lease (throws etcd::error when no endpoint answers) and renews it on a strand of `ex`, or,
  /// without one, on an io_context of the keeper's own (one thread runs it).
  explicit lease_keeper(client_options options, lease_options lease_opts = {},
                        std::optional<executor_type> ex = std::nullopt)
      : client_(options), opts_(lease_opts) {
    grant();
    if (ex) {
      start(std::move(options), std::move(*ex));
    } else {
      own_ = std::make_unique<boost::asio::io_context>();
      start(std::move(options), own_->get_executor());
      thread_ = std::thread([this] { own_->run(); });
    }
  }
  lease_keeper(const lease_keeper&) = delete;
  lease_keeper& operator=(const lease_keeper&) = delete;
  ~lease_keeper() {
    stop();
    if (!lost_) {
      try {
        client_.lease_revoke(id_);
      } catch (const error&) {
      }
    }
  }

  /// Cancels the keepalive coroutine and waits until it has ended. Idempotent. The lease is not revoked here
  /// (the destructor does that); lost() still reports a TTL without a keepalive afterwards.
  void stop() noexcept {
    if (!stop_.exchange(true)) {
      boost::asio::post(*strand_, [this] { cancel_.emit(boost::asio::cancellation_type::terminal); });
    }
    {
      std::unique_lock lock(mutex_);
      ended_cv_.wait(lock, [this] { return ended_; });
    }
    if (thread_.joinable()) thread_.join();
  }

  [[nodiscard]] std::int64_t id() const noexcept { return id_; }
  [[nodiscard]] std::chrono::seconds ttl() const noexcept { return ttl_; }

  /// Whether the lease must be treated as lost (see the class comment). Also checks the clock, so a keeper
  /// whose coroutine was paused together with the process reports the loss as soon as it runs again.
  /// Once true it stays true, even if a later keepalive would succeed (etcd may still hold the lease, e.g.
  /// after a leader change extended it): a grant once reported lost is never reported held again.
  [[nodiscard]] bool lost() const {
    if (lost_) return true;
    std::lock_guard lock(mutex_);
    return latch_if_timed_out();
  }

  /// Why it was lost: "lease_lost" (etcd expired it) or "keepalive_timeout"; empty while it is not.
  [[nodiscard]] std::string reason() const {
    std::lock_guard lock(mutex_);
    latch_if_timed_out();
    return reason_;
  }

 private:
  void grant() {
    const auto granted = client_.lease_grant(opts_.ttl.count());
    id_ = granted.id;
    ttl_ = std::chrono::seconds(granted.ttl);
    last_ok_ = std::chrono::steady_clock::now();
    period_ = opts_.keepalive.count() > 0 ? opts_.keepalive
                                          : std::chrono::duration_cast<std::chrono::milliseconds>(ttl_) / 3;
  }

  void start(client_options options, executor_type ex) {
    strand_.emplace(boost::asio::make_strand(std::move(ex)));
    boost::asio::co_spawn(*strand_, run(std::move(options)),
                          boost::asio::bind_cancellation_slot(cancel_.slot(), [this](std::exception_ptr) {
                            std::lock_guard lock(mutex_);
                            ended_ = true;
                            ended_cv_.notify_all();
                          }));
  }

  // Waits one period; false when stopped (cancelled) meanwhile.
  boost::asio::awaitable<bool> pause(boost::asio::steady_timer& timer) {
    timer.expires_after(period_);
    try {
      co_await timer.async_wait(boost::asio::use_awaitable);
    } catch (const boost::system::system_error&) {
      co_return false;
    }
    co_return !stop_;
  }

  boost::asio::awaitable<void> run(client_options options) {
    async_client c(std::move(options), co_await boost::asio::this_coro::executor);
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    while (!lost_ && co_await pause(timer)) {
      const auto before = std::chrono::steady_clock::now();
      if (lost()) break;  // paused or cut off for a whole TTL: the lease may be gone already
      std::optional<errc> failure;
      try {
        co_await c.lease_keepalive(id_);
      } catch (const error& e) {
        failure = e.value();
      } catch (const boost::system::system_error&) {
        co_return;  // cancelled by stop()
      }
      if (stop_) co_return;
      std::lock_guard lock(mutex_);
      if (lost_ || latch_if_timed_out()) break;  // an answer after a whole TTL of silence comes too late
      if (!failure) {
        last_ok_ = before;  // counted from before the request: etcd renewed the TTL no earlier than that
      } else if (*failure == errc::lease_not_found) {
        lost_ = true;
        reason_ = "lease_lost";
      }
    }
    // Given up by this side while etcd may still hold it: revoke it (best effort, retried for a TTL), so that
    // its keys do not block others until it expires.
    const auto give_up = std::chrono::steady_clock::now() + ttl_;
    while (!stop_ && lost_ && reason() == "keepalive_timeout" && std::chrono::steady_clock::now() < give_up) {
      try {
        co_await c.lease_revoke(id_);
        break;
      } catch (const error& e) {
        if (e.value() != errc::unavailable && e.value() != errc::timeout) break;  // lease_not_found: gone already
      } catch (const boost::system::system_error&) {
        co_return;
      }
      if (!co_await pause(timer)) co_return;
    }
  }

  // With mutex_ held: whether a whole TTL passed since the last successful keepalive; latches the loss.
  bool latch_if_timed_out() const {
    if (lost_) return true;
    if (std::chrono::steady_clock::now() - last_ok_ < ttl_) return false;
    lost_ = true;
    reason_ = "keepalive_timeout";
    return true;
  }

  client client_;  // grant and revoke (blocking, on its own io_context in the calling thread)
  lease_options opts_;
  std::int64_t id_ = 0;
  std::chrono::seconds ttl_{0};
  std::chrono::milliseconds period_{0};
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point last_ok_;
  mutable std::atomic<bool> lost_{false};
  mutable std::string reason_;
  std::atomic<bool> stop_{false};
  bool ended_ = false;  // the coroutine has ended (mutex_)
  std::condition_variable ended_cv_;
  std::unique_ptr<boost::asio::io_context> own_;  // the own io_context, when no executor was given (outlives strand_)
  boost::asio::cancellation_signal cancel_;        // emitted on strand_ only
  std::optional<boost::asio::strand<executor_type>> strand_;
  std::thread thread_;                            // runs own_ only
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_LEASE_HPP
