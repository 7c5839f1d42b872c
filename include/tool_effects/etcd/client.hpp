// tool_effects/etcd/client.hpp — a client of etcd's v3 JSON gateway (etcd 3.4: /v3/kv/*, /v3/lease/*,
// /v3/watch, /v3/auth/authenticate) over Boost.Beast HTTP/1.1, for the etcd coordinator of issue 18.
// Part of the JSON component (nlohmann::json). Include <tool_effects/etcd.hpp>.
//
// Keys and values are bytes (base64 on the wire); int64 fields are JSON strings on the wire, and the gateway
// omits fields that have their default value (0, false, empty), so a missing field reads as its default.
// Every response is parsed with detail::parse_json (depth- and duplicate-key-checked) and bounded in size.
// Requests time out (client_options::request_timeout); a transport failure moves on to the next endpoint.
#ifndef TOOL_EFFECTS_ETCD_CLIENT_HPP
#define TOOL_EFFECTS_ETCD_CLIENT_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#endif

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>

namespace tool_effects::etcd {

/// A failed etcd request. `reason()` is a stable string: "unavailable" (no endpoint answered), "timeout",
/// "bad_response" (not what the gateway sends), "lease_not_found", "compacted", "auth_failed", "bad_option",
/// or "server_error" (any other gRPC error; `code()` is its gRPC status code, 0 when there is none).
class error : public std::runtime_error {
 public:
  error(std::string reason, const std::string& message, int code = 0)
      : std::runtime_error(detail::str_cat("etcd: ", reason, ": ", message)), reason_(std::move(reason)),
        code_(code) {}
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  std::string reason_;
  int code_;
};

/// How the client reaches etcd. Endpoints are "http://host:port" (a bare "host:port" is read as http).
struct client_options {
  std::vector<std::string> endpoints;                     ///< tried in turn; a failing one moves to the next
  std::chrono::milliseconds request_timeout{3000};        ///< per request (connect, write, read) and endpoint
  std::string user;                                       ///< etcd user (auth enabled); empty: no auth
  std::string password;                                   ///< its password
  std::size_t max_response_bytes = std::size_t{8} << 20; ///< a longer response (or stream line) is bad_response
  /// TLS, for "https://" endpoints: needs a build with TOOL_EFFECTS_ETCD_TLS=1 and OpenSSL (else https
  /// endpoints are bad_option). The server is verified against `ca_file` (PEM; empty: the system's CAs);
  /// `cert_file` / `key_file` (PEM) are the client certificate for etcd's --client-cert-auth.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

/// One key-value pair as etcd stores it.
struct key_value {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;
};

/// A range read: the keys found, how many matched (before `limit`), the store's revision.
struct range_result {
  std::int64_t revision = 0;
  std::vector<key_value> kvs;
  std::int64_t count = 0;
  bool more = false;
};

/// A range request: `key` alone, or [key, range_end) ("\0" as range_end: every key >= key).
struct range_request {
  range_request() = default;
  range_request(std::string k, std::string end = {}, std::int64_t lim = 0)  // NOLINT: a key converts
      : key(std::move(k)), range_end(std::move(end)), limit(lim) {}
  std::string key;
  std::string range_end;
  std::int64_t limit = 0;          ///< 0: no limit
  std::int64_t revision = 0;       ///< 0: the newest
  std::int64_t max_create_revision = 0;  ///< 0: no bound; else only keys created at or before it
  enum class sort { none, create_ascending, create_descending } order = sort::none;
  bool keys_only = false;
  bool count_only = false;
};

/// One operation of a transaction.
struct txn_op {
  enum class kind { put, range, delete_range } op = kind::range;
  std::string key;
  std::string value;      ///< put
  std::int64_t lease = 0; ///< put
  range_request range;    ///< range (its key is used); delete_range uses range.range_end
  static txn_op put(std::string k, std::string v, std::int64_t lease_id = 0) {
    return {kind::put, std::move(k), std::move(v), lease_id, {}};
  }
  static txn_op get(range_request r) {
    auto k = r.key;
    return {kind::range, std::move(k), {}, 0, std::move(r)};
  }
  static txn_op del(std::string k, std::string range_end = {}) {
    range_request r;
    r.range_end = std::move(range_end);
    return {kind::delete_range, std::move(k), {}, 0, std::move(r)};
  }
};

/// One comparison of a transaction's guard.
struct txn_compare {
  enum class target { create_revision, mod_revision, version, value } what = target::create_revision;
  enum class relation { equal, greater, less, not_equal } rel = relation::equal;
  std::string key;
  std::int64_t number = 0;  ///< revisions and versions
  std::string value;        ///< target::value
};

/// One operation's answer: a range's keys, or how many keys a delete removed.
struct txn_op_result {
  txn_op::kind op = txn_op::kind::range;
  range_result range;
  std::int64_t deleted = 0;
};

/// A transaction's answer: which branch ran, the store's revision after it, each operation's answer.
struct txn_result {
  bool succeeded = false;
  std::int64_t revision = 0;
  std::vector<txn_op_result> responses;
};

/// A lease: its id and TTL in seconds (as granted, or remaining after a keepalive).
struct lease {
  std::int64_t id = 0;
  std::int64_t ttl = 0;
};

/// One watch message: events since the last one, or the end of the watch (canceled, with the compacted
/// revision when the start revision had been compacted).
struct watch_event {
  bool is_delete = false;
  key_value kv;
};
struct watch_response {
  std::int64_t revision = 0;
  bool created = false;
  bool canceled = false;
  std::int64_t compact_revision = 0;
  std::vector<watch_event> events;
};

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
  if (!j.is_object()) throw error("bad_response", "expected an object");
  const auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

inline std::int64_t int64_field(const nlohmann::json& j, const char* name) {
  const auto* f = field(j, name);
  if (!f) return 0;
  if (f->is_number_integer()) return f->get<std::int64_t>();
  if (!f->is_string()) throw error("bad_response", detail::str_cat("field ", name, " is not an int64"));
  const auto& s = f->get_ref<const std::string&>();
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty()) throw error("bad_response", detail::str_cat("field ", name, " is not an int64"));
  return v;
}

inline bool bool_field(const nlohmann::json& j, const char* name) {
  const auto* f = field(j, name);
  if (!f) return false;
  if (!f->is_boolean()) throw error("bad_response", detail::str_cat("field ", name, " is not a boolean"));
  return f->get<bool>();
}

inline std::string bytes_field(const nlohmann::json& j, const char* name) {
  const auto* f = field(j, name);
  if (!f) return {};
  if (!f->is_string()) throw error("bad_response", detail::str_cat("field ", name, " is not base64"));
  auto decoded = base64_decode(f->get_ref<const std::string&>());
  if (!decoded) throw error("bad_response", detail::str_cat("field ", name, " is not base64"));
  return std::move(*decoded);
}

inline const nlohmann::json& array_field(const nlohmann::json& j, const char* name) {
  static const nlohmann::json empty = nlohmann::json::array();
  const auto* f = field(j, name);
  if (!f) return empty;
  if (!f->is_array()) throw error("bad_response", detail::str_cat("field ", name, " is not an array"));
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
      throw error("server_error", e->dump().substr(0, 200), code);
    }
    throw error("bad_response", "a watch message without result");
  }
  watch_response w;
  w.revision = header_revision(*result);
  w.created = bool_field(*result, "created");
  w.canceled = bool_field(*result, "canceled");
  w.compact_revision = int64_field(*result, "compact_revision");
  for (const auto& e : array_field(*result, "events")) {
    const auto* type = field(e, "type");
    if (type && !type->is_string()) throw error("bad_response", "event type is not a string");
    const auto* kv = field(e, "kv");
    w.events.push_back({type && type->get_ref<const std::string&>() == "DELETE", kv ? parse_kv(*kv) : key_value{}});
  }
  return w;
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

