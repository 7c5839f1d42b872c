// tool_effects/json/detail/boost_json_parse.hpp — internal: an optional fast
// lexer for `parse_untrusted_json` (nlohmann's lexer was 93% of the
// MCP client's instructions for 1 MiB results). Boost.JSON's `basic_parser`
// reads the text and feeds the library's own bounded builder
// (`untrusted_json_builder`: depth, value count and duplicate keys stay one
// rule), so an admitted document is the value nlohmann's parse builds (numbers
// are converted from their text as nlohmann converts them, by `wire_number`,
// which the default lexer json/detail/fast_parse.hpp uses too). On ANY
// failure — a syntax error, a limit, a number either lexer might read
// differently — it returns nullopt and the caller parses with nlohmann, whose
// error is the one reported: errors are unchanged.
//
// Used by `parse_untrusted_json` when TOOL_EFFECTS_JSON_BOOST_PARSER=1 is
// defined in every translation unit (a compile definition) and Boost.JSON's
// compiled part is linked: `libboost_json` (CMake Boost::json), or
// <boost/json/src.hpp> included in exactly one translation unit. Off by default.
#ifndef TOOL_EFFECTS_JSON_DETAIL_BOOST_JSON_PARSE_HPP
#define TOOL_EFFECTS_JSON_DETAIL_BOOST_JSON_PARSE_HPP

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/basic_parser_impl.hpp>
#include <nlohmann/json.hpp>

#include <tool_effects/json/detail/fast_parse.hpp>
#include <tool_effects/json/bounded_parse.hpp>

namespace tool_effects::detail {

// Boost.JSON's handler: each event goes to the bounded builder as nlohmann's lexer would send it.
class boost_json_to_builder {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  using error_code = boost::json::error_code;
  using sv = boost::json::string_view;

  boost_json_to_builder(const json_limits& limits) : builder(limits, {}) {}

  untrusted_json_builder builder;

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code& ec) { return step(ec, [&] { return builder.start_object(npos); }); }
  bool on_object_end(std::size_t, error_code& ec) { return step(ec, [&] { return builder.end_object(); }); }
  bool on_array_begin(error_code& ec) { return step(ec, [&] { return builder.start_array(npos); }); }
  bool on_array_end(std::size_t, error_code& ec) { return step(ec, [&] { return builder.end_array(); }); }
  bool on_key_part(sv s, std::size_t, error_code&) {
    text_.append(s.data(), s.size());
    return true;
  }
  bool on_key(sv s, std::size_t, error_code& ec) {
    text_.append(s.data(), s.size());
    return step(ec, [&] {
      const bool ok = builder.key(text_);
      text_.clear();
      return ok;
    });
  }
  bool on_string_part(sv s, std::size_t, error_code&) {
    text_.append(s.data(), s.size());
    return true;
  }
  bool on_string(sv s, std::size_t, error_code& ec) {
    if (text_.empty()) text_.reserve(s.size());
    text_.append(s.data(), s.size());
    return step(ec, [&] {
      const bool ok = builder.string(text_);  // moved into the value
      text_.clear();
      return ok;
    });
  }
  bool on_number_part(sv s, error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t, sv s, error_code& ec) { return number(s, ec); }
  bool on_uint64(std::uint64_t, sv s, error_code& ec) { return number(s, ec); }
  bool on_double(double, sv s, error_code& ec) { return number(s, ec); }
  bool on_bool(bool b, error_code& ec) { return step(ec, [&] { return builder.boolean(b); }); }
  bool on_null(error_code& ec) { return step(ec, [&] { return builder.null(); }); }
  bool on_comment_part(sv, error_code& ec) { return refuse(ec); }
  bool on_comment(sv, error_code& ec) { return refuse(ec); }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  static bool refuse(error_code& ec) {
    ec = boost::json::error::syntax;
    return false;
  }
  // A builder step; its exceptions (a limit, a duplicate key) end the parse: nlohmann's reports them.
  template <class F>
  bool step(error_code& ec, F&& f) {
    try {
      if (f()) return true;
    } catch (...) {
    }
    return refuse(ec);
  }
  // The number's text converted as nlohmann's lexer converts it (`wire_number`, json/detail/fast_parse.hpp).
  bool number(sv last, error_code& ec) {
    number_.append(last.data(), last.size());
    const std::string t = std::move(number_);
    number_.clear();
    return step(ec, [&] { return wire_number(t, builder); });
  }

  std::string text_;
  std::string number_;
};

// `parse_untrusted_json` by Boost.JSON's lexer into the bounded builder; nullopt on any failure.
inline std::optional<nlohmann::json> parse_with_boost_json(std::string_view text, const json_limits& limits) {
  boost::json::parse_options opt;
  opt.max_depth = limits.max_depth + 1;  // the builder's bound comes first, as with nlohmann
  boost::json::basic_parser<boost_json_to_builder> p(opt, limits);
  boost::json::error_code ec;
  std::size_t n = 0;
  try {
    n = p.write_some(false, text.data(), text.size(), ec);
  } catch (...) {
    return std::nullopt;
  }
  if (ec || !p.done()) return std::nullopt;
  for (; n < text.size(); ++n)  // only JSON whitespace may follow
    if (text[n] != ' ' && text[n] != '\t' && text[n] != '\n' && text[n] != '\r') return std::nullopt;
  return std::move(p.handler().builder.root);
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_JSON_DETAIL_BOOST_JSON_PARSE_HPP
