// The control of test/mcp/include_split/coroutines.cmake: one inline non-template coroutine that nothing calls.
// g++ emits it at -O0 (its actor and destroy clones), so the check must find it here; a check that finds nothing
// in this file could not see what it is meant to catch.
#include <boost/asio/awaitable.hpp>

namespace tool_effects::detail {
inline boost::asio::awaitable<int> include_split_control_coroutine() { co_return 1; }
}  // namespace tool_effects::detail

int main() { return 0; }
