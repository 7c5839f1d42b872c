// tool_effects/net/url.hpp — internal: the library's one URL type (RFC 3986), used by MCP over HTTP, OAuth
// and etcd. A parser of ours rather than Boost.URL: see docs/benchmarks.md ("One URL type") for
// the measured cost of each.
//
// API (stable; added to, never renamed):
//   net::url                          the components of a URI reference, as written (scheme and host lower-cased)
//   net::url_error                    thrown by the parsers; reason() is one of the stable strings below,
//                                     why() the explanation without the URL
//   net::parse_uri_reference(text)    any URI reference (RFC 3986 section 4.1): absolute or relative
//   net::parse_http_url(text)         an absolute http:// or https:// URL with a host, no user information,
//                                     a port up to 65535, at most max_url_bytes
//   net::parse_authority(text)        a Host header's value (RFC 9110 section 7.2): a host and an optional port,
//                                     nothing else
//   net::resolve(base, reference)     reference resolution (RFC 3986 section 5.2.2, dot segments removed)
//   net::percent_decode(part, whole)  RFC 3986 percent-decoding of one component of `whole` (strict)
//   url::port_or_default(), authority(), origin(), target(), text(), printable(), is_https()
// Reasons: "too_long", "bad_character", "bad_percent", "no_scheme", "bad_scheme", "not_http", "no_host",
// "bad_host", "bad_port", "user_information".
#ifndef TOOL_EFFECTS_NET_URL_HPP
#define TOOL_EFFECTS_NET_URL_HPP

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <tool_effects/detail/str_cat.hpp>

namespace tool_effects::net {

// The longest URL the parsers read (a URL is sent in a request line and quoted in errors).
inline constexpr std::size_t max_url_bytes = 8 * 1024;

// A URL refused: reason() is a stable string (see the top of this header), what() names the URL as
// printable() shows it (no user information, query or fragment; control bytes as \xNN; at most 200 bytes).
class url_error : public std::invalid_argument {
 public:
  url_error(std::string_view reason, const std::string& message, std::string_view why = {})
      : std::invalid_argument(message), reason_(reason), why_(why) {}
  [[nodiscard]] std::string_view reason() const noexcept { return reason_; }
  // What is wrong, in words, without the URL ("no host"): for a caller that names the URL its own way.
  [[nodiscard]] const std::string& why() const noexcept { return why_; }

 private:
  std::string_view reason_;  // one of the literals of this header
  std::string why_;
};

// The components of a URI reference (RFC 3986 section 3). A component that is absent differs from one
// that is empty ("http://h?" has an empty query), as reference resolution needs.
struct url {
  std::string scheme;                   // lower-cased; "" for a relative reference
  std::optional<std::string> userinfo;  // before '@' in the authority
  std::optional<std::string> host;      // present with an authority; an IPv6 literal without brackets
  std::string port;                     // digits as written ("" when absent)
  std::string path;
  std::optional<std::string> query;     // without '?'
  std::optional<std::string> fragment;  // without '#'

