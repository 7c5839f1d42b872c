// tool_effects/mcp/client/impl/http.ipp — the non-template part of `mcp_client::connect`: the Streamable HTTP
// transport (mcp/transport/detail/http_client.hpp), the tools' parameter headers and the OAuth authorizer it makes.
// Included by <tool_effects/mcp/http.hpp> (header-only, the default), or compiled once by
// <tool_effects/mcp/client/impl/src.hpp> (TOOL_EFFECTS_SEPARATE_COMPILATION): only those parse Boost.Beast.
#ifndef TOOL_EFFECTS_MCP_CLIENT_IMPL_HTTP_IPP
#define TOOL_EFFECTS_MCP_CLIENT_IMPL_HTTP_IPP

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <tool_effects/mcp/http.hpp>  // first: the transport's header reads mcp_http_endpoint

#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/client/detail/state.hpp>
#include <tool_effects/mcp/transport/detail/http_client.hpp>
#include <tool_effects/mcp/client/detail/param_headers.hpp>

namespace tool_effects {

TOOL_EFFECTS_DECL mcp_client::state_ptr mcp_client::make_http_state(boost::asio::any_io_executor ex,
                                                                    const mcp_http_endpoint& endpoint,
                                                                    mcp_client_options options) {
  const net::url url = detail::mcp_parse_http_url(endpoint.url, options.name);
  std::string name = options.name.empty() ? *url.host : options.name;
  auto shared = std::make_shared<detail::mcp_shared>(std::vector<std::string>{}, std::move(options), std::move(name));
  shared->tool_params = std::make_shared<detail::mcp_tool_param_headers>();
  // One authorizer for the client's life: a new session (a restart) keeps the tokens.
  auto auth = std::make_shared<std::shared_ptr<detail::mcp_oauth_authorizer>>();
  shared->make_transport = [endpoint, url, auth](const detail::mcp_strand& strand,
                                                 const std::shared_ptr<detail::mcp_shared>& s) {
    if (endpoint.authorization && !*auth)
      *auth = std::make_shared<detail::mcp_oauth_authorizer>(strand, *endpoint.authorization, endpoint.url,
                                                             endpoint.tls_ca_file);
    return std::static_pointer_cast<detail::mcp_transport>(
        std::make_shared<detail::mcp_http_transport>(strand, s, endpoint, url, *auth));
  };
  return make_state(std::move(ex), std::move(shared));
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_CLIENT_IMPL_HTTP_IPP
