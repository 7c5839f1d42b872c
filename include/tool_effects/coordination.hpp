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
#include <tool_effects/failure.hpp>
#include <tool_effects/outcome.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects {

/// How long one acquisition may wait. `wait_limit` zero: no limit.
struct acquire_options {
  std::chrono::nanoseconds wait_limit{0};
};

/// Errors a coordinator may complete an acquisition with besides `timed_out`
/// and `operation_aborted` (an etcd coordinator, issue 18): the dispatcher
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
/// outlive the grant. (Issue 18 adds an etcd coordinator behind this concept.)
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

namespace detail {
struct local_state;
struct local_node;
}  // namespace detail

/// A grant of `local_coordinator`. Move-only; released by `release()` or
/// its destructor, on whatever path the call ended.
class local_grant {
 public:
  local_grant() = default;
  local_grant(const local_grant&) = delete;
  local_grant& operator=(const local_grant&) = delete;
  local_grant(local_grant&& o) noexcept
      : state_(std::move(o.state_)), node_(std::move(o.node_)), token_(std::exchange(o.token_, 0)) {}
  local_grant& operator=(local_grant&& o) noexcept {
    if (this != &o) {
      release();
      state_ = std::move(o.state_);
      node_ = std::move(o.node_);
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
  inline void release() noexcept;

 private:
  friend struct detail::local_state;
  local_grant(std::shared_ptr<detail::local_state> s, std::shared_ptr<detail::local_node> n, std::uint64_t t) noexcept
      : state_(std::move(s)), node_(std::move(n)), token_(t) {}
  std::shared_ptr<detail::local_state> state_;
  std::shared_ptr<detail::local_node> node_;
  std::uint64_t token_ = 0;
};

namespace detail {

// Someone waiting for a node's grant (async handler or blocked thread).
struct local_waiter {
  virtual ~local_waiter() = default;
  // Exactly once: the grant, or an error (and an empty grant).
  virtual void complete(boost::system::error_code ec, local_grant g) = 0;
};

enum class node_state : std::uint8_t { waiting, granted, gone };

// One request: in the queue (arrival order) from its acquire until its release or abandonment.
struct local_node {
  const call_description* what = nullptr;
  node_state state = node_state::waiting;
  std::uint64_t token = 0;
  local_node* prev = nullptr;
  local_node* next = nullptr;
  std::shared_ptr<local_node> self;  // the queue's reference (null once unlinked)
  std::unique_ptr<local_waiter> waiter;
};

struct local_state : std::enable_shared_from_this<local_state> {
  std::mutex m;
  local_node* head = nullptr;
  local_node* tail = nullptr;
  std::uint64_t last_token = 0;
  std::size_t queued = 0;

  // THE admission rule: no older request (held or waiting) conflicts (access.hpp's rule).
  bool grantable(const local_node* n) const {
    for (const local_node* o = head; o != n; o = o->next)
      if (conflicts(*o->what, *n->what)) return false;
    return true;
  }

  std::shared_ptr<local_node> enqueue(const call_description& d) {
    auto n = std::make_shared<local_node>();
    n->what = &d;
    n->self = n;
    n->prev = tail;
    if (tail) tail->next = n.get();
    else head = n.get();
    tail = n.get();
    ++queued;
    return n;
  }

  void unlink(local_node* n) {
    if (n->prev) n->prev->next = n->next;
    else head = n->next;
    if (n->next) n->next->prev = n->prev;
    else tail = n->prev;
    n->prev = n->next = nullptr;
    --queued;
  }

  void grant(local_node* n) {
    n->state = node_state::granted;
    n->token = ++last_token;
  }

  struct granted_waiter {
    std::unique_ptr<local_waiter> waiter;
    local_grant grant;
  };

  // After `removed` left the queue: the younger waiting requests it may have
  // blocked that are now grantable. Called under the mutex.
  void collect_unblocked(const call_description& removed, local_node* from, std::vector<granted_waiter>& out) {
    for (local_node* w = from; w != nullptr; w = w->next) {
      if (w->state != node_state::waiting || !conflicts(removed, *w->what) || !grantable(w)) continue;
      grant(w);
      out.push_back({std::move(w->waiter), local_grant(shared_from_this(), w->self, w->token)});
    }
  }

  static void deliver(std::vector<granted_waiter>& ready) {
    for (auto& r : ready) r.waiter->complete({}, std::move(r.grant));
  }

  // Removes a node (released, or abandoned while waiting) and grants what it blocked.
  void remove(local_node* n) {
    std::vector<granted_waiter> ready;
    std::shared_ptr<local_node> keep;
    {
      std::lock_guard lock(m);
      if (n->state == node_state::gone) return;
      n->state = node_state::gone;
      local_node* next = n->next;
      unlink(n);
      keep = std::move(n->self);
      collect_unblocked(*n->what, next, ready);
    }
    deliver(ready);
  }

  // A waiting request gives up (wait limit, cancellation): it leaves the queue
  // and its waiter completes with `ec`. No-op once granted.
  void abandon(const std::shared_ptr<local_node>& n, boost::system::error_code ec) {
    std::vector<granted_waiter> ready;
    std::unique_ptr<local_waiter> w;
    {
      std::lock_guard lock(m);
      if (n->state != node_state::waiting) return;
      n->state = node_state::gone;
      local_node* next = n->next;
      unlink(n.get());
      n->self.reset();
      w = std::move(n->waiter);
      collect_unblocked(*n->what, next, ready);
    }
    deliver(ready);
    if (w) w->complete(ec, local_grant{});
  }

  std::optional<local_grant> try_acquire(const call_description& d) {
    std::lock_guard lock(m);
    for (const local_node* o = head; o != nullptr; o = o->next)
      if (conflicts(*o->what, d)) return std::nullopt;
    auto n = enqueue(d);
    grant(n.get());
    return local_grant(shared_from_this(), n, n->token);
  }

  // Enqueues; granted at once, or `make_waiter()` is installed under the mutex.
  template <class MakeWaiter>
  std::pair<std::shared_ptr<local_node>, std::optional<local_grant>> start(const call_description& d,
                                                                           MakeWaiter&& make_waiter) {
    std::lock_guard lock(m);
    auto n = enqueue(d);
    if (grantable(n.get())) {
      grant(n.get());
      return {n, local_grant(shared_from_this(), n, n->token)};
    }
    n->waiter = make_waiter(n);
    return {n, std::nullopt};
  }
};

// The waiter of an asynchronous acquisition: the handler, a work guard on
// its executor, and the wait-limit timer.
template <class Handler>
struct async_local_waiter final : local_waiter {
  using executor_type = boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>;

  Handler handler;
  boost::asio::executor_work_guard<executor_type> work;
  std::shared_ptr<boost::asio::steady_timer> timer;  // the wait limit, if any

  async_local_waiter(Handler h, const executor_type& ex) : handler(std::move(h)), work(ex) {}

  void complete(boost::system::error_code ec, local_grant g) override {
    if (timer) timer->cancel();
    auto ex = work.get_executor();
    boost::asio::post(ex, [h = std::move(handler), ec, g = std::move(g), w = std::move(work)]() mutable {
      auto slot = boost::asio::get_associated_cancellation_slot(h);
      if (slot.is_connected()) slot.clear();
      std::move(h)(ec, std::move(g));
    });
  }
};

// The waiter of a blocking acquisition.
struct blocking_local_waiter final : local_waiter {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  boost::system::error_code ec;
  local_grant grant;

  void complete(boost::system::error_code e, local_grant g) override {
    std::lock_guard lock(m);
    ec = e;
    grant = std::move(g);
    done = true;
    cv.notify_all();
  }
};

// Forwards to a waiter owned elsewhere (the blocked thread owns its waiter).
struct forwarding_waiter final : local_waiter {
  blocking_local_waiter* to;
  explicit forwarding_waiter(blocking_local_waiter* t) : to(t) {}
  void complete(boost::system::error_code ec, local_grant g) override { to->complete(ec, std::move(g)); }
};

}  // namespace detail

inline void local_grant::release() noexcept {
  if (node_) {
    const auto n = std::move(node_);
    const auto s = std::move(state_);
    s->remove(n.get());
  }
  token_ = 0;
}

/// The in-process coordinator: a handle (copies share one queue; const
/// members, as the queue is shared) that
/// grants calls their accesses against every other call holding or asking
/// through the same queue. `with(coordinator)` in dispatch options puts
/// every call of the dispatched turn under it. Thread-safe.
class local_coordinator {
 public:
  using grant_type = local_grant;

  local_coordinator() : state_(std::make_shared<detail::local_state>()) {}

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
  [[nodiscard]] std::optional<local_grant> try_acquire(const call_description& d) const { return state_->try_acquire(d); }

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
  [[nodiscard]] local_grant acquire(const call_description& d, acquire_options o) const {
    detail::blocking_local_waiter w;
    auto [node, now] = state_->start(d, [&](const std::shared_ptr<detail::local_node>&) {
      return std::make_unique<detail::forwarding_waiter>(&w);
    });
    if (now) return std::move(*now);
    std::unique_lock lock(w.m);
    if (o.wait_limit.count() > 0) {
      if (!w.cv.wait_for(lock, o.wait_limit, [&] { return w.done; })) {
        lock.unlock();
        state_->abandon(node, boost::asio::error::timed_out);
        lock.lock();
        w.cv.wait(lock, [&] { return w.done; });  // granted or abandoned: either way done now
      }
    } else {
      w.cv.wait(lock, [&] { return w.done; });
    }
    if (w.ec) throw boost::system::system_error(w.ec, "tool_effects::local_coordinator::acquire");
    return std::move(w.grant);
  }

  /// Requests in the queue (held and waiting): for tests and monitoring.
  [[nodiscard]] std::size_t queued() const {
    std::lock_guard lock(state_->m);
    return state_->queued;
  }

 private:
  template <class Handler>
  void initiate(const call_description& d, acquire_options o, Handler handler) const {
    using waiter_t = detail::async_local_waiter<Handler>;
    auto ex = boost::asio::get_associated_executor(handler, boost::asio::any_io_executor(boost::asio::system_executor()));
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    const std::weak_ptr<detail::local_state> weak = state_;
    // The waiter, its timer and its cancellation are set up under the queue's
    // mutex, before anyone can grant the request.
    auto [node, now] = state_->start(d, [&](const std::shared_ptr<detail::local_node>& n) {
      auto w = std::make_unique<waiter_t>(std::move(handler), ex);
      if (slot.is_connected()) {
        slot.assign([weak, n](boost::asio::cancellation_type) {
          if (const auto s = weak.lock()) s->abandon(n, boost::asio::error::operation_aborted);
        });
      }
      if (o.wait_limit.count() > 0) {
        w->timer = std::make_shared<boost::asio::steady_timer>(ex, o.wait_limit);
        w->timer->async_wait([weak, n](const boost::system::error_code& ec) {
          if (ec) return;  // cancelled: the request was granted
          if (const auto s = weak.lock()) s->abandon(n, boost::asio::error::timed_out);
        });
      }
      return w;
    });
    if (now) {
      boost::asio::post(ex, [h = std::move(handler), g = std::move(*now)]() mutable {
        std::move(h)(boost::system::error_code{}, std::move(g));
      });
    }
  }

  std::shared_ptr<detail::local_state> state_;
  acquire_options defaults_{};
};

static_assert(Coordinator<local_coordinator>);
static_assert(TryAcquireCoordinator<local_coordinator>);

namespace detail {

// The coordinator among dispatch options' extras (the first extra that is a
// Coordinator), if any.
template <class Options>
struct options_coordinator {
  using type = void;
};
template <template <class...> class O, class... E>
struct options_coordinator<O<E...>> {
  template <class...>
  struct first {
    using type = void;
  };
  template <class H, class... T>
  struct first<H, T...> {
    using type = std::conditional_t<Coordinator<H>, H, typename first<T...>::type>;
  };
  using type = typename first<E...>::type;
};
template <class Options>
using options_coordinator_t = typename options_coordinator<std::remove_cvref_t<Options>>::type;
template <class Options>
inline constexpr bool options_have_coordinator = !std::is_void_v<options_coordinator_t<Options>>;

// A static tool's description, made once per tool type.
template <class Tool>
const call_description& static_description() {
  static const call_description d = describe<Tool>();
  return d;
}

// Sets the thread's current fencing token for the synchronous start of a call.
class fencing_scope {
 public:
  explicit fencing_scope(std::uint64_t t) noexcept : saved_(std::exchange(current_fencing_token(), t)) {}
  fencing_scope(const fencing_scope&) = delete;
  fencing_scope& operator=(const fencing_scope&) = delete;
  ~fencing_scope() { current_fencing_token() = saved_; }

 private:
  std::uint64_t saved_;
};

// The completion of a granted call: gives the grant back, then delivers the
// outcome (so the turn's successors find the accesses free).
// The failure of a call whose wait ended without a grant (it never ran), or
// whose grant was lost (`coordination_errc::lease_lost`).
template <class R>
outcome<R> coordination_failure(std::string_view name, effect_set effects, const boost::system::error_code& ec) {
  const bool lost = ec == make_error_code(coordination_errc::lease_lost);
  auto rec = make_failure_record(std::string(name), 0, classify(effects),
                                 lost ? failure_reason::lease_lost : failure_reason::coordination_timeout);
  rec.last_error_message = ec == boost::asio::error::timed_out ? "waited for the coordinator past the wait limit"
                           : lost ? "the coordinator's lease was lost: the grant and its fencing token are stale"
                           : ec == make_error_code(coordination_errc::unavailable)
                               ? "the coordinator could not be reached"
                               : "cancelled while waiting for the coordinator";
  return outcome<R>::failure(std::make_exception_ptr(call_failure(std::move(rec))));
}

template <class R, class Done, class Grant>
struct release_then {
  Done done;
  Grant grant;
  std::string_view name;
  effect_set effects;
  template <class O>
  void operator()(O&& o) {
    if constexpr (requires { grant.lost(); }) {
      if (grant.lost()) {  // the grant was lost while the call ran: whatever it did is not covered
        grant.release();
        done(coordination_failure<R>(name, effects, make_error_code(coordination_errc::lease_lost)));
        return;
      }
    }
    grant.release();
    done(std::forward<O>(o));
  }
};

// THE coordinated start of a dispatched call: acquires a grant for all of
// `d`'s accesses, then `run(done')` with `done'` releasing the grant before
// delivering the outcome; the call's attempt context carries the grant's
// token. Without a grant (wait limit, cancellation) `done` gets
// `call_failure{coordination_timeout}` and nothing runs. With a non-Asio
// executor (inline mode) the acquisition blocks this thread.
template <class R, class C, class Executor, class Done, class Run>
void coordinate_call(const C& c, const call_description& d, std::string_view name, effect_set effects,
                     const Executor& ex, Done&& done, Run run) {
  using grant_t = typename C::grant_type;
  using done_t = std::decay_t<Done>;
  auto start = [&run, name, effects](done_t dn, grant_t g) {
    const fencing_scope scope(g.fencing_token());
    run(release_then<R, done_t, grant_t>{std::move(dn), std::move(g), name, effects});
  };
  if constexpr (TryAcquireCoordinator<C>) {
    if (auto g = c.try_acquire(d)) {
      start(std::forward<Done>(done), std::move(*g));
      return;
    }
  }
  if constexpr (boost::asio::execution::is_executor<Executor>::value || boost::asio::is_executor<Executor>::value) {
    c.async_acquire(d, c.default_acquire_options(),
                    boost::asio::bind_executor(ex, [dn = done_t(std::forward<Done>(done)), run = std::move(run), name,
                                                    effects](boost::system::error_code ec, grant_t g) mutable {
                      if (ec) {
                        dn(coordination_failure<R>(name, effects, ec));
                        return;
                      }
                      // The turn aborted while this call waited (abort_on_error): it never starts.
                      if constexpr (requires { dn.engine->abort_requested(); }) {
                        if (dn.engine->abort_requested()) {
                          g.release();
                          dn(outcome<R>::abort());
                          return;
                        }
                      }
                      const fencing_scope scope(g.fencing_token());
                      run(release_then<R, done_t, grant_t>{std::move(dn), std::move(g), name, effects});
                    }));
  } else {
    grant_t g;
    try {
      g = c.acquire(d, c.default_acquire_options());
    } catch (const boost::system::system_error& e) {
      done(coordination_failure<R>(name, effects, e.code()));
      return;
    }
    start(std::forward<Done>(done), std::move(g));
  }
}

}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_COORDINATION_HPP
