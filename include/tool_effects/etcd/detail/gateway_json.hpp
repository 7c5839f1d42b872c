// tool_effects/etcd/detail/gateway_json.hpp — internal to <tool_effects/etcd/async_client.hpp> (over the
// value types of etcd/types.hpp): the JSON of etcd's v3 gateway. Base64 keys and values, int64
// fields sent as strings, fields omitted at their default, the bodies of requests and the parse of
// answers and watch messages, endpoints, and a gateway error as an `etcd::error` with a stable reason.
#ifndef TOOL_EFFECTS_ETCD_DETAIL_GATEWAY_JSON_HPP
#define TOOL_EFFECTS_ETCD_DETAIL_GATEWAY_JSON_HPP

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/etcd/error.hpp>
#include <tool_effects/etcd/types.hpp>
#include <tool_effects/json/bounded_parse.hpp>
#include <tool_effects/net/url.hpp>

namespace tool_effects::etcd {


namespace detail {

using ::tool_effects::detail::str_cat;

inline std::string base64_encode(std::string_view in) {
  static constexpr char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const auto n = (std::uint32_t(std::uint8_t(in[i])) << 16) | (std::uint32_t(std::uint8_t(in[i + 1])) << 8) |
                   std::uint8_t(in[i + 2]);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += table[n & 63];
  }
  if (i + 1 == in.size()) {
    const auto n = std::uint32_t(std::uint8_t(in[i])) << 16;
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const auto n = (std::uint32_t(std::uint8_t(in[i])) << 16) | (std::uint32_t(std::uint8_t(in[i + 1])) << 8);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

// Strict: only the standard alphabet, padded to a multiple of 4; nullopt otherwise.
inline std::optional<std::string> base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = in[i + std::size_t(j)];
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        v[j] = 0;
        ++pad;
      } else if (pad > 0 || (v[j] = value(c)) < 0) {
        return std::nullopt;
      }
    }
    const auto n = (std::uint32_t(v[0]) << 18) | (std::uint32_t(v[1]) << 12) | (std::uint32_t(v[2]) << 6) |
                   std::uint32_t(v[3]);
    out += char((n >> 16) & 0xFF);
    if (pad < 2) out += char((n >> 8) & 0xFF);
    if (pad < 1) out += char(n & 0xFF);
  }
  return out;
}

// Reading fields of a gateway response: absent = the default; present = must have the right type.
inline const nlohmann::json* field(const nlohmann::json& j, const char* name) {
  if (!j.is_object()) throw error(errc::bad_response, "expected an object");
  const auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

inline std::int64_t int64_field(const nlohmann::json& j, const char* name) {
  const auto* f = field(j, name);
  if (!f) return 0;
  if (f->is_number_integer()) return f->get<std::int64_t>();
  if (!f->is_string()) throw error(errc::bad_response, detail::str_cat("field ", name, " is not an int64"));
  const auto& s = f->get_ref<const std::string&>();
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty()) throw error(errc::bad_response, detail::str_cat("field ", name, " is not an int64"));
  return v;
}

inline bool bool_field(const nlohmann::json& j, const char* name) {
  const auto* f = field(j, name);
  if (!f) return false;
  if (!f->is_boolean()) throw error(errc::bad_response, detail::str_cat("field ", name, " is not a boolean"));
  return f->get<bool>();
}

inline std::string bytes_field(const nlohmann::json& j, const char* name) {
  const auto* f = field(j, name);
  if (!f) return {};
  if (!f->is_string()) throw error(errc::bad_response, detail::str_cat("field ", name, " is not base64"));
  auto decoded = base64_decode(f->get_ref<const std::string&>());
  if (!decoded) throw error(errc::bad_response, detail::str_cat("field ", name, " is not base64"));
  return std::move(*decoded);
}

inline const nlohmann::json& array_field(const nlohmann::json& j, const char* name) {
  static const nlohmann::json empty = nlohmann::json::array();
  const auto* f = field(j, name);
  if (!f) return empty;
  if (!f->is_array()) throw error(errc::bad_response, detail::str_cat("field ", name, " is not an array"));
  return *f;
}

inline std::int64_t header_revision(const nlohmann::json& j) {
  const auto* h = field(j, "header");
  return h ? int64_field(*h, "revision") : 0;
}

inline key_value parse_kv(const nlohmann::json& j) {
  return {bytes_field(j, "key"),          bytes_field(j, "value"),   int64_field(j, "create_revision"),
          int64_field(j, "mod_revision"), int64_field(j, "version"), int64_field(j, "lease")};
}

