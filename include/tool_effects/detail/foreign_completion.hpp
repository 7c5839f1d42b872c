// tool_effects/detail/foreign_completion.hpp — internal: how a thread that does not run an executor hands
// work to it without outliving its execution context (mcp_server's calls, etcd::lease_keeper::stop).
#ifndef TOOL_EFFECTS_DETAIL_FOREIGN_COMPLETION_HPP
#define TOOL_EFFECTS_DETAIL_FOREIGN_COMPLETION_HPP

#include <utility>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

namespace tool_effects::detail {

// `ex` with outstanding work tracked, for a thread other than the ones running it that will post to it: held
// until that thread has let go of every other copy of the executor (the one `post` takes, the one inside it,
// a strand it copied), and released last. While it lives the execution context cannot run out of work, so its
// owner (stdio's serve_fds, a test's io_context) cannot destroy it under this thread. Destroying it releases a
// strand's implementation before the work. Not executor_work_guard: the guard releases its work before its own
// untracked copy of the executor, whose strand may be the last reference (UBSan "invalid vptr" in
// ~strand_impl, in the landing CI). And not a guard moved into the completion: then the work goes when the
// completion runs, and `post` may still signal the context's condition variable after that (TSan, a test's
// io_context destroyed under pthread_cond_signal).
template <class Executor>
auto tracked_executor(const Executor& ex) {
  return boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked);
}

// tracked_executor of the executor associated with `handler`.
template <class Handler>
auto tracked_executor_of(const Handler& handler) {
  return tracked_executor(boost::asio::get_associated_executor(handler));
}

// Posts `handler(args...)` to the handler's executor, its cancellation slot cleared first (the operation is
// over). Called from a foreign thread that holds tracked_executor_of(handler) until this returns.
template <class Handler, class... Args>
void post_completion(Handler handler, Args... args) {
  const auto ex = boost::asio::get_associated_executor(handler);
  boost::asio::post(ex, [handler = std::move(handler), ... args = std::move(args)]() mutable {
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) slot.clear();
    std::move(handler)(std::move(args)...);
  });
}

// A handler that another thread completes, once: the executor associated with it keeps outstanding work from
// this object's creation until the completion has been posted (the tracked executor is released last, as above),
// and the handler runs there with its cancellation slot cleared. Create it on the thread that initiates the
// operation; if it is destroyed without being called, the handler goes first and then the work.
template <class Handler>
class foreign_completion {
 public:
  explicit foreign_completion(Handler handler)
      : work_(tracked_executor_of(handler)), handler_(std::move(handler)) {}

  template <class... Args>
  void operator()(Args... args) && {
    const auto tracked = std::move(work_);  // released after post_completion has let go of its copies
    post_completion(std::move(handler_), std::move(args)...);
  }

 private:
  decltype(tracked_executor_of(std::declval<const Handler&>())) work_;  // declared first: destroyed last
  Handler handler_;
};

// The handler's cancellation slot, when connected, cancels `cancel` (a turn_cancellation or anything with a
// cancel() that may be called from any thread).
template <class Handler, class Cancel>
void forward_cancellation(const Handler& handler, const Cancel& cancel) {
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  if (slot.is_connected()) slot.assign([cancel](boost::asio::cancellation_type) { cancel.cancel(); });
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_FOREIGN_COMPLETION_HPP
