// tool_effects/mcp/transport/detail/http_url.hpp — internal to <tool_effects/mcp/http.hpp>: an MCP endpoint's URL, a
// net::url (the library's one URL type, net/url.hpp) checked as the client needs it, and how errors print one.
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_URL_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_URL_HPP

#include <string>
#include <string_view>

#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/net/url.hpp>

namespace tool_effects::detail {

// `u` as errors print it: without its query and fragment (`?api_key=...`) and without user information
// (`user:password@`), a byte outside visible ASCII as \xNN, at most 200 bytes (and "...").
inline std::string mcp_printable_url(std::string_view u) { return net::detail::url_printable(u); }

// Parses an MCP endpoint's "http(s)://host[:port][/path][?query]" (net::parse_http_url: no user information,
// a port up to 65535, no byte outside the grammar); https only in a build with TOOL_EFFECTS_MCP_TLS=1. Throws
// mcp_error(launch_failed) naming the URL as printed and what is wrong.
inline net::url mcp_parse_http_url(std::string_view u, const std::string& name) {
  auto bad = [&](std::string_view why) {
    return mcp_error(mcp_error_kind::launch_failed, name.empty() ? std::string("mcp-http") : name,
                     str_cat("bad MCP endpoint URL \"", mcp_printable_url(u), "\": ", why));
  };
  net::url out;
  try {
    out = net::parse_http_url(u);
  } catch (const net::url_error& e) {
    throw bad(e.why());
  }
  if (out.is_https() && !TOOL_EFFECTS_MCP_HAS_TLS) throw bad("https needs a build with TOOL_EFFECTS_MCP_TLS=1 and OpenSSL");
  return out;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_URL_HPP
