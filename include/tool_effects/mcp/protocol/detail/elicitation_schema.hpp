// tool_effects/mcp/protocol/detail/elicitation_schema.hpp — internal to <tool_effects/mcp/client.hpp>: the
// JSON Schema subset of an elicitation's requestedSchema (MCP's flat object of primitive properties): the
// schema checked once, a content checked against it with the SEP-1034 defaults applied, and the checks
// of a URL-mode elicitation. Every refusal is a json_error naming the JSON pointer. See docs/mcp.md
// ("Client capabilities").
#ifndef TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_ELICITATION_SCHEMA_HPP
#define TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_ELICITATION_SCHEMA_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/detail/dump.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/mcp/capabilities.hpp>
#include <tool_effects/net/url.hpp>

namespace tool_effects::detail {

// Bounds of what a server may ask (a schema is also within the line limit and
// the depth limit of the bounded parse).
inline constexpr std::size_t mcp_max_elicitation_properties = 256;
inline constexpr std::size_t mcp_max_enum_values = 1024;

// URL-mode elicitation (2025-11-25): the longest URL and id taken, the most
// elicitations of one URLElicitationRequiredError, and the most accepted ids
// awaiting their completion notification (past it the oldest is forgotten).
inline constexpr std::size_t mcp_max_elicitation_url_bytes = 8192;
inline constexpr std::size_t mcp_max_elicitation_id_bytes = 256;
inline constexpr std::size_t mcp_max_required_elicitations = 16;
inline constexpr std::size_t mcp_max_pending_elicitations = 1024;

namespace elicit {

using json = nlohmann::json;

// Compact JSON for the wire (invalid UTF-8 replaced), and a bounded quote.
inline std::string wire(const json& j) { return json_dump(j); }
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
  // Read with the library's one URL type (net/url.hpp); each of its reasons becomes what the user is told.
  net::url parsed;
  try {
    parsed = net::parse_http_url(u);
  } catch (const net::url_error& e) {
    const std::string_view r = e.reason();
    if (r == "user_information")
      fail(ptr, "the URL carries user information before its host (it would show the user a host it does not go to)");
    if (r == "bad_port") fail(ptr, "the URL's port is not a number");
    if (r == "no_host") fail(ptr, "the URL has no host");
    if (r == "bad_host") fail(ptr, str_cat("the URL's host is not a host name or an IPv6 address: ", e.why()));
    fail(ptr, str_cat("\"", cut(u, 80), "\" is not an absolute http or https URL"));
  }
  const std::string& host = *parsed.host;
  return host.find(':') != std::string::npos ? str_cat("[", host, "]") : host;
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

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_PROTOCOL_DETAIL_ELICITATION_SCHEMA_HPP
