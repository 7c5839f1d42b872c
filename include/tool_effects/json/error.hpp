// tool_effects/json/error.hpp — internal to <tool_effects/json.hpp>: the
// error type of the JSON bridge (`json_error`: a `parse_error` that carries a
// JSON pointer and a stable reason) and the helpers that word its messages
// (the quoted value, "expected ..., got ...", "did you mean"). The ONE bounded
// parse of untrusted JSON text is in json/bounded_parse.hpp, included at the
// end so that every includer of this header still has it.
// Include <tool_effects/json.hpp>.
#ifndef TOOL_EFFECTS_JSON_ERROR_HPP
#define TOOL_EFFECTS_JSON_ERROR_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/detail/utf8.hpp>
#include <tool_effects/json/canonical.hpp>
#include <tool_effects/text.hpp>

namespace tool_effects {

/// Why a JSON input was refused, as a stable slug (`to_string`):
/// `invalid_value` (a field the library reads has the wrong type or value),
/// `invalid_json` (not JSON: syntax, invalid UTF-8, a number out of range),
/// `duplicate_key`, `too_deep` (nesting beyond the depth limit), `too_large`
/// (text beyond the size limit).
enum class json_error_reason : std::uint8_t { invalid_value, invalid_json, duplicate_key, too_deep, too_large };

/// The stable slug of `r` (the enumerator's name). Never changes between versions.
constexpr std::string_view to_string(json_error_reason r) noexcept {
  switch (r) {
    case json_error_reason::invalid_value: return "invalid_value";
    case json_error_reason::invalid_json: return "invalid_json";
    case json_error_reason::duplicate_key: return "duplicate_key";
    case json_error_reason::too_deep: return "too_deep";
    case json_error_reason::too_large: return "too_large";
  }
  return {};
}

/// A JSON input that does not match what the bridge expects. `pointer()` is
/// the RFC 6901 JSON pointer of the bad value ("" = the whole document),
/// `message()` what is wrong, `reason()` a stable slug of why, `input()` the
/// bad value (a string as is, any other value as compact JSON, cut after 60
/// bytes at a character boundary; bytes that are not valid UTF-8 become
/// U+FFFD, so `what()` is always valid UTF-8). `what()` reads
/// `at /1: unknown side-effect tag: "bogus"`.
class json_error : public parse_error {
 public:
  json_error(std::string pointer, std::string message, std::string_view input, std::string_view context = {},
             json_error_reason reason = json_error_reason::invalid_value)
      : parse_error(detail::valid_utf8(compose(context, pointer, message)), detail::valid_utf8(input)),
        pointer_(std::move(pointer)),
        message_(std::move(message)),
        reason_(reason) {}

  /// JSON pointer of the offending value within the document.
  [[nodiscard]] const std::string& pointer() const noexcept { return pointer_; }
  /// What is wrong, without location or value ("unknown side-effect tag").
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  /// Why, as a stable slug (see `json_error_reason`).
  [[nodiscard]] json_error_reason reason() const noexcept { return reason_; }

 private:
  static std::string compose(std::string_view context, const std::string& pointer, const std::string& message) {
    const std::string_view where = pointer.empty() ? std::string_view("(root)") : std::string_view(pointer);
    return detail::str_cat(context, context.empty() ? "" : " ", "at ", where, ": ", message);
  }
  std::string pointer_;
  std::string message_;
  json_error_reason reason_;
};


namespace detail {

// The bad value as quoted in errors: a string as is, else compact JSON.
inline std::string preview(const nlohmann::json& v) {
  constexpr std::size_t limit = 60;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return utf8_excerpt(s, limit);
  }
  return canonical_json(v, limit, true);
}

// "expected a string, got number".
inline std::string expected(std::string_view what, const nlohmann::json& v) {
  return str_cat("expected ", what, ", got ", v.type_name());
}

// RFC 6901 escaping of one reference token.
inline std::string pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

// The keys a value may have; a near miss is suggested ("did you mean").
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The closest of `known` to `key`: within edit distance 2, else a prefix
// either way (a truncated or extended name: "target" for "target_arg");
// empty when none is close. `known` is any range of string-like names.
template <class Names>
std::string_view closest_name(std::string_view key, const Names& known) {
  std::string_view best;
  std::size_t best_d = 3;
  if (key.size() <= 64)
    for (const auto& name : known) {
      const std::string_view k(name);
      if (const auto d = edit_distance(key, k); d < best_d) best_d = d, best = k;
    }
  if (best.empty() && key.size() >= 3)
    for (const auto& name : known) {
      const std::string_view k(name);
      if (k.substr(0, key.size()) == key || key.substr(0, k.size()) == k) {
        best = k;
        break;
      }
    }
  return best;
}

// `what` followed by " (did you mean "x"?)" for a near miss of `known`, else
// " (known: a b c)".
template <class Names>
std::string suggestion_message(std::string msg, std::string_view key, const Names& known) {
  if (const std::string_view best = closest_name(key, known); !best.empty()) {
    msg += " (did you mean \"";
    msg += best;
    msg += "\"?)";
  } else {
    msg += " (known:";
    for (const auto& k : known) {
      msg += ' ';
      msg += std::string_view(k);
    }
    msg += ")";
  }
  return msg;
}

inline std::string unknown_key_message(std::string_view key, std::initializer_list<std::string_view> known) {
  return suggestion_message("unknown key", key, known);
}

}  // namespace detail

}  // namespace tool_effects

#include <tool_effects/json/bounded_parse.hpp>

#endif  // TOOL_EFFECTS_JSON_ERROR_HPP