struct url {
  std::string host;
  std::string port;
  bool tls = false;
};

inline url parse_endpoint(std::string_view e) {
  bool tls = false;
  if (e.rfind("https://", 0) == 0) {
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    tls = true;
    e.remove_prefix(8);
#else
    throw error("bad_option", detail::str_cat("TLS endpoints need a build with TOOL_EFFECTS_ETCD_TLS: ", e));
#endif
  }
  if (e.rfind("http://", 0) == 0) e.remove_prefix(7);
  while (!e.empty() && e.back() == '/') e.remove_suffix(1);
  const auto colon = e.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == e.size())
    throw error("bad_option", detail::str_cat("endpoint is not host:port: ", e));
  return {std::string(e.substr(0, colon)), std::string(e.substr(colon + 1)), tls};
}

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace asio = boost::asio;

// One HTTP/1.1 connection to one endpoint with per-operation deadlines, driven synchronously on a private
// io_context (so a hung server costs at most the timeout).
class connection {
 public:
  connection(url u, std::chrono::milliseconds timeout, std::size_t max_bytes, const client_options* tls = nullptr)
      : url_(std::move(u)), timeout_(timeout), max_bytes_(max_bytes), stream_(ioc_) {
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    if (url_.tls) {
      ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
      ssl_->set_verify_mode(asio::ssl::verify_peer);
      boost::system::error_code ec;
      if (tls && !tls->ca_file.empty()) ssl_->load_verify_file(tls->ca_file, ec);
      else ssl_->set_default_verify_paths(ec);
      if (!ec && tls && !tls->cert_file.empty()) ssl_->use_certificate_chain_file(tls->cert_file, ec);
      if (!ec && tls && !tls->key_file.empty()) ssl_->use_private_key_file(tls->key_file, asio::ssl::context::pem, ec);
      if (ec) throw error("bad_option", detail::str_cat("TLS files: ", ec.message()));
    }
#else
    (void)tls;
#endif
  }

