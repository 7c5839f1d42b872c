// tool_effects/json/canonical.hpp — internal to <tool_effects/json.hpp>: the
// RFC 8785 JSON Canonicalization Scheme (JCS) over nlohmann::json, the text
// that call identities hash (identity.hpp), so that a Python, Rust or
// JavaScript sibling that canonicalizes the same arguments per RFC 8785 gets
// the same bytes, hence the same keys. Include <tool_effects/json.hpp>.
//
//  * object members sorted by their names as arrays of UTF-16 code units;
//  * numbers as ECMAScript's Number::toString (shortest round-trip digits:
//    `1e+30`, `4.5`, `0.002`, `1e-7`, `-0` as `0`). Every number is an IEEE
//    754 double, as in JavaScript: an integer that nlohmann::json holds as
//    int64/uint64 is converted to the nearest double first, so integers
//    beyond 2^53 that round to the same double canonicalize alike (RFC 8785
//    section 3.2.2.3 / I-JSON: send such values as strings);
//  * strings escaped as JSON.stringify does: `\"`, `\\`, `\b`, `\f`, `\n`,
//    `\r`, `\t`, other controls below U+0020 as `\u00xx` (lowercase hex),
//    everything else verbatim in UTF-8;
//  * no whitespace. NaN and infinities (which no JSON text can hold, only a
//    value built in C++) are rejected.
//
// nlohmann::json strings are UTF-8; invalid UTF-8 (which a parsed document
// never holds) is replaced by U+FFFD, one per invalid byte.
#ifndef TOOL_EFFECTS_JSON_CANONICAL_HPP
#define TOOL_EFFECTS_JSON_CANONICAL_HPP

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/utf8.hpp>

namespace tool_effects {

namespace detail {

// The UTF-16 code units of a UTF-8 string (the JCS sort key).
inline std::u16string utf16_units(std::string_view s) {
  std::u16string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const char32_t cp = next_code_point(s, i);
    if (cp < 0x10000) {
      out += static_cast<char16_t>(cp);
    } else {
      out += static_cast<char16_t>(0xD800 + ((cp - 0x10000) >> 10));
      out += static_cast<char16_t>(0xDC00 + ((cp - 0x10000) & 0x3FF));
    }
  }
  return out;
}

// A JSON string literal, escaped as RFC 8785 section 3.2.2.2 (JSON.stringify).
inline void append_jcs_string(std::string& out, std::string_view s) {
  constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const char32_t cp = next_code_point(s, i);
    switch (cp) {
      case U'"': out += "\\\""; break;
      case U'\\': out += "\\\\"; break;
      case U'\b': out += "\\b"; break;
      case U'\f': out += "\\f"; break;
      case U'\n': out += "\\n"; break;
      case U'\r': out += "\\r"; break;
      case U'\t': out += "\\t"; break;
      default:
        if (cp < 0x20) {
          out += "\\u00";
          out += hex[cp >> 4];
          out += hex[cp & 0xF];
        } else {
          append_utf8(out, cp);
        }
    }
  }
  out += '"';
}

// ECMAScript Number::toString(d) (ECMA-262 section 6.1.6.1.20), for finite d:
// the shortest digits that round-trip (std::to_chars), laid out by the
// ECMAScript rules. Throws std::invalid_argument for NaN and infinities.
inline void append_jcs_number(std::string& out, double d) {
  if (!std::isfinite(d)) throw std::invalid_argument("canonical_json: NaN and infinities have no JSON form (RFC 8785)");
  if (d == 0) {  // +0 and -0
    out += '0';
    return;
  }
  if (d < 0) {
    out += '-';
    d = -d;
  }
  // "d.ddde±x": the shortest round-trip digits in scientific form.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<std::size_t>(r.ptr - buf));
  const std::size_t e_at = sci.find('e');
  std::string digits;
  for (const char c : sci.substr(0, e_at))
    if (c != '.') digits += c;
  int exp10 = 0;
  std::from_chars(sci.data() + e_at + 1 + (sci[e_at + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp10);
  const int k = static_cast<int>(digits.size());  // digits, no trailing zeros (shortest form)
  const int n = exp10 + 1;                        // value = 0.digits * 10^n
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, static_cast<std::size_t>(n));
    out += '.';
    out.append(digits, static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += 'e';
    out += n - 1 < 0 ? '-' : '+';
    out += std::to_string(n - 1 < 0 ? 1 - n : n - 1);
  }
}

inline void append_jcs_scalar(std::string& out, const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: out += "null"; break;
    case nlohmann::json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; break;
    case nlohmann::json::value_t::string: append_jcs_string(out, v.get_ref<const std::string&>()); break;
    case nlohmann::json::value_t::number_integer:
      append_jcs_number(out, static_cast<double>(v.get<std::int64_t>()));
      break;
    case nlohmann::json::value_t::number_unsigned:
      append_jcs_number(out, static_cast<double>(v.get<std::uint64_t>()));
      break;
    case nlohmann::json::value_t::number_float: append_jcs_number(out, v.get<double>()); break;
    case nlohmann::json::value_t::binary:  // not JSON: no canonical form
      throw std::invalid_argument("canonical_json: binary values have no JSON form");
    default: out += "null"; break;  // discarded: not produced by parsing
  }
}

