// Client capabilities (ctest example.mcp_capabilities): the application answers
// what the real @modelcontextprotocol/server-everything asks of its client.
// That means a form (elicitation, where the fields the "user" leaves out get
// the schema's defaults), a completion (sampling, here canned, by an awaitable
// handler), and the roots.
// The progress of a long call reaches the host's callback. See docs/mcp.md
// ("Client capabilities").
//
// The server is `node <servers>/node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
// <servers> is argv[1], else TOOL_EFFECTS_MCP_SERVERS, else the build's mcp-servers. Exit status 77
// (ctest: skipped) when node or the server is missing.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/mcp.hpp>

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;

int main(int argc, char** argv) {
  std::string servers;
  if (argc > 1) servers = argv[1];
  else if (const char* e = std::getenv("TOOL_EFFECTS_MCP_SERVERS"); e && *e) servers = e;
#ifdef TOOL_EFFECTS_MCP_SERVERS_DIR
  else servers = TOOL_EFFECTS_MCP_SERVERS_DIR;
#endif
  const fs::path script = fs::path(servers) / "node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  if (te::mcp_find_program("node").empty() || !fs::exists(script)) {
    std::printf("mcp_capabilities: skipped: needs node and the server at %s\n", script.string().c_str());
    return 77;
  }

  std::mutex out;  // handlers run on the pool's threads
  te::mcp_client_options o;
  o.on_elicitation = [&](const te::mcp_elicitation_request& r) {
    const std::lock_guard lock(out);
    std::printf("server %s asks: %s\n", r.server.c_str(), r.message.c_str());
    for (const auto& [field, schema] : r.requested_schema["properties"].items()) {
      const std::string fallback = schema.contains("default") ? " (default " + schema["default"].dump() + ")" : "";
      std::printf("  %-28s %s%s\n", field.c_str(), schema.value("type", "?").c_str(), fallback.c_str());
    }
    // The "user" fills in the required name and an email and leaves the rest: the defaults fill it (SEP-1034).
    return te::mcp_elicitation_response::accept({{"name", "Ada Lovelace"}, {"email", "ada@example.com"}});
  };
  // The awaitable form: a handler that waits (here 50 ms on a timer, as for a model's answer) holds no thread.
  o.on_sampling = [](const te::mcp_sampling_request& r) -> boost::asio::awaitable<json> {
    boost::asio::steady_timer model_latency(co_await boost::asio::this_coro::executor, std::chrono::milliseconds(50));
    co_await model_latency.async_wait(boost::asio::use_awaitable);
    const std::string prompt = r.params["messages"][0]["content"].value("text", "");
    co_return json{{"role", "assistant"},
                   {"content", {{"type", "text"}, {"text", "(a canned completion of: " + prompt + ")"}}},
                   {"model", "canned-model"}};
  };
  o.roots = [] { return std::vector<te::mcp_root>{{"file:///workspace", "workspace"}}; };

  boost::asio::thread_pool pool(2);  // docs/mcp.md, "Pool size"
  auto client = te::mcp_client::launch(pool, {"node", script.string()}, o);

  const std::string form = te::mcp_text(client.call("trigger-elicitation-request"));
  std::printf("\nthe server got:\n%s\n", form.substr(form.find("Raw result: ")).c_str());
  std::printf("\n%s\n", te::mcp_text(client.call("trigger-sampling-request", {{"prompt", "a haiku"}})).c_str());
  std::printf("\n%s\n", te::mcp_text(client.call("get-roots-list")).substr(0, 80).c_str());

  // Progress through the host: the callback learns which tool and which call each notification is for.
  te::tool_registry<> registry;
  te::json_tool_host<> host(registry);
  (void)te::add_mcp_server(host, client, te::server_trust::trusted, {}, te::mcp_naming::prefixed("everything"),
                           [&](const te::mcp_progress& p) {
                             const std::lock_guard lock(out);
                             std::printf("progress of %s (call %s): %g of %g\n", p.tool.c_str(),
                                         p.idempotency_key.c_str(), p.progress, p.total.value_or(0));
                           });
  const auto calls = te::parse_tool_calls(json::array(
      {{{"id", "long-1"},
        {"name", "everything__trigger-long-running-operation"},
        {"arguments", {{"duration", 0.6}, {"steps", 3}}}}}));
  const auto outcomes = host.run(pool, te::run_options{}, calls);
  if (!outcomes[0].has_value()) return 1;
  std::printf("%s\n", te::mcp_text(outcomes[0].value()).c_str());
  client.close();
  return 0;
}
