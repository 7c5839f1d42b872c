// tool_effects/mcp/gateway/coordination.hpp — the coordinator and the journal of an effects gateway
// (<tool_effects/mcp/gateway.hpp>), each one type whatever backs it, so that one server type serves every
// configuration:
//
//   te::gateway_coordinator c;                                   // a local_coordinator
//   te::gateway_coordinator e(te::etcd::etcd_coordinator(o));    // or any Coordinator (a factory: renewed when lost)
//   te::gateway_journal j(te::sqlite_journal("gw.db"), "sqlite gw.db");  // or none: te::gateway_journal{}
//
// `gateway_coordinator` is a `Coordinator` that also knows, for the audit log, which calls each call waited
// for and why (the conflicting calls granted or queued before it in this process), and can be drained: once
// `drain()` is called every new acquisition fails at once (`coordination_errc::unavailable`, so the call
// never runs and is never journaled), and `wait_idle` waits for the calls under way.
#ifndef TOOL_EFFECTS_MCP_GATEWAY_COORDINATION_HPP
#define TOOL_EFFECTS_MCP_GATEWAY_COORDINATION_HPP

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <tool_effects/coordination.hpp>
#include <tool_effects/journal.hpp>
#include <tool_effects/plan.hpp>

namespace tool_effects {

/// What a call waited for before its grant, as the audit log reports it: the conflicting calls that held or
/// had asked for their grant before it in this process (a replica's own view), each with the reason
/// (`conflict_reason`), and how long it waited.
struct gateway_wait {
  struct blocker {
    std::string call;    ///< the tool's name as clients see it
    std::string reason;  ///< e.g. "bank/accounts[shared]: write / write"
  };
  std::vector<blocker> blockers{};
  std::chrono::nanoseconds waited{0};
};

namespace detail {
// The calls of one gateway coordinator under way (waiting or granted), in the order they asked.
struct gateway_tracker {
  struct entry {
    const call_description* d = nullptr;  // alive until the entry goes (the Coordinator contract)
    std::chrono::steady_clock::time_point asked{};
    std::uint64_t token = 0;  // granted: its fencing token
    gateway_wait wait{};
  };
  std::mutex m;
  std::condition_variable idle;
  std::map<std::uint64_t, entry> active;  // by age
  std::map<std::uint64_t, std::uint64_t> by_token;
  std::uint64_t next = 1;
  bool draining = false;

  static std::string call_of(const call_description& d) { return d.name.substr(0, d.name.rfind('#')); }
  // Registers a request; 0 when draining (refused).
  std::uint64_t add(const call_description& d) {
    const std::lock_guard l(m);
    if (draining) return 0;
    entry e;
    e.d = &d;
    e.asked = std::chrono::steady_clock::now();
    for (const auto& [seq, other] : active)
      if (auto why = conflict_reason(*other.d, d)) e.wait.blockers.push_back({call_of(*other.d), std::move(*why)});
    const std::uint64_t seq = next++;
    active.emplace(seq, std::move(e));
    return seq;
  }
  void granted(std::uint64_t seq, std::uint64_t token) {
    const std::lock_guard l(m);
    const auto it = active.find(seq);
    if (it == active.end()) return;
    it->second.token = token;
    it->second.wait.waited = std::chrono::steady_clock::now() - it->second.asked;
    by_token[token] = seq;
  }
  void remove(std::uint64_t seq) {
    const std::lock_guard l(m);
    const auto it = active.find(seq);
    if (it == active.end()) return;
    if (it->second.token != 0) by_token.erase(it->second.token);
    active.erase(it);
    if (active.empty()) idle.notify_all();
  }
};
}  // namespace detail

/// A grant of `gateway_coordinator`: the backing coordinator's grant, move-only, released by `release()` or
/// the destructor. `lost()` is the backing grant's (an etcd lease lost while held), false for others.
class gateway_grant {
 public:
  gateway_grant() = default;
  template <class G>
    requires(!std::is_same_v<G, gateway_grant> && CoordinatorGrant<G>)  // (the first: no recursion into the concept)
  explicit gateway_grant(G g) : g_(std::make_unique<impl<G>>(std::move(g))) {}
  gateway_grant(gateway_grant&&) noexcept = default;
  gateway_grant& operator=(gateway_grant&& o) noexcept {
    if (this != &o) {
      release();
      g_ = std::move(o.g_);
      tracker_ = std::move(o.tracker_);
      seq_ = std::exchange(o.seq_, 0);
    }
    return *this;
  }
  gateway_grant(const gateway_grant&) = delete;
  gateway_grant& operator=(const gateway_grant&) = delete;
  ~gateway_grant() { release(); }

