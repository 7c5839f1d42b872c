// tool_effects/json/bounded_parse.hpp — internal to <tool_effects/json.hpp>:
// the ONE bounded parse of untrusted JSON text (`parse_untrusted_json`: model
// output, manifests, MCP overlays and server lines, stream events), its limits
// (`json_limits`), and `check_json_depth`, the same depth bound for values the
// library did not parse itself. Errors are `json_error` (json/error.hpp).
// Include <tool_effects/json.hpp>.
// Why the bound exists and what it protects: docs/runtime.md, "Bounded input".
#ifndef TOOL_EFFECTS_JSON_BOUNDED_PARSE_HPP
#define TOOL_EFFECTS_JSON_BOUNDED_PARSE_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>

namespace tool_effects {

/// Limits of `parse_untrusted_json`. `max_depth`: the most nested arrays and
/// objects (the document's own container is level 1); at most
/// `max_safe_json_depth`. `max_bytes`: the most bytes of text. `max_values`:
/// the most values (scalars, arrays and objects; not keys), which bounds the
/// memory of the parsed value (nlohmann::json takes 40 to 100 bytes per value,
/// up to ~20 times the text for `[[0,1],[0,1],...]`) and the time to build it.
struct json_limits {
  std::size_t max_depth = 64;
  std::size_t max_bytes = std::size_t{16} << 20;   // 16 MiB, the MCP client's line limit
  std::size_t max_values = std::size_t{1} << 20;  // 1,048,576 values
};

/// The largest `json_limits::max_depth` accepted: every recursive walk of a
/// value (nlohmann's copy, dump and comparison) stays within a few hundred
/// KiB of stack at this depth.
inline constexpr std::size_t max_safe_json_depth = 512;

namespace detail {

/// Maximum nesting depth accepted by `parse_json` (the default of `json_limits`).
inline constexpr std::size_t max_json_depth = json_limits{}.max_depth;

// A JSON pointer from its reference tokens (each escaped here).
inline std::string pointer_of(const std::vector<std::string>& tokens) {
  std::string p;
  for (const auto& t : tokens) p.append("/").append(pointer_token(t));
  return p;
}

// The JSON pointer of the first array or object (in document order) that
// lies deeper than `max_depth` containers in `v` (`v` itself is level 1),
// or nullopt. Iterative: safe for any depth, and it reads each value once.
inline std::optional<std::string> too_deep_at(const nlohmann::json& v, std::size_t max_depth) {
  if (!v.is_structured()) return std::nullopt;
  if (max_depth == 0) return std::string();
  struct frame {
    const nlohmann::json* value;
    nlohmann::json::const_iterator next;
    nlohmann::json::const_iterator current;  // the child being visited
    std::size_t index;                       // its index (arrays)
  };
  std::vector<frame> stack;
  stack.push_back({&v, v.cbegin(), v.cend(), 0});
  while (!stack.empty()) {
    frame& f = stack.back();
    if (f.next == f.value->cend()) {
      stack.pop_back();
      continue;
    }
    f.current = f.next++;
    ++f.index;
    const nlohmann::json& child = *f.current;
    if (!child.is_structured()) continue;
    if (stack.size() >= max_depth) {
      std::vector<std::string> tokens;
      for (const auto& g : stack)
        tokens.push_back(g.value->is_object() ? g.current.key() : std::to_string(g.index - 1));
      return pointer_of(tokens);
    }
    stack.push_back({&child, child.cbegin(), child.cend(), 0});
  }
  return std::nullopt;
}

inline std::string too_deep_message(std::size_t max_depth) {
  return str_cat("nesting deeper than ", std::to_string(max_depth), " levels");
}

inline void check_limits(const json_limits& limits) {
  if (limits.max_depth == 0 || limits.max_depth > max_safe_json_depth)
    throw std::invalid_argument(str_cat("json_limits.max_depth must be in 1..", std::to_string(max_safe_json_depth),
                                        ", got ", std::to_string(limits.max_depth)));
}

}  // namespace detail

/// Checks that `v` (a value the library did not parse itself: built or
/// parsed by the application, a tool's result) nests no deeper than
/// `max_depth` arrays and objects, the bound `parse_untrusted_json` applies
/// to text. Throws `json_error` (reason `too_deep`, the JSON pointer of the
/// first too-deep container, `context` in front) otherwise. Iterative: safe
/// for any depth; run it BEFORE copying, dumping or comparing such a value,
/// which nlohmann::json does recursively.
inline void check_json_depth(const nlohmann::json& v, std::size_t max_depth = json_limits{}.max_depth,
                             std::string_view context = {}) {
  if (auto at = detail::too_deep_at(v, max_depth))
    throw json_error(std::move(*at), detail::too_deep_message(max_depth), v.is_object() ? "{" : "[", context,
                     json_error_reason::too_deep);
}

namespace detail {

// The SAX handler of `parse_untrusted_json`: builds the value as nlohmann's own DOM parser does and checks the
// limits and duplicate keys as it goes. (nlohmann 3.11's callback parser, used before, scans the parent
// object's members at every nested object's end, which made objects of many object members quadratic: 8,000
// members took 1.8 s.) Errors of the text itself come back from nlohmann as exceptions (parse_error).
class untrusted_json_builder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  using json = nlohmann::json;

