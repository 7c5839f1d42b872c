// tool_effects/mcp/transport/detail/http_wire.hpp — internal to <tool_effects/mcp/http.hpp>: what the Streamable HTTP
// client puts on and reads off the wire, apart from the transport's I/O (http_transport.hpp): the bounds of what
// it sends, the server-sent-events parser, the session id check, the header value encoding of the 2026-07-28
// binding and the checked request headers. See docs/mcp-client.md ("The HTTP transport").
#ifndef TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_WIRE_HPP
#define TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_WIRE_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <tool_effects/detail/push_options.hpp>  // Beast in C++23 (see there)
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <tool_effects/detail/pop_options.hpp>

#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/client/detail/param_headers.hpp>
#include <tool_effects/mcp/errors.hpp>
#include <tool_effects/net/url.hpp>

namespace tool_effects::detail {

namespace beast = boost::beast;
namespace mcp_http = boost::beast::http;

// The bounds of what the client sends (docs/mcp-security.md, "Transport bounds"): an endpoint URL, one request
// header field's value, and all the fields of one request together (Node's default --max-http-header-size is
// 16 KiB; Beast cannot hold a field over 65,533 bytes and throws std::length_error).
inline constexpr std::size_t mcp_max_url_bytes = net::max_url_bytes;
inline constexpr std::size_t mcp_max_header_value_bytes = 8 * 1024;
inline constexpr std::size_t mcp_max_request_header_bytes = 16 * 1024;

// Server-sent events (WHATWG HTML, "Interpreting an event stream"): the fields MCP uses. `feed` consumes
// the complete lines at the front of a buffer and calls on_event(data) for every dispatched event of type
// "message" (or none).
class mcp_sse_parser {
 public:
  // Consumes the complete lines at the front of `buf` (erased) and leaves the unfinished line there, at the front,
  // for the caller to append the next read to: the parser remembers how far it scanned, so every byte is scanned
  // once (a 1 MiB event read in 64 KiB pieces is linear, not quadratic). An event whose data is one line (as
  // servers send a message) is handed to on_event as a view into `buf`, not copied; the data of several lines is
  // gathered (pending_bytes()). `buf` must not be changed between feeds but by appending to it.
  template <class F>
  void feed(std::string& buf, F&& on_event) {
    std::size_t pos = 0;
    std::size_t from = std::min(scanned_, buf.size());
    for (;;) {
      const auto nl = line_end(buf, from);
      if (nl == std::string::npos) {
        scanned_ = buf.size();
        break;
      }
      std::size_t next = nl + 1;
      if (buf[nl] == '\r') {
        if (nl + 1 == buf.size()) {  // CR LF split across reads: wait for the rest (the CR is scanned again)
          scanned_ = nl;
          break;
        }
        if (buf[nl + 1] == '\n') ++next;
      }
      line(std::string_view(buf.data() + pos, nl - pos), on_event);
      pos = from = next;
    }
    gather_single();  // a one-line event whose end has not come yet: its data leaves `buf` below
    buf.erase(0, pos);
    scanned_ -= pos;
  }
  // A new stream (a resumption, the GET stream) in a new buffer: where the parser scanned the last one is
  // forgotten, and so is the event the last one left unfinished (as the event-stream format resets its data
  // buffer on a new connection). An event whose data exceeds `max_event_bytes` is not delivered and sets `oversized()` (a large read
  // can bring a whole event at once: the caller's check of what is pending between reads does not see it).
  void begin_stream(std::size_t max_event_bytes = static_cast<std::size_t>(-1)) noexcept {
    scanned_ = 0;
    single_.reset();
    data_.clear();
    event_.clear();
    max_event_ = max_event_bytes;
  }
  // An event over the limit was seen.
  [[nodiscard]] bool oversized() const noexcept { return oversized_; }
  // The id of the last event seen ("" when none): resumption sends it as Last-Event-ID.
  [[nodiscard]] const std::string& last_event_id() const noexcept { return last_id_; }
  // The server's last `retry` (ms), if any, as sent (0 included): the transport clamps it to its floor.
  [[nodiscard]] std::optional<std::chrono::milliseconds> retry() const noexcept { return retry_; }
  // Bytes of the event being gathered outside the caller's buffer (bounded by the caller, with the buffer's size:
  // the unfinished line is there).
  [[nodiscard]] std::size_t pending_bytes() const noexcept { return data_.size(); }
  // Bytes examined for line ends so far (each byte once, but a CR that waits for its LF).
  [[nodiscard]] std::size_t bytes_scanned() const noexcept { return bytes_scanned_; }
  // Messages delivered (to on_event) since the last call: a blank line, a priming event (an id, empty data) or an
  // event of another type is none, so it does not reset a reconnect budget.
  std::size_t take_events() noexcept { return std::exchange(events_, 0); }

