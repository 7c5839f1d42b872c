// tool_effects/text.hpp — string forms of the vocabulary: the throwing
// parsers (`parse_error`), `std::string` forms of sets, stream output and
// `std::hash<effect_set>`. Kept apart from effect.hpp so that headers which
// only declare tools stay free of <string> and iostreams.
#ifndef TOOL_EFFECTS_TEXT_HPP
#define TOOL_EFFECTS_TEXT_HPP

#include <cstddef>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <tool_effects/access.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/effect.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects {

/// Thrown by the strict parsers. `what()` quotes the offending input the way
/// the reference Rust crate does, e.g. `unknown side-effect tag: "READ"`;
/// `input()` returns it verbatim.
class parse_error : public std::invalid_argument {
 public:
  parse_error(std::string_view what_prefix, std::string_view input)
      : std::invalid_argument(detail::str_cat(what_prefix, ": ", quote(input))), input_(input) {}

  /// The input (or token) that failed to parse, unquoted.
  [[nodiscard]] const std::string& input() const noexcept { return input_; }

  /// `s` in double quotes, with `"`, `\` and control characters escaped.
  static std::string quote(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            constexpr char hex[] = "0123456789abcdef";
            out += "\\u{";
            if (static_cast<unsigned char>(c) >= 0x10) out += hex[static_cast<unsigned char>(c) >> 4];
            out += hex[static_cast<unsigned char>(c) & 0xf];
            out += '}';
          } else {
            out += c;
          }
      }
    }
    out += '"';
    return out;
  }

 private:
  std::string input_;
};

/// The effect whose slug is exactly `s`; throws `parse_error` naming `s`
/// (`unknown side-effect tag: "READ"`).
inline effect parse_effect(std::string_view s) {
  if (const auto e = try_parse_effect(s)) return *e;
  throw parse_error("unknown side-effect tag", s);
}

/// The members' slugs in declaration order, comma-separated without spaces:
/// `"read,network"`; the empty set gives `""`. Inverse of `parse_effect_set`.
inline std::string to_string(effect_set s) {
  std::string out;
  for (const effect e : s) {
    if (!out.empty()) out += ',';
    out += to_string(e);
  }
  return out;
}

/// As `try_parse_effect_set`, but throws `parse_error` naming the first
/// unknown token (`unknown side-effect tag: "bogus"`).
inline effect_set parse_effect_set(std::string_view s) {
  std::string_view bad;
  if (const auto set = detail::parse_effect_list(s, &bad)) return *set;
  throw parse_error("unknown side-effect tag", bad);
}

/// Strict class parse: throws `parse_error` (`unknown side-effect class: "x"`).
/// The lenient `parse_side_effect_class` maps unknown slugs to `non_idempotent`.
inline side_effect_class parse_side_effect_class_strict(std::string_view s) {
  if (const auto c = try_parse_side_effect_class(s)) return *c;
  throw parse_error("unknown side-effect class", s);
}

/// Strict access-mode parse: throws `parse_error` (`unknown access mode: "x"`).
inline access_mode parse_access_mode(std::string_view s) {
  if (const auto m = try_parse_access_mode(s)) return *m;
  throw parse_error("unknown access mode", s);
}

inline std::ostream& operator<<(std::ostream& os, effect e) { return os << to_string(e); }
inline std::ostream& operator<<(std::ostream& os, effect_set s) { return os << to_string(s); }
inline std::ostream& operator<<(std::ostream& os, side_effect_class c) { return os << to_string(c); }
inline std::ostream& operator<<(std::ostream& os, access_mode m) { return os << to_string(m); }

}  // namespace tool_effects

/// Hashes an `effect_set` by its bitmask.
template <>
struct std::hash<tool_effects::effect_set> {
  std::size_t operator()(tool_effects::effect_set s) const noexcept { return s.bits(); }
};

#endif  // TOOL_EFFECTS_TEXT_HPP