  [[nodiscard]] const url& where() const noexcept { return url_; }

  // Runs `op` on the stream requests go through: the TLS stream for https, else the TCP stream.
  template <class Op>
  decltype(auto) on_stream(Op&& op) {
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    if (tls_) return op(*tls_);
#endif
    return op(stream_);
  }

  // POSTs `body` to `target`; returns the status and the whole body.
  std::pair<unsigned, std::string> post(const std::string& target, const std::string& body,
                                        const std::string& token) {
    ensure_connected();
    send(target, body, token, true);
    http::response_parser<http::string_body> parser;
    parser.body_limit(max_bytes_);
    parser.header_limit(64 * 1024);
    stream_.expires_after(timeout_);
    beast::error_code ec = run_op([&](auto done) {
      on_stream([&](auto& s) { http::async_read(s, buffer_, parser, done); });
    });
    if (ec) fail(ec, "reading the response");
    auto& res = parser.get();
    if (!res.keep_alive()) close();
    return {res.result_int(), std::move(res.body())};
  }

  // POSTs `body` to a streaming `target` and returns after the response header; then next_line() reads
  // the newline-separated messages. The connection is then used only for this stream.
  unsigned open_stream(const std::string& target, const std::string& body, const std::string& token) {
    ensure_connected();
    send(target, body, token, false);
    stream_parser_ = std::make_unique<http::response_parser<http::string_body>>();
    stream_parser_->body_limit(boost::none);
    stream_.expires_after(timeout_);
    beast::error_code ec =
        run_op([&](auto done) {
          on_stream([&](auto& s) { http::async_read_header(s, buffer_, *stream_parser_, done); });
        });
    if (ec) fail(ec, "reading the stream's header");
    return stream_parser_->get().result_int();
  }

