// tool_effects/detail/coordination_queue.hpp — internal to <tool_effects/coordination.hpp> (included at its
// end): the queue behind `local_coordinator`. Requests in arrival order (`local_node`), granted under
// access.hpp's rule when no older request conflicts; the waiters of asynchronous and blocking
// acquisitions; and the definitions of `local_grant`'s and `local_coordinator`'s members.
#ifndef TOOL_EFFECTS_DETAIL_COORDINATION_QUEUE_HPP
#define TOOL_EFFECTS_DETAIL_COORDINATION_QUEUE_HPP

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
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

inline local_coordinator::local_coordinator() : state_(std::make_shared<detail::local_state>()) {}

inline std::optional<local_grant> local_coordinator::try_acquire(const call_description& d) const {
  return state_->try_acquire(d);
}

inline local_grant local_coordinator::acquire(const call_description& d, acquire_options o) const {
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

inline std::size_t local_coordinator::queued() const {
  std::lock_guard lock(state_->m);
  return state_->queued;
}

template <class Handler>
void local_coordinator::initiate(const call_description& d, acquire_options o, Handler handler) const {
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

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_DETAIL_COORDINATION_QUEUE_HPP
