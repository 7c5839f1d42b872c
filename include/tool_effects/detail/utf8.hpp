// tool_effects/detail/utf8.hpp — internal: decoding, encoding and cutting UTF-8, for the texts the library
// quotes (detail/quote.hpp) and canonicalizes (json/canonical.hpp). No dependency beyond the standard library.
#ifndef TOOL_EFFECTS_DETAIL_UTF8_HPP
#define TOOL_EFFECTS_DETAIL_UTF8_HPP

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace tool_effects::detail {

// One UTF-8 character at `s[i]`: its code point and length in bytes, or length 0 for a byte that does not start a
// well-formed character (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut short).
// The one decoder of the library: everything below and the terminal quoting of confirmation.hpp use it.
struct utf8_char {
  char32_t code = 0;
  std::size_t size = 0;
};
constexpr utf8_char decode_utf8(std::string_view s, std::size_t i) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c0 = b(i);
  if (c0 < 0x80) return {c0, 1};
  std::size_t n = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((c0 & 0xE0) == 0xC0) n = 2, cp = c0 & 0x1F, min = 0x80;
  else if ((c0 & 0xF0) == 0xE0) n = 3, cp = c0 & 0x0F, min = 0x800;
  else if ((c0 & 0xF8) == 0xF0) n = 4, cp = c0 & 0x07, min = 0x10000;
  else return {};
  if (i + n > s.size()) return {};
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return {};
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
  return {cp, n};
}

// Decodes the code point at `s[i]` (advancing `i`); an invalid sequence (overlong, surrogate, beyond U+10FFFF,
// truncated) yields U+FFFD and advances one byte.
inline char32_t next_code_point(std::string_view s, std::size_t& i) noexcept {
  const utf8_char u = decode_utf8(s, i);
  if (u.size == 0) {
    ++i;
    return 0xFFFD;
  }
  i += u.size;
  return u.code;
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
