// tool_effects/etcd/coordinator.hpp — the coordinator of issue 17's Coordinator concept across processes
// and machines (issue 18): the lock protocol of etcd/lock.hpp under one lease per coordinator, kept alive by
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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/system/system_error.hpp>

#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <tool_effects/coordination.hpp>
#include <tool_effects/etcd/client.hpp>
#include <tool_effects/etcd/lease.hpp>
#include <tool_effects/etcd/lock.hpp>

namespace tool_effects::etcd {

/// How an etcd_coordinator reaches etcd and keeps its lease.
struct coordinator_options {
  client_options client;                     ///< endpoints (fail over in order), TLS, user / password, timeouts
  lease_options lease;                       ///< TTL and keepalive period of the process's lease
  std::string prefix = "tool_effects/";      ///< key prefix: processes coordinate iff they share it
  std::chrono::milliseconds wait_limit{0};   ///< default wait limit of an acquisition (0: none)
  /// Threads that run the round trips of asynchronous acquisitions (at least 1); one more thread polls the
  /// watches of all that wait. Made at the first async_acquire.
  std::size_t wait_threads = 2;
};

namespace detail {

// One asynchronous acquisition as the waiting room sees it.
struct room_job {
  virtual ~room_job() = default;
  // One step on a worker thread, reading its watch for at most `read_wait` (50 ms when its socket is readable,
  // 1 ms when bytes may be buffered, 0 when it only has to check); true: park it again.
  virtual bool run(std::chrono::milliseconds read_wait) = 0;
  // For the poller, while it is parked: its watch's socket (-1: run it at once), whether a message may be
  // buffered already, whether it must run now (deadline, cancellation, lost lease).
  [[nodiscard]] virtual int handle() const = 0;
  [[nodiscard]] virtual bool buffered() const = 0;
  [[nodiscard]] virtual bool due(std::chrono::steady_clock::time_point now) const = 0;
};

// Where one coordinator's asynchronous acquisitions run and wait: `threads` workers run their round trips; one
// poller waits with poll(2) on the watches of every parked acquisition and hands a job back to the workers when
// its watch is readable or it is due (checked at least every 250 ms). So a waiting acquisition costs a watch
// connection, not a thread. Destroyed when no job is left (jobs keep their coordinator alive), possibly on one
// of its own threads: that one is detached and leaves through the state it shares.
class waiting_room {
  struct shared {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::pair<std::shared_ptr<room_job>, std::chrono::milliseconds>> ready;  // (job, read wait)
    std::vector<std::shared_ptr<room_job>> parked;
    bool stop = false;
    int wake[2] = {-1, -1};  // a pipe: a parked job or stop wakes the poller
    ~shared() {
      for (const int fd : wake)
        if (fd >= 0) ::close(fd);
    }
    void poke() const noexcept {
      const char c = 1;
      [[maybe_unused]] const auto n = ::write(wake[1], &c, 1);
    }
  };

 public:
  explicit waiting_room(std::size_t threads) : sh_(std::make_shared<shared>()) {
    if (::pipe(sh_->wake) != 0) throw error("unavailable", "waiting room: no pipe");
    for (const int fd : sh_->wake) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    for (std::size_t i = 0; i < std::max<std::size_t>(threads, 1); ++i)
      threads_.emplace_back([sh = sh_] { work(sh); });
    threads_.emplace_back([sh = sh_] { poll_loop(sh); });
  }
  waiting_room(const waiting_room&) = delete;
  waiting_room& operator=(const waiting_room&) = delete;
  ~waiting_room() {
    {
      std::lock_guard lock(sh_->m);
      sh_->stop = true;
    }
    sh_->cv.notify_all();
    sh_->poke();
    for (auto& t : threads_) {
      if (t.get_id() == std::this_thread::get_id()) t.detach();
      else t.join();
    }
  }

  // Runs the job's first step on a worker.
  void submit(std::shared_ptr<room_job> j) {
    {
      std::lock_guard lock(sh_->m);
      sh_->ready.emplace_back(std::move(j), std::chrono::milliseconds(0));
    }
    sh_->cv.notify_one();
  }

