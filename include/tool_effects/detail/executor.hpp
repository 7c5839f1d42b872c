// tool_effects/detail/executor.hpp — the executor helpers shared by the
// dispatcher (dispatch.hpp) and the MCP client (mcp/client.hpp): what an
// "executor" argument becomes, and the guard that refuses a blocking call
// from a thread that runs the executor it would wait on.
#ifndef TOOL_EFFECTS_DETAIL_EXECUTOR_HPP
#define TOOL_EFFECTS_DETAIL_EXECUTOR_HPP

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/asio/execution_context.hpp>

#include <tool_effects/detail/str_cat.hpp>

namespace tool_effects::detail {

// The executor of an execution context (thread_pool, io_context: its
// get_executor()); anything else (an executor, inline_executor) as is.
template <class E>
auto to_executor(E&& e) {
  using T = std::remove_cvref_t<E>;
  if constexpr (std::is_base_of_v<boost::asio::execution_context, T>)
    return e.get_executor();
  else
    return T(std::forward<E>(e));
}

// Throws std::logic_error when the calling thread runs `ex` (a blocking wait
// there could deadlock). `what` names the blocking function, `advice` what to
// use instead. Executors that cannot tell (inline_executor) pass.
template <class Ex>
void check_not_inside(const Ex& ex, std::string_view what, std::string_view advice) {
  if constexpr (requires { ex.running_in_this_thread(); }) {
    if (ex.running_in_this_thread()) {
      throw std::logic_error(
          str_cat("tool_effects::", what, ": blocking call from a thread that runs its executor (it could deadlock); ",
                  advice));
    }
  }
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_EXECUTOR_HPP