inline range_result parse_range(const nlohmann::json& j) {
  range_result r;
  r.revision = header_revision(j);
  for (const auto& kv : array_field(j, "kvs")) r.kvs.push_back(parse_kv(kv));
  r.count = int64_field(j, "count");
  r.more = bool_field(j, "more");
  return r;
}

inline nlohmann::json range_json(const range_request& r) {
  nlohmann::json j{{"key", base64_encode(r.key)}};
  if (!r.range_end.empty()) j["range_end"] = base64_encode(r.range_end);
  if (r.limit) j["limit"] = std::to_string(r.limit);
  if (r.revision) j["revision"] = std::to_string(r.revision);
  if (r.max_create_revision) j["max_create_revision"] = std::to_string(r.max_create_revision);
  if (r.order != range_request::sort::none) {
    j["sort_target"] = "CREATE";
    j["sort_order"] = r.order == range_request::sort::create_ascending ? "ASCEND" : "DESCEND";
  }
  if (r.keys_only) j["keys_only"] = true;
  if (r.count_only) j["count_only"] = true;
  return j;
}

inline nlohmann::json op_json(const txn_op& op) {
  switch (op.op) {
    case txn_op::kind::put: {
      nlohmann::json p{{"key", base64_encode(op.key)}, {"value", base64_encode(op.value)}};
      if (op.lease) p["lease"] = std::to_string(op.lease);
      return {{"request_put", p}};
    }
    case txn_op::kind::range: {
      auto r = op.range;
      r.key = op.key;
      return {{"request_range", range_json(r)}};
    }
    case txn_op::kind::delete_range: {
      nlohmann::json d{{"key", base64_encode(op.key)}};
      if (!op.range.range_end.empty()) d["range_end"] = base64_encode(op.range.range_end);
      return {{"request_delete_range", d}};
    }
  }
  return {};
}

inline nlohmann::json compare_json(const txn_compare& c) {
  static constexpr const char* relations[] = {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"};
  nlohmann::json j{{"key", base64_encode(c.key)}, {"result", relations[int(c.rel)]}};
  switch (c.what) {
    case txn_compare::target::create_revision:
      j["target"] = "CREATE";
      j["create_revision"] = std::to_string(c.number);
      break;
    case txn_compare::target::mod_revision:
      j["target"] = "MOD";
      j["mod_revision"] = std::to_string(c.number);
      break;
    case txn_compare::target::version:
      j["target"] = "VERSION";
      j["version"] = std::to_string(c.number);
      break;
    case txn_compare::target::value:
      j["target"] = "VALUE";
      j["value"] = base64_encode(c.value);
      break;
  }
  return j;
}

inline watch_response parse_watch(const nlohmann::json& line) {
  const auto* result = field(line, "result");
  if (!result) {
    if (const auto* e = field(line, "error")) {
      const auto code = e->is_object() ? int(int64_field(*e, "grpc_code")) : 0;
      throw error(errc::server_error, e->dump().substr(0, 200), code);
    }
    throw error(errc::bad_response, "a watch message without result");
  }
  watch_response w;
  w.revision = header_revision(*result);
  w.created = bool_field(*result, "created");
  w.canceled = bool_field(*result, "canceled");
  w.compact_revision = int64_field(*result, "compact_revision");
  for (const auto& e : array_field(*result, "events")) {
    const auto* type = field(e, "type");
    if (type && !type->is_string()) throw error(errc::bad_response, "event type is not a string");
    const auto* kv = field(e, "kv");
    w.events.push_back({type && type->get_ref<const std::string&>() == "DELETE", kv ? parse_kv(*kv) : key_value{}});
  }
  return w;
}

// A transaction's answer: which branch ran, the revision, one answer per operation of that branch.
inline txn_result parse_txn(const nlohmann::json& res, const std::vector<txn_op>& success,
                            const std::vector<txn_op>& failure) {
  txn_result out;
  out.succeeded = bool_field(res, "succeeded");
  out.revision = header_revision(res);
  const auto& ops = out.succeeded ? success : failure;
  const auto& responses = array_field(res, "responses");
  if (responses.size() != ops.size()) throw error(errc::bad_response, "txn: one response per operation expected");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    txn_op_result r;
    r.op = ops[i].op;
    const auto& one = responses[i];
    if (r.op == txn_op::kind::range) {
      const auto* rr = field(one, "response_range");
      if (rr) r.range = parse_range(*rr);
      r.range.revision = out.revision;
    } else if (r.op == txn_op::kind::delete_range) {
      const auto* d = field(one, "response_delete_range");
      r.deleted = d ? int64_field(*d, "deleted") : 0;
    }
    out.responses.push_back(std::move(r));
  }
  return out;
}