  // The next complete line of the stream, waiting at most `wait`; nullopt when none came in time (the read
  // stays pending and the stream usable: the next call goes on waiting). Throws when the stream ended or
  // failed.
  std::optional<std::string> next_line(std::chrono::milliseconds wait) {
    auto& body = stream_parser_->get().body();
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      if (auto nl = body.find('\n'); nl != std::string::npos) {
        std::string line = body.substr(0, nl);
        body.erase(0, nl + 1);
        if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
        return line;
      }
      if (body.size() > max_bytes_) throw error("bad_response", "a stream message longer than the limit");
      if (stream_parser_->is_done()) throw error("unavailable", "the stream ended");
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return std::nullopt;
      if (!read_pending_) {
        read_pending_ = true;
        stream_.expires_never();
        on_stream([&](auto& s) {
          http::async_read_some(s, buffer_, *stream_parser_, [this](beast::error_code ec, std::size_t) {
            read_result_ = ec;
            read_pending_ = false;
          });
        });
      }
      ioc_.restart();
      ioc_.run_for(deadline - now);
      if (read_pending_) return std::nullopt;
      if (read_result_ && read_result_ != http::error::need_buffer) fail(read_result_, "reading the stream");
    }
  }

  void close() noexcept {
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    tls_.reset();
#endif
    beast::error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    connected_ = false;
  }

 private:
  template <class Start>
  beast::error_code run_op(Start&& start) {
    beast::error_code result = asio::error::would_block;
    start([&result](beast::error_code ec, std::size_t = 0) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  void ensure_connected() {
    if (connected_) return;
    asio::ip::tcp::resolver resolver(ioc_);
    beast::error_code ec;
    const auto results = resolver.resolve(url_.host, url_.port, ec);
    if (ec) fail(ec, "resolving");
    stream_.expires_after(timeout_);
    ec = run_op([&](auto done) {
      stream_.async_connect(results, [done](beast::error_code e, const asio::ip::tcp::endpoint&) mutable { done(e); });
    });
    if (ec) fail(ec, "connecting");
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
    if (ssl_) {
      tls_ = std::make_unique<beast::ssl_stream<beast::tcp_stream&>>(stream_, *ssl_);
      if (!SSL_set_tlsext_host_name(tls_->native_handle(), url_.host.c_str())) {
        close();
        throw error("unavailable", "TLS: cannot set the server name");
      }
      tls_->set_verify_callback(asio::ssl::host_name_verification(url_.host));
      stream_.expires_after(timeout_);
      ec = run_op([&](auto done) { tls_->async_handshake(asio::ssl::stream_base::client, done); });
      if (ec) fail(ec, "TLS handshake");
    }
#endif
    connected_ = true;
  }

  void send(const std::string& target, const std::string& body, const std::string& token, bool keep_alive) {
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, url_.host + ":" + url_.port);
    req.set(http::field::content_type, "application/json");
    if (!token.empty()) req.set(http::field::authorization, token);
    req.keep_alive(keep_alive);
    req.body() = body;
    req.prepare_payload();
    stream_.expires_after(timeout_);
    beast::error_code ec = run_op([&](auto done) { on_stream([&](auto& s) { http::async_write(s, req, done); }); });
    if (ec) fail(ec, "sending the request");
  }

  [[noreturn]] void fail(beast::error_code ec, const char* what) {
    close();
    throw error(ec == beast::error::timeout ? "timeout" : "unavailable",
                detail::str_cat(url_.host, ":", url_.port, ": ", what, ": ", ec.message()));
  }

  url url_;
  std::chrono::milliseconds timeout_;
  std::size_t max_bytes_;
  asio::io_context ioc_;
  beast::tcp_stream stream_;
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
  std::unique_ptr<asio::ssl::context> ssl_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream&>> tls_;
#endif
  beast::flat_buffer buffer_;
  bool connected_ = false;
  bool read_pending_ = false;
  beast::error_code read_result_;
  std::unique_ptr<http::response_parser<http::string_body>> stream_parser_;
};

