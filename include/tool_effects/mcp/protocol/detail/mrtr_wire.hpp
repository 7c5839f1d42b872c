// tool_effects/mcp/protocol/detail/mrtr_wire.hpp — internal: the wire rules of MRTR (multi round-trip requests, SEP-2322,
// the 2026-07-28 era) that the client (client_handlers.hpp) and the server (server_mrtr.hpp) share: which
// requests may be answered with an InputRequiredResult, how one is recognised, and the bounds on its input
// requests and rounds. One place, so that both sides keep the same rules.
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_MRTR_WIRE_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_MRTR_WIRE_HPP

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tool_effects::detail {

// The `resultType` of an InputRequiredResult.
inline constexpr std::string_view mcp_input_required = "input_required";

// The most input requests of one InputRequiredResult (and input responses read from one retry), and the most
// rounds of one request (the server may ask again and again).
inline constexpr std::size_t mcp_max_input_requests = 16;
inline constexpr std::size_t mcp_max_input_rounds = 8;

// The requests a server may answer with an InputRequiredResult (SEP-2322: tools/call, prompts/get,
// resources/read; tasks/result belongs to the tasks extension, which neither side speaks).
constexpr bool mcp_method_takes_input(std::string_view method) {
  return method == "tools/call" || method == "prompts/get" || method == "resources/read";
}

// Whether `r` is an InputRequiredResult.
inline bool mcp_is_input_required(const nlohmann::json& r) {
  const auto t = r.is_object() ? r.find("resultType") : r.end();
  return t != r.end() && t->is_string() && t->get_ref<const std::string&>() == mcp_input_required;
}

static_assert(mcp_method_takes_input("tools/call") && mcp_method_takes_input("prompts/get") &&
              mcp_method_takes_input("resources/read") && !mcp_method_takes_input("tools/list") &&
              !mcp_method_takes_input("prompts/list"));

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_MRTR_WIRE_HPP
