// tool_effects/mcp/detail/client_requests.hpp — internal to <tool_effects/mcp/client.hpp>
// (included by mcp/detail/connection.hpp): the client side of the
// capabilities of mcp/capabilities.hpp, independent of the transport — the
// capabilities a client declares, the checks of an elicitation's schema and
// content (SEP-1034 defaults), of a sampling request and result and of the
// roots, the progress tokens of calls, and `mcp_client_requests`, which
// serves a server's requests with the application's handlers (bounded in
// number and time). See docs/mcp.md ("Client capabilities").
#ifndef TOOL_EFFECTS_MCP_DETAIL_CLIENT_REQUESTS_HPP
#define TOOL_EFFECTS_MCP_DETAIL_CLIENT_REQUESTS_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/capabilities.hpp>
#include <tool_effects/mcp/errors.hpp>

namespace tool_effects {
namespace detail {

// Bounds of what a server may ask (a schema is also within the line limit and
// the depth limit of the bounded parse).
inline constexpr std::size_t mcp_max_elicitation_properties = 256;
inline constexpr std::size_t mcp_max_enum_values = 1024;
inline constexpr std::size_t mcp_max_sampling_messages = 10000;
// MRTR (2026-07-28): the most input requests of one InputRequiredResult,
// and the most rounds of one request (the server may ask again and again).
inline constexpr std::size_t mcp_max_input_requests = 16;
inline constexpr std::size_t mcp_max_input_rounds = 8;

// URL-mode elicitation (2025-11-25): the longest URL and id taken, the most
// elicitations of one URLElicitationRequiredError, and the most accepted ids
// awaiting their completion notification (past it the oldest is forgotten).
inline constexpr std::size_t mcp_max_elicitation_url_bytes = 8192;
inline constexpr std::size_t mcp_max_elicitation_id_bytes = 256;
inline constexpr std::size_t mcp_max_required_elicitations = 16;
inline constexpr std::size_t mcp_max_pending_elicitations = 1024;

// The `capabilities` of initialize: only what has a handler.
inline nlohmann::json mcp_client_capabilities(const mcp_client_options& o) {
  nlohmann::json c = nlohmann::json::object();
  if (o.on_elicitation || o.on_url_elicitation) {
    nlohmann::json modes = nlohmann::json::object();
    if (o.on_elicitation) modes["form"] = nlohmann::json::object();
    if (o.on_url_elicitation) modes["url"] = nlohmann::json::object();
    c["elicitation"] = std::move(modes);
  }
  if (o.on_sampling)
    c["sampling"] = o.sampling_tools ? nlohmann::json{{"tools", nlohmann::json::object()}} : nlohmann::json::object();
  if (o.roots) c["roots"] = {{"listChanged", true}};
  return c;
}

namespace elicit {

using json = nlohmann::json;

// Compact JSON for the wire (invalid UTF-8 replaced), and a bounded quote.
inline std::string wire(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
inline std::string cut(std::string_view s, std::size_t max) {
  return s.size() > max ? str_cat(utf8_prefix(s, max), "...") : std::string(s);
}

[[noreturn]] inline void fail(const std::string& pointer, std::string message) {
  throw json_error(pointer, std::move(message), "", "elicitation");
}

inline std::string at(const std::string& base, std::string_view key) { return str_cat(base, "/", pointer_token(key)); }

inline const json* member(const json& o, const char* key) {
  const auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

// A non-negative integer member, or none.
inline std::optional<std::uint64_t> count_of(const json& o, const char* key, const std::string& ptr) {
  const json* v = member(o, key);
  if (!v) return std::nullopt;
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<std::int64_t>() >= 0))
    fail(at(ptr, key), expected("a non-negative integer", *v));
  return v->get<std::uint64_t>();
}

inline std::optional<double> number_of(const json& o, const char* key, const std::string& ptr) {
  const json* v = member(o, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(at(ptr, key), expected("a number", *v));
  return v->get<double>();
}

// The strings of an enum list (`enum`, or the `const`s of `oneOf`/`anyOf`).
inline std::vector<std::string> options_of(const json& schema, const std::string& ptr, const char* list_key,
                                           bool titled) {
  std::vector<std::string> out;
  const json* list = member(schema, list_key);
  if (!list) return out;
  const std::string lp = at(ptr, list_key);
  if (!list->is_array() || list->empty()) fail(lp, "expected a non-empty array");
  if (list->size() > mcp_max_enum_values)
    fail(lp, str_cat(std::to_string(list->size()), " options, more than ", std::to_string(mcp_max_enum_values)));
  std::size_t i = 0;
  for (const auto& o : *list) {
    const std::string ip = str_cat(lp, "/", std::to_string(i++));
    const json* v = &o;
    if (titled) {
      if (!o.is_object()) fail(ip, expected("an object with const and title", o));
      v = member(o, "const");
      if (!v) fail(ip, "missing const");
      if (const json* t = member(o, "title"); t && !t->is_string()) fail(at(ip, "title"), expected("a string", *t));
    }
    if (!v->is_string()) fail(titled ? at(ip, "const") : ip, expected("a string", *v));
    out.push_back(v->get<std::string>());
  }
  return out;
}

inline std::size_t utf8_length(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

inline bool digits(std::string_view s) {
  for (const char c : s)
    if (c < '0' || c > '9') return false;
  return !s.empty();
}

inline bool date_ok(std::string_view s) {  // YYYY-MM-DD
  if (s.size() != 10 || s[4] != '-' || s[7] != '-' || !digits(s.substr(0, 4)) || !digits(s.substr(5, 2)) ||
      !digits(s.substr(8, 2)))
    return false;
  const int m = (s[5] - '0') * 10 + (s[6] - '0');
  const int d = (s[8] - '0') * 10 + (s[9] - '0');
  return m >= 1 && m <= 12 && d >= 1 && d <= 31;
}

inline bool date_time_ok(std::string_view s) {  // RFC 3339: date "T" hh:mm:ss[.frac](Z|+hh:mm|-hh:mm)
  if (s.size() < 20 || !date_ok(s.substr(0, 10)) || (s[10] != 'T' && s[10] != 't')) return false;
  const auto t = s.substr(11);
  if (t.size() < 9 || !digits(t.substr(0, 2)) || t[2] != ':' || !digits(t.substr(3, 2)) || t[5] != ':' ||
      !digits(t.substr(6, 2)))
    return false;
  auto rest = t.substr(8);
  if (!rest.empty() && rest[0] == '.') {
    std::size_t k = 1;
    while (k < rest.size() && rest[k] >= '0' && rest[k] <= '9') ++k;
    if (k == 1) return false;
    rest.remove_prefix(k);
  }
  if (rest == "Z" || rest == "z") return true;
  return rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && digits(rest.substr(1, 2)) && rest[3] == ':' &&
         digits(rest.substr(4, 2));
}

inline bool email_ok(std::string_view s) {
  const auto a = s.find('@');
  if (a == std::string_view::npos || a == 0 || a + 1 >= s.size() || s.find('@', a + 1) != std::string_view::npos)
    return false;
  for (const char c : s)
    if (static_cast<unsigned char>(c) <= 0x20) return false;
  return true;
}

inline bool uri_ok(std::string_view s) {  // scheme ":" rest (RFC 3986)
  const auto colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return false;
  for (const char c : s.substr(0, colon))
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
          c == '.'))
      return false;
  for (const char c : s)
    if (static_cast<unsigned char>(c) <= 0x20) return false;
  return true;
}

// An elicitation's URL (mcp_url_elicitation_request documents the rules):
// returns its host, lower-cased, or fails at `ptr`.
inline std::string url_host(const json& v, const std::string& ptr) {
  if (!v.is_string()) fail(ptr, expected("a string", v));
  const std::string& u = v.get_ref<const std::string&>();
  if (u.size() > mcp_max_elicitation_url_bytes)
    fail(ptr, str_cat(std::to_string(u.size()), " bytes, more than ", std::to_string(mcp_max_elicitation_url_bytes)));
  for (const char c : u)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      fail(ptr, "the URL holds whitespace, a control or a non-ASCII character (a host must come as punycode)");
  std::string_view rest(u);
  std::string scheme;
  for (const char* s : {"https://", "http://"}) {
    const std::string_view p(s);
    if (rest.size() >= p.size() && std::equal(p.begin(), p.end(), rest.begin(), [](char a, char b) {
          return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
        })) {
      scheme = p.substr(0, p.size() - 3);
      rest.remove_prefix(p.size());
      break;
    }
  }
  if (scheme.empty()) fail(ptr, str_cat("\"", cut(u, 80), "\" is not an absolute http or https URL"));
  const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos)
    fail(ptr, "the URL carries user information before its host (it would show the user a host it does not go to)");
  std::string_view host = authority;
  if (!host.empty() && host.front() == '[') {  // IPv6 literal
    const auto close = host.find(']');
    if (close == std::string_view::npos) fail(ptr, "the URL's IPv6 host has no closing bracket");
    host = host.substr(0, close + 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  const std::string_view port = authority.substr(host.size());
  if (!port.empty() && (port.front() != ':' || !digits(port.substr(1))))
    fail(ptr, "the URL's port is not a number");
  if (host.empty() || host == "[]") fail(ptr, "the URL has no host");
  std::string out(host);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// A URL-mode elicitation (params at `base`): the request the handler sees.
inline mcp_url_elicitation_request url_request_of(const std::string& server, const json& params,
                                                  const std::string& base) {
  if (!params.is_object()) fail(base, expected("an object", params));
  const json* msg = member(params, "message");
  if (!msg || !msg->is_string()) fail(at(base, "message"), "expected a string");
  const json* id = member(params, "elicitationId");
  if (!id || !id->is_string() || id->get_ref<const std::string&>().empty())
    fail(at(base, "elicitationId"), id ? expected("a non-empty string", *id) : std::string("missing"));
  if (id->get_ref<const std::string&>().size() > mcp_max_elicitation_id_bytes)
    fail(at(base, "elicitationId"), str_cat("more than ", std::to_string(mcp_max_elicitation_id_bytes), " bytes"));
  const json* url = member(params, "url");
  if (!url) fail(at(base, "url"), "missing");
  mcp_url_elicitation_request r;
  r.host = url_host(*url, at(base, "url"));
  r.server = server;
  r.message = msg->get<std::string>();
  r.url = url->get<std::string>();
  r.elicitation_id = id->get<std::string>();
  r.params = params;
  return r;
}

// One property's schema, checked once; `check` tests a value against it.
struct property {
  std::string type;  // string, number, integer, boolean, array
  std::vector<std::string> options;  // enum members (string) or item members (array); empty: any
  std::optional<std::uint64_t> min_length, max_length, min_items, max_items;
  std::optional<double> minimum, maximum;
  std::string format;
  std::optional<json> default_value;  // a copy: the schema it came from does not outlive the request

  void check(const json& v, const std::string& ptr) const {
    if (type == "string") {
      if (!v.is_string()) fail(ptr, expected("a string", v));
      const auto& s = v.get_ref<const std::string&>();
      if (!options.empty() && std::find(options.begin(), options.end(), s) == options.end())
        fail(ptr, str_cat("\"", preview(v), "\" is not one of the schema's options"));
      const std::size_t n = utf8_length(s);
      if (min_length && n < *min_length) fail(ptr, str_cat(std::to_string(n), " characters, fewer than minLength ", std::to_string(*min_length)));
      if (max_length && n > *max_length) fail(ptr, str_cat(std::to_string(n), " characters, more than maxLength ", std::to_string(*max_length)));
      const bool ok = format.empty() || (format == "email" && email_ok(s)) || (format == "uri" && uri_ok(s)) ||
                      (format == "date" && date_ok(s)) || (format == "date-time" && date_time_ok(s));
      if (!ok) fail(ptr, str_cat("\"", preview(v), "\" is not a valid ", format));
    } else if (type == "number" || type == "integer") {
      if (!v.is_number()) fail(ptr, expected(type == "integer" ? "an integer" : "a number", v));
      const double d = v.get<double>();
      // JSON Schema's integer: any number without a fractional part (30.0 too)
      if (type == "integer" && !v.is_number_integer() && !(std::isfinite(d) && std::trunc(d) == d))
        fail(ptr, expected("an integer", v));
      if (minimum && d < *minimum) fail(ptr, str_cat(preview(v), " is less than minimum ", preview(json(*minimum))));
      if (maximum && d > *maximum) fail(ptr, str_cat(preview(v), " is more than maximum ", preview(json(*maximum))));
    } else if (type == "boolean") {
      if (!v.is_boolean()) fail(ptr, expected("a boolean", v));
    } else {  // array: a multi-select
      if (!v.is_array()) fail(ptr, expected("an array", v));
      if (min_items && v.size() < *min_items) fail(ptr, str_cat(std::to_string(v.size()), " items, fewer than minItems ", std::to_string(*min_items)));
      if (max_items && v.size() > *max_items) fail(ptr, str_cat(std::to_string(v.size()), " items, more than maxItems ", std::to_string(*max_items)));
      std::size_t i = 0;
      for (const auto& item : v) {
        const std::string ip = str_cat(ptr, "/", std::to_string(i++));
        if (!item.is_string()) fail(ip, expected("a string", item));
        if (std::find(options.begin(), options.end(), item.get_ref<const std::string&>()) == options.end())
          fail(ip, str_cat("\"", preview(item), "\" is not one of the schema's options"));
      }
    }
  }
};

inline property property_of(const json& p, const std::string& ptr) {
  if (!p.is_object()) fail(ptr, expected("an object (a primitive schema)", p));
  const json* t = member(p, "type");
  if (!t) fail(ptr, "missing type");
  if (!t->is_string()) fail(at(ptr, "type"), expected("a string", *t));
  property out;
  out.type = t->get<std::string>();
  if (out.type == "string") {
    out.options = options_of(p, ptr, "enum", false);
    if (member(p, "oneOf")) {
      if (!out.options.empty()) fail(at(ptr, "oneOf"), "both enum and oneOf");
      out.options = options_of(p, ptr, "oneOf", true);
    }
    if (const json* names = member(p, "enumNames")) {  // the legacy titled enum
      if (!names->is_array() || names->size() != out.options.size() ||
          !std::all_of(names->begin(), names->end(), [](const json& n) { return n.is_string(); }))
        fail(at(ptr, "enumNames"), "expected an array of strings, one per enum member");
    }
    out.min_length = count_of(p, "minLength", ptr);
    out.max_length = count_of(p, "maxLength", ptr);
    if (const json* f = member(p, "format")) {
      if (!f->is_string()) fail(at(ptr, "format"), expected("a string", *f));
      out.format = f->get<std::string>();
      if (out.format != "email" && out.format != "uri" && out.format != "date" && out.format != "date-time")
        fail(at(ptr, "format"), str_cat("unknown format \"", preview(*f), "\" (known: email, uri, date, date-time)"));
    }
  } else if (out.type == "number" || out.type == "integer") {
    out.minimum = number_of(p, "minimum", ptr);
    out.maximum = number_of(p, "maximum", ptr);
  } else if (out.type == "array") {
    const json* items = member(p, "items");
    const std::string ip = at(ptr, "items");
    if (!items) fail(ptr, "missing items (a multi-select needs its options)");
    if (!items->is_object()) fail(ip, expected("an object", *items));
    out.options = options_of(*items, ip, "enum", false);
    if (member(*items, "anyOf")) {
      if (!out.options.empty()) fail(at(ip, "anyOf"), "both enum and anyOf");
      out.options = options_of(*items, ip, "anyOf", true);
    }
    if (out.options.empty()) fail(ip, "missing enum or anyOf (a multi-select needs its options)");
    out.min_items = count_of(p, "minItems", ptr);
    out.max_items = count_of(p, "maxItems", ptr);
  } else if (out.type != "boolean") {
    fail(at(ptr, "type"), str_cat("unsupported type \"", preview(*t),
                                  "\" (an elicitation asks for string, number, integer, boolean or array of options)"));
  }
  if (const json* d = member(p, "default")) {
    out.check(*d, at(ptr, "default"));
    out.default_value = *d;
  }
  return out;
}

// The checked properties of a requested schema, and its required names.
struct form {
  std::vector<std::pair<std::string, property>> properties;
  std::vector<std::string> required;
};

inline form form_of(const json& schema) {
  const std::string root = "/requestedSchema";
  if (!schema.is_object()) fail(root, expected("an object", schema));
  const json* t = member(schema, "type");
  if (!t || *t != "object") fail(at(root, "type"), "expected \"object\"");
  const json* props = member(schema, "properties");
  if (!props) fail(root, "missing properties");
  if (!props->is_object()) fail(at(root, "properties"), expected("an object", *props));
  if (props->size() > mcp_max_elicitation_properties)
    fail(at(root, "properties"), str_cat(std::to_string(props->size()), " properties, more than ", std::to_string(mcp_max_elicitation_properties)));
  form f;
  f.properties.reserve(props->size());
  for (const auto& [k, p] : props->items()) f.properties.emplace_back(k, property_of(p, at(at(root, "properties"), k)));
  if (const json* r = member(schema, "required")) {
    if (!r->is_array()) fail(at(root, "required"), expected("an array", *r));
    std::size_t i = 0;
    for (const auto& name : *r) {
      const std::string rp = str_cat(root, "/required/", std::to_string(i++));
      if (!name.is_string()) fail(rp, expected("a string", name));
      if (!props->contains(name.get_ref<const std::string&>()))
        fail(rp, str_cat("\"", preview(name), "\" names no property"));
      f.required.push_back(name.get<std::string>());
    }
  }
  return f;
}

// The content to send: `content` with the defaults applied, checked.
inline json content_of(const form& f, json content) {
  const std::string root = "/content";
  if (!content.is_object()) fail(root, expected("an object", content));
  for (const auto& item : content.items()) {
    const std::string& key = item.key();
    const bool known =
        std::any_of(f.properties.begin(), f.properties.end(), [&](const auto& p) { return p.first == key; });
    if (!known) fail(at(root, key), "not a property of the requested schema");
  }
  for (const auto& [k, p] : f.properties)
    if (p.default_value && !content.contains(k)) content[k] = *p.default_value;  // SEP-1034
  for (const auto& name : f.required)
    if (!content.contains(name)) fail(at(root, name), "missing (required, and the schema gives no default)");
  for (const auto& [k, p] : f.properties)
    if (const auto it = content.find(k); it != content.end()) p.check(*it, at(root, k));
  return content;
}

}  // namespace elicit

// Sampling with tools (2025-11-25): the most tools of one request.
inline constexpr std::size_t mcp_max_sampling_tools = 128;

namespace sampling {

using json = nlohmann::json;
using elicit::fail;

inline bool typed(const json& c) { return c.is_object() && c.contains("type") && c["type"].is_string(); }

// The content blocks of a message or result (an object or an array of
// them), each with a string `type`; tool_use and tool_result blocks are
// checked for the members the client reads.
inline std::vector<const json*> blocks_of(const json& content, const std::string& p) {
  std::vector<const json*> out;
  if (typed(content)) {
    out.push_back(&content);
  } else if (content.is_array() && std::all_of(content.begin(), content.end(), typed)) {
    for (const auto& c : content) out.push_back(&c);
  } else {
    fail(p, "expected an object with a string type, or an array of them");
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    const json& b = *out[i];
    const std::string at = content.is_array() ? str_cat(p, "/", std::to_string(i)) : p;
    if (b["type"] == "tool_use") {
      const auto id = b.find("id");
      if (id == b.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
        fail(at + "/id", "expected a non-empty string (the tool use's id)");
      const auto name = b.find("name");
      if (name == b.end() || !name->is_string()) fail(at + "/name", "expected a string (the tool's name)");
      const auto input = b.find("input");
      if (input == b.end() || !input->is_object()) fail(at + "/input", "expected an object (the tool's arguments)");
    } else if (b["type"] == "tool_result") {
      const auto id = b.find("toolUseId");
      if (id == b.end() || !id->is_string()) fail(at + "/toolUseId", "expected a string (the tool use it answers)");
      const auto c = b.find("content");
      if (c == b.end() || !c->is_array() || !std::all_of(c->begin(), c->end(), typed))
        fail(at + "/content", "expected an array of objects with a string type");
    }
  }
  return out;
}

inline bool is(const json* b, const char* type) { return (*b)["type"] == type; }

}  // namespace sampling

// A server's sampling/createMessage params: messages (each a role and typed
// content) and maxTokens. With `tools_declared` (options.sampling_tools) a
// request may carry `tools` and `toolChoice`, and its messages tool_use and
// tool_result blocks, which must balance (every assistant message of tool
// uses followed by a user message of exactly their results, and nothing
// else); without, any of them is refused.
inline void mcp_check_sampling_request(const nlohmann::json& params, bool tools_declared) {
  using elicit::fail;
  using sampling::is;
  if (!params.is_object()) fail("", expected("an object", params));
  const auto not_declared = [](const std::string& p) {
    fail(p, "sampling with tools is not declared by this client (options.sampling_tools)");
  };
  if (const auto tools = params.find("tools"); tools != params.end()) {
    if (!tools_declared) not_declared("/tools");
    if (!tools->is_array()) fail("/tools", expected("an array", *tools));
    if (tools->size() > mcp_max_sampling_tools)
      fail("/tools", str_cat(std::to_string(tools->size()), " tools, more than ", std::to_string(mcp_max_sampling_tools)));
    std::vector<std::string> names;
    for (std::size_t i = 0; i < tools->size(); ++i) {
      const std::string p = str_cat("/tools/", std::to_string(i));
      const auto& t = (*tools)[i];
      if (!t.is_object()) fail(p, expected("an object", t));
      const auto name = t.find("name");
      if (name == t.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
        fail(p + "/name", "expected a non-empty string");
      if (std::find(names.begin(), names.end(), name->get<std::string>()) != names.end())
        fail(p + "/name", str_cat("\"", elicit::cut(name->get<std::string>(), 60), "\" names two tools"));
      names.push_back(name->get<std::string>());
      const auto schema = t.find("inputSchema");
      if (schema == t.end() || !schema->is_object() || !schema->contains("type") || (*schema)["type"] != "object")
        fail(p + "/inputSchema", "expected an object schema ({\"type\": \"object\", ...})");
    }
  }
  if (const auto choice = params.find("toolChoice"); choice != params.end()) {
    if (!tools_declared) not_declared("/toolChoice");
    if (!choice->is_object()) fail("/toolChoice", expected("an object", *choice));
    if (const auto mode = choice->find("mode");
        mode != choice->end() && !(*mode == "auto" || *mode == "required" || *mode == "none"))
      fail("/toolChoice/mode", "expected \"auto\", \"required\" or \"none\"");
  }
  const auto m = params.find("messages");
  if (m == params.end()) fail("", "missing messages");
  if (!m->is_array() || m->empty()) fail("/messages", "expected a non-empty array");
  if (m->size() > mcp_max_sampling_messages)
    fail("/messages", str_cat(std::to_string(m->size()), " messages, more than ", std::to_string(mcp_max_sampling_messages)));
  std::vector<std::string> open_uses;  // tool uses of the last assistant message, awaiting their results
  std::string open_at;
  for (std::size_t i = 0; i < m->size(); ++i) {
    const auto& msg = (*m)[i];
    const std::string p = str_cat("/messages/", std::to_string(i));
    if (!msg.is_object()) fail(p, expected("an object", msg));
    const auto role = msg.find("role");
    if (role == msg.end() || !(*role == "user" || *role == "assistant"))
      fail(p + "/role", "expected \"user\" or \"assistant\"");
    const auto content = msg.find("content");
    if (content == msg.end()) fail(p, "missing content");
    const auto blocks = sampling::blocks_of(*content, p + "/content");
    const auto uses = std::count_if(blocks.begin(), blocks.end(), [](const auto* b) { return is(b, "tool_use"); });
    const auto results = std::count_if(blocks.begin(), blocks.end(), [](const auto* b) { return is(b, "tool_result"); });
    if ((uses || results) && !tools_declared) not_declared(p + "/content");
    if (uses && *role != "assistant") fail(p + "/role", "tool_use blocks come in assistant messages");
    if (results && *role != "user") fail(p + "/role", "tool_result blocks come in user messages");
    if (results && results != static_cast<std::ptrdiff_t>(blocks.size()))
      fail(p + "/content", "a message with tool results holds tool results only");
    if (!open_uses.empty()) {  // this message must answer them, exactly
      std::vector<std::string> answered;
      for (const auto* b : blocks)
        if (is(b, "tool_result")) answered.push_back((*b)["toolUseId"].get<std::string>());
      std::sort(answered.begin(), answered.end());
      if (answered != open_uses)
        fail(p + "/content", str_cat("expected one tool_result for each tool_use of ", open_at, " and nothing else"));
      open_uses.clear();
    } else if (results) {
      fail(p + "/content", "tool results that answer no tool use of the message before");
    }
    for (const auto* b : blocks)
      if (is(b, "tool_use")) open_uses.push_back((*b)["id"].get<std::string>());
    std::sort(open_uses.begin(), open_uses.end());
    if (std::adjacent_find(open_uses.begin(), open_uses.end()) != open_uses.end())
      fail(p + "/content", "two tool uses share an id");
    open_at = p;
  }
  if (!open_uses.empty()) fail(open_at + "/content", "the last message's tool uses have no results");
  const auto mt = params.find("maxTokens");
  if (mt == params.end()) fail("", "missing maxTokens");
  if (!mt->is_number_integer() || mt->get<std::int64_t>() <= 0)
    fail("/maxTokens", expected("a positive integer", *mt));
}

// A sampling handler's CreateMessageResult for `request` (checked): role,
// content, model; tool_use blocks only for tools the request offered, as its
// toolChoice allows (none: no tool use; required: at least one), and with
// stopReason "toolUse" at least one.
inline void mcp_check_sampling_result(const nlohmann::json& r, const nlohmann::json& request) {
  using elicit::fail;
  using sampling::is;
  if (!r.is_object()) fail("", expected("an object (CreateMessageResult)", r));
  const auto role = r.find("role");
  if (role == r.end() || !(*role == "user" || *role == "assistant")) fail("/role", "expected \"assistant\" or \"user\"");
  const auto content = r.find("content");
  if (content == r.end()) fail("", "missing content");
  const auto blocks = sampling::blocks_of(*content, "/content");
  const auto model = r.find("model");
  if (model == r.end() || !model->is_string()) fail("/model", "expected the name of the model (a string)");
  const auto tools = request.find("tools");
  const auto choice = request.find("toolChoice");
  const std::string mode = choice != request.end() ? choice->value("mode", std::string("auto")) : std::string("auto");
  std::size_t uses = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::string at = content->is_array() ? str_cat("/content/", std::to_string(i)) : std::string("/content");
    if (is(blocks[i], "tool_result")) fail(at, "a result holds no tool results (the server runs the tools)");
    if (!is(blocks[i], "tool_use")) continue;
    ++uses;
    if (*role != "assistant") fail("/role", "a result with tool uses is the assistant's");
    if (tools == request.end()) fail(at, "a tool use, but the request offered no tools");
    if (mode == "none") fail(at, "a tool use, but the request's toolChoice is \"none\"");
    const auto& name = (*blocks[i])["name"];
    if (std::none_of(tools->begin(), tools->end(), [&](const nlohmann::json& t) { return t["name"] == name; }))
      fail(at + "/name", str_cat("\"", elicit::cut(name.get<std::string>(), 60), "\" is not a tool the request offered"));
  }
  if (mode == "required" && tools != request.end() && uses == 0)
    fail("/content", "no tool use, but the request's toolChoice is \"required\"");
  if (const auto stop = r.find("stopReason"); stop != r.end() && *stop == "toolUse" && uses == 0)
    fail("/stopReason", "\"toolUse\" without a tool use in the content");
}

inline nlohmann::json mcp_roots_result(const std::vector<mcp_root>& roots) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < roots.size(); ++i) {
    if (roots[i].uri.rfind("file://", 0) != 0)
      elicit::fail(str_cat("/roots/", std::to_string(i), "/uri"), str_cat("\"", roots[i].uri.substr(0, 60), "\" is not a file:// URI"));
    nlohmann::json r = {{"uri", roots[i].uri}};
    if (!roots[i].name.empty()) r["name"] = roots[i].name;
    list.push_back(std::move(r));
  }
  return {{"roots", std::move(list)}};
}

// Progress tokens of calls in flight ("tool_effects/<n>") and their
// callbacks; shared by a client's connections, used on its strand and by
// the calls that register (any thread).
class mcp_progress_routes {
 public:
  // A token registered while it lives.
  class registration {
   public:
    registration(mcp_progress_routes& routes, mcp_call_progress f) : routes_(routes) {
      const std::lock_guard lock(routes_.m_);
      token_ = "tool_effects/" + std::to_string(++routes_.next_);
      routes_.routes_.emplace(token_, std::make_shared<mcp_call_progress>(std::move(f)));
    }
    registration(const registration&) = delete;
    registration& operator=(const registration&) = delete;
    ~registration() {
      const std::lock_guard lock(routes_.m_);
      routes_.routes_.erase(token_);
    }
    [[nodiscard]] const std::string& token() const noexcept { return token_; }

