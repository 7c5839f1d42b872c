// tool_effects/json/error.hpp — internal to <tool_effects/json.hpp>: the
// error type of the JSON bridge (a `parse_error` that carries a JSON
// pointer) and the hardened text parser shared by the manifest loader and
// the MCP importer. `canonical_json` is in json/canonical.hpp (RFC 8785).
// Include <tool_effects/json.hpp>.
#ifndef TOOL_EFFECTS_JSON_ERROR_HPP
#define TOOL_EFFECTS_JSON_ERROR_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/canonical.hpp>
#include <tool_effects/text.hpp>

namespace tool_effects {

/// A JSON input that does not match what the bridge expects. `pointer()` is
/// the RFC 6901 JSON pointer of the bad value ("" = the whole document),
/// `message()` what is wrong, `input()` the bad value (a string as is, any
/// other value as compact JSON, cut after 60 bytes). `what()` reads
/// `at /1: unknown side-effect tag: "bogus"`.
class json_error : public parse_error {
 public:
  json_error(std::string pointer, std::string message, std::string_view input, std::string_view context = {})
      : parse_error(compose(context, pointer, message), input),
        pointer_(std::move(pointer)),
        message_(std::move(message)) {}

  /// JSON pointer of the offending value within the document.
  [[nodiscard]] const std::string& pointer() const noexcept { return pointer_; }
  /// What is wrong, without location or value ("unknown side-effect tag").
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  static std::string compose(std::string_view context, const std::string& pointer, const std::string& message) {
    std::string out(context);
    if (!out.empty()) out += ' ';
    out += "at ";
    out += pointer.empty() ? std::string("(root)") : pointer;
    out += ": ";
    out += message;
    return out;
  }
  std::string pointer_;
  std::string message_;
};

namespace detail {

// The bad value as quoted in errors: a string as is, else compact JSON.
inline std::string preview(const nlohmann::json& v) {
  constexpr std::size_t limit = 60;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return s.size() > limit ? str_cat(std::string_view(s).substr(0, limit), "...") : s;
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

/// Maximum nesting depth accepted by `parse_json`.
inline constexpr std::size_t max_json_depth = 64;

// Parses `text` strictly: syntax errors, duplicate object keys and nesting
// deeper than `max_json_depth` are `json_error`s (with `context` in front).
inline nlohmann::json parse_json(std::string_view text, std::string_view context) {
  struct frame {
    bool object;
    std::set<std::string> keys;
    std::string key;
    std::size_t index = 0;  // elements seen so far (arrays)
  };
  std::vector<frame> frames;
  auto pointer = [&frames] {
    std::string p;
    for (const auto& f : frames) {
      if (f.object)
        p.append("/").append(pointer_token(f.key));
      else if (f.index > 0)
        p.append("/").append(std::to_string(f.index - 1));
    }
    return p;
  };
  auto element = [&] {
    if (!frames.empty() && !frames.back().object) ++frames.back().index;
  };
  auto open = [&](bool object) {
    element();
    if (frames.size() >= max_json_depth)
      throw json_error(pointer(), str_cat("nesting deeper than ", std::to_string(max_json_depth), " levels"),
                       object ? "{" : "[", context);
    frames.push_back({object, {}, {}, 0});
  };
  using event = nlohmann::json::parse_event_t;
  auto callback = [&](int, event e, nlohmann::json& parsed) {
    switch (e) {
      case event::object_start: open(true); break;
      case event::array_start: open(false); break;
      case event::object_end:
      case event::array_end: frames.pop_back(); break;
      case event::key: {
        auto& f = frames.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) throw json_error(pointer(), "duplicate key", f.key, context);
        break;
      }
      case event::value: element(); break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.data(), text.data() + text.size(), callback);
  } catch (const nlohmann::json::parse_error& e) {
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    const std::size_t from = std::min(at > 20 ? at - 20 : 0, text.size());
    throw json_error("", str_cat("invalid JSON at byte ", std::to_string(e.byte)), text.substr(from, 40), context);
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range 406: a number that overflows a double
    throw json_error("", "invalid JSON", e.what(), context);
  }
}

}  // namespace detail

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_ERROR_HPP
