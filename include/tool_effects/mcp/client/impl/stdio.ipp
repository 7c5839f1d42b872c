// tool_effects/mcp/client/impl/stdio.ipp — the definitions that start a server as a child process: the non-template
// part of `mcp_client(executor, argv)` (its transport, mcp/transport/detail/stdio_child.hpp) and
// `mcp_find_program`. Included by <tool_effects/mcp.hpp> (header-only, the default), or compiled once by
// <tool_effects/mcp/client/impl/src.hpp> (TOOL_EFFECTS_SEPARATE_COMPILATION): only those parse Boost.Process.
#ifndef TOOL_EFFECTS_MCP_CLIENT_IMPL_STDIO_IPP
#define TOOL_EFFECTS_MCP_CLIENT_IMPL_STDIO_IPP

#include <tool_effects/detail/config.hpp>  // first: BOOST_PROCESS_USE_STD_FS

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/client/detail/state.hpp>
#include <tool_effects/mcp/transport/detail/stdio_child.hpp>  // and Boost.Process's environment.hpp, after its prerequisites

namespace tool_effects {

TOOL_EFFECTS_DECL mcp_client::state_ptr mcp_client::make_stdio_state(boost::asio::any_io_executor ex,
                                                                     std::vector<std::string> argv,
                                                                     mcp_client_options options) {
  std::string name = options.name.empty() ? detail::mcp_default_name(argv) : options.name;
  auto shared = std::make_shared<detail::mcp_shared>(std::move(argv), std::move(options), std::move(name));
  shared->make_transport = [](const detail::mcp_strand& strand, const std::shared_ptr<detail::mcp_shared>& s) {
    return std::static_pointer_cast<detail::mcp_transport>(std::make_shared<detail::mcp_stdio_child_transport>(strand, s));
  };
  return make_state(std::move(ex), std::move(shared));
}

TOOL_EFFECTS_DECL std::filesystem::path mcp_find_program(const std::string& program) {
  return boost::process::v2::environment::find_executable(program);
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_CLIENT_IMPL_STDIO_IPP