   private:
    mcp_progress_routes& routes_;
    std::string token_;
  };

  // notifications/progress: true when its token is one of ours (the call's
  // callback got it, or the call is over and it is dropped); false: not ours.
  bool route(const nlohmann::json& params) {
    const auto t = params.is_object() ? params.find("progressToken") : params.end();
    if (t == params.end() || !t->is_string() || t->get_ref<const std::string&>().rfind("tool_effects/", 0) != 0)
      return false;
    std::shared_ptr<mcp_call_progress> f;
    {
      const std::lock_guard lock(m_);
      if (const auto it = routes_.find(t->get_ref<const std::string&>()); it != routes_.end()) f = it->second;
    }
    const auto p = params.find("progress");
    if (f && p != params.end() && p->is_number()) (*f)(params);
    return true;
  }

 private:
  std::mutex m_;
  std::uint64_t next_ = 0;
  std::unordered_map<std::string, std::shared_ptr<mcp_call_progress>> routes_;
};

// The client side's state shared by a client's connections (mcp_shared::caps):
// the progress tokens of calls in flight, and how many handlers are running
// (a hung handler keeps counting after its connection died, so restarts do
// not make room for more: a shared_ptr, held by the running handlers).
// The URL elicitations the application accepted and whose completion is
// awaited (notifications/elicitation/complete), at most
// mcp_max_pending_elicitations (the oldest is forgotten first); shared by a
// client's connections, used by handlers (any thread) and the strand.
class mcp_url_elicitation_ids {
 public:
  void accepted(const std::string& id) {
    const std::lock_guard lock(m_);
    if (std::find(ids_.begin(), ids_.end(), id) != ids_.end()) return;
    if (ids_.size() >= mcp_max_pending_elicitations) ids_.erase(ids_.begin());
    ids_.push_back(id);
  }
  // Whether `id` was accepted and not completed yet; it is completed now.
  bool complete(const std::string& id) {
    const std::lock_guard lock(m_);
    const auto it = std::find(ids_.begin(), ids_.end(), id);
    if (it == ids_.end()) return false;
    ids_.erase(it);
    return true;
  }

