// Consumer of the optional MCP component (tool_effects::mcp): `cat` echoes
// our initialize request back, which is not a response: the handshake must
// end in an mcp_error (protocol_error or timeout), not a hang.
#include <chrono>
#include <cstdio>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

int main() {
  boost::asio::thread_pool pool(2);
  tool_effects::mcp_client_options options;
  options.initialize_timeout = std::chrono::seconds(5);
  options.restart_on_exit = false;
  try {
    auto client = tool_effects::mcp_client::launch(pool, {"cat"}, options);
  } catch (const tool_effects::mcp_error& e) {
    std::printf("consumer: tool_effects::mcp found, compiled and ran (%s)\n", e.what());
    return 0;
  }
  std::puts("consumer: cat completed an MCP handshake?");
  return 1;
}