// Canonical text, cut after at most `max_chars` bytes at a UTF-8 character
// boundary (then "..." is appended).
// Iterative, so any nesting depth is safe. `lenient`: non-finite numbers and
// binary values print as `null` instead of throwing (error previews).
inline std::string canonical_json(const nlohmann::json& root, std::size_t max_chars, bool lenient = false) {
  struct frame {
    const nlohmann::json* value;
    std::vector<std::pair<std::u16string, nlohmann::json::const_iterator>> members;  // objects: sorted
    std::size_t next = 0;
    nlohmann::json::const_iterator it;  // arrays
  };
  std::string out;
  std::vector<frame> stack;
  auto emit = [&](const nlohmann::json& v) {
    if (v.is_object() && !v.empty()) {
      out += '{';
      frame f{&v, {}, 0, {}};
      f.members.reserve(v.size());
      for (auto it = v.cbegin(); it != v.cend(); ++it) f.members.emplace_back(utf16_units(it.key()), it);
      std::sort(f.members.begin(), f.members.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      stack.push_back(std::move(f));
    } else if (v.is_array() && !v.empty()) {
      out += '[';
      stack.push_back({&v, {}, 0, v.cbegin()});
    } else if (v.is_object()) {
      out += "{}";
    } else if (v.is_array()) {
      out += "[]";
    } else if (lenient) {
      try {
        append_jcs_scalar(out, v);
      } catch (const std::invalid_argument&) {
        out += "null";
      }
    } else {
      append_jcs_scalar(out, v);
    }
  };
  emit(root);
  while (!stack.empty() && out.size() <= max_chars) {
    frame& f = stack.back();
    const bool object = f.value->is_object();
    const bool at_end = object ? f.next == f.members.size() : f.it == f.value->cend();
    if (at_end) {
      out += object ? '}' : ']';
      stack.pop_back();
      continue;
    }
    const nlohmann::json* child = nullptr;
    if (object) {
      if (f.next != 0) out += ',';
      const auto it = f.members[f.next++].second;
      append_jcs_string(out, it.key());
      out += ':';
      child = &*it;
    } else {
      if (f.it != f.value->cbegin()) out += ',';
      child = &*f.it;
      ++f.it;
    }
    emit(*child);  // may grow `stack`: `f` is not used after this
  }
  if (out.size() > max_chars) {
    // Cut at a character boundary: the text stays valid UTF-8.
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += "...";
  }
  return out;
}

}  // namespace detail

/// The RFC 8785 (JCS) canonical text of `v`: members sorted by UTF-16 code
/// units, numbers in ECMAScript form as IEEE doubles, JSON.stringify string
/// escaping, no whitespace (see the header comment). Equal JSON values give
/// equal text, and the text is byte-for-byte what any conforming RFC 8785
/// implementation produces for the same document. Throws
/// std::invalid_argument for NaN, infinities and binary values. Iterative,
/// so any nesting depth is safe.
inline std::string canonical_json(const nlohmann::json& v) {
  return detail::canonical_json(v, static_cast<std::size_t>(-1) / 2);
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_CANONICAL_HPP
