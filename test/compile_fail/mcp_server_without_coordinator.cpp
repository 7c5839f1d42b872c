// An mcp_server serves every client and session through ONE coordinator (issue 28, point 4): dispatch options
// without a Coordinator do not compile, and the diagnostic says what is missing.
// expected-error: mcp_server: the dispatch options must hold a Coordinator
#include <tool_effects/mcp/server.hpp>

namespace te = tool_effects;

struct ledger {};
struct get_balance {
  static constexpr std::string_view name = "get_balance";
  using side_effects = te::effects<te::reads<ledger>>;
  nlohmann::json operator()(const nlohmann::json&) const { return 0; }
};

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
using options = te::dispatch_options<>;
#else
using options = te::dispatch_options<te::local_coordinator>;
#endif

int main() {
  te::tool_registry<get_balance> registry;
  te::json_tool_host host(registry);
  using server = te::mcp_server<decltype(host), options>;
  return sizeof(server) > 0 ? 0 : 1;
}