 private:
  std::mutex m_;
  std::vector<std::string> ids_;  // oldest first
};

struct mcp_client_side {
  mcp_progress_routes progress;
  mcp_url_elicitation_ids elicitations;
  std::shared_ptr<std::atomic<std::size_t>> busy = std::make_shared<std::atomic<std::size_t>>(0);
};

// What add_mcp_server reports of one progress notification.
inline mcp_progress mcp_progress_of(const std::string& server, const std::string& tool, const std::string& key,
                                    const nlohmann::json& params) {
  mcp_progress out;
  out.server = server;
  out.tool = tool;
  out.idempotency_key = key;
  out.progress = params.value("progress", 0.0);
  if (const auto t = params.find("total"); t != params.end() && t->is_number()) out.total = t->get<double>();
  if (const auto m = params.find("message"); m != params.end() && m->is_string()) out.message = m->get<std::string>();
  out.params = params;
  return out;
}

// What a handler computes for a server's request, as a coroutine: the
// result, or throws (json_error: the handler's answer does not fit; anything
// else: it failed). Calling the function only makes the coroutine (its
// arguments copied into it); nothing runs until it is spawned.
using mcp_handler_work_fn = std::function<boost::asio::awaitable<nlohmann::json>()>;

namespace answer {

using json = nlohmann::json;

inline json action_only(mcp_elicitation_action a) {
  switch (a) {
    case mcp_elicitation_action::accept: return {{"action", "accept"}};
    case mcp_elicitation_action::decline: return {{"action", "decline"}};
    case mcp_elicitation_action::cancel: return {{"action", "cancel"}};
  }
  throw std::invalid_argument("unknown elicitation action");
}

// Each takes its handler and request by value: they live in the coroutine.
inline boost::asio::awaitable<json> form(mcp_elicitation_handler h, mcp_elicitation_request r,
                                         std::shared_ptr<const elicit::form> f) {
  mcp_elicitation_response a = co_await h(r);
  if (a.action == mcp_elicitation_action::accept)
    co_return json{{"action", "accept"}, {"content", elicit::content_of(*f, std::move(a.content))}};
  co_return action_only(a.action);
}

inline boost::asio::awaitable<json> url(mcp_url_elicitation_handler h, mcp_url_elicitation_request r,
                                        mcp_url_elicitation_ids* ids) {
  const mcp_elicitation_action a = co_await h(r);
  if (a == mcp_elicitation_action::accept && ids) ids->accepted(r.elicitation_id);
  co_return action_only(a);
}

inline boost::asio::awaitable<json> sampling(mcp_sampling_handler h, mcp_sampling_request r) {
  json result = co_await h(r);
  mcp_check_sampling_result(result, r.params);
  co_return result;
}

inline boost::asio::awaitable<json> roots(mcp_roots_provider h) { co_return mcp_roots_result(h()); }

}  // namespace answer

// Whether the application serves the server's request `method` (its handler
// is set); an elicitation's mode is checked later, with its params.
inline bool mcp_serves(const mcp_client_options& o, const std::string& method) {
  return (method == "elicitation/create" && (o.on_elicitation || o.on_url_elicitation)) ||
         (method == "sampling/createMessage" && o.on_sampling) || (method == "roots/list" && o.roots);
}

// Checks a server's request `method` with `params` (found at `base` of the
// message: pointers in the json_error it throws start there) and returns the
// work of the application's handler for it. The handler must be set. A
// URL-mode elicitation the handler accepts is recorded in `ids` (if given)
// for its completion notification.
inline mcp_handler_work_fn mcp_handler_work(const mcp_client_options& o, const std::string& server,
                                            const std::string& method, const nlohmann::json& params,
                                            const std::string& base, mcp_url_elicitation_ids* ids = nullptr) {
  try {
    if (method == "elicitation/create") {
      if (!params.is_object()) elicit::fail("", expected("an object", params));
      const auto mode = params.find("mode");
      const bool url = mode != params.end() && *mode == "url";
      if (mode != params.end() && !url && *mode != "form")
        elicit::fail("/mode", str_cat("\"", preview(*mode), "\" is not a mode of elicitation (form or url)"));
      if (url && !o.on_url_elicitation)
        elicit::fail("/mode", "\"url\" is not supported (this client declares form mode only)");
      if (!url && !o.on_elicitation)
        elicit::fail("/mode", "form mode is not supported (this client declares url mode only)");
      if (url) {
        return [h = o.on_url_elicitation, r = elicit::url_request_of(server, params, ""), ids] {
          return answer::url(h, r, ids);
        };
      }
      const auto msg = params.find("message");
      if (msg == params.end() || !msg->is_string()) elicit::fail("/message", "expected a string");
      const auto schema = params.find("requestedSchema");
      if (schema == params.end()) elicit::fail("", "missing requestedSchema");
      auto f = std::make_shared<const elicit::form>(elicit::form_of(*schema));
      return [h = o.on_elicitation, r = mcp_elicitation_request{server, msg->get<std::string>(), *schema, params}, f] {
        return answer::form(h, r, f);
      };
    }
    if (method == "sampling/createMessage") {
      mcp_check_sampling_request(params, o.sampling_tools);
      return [h = o.on_sampling, r = mcp_sampling_request{server, params}] { return answer::sampling(h, r); };
    }
    return [h = o.roots] { return answer::roots(h); };
  } catch (const json_error& e) {
    throw json_error(base + e.pointer(), e.message(), "", method);
  }
}

// Whether the client serves input requests at all (some handler is set).
inline bool mcp_serves_input(const mcp_client_options& o) {
  return static_cast<bool>(o.on_elicitation) || static_cast<bool>(o.on_url_elicitation) ||
         static_cast<bool>(o.on_sampling) || static_cast<bool>(o.roots);
}

// One handler running: the strand its coroutine runs on and the signal that
// cancels it (emitted on that strand only).
struct mcp_running_handler {
  explicit mcp_running_handler(const boost::asio::any_io_executor& ex) : strand(boost::asio::make_strand(ex)) {}
  boost::asio::strand<boost::asio::any_io_executor> strand;
  boost::asio::cancellation_signal signal;
};

// Asks a running handler to stop: an awaitable one's pending operation
// completes with operation_aborted; a synchronous one runs on (C++ cannot
// take a thread back) and its answer is dropped by the caller.
inline void mcp_cancel_handler(const std::shared_ptr<mcp_running_handler>& run) {
  if (run) boost::asio::post(run->strand, [run] { run->signal.emit(boost::asio::cancellation_type::terminal); });
}

// Runs `work` as a coroutine on a strand of the strand's inner executor (a
// synchronous handler blocks one of its threads; an awaitable one holds
// none while it waits) and posts its outcome to `strand`:
// done(exception_ptr, result). The one place a handler is started, for a
// server's request and for a modern server's input request alike.
template <class Strand, class Done>
std::shared_ptr<mcp_running_handler> mcp_start_handler(const Strand& strand, const mcp_handler_work_fn& work, Done done) {
  auto run = std::make_shared<mcp_running_handler>(strand.get_inner_executor());
  // Spawned from inside the handler's strand: co_spawn dispatches, and a
  // dispatch from the caller's thread (which runs `strand`) would run a
  // synchronous handler inline there, blocking the client's strand.
  boost::asio::post(run->strand, [run, work, strand, done = std::move(done)]() mutable {
    boost::asio::co_spawn(run->strand, work(),
                          boost::asio::bind_cancellation_slot(
                              run->signal.slot(), [strand, done = std::move(done), run](std::exception_ptr e,
                                                                                        nlohmann::json r) mutable {
                                boost::asio::post(strand, [done = std::move(done), e, r = std::move(r)]() mutable {
                                  done(e, std::move(r));
                                });
                              }));
  });
  return run;
}

// Serves a server's requests with the application's handlers, for one
// connection. `Shared` is the connection's shared settings (mcp_shared:
// `options`, `name`). Everything but the handlers runs on the strand; a
// handler runs on the strand's inner executor. At most
// options.max_handler_requests handlers run at once (past it: -32000 at
// once); each request is answered within options.handler_timeout (past it:
// -32603), whatever its handler does; a cancelled request (the server's
// notifications/cancelled) and every request of a dead connection get no answer.
template <class Shared>
class mcp_client_requests : public std::enable_shared_from_this<mcp_client_requests<Shared>> {
 public:
  using strand_type = boost::asio::strand<boost::asio::any_io_executor>;
  using sender = std::function<void(std::string line)>;

