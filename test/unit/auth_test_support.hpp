// Support of the token verifiers' tests (auth_jwt_test.cpp, auth_introspection_test.cpp): a real HTTP server on
// 127.0.0.1 (an ephemeral port), run by the test on a thread of its own, that answers each request with what the
// test's handler says (or holds the connection unanswered), counts the requests and keeps them.
#ifndef TOOL_EFFECTS_TEST_AUTH_TEST_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_AUTH_TEST_SUPPORT_HPP

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace auth_test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

inline response reply(unsigned status, std::string body, std::string content_type = "application/json") {
  response r{static_cast<http::status>(status), 11};
  r.set(http::field::content_type, content_type);
  r.body() = std::move(body);
  return r;
}

// The server: `handler` runs on the server's thread for each request; nullopt: the connection is held open and
// never answered (until the server stops).
class local_http_server {
 public:
  using handler = std::function<std::optional<response>(const request&)>;

  explicit local_http_server(handler h)
      : handler_(std::move(h)), acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  local_http_server(const local_http_server&) = delete;
  local_http_server& operator=(const local_http_server&) = delete;
  ~local_http_server() {
    io_.stop();
    thread_.join();
  }

  [[nodiscard]] std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  [[nodiscard]] int requests() const { return requests_.load(); }
  [[nodiscard]] std::vector<request> received() const {
    std::lock_guard<std::mutex> l(m_);
    return received_;
  }

 private:
  struct session {
    explicit session(asio::ip::tcp::socket s) : socket(std::move(s)) {}
    asio::ip::tcp::socket socket;
    beast::flat_buffer buffer;
    request req;
    response res;
  };

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      read(std::make_shared<session>(std::move(s)));
      accept();
    });
  }
  void read(const std::shared_ptr<session>& s) {
    http::async_read(s->socket, s->buffer, s->req, [this, s](boost::system::error_code ec, std::size_t) {
      if (ec) return;
      ++requests_;
      {
        std::lock_guard<std::mutex> l(m_);
        received_.push_back(s->req);
      }
      auto r = handler_(s->req);
      if (!r) {
        held_.push_back(s);
        return;
      }
      s->res = std::move(*r);
      s->res.keep_alive(false);
      s->res.prepare_payload();
      http::async_write(s->socket, s->res, [s](boost::system::error_code, std::size_t) {
        boost::system::error_code ignored;
        s->socket.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
      });
    });
  }

  handler handler_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::atomic<int> requests_{0};
  mutable std::mutex m_;
  std::vector<request> received_;
  std::vector<std::shared_ptr<session>> held_;  // the server's thread only
  std::thread thread_;
};

// Every message a verifier logged, kept for the test to search.
struct log_sink {
  std::shared_ptr<std::mutex> m = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::pair<std::string, std::string>>> lines =
      std::make_shared<std::vector<std::pair<std::string, std::string>>>();

  // The log hook to give a verifier.
  [[nodiscard]] std::function<void(std::string_view, std::string_view)> hook() const {
    return [m = m, lines = lines](std::string_view reason, std::string_view message) {
      std::lock_guard<std::mutex> l(*m);
      lines->emplace_back(std::string(reason), std::string(message));
    };
  }
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> all() const {
    std::lock_guard<std::mutex> l(*m);
    return *lines;
  }
  [[nodiscard]] bool has_reason(std::string_view reason) const {
    for (const auto& [r, msg] : all())
      if (r == reason) return true;
    return false;
  }
  // Whether any message (or reason) holds `needle`.
  [[nodiscard]] bool mentions(std::string_view needle) const {
    for (const auto& [r, msg] : all())
      if (r.find(needle) != std::string::npos || msg.find(needle) != std::string::npos) return true;
    return false;
  }
};

}  // namespace auth_test

#endif  // TOOL_EFFECTS_TEST_AUTH_TEST_SUPPORT_HPP
