// tool_effects/detail/invoke.hpp — "call the tool once, with the attempt
// context if it accepts one" (attempt.hpp): the one place retry/repair, the
// dispatcher's bound calls and the JSON host decide how a tool is called.
#ifndef TOOL_EFFECTS_DETAIL_INVOKE_HPP
#define TOOL_EFFECTS_DETAIL_INVOKE_HPP

#include <type_traits>

#include <tool_effects/attempt.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects::detail {

// Calls `tool(ctx, args...)` when the tool accepts the attempt context first
// (AttemptAware), else `tool(args...)`. `ctx` is an attempt_context, or a
// callable making one: then it is called only when the tool takes it (a
// fresh idempotency key costs an entropy read).
template <class Tool, class Context, class... Args>
decltype(auto) invoke_attempt(Tool& tool, const Context& ctx, Args&... args) {
  if constexpr (!AttemptAware<Tool, Args...>) {
    return detail::invoke(tool, args...);
  } else if constexpr (std::is_same_v<Context, attempt_context>) {
    return detail::invoke(tool, ctx, args...);
  } else {
    const attempt_context made = ctx();
    return detail::invoke(tool, made, args...);
  }
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_INVOKE_HPP