// A member's status answer.
inline member_status parse_status(const nlohmann::json& res) {
  const auto id = [](const nlohmann::json* j, const char* name) -> std::string {
    const auto* f = j ? field(*j, name) : nullptr;
    if (f && f->is_string()) return f->get<std::string>();
    if (f && f->is_number_unsigned()) return std::to_string(f->get<std::uint64_t>());
    throw error(errc::bad_response, str_cat("status: no ", name));
  };
  return {id(field(res, "header"), "member_id"), id(&res, "leader")};
}

// The key just after every key with this prefix ("" when there is none: the prefix is all 0xFF).
inline std::string prefix_end(std::string prefix) {
  while (!prefix.empty()) {
    if (std::uint8_t(prefix.back()) < 0xFF) {
      prefix.back() = char(std::uint8_t(prefix.back()) + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

// An endpoint: "http://host:port", "https://host:port" (a build with TOOL_EFFECTS_ETCD_TLS) or a bare
// "host:port" (http), as the one URL type of the network layer; anything else is bad_option.
inline net::url parse_endpoint(std::string_view e) {
  std::string text(e);
  if (text.find("://") == std::string::npos) text = str_cat("http://", text);
  net::url u;
  try {
    u = net::parse_http_url(text);
  } catch (const net::url_error& x) {
    throw error(errc::bad_option, str_cat("endpoint is not host:port: ", x.what()));
  }
  if (u.port.empty() || u.path.find_first_not_of('/') != std::string::npos || u.query || u.fragment)
    throw error(errc::bad_option, str_cat("endpoint is not host:port: ", net::detail::url_printable(text)));
  if (u.is_https() && !TOOL_EFFECTS_ETCD_HAS_TLS)
    throw error(errc::bad_option, str_cat("TLS endpoints need a build with TOOL_EFFECTS_ETCD_TLS: ", u.authority()));
  u.path.clear();
  return u;
}

// The bounds of what the gateway sends that goes into a request or an error (docs/coordination.md, "Bounds
// against a hostile gateway"): an auth token, and the part of a gateway's message an error quotes.
inline constexpr std::size_t max_token_bytes = 4096;
inline constexpr std::size_t max_quoted_message_bytes = 300;

// The gateway's auth token, checked before it goes into Authorization: 1 to 4096 visible ASCII characters (no
// CR LF that would make a header line of its own, nothing Beast cannot hold); else bad_response (not
// std::length_error, which the failover loop would let escape), quoting only the token's size.
inline std::string checked_token(std::string token) {
  const bool ok = !token.empty() && token.size() <= max_token_bytes &&
                  std::all_of(token.begin(), token.end(), [](char c) { return c >= 0x21 && c <= 0x7E; });
  if (!ok)
    throw error(errc::bad_response, detail::str_cat("the authenticate answer's token (", std::to_string(token.size()),
                                                " bytes) is not 1 to 4096 visible ASCII characters"));
  return token;
}

// A gateway's text as an error quotes it: detail::quote_text (at most 300 bytes, cut at a character boundary
// with "..." when cut, invalid UTF-8 as U+FFFD, a control character such as CR or LF written as \xNN).
inline std::string quoted_message(std::string_view m) {
  return tool_effects::detail::quote_text(m, max_quoted_message_bytes);
}

// A gateway error body ({"error", "message", "code"}) as an `error` with a stable reason; the reason is read
// from the whole message, the error quotes at most 300 bytes of it.
[[noreturn]] inline void throw_gateway_error(unsigned status, const std::string& body) {
  int code = 0;
  std::string message = body;
  try {
    const auto j = tool_effects::detail::parse_json(body, "etcd error");
    code = int(int64_field(j, "code"));
    if (const auto* m = field(j, "message"); m && m->is_string()) message = m->get<std::string>();
  } catch (const std::exception&) {
  }
  errc reason = errc::server_error;
  if (message.find("lease not found") != std::string::npos) reason = errc::lease_not_found;
  else if (message.find("compacted") != std::string::npos) reason = errc::compacted;
  else if (code == 16 || code == 7 || message.find("authentication failed") != std::string::npos ||
           message.find("user name is empty") != std::string::npos ||
           message.find("invalid auth token") != std::string::npos)
    reason = errc::auth_failed;
  else if (code == 14 || status == 503) reason = errc::unavailable;
  throw error(reason, detail::str_cat("HTTP ", std::to_string(status), ": ", quoted_message(message)), code);
}

}  // namespace detail

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_DETAIL_GATEWAY_JSON_HPP