  mcp_client_requests(strand_type strand, std::shared_ptr<Shared> shared, sender send)
      : strand_(std::move(strand)), shared_(std::move(shared)), send_(std::move(send)), busy_(shared_->caps.busy) {}

  // Whether the application serves `method` (its handler is set).
  [[nodiscard]] bool serves(const std::string& method) const { return mcp_serves(shared_->options, method); }

  // Starts serving request `id` (on the strand).
  void start(const nlohmann::json& id, const std::string& method, const nlohmann::json& params) {
    auto work = prepare(id, method, params);
    if (!work) return;  // answered already
    if (busy_->load() >= std::max<std::size_t>(shared_->options.max_handler_requests, 1)) {
      reply_error(id, -32000,
                  str_cat(method, ": too many requests in flight (", std::to_string(busy_->load()),
                          " handlers are running; options.max_handler_requests)"));
      return;
    }
    std::string key = elicit::wire(id);
    if (jobs_.count(key)) {  // a second request under the id of one in flight
      reply_error(id, -32600, "Invalid Request: the id of a request in flight");
      return;
    }
    // Counted and registered now, not when the coroutine first runs: a burst
    // of requests read in one go must see each other.
    auto j = std::make_shared<job>(strand_);
    jobs_.emplace(key, j);
    busy_->fetch_add(1);
    boost::asio::co_spawn(strand_, serve(this->shared_from_this(), id, std::move(key), method, std::move(work), j),
                          boost::asio::detached);
  }

