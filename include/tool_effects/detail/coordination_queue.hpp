// tool_effects/detail/coordination_queue.hpp — internal to <tool_effects/coordination.hpp> (included at its
// end): the queue behind `local_coordinator`. Requests in arrival order (`local_node`), granted under
// access.hpp's rule when no older request conflicts; the waiters of asynchronous and blocking
// acquisitions; and the definitions of `local_grant`'s and `local_coordinator`'s members.
// The dispatcher asks in two ways (what a coordinated call costs is what a turn's calls do not
// share): a turn's start asks for the calls ready then as one group request (`grant_group`: one lock and one
// node for all of them, each call released on its own, without the lock unless a request waits), and a call
// that becomes ready later asks alone as it runs (`try_acquire_in_turn`, then a wait). Neither keeps the queue
// alive per grant: the turn's copy of the coordinator does, until its calls' grants are released.
#ifndef TOOL_EFFECTS_DETAIL_COORDINATION_QUEUE_HPP
#define TOOL_EFFECTS_DETAIL_COORDINATION_QUEUE_HPP

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/system/error_code.hpp>

#include <tool_effects/call_description.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects {


namespace detail {

// Someone waiting for a node's grant (async handler or blocked thread).
struct local_waiter {
  virtual ~local_waiter() = default;
  // Exactly once: the grant, or an error (and an empty grant).
  virtual void complete(boost::system::error_code ec, local_grant g) = 0;
};

enum class node_state : std::uint8_t { waiting, granted, free };

// A call of a group request (local_state::grant_group): its description, and whether its grant is still held
// (cleared without the queue's lock: local_state::release_member).
struct group_member {
  const call_description* what = nullptr;
  std::atomic<bool> live{false};
};

// A quick, sound pre-check of access.hpp's rule for long queues: a 64-bit Bloom summary of what a request
// holds (`have`) and what it would collide with (`want`). `may_conflict(a, b)` is true whenever
// `conflicts(a, b)` is (no false negatives; modes are ignored), and false for most pairs that touch other
// resources or other targets of one resource, so the full rule runs only on those that may conflict.
// Per access with path P (target t or none), "strict ancestors" of "a/b/c" being "", "a", "a/b":
//   have: node(P), under(A) for each strict ancestor A, and at(P, t) if targeted;
//   want: under(P) (something below P), and at(P, t) if targeted, else node(P) (anything on P).
// Overlap cases: P a strict ancestor of Q: want under(P) meets have under(P); P == Q with one side
// untargeted: want node(P) meets have node(P); P == Q, equal targets: want at(P, t) meets have at(P, t).
// P == Q with different targets meets nothing (bar a hash collision), which is the rule.
struct conflict_filter {
  std::uint64_t have = 0, want = 0;
  bool all = false;  // exclusive (unknown) call: conflicts with everything
};

inline bool may_conflict(const conflict_filter& a, const conflict_filter& b) noexcept {
  return a.all || b.all || (a.want & b.have) != 0 || (b.want & a.have) != 0;
}

struct filter_hash {
  std::uint64_t h = 14695981039346656037ull;
  void add(unsigned char c) noexcept { h = (h ^ c) * 1099511628211ull; }
  void add(std::string_view s) noexcept {
    for (const char c : s) add(static_cast<unsigned char>(c));
  }
  [[nodiscard]] std::uint64_t bit() const noexcept { return std::uint64_t{1} << (h >> 58); }
};

inline conflict_filter make_conflict_filter(const call_description& d) noexcept {
  conflict_filter f;
  if (d.exclusive) {
    f.all = true;
    return f;
  }
  for (const auto& x : d.accesses) {
    const std::string_view p = x.resource;
    filter_hash node;
    node.add(1);
    node.add(p);
    f.have |= node.bit();
    filter_hash under;  // under(prefix), extended as the path is read
    under.add(3);
    if (!p.empty()) f.have |= under.bit();  // under("")
    for (const char c : p) {
      if (c == '/') f.have |= under.bit();  // under(the strict ancestor read so far)
      under.add(static_cast<unsigned char>(c));
    }
    f.want |= under.bit();  // under(P)
    if (x.target) {
      filter_hash at;
      at.add(2);
      at.add(p);
      at.add(0xff);
      at.add(*x.target);
      f.have |= at.bit();
      f.want |= at.bit();
    } else {
      f.want |= node.bit();
    }
  }
  return f;
}

// The queue's lock: one word, 0 free, 1 held, 2 held and someone may sleep on it (the futex mutex of
// Drepper's "Futexes Are Tricky", which glibc's default mutex also is). Taking and giving back an
// uncontended lock is one atomic instruction each, inline: `std::mutex` costs ≈ 50 instructions per pair in
// glibc's type dispatch, a quarter of what a coordinated no-op call adds (docs/benchmarks.md). Contended, a
// thread sleeps in `std::atomic::wait` (libstdc++ and libc++ spin briefly, then wait on a futex where there
// is one) and the unlock that finds 2 wakes one sleeper; it is not fair and not recursive, as std::mutex.
class queue_lock {
 public:
  queue_lock() = default;
  queue_lock(const queue_lock&) = delete;
  queue_lock& operator=(const queue_lock&) = delete;