  [[nodiscard]] std::uint64_t fencing_token() const noexcept { return g_ ? g_->token() : 0; }
  [[nodiscard]] bool held() const noexcept { return g_ && g_->held(); }
  [[nodiscard]] bool lost() const { return g_ && g_->lost(); }
  /// Gives the accesses back. Idempotent.
  void release() noexcept {
    if (g_) g_->release();
    if (const auto t = std::exchange(tracker_, nullptr)) t->remove(std::exchange(seq_, 0));
  }

 private:
  friend class gateway_coordinator;
  struct base {
    virtual ~base() = default;
    virtual std::uint64_t token() const noexcept = 0;
    virtual bool held() const noexcept = 0;
    virtual bool lost() const = 0;
    virtual void release() noexcept = 0;
  };
  template <class G>
  struct impl final : base {
    explicit impl(G x) : g(std::move(x)) {}
    std::uint64_t token() const noexcept override { return static_cast<std::uint64_t>(g.fencing_token()); }
    bool held() const noexcept override { return static_cast<bool>(g.held()); }
    bool lost() const override {
      if constexpr (requires { g.lost(); }) return static_cast<bool>(g.lost());
      else return false;
    }
    void release() noexcept override { g.release(); }
    G g;
  };
  std::unique_ptr<base> g_;
  std::shared_ptr<detail::gateway_tracker> tracker_;
  std::uint64_t seq_ = 0;
};

/// A `Coordinator` backed by any coordinator (a `local_coordinator` by default). Copies share it. Made with a
/// factory, it makes a new backing coordinator when the current one says it is lost (`lease_lost()`: an etcd
/// coordinator whose lease expired stays lost by design), so later calls are granted under a new lease.
class gateway_coordinator {
 public:
  using grant_type = gateway_grant;

  gateway_coordinator() : gateway_coordinator(local_coordinator{}) {}
  template <class C>
    requires(!std::is_same_v<std::decay_t<C>, gateway_coordinator> && Coordinator<C>)
  explicit gateway_coordinator(C c) : s_(std::make_shared<state>()) {
    s_->current = std::make_shared<impl<C>>(std::move(c));
  }
  /// Backed by `make()`, called now and again whenever the coordinator it made reports its lease lost.
  template <class Make>
    requires Coordinator<std::invoke_result_t<Make&>>
  static gateway_coordinator renewing(Make make) {
    gateway_coordinator out(make());
    out.s_->renew = [make]() mutable -> std::shared_ptr<base> {
      return std::make_shared<impl<std::invoke_result_t<Make&>>>(make());
    };
    return out;
  }

  [[nodiscard]] acquire_options default_acquire_options() const { return backing()->defaults(); }