  // notifications/cancelled of one of our requests: it gets no answer.
  bool cancel(const nlohmann::json& params) {
    const auto r = params.is_object() ? params.find("requestId") : params.end();
    if (r == params.end()) return false;
    const auto it = jobs_.find(elicit::wire(*r));
    if (it == jobs_.end()) return false;
    it->second->cancelled = true;
    it->second->timer.cancel();
    return true;
  }

  // The connection died: nothing is answered any more, no wait is left.
  void abandon() {
    dead_ = true;
    for (auto& [k, j] : jobs_) {
      j->cancelled = true;
      j->timer.cancel();
    }
  }

 private:
  using json = nlohmann::json;
  // What a handler computes: the result, or throws.
  using work_fn = mcp_handler_work_fn;

  struct job {
    explicit job(const strand_type& s) : timer(s) {}
    boost::asio::steady_timer timer;
    std::optional<json> result;
    std::optional<std::pair<int, std::string>> error;
    std::shared_ptr<mcp_running_handler> running;
    bool done = false;
    bool cancelled = false;
  };

  void reply_error(const json& id, int code, const std::string& message) {
    if (dead_) return;
    json reply = {{"jsonrpc", "2.0"}, {"id", id}};
    reply["error"] = {{"code", code}, {"message", message}};
    send_(elicit::wire(reply));
  }

