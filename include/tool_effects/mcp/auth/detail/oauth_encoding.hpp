// tool_effects/mcp/auth/detail/oauth_encoding.hpp — internal to the OAuth flow (mcp/auth/detail/oauth_flow.hpp): its
// failure type and the wire forms it reads and writes — the PKCE challenge (on protocol/detail/crypto.hpp), form and
// percent encoding, a query's parameters, the Bearer challenge, scopes, and the one redaction of secrets.
#ifndef TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_ENCODING_HPP
#define TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_ENCODING_HPP

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <tool_effects/mcp/protocol/detail/crypto.hpp>  // mcp_sha256, mcp_random_bytes, mcp_base64

namespace tool_effects::detail {

// A failure of the authorization (its message already free of secrets when thrown through `redact`).
class mcp_oauth_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The PKCE S256 challenge of a verifier (RFC 7636 section 4.2).
inline std::string mcp_pkce_challenge(std::string_view verifier) {
  const auto d = mcp_sha256(verifier);
  return mcp_base64(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()), true);
}

// application/x-www-form-urlencoded (and URL query) encoding: unreserved characters kept, the rest %XX.
inline std::string mcp_form_encode(std::string_view s) {
  std::string out;
  constexpr char hex[] = "0123456789ABCDEF";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

inline std::string mcp_form(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty()) out += '&';
    out += mcp_form_encode(k);
    out += '=';
    out += mcp_form_encode(v);
  }
  return out;
}

// Percent-decoding ('+' a space), as in a query.
inline std::string mcp_percent_decode(std::string_view s) {
  std::string out;
  auto hexval = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
      out += static_cast<char>(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The parameters of a URL's query (the first of each name; the fragment dropped).
inline std::vector<std::pair<std::string, std::string>> mcp_query_params(std::string_view url) {
  std::vector<std::pair<std::string, std::string>> out;
  if (const auto hash = url.find('#'); hash != std::string_view::npos) url = url.substr(0, hash);
  const auto q = url.find('?');
  if (q == std::string_view::npos) return out;
  std::string_view rest = url.substr(q + 1);
  while (!rest.empty() && out.size() < 64) {
    const auto amp = rest.find('&');
    const std::string_view part = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (part.empty()) continue;
    const auto eq = part.find('=');
    std::string name = mcp_percent_decode(part.substr(0, eq));
    if (std::any_of(out.begin(), out.end(), [&](const auto& p) { return p.first == name; })) continue;
    out.emplace_back(std::move(name),
                     eq == std::string_view::npos ? std::string() : mcp_percent_decode(part.substr(eq + 1)));
  }
  return out;
}

inline const std::string* mcp_auth_param(const std::vector<std::pair<std::string, std::string>>& ps, std::string_view n) {
  for (const auto& [k, v] : ps)
    if (k == n) return &v;
  return nullptr;
}

// The parameters of the Bearer challenge of a WWW-Authenticate header (RFC 9110 section 11.6.1; names
// lower-cased, quoted strings unescaped); empty when there is no Bearer challenge.
inline std::vector<std::pair<std::string, std::string>> mcp_bearer_challenge(std::string_view h) {
  std::vector<std::pair<std::string, std::string>> out;
  if (h.size() > 8192) h = h.substr(0, 8192);
  std::size_t i = 0;
  auto lower = [](std::string s) {
    for (auto& c : s)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
  };
  auto skip_ws = [&] {
    while (i < h.size() && (h[i] == ' ' || h[i] == '\t' || h[i] == ',')) ++i;
  };
  auto token = [&] {
    const std::size_t b = i;
    while (i < h.size() && h[i] != ' ' && h[i] != '\t' && h[i] != ',' && h[i] != '=') ++i;
    return std::string(h.substr(b, i - b));
  };
  bool in_bearer = false;
  while (i < h.size()) {
    skip_ws();
    std::string name = token();
    if (name.empty()) break;
    std::size_t j = i;
    while (j < h.size() && (h[j] == ' ' || h[j] == '\t')) ++j;
    if (j < h.size() && h[j] == '=') {  // name=value: an auth-param
      i = j + 1;
      while (i < h.size() && (h[i] == ' ' || h[i] == '\t')) ++i;
      std::string value;
      if (i < h.size() && h[i] == '"') {
        ++i;
        while (i < h.size() && h[i] != '"') {
          if (h[i] == '\\' && i + 1 < h.size()) ++i;
          value += h[i++];
        }
        ++i;
      } else {
        const std::size_t b = i;
        while (i < h.size() && h[i] != ',' && h[i] != ' ' && h[i] != '\t') ++i;
        value = std::string(h.substr(b, i - b));
      }
      if (in_bearer && out.size() < 32) out.emplace_back(lower(std::move(name)), std::move(value));
    } else {  // a challenge's scheme
      if (in_bearer) break;
      in_bearer = lower(name) == "bearer";
    }
  }
  return out;
}

// Whether a transport response asks for (re)authorization: 401, or 403 with error="insufficient_scope"
// (specification 2025-11-25, "Scope Challenge Handling").
inline bool mcp_oauth_wants(unsigned status, std::string_view www_authenticate) {
  if (status == 401) return true;
  if (status != 403) return false;
  const auto ps = mcp_bearer_challenge(www_authenticate);
  const auto* e = mcp_auth_param(ps, "error");
  return e != nullptr && *e == "insufficient_scope";
}

inline std::vector<std::string> mcp_split_scopes(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size() && out.size() < 256) {
    while (i < s.size() && s[i] == ' ') ++i;
    const std::size_t b = i;
    while (i < s.size() && s[i] != ' ') ++i;
    if (i > b) {
      std::string t(s.substr(b, i - b));
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(std::move(t));
    }
  }
  return out;
}

inline std::string mcp_join_scopes(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ' ';
    out += s;
  }
  return out;
}

