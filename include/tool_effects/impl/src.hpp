// tool_effects/impl/src.hpp — separate compilation (as Boost.Asio's asio/impl/src.hpp): include this in
// exactly ONE translation unit of a program whose every translation unit defines
// TOOL_EFFECTS_SEPARATE_COMPILATION. It defines, once, what the headers then only declare: the dataflow
// engine (detail/engine.hpp), the recovery drivers on Asio's steady_timer and their spawn on any_io_executor
// (detail/recovery.hpp, detail/dispatch_recovery.hpp), the approver's erasure (confirmation.hpp) and the
// failure records (failure.hpp). CMake: link tool_effects::compiled, a static library of this file that also
// defines the macro for its users. Without the macro this header is an error, not a second definition.
#ifndef TOOL_EFFECTS_IMPL_SRC_HPP
#define TOOL_EFFECTS_IMPL_SRC_HPP

#if !defined(TOOL_EFFECTS_SEPARATE_COMPILATION)
#error "tool_effects/impl/src.hpp is for separate compilation: define TOOL_EFFECTS_SEPARATE_COMPILATION in every translation unit (tool_effects::compiled does)"
#endif

#include <tool_effects/impl/confirmation.ipp>
#include <tool_effects/impl/dispatch_recovery.ipp>
#include <tool_effects/impl/engine.ipp>
#include <tool_effects/impl/failure.ipp>
#include <tool_effects/impl/recovery.ipp>

#endif  // TOOL_EFFECTS_IMPL_SRC_HPP
