// Support of the token verifiers' tests (auth_jwt_test.cpp, auth_introspection_test.cpp): a real HTTP server on
// 127.0.0.1 (an ephemeral port; https with a certificate the test makes), run by the test on a thread of its own,
// that answers each request with what the test's handler says (or holds the connection unanswered), counts the
// requests and keeps them; and test/etcd/make_certs.sh's throwaway CA and server certificate for 127.0.0.1.
#ifndef TOOL_EFFECTS_TEST_AUTH_TEST_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_AUTH_TEST_SUPPORT_HPP

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

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
// never answered (until the server stops). With `tls` (a certificate and its key, PEM files), https.
class local_http_server {
 public:
  using handler = std::function<std::optional<response>(const request&)>;
  struct tls_files {
    std::string certificate;
    std::string key;
  };

  explicit local_http_server(handler h, std::optional<tls_files> tls = std::nullopt)
      : handler_(std::move(h)), acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    if (tls) {
      ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
      ssl_->use_certificate_chain_file(tls->certificate);
      ssl_->use_private_key_file(tls->key, asio::ssl::context::pem);
    }
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
    return std::string(ssl_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + path;
  }
  [[nodiscard]] int requests() const { return requests_.load(); }
  [[nodiscard]] std::vector<request> received() const {
    std::lock_guard<std::mutex> l(m_);
    return received_;
  }

 private:
  template <class Stream>
  struct session {
    template <class... Args>
    explicit session(Args&&... args) : stream(std::forward<Args>(args)...) {}
    Stream stream;
    beast::flat_buffer buffer;
    request req;
    response res;
  };
  using tls_stream = beast::ssl_stream<beast::tcp_stream>;

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      if (ssl_) {
        auto t = std::make_shared<session<tls_stream>>(beast::tcp_stream(std::move(s)), *ssl_);
        t->stream.async_handshake(asio::ssl::stream_base::server, [this, t](boost::system::error_code e) {
          if (!e) read(t);
        });
      } else {
        read(std::make_shared<session<beast::tcp_stream>>(std::move(s)));
      }
      accept();
    });
  }
  template <class Session>
  void read(const std::shared_ptr<Session>& s) {
    http::async_read(s->stream, s->buffer, s->req, [this, s](boost::system::error_code ec, std::size_t) {
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
      http::async_write(s->stream, s->res, [s](boost::system::error_code, std::size_t) {
        boost::system::error_code ignored;
        beast::get_lowest_layer(s->stream).socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
      });
    });
  }

  handler handler_;
  asio::io_context io_;
  std::unique_ptr<asio::ssl::context> ssl_;
  asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::atomic<int> requests_{0};
  mutable std::mutex m_;
  std::vector<request> received_;
  std::vector<std::shared_ptr<void>> held_;  // the server's thread only
  std::thread thread_;
};

// A throwaway CA and a server certificate for 127.0.0.1 (test/etcd/make_certs.sh, with the openssl program) in a
// directory of their own, removed with this; ok() false when they could not be made.
struct test_certificates {
  std::filesystem::path dir;
  bool made = false;

  test_certificates() {
    dir = std::filesystem::temp_directory_path() / ("te-auth-certs-" + std::to_string(std::random_device{}()));
#ifdef TOOL_EFFECTS_AUTH_MAKE_CERTS
    made = std::system(("bash " TOOL_EFFECTS_AUTH_MAKE_CERTS " " + dir.string() + " >/dev/null 2>&1").c_str()) == 0;
#endif
  }
  test_certificates(const test_certificates&) = delete;
  test_certificates& operator=(const test_certificates&) = delete;
  ~test_certificates() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  [[nodiscard]] bool ok() const { return made; }
  [[nodiscard]] std::string ca() const { return (dir / "ca.pem").string(); }
  [[nodiscard]] local_http_server::tls_files server() const {
    return {(dir / "server.pem").string(), (dir / "server-key.pem").string()};
  }
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
