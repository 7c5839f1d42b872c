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

#include <tool_effects/detail/foreign_completion.hpp>
#include <tool_effects/etcd/async_client.hpp>
#include <tool_effects/etcd/client.hpp>

namespace tool_effects::etcd {

/// Lease TTL and keepalive period.
struct lease_options {
  std::chrono::seconds ttl{10};                 ///< granted TTL (etcd may raise it to its minimum)
  std::chrono::milliseconds keepalive{0};       ///< period; 0: a third of the TTL
};

namespace detail {
// What a lease_keeper shares with its keepalive coroutine, which owns it too: the coroutine may outlive the
// keeper on an executor given by the caller (stop() does not wait for it there).
struct lease_state {
  std::int64_t id = 0;
  std::chrono::seconds ttl{0};
  std::chrono::milliseconds period{0};
  mutable std::mutex mutex;
  std::chrono::steady_clock::time_point last_ok;  // mutex
  mutable std::atomic<bool> lost{false};
  mutable std::string reason;  // mutex
  std::atomic<bool> stop{false};
  bool ended = false;  // the coroutine has ended (mutex)
  std::condition_variable ended_cv;
  boost::asio::cancellation_signal cancel;  // emitted on the strand only
  std::optional<boost::asio::strand<boost::asio::any_io_executor>> strand;

  // With mutex held: whether a whole TTL passed since the last successful keepalive; latches the loss.
  bool latch_if_timed_out() const {
    if (lost) return true;
    if (std::chrono::steady_clock::now() - last_ok < ttl) return false;
    lost = true;
    reason = "keepalive_timeout";
    return true;
  }
  [[nodiscard]] bool is_lost() const {
    if (lost) return true;
    std::lock_guard lock(mutex);
    return latch_if_timed_out();
  }
  [[nodiscard]] std::string why() const {
    std::lock_guard lock(mutex);
    latch_if_timed_out();
    return reason;
  }
};
}  // namespace detail

/// Grants a lease (blocking, in the constructor) and renews it from one coroutine on a strand of the given
/// executor, until stop() or the destructor (which then revokes it, best effort). Without an executor the
/// coroutine runs on an io_context of the keeper's own, run by one thread that runs nothing else.
/// `lost()` becomes true, and stays true, once etcd reports the lease expired or no keepalive succeeded
/// within the TTL since the last success: from then on every grant made under it must be treated as lost
/// (in-flight calls fail with `lease_lost`; their fencing tokens are stale).
/// With an executor given, stop() and the destructor never block on it (they may run on its only thread):
/// the coroutine is cancelled there and ends when that executor next runs it, owning what it uses. As with
/// any Asio object, a keeper must not outlive that executor's context while its coroutine has not ended;
/// once it has (stop() and the context run until then, or the lease was lost), it may.
class lease_keeper {
 public:
  using executor_type = boost::asio::any_io_executor;

  /// Grants the lease (throws etcd::error when no endpoint answers) and renews it on a strand of `ex`, or,
  /// without one, on an io_context of the keeper's own (one thread runs it).
  explicit lease_keeper(client_options options, lease_options lease_opts = {},
                        std::optional<executor_type> ex = std::nullopt)
      : client_(options), opts_(lease_opts), state_(std::make_shared<detail::lease_state>()) {
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
    stop();  // on the own io_context, its thread has run the coroutine's end and the clean-up after it
    if (!state_->lost) {
      try {
        client_.lease_revoke(state_->id);
      } catch (const error&) {
      }
    }
  }

  /// Cancels the keepalive coroutine. Idempotent. On the keeper's own io_context it waits until the
  /// coroutine has ended and joins the thread; on a given executor it returns at once (the coroutine ends
  /// there). The lease is not revoked here (the destructor does that); lost() still reports a TTL without a
  /// keepalive afterwards.
  void stop() noexcept {
    if (!state_->stop.exchange(true)) {
      // Declared first, released last (detail::tracked_executor): the context cannot run out of work and be
      // destroyed under this thread's copy of the strand (TSan, in
      // EtcdCoordinator.AsyncAcquisitionsDoTheirIoOnTheGivenExecutor: the last grant released on another
      // thread while the test's io_context ran out of work and was destroyed).
      std::optional<boost::asio::any_io_executor> tracked;
      std::optional<boost::asio::strand<boost::asio::any_io_executor>> s;
      {
        std::lock_guard lock(state_->mutex);
        if (!state_->ended) s = state_->strand;
      }
      if (s) {
        tracked.emplace(tool_effects::detail::tracked_executor(s->get_inner_executor()));
        boost::asio::post(*s, [st = state_] { st->cancel.emit(boost::asio::cancellation_type::terminal); });
        s.reset();
      }
    }
    if (!own_) return;
    {
      std::unique_lock lock(state_->mutex);
      state_->ended_cv.wait(lock, [this] { return state_->ended; });
    }
    if (thread_.joinable()) thread_.join();
  }