  void lock() noexcept {
    int c = 0;
    if (!word_.compare_exchange_strong(c, 1, std::memory_order_acquire, std::memory_order_relaxed)) lock_contended(c);
  }
  void unlock() noexcept {
    if (word_.exchange(0, std::memory_order_release) == 2) word_.notify_one();
  }

 private:
  // `c`: the value the first attempt saw (1 or 2). Marks the lock as having sleepers, then sleeps until it is
  // given back; whoever takes it here keeps it marked (another sleeper may remain).
  void lock_contended(int c) noexcept {
    if (c != 2) c = word_.exchange(2, std::memory_order_acquire);
    while (c != 0) {
      word_.wait(2, std::memory_order_relaxed);
      c = word_.exchange(2, std::memory_order_acquire);
    }
  }
  std::atomic<int> word_{0};
};

// One request: in the queue (arrival order) from its acquire until its release or abandonment. Nodes are
// owned by the queue and reused (a free list), so a request costs no allocation once the queue is warm,
// and a node outlives every ticket naming it (a ticket's holder keeps the queue alive while it uses it);
// `serial` tells which request a node holds now. The queue keeps as many nodes as it ever held requests
// at once.
// What an admission scan reads of every older node (`next`, the filter, `what`) comes first, in the node's
// one cache line (with 64 grants held, the scan is most of the queue's time: docs/benchmarks.md).
struct alignas(64) local_node {
  local_node* next = nullptr;
  conflict_filter filter;      // of `what`, made when a long queue first needs it
  bool has_filter = false;
  node_state state = node_state::free;
  const call_description* what = nullptr;
  local_node* prev = nullptr;
  std::uint64_t token = 0;
  std::uint64_t serial = 0;
  local_state* owner = nullptr;  // the queue (a node never changes queues)
  // A group request (grant_group; then `what` is null): the calls it holds for (`member_count` of them, none for
  // a request of one call), each released on its own; `live` of them are held, and the node leaves the queue
  // with the last. The array keeps its size for the node's next group.
  std::unique_ptr<group_member[]> members;
  std::size_t member_capacity = 0;
  std::size_t member_count = 0;
  std::atomic<std::size_t> live{0};
  std::unique_ptr<local_waiter> waiter;
  // While granted: the queue, kept alive for the grant's release; empty for a dispatched call's grant, whose
  // turn holds a copy of the coordinator until the grant is released (try_acquire_in_turn).
  std::shared_ptr<local_state> keep;
};

// The grant of one call of a group request (local_state::grant_group), which a turn takes at its start for the
// calls ready then (detail/execute_calls.hpp): move-only, released by `release()` or its destructor, with its own
// fencing token. It does not keep the queue alive: the turn's options hold a copy of the coordinator until its
// calls' grants are released (the engine, which owns both, destroys its grants first).
class turn_grant {
 public:
  turn_grant() = default;
  turn_grant(const turn_grant&) = delete;
  turn_grant& operator=(const turn_grant&) = delete;
  turn_grant(turn_grant&& o) noexcept
      : group_(std::exchange(o.group_, nullptr)), member_(o.member_), token_(std::exchange(o.token_, 0)) {}
  turn_grant& operator=(turn_grant&& o) noexcept {
    if (this != &o) {
      release();
      group_ = std::exchange(o.group_, nullptr);
      member_ = o.member_;
      token_ = std::exchange(o.token_, 0);
    }
    return *this;
  }
  ~turn_grant() { release(); }

  [[nodiscard]] std::uint64_t fencing_token() const noexcept { return token_; }
  [[nodiscard]] bool held() const noexcept { return group_ != nullptr; }
  void release() noexcept {
    if (group_ != nullptr) release_held();
    token_ = 0;
  }

