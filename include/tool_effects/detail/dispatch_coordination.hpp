// tool_effects/detail/dispatch_coordination.hpp — internal to the dispatcher (detail/execute_calls.hpp):
// the coordinated start of a dispatched call. The coordinator among the dispatch options' extras, the
// static tools' descriptions, the fencing token of the synchronous start, and `coordinate_call`, which
// acquires a grant (coordination.hpp) before the call runs and releases it before its outcome is delivered.
#ifndef TOOL_EFFECTS_DETAIL_DISPATCH_COORDINATION_HPP
#define TOOL_EFFECTS_DETAIL_DISPATCH_COORDINATION_HPP

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/is_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <tool_effects/attempt.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/cancellation.hpp>
#include <tool_effects/coordination.hpp>  // (which includes this header at its end)
#include <tool_effects/detail/across_turns_fwd.hpp>
#include <tool_effects/detail/config.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/outcome.hpp>

namespace tool_effects {

namespace detail {

// A grant now, or nothing, for a dispatched call (TryAcquireCoordinator): `c.try_acquire(d)`, or a lighter form
// of it where a coordinator has one (local_coordinator: coordination_queue.hpp), which may rely on the turn's
// copy of the coordinator outliving the grant (the grant is released before the call's outcome is delivered).
template <class C>
std::optional<typename C::grant_type> try_acquire_in_turn(const C& c, const call_description& d) {
  return c.try_acquire(d);
}

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

// Whether a grant can be lost while held (a lease: `lost()`, concept CoordinatorGrant).
template <class Grant>
inline constexpr bool grant_can_be_lost = requires(Grant& g) { g.lost(); };

// The completion of a granted call: gives the grant back, then delivers the
// outcome (so the turn's successors find the accesses free); a grant lost
// while the call ran turns the outcome into `call_failure{lease_lost}` (the
// call's name and effects are kept for that failure only).
template <class R, class Done, class Grant, bool Losable = grant_can_be_lost<Grant>>
struct release_then {
  Done done;
  Grant grant;
  std::string_view name;
  effect_set effects;
  template <class O>
  void operator()(O&& o) {
    if (grant.lost()) {  // the grant was lost while the call ran: whatever it did is not covered
      grant.release();
      done(coordination_failure<R>(name, effects, make_error_code(coordination_errc::lease_lost)));
      return;
    }
    grant.release();
    done(std::forward<O>(o));
  }
};
template <class R, class Done, class Grant>
struct release_then<R, Done, Grant, false> {
  Done done;
  Grant grant;
  template <class O>
  void operator()(O&& o) {
    grant.release();
    done(std::forward<O>(o));
  }
};

// `release_then` for the grant `g` (moved from).
template <class R, class Done, class Grant>
release_then<R, Done, Grant> make_release_then(Done&& dn, Grant& g, std::string_view name, effect_set effects) {
  if constexpr (grant_can_be_lost<Grant>) {
    return {std::move(dn), std::move(g), name, effects};
  } else {
    (void)name;
    (void)effects;
    return {std::move(dn), std::move(g)};
  }
}

// A wait for a grant that the turn's cancellation can end. Asio's cancellation slots are not
// thread-safe, so the acquisition is started, the cancellation emitted and the completion run on one
// strand; `ended` (on that strand) says the completion ran.
struct cancellable_wait {
  boost::asio::cancellation_signal signal;
  bool ended = false;
  std::uint64_t reaction = 0;
};

// Starts `c.async_acquire(d)` on a strand of `ex` with a cancellation slot that `cancel` triggers;
// `on_grant(ec, grant)` runs on that strand (`operation_aborted` if the turn was cancelled first).
template <class C, class Executor, class OnGrant>
void acquire_cancellably(const C& c, const call_description& d, const Executor& ex, const turn_cancellation& cancel,
                         OnGrant on_grant) {
  using grant_t = typename C::grant_type;
  auto strand = boost::asio::make_strand(ex);
  auto w = std::make_shared<cancellable_wait>();
  boost::asio::dispatch(strand, [&c, &d, &cancel, strand, w, on_grant = std::move(on_grant)]() mutable {
    w->reaction = cancel.on_cancel([strand, w] {
      boost::asio::post(strand, [w] {
        if (!w->ended) w->signal.emit(boost::asio::cancellation_type::terminal);
      });
    });
    c.async_acquire(d, c.default_acquire_options(),
                    boost::asio::bind_cancellation_slot(
                        w->signal.slot(),
                        boost::asio::bind_executor(strand, [&cancel, w, on_grant = std::move(on_grant)](
                                                               boost::system::error_code ec, grant_t g) mutable {
                          w->ended = true;
                          cancel.forget(w->reaction);
                          on_grant(ec, std::move(g));
                        })));
  });
}

// A call runs under its grant `g` (moved into its completion), with the grant's token as the thread's
// fencing token while it starts.
template <class R, class Done, class Grant, class Run>
void run_granted(Done&& dn, Grant& g, std::string_view name, effect_set effects, Run& run) {
  const fencing_scope scope(g.fencing_token());
  run(make_release_then<R>(std::decay_t<Done>(std::forward<Done>(dn)), g, name, effects));
}

// The wait for a grant, when none was free at once (or the coordinator cannot tell without waiting): apart
// from coordinate_call, so that the path with a free grant is a small function.
template <class R, class C, class Executor, class Cancel, class Done, class Run>
TOOL_EFFECTS_NOINLINE void wait_for_grant(const C& c, const call_description& d, std::string_view name,
                                          effect_set effects, const Executor& ex, Cancel cancel, Done&& done,
                                          Run run) {
  constexpr bool cancellable = std::is_same_v<Cancel, const turn_cancellation*>;
  using grant_t = typename C::grant_type;
  using done_t = std::decay_t<Done>;
  if constexpr (boost::asio::execution::is_executor<Executor>::value || boost::asio::is_executor<Executor>::value) {
    // The end of the wait: fail, abort, or run the call under its grant.
    auto on_grant = [dn = done_t(std::forward<Done>(done)), run = std::move(run), name, effects,
                     cancel](boost::system::error_code ec, grant_t g) mutable {
      (void)cancel;  // (nullptr_t without a turn cancellation)
      if constexpr (cancellable) {
        if (!ec && cancel->cancelled()) {  // granted as its turn was cancelled: never runs
          g.release();
          ec = boost::asio::error::operation_aborted;
        }
      }
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
      run_granted<R>(std::move(dn), g, name, effects, run);
    };
    if constexpr (cancellable) {
      acquire_cancellably(c, d, ex, *cancel, std::move(on_grant));
    } else {
      c.async_acquire(d, c.default_acquire_options(), boost::asio::bind_executor(ex, std::move(on_grant)));
    }
  } else {
    if constexpr (cancellable) {  // a cancellable wait, run to its end in this thread
      boost::asio::io_context ctx;
      coordinate_call<R>(c, d, name, effects, ctx.get_executor(), cancel, std::forward<Done>(done), std::move(run));
      ctx.run();
      return;
    }
    grant_t g;
    try {
      g = c.acquire(d, c.default_acquire_options());
    } catch (const boost::system::system_error& e) {
      done(coordination_failure<R>(name, effects, e.code()));
      return;
    }
    run_granted<R>(std::forward<Done>(done), g, name, effects, run);
  }
}

// THE coordinated start of a dispatched call: acquires a grant for all of
// `d`'s accesses, then `run(done')` with `done'` releasing the grant before
// delivering the outcome; the call's attempt context carries the grant's
// token. Without a grant (wait limit, cancellation of the acquisition or of
// the turn: `cancel`, a `const turn_cancellation*` or `nullptr`) `done` gets `call_failure{coordination_timeout}` and
// nothing runs. With a non-Asio executor (inline mode) the acquisition
// blocks this thread (on a private io_context when the turn is cancellable).
template <class R, class C, class Executor, class Cancel, class Done, class Run>
void coordinate_call(const C& c, const call_description& d, std::string_view name, effect_set effects,
                     const Executor& ex, Cancel cancel, Done&& done, Run run) {
  if constexpr (TryAcquireCoordinator<C>) {
    if (auto g = try_acquire_in_turn(c, d)) {
      run_granted<R>(std::forward<Done>(done), *g, name, effects, run);
      return;
    }
  }
  wait_for_grant<R>(c, d, name, effects, ex, cancel, std::forward<Done>(done), std::move(run));
}

}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_DETAIL_DISPATCH_COORDINATION_HPP