 private:
  template <class F>
  void line(std::string_view l, F& on_event) {
    if (l.empty()) {
      if (single_) {  // one data line, still in the caller's buffer
        deliver(*single_, on_event);
        single_.reset();
      } else if (!data_.empty()) {
        data_.pop_back();  // the LF after the last data line
        deliver(std::string_view(data_), on_event);
      }
      data_.clear();
      event_.clear();
      return;
    }
    if (l.front() == ':') return;  // a comment (keep-alive)
    const auto colon = l.find(':');
    const std::string_view field = l.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : l.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (!single_ && data_.empty()) {
        single_ = value;
        return;
      }
      gather_single();
      // One allocation for the value and its LF, grown geometrically (an exact reserve would be quadratic on
      // libc++; appending the LF after an exact-size append copied a 1 MiB event once more).
      const std::size_t need = data_.size() + value.size() + 1;
      if (need > data_.capacity()) data_.reserve(std::max(need, 2 * data_.capacity()));
      data_ += value;
      data_ += '\n';
    } else if (field == "event") {
      event_ = std::string(value.substr(0, 64));
    } else if (field == "id") {
      if (value.find('\0') == std::string_view::npos && value.size() <= 1024) last_id_ = std::string(value);
    } else if (field == "retry") {
      if (!value.empty() && value.size() <= 9 &&
          std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
        retry_ = std::chrono::milliseconds(std::stol(std::string(value)));
    }
  }
  template <class F>
  void deliver(std::string_view data, F& on_event) {
    if (data.size() > max_event_) {
      oversized_ = true;
    } else if ((event_.empty() || event_ == "message") && data.find_first_not_of(" \t\r\n") != std::string_view::npos) {
      ++events_;
      on_event(data);
    }
  }
  // The one data line seen so far, copied out of the caller's buffer (with its LF) before it changes.
  void gather_single() {
    if (!single_) return;
    data_.reserve(single_->size() + 1);
    data_.assign(*single_);
    data_ += '\n';
    single_.reset();
  }
  // The first CR or LF at or after `from` (npos: none), by memchr (std::string::find_first_of compares
  // every byte with every character of the set).
  std::size_t line_end(const std::string& buf, std::size_t from) noexcept {
    const char* b = buf.data() + from;
    const std::size_t n = buf.size() - from;
    const void* lf = std::memchr(b, '\n', n);
    const std::size_t until = lf ? static_cast<std::size_t>(static_cast<const char*>(lf) - b) : n;
    bytes_scanned_ += lf ? until + 1 : n;
    if (const void* cr = std::memchr(b, '\r', until)) return from + static_cast<std::size_t>(static_cast<const char*>(cr) - b);
    return lf ? from + until : std::string::npos;
  }
  std::size_t scanned_ = 0;                     // how far the front of the caller's buffer was scanned
  std::optional<std::string_view> single_;      // the event's only data line so far, in the caller's buffer
  std::size_t bytes_scanned_ = 0;
  std::size_t max_event_ = static_cast<std::size_t>(-1);
  bool oversized_ = false;
  std::string data_;
  std::string event_;
  std::string last_id_;
  std::optional<std::chrono::milliseconds> retry_;
  std::size_t events_ = 0;
};

// A session id as the specification allows it: 1 to 1024 visible ASCII characters.
inline bool mcp_session_id_ok(std::string_view s) {
  return !s.empty() && s.size() <= 1024 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x21 && c <= 0x7E; });
}

// A value for a header the 2026-07-28 binding mirrors from the body (Mcp-Name,
// Mcp-Method; "Value Encoding"): as is when it is printable ASCII (0x20-0x7E)
// without leading or trailing space and does not look like the sentinel,
// else "=?base64?<Base64 of its UTF-8>?=". Never a CR or LF in a header.
inline std::string mcp_http_header_value(std::string_view v) {
  const bool plain =
      std::all_of(v.begin(), v.end(), [](char c) { return c >= 0x20 && c <= 0x7E; }) &&
      (v.empty() || (v.front() != ' ' && v.back() != ' ')) &&
      !(v.size() >= 10 && v.substr(0, 9) == "=?base64?" && v.substr(v.size() - 2) == "?=");
  if (plain) return std::string(v);
  std::string out = "=?base64?";
  const std::size_t at = out.size();
  out.resize(at + beast::detail::base64::encoded_size(v.size()));
  out.resize(at + beast::detail::base64::encode(out.data() + at, v.data(), v.size()));
  out += "?=";
  return out;
}

// The header fields of one request as the client builds them, each checked before it is set: a field name is a
// token (RFC 9110 tchar), a value is 0 to mcp_max_header_value_bytes of visible ASCII, space or tab (no CR, LF
// or NUL: nothing a peer sent becomes a header line of its own), and all fields together stay within
// mcp_max_request_header_bytes. A field over a bound throws mcp_error(protocol_error) naming the field and its
// size, never its value (it may be a credential): the request fails at once, before anything is sent.
class mcp_request_headers {
 public:
  mcp_request_headers(mcp_http::request<mcp_http::string_body>& req, const std::string& server)
      : req_(req), server_(server) {}
  void set(std::string_view name, std::string_view value) {
    const bool name_ok = !name.empty() && name.size() <= 256 && std::all_of(name.begin(), name.end(), mcp_param::tchar);
    if (!name_ok) fail(name, "is not a header field name (1 to 256 tchar)");
    if (value.size() > mcp_max_header_value_bytes)
      fail(name, "is " + std::to_string(value.size()) + " bytes, over the limit of " +
                     std::to_string(mcp_max_header_value_bytes) + " bytes of one header value");
    if (!std::all_of(value.begin(), value.end(), [](char c) { return c == '\t' || (c >= 0x20 && c <= 0x7E); }))
      fail(name, "has a byte that is not visible ASCII, space or tab (CR, LF, NUL or a control character)");
    total_ += name.size() + value.size() + 4;  // "name: value\r\n"
    if (total_ > mcp_max_request_header_bytes)
      fail(name, "brings the request's header fields to " + std::to_string(total_) + " bytes, over the limit of " +
                     std::to_string(mcp_max_request_header_bytes));
    req_.set(beast::string_view(name.data(), name.size()), beast::string_view(value.data(), value.size()));
  }

 private:
  [[noreturn]] void fail(std::string_view name, const std::string& why) const {
    throw mcp_error(mcp_error_kind::protocol_error, server_,
                    str_cat("the request header ", quote_text(name, 80), " ", why, " (the request was not sent)"));
  }
  mcp_http::request<mcp_http::string_body>& req_;
  const std::string& server_;
  std::size_t total_ = 0;
};
}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_TRANSPORT_DETAIL_HTTP_WIRE_HPP
