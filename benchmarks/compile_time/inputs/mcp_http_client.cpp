// Issue 27's compile-cost case for HTTP users: a TU that connects to an MCP server over Streamable HTTP,
// lists its tools and calls one (compiled, never run, by benchmarks/compile_time/cost.py --mcp-clients).
#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp/http.hpp>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  boost::asio::thread_pool pool(2);
  auto client = tool_effects::mcp_client::connect(pool, {.url = argv[1]});
  const nlohmann::json tools = client.list_tools();
  const nlohmann::json r = client.call("echo", {{"message", "hi"}});
  client.close();
  return tools["tools"].empty() || tool_effects::mcp_text(r).empty() ? 1 : 0;
}
