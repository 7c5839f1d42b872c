// tool_effects/mcp/auth/detail/oauth_urls.hpp — internal to the OAuth flow (mcp/auth/detail/oauth_flow.hpp): the URLs
// it handles — which it may fetch, their origin and path (on net::url, the library's one URL type), the
// canonical URI of an MCP server, and which may be handed to a user agent.
#ifndef TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_URLS_HPP
#define TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_URLS_HPP

#include <algorithm>
#include <string>
#include <string_view>

#include <tool_effects/net/url.hpp>

namespace tool_effects::detail {

// A URL the flow will fetch: an absolute http(s) URL (net::parse_http_url: a host, no user information, no byte
// outside the grammar), at most 2048 bytes, without a fragment.
inline bool mcp_oauth_url_ok(std::string_view u) {
  if (u.size() > 2048) return false;
  try {
    return !net::parse_http_url(u).fragment;
  } catch (const net::url_error&) {
    return false;
  }
}

// A URL split: "scheme://authority" (scheme and host lower-cased) and the path ("" for "/"), query dropped.
struct mcp_oauth_url_parts {
  std::string origin;
  std::string path;
};
inline mcp_oauth_url_parts mcp_oauth_split(std::string_view u) {
  mcp_oauth_url_parts p;
  net::url v;
  try {
    v = net::parse_uri_reference(u);
  } catch (const net::url_error&) {
    return p;  // not a URL: no origin (compares equal to none)
  }
  if (v.scheme.empty() || !v.host) return p;
  v.path.erase(v.path.find_last_not_of('/') + 1);
  p.path = v.path;
  v.path.clear();
  v.query.reset();
  v.fragment.reset();
  p.origin = v.text();  // as written: scheme and host lower-cased, the port only when given
  return p;
}

// The canonical URI of an MCP server (RFC 8707, specification "Canonical Server URI"): scheme and host
// lower-cased, no fragment, no trailing slash.
inline std::string mcp_oauth_canonical(std::string_view u) {
  const auto p = mcp_oauth_split(u);
  std::string out = p.origin + p.path;
  try {
    if (const auto q = net::parse_uri_reference(u).query) out += "?" + *q;
  } catch (const net::url_error&) {
  }
  return out;
}

// Whether an authorization URL may be given to the application's user agent: printable ASCII of the set
// A-Z a-z 0-9 - . _ ~ : / ? @ % = & + , and [ ] (an IPv6 host), every % followed by two hex digits. Nothing
// a shell, cmd.exe or PowerShell would expand or split on (no space, quote, $ ` ( ) ; | < > ! * ' \ { } ^)
// (compare CVE-2025-6514); `&` remains, so a user agent must pass the URL as one argument, never through a
// shell.
inline bool mcp_oauth_url_shell_safe(std::string_view u) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  for (std::size_t i = 0; i < u.size(); ++i) {
    const char c = u[i];
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) continue;
    if (c == '%') {
      if (i + 2 >= u.size() || !hex(u[i + 1]) || !hex(u[i + 2])) return false;
      continue;
    }
    if (std::string_view("-._~:/?@=&+,[]").find(c) == std::string_view::npos) return false;
  }
  return true;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_URLS_HPP