  // Checks the request and returns what the handler will do; on a bad
  // request answers -32602 and returns nothing.
  work_fn prepare(const json& id, const std::string& method, const json& params) {
    try {
      return mcp_handler_work(shared_->options, shared_->name, method, params, "/params", &shared_->caps.elicitations);
    } catch (const json_error& e) {
      std::string m = "Invalid params: ";
      m += elicit::cut(e.what(), 1000);
      reply_error(id, -32602, m);
      return {};
    }
  }

  static boost::asio::awaitable<void> serve(std::shared_ptr<mcp_client_requests> self, json id, std::string key,
                                            std::string method, work_fn work, std::shared_ptr<job> j) {
    j->running = mcp_start_handler(self->strand_, work, [j, busy = self->busy_](std::exception_ptr e, json r) {
      busy->fetch_sub(1);
      if (j->done) return;
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const json_error& x) {
          j->error.emplace(-32603, str_cat("Internal error: the handler's answer is invalid: ", elicit::cut(x.what(), 1000)));
        } catch (const std::exception& x) {
          j->error.emplace(-32603, str_cat("Internal error: the handler failed: ", elicit::cut(x.what(), 1000)));
        } catch (...) {
          j->error.emplace(-32603, "Internal error: the handler failed");
        }
      } else {
        j->result = std::move(r);
      }
      j->done = true;
      j->timer.cancel();
    });
    const auto timeout = self->shared_->options.handler_timeout;
    if (!j->cancelled && !self->dead_) {  // (either may have come before this coroutine first ran)
      j->timer.expires_after(timeout);
      (void)co_await j->timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    self->jobs_.erase(key);
    if (!j->done) mcp_cancel_handler(j->running);  // late, cancelled, or its connection died
    if (j->cancelled || self->dead_) co_return;
    if (!j->done) {
      j->done = true;  // a late answer is dropped
      self->reply_error(id, -32603,
                        str_cat("Internal error: ", method, ": the handler gave no answer within ", std::to_string(timeout.count()),
                                " ms (options.handler_timeout)"));
      co_return;
    }
    if (j->error) {
      self->reply_error(id, j->error->first, j->error->second);
      co_return;
    }
    json reply = {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(*j->result)}};
    std::string line = elicit::wire(reply);
    if (line.size() > self->shared_->options.max_line_bytes) {
      self->reply_error(id, -32603,
                        str_cat("Internal error: ", method, ": the handler's answer has ", std::to_string(line.size()),
                                " bytes, more than options.max_line_bytes"));
      co_return;
    }
    self->send_(std::move(line));
  }

