// tool_effects/mcp/client/impl/src.hpp — separate compilation of the MCP client (as Boost.Asio's
// asio/ssl/impl/src.hpp beside asio/impl/src.hpp): include this in exactly ONE translation unit of a program
// whose every translation unit defines TOOL_EFFECTS_SEPARATE_COMPILATION. It defines, once, what
// <tool_effects/mcp.hpp> and <tool_effects/mcp/http.hpp> then only declare: `mcp_client`'s members, the
// role-neutral session and the client's connection on it, the stdio transport (Boost.Process) and the
// Streamable HTTP transport with OAuth (Boost.Beast). The core's <tool_effects/impl/src.hpp> is a separate
// file (a program may use the core without MCP). CMake: link tool_effects::mcp_compiled, a static library of
// this file that links tool_effects::compiled. Without the macro this header is an error.
#ifndef TOOL_EFFECTS_MCP_CLIENT_IMPL_SRC_HPP
#define TOOL_EFFECTS_MCP_CLIENT_IMPL_SRC_HPP

#if !defined(TOOL_EFFECTS_SEPARATE_COMPILATION)
#error "tool_effects/mcp/client/impl/src.hpp is for separate compilation: define TOOL_EFFECTS_SEPARATE_COMPILATION in every translation unit (tool_effects::mcp_compiled does)"
#endif

#include <tool_effects/detail/config.hpp>  // first: BOOST_PROCESS_USE_STD_FS

#include <tool_effects/mcp/client/impl/client.ipp>
#include <tool_effects/mcp/client/impl/http.ipp>
#include <tool_effects/mcp/client/impl/stdio.ipp>

#endif  // TOOL_EFFECTS_MCP_CLIENT_IMPL_SRC_HPP