  [[nodiscard]] bool is_https() const noexcept { return scheme == "https"; }
  // The port, or the scheme's default (443 for https, else 80).
  [[nodiscard]] std::string port_or_default() const { return !port.empty() ? port : is_https() ? "443" : "80"; }
  // "host:port" (an IPv6 host in brackets), as the Host header and a connection's name.
  [[nodiscard]] std::string authority() const {
    const std::string h = host.value_or(std::string());
    const bool v6 = h.find(':') != std::string::npos;
    return tool_effects::detail::str_cat(v6 ? "[" : "", h, v6 ? "]" : "", ":", port_or_default());
  }
  // "scheme://host:port".
  [[nodiscard]] std::string origin() const { return tool_effects::detail::str_cat(scheme, "://", authority()); }
  // The request target: the path ("/" when empty) and the query.
  [[nodiscard]] std::string target() const {
    return tool_effects::detail::str_cat(path.empty() ? "/" : path, query ? "?" : "", query.value_or(std::string()));
  }
  // The reference recomposed (RFC 3986 section 5.3).
  [[nodiscard]] std::string text() const {
    std::string out;
    if (!scheme.empty()) out = tool_effects::detail::str_cat(scheme, ":");
    if (host) {
      const bool v6 = host->find(':') != std::string::npos;
      out += tool_effects::detail::str_cat("//", userinfo ? *userinfo : "", userinfo ? "@" : "", v6 ? "[" : "", *host,
                             v6 ? "]" : "", port.empty() ? "" : ":", port);
    }
    out += path;
    if (query) out += tool_effects::detail::str_cat("?", *query);
    if (fragment) out += tool_effects::detail::str_cat("#", *fragment);
    return out;
  }
};

namespace detail {

inline bool url_unreserved(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}
inline bool url_sub_delim(char c) noexcept { return std::string_view("!$&'()*+,;=").find(c) != std::string_view::npos; }
inline bool url_hex(char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline char url_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// `u` as an error shows it: without user information, query and fragment, every byte outside visible ASCII
// written \xNN (so a message is valid UTF-8 and one line), at most 200 bytes of the URL.
inline std::string url_printable(std::string_view u) {
  u = u.substr(0, u.find_first_of("?#"));
  const auto scheme = u.find("://");
  const auto from = scheme == std::string_view::npos ? 0 : scheme + 3;
  const auto at = u.substr(0, u.find('/', from)).rfind('@');
  std::string cut(u.substr(0, from));
  cut += at != std::string_view::npos && at >= from ? u.substr(at + 1) : u.substr(from);
  std::string out;
  for (std::size_t i = 0; i < cut.size() && i < 200; ++i) {
    const auto c = static_cast<unsigned char>(cut[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      out += tool_effects::detail::str_cat("\\x", std::string_view(&hex[c >> 4], 1), std::string_view(&hex[c & 15], 1));
    }
  }
  if (cut.size() > 200) out += "...";
  return out;
}

[[noreturn]] inline void url_fail(std::string_view reason, std::string_view u, std::string_view why) {
  throw url_error(reason, tool_effects::detail::str_cat("bad URL \"", url_printable(u), "\": ", why), why);
}

// Every byte of a component is `allowed` or a %XX escape.
template <class Allowed>
void url_check(std::string_view part, std::string_view whole, Allowed allowed, const char* component) {
  for (std::size_t i = 0; i < part.size(); ++i) {
    const char c = part[i];
    if (c == '%') {
      if (i + 2 >= part.size() || !url_hex(part[i + 1]) || !url_hex(part[i + 2]))
        url_fail("bad_percent", whole, tool_effects::detail::str_cat("a % not followed by two hex digits in the ", component));
      i += 2;
    } else if (!allowed(c)) {
      url_fail("bad_character", whole,
               tool_effects::detail::str_cat("a byte not allowed in the ", component,
                                             " (space, control, non-ASCII or a delimiter out of place)"));
    }
  }
}

inline bool url_pchar(char c) noexcept { return url_unreserved(c) || url_sub_delim(c) || c == ':' || c == '@'; }

// RFC 3986 section 5.2.4.
inline std::string remove_dot_segments(std::string_view in) {
  std::string out;
  while (!in.empty()) {
    if (in.substr(0, 3) == "../") {
      in.remove_prefix(3);
    } else if (in.substr(0, 2) == "./") {
      in.remove_prefix(2);
    } else if (in.substr(0, 3) == "/./") {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.substr(0, 4) == "/../" || in == "/..") {
      in = in.size() == 3 ? std::string_view("/") : in.substr(3);
      const auto last = out.rfind('/');
      out.erase(last == std::string::npos ? 0 : last);
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      const auto next = in.find('/', 1);
      out += in.substr(0, next);
      in = next == std::string_view::npos ? std::string_view() : in.substr(next);
    }
  }
  return out;
}

}  // namespace detail

// Parses a URI reference (RFC 3986 section 4.1); throws url_error. Strict: a byte outside the component's
// grammar (space, control, non-ASCII, '[' outside a host) or a bad %XX is refused, never passed on.
inline url parse_uri_reference(std::string_view u) {
  using namespace detail;
  if (u.size() > max_url_bytes)
    url_fail("too_long", u, tool_effects::detail::str_cat("longer than ", std::to_string(max_url_bytes), " bytes"));
  url out;
  std::string_view rest = u;
  // scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) before the first ':' that precedes any '/', '?', '#'
  if (const auto colon = rest.find(':'); colon != std::string_view::npos && colon < rest.find_first_of("/?#")) {
    const auto s = rest.substr(0, colon);
    const bool ok = !s.empty() && std::isalpha(static_cast<unsigned char>(s[0])) &&
                    std::all_of(s.begin(), s.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
                    });
    if (!ok) url_fail("bad_scheme", u, "the scheme is not a letter followed by letters, digits, +, - or .");
    for (const char c : s) out.scheme += url_lower(c);
    rest.remove_prefix(colon + 1);
  }
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) {
    url_check(rest.substr(hash + 1), u, [](char c) { return url_pchar(c) || c == '/' || c == '?'; }, "fragment");
    out.fragment = std::string(rest.substr(hash + 1));
    rest = rest.substr(0, hash);
  }
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    url_check(rest.substr(q + 1), u, [](char c) { return url_pchar(c) || c == '/' || c == '?'; }, "query");
    out.query = std::string(rest.substr(q + 1));
    rest = rest.substr(0, q);
  }
  if (rest.substr(0, 2) == "//") {
    rest.remove_prefix(2);
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
      url_check(authority.substr(0, at), u, [](char c) { return url_unreserved(c) || url_sub_delim(c) || c == ':'; },
                "user information");
      out.userinfo = std::string(authority.substr(0, at));
      authority.remove_prefix(at + 1);
    }
    std::string_view port;
    if (!authority.empty() && authority.front() == '[') {
      const auto close = authority.find(']');
      if (close == std::string_view::npos) url_fail("bad_host", u, "an unterminated [IPv6 address]");
      const auto literal = authority.substr(1, close - 1);
      const bool ok = !literal.empty() && std::all_of(literal.begin(), literal.end(), [](char c) {
        return url_hex(c) || c == ':' || c == '.';
      }) && literal.find(':') != std::string_view::npos;
      if (!ok) url_fail("bad_host", u, "the [IPv6 address] is not hex digits, ':' and '.'");
      out.host = std::string(literal);
      const auto after = authority.substr(close + 1);
      if (!after.empty() && after.front() != ':') url_fail("bad_host", u, "junk after the [IPv6 address]");
      if (!after.empty()) port = after.substr(1);
    } else {
      const auto colon = authority.rfind(':');
      const auto name = authority.substr(0, colon);
      url_check(name, u, [](char c) { return url_unreserved(c) || url_sub_delim(c); }, "host");
      std::string h;
      for (const char c : name) h += url_lower(c);
      out.host = std::move(h);
      if (colon != std::string_view::npos) port = authority.substr(colon + 1);
    }
    if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
      url_fail("bad_port", u, "the port is not a number");
    out.port = std::string(port);
  }
  url_check(rest, u, [](char c) { return url_pchar(c) || c == '/'; }, "path");
  out.path = std::string(rest);
  return out;
}

