// tool_effects/mcp/protocol/detail/wire.hpp — internal: what every part of the MCP
// code uses to quote and write JSON-RPC text (the session, the transports,
// the client): the compact dump of a message, and the envelope scan of a
// message the bounded parse refused. A peer's text is quoted with
// detail::quote_text (detail/quote.hpp), the library's one quoting helper.
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_WIRE_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_WIRE_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/quote.hpp>
#include <tool_effects/json/detail/dump.hpp>

namespace tool_effects::detail {

// A message as it goes on the wire (json/detail/dump.hpp: compact, invalid UTF-8 replaced).
inline std::string mcp_dump(const nlohmann::json& j) { return json_dump(j); }

// What mcp_request_text and mcp_result_text reserve at once: a small message then allocates once, not at each
// doubling of its text.
inline constexpr std::size_t mcp_small_message_bytes = 256;

// The request {"id": id, "jsonrpc": "2.0", "method": method, "params": *params} (no "params" when `params` is null
// or points to null) as mcp_dump writes it, byte for byte (nlohmann's objects keep their keys sorted), written
// around the params' own text: the params are neither copied nor wrapped in a new message object.

inline std::string mcp_request_text(std::int64_t id, std::string_view method, const nlohmann::json* params) {
  std::string out;
  out.reserve(mcp_small_message_bytes);
  out += "{\"id\":";
  out += std::to_string(id);
  out += ",\"jsonrpc\":\"2.0\",\"method\":";
  json_dump_string(out, method);
  if (params != nullptr && !params->is_null()) {
    out += ",\"params\":";
    json_dump_to(out, *params);
  }
  out += '}';
  return out;
}

// The response {"id": id, "jsonrpc": "2.0", "result": result} as mcp_dump writes it, byte for byte, written around
// the result's own text (as mcp_request_text is): the result is neither copied nor wrapped in a message object.
inline std::string mcp_result_text(const nlohmann::json& id, const nlohmann::json& result) {
  std::string out;
  out.reserve(mcp_small_message_bytes);
  out += "{\"id\":";
  json_dump_to(out, id);
  out += ",\"jsonrpc\":\"2.0\",\"result\":";
  json_dump_to(out, result);
  out += '}';
  return out;
}

// The envelope of a line the bounded parse refused: is it JSON at all, and
// its top-level "id" (a number or a string) and "method", if any. A SAX pass
// (nlohmann's SAX parser keeps its own stack, no recursion) that builds
// nothing below the top level, so any depth is safe.
struct mcp_envelope {
  bool json = false;
  std::optional<nlohmann::json> id;
  bool method = false;
};

inline mcp_envelope mcp_scan_envelope(std::string_view line) {
  using json = nlohmann::json;
  struct scanner : nlohmann::json_sax<json> {
    std::size_t depth = 0;
    std::string top_key;
    mcp_envelope env;
    bool top() const { return depth == 1; }
    void scalar(json v) {
      if (top() && top_key == "id" && (v.is_number_integer() || v.is_string())) env.id = std::move(v);
    }
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t v) override { return scalar(v), true; }
    bool number_unsigned(number_unsigned_t v) override { return scalar(v), true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t& v) override {
      if (top() && top_key == "id" && v.size() <= 256) env.id = v;
      if (top() && top_key == "method") env.method = true;
      return true;
    }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return ++depth, top_key.clear(), true; }
    bool key(string_t& k) override {
      if (top()) top_key = k.size() <= 16 ? k : std::string();
      return true;
    }
    bool end_object() override { return --depth, top_key.clear(), true; }
    bool start_array(std::size_t) override { return ++depth, top_key.clear(), true; }
    bool end_array() override { return --depth, top_key.clear(), true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
  } sax;
  sax.env.json = json::sax_parse(line.begin(), line.end(), &sax);
  if (!sax.env.json) return {};
  return sax.env;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_WIRE_HPP