  template <class Token>
  auto async_acquire(const call_description& d, acquire_options o, Token&& token) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, gateway_grant)>(
        [this, &d, o](auto handler) { this->start(d, o, std::move(handler)); }, token);
  }
  [[nodiscard]] gateway_grant acquire(const call_description& d, acquire_options o) const {
    const std::uint64_t seq = s_->tracker->add(d);
    if (seq == 0)
      throw boost::system::system_error(make_error_code(coordination_errc::unavailable), "the gateway is shutting down");
    try {
      gateway_grant g = backing()->acquire(d, o);
      attach(g, seq);
      return g;
    } catch (...) {
      s_->tracker->remove(seq);
      throw;
    }
  }
  gateway_grant acquire(const call_description&&, acquire_options) const = delete;
  template <class Token>
  void async_acquire(const call_description&&, acquire_options, Token&&) const = delete;

  /// What the call granted with fencing token `token` waited for (empty once its grant is released).
  [[nodiscard]] gateway_wait wait_of(std::uint64_t token) const {
    const std::lock_guard l(s_->tracker->m);
    const auto it = s_->tracker->by_token.find(token);
    if (it == s_->tracker->by_token.end()) return {};
    return s_->tracker->active.at(it->second).wait;
  }
  /// Calls `f(description, what)` whenever an acquisition ends without a grant (the call never runs): `what`
  /// is "coordination_timeout" (the wait limit), "cancelled", "lease_lost", "coordinator_unavailable", or
  /// "refused_shutting_down" (after `drain()`). On the thread that completes the acquisition; must not block.
  void on_failure(std::function<void(const call_description&, std::string)> f) const {
    const std::lock_guard l(s_->m);
    s_->on_failure = std::move(f);
  }
  /// Calls waiting for their grant or holding one.
  [[nodiscard]] std::size_t in_flight() const {
    const std::lock_guard l(s_->tracker->m);
    return s_->tracker->active.size();
  }
  /// From now on every acquisition fails at once with `coordination_errc::unavailable` (the call never runs).
  void drain() const {
    const std::lock_guard l(s_->tracker->m);
    s_->tracker->draining = true;
  }
  /// Waits until no call waits or holds a grant, at most `limit`; returns the calls still under way (their
  /// tool names).
  std::vector<std::string> wait_idle(std::chrono::milliseconds limit) const {
    std::unique_lock l(s_->tracker->m);
    s_->tracker->idle.wait_for(l, limit, [&] { return s_->tracker->active.empty(); });
    std::vector<std::string> left;
    for (const auto& [seq, e] : s_->tracker->active) left.push_back(detail::gateway_tracker::call_of(*e.d));
    return left;
  }

 private:
  struct base {
    virtual ~base() = default;
    virtual acquire_options defaults() const = 0;
    virtual bool lost() const = 0;
    virtual gateway_grant acquire(const call_description& d, acquire_options o) const = 0;
    virtual void async_acquire(const call_description& d, acquire_options o, boost::asio::cancellation_slot slot,
                               boost::asio::any_io_executor ex,
                               std::function<void(boost::system::error_code, gateway_grant)> done) const = 0;
  };
  template <class C>
  struct impl final : base {
    explicit impl(C x) : c(std::move(x)) {}
    acquire_options defaults() const override { return c.default_acquire_options(); }
    bool lost() const override {
      if constexpr (requires { c.lease_lost(); }) return c.lease_lost();
      else return false;
    }
    gateway_grant acquire(const call_description& d, acquire_options o) const override {
      return gateway_grant(c.acquire(d, o));
    }
    void async_acquire(const call_description& d, acquire_options o, boost::asio::cancellation_slot slot,
                       boost::asio::any_io_executor ex,
                       std::function<void(boost::system::error_code, gateway_grant)> done) const override {
      c.async_acquire(d, o,
                      boost::asio::bind_cancellation_slot(
                          slot, boost::asio::bind_executor(ex, [done = std::move(done)](boost::system::error_code ec,
                                                                                        typename C::grant_type g) {
                            done(ec, ec ? gateway_grant() : gateway_grant(std::move(g)));
                          })));
    }
    C c;
  };
  struct state {
    std::mutex m;
    std::shared_ptr<base> current;
    std::function<std::shared_ptr<base>()> renew;
    std::function<void(const call_description&, std::string)> on_failure;
    std::shared_ptr<detail::gateway_tracker> tracker = std::make_shared<detail::gateway_tracker>();
  };

  std::shared_ptr<base> backing() const {
    const std::lock_guard l(s_->m);
    if (s_->renew && s_->current->lost()) s_->current = s_->renew();  // a lost lease stays lost: a new one
    return s_->current;
  }
  void attach(gateway_grant& g, std::uint64_t seq) const {
    s_->tracker->granted(seq, g.fencing_token());
    g.tracker_ = s_->tracker;
    g.seq_ = seq;
  }
  void failed(const call_description& d, const boost::system::error_code& ec, bool refused) const {
    std::function<void(const call_description&, std::string)> f;
    {
      const std::lock_guard l(s_->m);
      f = s_->on_failure;
    }
    if (!f) return;
    f(d, refused                                                       ? "refused_shutting_down"
         : ec == boost::asio::error::timed_out                         ? "coordination_timeout"
         : ec == make_error_code(coordination_errc::lease_lost)        ? "lease_lost"
         : ec == make_error_code(coordination_errc::unavailable)       ? "coordinator_unavailable"
                                                                       : "cancelled");
  }
  template <class Handler>
  void start(const call_description& d, acquire_options o, Handler handler) const {
    boost::asio::any_io_executor ex = boost::asio::get_associated_executor(handler);
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    auto h = std::make_shared<Handler>(std::move(handler));
    const std::uint64_t seq = s_->tracker->add(d);
    if (seq == 0) {  // draining: refused at once, never on this stack
      failed(d, make_error_code(coordination_errc::unavailable), true);
      boost::asio::post(ex, [h] { std::move(*h)(make_error_code(coordination_errc::unavailable), gateway_grant()); });
      return;
    }
    backing()->async_acquire(d, o, slot, ex, [self = *this, &d, h, seq](boost::system::error_code ec, gateway_grant g) {
      if (ec) {
        self.s_->tracker->remove(seq);
        self.failed(d, ec, false);
      } else {
        self.attach(g, seq);
      }
      std::move(*h)(ec, std::move(g));
    });
  }

  std::shared_ptr<state> s_;
};

