// tool_effects/etcd/lease.hpp — a process's etcd lease, kept alive by a thread of its own, that knows when it
// must be treated as lost: etcd said it expired, or no keepalive succeeded for a whole TTL (a paused process,
// a partition). Include <tool_effects/etcd.hpp>.
#ifndef TOOL_EFFECTS_ETCD_LEASE_HPP
#define TOOL_EFFECTS_ETCD_LEASE_HPP

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <tool_effects/etcd/client.hpp>

namespace tool_effects::etcd {

/// Lease TTL and keepalive period.
struct lease_options {
  std::chrono::seconds ttl{10};                 ///< granted TTL (etcd may raise it to its minimum)
  std::chrono::milliseconds keepalive{0};       ///< period; 0: a third of the TTL
};

/// Grants a lease and renews it from a thread of its own until destroyed (then revokes it, best effort).
/// `lost()` becomes true, and stays true, once etcd reports the lease expired or no keepalive succeeded
/// within the TTL since the last success: from then on every grant made under it must be treated as lost
/// (in-flight calls fail with `lease_lost`; their fencing tokens are stale). Uses a client of its own.
class lease_keeper {
 public:
  lease_keeper(client_options options, lease_options lease_opts = {})
      : client_(std::move(options)), opts_(lease_opts) {
    const auto granted = client_.lease_grant(opts_.ttl.count());
    id_ = granted.id;
    ttl_ = std::chrono::seconds(granted.ttl);
    last_ok_ = std::chrono::steady_clock::now();
    period_ = opts_.keepalive.count() > 0 ? opts_.keepalive
                                          : std::chrono::duration_cast<std::chrono::milliseconds>(ttl_) / 3;
    thread_ = std::thread([this] { run(); });
  }
  lease_keeper(const lease_keeper&) = delete;
  lease_keeper& operator=(const lease_keeper&) = delete;
  ~lease_keeper() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (!lost_) {
      try {
        client_.lease_revoke(id_);
      } catch (const error&) {
      }
    }
  }

  [[nodiscard]] std::int64_t id() const noexcept { return id_; }
  [[nodiscard]] std::chrono::seconds ttl() const noexcept { return ttl_; }

  /// Whether the lease must be treated as lost (see the class comment). Also checks the clock, so a keeper
  /// whose own thread was paused together with the process reports the loss as soon as it runs again.
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
  void run() {
    std::unique_lock lock(mutex_);
    while (!stop_ && !lost_) {
      wake_.wait_for(lock, period_, [this] { return stop_; });
      if (stop_) break;
      const auto before = std::chrono::steady_clock::now();
      if (latch_if_timed_out()) break;  // paused or cut off for a whole TTL: the lease may be gone already
      lock.unlock();
      std::optional<errc> failure;
      try {
        client_.lease_keepalive(id_);
      } catch (const error& e) {
        failure = e.value();
      }
      lock.lock();
      if (lost_ || latch_if_timed_out()) break;  // an answer after a whole TTL of silence comes too late
      if (!failure) {
        // counted from before the request: etcd renewed the TTL no earlier than that
        last_ok_ = before;
      } else if (*failure == errc::lease_not_found) {
        lost_ = true;
        reason_ = "lease_lost";
      }
    }
    // Given up by this side while etcd may still hold it: revoke it (best effort, retried for a TTL), so that
    // its keys do not block others until it expires.
    const auto give_up = std::chrono::steady_clock::now() + ttl_;
    while (!stop_ && lost_ && reason_ == "keepalive_timeout" && std::chrono::steady_clock::now() < give_up) {
      lock.unlock();
      bool done = false;
      try {
        client_.lease_revoke(id_);
        done = true;
      } catch (const error& e) {
        done = e.value() != errc::unavailable && e.value() != errc::timeout;  // lease_not_found: gone already
      }
      lock.lock();
      if (done) break;
      wake_.wait_for(lock, period_, [this] { return stop_; });
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

  client client_;
  lease_options opts_;
  std::int64_t id_ = 0;
  std::chrono::seconds ttl_{0};
  std::chrono::milliseconds period_{0};
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::chrono::steady_clock::time_point last_ok_;
  mutable std::atomic<bool> lost_{false};
  bool stop_ = false;
  mutable std::string reason_;
  std::thread thread_;
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_LEASE_HPP
