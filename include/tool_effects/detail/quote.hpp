// tool_effects/detail/quote.hpp — internal: the one way a peer's text (a server's line or error body, a gateway's
// message, a process's stderr) goes into an error message. Used by the MCP client and server, OAuth, the HTTP
// layer and etcd (there were three helpers, and one could cut a UTF-8 character in half).
#ifndef TOOL_EFFECTS_DETAIL_QUOTE_HPP
#define TOOL_EFFECTS_DETAIL_QUOTE_HPP

#include <cstddef>
#include <string>
#include <string_view>

#include <tool_effects/detail/utf8.hpp>

namespace tool_effects::detail {

// How many bytes of a peer's text an error quotes by default.
inline constexpr std::size_t quote_bytes = 300;

// `s` cut to at most `max` bytes at a UTF-8 character boundary, with "..." appended when cut; bytes that are
// not valid UTF-8 become U+FFFD. Not escaped: for texts that are already printable (a JSON dump, a name).
[[nodiscard]] inline std::string utf8_excerpt(std::string_view s, std::size_t max = quote_bytes) {
  std::string out = valid_utf8(utf8_prefix(s, max));
  if (s.size() > max) out += "...";
  return out;
}

// `s` as an error message quotes it: at most `max` bytes of it, cut at a UTF-8 character boundary (then
// "..."), every byte that is not part of valid UTF-8 replaced by U+FFFD, every control character (below
// U+0020, and DEL) written as \xNN. The result is valid UTF-8 and holds no CR or LF, whatever `s` holds, so a
// peer cannot forge a line of a log or a header with it.
[[nodiscard]] inline std::string quote_text(std::string_view s, std::size_t max = quote_bytes) {
  const std::string valid = valid_utf8(utf8_prefix(s, max));
  std::string out;
  out.reserve(valid.size() + 3);
  for (const char c : valid) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[(static_cast<unsigned char>(c) >> 4) & 0xF];
      out += hex[static_cast<unsigned char>(c) & 0xF];
    } else {
      out += c;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_QUOTE_HPP
