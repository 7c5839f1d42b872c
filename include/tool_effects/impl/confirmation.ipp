// tool_effects/impl/confirmation.ipp — the definitions of confirmation.hpp's approver erasure (`ask`,
// `ask_async`): included by that header (header-only, the default), or compiled once by
// <tool_effects/impl/src.hpp> (TOOL_EFFECTS_SEPARATE_COMPILATION).
#ifndef TOOL_EFFECTS_IMPL_CONFIRMATION_IPP
#define TOOL_EFFECTS_IMPL_CONFIRMATION_IPP

#include <tool_effects/confirmation.hpp>

namespace tool_effects {

TOOL_EFFECTS_DECL confirmation approver::ask(const confirmation_request& r) const {
  return sync_ ? sync_(r) : confirmation::deny;
}

#include <tool_effects/detail/push_options.hpp>
TOOL_EFFECTS_DECL boost::asio::awaitable<confirmation> approver::ask_async(const confirmation_request& r) const {
  if (async_) co_return co_await async_(r);
  if (sync_) co_return sync_(r);
  co_return confirmation::deny;
}
#include <tool_effects/detail/pop_options.hpp>

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_IMPL_CONFIRMATION_IPP