// The forms in which a secret may come back quoted: as is; form-encoded (%20 or + for a space); base64 and
// base64url, whole or, for a longer secret, as it appears inside the base64 of a longer text at any of the
// three alignments (a server echoing a Basic header); at most 16 forms.
inline std::vector<std::string> mcp_secret_forms(const std::string& x) {
  std::vector<std::string> out{x};
  auto add = [&](std::string v) {
    if (v.size() >= 4 && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(std::move(v));
  };
  std::string form = mcp_form_encode(x);
  add(form);
  for (std::size_t at = form.find("%20"); at != std::string::npos; at = form.find("%20", at)) form.replace(at, 3, "+");
  add(std::move(form));
  for (const bool url : {false, true}) {
    add(mcp_base64(x, url));
    for (std::size_t k = 0; k < 3 && x.size() >= k + 12; ++k) add(mcp_base64(x.substr(k, (x.size() - k) / 3 * 3), url));
  }
  return out;
}

// `s` with every form (mcp_secret_forms) of every secret of at least 4 bytes replaced by "[redacted]". The one
// redaction of the MCP client: every message of the OAuth flow goes through it, and the transport's messages
// that may quote a peer (through mcp_oauth_authorizer::redact).
inline std::string mcp_redact(std::string s, const std::vector<std::string>& secrets) {
  // Every occurrence of every form is found in the text as it came (overlapping ones too) and the bytes they
  // cover are marked; each run of marked bytes becomes one "[redacted]". The text is never searched again after
  // a replacement, so a secret that occurs inside "[redacted]" cannot make the search loop, and a secret inside
  // another (a client secret inside the Basic credentials) cannot leave part of the longer one. Linear in the
  // text per form: a byte is marked once per form however many occurrences overlap it.
  std::vector<char> hidden;
  for (const auto& x : secrets) {
    if (x.size() < 4) continue;
    for (const auto& f : mcp_secret_forms(x)) {
      std::size_t marked_to = 0;
      for (auto at = s.find(f); at != std::string::npos; at = s.find(f, at + 1)) {
        if (hidden.empty()) hidden.assign(s.size(), 0);
        for (std::size_t i = std::max(at, marked_to); i < at + f.size(); ++i) hidden[i] = 1;
        marked_to = at + f.size();
      }
    }
  }
  if (hidden.empty()) return s;
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (!hidden[i]) {
      out += s[i++];
      continue;
    }
    out += "[redacted]";
    while (i < s.size() && hidden[i]) ++i;
  }
  return out;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_AUTH_DETAIL_OAUTH_ENCODING_HPP
