// tool_effects/impl/recovery.ipp — the definitions of detail/recovery.hpp's drivers: the synchronous `drive`
// and the awaitable `recover` / `recover_to_error` (templates on the timer's clock; this file brings Asio's
// timer). Included by that header (header-only, the default), or compiled once by <tool_effects/impl/src.hpp>
// (TOOL_EFFECTS_SEPARATE_COMPILATION), which instantiates the awaitable drivers on the steady clock there.
#ifndef TOOL_EFFECTS_IMPL_RECOVERY_IPP
#define TOOL_EFFECTS_IMPL_RECOVERY_IPP

#include <tool_effects/detail/recovery.hpp>

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

namespace tool_effects::detail {

TOOL_EFFECTS_DECL void drive(recovery_refs o, call_settings s, effect_set effects, const erased_attempts& c,
                             const stop_token& stop) {
  recovery_state st(o, std::move(s), effects);
  std::exception_ptr e;
  for (recovery_state::step next = st.start();;) {
    switch (next.kind) {
      case recovery_state::step_kind::confirm: {
        confirmation answer = confirmation::deny;
        try {
          if (o.approver) answer = o.approver->ask(st.request());
        } catch (...) {
          e = std::current_exception();
        }
        next = recovery_state::confirmed(answer);
        break;
      }
      case recovery_state::step_kind::attempt:
        try {
          c.run(c.self, st.begin_attempt());
          return;
        } catch (...) {
          e = std::current_exception();
        }
        next = st.failed(e, stop.stop_requested(), c.fix != nullptr);
        break;
      case recovery_state::step_kind::wait: next = recovery_state::waited(sleep_for(next.delay, stop)); break;
      case recovery_state::step_kind::fix: {
        bool changed = true;
        const bool rerun = c.fix(c.self, e, changed);
        next = st.fixed(rerun, changed, c.repairs_idempotent);
        break;
      }
      case recovery_state::step_kind::fail:
      case recovery_state::step_kind::propagate: st.finish(next, std::move(e));
    }
  }
}

#include <tool_effects/detail/push_options.hpp>
// recover: see its declaration in detail/recovery.hpp.
template <class Clock>
boost::asio::awaitable<void> recover(recovery_refs o, call_settings s, effect_set effects, erased_attempts c) {
  recovery_state st(o, std::move(s), effects);
  std::exception_ptr e;
  bool cancelled = false;
  for (recovery_state::step next = st.start();;) {
    switch (next.kind) {
      case recovery_state::step_kind::confirm: {
        confirmation answer = confirmation::deny;
        const confirmation_request req = st.request();
        try {
          if (o.approver) answer = co_await o.approver->ask_async(req);
        } catch (...) {
          e = std::current_exception();
        }
        next = recovery_state::confirmed(answer);
        break;
      }
      case recovery_state::step_kind::attempt: {
        try {
          const attempt_context& ctx = st.begin_attempt();
          if (c.run_async != nullptr) co_await c.run_async(c.self, ctx);
          else c.run(c.self, ctx);
          co_return;
        } catch (...) {
          e = std::current_exception();
        }
        const auto cs = co_await boost::asio::this_coro::cancellation_state;
        cancelled = cs.cancelled() != boost::asio::cancellation_type::none;
        next = st.failed(e, cancelled, c.fix != nullptr);
        break;
      }
      case recovery_state::step_kind::wait: {
        boost::asio::basic_waitable_timer<Clock> timer(co_await boost::asio::this_coro::executor);
        timer.expires_after(std::chrono::duration_cast<typename Clock::duration>(next.delay));
        bool aborted = false;
        try {
          co_await timer.async_wait(boost::asio::use_awaitable);
        } catch (const boost::system::system_error&) {
          aborted = true;
        }
        const auto cs = co_await boost::asio::this_coro::cancellation_state;
        cancelled = aborted || cs.cancelled() != boost::asio::cancellation_type::none;
        next = recovery_state::waited(!cancelled);
        break;
      }
      case recovery_state::step_kind::fix: {
        bool changed = true;
        const bool rerun = c.fix(c.self, e, changed);
        next = st.fixed(rerun, changed, c.repairs_idempotent);
        break;
      }
      case recovery_state::step_kind::fail:
      case recovery_state::step_kind::propagate:
        // Cancellation was handled here (no further attempt): clear the state,
        // or Asio 1.81's co_spawn would throw operation_aborted from its final post.
        if (cancelled && next.kind == recovery_state::step_kind::propagate)
          co_await boost::asio::this_coro::reset_cancellation_state();
        st.finish(next, std::move(e));
    }
  }
}

// recover_to_error: see its declaration in detail/recovery.hpp.
template <class Clock>
boost::asio::awaitable<std::exception_ptr> recover_to_error(recovery_refs o, call_settings s, effect_set effects,
                                                            erased_attempts c) {
  try {
    co_await recover<Clock>(o, std::move(s), effects, c);
  } catch (...) {
    co_return std::current_exception();
  }
  co_return std::exception_ptr{};
}


#if !TOOL_EFFECTS_HEADER_ONLY
template boost::asio::awaitable<void> recover<std::chrono::steady_clock>(recovery_refs, call_settings, effect_set,
                                                                        erased_attempts);
template boost::asio::awaitable<std::exception_ptr> recover_to_error<std::chrono::steady_clock>(recovery_refs,
                                                                                                call_settings,
                                                                                                effect_set,
                                                                                                erased_attempts);
#endif
#include <tool_effects/detail/pop_options.hpp>

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_IMPL_RECOVERY_IPP