 private:
  static void work(const std::shared_ptr<shared>& sh) {
    for (;;) {
      std::shared_ptr<room_job> j;
      std::chrono::milliseconds read_wait{0};
      {
        std::unique_lock lock(sh->m);
        sh->cv.wait(lock, [&] { return sh->stop || !sh->ready.empty(); });
        if (sh->stop) return;
        std::tie(j, read_wait) = std::move(sh->ready.front());
        sh->ready.pop_front();
      }
      if (j->run(read_wait)) {
        {
          std::lock_guard lock(sh->m);
          sh->parked.push_back(j);
        }
        sh->poke();
      }
      j.reset();  // may be the last reference to the coordinator, and so to this room (outside the lock)
    }
  }

  static void poll_loop(const std::shared_ptr<shared>& sh) {
    std::vector<::pollfd> fds;
    std::vector<room_job*> polled;
    for (;;) {
      fds.assign(1, ::pollfd{sh->wake[0], POLLIN, 0});
      polled.clear();
      {
        std::lock_guard lock(sh->m);
        if (sh->stop) return;
        const auto now = std::chrono::steady_clock::now();
        std::size_t moved = 0;
        for (auto it = sh->parked.begin(); it != sh->parked.end();) {
          auto& j = *it;
          if (j->handle() < 0 || j->buffered() || j->due(now)) {
            const auto wait = j->buffered() ? std::chrono::milliseconds(1) : std::chrono::milliseconds(0);
            sh->ready.emplace_back(std::move(j), wait);
            it = sh->parked.erase(it);
            ++moved;
          } else {
            fds.push_back(::pollfd{j->handle(), POLLIN, 0});
            polled.push_back(j.get());
            ++it;
          }
        }
        if (moved) sh->cv.notify_all();
      }
      if (::poll(fds.data(), fds.size(), 250) < 0 && errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      char drain[64];
      while (::read(sh->wake[0], drain, sizeof drain) > 0) {
      }
      std::lock_guard lock(sh->m);
      if (sh->stop) return;
      std::size_t moved = 0;
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const auto it = std::find_if(sh->parked.begin(), sh->parked.end(),
                                     [&](const auto& p) { return p.get() == polled[i - 1]; });
        if (it == sh->parked.end()) continue;
        sh->ready.emplace_back(std::move(*it), std::chrono::milliseconds(50));
        sh->parked.erase(it);
        ++moved;
      }
      if (moved) sh->cv.notify_all();
    }
  }

  std::shared_ptr<shared> sh_;
  std::vector<std::thread> threads_;
};

// What the copies of one coordinator share: the lease, the client UUID, a pool of idle clients (a waiting
// acquisition holds a client of its own, so waits do not serialize on one connection).
struct coordinator_state {
  coordinator_options opts;
  lease_keeper keeper;
  std::string uuid;
  std::atomic<std::uint64_t> calls{0};
  std::mutex m;
  std::vector<std::unique_ptr<client>> idle;

  explicit coordinator_state(coordinator_options o) : opts(std::move(o)), keeper(opts.client, opts.lease) {
    std::random_device rd;
    static constexpr char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) uuid += hex[rd() & 15];
  }

  std::unique_ptr<client> take() {
    {
      std::lock_guard lock(m);
      if (!idle.empty()) {
        auto c = std::move(idle.back());
        idle.pop_back();
        return c;
      }
    }
    return std::make_unique<client>(opts.client);
  }
  void give(std::unique_ptr<client> c) {
    std::lock_guard lock(m);
    if (idle.size() < 16) idle.push_back(std::move(c));
  }

  // The waiting room of asynchronous acquisitions, made at the first one.
  waiting_room& room() {
    std::call_once(room_once, [this] { room_ = std::make_unique<waiting_room>(opts.wait_threads); });
    return *room_;
  }

