// tool_effects/confirmation.hpp — human-in-the-loop confirmation of
// destructive calls. A caller-supplied approver receives a description of the
// call (tool name, effects, class, idempotency key) and answers approve or
// deny; synchronously, or as a Boost.Asio awaitable. No approver means "deny".
//
// The dispatcher and `run_with_recovery` ask before the first attempt of a
// call that `needs_confirmation` (destructive, or unknown effects) and never
// run it unless the answer is `approve`; a denial
// (or an approver that throws) yields a failure record with reason
// `confirmation_denied`. See docs/recovery.md.
#ifndef TOOL_EFFECTS_CONFIRMATION_HPP
#define TOOL_EFFECTS_CONFIRMATION_HPP

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <tool_effects/effect.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects {

/// An approver's answer. Only `approve` lets a destructive call run.
enum class confirmation : std::uint8_t { deny, approve };

/// Stable slugs: "deny", "approve".
constexpr std::string_view to_string(confirmation c) noexcept {
  return c == confirmation::approve ? "approve" : "deny";
}

/// What an approver is shown: the call about to run. The views are valid for
/// the duration of the approver's call (copy them to keep them).
struct confirmation_request {
  std::string_view tool{};             ///< the tool's name
  effect_set effects{};                ///< its declared effects
  side_effect_class effect_class{};  ///< classify(effects)
  std::string_view idempotency_key{};  ///< the key its attempts will carry
  bool may_already_have_happened = false;  ///< a journal shows the call started in an earlier run that did not end (journal.hpp)
};

/// A synchronous approver: `confirmation a(const confirmation_request&)`.
template <class A>
concept SyncApprover = std::is_invocable_r_v<confirmation, A&, const confirmation_request&> &&
                       std::is_same_v<std::remove_cvref_t<std::invoke_result_t<A&, const confirmation_request&>>,
                                      confirmation>;

/// An awaitable approver: `boost::asio::awaitable<confirmation> a(const confirmation_request&)`.
/// The request's views stay valid until the awaitable completes.
template <class A>
concept AsyncApprover =
    std::is_invocable_v<A&, const confirmation_request&> &&
    std::is_same_v<std::invoke_result_t<A&, const confirmation_request&>, boost::asio::awaitable<confirmation>>;

/// Either kind of approver.
template <class A>
concept Approver = SyncApprover<A> || AsyncApprover<A>;

#include <tool_effects/detail/push_options.hpp>

namespace detail {
// Runs an approver's awaitable to its end on a private io_context in this
// thread; rethrows its error. (A template: compiled only where used.)
template <class Awaitable>
confirmation run_to_completion(Awaitable aw) {
  boost::asio::io_context io;
  std::exception_ptr error;
  confirmation answer = confirmation::deny;
  boost::asio::co_spawn(io, std::move(aw), [&](std::exception_ptr e, confirmation c) {
    error = e;
    answer = c;
  });
  io.run();
  if (error) std::rethrow_exception(error);
  return answer;
}
}  // namespace detail

/// A type-erased, copyable approver (shared state). Default-constructed it is
/// empty, and an empty approver denies every call.
class approver {
 public:
  /// The empty approver: denies everything.
  approver() = default;
  /// Wraps `a` (sync or awaitable).
  template <class A>
    requires(Approver<std::decay_t<A>> && !std::is_same_v<std::decay_t<A>, approver>)
  approver(A&& a) {  // NOLINT(google-explicit-constructor): an approver is its callable
    using F = std::decay_t<A>;
    const auto f = std::make_shared<F>(std::forward<A>(a));
    if constexpr (SyncApprover<F>) {
      sync_ = [f](const confirmation_request& r) { return (*f)(r); };
    } else {
      async_ = [f](const confirmation_request& r) { return (*f)(r); };
      // `ask` runs it to completion on a private io_context (instantiated
      // only where an awaitable approver is made).
      sync_ = [f](const confirmation_request& r) { return detail::run_to_completion((*f)(r)); };
    }
  }

  /// Whether a callable is held.
  [[nodiscard]] bool has_value() const noexcept { return sync_ || async_; }
  explicit operator bool() const noexcept { return has_value(); }
  /// Whether the held callable is awaitable.
  [[nodiscard]] bool is_async() const noexcept { return static_cast<bool>(async_); }

  /// Asks synchronously. Empty: `deny`. An awaitable approver is run to
  /// completion on a private io_context. Exceptions of the approver propagate.
  [[nodiscard]] confirmation ask(const confirmation_request& r) const {
    return sync_ ? sync_(r) : confirmation::deny;
  }

  /// Asks without blocking a thread: an awaitable approver is awaited, a
  /// synchronous one is called inline. Empty: `deny`.
  [[nodiscard]] boost::asio::awaitable<confirmation> ask_async(const confirmation_request& r) const {
    if (async_) co_return co_await async_(r);
    if (sync_) co_return sync_(r);
    co_return confirmation::deny;
  }

 private:
  // Every non-empty approver has `sync_` (for an awaitable one: run to completion); `async_` only an awaitable one.
  std::function<confirmation(const confirmation_request&)> sync_;
  std::function<boost::asio::awaitable<confirmation>(const confirmation_request&)> async_;
};

#include <tool_effects/detail/pop_options.hpp>

/// The explicit opt-out of approval for tools with UNKNOWN effects, as an
/// extra of the dispatch options:
/// `run_options{}.with(tool_effects::run_unknown_tools_unconfirmed{})`
/// (and `recovery_options::unknown_tools_unconfirmed` for
/// `run_with_recovery`). Unknown calls then run without asking anyone
/// (still alone: unknown effects conflict with every call). Destructive calls
/// still need an approver. Without it, an unknown call needs an approver like
/// a destructive one (`needs_confirmation`).
struct run_unknown_tools_unconfirmed {};

/// An approver that approves everything (tests, trusted batch jobs).
inline approver approve_all() {
  return approver([](const confirmation_request&) { return confirmation::approve; });
}
/// An approver that denies everything (same as the empty approver, but explicit).
inline approver deny_all() {
  return approver([](const confirmation_request&) { return confirmation::deny; });
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_CONFIRMATION_HPP
