// tool_effects/json/detail/fast_parse.hpp — internal: the default lexer of
// `parse_untrusted_json` (nlohmann's lexer, one character at a time
// with a push_back per character, was 93% of the MCP client's instructions for
// 1 MiB results). It reads the text in one pass and feeds the library's own
// bounded builder (`untrusted_json_builder`: depth, value count and duplicate
// keys stay one rule), so an admitted document is the value nlohmann's parse
// builds; numbers are converted from their text as nlohmann converts them
// (`wire_number`, shared with the optional Boost.JSON lexer). Strings are
// scanned eight bytes at a time and copied in runs between escapes.
//
// It admits a subset of what nlohmann admits and nothing more: strict RFC 8259
// JSON, UTF-8 validated with nlohmann's byte ranges, surrogate pairs as
// nlohmann pairs them. On ANY failure — a syntax error, a limit, a duplicate
// key, a byte order mark, a number either conversion might read differently —
// it returns nullopt and `parse_untrusted_json` parses the text again with
// nlohmann, whose error (reason, pointer, byte offset) is the one reported:
// errors are unchanged. Checked against nlohmann by WireParse.* (a corpus and
// random mutations). Switch: TOOL_EFFECTS_JSON_FAST_PARSER (detail/config.hpp).
#ifndef TOOL_EFFECTS_JSON_DETAIL_FAST_PARSE_HPP
#define TOOL_EFFECTS_JSON_DETAIL_FAST_PARSE_HPP

#include <cerrno>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#if !defined(__cpp_lib_to_chars)
#include <locale.h>  // newlocale, locale_t (POSIX)
#include <stdlib.h>  // strtod_l
#endif

#include <nlohmann/json.hpp>

#include <tool_effects/json/bounded_parse.hpp>

namespace tool_effects::detail {

// The correctly rounded double of [b, e), the whole of it. libc++ (as of 19) has no floating-point
// std::from_chars; there strtod_l in the "C" locale converts it (glibc rounds correctly, as nlohmann's
// own strtod-based conversion does), so the decimal point never depends on the process's locale.
inline bool wire_to_double(const char* b, const char* e, double& d) {
#if defined(__cpp_lib_to_chars)
  const auto r = std::from_chars(b, e, d);
  return r.ec == std::errc() && r.ptr == e;
#else
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  if (c_locale == static_cast<locale_t>(nullptr)) return false;  // the caller falls back to nlohmann
  const std::string z(b, e);
  char* end = nullptr;
  errno = 0;
  d = strtod_l(z.c_str(), &end, c_locale);
  // ERANGE with a non-zero result is a subnormal (5e-324), which from_chars gives too; with 0 it underflowed.
  return end == z.c_str() + z.size() && (errno == 0 || (errno == ERANGE && d != 0));
#endif
}

// A JSON number's text (already checked against the grammar) given to the builder as nlohmann's lexer
// converts it: an integer literal to unsigned when it has no minus sign, else signed, and to double when it
// fits neither; other numbers to double (correctly rounded). False (the caller falls back to nlohmann) when
// the double is not finite or underflows. The builder's exceptions propagate.
inline bool wire_number(std::string_view t, untrusted_json_builder& builder) {
  const char* b = t.data();
  const char* e = b + t.size();
  const bool integer = t.find_first_of(".eE") == std::string_view::npos;
  if (integer && !t.empty() && t.front() != '-') {
    std::uint64_t u = 0;
    if (const auto r = std::from_chars(b, e, u); r.ec == std::errc() && r.ptr == e)
      return builder.number_unsigned(u);
  } else if (integer) {
    std::int64_t i = 0;
    if (const auto r = std::from_chars(b, e, i); r.ec == std::errc() && r.ptr == e) return builder.number_integer(i);
  }
  double d = 0;
  if (!wire_to_double(b, e, d) || !std::isfinite(d)) return false;
  const std::string text(t);
  return builder.number_float(d, text);
}

// The one-pass lexer. Iterative (its stack is bounded by the builder's depth limit, checked before a
// container is entered), so no input can exhaust the call stack.
class fast_json_lexer {
 public:
  fast_json_lexer(std::string_view text, untrusted_json_builder& builder)
      : p_(text.data()), end_(text.data() + text.size()), b_(builder) {}