  untrusted_json_builder(const json_limits& limits, std::string_view context) : limits_(limits), context_(context) {
    stack_.reserve(8);  // a typical message's depth, reserved at once instead of grown
    frames_.reserve(8);
  }

  json root;

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return put(json(v)); }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    frame& f = frames_.back();
    auto& members = stack_.back()->get_ref<json::object_t&>();
    const auto at = members.lower_bound(k);
    if (at != members.end() && at->first == k)
      throw json_error(pointer_with(k), "duplicate key", k, context_, json_error_reason::duplicate_key);
    f.key = std::move(k);
    f.hint = at;  // where the member goes: nothing is inserted into this object before its value is stored
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // Rethrown as its own type (parse_error, out_of_range), which parse_untrusted_json turns into json_error.
    if (const auto* p = dynamic_cast<const json::parse_error*>(&e)) throw *p;
    if (const auto* r = dynamic_cast<const json::out_of_range*>(&e)) throw *r;
    throw json::other_error::create(501, e.what(), static_cast<const json*>(nullptr));
  }

 private:
  struct frame {
    bool object;
    std::string key;
    std::size_t index = 0;               // elements seen so far (arrays)
    json::object_t::iterator hint = {};  // objects: the position of the member being read (from key())
  };

  std::string pointer_with(std::string_view last_key = {}) const {
    std::string p;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const frame& f = frames_[i];
      const bool last = i + 1 == frames_.size();
      if (f.object) {
        p.append("/").append(pointer_token(last && !last_key.empty() ? last_key : std::string_view(f.key)));
      } else if (f.index > 0) {
        p.append("/").append(std::to_string(f.index - 1));
      }
    }
    return p;
  }
  // Counts a value and, inside an array, its index.
  void element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    if (++values_ > limits_.max_values)
      throw json_error(pointer_with(), str_cat("more than ", std::to_string(limits_.max_values), " values"), "",
                       context_, json_error_reason::too_large);
  }
  // Stores a value where it belongs; returns where it went. A container keeps its key in its frame (the JSON
  // pointer of an error inside it names it); a scalar's is moved into the object.
  json* store(json&& v, bool container = false) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    frame& f = frames_.back();  // one search per member, in key()
    auto& members = top.get_ref<json::object_t&>();
    return &(container ? members.emplace_hint(f.hint, f.key, std::move(v))
                       : members.emplace_hint(f.hint, std::move(f.key), std::move(v)))->second;
  }
  bool put(json&& v) {
    element();
    store(std::move(v));
    return true;
  }
  bool open(bool object) {
    element();
    if (frames_.size() >= limits_.max_depth)
      throw json_error(pointer_with(), too_deep_message(limits_.max_depth), object ? "{" : "[", context_,
                       json_error_reason::too_deep);
    stack_.push_back(store(object ? json::object() : json::array(), true));
    frames_.push_back({object, {}, 0, {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    frames_.pop_back();
    return true;
  }

  const json_limits& limits_;
  std::string_view context_;
  std::vector<json*> stack_;
  std::vector<frame> frames_;
  std::size_t values_ = 0;
};

#if defined(TOOL_EFFECTS_JSON_BOOST_PARSER) && TOOL_EFFECTS_JSON_BOOST_PARSER
// The optional Boost.JSON lexer (json/detail/boost_json_parse.hpp): nullopt when it does not admit the text.
inline std::optional<nlohmann::json> parse_with_boost_json(std::string_view text, const json_limits& limits);
#endif
// The default one-pass lexer (json/detail/fast_parse.hpp): nullopt when it does not admit the text.
inline std::optional<nlohmann::json> parse_with_fast_lexer(std::string_view text, const json_limits& limits);

// nlohmann's lexer into the bounded builder: the reference parse, and the one that reports every error.
inline nlohmann::json parse_untrusted_json_nlohmann(std::string_view text, const json_limits& limits,
                                                   std::string_view context) {
  untrusted_json_builder b(limits, context);
  try {
    (void)nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &b, nlohmann::json::input_format_t::json,
                                    true);
  } catch (const nlohmann::json::parse_error& e) {
    // Up to 20 bytes either side of the error, cut at character boundaries.
    const std::size_t at = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const std::string_view around = utf8_prefix(utf8_suffix(text, at > 20 ? at - 20 : 0), 40);
    throw json_error("", str_cat("invalid JSON at byte ", std::to_string(e.byte)), around, context,
                     json_error_reason::invalid_json);
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range 406: a number that overflows a double
    throw json_error("", "invalid JSON", e.what(), context, json_error_reason::invalid_json);
  }
  return std::move(b.root);
}

}  // namespace detail