// Parses the value of a Host header (RFC 9110 section 7.2: uri-host [ ":" port ]): the url's host (lower-cased;
// an IPv6 literal without its brackets) and port; anything else (a path, user information, an empty host, a port
// over 65535) is refused. Throws url_error.
inline url parse_authority(std::string_view a) {
  if (a.empty() || a.size() > max_url_bytes) detail::url_fail("no_host", a, "no host");
  url out = parse_uri_reference(tool_effects::detail::str_cat("//", a));
  if (!out.path.empty() || out.query || out.fragment) detail::url_fail("bad_host", a, "not a host and a port");
  if (out.userinfo) detail::url_fail("user_information", a, "user information in a host");
  if (!out.host || out.host->empty()) detail::url_fail("no_host", a, "no host");
  if (out.port.size() > 5 || (!out.port.empty() && std::stoul(out.port) > 65535))
    detail::url_fail("bad_port", a, "the port is not a number up to 65535");
  return out;
}

// Parses an absolute http:// or https:// URL with a host (RFC 9110 section 4.2): no user information (a
// credential in a URL ends up in logs), a port from 0 to 65535; the fragment is kept in the url but is never
// sent (target() leaves it out). Throws url_error.
inline url parse_http_url(std::string_view u) {
  url out = parse_uri_reference(u);
  if (out.scheme.empty()) detail::url_fail("no_scheme", u, "not an http:// or https:// URL");
  if (out.scheme != "http" && out.scheme != "https") detail::url_fail("not_http", u, "not an http:// or https:// URL");
  if (!out.host) detail::url_fail("no_host", u, "no host");
  if (out.host->empty()) detail::url_fail("no_host", u, "no host");
  if (out.userinfo) detail::url_fail("user_information", u, "user information in the URL is not supported");
  if (out.port.size() > 5 || (!out.port.empty() && std::stoul(out.port) > 65535))
    detail::url_fail("bad_port", u, "the port is not a number up to 65535");
  return out;
}