 private:
  friend struct local_state;  // only the queue makes a held grant (grant_group), in place
  void hold(local_node* group, std::size_t member, std::uint64_t token) noexcept {
    group_ = group;
    member_ = member;
    token_ = token;
  }
  inline void release_held() noexcept;
  local_node* group_ = nullptr;
  std::size_t member_ = 0;
  std::uint64_t token_ = 0;
};

// A waiting request, as its wait limit and its cancellation name it: the node and the request's serial
// (the node may hold a later request by the time they fire).
struct local_ticket {
  local_node* node = nullptr;
  std::uint64_t serial = 0;
};

// `self` below: the shared pointer to this queue that the caller holds (a node held by a public grant keeps a
// copy: `keep`; `shared_from_this()` gives one to the waiters a dispatcher's release unblocks).
struct local_state : std::enable_shared_from_this<local_state> {
  queue_lock m;
  local_node* head = nullptr;
  local_node* tail = nullptr;
  local_node* free_nodes = nullptr;  // linked through `next`
  std::uint64_t last_token = 0;
  std::uint64_t last_serial = 0;
  // Requests in the queue not granted yet. Atomic (sequentially consistent, as group_member::live): changed under
  // the lock, and read without it by release_member.
  std::atomic<std::size_t> waiting{0};

  local_state() = default;
  local_state(const local_state&) = delete;
  local_state& operator=(const local_state&) = delete;
  ~local_state() {
    for (local_node* n = free_nodes; n != nullptr;) delete std::exchange(n, n->next);
    for (local_node* n = head; n != nullptr;) delete std::exchange(n, n->next);
  }

  // Past this many older requests, each is first checked with the filters (making them is not free).
  static constexpr std::size_t unfiltered_scan = 4;

  // (A group's filter covers all its calls, released ones too: a superset is still sound.)
  static const conflict_filter& filter_of(local_node* n) noexcept {
    if (!n->has_filter) {
      if (n->member_count == 0) {
        n->filter = make_conflict_filter(*n->what);
      } else {
        n->filter = {};
        for (std::size_t i = 0; i < n->member_count; ++i) {
          const auto f = make_conflict_filter(*n->members[i].what);
          n->filter.have |= f.have;
          n->filter.want |= f.want;
          n->filter.all = n->filter.all || f.all;
        }
      }
      n->has_filter = true;
    }
    return n->filter;
  }

  // Whether request `o` conflicts with `d` (a group: one of its calls still held).
  static bool request_conflicts(const local_node* o, const call_description& d) {
    if (o->member_count == 0) return conflicts(*o->what, d);
    for (std::size_t i = 0; i < o->member_count; ++i)
      if (o->members[i].live.load() && conflicts(*o->members[i].what, d)) return true;
    return false;
  }

  // THE admission rule: no request before `stop` (older; held or waiting) conflicts with `d`
  // (access.hpp's rule; `self`, if given, is `d`'s node, whose filter it keeps).
  bool no_older_conflict(const local_node* stop, const call_description& d, local_node* self) {
    std::size_t k = 0;
    conflict_filter mine;
    bool have_mine = false;
    for (local_node* o = head; o != stop; o = o->next, ++k) {
      if (k >= unfiltered_scan) {
        if (!have_mine) {
          mine = self != nullptr ? filter_of(self) : make_conflict_filter(d);
          have_mine = true;
        }
        if (!may_conflict(mine, filter_of(o))) continue;
      }
      if (request_conflicts(o, d)) return false;
    }
    return true;
  }

  bool grantable(local_node* n) { return no_older_conflict(n, *n->what, n); }

  // Appends a waiting request for `d` (a reused node, or a new one; `d` null: a group, grant_group).
  local_node* enqueue(const call_description& d) { return enqueue_node(&d); }
  local_node* enqueue_node(const call_description* d) {
    local_node* n = free_nodes;
    if (n != nullptr) {
      free_nodes = n->next;
    } else {
      n = new local_node;
      n->owner = this;
    }
    n->what = d;
    n->has_filter = false;
    n->state = node_state::waiting;
    n->serial = ++last_serial;
    n->prev = tail;
    n->next = nullptr;
    if (tail) tail->next = n;
    else head = n;
    tail = n;
    ++waiting;
    return n;
  }