static_assert(Coordinator<gateway_coordinator>);

/// A turn journal backed by any `Journal` (an `sqlite_journal`, an `etcd::etcd_journal`), or by none
/// (default-constructed: it remembers nothing, so nothing is replayed and nothing is ever in doubt). Copies
/// share it. A `BatchJournal`: the records of calls that start or end together share a commit when the
/// backing journal groups them.
class gateway_journal {
 public:
  gateway_journal() : j_(std::make_shared<none>()) {}
  template <class J>
    requires(!std::is_same_v<std::decay_t<J>, gateway_journal> && Journal<J>)
  gateway_journal(J j, std::string description)
      : j_(std::make_shared<impl<J>>(std::move(j))), what_(std::move(description)), enabled_(true) {}

  /// Whether a journal backs it.
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }
  /// What backs it ("sqlite /var/lib/gw.db", ...; "" for none).
  [[nodiscard]] const std::string& description() const noexcept { return what_; }

  [[nodiscard]] std::optional<journal_entry> find(const std::string& key) const { return j_->find(key); }
  void record_started(const std::string& key, std::string_view name) const { j_->started(key, name); }
  void record_ended(const std::string& key, const journal_entry& e) const { j_->ended(key, e); }
  void record_batch(std::span<journal_record> records) const { j_->batch(records); }
  [[nodiscard]] journal_group_commit& group_commit() const noexcept { return j_->queue(); }

 private:
  struct base {
    virtual ~base() = default;
    virtual std::optional<journal_entry> find(const std::string& key) const = 0;
    virtual void started(const std::string& key, std::string_view name) const = 0;
    virtual void ended(const std::string& key, const journal_entry& e) const = 0;
    virtual void batch(std::span<journal_record> records) const = 0;
    virtual journal_group_commit& queue() const noexcept = 0;
  };
  struct none final : base {
    std::optional<journal_entry> find(const std::string&) const override { return std::nullopt; }
    void started(const std::string&, std::string_view) const override {}
    void ended(const std::string&, const journal_entry&) const override {}
    void batch(std::span<journal_record>) const override {}
    journal_group_commit& queue() const noexcept override { return q; }
    mutable journal_group_commit q;
  };
  template <class J>
  struct impl final : base {
    explicit impl(J x) : j(std::move(x)) {}
    std::optional<journal_entry> find(const std::string& key) const override { return j.find(key); }
    void started(const std::string& key, std::string_view name) const override { j.record_started(key, name); }
    void ended(const std::string& key, const journal_entry& e) const override { j.record_ended(key, e); }
    void batch(std::span<journal_record> records) const override {
      if constexpr (BatchJournal<J>) {
        j.record_batch(records);
      } else {
        for (auto& r : records) try {
            if (r.entry.at == journal_entry::state::started) j.record_started(r.key, r.name);
            else j.record_ended(r.key, r.entry);
          } catch (...) {
            r.error = std::current_exception();
          }
      }
    }
    journal_group_commit& queue() const noexcept override {
      if constexpr (BatchJournal<J>) return j.group_commit();
      else return q;
    }
    J j;
    mutable journal_group_commit q;
  };
  std::shared_ptr<const base> j_;
  std::string what_;
  bool enabled_ = false;
};

static_assert(BatchJournal<gateway_journal>);

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_GATEWAY_COORDINATION_HPP