// A gateway error body ({"error", "message", "code"}) as an `error` with a stable reason.
[[noreturn]] inline void throw_gateway_error(unsigned status, const std::string& body) {
  int code = 0;
  std::string message = body.substr(0, 300);
  try {
    const auto j = tool_effects::detail::parse_json(body, "etcd error");
    code = int(int64_field(j, "code"));
    if (const auto* m = field(j, "message"); m && m->is_string()) message = m->get<std::string>();
  } catch (const std::exception&) {
  }
  std::string reason = "server_error";
  if (message.find("lease not found") != std::string::npos) reason = "lease_not_found";
  else if (message.find("compacted") != std::string::npos) reason = "compacted";
  else if (code == 16 || code == 7 || message.find("authentication failed") != std::string::npos ||
           message.find("user name is empty") != std::string::npos ||
           message.find("invalid auth token") != std::string::npos)
    reason = "auth_failed";
  else if (code == 14 || status == 503) reason = "unavailable";
  throw error(reason, detail::str_cat("HTTP ", std::to_string(status), ": ", message), code);
}

}  // namespace detail

/// A member's status: its id and its leader's id (equal on the leader), as etcd's decimal uint64 strings.
struct member_status {
  std::string member_id;
  std::string leader;
};

class client;

/// A watch on a key or range, on its own connection to one endpoint. `next` returns each message; a
/// canceled message (compacted start revision, or the server ended the watch) ends it: open a new watch from
/// `compact_revision` (or from the last revision seen + 1). Not thread-safe.
class watch_stream {
 public:
  /// The next message, waiting at most `wait`; nullopt when none came in time (the watch goes on).
  /// Throws etcd::error when the connection fails or the stream ends: open a new watch from the last
  /// revision seen + 1.
  std::optional<watch_response> next(std::chrono::milliseconds wait) {
    auto line = conn_->next_line(wait);
    if (!line) return std::nullopt;
    return detail::parse_watch(tool_effects::detail::parse_json(*line, "etcd watch"));
  }

 private:
  friend class client;
  explicit watch_stream(std::unique_ptr<detail::connection> c) : conn_(std::move(c)) {}
  std::unique_ptr<detail::connection> conn_;
};

/// A client of etcd's v3 JSON gateway. Requests are serialized by a mutex (one connection at a time);
/// watches and keepalives use connections of their own. A transport failure or an unavailable member moves
/// the client to the next endpoint and retries there, once per endpoint: a request whose answer was lost
/// may have been applied, so the requests the coordinator sends are idempotent by construction.
class client {
  template <class F>
  std::invoke_result_t<F&, detail::connection&> with_failover(F&& f) {
    std::lock_guard lock(mutex_);
    std::optional<error> last;
    bool reauthenticated = false;
    for (std::size_t attempt = 0; attempt < urls_.size(); ++attempt) {
      try {
        if (!conn_) conn_ = std::make_unique<detail::connection>(urls_[current_], options_.request_timeout,
                                                                 options_.max_response_bytes, &options_);
        if (!options_.user.empty() && token_.empty()) authenticate();
        return f(*conn_);
      } catch (const error& e) {
        if (e.reason() == "auth_failed" && !token_.empty() && !reauthenticated) {
          // a token that expired (etcd's simple tokens live 5 minutes): authenticate again, once
          token_.clear();
          reauthenticated = true;
          --attempt;
          continue;
        }
        if (e.reason() != "unavailable" && e.reason() != "timeout") throw;
        last = e;
        conn_.reset();
        token_.clear();
        current_ = (current_ + 1) % urls_.size();
      }
    }
    throw error("unavailable", detail::str_cat("no endpoint answered; last: ", last ? last->what() : "?"));
  }

 public:
  /// Checks the options (bad_option) but does not connect; authenticates on the first request.
  explicit client(client_options options) : options_(std::move(options)) {
    if (options_.endpoints.empty()) throw error("bad_option", "no endpoints");
    for (const auto& e : options_.endpoints) urls_.push_back(detail::parse_endpoint(e));
    if (options_.user.empty() != options_.password.empty() && !options_.user.empty())
      throw error("bad_option", "a user needs a password");
  }

