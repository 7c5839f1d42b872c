// tool_effects/etcd/detail/async_acquisition.hpp — internal to <tool_effects/etcd/coordinator.hpp> (included
// at its end): etcd_coordinator's asynchronous acquisition, one coroutine on a strand of the
// executor it runs on (coordinator_options::executor, else the handler's). It awaits the lock protocol's
// round trips and its watch on an async_client of its own: no thread, no poll loop.
#ifndef TOOL_EFFECTS_ETCD_DETAIL_ASYNC_ACQUISITION_HPP
#define TOOL_EFFECTS_ETCD_DETAIL_ASYNC_ACQUISITION_HPP

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/this_coro.hpp>

namespace tool_effects::etcd::detail {

// What an acquisition's coroutine and its initiator share: whether it was cancelled, how to complete the
// handler (exactly once, thread-safe), and how to end a wait at once (set and called on the strand only).
struct acquisition_signal {
  std::atomic<bool> cancelled{false};
  std::function<void(boost::system::error_code, etcd_grant)> complete;
  std::function<void()> wake;
};

// The handler's end of an acquisition: completes it exactly once (grant, failure or cancellation), on its
// associated executor, never inside the initiating call.
template <class Handler>
struct etcd_async_op {
  using executor_type = boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>;
  std::mutex m;
  std::optional<Handler> handler;
  std::optional<boost::asio::executor_work_guard<executor_type>> work;

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

// The acquisition: lock_acquisition's start, then its steps (each reads the watch for at most 250 ms, so a
// lost lease is seen within that), until granted, failed, past its deadline or cancelled. Its keys are
// deleted on every path but a grant (best effort: the lease takes them otherwise).
inline boost::asio::awaitable<void> run_acquisition(std::shared_ptr<coordinator_state> s, call_description d,
                                                    std::chrono::steady_clock::time_point deadline,
                                                    std::shared_ptr<acquisition_signal> sig) {
  if (sig->cancelled) {
    sig->complete(boost::asio::error::operation_aborted, {});
    co_return;
  }
  if (s->keeper.lost()) {
    sig->complete(make_error_code(coordination_errc::lease_lost), {});
    co_return;
  }
  std::optional<async_client> c;
  std::optional<lock_acquisition> acq;
  std::optional<errc> failure;
  bool keys_gone = false;  // the protocol deleted them (wait limit) or the lease took them
  try {
    c.emplace(s->opts.client, co_await boost::asio::this_coro::executor);
    acq.emplace(*c, s->keeper.id(), s->opts.prefix, s->next_call_id(), d, deadline);
    sig->wake = [&acq] {
      if (acq) acq->wake();
    };
    bool granted = co_await acq->start();
    while (!granted) {
      if (sig->cancelled) failure = errc::cancelled;
      else if (s->keeper.lost()) failure = errc::lease_lost;
      if (failure) break;
      granted = co_await acq->step(std::chrono::milliseconds(250));
    }
    if (granted && s->keeper.lost()) failure = errc::lease_lost;  // granted under a lease gone by now: stale
  } catch (const error& e) {
    failure = e.value();
    keys_gone = e.value() == errc::lease_lost || e.value() == errc::coordination_timeout;
  } catch (...) {  // nothing else may leave the coroutine; the keys go with the lease if not below
    failure = errc::unavailable;
  }
  sig->wake = nullptr;
  if (failure) {
    if (acq && !keys_gone) {
      try {
        co_await acq->release();  // a failed request may have left the keys
      } catch (...) {
      }
    }
    sig->complete(acquisition_error(*failure), {});
    co_return;
  }
  sig->complete({}, etcd_grant(s, acq->take_grant()));
}

}  // namespace tool_effects::etcd::detail

namespace tool_effects::etcd {

template <class Handler>
void etcd_coordinator::initiate(const call_description& d, acquire_options o, Handler handler) const {
  using op_t = detail::etcd_async_op<Handler>;
  const auto ex = boost::asio::get_associated_executor(handler, boost::asio::any_io_executor(boost::asio::system_executor()));
  const boost::asio::any_io_executor io = state_->opts.executor ? *state_->opts.executor : boost::asio::any_io_executor(ex);
  const auto strand = boost::asio::make_strand(io);
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  auto op = std::make_shared<op_t>(std::move(handler), ex);
  auto sig = std::make_shared<detail::acquisition_signal>();
  sig->complete = [op](boost::system::error_code ec, etcd_grant g) { op->complete(ec, std::move(g)); };
  if (slot.is_connected()) {
    // completes at once; the coroutine, woken on its strand, deletes the keys
    slot.assign([op, sig, strand](boost::asio::cancellation_type) {
      sig->cancelled = true;
      op->complete(boost::asio::error::operation_aborted, etcd_grant{});
      boost::asio::post(strand, [sig] {
        if (sig->wake) sig->wake();
      });
    });
  }
  const auto deadline =
      std::chrono::steady_clock::now() + (o.wait_limit.count() > 0
                                              ? std::chrono::ceil<std::chrono::milliseconds>(o.wait_limit)
                                              : std::chrono::milliseconds(std::chrono::hours(24 * 365)));
  boost::asio::co_spawn(strand, detail::run_acquisition(state_, d, deadline, std::move(sig)), boost::asio::detached);
}

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_DETAIL_ASYNC_ACQUISITION_HPP