  // Deletes a grant's keys, best effort (else the lease takes them).
  void release(const lock_grant& g) noexcept {
    try {
      auto c = take();
      lock_session(*c, keeper.id(), uuid, opts.prefix).release(g);
      give(std::move(c));
    } catch (...) {
    }
  }

 private:
  std::once_flag room_once;
  std::unique_ptr<waiting_room> room_;  // last: its threads stop before the rest goes
};

}  // namespace detail

namespace detail {
struct async_acquisition;
}

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
  friend struct detail::async_acquisition;
  etcd_grant(std::shared_ptr<detail::coordinator_state> s, lock_grant g) noexcept
      : state_(std::move(s)), grant_(std::move(g)) {}
  std::shared_ptr<detail::coordinator_state> state_;
  lock_grant grant_;
};

namespace detail {

// The shared end of an asynchronous acquisition: completes the handler exactly once (grant, cancellation).
template <class Handler>
struct etcd_async_op {
  using executor_type = boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>;
  std::mutex m;
  std::optional<Handler> handler;
  std::optional<boost::asio::executor_work_guard<executor_type>> work;
  std::atomic<bool> cancelled{false};

  etcd_async_op(Handler h, const executor_type& ex) : handler(std::move(h)), work(ex) {}

  // A grant that comes after the handler was completed (cancelled) is released by its destructor.
  void complete(boost::system::error_code ec, etcd_grant g) {
    std::optional<Handler> h;
    std::optional<boost::asio::executor_work_guard<executor_type>> w;
    {
      std::lock_guard lock(m);
      if (!handler) return;
      h.emplace(std::move(*handler));
      handler.reset();
      w.emplace(std::move(*work));
      work.reset();
    }
    auto ex = w->get_executor();
    boost::asio::post(ex, [h = std::move(*h), ec, g = std::move(g), w = std::move(*w)]() mutable {
      auto slot = boost::asio::get_associated_cancellation_slot(h);
      if (slot.is_connected()) slot.clear();
      std::move(h)(ec, std::move(g));
    });
  }
};

// An asynchronous acquisition in the waiting room: lock_acquisition's steps, then the handler (through
// `complete`, exactly once).
struct async_acquisition final : room_job {
  std::shared_ptr<coordinator_state> s;
  call_description d;  // a copy: a cancelled caller may drop its description
  std::chrono::steady_clock::time_point deadline;
  std::function<bool()> cancelled;
  std::function<void(boost::system::error_code, etcd_grant)> complete;
  std::unique_ptr<client> c;
  std::optional<lock_acquisition> acq;

  bool run(std::chrono::milliseconds read_wait) override {
    try {
      if (!acq) {
        if (cancelled()) return finish(boost::asio::error::operation_aborted);
        if (s->keeper.lost()) return finish(make_error_code(coordination_errc::lease_lost));
        c = s->take();
        // its id (lease / UUID.n / 1) is unique in the fleet, as a blocking acquisition's
        const auto id = str_cat(std::to_string(s->keeper.id()), "/", s->uuid, ".", std::to_string(++s->calls), "/1");
        acq.emplace(*c, s->keeper.id(), s->opts.prefix, id, d, deadline);
        return acq->start() ? granted() : true;
      }
      if (cancelled()) return give_up(boost::asio::error::operation_aborted);
      if (s->keeper.lost()) return give_up(make_error_code(coordination_errc::lease_lost));
      return acq->step(read_wait) ? granted() : true;
    } catch (const error& e) {
      const auto& why = e.reason();
      if (why != "lease_lost" && why != "coordination_timeout" && acq) {
        try {
          acq->release();  // a failed request may have left the keys
        } catch (const error&) {
        }
      }
      acq.reset();
      if (c && why != "unavailable" && why != "timeout") s->give(std::move(c));
      c.reset();
      if (why == "coordination_timeout") return finish(boost::asio::error::timed_out);
      if (why == "lease_lost") return finish(make_error_code(coordination_errc::lease_lost));
      return finish(make_error_code(coordination_errc::unavailable));
    } catch (...) {  // nothing else may leave a worker; the keys go with the lease if not here
      if (acq) {
        try {
          acq->release();
        } catch (...) {
        }
      }
      acq.reset();
      c.reset();
      return finish(make_error_code(coordination_errc::unavailable));
    }
  }
  [[nodiscard]] int handle() const override { return acq ? acq->watch_handle() : -1; }
  [[nodiscard]] bool buffered() const override { return acq && acq->watch_buffered(); }
  [[nodiscard]] bool due(std::chrono::steady_clock::time_point now) const override {
    return now >= deadline || cancelled() || s->keeper.lost();
  }