  /// Which endpoint requests go to now (an index into options().endpoints).
  [[nodiscard]] std::size_t current_endpoint() const noexcept { return current_; }
  [[nodiscard]] const client_options& options() const noexcept { return options_; }

  range_result range(const range_request& r) { return detail::parse_range(call("/v3/kv/range", detail::range_json(r))); }

  /// Puts one key; returns the store's revision after it.
  std::int64_t put(std::string_view key, std::string_view value, std::int64_t lease_id = 0) {
    nlohmann::json j{{"key", detail::base64_encode(key)}, {"value", detail::base64_encode(value)}};
    if (lease_id) j["lease"] = std::to_string(lease_id);
    return detail::header_revision(call("/v3/kv/put", j));
  }

  /// Deletes `key` (or [key, range_end)); returns how many keys went.
  std::int64_t delete_range(std::string_view key, std::string_view range_end = {}) {
    nlohmann::json j{{"key", detail::base64_encode(key)}};
    if (!range_end.empty()) j["range_end"] = detail::base64_encode(range_end);
    return detail::int64_field(call("/v3/kv/deleterange", j), "deleted");
  }

  /// If every comparison holds, runs `success`, else `failure`; atomically, one revision.
  txn_result txn(const std::vector<txn_compare>& compare, const std::vector<txn_op>& success,
                 const std::vector<txn_op>& failure = {}) {
    nlohmann::json j = nlohmann::json::object();
    auto& c = j["compare"] = nlohmann::json::array();
    for (const auto& x : compare) c.push_back(detail::compare_json(x));
    auto& s = j["success"] = nlohmann::json::array();
    for (const auto& x : success) s.push_back(detail::op_json(x));
    auto& f = j["failure"] = nlohmann::json::array();
    for (const auto& x : failure) f.push_back(detail::op_json(x));
    const auto res = call("/v3/kv/txn", j);
    txn_result out;
    out.succeeded = detail::bool_field(res, "succeeded");
    out.revision = detail::header_revision(res);
    const auto& ops = out.succeeded ? success : failure;
    const auto& responses = detail::array_field(res, "responses");
    if (responses.size() != ops.size()) throw error("bad_response", "txn: one response per operation expected");
    for (std::size_t i = 0; i < ops.size(); ++i) {
      txn_op_result r;
      r.op = ops[i].op;
      const auto& one = responses[i];
      if (r.op == txn_op::kind::range) {
        const auto* rr = detail::field(one, "response_range");
        if (rr) r.range = detail::parse_range(*rr);
        r.range.revision = out.revision;
      } else if (r.op == txn_op::kind::delete_range) {
        const auto* d = detail::field(one, "response_delete_range");
        r.deleted = d ? detail::int64_field(*d, "deleted") : 0;
      }
      out.responses.push_back(std::move(r));
    }
    return out;
  }

  /// The answering member's status (/v3/maintenance/status): its id and the id of the leader it knows.
  member_status status() {
    const auto res = call("/v3/maintenance/status", nlohmann::json::object());
    const auto id = [](const nlohmann::json* j, const char* name) -> std::string {
      const auto* f = j ? detail::field(*j, name) : nullptr;
      if (f && f->is_string()) return f->get<std::string>();
      if (f && f->is_number_unsigned()) return std::to_string(f->get<std::uint64_t>());
      throw error("bad_response", detail::str_cat("status: no ", name));
    };
    return {id(detail::field(res, "header"), "member_id"), id(&res, "leader")};
  }

  /// Compacts the key-value history up to `revision` (watches from older revisions are then canceled).
  void compact(std::int64_t revision, bool physical = false) {
    nlohmann::json j{{"revision", std::to_string(revision)}};
    if (physical) j["physical"] = true;
    call("/v3/kv/compaction", j);
  }