  // Takes a node out of the queue and puts it on the free list.
  void unlink_and_free(local_node* n) {
    if (n->prev) n->prev->next = n->next;
    else head = n->next;
    if (n->next) n->next->prev = n->prev;
    else tail = n->prev;
    n->state = node_state::free;
    n->what = nullptr;
    n->member_count = 0;
    n->prev = nullptr;
    n->next = free_nodes;
    free_nodes = n;
  }

  // Marks `n` granted with a new token; `local_grant(key(), n, token)` then holds it (and, with `self`, keeps
  // the queue alive until it is released).
  std::uint64_t grant_token(local_node* n, const std::shared_ptr<local_state>* self) noexcept {
    n->state = node_state::granted;
    n->token = ++last_token;
    if (self != nullptr) n->keep = *self;
    --waiting;
    return n->token;
  }
  static local_grant_key key() noexcept { return {}; }
  local_grant grant(local_node* n, const std::shared_ptr<local_state>& self) {
    const std::uint64_t t = grant_token(n, &self);
    return local_grant(key(), n, t);
  }

  struct granted_waiter {
    std::unique_ptr<local_waiter> waiter;
    local_grant grant;
  };

  // After a request for `removed` left the queue: the younger waiting requests it may have blocked that
  // are now grantable, from `from` on. Called under the mutex, only while some request waits.
  void collect_unblocked(const call_description& removed, local_node* from, std::vector<granted_waiter>& out,
                         const std::shared_ptr<local_state>& self) {
    for (local_node* w = from; w != nullptr && waiting != 0; w = w->next) {
      if (w->state != node_state::waiting || !conflicts(removed, *w->what) || !grantable(w)) continue;
      auto waiter = std::move(w->waiter);
      out.push_back({std::move(waiter), grant(w, self)});
    }
  }

  static void deliver(std::vector<granted_waiter>& ready) {
    for (auto& r : ready) r.waiter->complete({}, std::move(r.grant));
  }

  // release and abandon: the waiters to complete once the mutex is let go
  // (none unless a request waits: no vector, no call on the fast path).
  struct unblocked {
    std::optional<std::vector<granted_waiter>> ready;
    void collect(local_state* s, const call_description& removed, local_node* from) {
      if (s->waiting == 0) return;
      ready.emplace();
      // (a caller holds the queue: a grant's keep, or the turn's coordinator for a grant without one)
      s->collect_unblocked(removed, from, *ready, s->shared_from_this());
    }
    void deliver() {
      if (ready) local_state::deliver(*ready);
    }
  };

  // A granted request is released: it leaves the queue, and what it blocked is granted.
  void release(local_node* n) {
    unblocked u;
    {
      std::lock_guard lock(m);
      const call_description& removed = *n->what;  // the holder's description: valid until it returns
      local_node* next = n->next;
      unlink_and_free(n);
      u.collect(this, removed, next);
    }
    u.deliver();
  }

  // A call of a group request is released: what it blocked may be granted; the group leaves the queue with
  // its last call. Without the lock unless it is the last, or a request waits: a request enqueued and scanned
  // under the lock either sees the call released or is seen waiting here (both sides sequentially consistent:
  // `live` stored then `waiting` read, here; `waiting` increased then `live` read, there). A call that is not
  // the last does not touch the group after its decrement (the last may free it), so it looks for what it
  // unblocked from the queue's head.
  void release_member(local_node* g, std::size_t i) {
    const call_description& removed = *g->members[i].what;  // the call's: valid until its grant is released
    g->members[i].live.store(false);
    const bool last = g->live.fetch_sub(1) == 1;
    if (!last && waiting.load() == 0) return;
    unblocked u;
    {
      std::lock_guard lock(m);
      local_node* from = head;
      if (last) {
        from = g->next;
        unlink_and_free(g);
      }
      u.collect(this, removed, from);
    }
    u.deliver();
  }