  // True when the whole text is one JSON value (whitespace around it) and the builder took every event.
  bool run() {
    enum class state { value, after_value, key };
    state s = state::value;
    for (;;) {
      switch (s) {
        case state::value: {
          skip_ws();
          if (p_ == end_) return false;
          const char c = *p_;
          if (c == '{' || c == '[') {
            ++p_;
            const bool object = c == '{';
            if (!(object ? b_.start_object(npos) : b_.start_array(npos))) return false;
            skip_ws();
            if (p_ != end_ && *p_ == (object ? '}' : ']')) {
              ++p_;
              if (!(object ? b_.end_object() : b_.end_array())) return false;
              s = state::after_value;
            } else {
              stack_.push_back(object);
              s = object ? state::key : state::value;
            }
            continue;
          }
          if (!scalar()) return false;
          s = state::after_value;
          continue;
        }
        case state::after_value: {
          skip_ws();
          if (stack_.empty()) return p_ == end_;
          if (p_ == end_) return false;
          const bool object = stack_.back();
          const char c = *p_++;
          if (c == ',') {
            s = object ? state::key : state::value;
          } else if (c == (object ? '}' : ']')) {
            stack_.pop_back();
            if (!(object ? b_.end_object() : b_.end_array())) return false;
          } else {
            return false;
          }
          continue;
        }
        case state::key: {
          skip_ws();
          if (p_ == end_ || *p_ != '"') return false;
          ++p_;
          if (!string(buf_) || !b_.key(buf_)) return false;
          skip_ws();
          if (p_ == end_ || *p_ != ':') return false;
          ++p_;
          s = state::value;
          continue;
        }
      }
    }
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  void skip_ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0)
      return false;
    p_ += word.size();
    return true;
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  bool scalar() {
    switch (*p_) {
      case '"':
        ++p_;
        return string(buf_) && b_.string(buf_);
      case 't':
        return literal("true") && b_.boolean(true);
      case 'f':
        return literal("false") && b_.boolean(false);
      case 'n':
        return literal("null") && b_.null();
      default:
        return number();
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number() {
    const char* start = p_;
    if (p_ != end_ && *p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ != end_ && digit(*p_)) ++p_;
    } else {
      return false;
    }
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    return wire_number(std::string_view(start, static_cast<std::size_t>(p_ - start)), b_);
  }

  // The first byte at or after p that ends a plain run: '"', '\\', a control character (< 0x20) or a
  // non-ASCII byte (>= 0x80); e when none. Eight bytes at a time: each test below is exact about whether
  // some byte of the word matches (borrows only make false positives ABOVE a true match), so a word
  // without a match is skipped whole and a word with one is scanned byte by byte.
  static const char* plain_run_end(const char* p, const char* e) {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t high = 0x8080808080808080ULL;
    while (e - p >= 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, p, 8);
      const std::uint64_t quote = w ^ (ones * '"');
      const std::uint64_t backslash = w ^ (ones * '\\');
      const std::uint64_t special =
          ((w - ones * 0x20) | (quote - ones) | (backslash - ones)) & ~w & high;  // < 0x20, '"', '\\'
      if ((special | (w & high)) != 0) break;                                  // ... or >= 0x80
      p += 8;
    }
    for (; p != e; ++p) {
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
    }
    return p;
  }