  /// Grants a lease of `ttl_seconds`.
  lease lease_grant(std::int64_t ttl_seconds) {
    const auto res = call("/v3/lease/grant", {{"TTL", std::to_string(ttl_seconds)}});
    if (const auto* e = detail::field(res, "error"); e && e->is_string() && !e->get<std::string>().empty())
      throw error("server_error", e->get<std::string>());
    return {detail::int64_field(res, "ID"), detail::int64_field(res, "TTL")};
  }

  /// Renews the lease once; returns its TTL. A lease that expired (TTL 0 in the answer) is lease_not_found.
  lease lease_keepalive(std::int64_t id) {
    const nlohmann::json body{{"ID", std::to_string(id)}};
    return with_failover([&](detail::connection& c) {
      // the keepalive endpoint is a stream: a connection of its own, one message, then closed
      detail::connection stream(c.where(), options_.request_timeout, options_.max_response_bytes, &options_);
      const auto status = stream.open_stream("/v3/lease/keepalive", body.dump(), token_);
      auto line = stream.next_line(options_.request_timeout);
      stream.close();
      if (status != 200) detail::throw_gateway_error(status, line.value_or(""));
      if (!line) throw error("timeout", "no keepalive answer");
      const auto j = tool_effects::detail::parse_json(*line, "etcd keepalive");
      const auto* result = detail::field(j, "result");
      if (!result) detail::throw_gateway_error(status, *line);
      lease l{detail::int64_field(*result, "ID"), detail::int64_field(*result, "TTL")};
      if (l.ttl <= 0) throw error("lease_not_found", detail::str_cat("lease ", std::to_string(id), " expired"));
      return l;
    });
  }

  /// Revokes the lease: its keys are deleted.
  void lease_revoke(std::int64_t id) { call("/v3/lease/revoke", {{"ID", std::to_string(id)}}); }

  /// Opens a watch on `key` (or [key, range_end)) from `start_revision` (0: from now) on the current
  /// endpoint, failing over like a request, and waits for its `created` message.
  watch_stream watch(std::string_view key, std::string_view range_end = {}, std::int64_t start_revision = 0) {
    nlohmann::json create{{"key", detail::base64_encode(key)}};
    if (!range_end.empty()) create["range_end"] = detail::base64_encode(range_end);
    if (start_revision) create["start_revision"] = std::to_string(start_revision);
    const nlohmann::json body{{"create_request", create}};
    return with_failover([&](detail::connection& c) {
      auto conn = std::make_unique<detail::connection>(c.where(), options_.request_timeout,
                                                       options_.max_response_bytes, &options_);
      const auto status = conn->open_stream("/v3/watch", body.dump(), token_);
      if (status != 200) detail::throw_gateway_error(status, conn->next_line(options_.request_timeout).value_or(""));
      return watch_stream(std::move(conn));
    });
  }

 private:
  nlohmann::json call(const std::string& target, const nlohmann::json& body) {
    const auto text = body.dump();
    return with_failover([&](detail::connection& c) { return post_json(c, target, text); });
  }

  nlohmann::json post_json(detail::connection& c, const std::string& target, const std::string& text) {
    auto [status, res] = c.post(target, text, token_);
    if (status != 200) detail::throw_gateway_error(status, res);
    return tool_effects::detail::parse_json(res, "etcd response");
  }

  void authenticate() {
    const nlohmann::json body{{"name", options_.user}, {"password", options_.password}};
    const auto res = post_json(*conn_, "/v3/auth/authenticate", body.dump());
    const auto* t = detail::field(res, "token");
    if (!t || !t->is_string() || t->get_ref<const std::string&>().empty())
      throw error("auth_failed", "no token in the authenticate answer");
    token_ = t->get<std::string>();
  }

  client_options options_;
  std::vector<detail::url> urls_;
  std::mutex mutex_;
  std::unique_ptr<detail::connection> conn_;
  std::size_t current_ = 0;
  std::string token_;
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_CLIENT_HPP
