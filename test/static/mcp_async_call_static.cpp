// g++ 12 cannot compile a braced nlohmann::json temporary inside a co_await
// expression: `co_await client.async_call("echo", json{{"message", m}})`
// fails with "error: array used as initializer" (a g++ 12 bug with braced
// lists in co_await operands; clang and later g++ accept it). The documented
// workaround (docs/mcp.md, "The async API with g++ 12") builds the arguments
// in a named variable first; this suite keeps it compiling on every compiler.
// Compile-only: the coroutine is never started.
#include <string>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include <tool_effects/mcp.hpp>

namespace {
[[maybe_unused]] boost::asio::awaitable<nlohmann::json> echo_with_named_arguments(tool_effects::mcp_client& client,
                                                                                 std::string m) {
  nlohmann::json arguments{{"message", std::move(m)}};  // not inside the co_await: g++ 12 accepts it
  co_return co_await client.async_call("echo", std::move(arguments));
}
}  // namespace
