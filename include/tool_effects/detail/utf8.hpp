// tool_effects/detail/utf8.hpp — internal: decoding, encoding and cutting UTF-8, for the texts the library
// quotes (detail/quote.hpp) and canonicalizes (json/canonical.hpp). No dependency beyond the standard library.
#ifndef TOOL_EFFECTS_DETAIL_UTF8_HPP
#define TOOL_EFFECTS_DETAIL_UTF8_HPP

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace tool_effects::detail {

// Decodes the code point at `s[i]` (advancing `i`); an invalid sequence (overlong, surrogate, beyond U+10FFFF,
// truncated) yields U+FFFD and advances one byte.
inline char32_t next_code_point(std::string_view s, std::size_t& i) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) {
    ++i;
    return c;
  }
  std::size_t len = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return 0xFFFD;
  }
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return 0xFFFD;
  }
  i += len;
  return cp;
}

// Appends `cp` (a valid code point) to `out` in UTF-8.
inline void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The longest prefix of `s` of at most `limit` bytes that does not end inside a UTF-8 sequence (a cut never
// splits a character).
inline std::string_view utf8_prefix(std::string_view s, std::size_t limit) noexcept {
  if (s.size() <= limit) return s;
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut);
}

// `s` from byte `from` on, moved forward past continuation bytes so that it does not start inside a UTF-8
// sequence.
inline std::string_view utf8_suffix(std::string_view s, std::size_t from) noexcept {
  from = std::min(from, s.size());
  while (from < s.size() && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80) ++from;
  return s.substr(from);
}

// `s` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD: what error messages
// quote, so `what()` is always valid UTF-8.
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) append_utf8(out, next_code_point(s, i));
  return out;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_UTF8_HPP