  // Grants at once, as one request (a group node: one lock, one node), every call of `ready` (null: not in the
  // group) that no older request conflicts with: `out[i]` holds call i's grant, or stays empty (the dispatcher
  // then asks for that call alone when it runs). Precondition: the calls of `ready` do not conflict with one
  // another (a turn's calls that are ready at the same time never do: each waits for every earlier call it
  // conflicts with), so they are not checked against each other. Each grant has its own fencing token, in the
  // order of `ready`.
  void grant_group(std::span<const call_description* const> ready, std::span<turn_grant> out) {
    std::lock_guard lock(m);
    local_node* g = nullptr;
    group_member* members = nullptr;
    std::size_t count = 0;
    std::uint64_t token = last_token;  // (locals: the stores below cannot alias them)
    for (std::size_t i = 0; i < ready.size(); ++i) {
      // (the scan stops at the group: its calls are not checked against one another)
      if (ready[i] == nullptr || (head != g && !no_older_conflict(g, *ready[i], nullptr))) continue;
      if (g == nullptr) {
        g = enqueue_node(nullptr);
        g->state = node_state::granted;
        --waiting;
        if (g->member_capacity < ready.size()) {
          g->members = std::make_unique<group_member[]>(ready.size());
          g->member_capacity = ready.size();
        }
        members = g->members.get();
      }
      members[count].what = ready[i];
      members[count].live.store(true, std::memory_order_relaxed);  // (published by the lock, and by the call's post)
      out[i].hold(g, count, ++token);
      ++count;
    }
    last_token = token;
    if (g != nullptr) {
      g->member_count = count;
      g->live.store(count, std::memory_order_relaxed);
    }
  }

  // A waiting request gives up (wait limit, cancellation): it leaves the queue
  // and its waiter completes with `ec`. No-op once granted.
  void abandon(local_ticket t, boost::system::error_code ec) {
    unblocked u;
    std::unique_ptr<local_waiter> w;
    {
      std::lock_guard lock(m);
      local_node* n = t.node;
      if (n->serial != t.serial || n->state != node_state::waiting) return;
      const call_description& removed = *n->what;
      local_node* next = n->next;
      w = std::move(n->waiter);
      --waiting;
      unlink_and_free(n);
      u.collect(this, removed, next);
    }
    u.deliver();
    if (w) w->complete(ec, local_grant{});
  }

  // (The grant is made in the optional: a moved-from grant's destructor is not free.) `self` null: the grant
  // does not keep the queue alive (try_acquire_in_turn).
  std::optional<local_grant> try_acquire(const call_description& d, const std::shared_ptr<local_state>* self) {
    std::optional<local_grant> out;
    std::lock_guard lock(m);
    if (head == nullptr || no_older_conflict(nullptr, d, nullptr)) {
      local_node* const n = enqueue(d);
      out.emplace(key(), n, grant_token(n, self));
    }
    return out;
  }

  // Enqueues; granted at once, or `make_waiter(ticket)` is installed under the mutex.
  template <class MakeWaiter>
  std::pair<local_ticket, std::optional<local_grant>> start(const call_description& d, MakeWaiter&& make_waiter,
                                                            const std::shared_ptr<local_state>& self) {
    std::lock_guard lock(m);
    local_node* n = enqueue(d);
    const local_ticket t{n, n->serial};
    if (grantable(n)) return {t, grant(n, self)};
    n->waiter = make_waiter(t);
    return {t, std::nullopt};
  }
};

// Outstanding work counted on an executor until this is destroyed: the executor
// preferred with `outstanding_work.tracked` (standard executors, strands of
// them) or a work guard (the older executor model).
template <class Ex, bool Standard = boost::asio::execution::is_executor<Ex>::value>
struct tracked_work {
  std::decay_t<decltype(boost::asio::prefer(std::declval<const Ex&>(), boost::asio::execution::outstanding_work.tracked))> ex;
  explicit tracked_work(const Ex& e) : ex(boost::asio::prefer(e, boost::asio::execution::outstanding_work.tracked)) {}
  [[nodiscard]] auto executor() const { return ex; }
};
template <class Ex>
struct tracked_work<Ex, false> {
  boost::asio::executor_work_guard<Ex> guard;
  explicit tracked_work(const Ex& e) : guard(e) {}
  [[nodiscard]] Ex executor() const { return guard.get_executor(); }
};

// The waiter of an asynchronous acquisition: the handler, outstanding work on
// its executor, and the wait-limit timer.
template <class Handler>
struct async_local_waiter final : local_waiter {
  using executor_type = boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>;

  std::optional<Handler> handler;  // empty once completed
  tracked_work<executor_type> work;
  std::shared_ptr<boost::asio::steady_timer> timer;  // the wait limit, if any

  async_local_waiter(Handler h, const executor_type& ex) : handler(std::in_place, std::move(h)), work(ex) {}

