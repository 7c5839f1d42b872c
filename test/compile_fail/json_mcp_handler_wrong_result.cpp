// An MCP client handler (mcp_handler) is built only from a callable that returns its result or an
// awaitable of it: an elicitation handler returning a string, whose answer the client could not send, does
// not compile instead of failing the server's request at run time.
// expected-error(gcc): no match for .*operator=.*mcp_handler
// expected-error(clang): no viable overloaded '='
#include <string>

#include <boost/asio/awaitable.hpp>
#include <tool_effects/mcp/capabilities.hpp>

namespace te = tool_effects;

int main() {
  te::mcp_elicitation_handler h;
  h = [](const te::mcp_elicitation_request&) { return te::mcp_elicitation_response::decline(); };  // fine
  h = [](const te::mcp_elicitation_request&) -> boost::asio::awaitable<te::mcp_elicitation_response> {
    co_return te::mcp_elicitation_response::accept();
  };  // fine: the awaitable form
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
  h = [](const te::mcp_elicitation_request&) { return std::string("yes"); };
#endif
  return h ? 0 : 1;
}