/// THE parse of untrusted JSON text (model output, manifests, MCP overlays
/// and server lines, stream events): strict RFC 8259 JSON within `limits`.
/// Refused, each as a `json_error` with the JSON pointer (`context` in front
/// of `what()`) and a stable `reason()`:
///  - more than `limits.max_bytes` bytes: `too_large` (checked before parsing);
///  - more than `limits.max_values` values: `too_large` (counted while parsing);
///  - syntax errors, invalid UTF-8, numbers beyond a double: `invalid_json`
///    (the message gives the byte offset and quotes the text around it);
///  - a repeated key in one object: `duplicate_key`;
///  - arrays and objects nested deeper than `limits.max_depth`: `too_deep`,
///    found while parsing, so a deep document costs no more than its text.
/// Everything the library does with an admitted value (copy, dump,
/// canonical form, identity, results) is safe at that depth. Throws
/// std::invalid_argument when `limits.max_depth` is 0 or above
/// `max_safe_json_depth`.
inline nlohmann::json parse_untrusted_json(std::string_view text, const json_limits& limits = {},
                                           std::string_view context = {}) {
  using detail::str_cat;
  detail::check_limits(limits);
  if (text.size() > limits.max_bytes)
    throw json_error("", str_cat("text of ", std::to_string(text.size()), " bytes exceeds the limit of ",
                                 std::to_string(limits.max_bytes), " bytes"),
                     str_cat(detail::utf8_prefix(text, 40), "..."), context, json_error_reason::too_large);
#if defined(TOOL_EFFECTS_JSON_BOOST_PARSER) && TOOL_EFFECTS_JSON_BOOST_PARSER
  // Built with TOOL_EFFECTS_JSON_BOOST_PARSER=1: Boost.JSON's lexer first; what it does not admit, and every
  // error, is parsed again below (json/detail/boost_json_parse.hpp).
  if (auto fast = detail::parse_with_boost_json(text, limits)) return std::move(*fast);
#elif TOOL_EFFECTS_JSON_FAST_PARSER
  // The one-pass lexer first (json/detail/fast_parse.hpp); what it does not admit, and every error, is parsed
  // again by nlohmann below, so errors are nlohmann's.
  if (auto fast = detail::parse_with_fast_lexer(text, limits)) return std::move(*fast);
#endif
  return detail::parse_untrusted_json_nlohmann(text, limits, context);
}

namespace detail {

// `parse_untrusted_json` with the default limits (the name the library's
// own readers have used since the first release).
inline nlohmann::json parse_json(std::string_view text, std::string_view context) {
  return parse_untrusted_json(text, json_limits{}, context);
}

}  // namespace detail

}  // namespace tool_effects

#include <tool_effects/json/detail/fast_parse.hpp>
#if defined(TOOL_EFFECTS_JSON_BOOST_PARSER) && TOOL_EFFECTS_JSON_BOOST_PARSER
#include <tool_effects/json/detail/boost_json_parse.hpp>
#endif

#endif  // TOOL_EFFECTS_JSON_BOUNDED_PARSE_HPP