// The target URL of `reference` read against `base` (RFC 3986 section 5.2.2, strict: a reference with a
// scheme is taken as is). `base` must have a scheme.
inline url resolve(const url& base, const url& reference) {
  url t;
  if (!reference.scheme.empty()) {
    t = reference;
    t.path = detail::remove_dot_segments(reference.path);
    return t;
  }
  t.scheme = base.scheme;
  t.fragment = reference.fragment;
  if (reference.host) {
    t.userinfo = reference.userinfo;
    t.host = reference.host;
    t.port = reference.port;
    t.path = detail::remove_dot_segments(reference.path);
    t.query = reference.query;
    return t;
  }
  t.userinfo = base.userinfo;
  t.host = base.host;
  t.port = base.port;
  if (reference.path.empty()) {
    t.path = base.path;
    t.query = reference.query ? reference.query : base.query;
    return t;
  }
  t.query = reference.query;
  if (reference.path.front() == '/') {
    t.path = detail::remove_dot_segments(reference.path);
    return t;
  }
  // merge (section 5.2.3)
  std::string merged;
  if (base.host && base.path.empty()) {
    merged = "/" + reference.path;
  } else {
    const auto slash = base.path.rfind('/');
    merged = (slash == std::string::npos ? std::string() : base.path.substr(0, slash + 1)) + reference.path;
  }
  t.path = detail::remove_dot_segments(merged);
  return t;
}

// RFC 3986 percent-decoding of `part`, a component of the URI `whole` (named in errors): every %XX (either case)
// becomes its byte, every other byte stays ('+' too: this is not form decoding). Throws url_error
// "bad_percent" for a '%' not followed by two hex digits, "bad_character" for an escape that decodes to NUL.
inline std::string percent_decode(std::string_view part, std::string_view whole) {
  auto val = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string out;
  out.reserve(part.size());
  for (std::size_t i = 0; i < part.size(); ++i) {
    if (part[i] != '%') {
      out += part[i];
      continue;
    }
    if (i + 2 >= part.size() || !detail::url_hex(part[i + 1]) || !detail::url_hex(part[i + 2]))
      detail::url_fail("bad_percent", whole, "a % not followed by two hex digits");
    const char c = static_cast<char>(val(part[i + 1]) * 16 + val(part[i + 2]));
    if (c == '\0') detail::url_fail("bad_character", whole, "an escape that decodes to NUL (%00)");
    out += c;
    i += 2;
  }
  return out;
}

}  // namespace tool_effects::net

#endif  // TOOL_EFFECTS_NET_URL_HPP
