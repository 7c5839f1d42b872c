// tool_effects/impl/dispatch_recovery.ipp — with TOOL_EFFECTS_SEPARATE_COMPILATION, the one instantiation of
// detail/dispatch_recovery.hpp's spawn of the recovery loop (on Asio's any_io_executor) and of its inline form
// (on a private io_context), compiled by <tool_effects/impl/src.hpp>. Header-only (the default), both are
// instantiated where they are used and this file adds nothing.
#ifndef TOOL_EFFECTS_IMPL_DISPATCH_RECOVERY_IPP
#define TOOL_EFFECTS_IMPL_DISPATCH_RECOVERY_IPP

#include <tool_effects/detail/dispatch_recovery.hpp>

#if !TOOL_EFFECTS_HEADER_ONLY
#include <tool_effects/detail/push_options.hpp>
namespace tool_effects::detail {
template void spawn_recovery<boost::asio::any_io_executor>(const boost::asio::any_io_executor&, recovery_refs,
                                                           call_settings, effect_set, erased_attempts,
                                                           erased_completion);
template void run_recovery_here<boost::asio::io_context>(recovery_refs, call_settings, effect_set, erased_attempts,
                                                         erased_completion);
}  // namespace tool_effects::detail
#include <tool_effects/detail/pop_options.hpp>
#endif

#endif  // TOOL_EFFECTS_IMPL_DISPATCH_RECOVERY_IPP
