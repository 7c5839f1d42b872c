// tool_effects/json/detail/dump.hpp — internal: the one serializer of what goes on the wire. Output is
// byte-identical to nlohmann's `dump(-1, ' ', false, error_handler_t::replace)` (compact; UTF-8 kept; an invalid
// UTF-8 sequence becomes U+FFFD instead of throwing), but a string is copied span by span between the bytes that
// need escaping, where nlohmann decodes it one byte at a time: that was 61% of the MCP server's CPU on 1 MiB
// results (docs/benchmarks.md, "The MCP server against the TypeScript SDK's McpServer").
#ifndef TOOL_EFFECTS_JSON_DETAIL_DUMP_HPP
#define TOOL_EFFECTS_JSON_DETAIL_DUMP_HPP

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/utf8.hpp>

namespace tool_effects::detail {

// Byte classes of a JSON string's contents: 0 copied as is, 1 escaped, 2 the lead of a multi-byte sequence.
inline constexpr std::array<unsigned char, 256> json_dump_class = [] {
  std::array<unsigned char, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[static_cast<std::size_t>(c)] = 1;
  t['"'] = 1;
  t['\\'] = 1;
  for (int c = 0x80; c < 0x100; ++c) t[static_cast<std::size_t>(c)] = 2;
  return t;
}();

// Whether the 8 bytes of `w` may hold a byte to escape or a non-ASCII byte (a false positive costs only time):
// a byte below 0x20, '"', '\\' or one with the high bit set.
inline bool json_dump_word_special(std::uint64_t w) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t highs = 0x8080808080808080ULL;
  const auto has_zero = [](std::uint64_t x) { return (x - ones) & ~x & highs; };
  return ((w - ones * 0x20) & ~w & highs) | has_zero(w ^ (ones * '"')) | has_zero(w ^ (ones * '\\')) | (w & highs);
}

inline void json_dump_string(std::string& out, std::string_view s) {
  const std::size_t mark = out.size();
  // A long string leaves room for the rest of its message: the few closing bytes after a
  // megabyte result would otherwise reallocate the output and copy the megabyte again.
  constexpr std::size_t tail_room = 4096;
  out.reserve(out.size() + s.size() + 2 + (s.size() >= tail_room ? tail_room : 0));
  out.push_back('"');
  const char* const p = s.data();
  const std::size_t n = s.size();
  std::size_t start = 0;  // the first byte not yet copied
  for (std::size_t i = 0; i < n;) {
    for (std::uint64_t w; i + 8 <= n; i += 8) {  // eight plain ASCII bytes at a time
      std::memcpy(&w, p + i, 8);
      if (json_dump_word_special(w)) break;
    }
    if (i >= n) break;
    const auto c = static_cast<unsigned char>(p[i]);
    if (json_dump_class[c] == 0) {
      ++i;
      continue;
    }
    if (json_dump_class[c] == 2) {  // a multi-byte character: kept if valid
      const std::size_t at = i;
      if (next_code_point(s, i) == 0xFFFD && i == at + 1) {  // invalid (a real U+FFFD takes three bytes)
        out.resize(mark);  // rare: nlohmann's own replacement, exactly
        out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        return;
      }
      continue;
    }
    out.append(p + start, i - start);
    start = i + 1;
    ++i;
    switch (c) {
      case '"': out.append("\\\"", 2); break;
      case '\\': out.append("\\\\", 2); break;
      case '\b': out.append("\\b", 2); break;
      case '\f': out.append("\\f", 2); break;
      case '\n': out.append("\\n", 2); break;
      case '\r': out.append("\\r", 2); break;
      case '\t': out.append("\\t", 2); break;
      default: {
        constexpr char hex[] = "0123456789abcdef";
        const char u[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
        out.append(u, sizeof u);
      }
    }
  }
  out.append(p + start, n - start);
  out.push_back('"');
}

inline void json_dump_to(std::string& out, const nlohmann::json& j) {
  using value_t = nlohmann::json::value_t;
  switch (j.type()) {
    case value_t::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [k, v] : j.get_ref<const nlohmann::json::object_t&>()) {
        if (!first) out.push_back(',');
        first = false;
        json_dump_string(out, k);
        out.push_back(':');
        json_dump_to(out, v);
      }
      out.push_back('}');
      return;
    }
    case value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& v : j) {
        if (!first) out.push_back(',');
        first = false;
        json_dump_to(out, v);
      }
      out.push_back(']');
      return;
    }
    case value_t::string: json_dump_string(out, j.get_ref<const std::string&>()); return;
    case value_t::boolean: out += j.get<bool>() ? "true" : "false"; return;
    case value_t::null: out += "null"; return;
    case value_t::number_integer:
    case value_t::number_unsigned: {
      char buf[24];
      const auto r = j.is_number_unsigned() ? std::to_chars(buf, buf + sizeof buf, j.get<std::uint64_t>())
                                            : std::to_chars(buf, buf + sizeof buf, j.get<std::int64_t>());
      out.append(buf, r.ptr);
      return;
    }
    default:  // floating point, binary, discarded: nlohmann's own form
      out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
  }
}

// `j` as the wire gets it (see the file comment).
[[nodiscard]] inline std::string json_dump(const nlohmann::json& j) {
  std::string out;
  json_dump_to(out, j);
  return out;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_JSON_DETAIL_DUMP_HPP