  strand_type strand_;
  std::shared_ptr<Shared> shared_;
  sender send_;
  std::shared_ptr<std::atomic<std::size_t>> busy_;  // the client's count (mcp_client_side)
  std::unordered_map<std::string, std::shared_ptr<job>> jobs_;
  bool dead_ = false;
};

// Runs `work` on the strand's inner executor and waits for it on the strand
// (the caller runs there) at most `timeout`. Returns its result; throws
// mcp_error (protocol_error) naming `what` when it throws or is late.
template <class Strand>
boost::asio::awaitable<nlohmann::json> mcp_run_handler(Strand strand, mcp_handler_work_fn work,
                                                       std::chrono::milliseconds timeout, std::string server,
                                                       std::string what) {
  struct state {
    explicit state(const Strand& s) : timer(s) {}
    boost::asio::steady_timer timer;
    std::optional<nlohmann::json> result;
    std::string error;
    bool done = false;
  };
  auto st = std::make_shared<state>(strand);
  auto run = mcp_start_handler(strand, work, [st](std::exception_ptr e, nlohmann::json r) {
    if (st->done) return;
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        st->error = elicit::cut(x.what(), 1000);
      } catch (...) {
        st->error = "it threw something that is not a std::exception";
      }
    } else {
      st->result = std::move(r);
    }
    st->done = true;
    st->timer.cancel();
  });
  st->timer.expires_after(timeout);
  (void)co_await st->timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  if (!st->done) {
    st->done = true;
    mcp_cancel_handler(run);
    throw mcp_error(mcp_error_kind::protocol_error, server,
                    str_cat(what, ": the handler gave no answer within ", std::to_string(timeout.count()),
                            " ms (options.handler_timeout)"));
  }
  if (!st->result) throw mcp_error(mcp_error_kind::protocol_error, server, str_cat(what, ": the handler failed: ", st->error));
  co_return std::move(*st->result);
}

