// tool_effects/json/detail/json_tool_invoke.hpp — internal to <tool_effects/json/turn.hpp>: how
// `json_tool_host` calls a static tool. Its identity policy (`Tool::identity()` or its `operation_arg` /
// `target_arg` members), the one invocation with JSON arguments (synchronous or awaitable, with the attempt
// context if the tool takes it), and the check, once per tool, that a static tool takes JSON.
#ifndef TOOL_EFFECTS_JSON_DETAIL_JSON_TOOL_INVOKE_HPP
#define TOOL_EFFECTS_JSON_DETAIL_JSON_TOOL_INVOKE_HPP

#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include <boost/asio/awaitable.hpp>

#include <tool_effects/attempt.hpp>
#include <tool_effects/detail/awaitable.hpp>
#include <tool_effects/detail/invoke.hpp>
#include <tool_effects/identity.hpp>
#include <tool_effects/json/identity.hpp>

namespace tool_effects {
namespace detail {
template <class Tool, class = void>
struct static_identity {
  static identity_policy get() {
    identity_policy p;
    if constexpr (requires { std::string_view(Tool::operation_arg); })
      p.operation_arg = std::string(Tool::operation_arg);
    if constexpr (requires { std::string_view(Tool::target_arg); }) p.target_arg = std::string(Tool::target_arg);
    return p;
  }
};
template <class Tool>
struct static_identity<Tool, std::void_t<decltype(Tool::identity())>> {
  static identity_policy get() { return Tool::identity(); }
};

// One synchronous step: `tool(ctx, args)` or `tool(args)`.
template <class T>
decltype(auto) call_json_tool(T& tool, const attempt_context& ctx, const nlohmann::json& args) {
  return detail::invoke_attempt(tool, ctx, args);
}

#include <tool_effects/detail/push_options.hpp>
// Calls static tool T with JSON arguments, synchronous or awaitable; the
// result converts to JSON (void gives null).
template <class T>
boost::asio::awaitable<nlohmann::json> invoke_json_tool(T& tool, const attempt_context& ctx,
                                                        const nlohmann::json& args) {
  using raw = std::remove_cvref_t<decltype(call_json_tool(tool, ctx, args))>;
  if constexpr (detail::is_awaitable<raw>::value) {
    if constexpr (std::is_void_v<typename raw::value_type>) {
      co_await call_json_tool(tool, ctx, args);
      co_return nlohmann::json(nullptr);
    } else {
      co_return nlohmann::json(co_await call_json_tool(tool, ctx, args));
    }
  } else if constexpr (std::is_void_v<raw>) {
    call_json_tool(tool, ctx, args);
    co_return nlohmann::json(nullptr);
  } else {
    co_return nlohmann::json(call_json_tool(tool, ctx, args));
  }
}
#include <tool_effects/detail/pop_options.hpp>

template <class T>
concept JsonTool = std::is_invocable_v<T&, const nlohmann::json&> ||
                   std::is_invocable_v<T&, const attempt_context&, const nlohmann::json&>;

// Instantiated once per static tool: its diagnostic names the tool.
template <class Tool>
struct json_tool_check {
  static_assert(JsonTool<Tool>,
                "tool_effects::json_tool_host: this static tool is not invocable with (const nlohmann::json&) or "
                "(const tool_effects::attempt_context&, const nlohmann::json&) (see json_tool_check<Tool>)");
  static constexpr bool value = true;
};
}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_DETAIL_JSON_TOOL_INVOKE_HPP