 private:
  bool finish(boost::system::error_code ec, etcd_grant g = {}) {
    complete(ec, std::move(g));
    return false;
  }
  bool give_up(boost::system::error_code ec) {
    try {
      acq->release();
    } catch (const error&) {  // the lease takes them
    }
    acq.reset();
    s->give(std::move(c));
    return finish(ec);
  }
  bool granted() {
    auto g = acq->take_grant();
    acq.reset();
    s->give(std::move(c));
    etcd_grant out(s, std::move(g));
    if (s->keeper.lost()) return finish(make_error_code(coordination_errc::lease_lost));  // stale: out releases
    return finish({}, std::move(out));
  }
};

}  // namespace detail

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

  /// Asynchronous acquisition, signature `void(error_code, etcd_grant)`: the protocol's round trips run on the
  /// coordinator's `wait_threads` workers and its wait on one poller shared by every waiting acquisition (no
  /// thread per call); the handler runs on its associated executor (never inside this call). Per-operation
  /// cancellation completes at once with `operation_aborted` (the request's keys are deleted within 250 ms).
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
      auto g = session.acquire(d, wait, [&]() -> std::string {
        if (cancelled && cancelled->load()) return "cancelled";
        return s->keeper.lost() ? "lease_lost" : "";
      });
      s->give(std::move(c));
      etcd_grant out(s, std::move(g));
      if (s->keeper.lost()) {  // granted under a lease that is gone by now: stale
        ec = make_error_code(coordination_errc::lease_lost);
        return {};
      }
      return out;
    } catch (const error& e) {
      if (c && e.reason() != "unavailable" && e.reason() != "timeout") s->give(std::move(c));
      if (e.reason() == "coordination_timeout") ec = boost::asio::error::timed_out;
      else if (e.reason() == "lease_lost") ec = make_error_code(coordination_errc::lease_lost);
      else if (e.reason() == "cancelled") ec = boost::asio::error::operation_aborted;
      else ec = make_error_code(coordination_errc::unavailable);
      return {};
    }
  }

  template <class Handler>
  void initiate(const call_description& d, acquire_options o, Handler handler) const {
    using op_t = detail::etcd_async_op<Handler>;
    auto ex = boost::asio::get_associated_executor(handler, boost::asio::any_io_executor(boost::asio::system_executor()));
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    auto op = std::make_shared<op_t>(std::move(handler), ex);
    if (slot.is_connected()) {
      slot.assign([op](boost::asio::cancellation_type) {
        op->cancelled = true;
        op->complete(boost::asio::error::operation_aborted, etcd_grant{});
      });
    }
    auto job = std::make_shared<detail::async_acquisition>();
    job->s = state_;
    job->d = d;
    job->deadline = o.wait_limit.count() > 0
                        ? std::chrono::steady_clock::now() + std::chrono::ceil<std::chrono::milliseconds>(o.wait_limit)
                        : std::chrono::steady_clock::now() + std::chrono::hours(24 * 365);
    job->cancelled = [op] { return op->cancelled.load(); };
    job->complete = [op](boost::system::error_code ec, etcd_grant g) { op->complete(ec, std::move(g)); };
    state_->room().submit(std::move(job));
  }

  std::shared_ptr<detail::coordinator_state> state_;
  acquire_options defaults_{};
};

static_assert(Coordinator<etcd_coordinator>);

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_COORDINATOR_HPP