  // Nothing of the handler outlives this call: a moved-from handler can still hold its executor (an
  // executor_binder copies its strand), and the queue frees this waiter later, on the releasing thread, when
  // the executor's context may be gone (a turn's private io_context ends as soon as the handler has run).
  // `ex`, tracked work, keeps that context running until the leftover is destroyed.
  void complete(boost::system::error_code ec, local_grant g) override {
    if (timer) timer->cancel();
    const auto ex = work.executor();
    boost::asio::post(ex, [h = std::move(*handler), ec, g = std::move(g), w = std::move(work)]() mutable {
      auto slot = boost::asio::get_associated_cancellation_slot(h);
      if (slot.is_connected()) slot.clear();
      std::move(h)(ec, std::move(g));
    });
    handler.reset();
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

inline void detail::turn_grant::release_held() noexcept {
  local_node* const g = std::exchange(group_, nullptr);
  g->owner->release_member(g, member_);
}

inline void local_grant::release_held() noexcept {
  detail::local_node* const n = std::exchange(node_, nullptr);
  const auto keep = std::move(n->keep);  // (only this grant touches a held node's `keep`; empty: see the node)
  n->owner->release(n);
}

inline local_coordinator::local_coordinator() : state_(std::make_shared<detail::local_state>()) {}

inline std::optional<local_grant> local_coordinator::try_acquire(const call_description& d) const {
  return state_->try_acquire(d, &state_);
}

namespace detail {
template <class C>
void grant_group(const C& c, std::span<const call_description* const> ready, std::span<turn_grant> out) {
  c.state_->grant_group(ready, out);
}

// The dispatcher's try_acquire (detail/dispatch_coordination.hpp): the same grant, without a reference to the
// queue per grant. The turn's options hold a copy of `c` until the grant is released (before the call's outcome
// reaches the engine that owns them), and a copy holds the queue.
inline std::optional<local_grant> try_acquire_in_turn(const local_coordinator& c, const call_description& d) {
  return c.state_->try_acquire(d, nullptr);
}
}  // namespace detail

inline local_grant local_coordinator::acquire(const call_description& d, acquire_options o) const {
  detail::blocking_local_waiter w;
  auto [ticket, now] = state_->start(d, [&](detail::local_ticket) {
    return std::make_unique<detail::forwarding_waiter>(&w);
  }, state_);
  if (now) return std::move(*now);
  std::unique_lock lock(w.m);
  if (o.wait_limit.count() > 0) {
    if (!w.cv.wait_for(lock, o.wait_limit, [&] { return w.done; })) {
      lock.unlock();
      state_->abandon(ticket, boost::asio::error::timed_out);
      lock.lock();
      w.cv.wait(lock, [&] { return w.done; });  // granted or abandoned: either way done now
    }
  } else {
    w.cv.wait(lock, [&] { return w.done; });
  }
  if (w.ec) throw boost::system::system_error(w.ec, "tool_effects::local_coordinator::acquire");
  return std::move(w.grant);
}

inline std::size_t local_coordinator::queued() const {
  std::lock_guard lock(state_->m);
  std::size_t n = 0;  // requests: a group counts the calls it still holds for
  for (const detail::local_node* o = state_->head; o != nullptr; o = o->next)
    n += o->member_count == 0 ? 1 : o->live.load();
  return n;
}

template <class Handler>
void local_coordinator::initiate(const call_description& d, acquire_options o, Handler handler) const {
  using waiter_t = detail::async_local_waiter<Handler>;
  auto ex = boost::asio::get_associated_executor(handler, boost::asio::any_io_executor(boost::asio::system_executor()));
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  const std::weak_ptr<detail::local_state> weak = state_;
  // The waiter, its timer and its cancellation are set up under the queue's
  // mutex, before anyone can grant the request.
  auto [ticket, now] = state_->start(d, [&](detail::local_ticket t) {
    auto w = std::make_unique<waiter_t>(std::move(handler), ex);
    if (slot.is_connected()) {
      slot.assign([weak, t](boost::asio::cancellation_type) {
        if (const auto s = weak.lock()) s->abandon(t, boost::asio::error::operation_aborted);
      });
    }
    if (o.wait_limit.count() > 0) {
      w->timer = std::make_shared<boost::asio::steady_timer>(ex, o.wait_limit);
      w->timer->async_wait([weak, t](const boost::system::error_code& ec) {
        if (ec) return;  // cancelled: the request was granted
        if (const auto s = weak.lock()) s->abandon(t, boost::asio::error::timed_out);
      });
    }
    return w;
  }, state_);
  if (now) {
    boost::asio::post(ex, [h = std::move(handler), g = std::move(*now)]() mutable {
      std::move(h)(boost::system::error_code{}, std::move(g));
    });
  }
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_DETAIL_COORDINATION_QUEUE_HPP