  [[nodiscard]] std::int64_t id() const noexcept { return state_->id; }
  [[nodiscard]] std::chrono::seconds ttl() const noexcept { return state_->ttl; }

  /// Whether the lease must be treated as lost (see the class comment). Also checks the clock, so a keeper
  /// whose coroutine was paused together with the process reports the loss as soon as it runs again.
  /// Once true it stays true, even if a later keepalive would succeed (etcd may still hold the lease, e.g.
  /// after a leader change extended it): a grant once reported lost is never reported held again.
  [[nodiscard]] bool lost() const { return state_->is_lost(); }

  /// Why it was lost: "lease_lost" (etcd expired it) or "keepalive_timeout"; empty while it is not.
  [[nodiscard]] std::string reason() const { return state_->why(); }

 private:
  void grant() {
    const auto granted = client_.lease_grant(opts_.ttl.count());
    auto& st = *state_;
    st.id = granted.id;
    st.ttl = std::chrono::seconds(granted.ttl);
    st.last_ok = std::chrono::steady_clock::now();
    st.period = opts_.keepalive.count() > 0 ? opts_.keepalive
                                            : std::chrono::duration_cast<std::chrono::milliseconds>(st.ttl) / 3;
  }

  void start(client_options options, executor_type ex) {
    state_->strand.emplace(boost::asio::make_strand(std::move(ex)));
    boost::asio::co_spawn(*state_->strand, run(state_, std::move(options)),
                          boost::asio::bind_cancellation_slot(state_->cancel.slot(), [st = state_](std::exception_ptr) {
                            std::optional<boost::asio::strand<boost::asio::any_io_executor>> s;
                            {
                              std::lock_guard lock(st->mutex);
                              st->ended = true;
                              s = st->strand;
                              st->ended_cv.notify_all();
                            }
                            // Once co_spawn has let go of its cancellation state (the next turn of the strand),
                            // the state keeps nothing bound to the executor: a keeper whose coroutine has ended
                            // may then outlive the executor's context (a grant held past it, say).
                            boost::asio::post(*s, [st] {
                              std::lock_guard lock(st->mutex);
                              st->cancel.slot().clear();
                              st->strand.reset();
                            });
                          }));
  }

  // Waits one period; false when stopped (cancelled) meanwhile.
  static boost::asio::awaitable<bool> pause(const detail::lease_state& st, boost::asio::steady_timer& timer) {
    timer.expires_after(st.period);
    try {
      co_await timer.async_wait(boost::asio::use_awaitable);
    } catch (const boost::system::system_error&) {
      co_return false;
    }
    co_return !st.stop;
  }

  static boost::asio::awaitable<void> run(std::shared_ptr<detail::lease_state> self, client_options options) {
    auto& st = *self;
    async_client c(std::move(options), co_await boost::asio::this_coro::executor);
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    while (!st.lost && co_await pause(st, timer)) {
      const auto before = std::chrono::steady_clock::now();
      if (st.is_lost()) break;  // paused or cut off for a whole TTL: the lease may be gone already
      std::optional<errc> failure;
      try {
        co_await c.lease_keepalive(st.id);
      } catch (const error& e) {
        failure = e.value();
      } catch (const boost::system::system_error&) {
        co_return;  // cancelled by stop()
      }
      if (st.stop) co_return;
      std::lock_guard lock(st.mutex);
      if (st.lost || st.latch_if_timed_out()) break;  // an answer after a whole TTL of silence comes too late
      if (!failure) {
        st.last_ok = before;  // counted from before the request: etcd renewed the TTL no earlier than that
      } else if (*failure == errc::lease_not_found) {
        st.lost = true;
        st.reason = "lease_lost";
      }
    }
    // Given up by this side while etcd may still hold it: revoke it (best effort, retried for a TTL), so that
    // its keys do not block others until it expires.
    const auto give_up = std::chrono::steady_clock::now() + st.ttl;
    while (!st.stop && st.lost && st.why() == "keepalive_timeout" && std::chrono::steady_clock::now() < give_up) {
      try {
        co_await c.lease_revoke(st.id);
        break;
      } catch (const error& e) {
        if (e.value() != errc::unavailable && e.value() != errc::timeout) break;  // lease_not_found: gone already
      } catch (const boost::system::system_error&) {
        co_return;
      }
      if (!co_await pause(st, timer)) co_return;
    }
  }

  client client_;  // grant and revoke (blocking, on its own io_context in the calling thread)
  lease_options opts_;
  // (own_ before state_: the state goes first, should it still hold the coroutine's strand.)
  std::unique_ptr<boost::asio::io_context> own_;  // the own io_context, when no executor was given
  std::shared_ptr<detail::lease_state> state_;
  std::thread thread_;                            // runs own_ only
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_LEASE_HPP
