// tool_effects/mcp/logging.hpp — the log levels of MCP, shared by the client (the level it asks of a server)
// and the server (the level a session or request asked for).
#ifndef TOOL_EFFECTS_MCP_LOGGING_HPP
#define TOOL_EFFECTS_MCP_LOGGING_HPP

#include <string_view>

namespace tool_effects {

/// The log levels of MCP (RFC 5424's severities, lowest first); `none` asks for no log messages.
enum class mcp_log_level { none, debug, info, notice, warning, error, critical, alert, emergency };

/// The level's name on the wire ("debug" ... "emergency"); "" for `none`.
constexpr std::string_view mcp_log_level_name(mcp_log_level l) noexcept {
  switch (l) {
    case mcp_log_level::debug: return "debug";
    case mcp_log_level::info: return "info";
    case mcp_log_level::notice: return "notice";
    case mcp_log_level::warning: return "warning";
    case mcp_log_level::error: return "error";
    case mcp_log_level::critical: return "critical";
    case mcp_log_level::alert: return "alert";
    case mcp_log_level::emergency: return "emergency";
    case mcp_log_level::none: break;
  }
  return "";
}

/// The level named `name` on the wire ("debug" ... "emergency", exactly); `none` for any other text.
constexpr mcp_log_level mcp_log_level_named(std::string_view name) noexcept {
  for (const auto l : {mcp_log_level::debug, mcp_log_level::info, mcp_log_level::notice, mcp_log_level::warning,
                       mcp_log_level::error, mcp_log_level::critical, mcp_log_level::alert, mcp_log_level::emergency})
    if (mcp_log_level_name(l) == name) return l;
  return mcp_log_level::none;
}

/// Whether a log message at `message` reaches a client that asked for `threshold` and above (RFC 5424's order,
/// lowest first, as the enum): never when either is `none`. The one rule of the server's log filter.
constexpr bool mcp_log_level_passes(mcp_log_level message, mcp_log_level threshold) noexcept {
  return message != mcp_log_level::none && threshold != mcp_log_level::none && message >= threshold;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_LOGGING_HPP
