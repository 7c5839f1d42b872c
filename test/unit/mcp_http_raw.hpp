// Raw HTTP/1.1 over TCP to a server on 127.0.0.1 for the MCP server tests (mcp_server_http_test.cpp,
// mcp_server_polling_test.cpp): every byte the server writes can be asserted. Reads are bounded by a deadline.
#ifndef TOOL_EFFECTS_TEST_MCP_HTTP_RAW_HPP
#define TOOL_EFFECTS_TEST_MCP_HTTP_RAW_HPP

#include <cctype>
#include <cerrno>
#include <chrono>
#include <map>
#include <string>

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

namespace mcp_test {

using tcp = boost::asio::ip::tcp;
using namespace std::chrono_literals;

// One raw TCP connection to the server, reads bounded by a deadline.
struct raw_conn {
  boost::asio::io_context io;
  tcp::socket s{io};
  std::string in;
  bool eof = false;
  explicit raw_conn(unsigned short port) {
    s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    timeval tv{0, 50 * 1000};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void write(const std::string& bytes) {
    boost::system::error_code ec;
    boost::asio::write(s, boost::asio::buffer(bytes), ec);
  }
  // Reads until `done(in)`, the peer closes, or `limit` passes; returns whether done() held.
  template <class F>
  bool read_until(F done, std::chrono::milliseconds limit = 5s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    char buf[4096];
    while (!done(in)) {
      if (eof || std::chrono::steady_clock::now() > end) return false;
      const auto n = ::recv(s.native_handle(), buf, sizeof buf, 0);  // SO_RCVTIMEO: at most 50 ms
      if (n > 0)
        in.append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        eof = true;
    }
    return true;
  }
  bool read_to_close(std::chrono::milliseconds limit = 5s) {
    read_until([](const std::string&) { return false; }, limit);
    return eof;
  }
};

struct response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};
inline response parse(const std::string& raw) {
  response r;
  const auto end = raw.find("\r\n\r\n");
  if (raw.size() < 12 || end == std::string::npos) return r;
  r.status = std::stoi(raw.substr(9, 3));
  std::size_t pos = raw.find("\r\n") + 2;
  while (pos < end) {
    const auto nl = raw.find("\r\n", pos);
    const auto line = raw.substr(pos, nl - pos);
    const auto colon = line.find(':');
    std::string k = line.substr(0, colon);
    for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[k] = line.substr(line.find_first_not_of(' ', colon + 1));
    pos = nl + 2;
  }
  r.body = raw.substr(end + 4);
  return r;
}

inline constexpr const char* accept_both = "application/json, text/event-stream";

inline std::string request(const std::string& method, const std::string& body, std::map<std::string, std::string> headers,
                    unsigned short port) {
  std::string r = method + " /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nConnection: close\r\n";
  if (method == "POST") {
    headers.emplace("Content-Type", "application/json");
    headers.emplace("Accept", accept_both);
  }
  for (const auto& [k, v] : headers) r += k + ": " + v + "\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return r;
}

}  // namespace mcp_test

#endif  // TOOL_EFFECTS_TEST_MCP_HTTP_RAW_HPP