  // The length of the valid UTF-8 sequence at p (p[0] >= 0x80), with nlohmann's ranges (RFC 3629: no
  // overlong forms, no surrogates, nothing above U+10FFFF); 0 when invalid.
  std::size_t utf8_sequence() const {
    const auto* u = reinterpret_cast<const unsigned char*>(p_);
    const auto left = static_cast<std::size_t>(end_ - p_);
    const auto in = [&](std::size_t i, unsigned lo, unsigned hi) { return i < left && u[i] >= lo && u[i] <= hi; };
    const unsigned c = u[0];
    if (c >= 0xC2 && c <= 0xDF) return in(1, 0x80, 0xBF) ? 2 : 0;
    if (c == 0xE0) return in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    if (c == 0xED) return in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3 : 0;
    if (c == 0xF0) return in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    if (c >= 0xF1 && c <= 0xF3) return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    if (c == 0xF4) return in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    return 0;
  }

  // Four hex digits of a \u escape.
  bool hex4(unsigned& v) {
    if (end_ - p_ < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_++;
      unsigned d = 0;
      if (c >= '0' && c <= '9')
        d = static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = static_cast<unsigned>(c - 'A' + 10);
      else
        return false;
      v = v * 16 + d;
    }
    return true;
  }

  // The escape after a backslash, appended to out.
  bool escape(std::string& out) {
    if (p_ == end_) return false;
    switch (*p_++) {
      case '"': out += '"'; return true;
      case '\\': out += '\\'; return true;
      case '/': out += '/'; return true;
      case 'b': out += '\b'; return true;
      case 'f': out += '\f'; return true;
      case 'n': out += '\n'; return true;
      case 'r': out += '\r'; return true;
      case 't': out += '\t'; return true;
      case 'u': {
        unsigned cp = 0;
        if (!hex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate first
        if (cp >= 0xD800 && cp <= 0xDBFF) {               // a high surrogate: a low one must follow
          unsigned lo = 0;
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
          p_ += 2;
          if (!hex4(lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        append_utf8(out, static_cast<char32_t>(cp));  // json/canonical.hpp
        return true;
      }
      default:
        return false;
    }
  }

  // The string after its opening quote, into out; p_ ends after the closing quote. A long string (a tool's
  // text result) would otherwise be copied again at every doubling of its capacity: past `long_string`
  // bytes, its capacity is reserved once for the rest of the text (an upper bound: no escape makes the value
  // longer than its text), and given back at the end when under half of it was used.
  bool string(std::string& out) {
    constexpr std::size_t long_string = 4096;
    out.clear();
    bool reserved = false;
    const char* run = p_;
    for (;;) {
      p_ = plain_run_end(p_, end_);
      if (p_ == end_) return false;
      const auto c = static_cast<unsigned char>(*p_);
      if (!reserved && out.size() + static_cast<std::size_t>(p_ - run) >= long_string) {
        reserved = true;
        out.reserve(out.size() + static_cast<std::size_t>(end_ - run));
      }
      if (c == '"') {
        out.append(run, static_cast<std::size_t>(p_ - run));
        ++p_;
        if (reserved && out.capacity() / 2 > out.size()) out.shrink_to_fit();
        return true;
      }
      if (c == '\\') {
        out.append(run, static_cast<std::size_t>(p_ - run));
        ++p_;
        if (!escape(out)) return false;
        run = p_;
      } else if (c < 0x20) {
        return false;
      } else {
        const std::size_t n = utf8_sequence();
        if (n == 0) return false;
        p_ += n;
      }
    }
  }

  const char* p_;
  const char* end_;
  untrusted_json_builder& b_;
  std::string buf_;
  std::vector<bool> stack_;  // true: an object
};

// `parse_untrusted_json` by the one-pass lexer into the bounded builder; nullopt on any failure (the caller
// then parses with nlohmann, whose error is reported).
inline std::optional<nlohmann::json> parse_with_fast_lexer(std::string_view text, const json_limits& limits) {
  untrusted_json_builder builder(limits, {});
  try {
    if (!fast_json_lexer(text, builder).run()) return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
  return std::move(builder.root);
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_JSON_DETAIL_FAST_PARSE_HPP