inline bool mcp_is_input_required(const nlohmann::json& r) {
  const auto t = r.is_object() ? r.find("resultType") : r.end();
  return t != r.end() && *t == "input_required";
}

// A request to a modern server whose InputRequiredResults (MRTR,
// basic/patterns/mrtr.mdx) the application's handlers answer: each input
// request is checked as the server's own request would be, served by its
// handler, and the request is sent again with `inputResponses` and the
// `requestState` echoed, at most mcp_max_input_rounds times. A request for
// what the client does not declare, a bad one, or a handler that fails ends
// the request with mcp_error (protocol_error) naming the JSON pointer.
template <class Connection, class Strand>
boost::asio::awaitable<nlohmann::json> mcp_request_with_input(std::shared_ptr<Connection> c, Strand strand,
                                                              const mcp_client_options& o, std::string server,
                                                              std::string method, nlohmann::json params,
                                                              std::chrono::milliseconds timeout) {
  using json = nlohmann::json;
  const auto refuse = [&](const std::string& pointer, const std::string& message) {
    return mcp_error(mcp_error_kind::protocol_error, server, str_cat(method, " at ", pointer, ": ", message));
  };
  for (std::size_t round = 1;; ++round) {
    json r = co_await Connection::request(c, method, params, timeout);
    if (!mcp_is_input_required(r)) co_return r;
    if (method != "tools/call" && method != "prompts/get" && method != "resources/read")
      throw refuse("/result/resultType", "\"input_required\" is not allowed here (only on tools/call, prompts/get "
                                         "and resources/read)");
    if (round >= mcp_max_input_rounds)
      throw refuse("/result", str_cat("the server asked for input ", std::to_string(round),
                                      " times in a row (the most this client answers for one request)"));
    if (!params.is_object()) params = json::object();
    params.erase("inputResponses");
    params.erase("requestState");
    if (const auto ir = r.find("inputRequests"); ir != r.end()) {
      if (!ir->is_object()) throw refuse("/result/inputRequests", expected("an object", *ir));
      if (ir->size() > mcp_max_input_requests)
        throw refuse("/result/inputRequests", str_cat(std::to_string(ir->size()), " input requests, more than ",
                                                      std::to_string(mcp_max_input_requests)));
      json responses = json::object();
      for (const auto& [k, req] : ir->items()) {
        const std::string at = str_cat("/result/inputRequests/", pointer_token(k));
        const auto m = req.is_object() ? req.find("method") : req.end();
        if (m == req.end() || !m->is_string()) throw refuse(at + "/method", "expected a string");
        const std::string name = m->template get<std::string>();
        if (!mcp_serves(o, name))
          throw refuse(at + "/method", str_cat("\"", elicit::cut(name, 60), "\" is not a capability this client declares"));
        static const json no_params = json::object();
        const auto p = req.find("params");
        mcp_handler_work_fn work;
        try {
          work = mcp_handler_work(o, server, name, p == req.end() ? no_params : *p, at + "/params");
        } catch (const json_error& e) {
          throw mcp_error(mcp_error_kind::protocol_error, server, str_cat(method, ": ", e.what()));
        }
        responses[k] = co_await mcp_run_handler(strand, std::move(work), o.handler_timeout, server,
                                                str_cat(method, ": input request \"", elicit::cut(k, 60), "\" (", name, ")"));
      }
      params["inputResponses"] = std::move(responses);
    }
    if (const auto rs = r.find("requestState"); rs != r.end()) {
      if (!rs->is_string()) throw refuse("/result/requestState", expected("a string", *rs));
      params["requestState"] = *rs;
    }
  }
}

}  // namespace detail

inline nlohmann::json mcp_elicitation_content(const nlohmann::json& requested_schema, nlohmann::json content) {
  return detail::elicit::content_of(detail::elicit::form_of(requested_schema), std::move(content));
}

inline std::vector<mcp_url_elicitation_request> mcp_url_elicitations(const mcp_rpc_error& e) {
  namespace el = detail::elicit;
  std::vector<mcp_url_elicitation_request> out;
  if (e.code() != mcp_url_elicitation_required_code) return out;
  const nlohmann::json& data = e.data();
  const std::string base = "/error/data";
  if (!data.is_object()) el::fail(base, detail::expected("an object", data));
  const nlohmann::json* list = el::member(data, "elicitations");
  if (!list || !list->is_array())
    el::fail(base + "/elicitations", list ? detail::expected("an array", *list) : std::string("missing"));
  if (list->empty()) el::fail(base + "/elicitations", "empty (a URLElicitationRequiredError lists what to do)");
  if (list->size() > detail::mcp_max_required_elicitations)
    el::fail(base + "/elicitations", detail::str_cat(std::to_string(list->size()), " elicitations, more than ",
                                                     std::to_string(detail::mcp_max_required_elicitations)));
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string at = detail::str_cat(base, "/elicitations/", std::to_string(i));
    const nlohmann::json& one = (*list)[i];
    const nlohmann::json* mode = one.is_object() ? el::member(one, "mode") : nullptr;
    if (!mode || *mode != "url")
      el::fail(at + "/mode", "a URLElicitationRequiredError lists URL-mode elicitations only (mode \"url\")");
    out.push_back(el::url_request_of(e.server(), one, at));
  }
  return out;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_DETAIL_CLIENT_REQUESTS_HPP
