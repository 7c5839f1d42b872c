// tool_effects/mcp/versions.hpp — the MCP protocol versions this library
// speaks and which era each is of; used by the client and by the role-neutral
// session (mcp/protocol/detail/session.hpp). See docs/mcp-client.md ("Protocol versions").
#ifndef TOOL_EFFECTS_MCP_VERSIONS_HPP
#define TOOL_EFFECTS_MCP_VERSIONS_HPP

#include <string>
#include <string_view>
#include <vector>

namespace tool_effects {

/// Protocol versions this client speaks, newest first: 2026-07-28 (modern,
/// stateless: `server/discover` and per-request `_meta`) and every version the
/// official TypeScript SDK client accepts (legacy: the `initialize`
/// handshake). The one place they are stated; what differs between them and
/// what the client does about it: docs/mcp-client.md ("Protocol versions").
inline const std::vector<std::string>& mcp_protocol_versions() {
  static const std::vector<std::string> v{"2026-07-28", "2025-11-25", "2025-06-18",
                                          "2025-03-26", "2024-11-05", "2024-10-07"};
  return v;
}

/// Whether `version` is of the modern era (2026-07-28 and later: no
/// `initialize`, per-request `_meta`); the dated versions compare as strings.
/// Any other string, including every earlier date, is legacy.
inline bool mcp_version_is_modern(std::string_view version) noexcept {
  return version.size() == 10 && version >= std::string_view("2026-07-28");
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_VERSIONS_HPP
