// net::client — the one HTTP client layer (issue 27): keep-alive reuse, bytes after a response close the
// connection, bounded header and body, one deadline per exchange, the address filter (issue 26's discovery
// policy hook), streamed bodies, fetch() and run_blocking(). Against a scripted server on 127.0.0.1.
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <tool_effects/net/http_client.hpp>

namespace net_http_test_ns {

namespace net = tool_effects::net;
namespace asio = boost::asio;
namespace http = boost::beast::http;
using namespace std::chrono_literals;

namespace {

// A server on 127.0.0.1 that answers every request (read up to its blank line; no request body expected
// beyond Content-Length) with the next scripted reply, as raw bytes; a reply "" means: answer nothing.
class scripted_server {
 public:
  explicit scripted_server(std::vector<std::string> replies)
      : replies_(replies.begin(), replies.end()), acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    port = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~scripted_server() {
    io_.stop();
    thread_.join();
  }
  unsigned short port = 0;
  std::atomic<int> accepted{0};
  std::atomic<int> requests{0};
  std::string url(const char* path = "/") const { return "http://127.0.0.1:" + std::to_string(port) + path; }

 private:
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      ++accepted;
      serve(std::make_shared<asio::ip::tcp::socket>(std::move(s)), std::make_shared<asio::streambuf>());
      accept();
    });
  }
  void serve(std::shared_ptr<asio::ip::tcp::socket> s, std::shared_ptr<asio::streambuf> buf) {
    asio::async_read_until(*s, *buf, "\r\n\r\n", [this, s, buf](boost::system::error_code ec, std::size_t n) {
      if (ec) return;
      buf->consume(n);
      ++requests;
      std::string reply;
      {
        std::lock_guard<std::mutex> l(m_);
        if (replies_.empty()) return;
        reply = replies_.front();
        replies_.pop_front();
      }
      if (reply.empty()) {
        held_.push_back(s);  // never answered, never closed
        return;
      }
      auto r = std::make_shared<std::string>(std::move(reply));
      asio::async_write(*s, asio::buffer(*r), [this, s, buf, r](boost::system::error_code e, std::size_t) {
        if (!e) serve(s, buf);
      });
    });
  }
  std::mutex m_;
  std::deque<std::string> replies_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::vector<std::shared_ptr<asio::ip::tcp::socket>> held_;
  std::thread thread_;
};

std::string ok(const std::string& body, const char* extra = "") {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n" + extra + "\r\n" + body;
}

http::request<http::string_body> get(const net::url& u) {
  http::request<http::string_body> req{http::verb::get, u.target(), 11};
  req.set(http::field::host, u.authority());
  req.keep_alive(true);
  return req;
}

template <class F>
auto run(F f) {
  return net::run_blocking<typename decltype(f())::value_type>(f, 10s);
}

// Runs `body` (a coroutine using a client) to its end on a private io_context.
template <class Body>
void drive(Body body) {
  asio::io_context io;
  std::exception_ptr error;
  asio::co_spawn(io, body(), [&](std::exception_ptr e) { error = e; });
  io.run_for(20s);
  if (error) std::rethrow_exception(error);
}

}  // namespace

// client::start writes a request's head and body itself, in one gathered write: byte for byte what Beast's
// serializer writes (its output through operator<<), for the requests the library sends and for the corners
// (HTTP/1.0, a method Beast does not know, fields of unknown names in their case, an empty body, a large one).
// A chunked request is left to Beast (start falls back to http::async_write).
TEST(NetHttp, TheRequestHeadIsWhatBeastsSerializerWrites) {
  std::vector<http::request<http::string_body>> requests;
  {
    http::request<http::string_body> r{http::verb::post, "/mcp", 11};
    r.set(http::field::host, "127.0.0.1:8080");
    r.set(http::field::content_type, "application/json");
    r.set(http::field::accept, "application/json, text/event-stream");
    r.set("Mcp-Session-Id", "0f3c-session");
    r.set("MCP-Protocol-Version", "2025-11-25");
    r.set("x-Mixed-CASE", "v a l u e");
    r.body() = R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}})";
    r.keep_alive(true);
    r.prepare_payload();
    requests.push_back(r);
  }
  {
    http::request<http::string_body> r{http::verb::get, "/path?q=a%20b&x=1", 10};
    r.set(http::field::host, "example.test");
    r.keep_alive(false);
    r.prepare_payload();
    requests.push_back(r);
  }
  {
    http::request<http::string_body> r;
    r.method_string("PURGE");
    r.target("*");
    r.version(11);
    r.body() = std::string(300000, 'x');
    r.prepare_payload();
    requests.push_back(r);
  }
  for (const auto& r : requests) {
    std::ostringstream beast_wire;
    beast_wire << r;
    EXPECT_FALSE(r.chunked());
    EXPECT_EQ(net::detail::request_head(r) + r.body(), beast_wire.str());
  }
  // The server receives what Beast would have sent: a request through client::start reaches a raw server
  // as the head above followed by its body (read up to the blank line by scripted_server, answered).
  scripted_server s({ok("done")});
  drive([&]() -> asio::awaitable<void> {
    net::client c(net::parse_http_url(s.url()), {});
    net::exchange x;
    auto req = get(c.origin());
    co_await c.start(x, req, std::chrono::steady_clock::now() + 5s);
    EXPECT_FALSE(x.ec) << x.step << ": " << x.ec.message();
    co_await c.read_body(x, std::chrono::steady_clock::now() + 5s);
    EXPECT_EQ(x.parser.get().body(), "done");
  });
  EXPECT_EQ(s.requests.load(), 1);
}

// Two requests on a kept-alive connection: one TCP connection; the pool hands it back.
TEST(NetHttp, KeptAliveConnectionsAreReused) {
  scripted_server s({ok("1"), ok("2")});
  std::vector<std::string> bodies;
  drive([&]() -> asio::awaitable<void> {
    net::client c(net::parse_http_url(s.url()), {});
    for (int i = 0; i < 2; ++i) {
      net::exchange x;
      auto req = get(c.origin());
      co_await c.start(x, req, std::chrono::steady_clock::now() + 5s);
      EXPECT_FALSE(x.ec) << x.step << ": " << x.ec.message();
      co_await c.read_body(x, std::chrono::steady_clock::now() + 5s);
      bodies.push_back(x.parser.get().body());
      EXPECT_TRUE(c.release(x));
    }
  });
  EXPECT_EQ(bodies, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(s.accepted.load(), 1);
}

// A server that sends a second response unasked: the bytes after the first response close its connection, so
// the next request's answer is the server's answer to it, never the unasked one (issue 26). Control checked by
// hand: without `buffer().size() != 0` in client::release, the second body is "unasked".
TEST(NetHttp, BytesAfterAResponseCloseTheConnection) {
  scripted_server s({ok("1") + ok("unasked"), ok("2")});
  std::vector<std::string> bodies;
  drive([&]() -> asio::awaitable<void> {
    net::client c(net::parse_http_url(s.url()), {});
    for (int i = 0; i < 2; ++i) {
      net::exchange x;
      auto req = get(c.origin());
      co_await c.start(x, req, std::chrono::steady_clock::now() + 5s);
      co_await c.read_body(x, std::chrono::steady_clock::now() + 5s);
      bodies.push_back(x.parser.get().body());
      (void)c.release(x);
    }
  });
  EXPECT_EQ(bodies, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(s.accepted.load(), 2);
}

// A body over the client's limit fails with body_limit (streamed or announced); a header over its limit fails too; neither is read whole.
TEST(NetHttp, HeaderAndBodyReadsAreBounded) {
  scripted_server s({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1388\r\n" + std::string(5000, 'x') +
                         "\r\n0\r\n\r\n",
                     ok(std::string(5000, 'x')),
                     "HTTP/1.1 200 OK\r\nX-Big: " + std::string(10000, 'h') + "\r\nContent-Length: 0\r\n\r\n"});
  drive([&]() -> asio::awaitable<void> {
    net::client_options o;
    o.body_limit = 1000;
    o.header_limit = 8 * 1024;
    net::client c(net::parse_http_url(s.url()), o);
    net::exchange x;
    auto req = get(c.origin());
    co_await c.start(x, req, std::chrono::steady_clock::now() + 5s);
    EXPECT_FALSE(x.ec);
    co_await c.read_body(x, std::chrono::steady_clock::now() + 5s);
    EXPECT_EQ(x.ec, http::error::body_limit);
    EXPECT_FALSE(c.release(x));
    net::exchange z;  // a Content-Length over the limit fails as soon as the header is read
    co_await c.start(z, req, std::chrono::steady_clock::now() + 5s);
    EXPECT_EQ(z.ec, http::error::body_limit);
    net::exchange y;
    co_await c.start(y, req, std::chrono::steady_clock::now() + 5s);
    EXPECT_EQ(y.ec, http::error::header_limit);
    EXPECT_STREQ(y.step, "reading the response header");
  });
}

// A server that never answers: the exchange fails at its deadline (timeout), not later.
TEST(NetHttp, OneDeadlinePerExchange) {
  scripted_server s({""});
  const auto t0 = std::chrono::steady_clock::now();
  drive([&]() -> asio::awaitable<void> {
    net::client c(net::parse_http_url(s.url()), {});
    net::exchange x;
    auto req = get(c.origin());
    co_await c.start(x, req, std::chrono::steady_clock::now() + 300ms);
    EXPECT_EQ(x.ec, boost::beast::error::timeout);
    EXPECT_TRUE(x.connected);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// The address filter sees every resolved address; refusing them all connects to nothing. Control: with a
// filter that accepts, the same client connects.
TEST(NetHttp, TheAddressFilterIsAppliedToResolvedAddresses) {
  scripted_server s({ok("1")});
  std::vector<std::string> seen;
  drive([&]() -> asio::awaitable<void> {
    net::client_options o;
    o.allow = [&](const asio::ip::address& a) {
      seen.push_back(a.to_string());
      return false;
    };
    net::client c(net::parse_http_url("http://localhost:" + std::to_string(s.port) + "/"), o);
    net::exchange x;
    auto req = get(c.origin());
    co_await c.start(x, req, std::chrono::steady_clock::now() + 5s);
    EXPECT_TRUE(x.refused);
    EXPECT_FALSE(x.connected);
    net::client_options open;
    open.allow = [](const asio::ip::address& a) { return a.is_v4(); };
    net::client d(net::parse_http_url(s.url()), open);
    net::exchange y;
    co_await d.start(y, req, std::chrono::steady_clock::now() + 5s);
    EXPECT_FALSE(y.ec) << y.step;
  });
  EXPECT_FALSE(seen.empty());
  EXPECT_EQ(s.accepted.load(), 1);
}

// A streamed (chunked) body read as it comes: the first chunk is seen before the server ends the body.
TEST(NetHttp, StreamedBodiesAreReadAsTheyCome) {
  scripted_server s({"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "6\r\ndata: \r\n2\r\n1\n\r\n"});
  std::string first;
  drive([&]() -> asio::awaitable<void> {
    net::client c(net::parse_http_url(s.url()), {});
    net::exchange x;
    auto req = get(c.origin());
    co_await c.start(x, req, std::chrono::steady_clock::now() + 5s);
    x.parser.body_limit(boost::none);
    while (x.parser.get().body().find('\n') == std::string::npos) {
      x.conn->tcp().expires_after(5s);
      const auto ec = co_await net::client::read_some(x);
      if (ec) break;
    }
    first = x.parser.get().body();
    EXPECT_FALSE(x.parser.is_done());  // the stream goes on
  });
  EXPECT_EQ(first, "data: 1\n");
}

// fetch(): one bounded exchange; an unreachable server and a body over the limit each fail with their reason.
TEST(NetHttp, FetchIsOneBoundedExchange) {
  scripted_server s({ok("{\"a\":1}"), ok(std::string(3000, 'x'))});
  net::fetch_options o;
  o.timeout = 5s;
  const auto r = run([&] { return net::fetch(http::verb::get, s.url("/x?y=1"), {}, {}, o); });
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "{\"a\":1}");
  o.max_body_bytes = 100;
  try {
    (void)run([&] { return net::fetch(http::verb::get, s.url(), {}, {}, o); });
    ADD_FAILURE() << "no body_limit";
  } catch (const net::net_error& e) {
    EXPECT_EQ(e.reason(), "body_limit");
  }
  o.allow = [](const asio::ip::address&) { return false; };
  try {
    (void)run([&] { return net::fetch(http::verb::get, s.url(), {}, {}, o); });
    ADD_FAILURE() << "fetched";
  } catch (const net::net_error& e) {
    EXPECT_EQ(e.reason(), "unreachable");
  }
  try {
    (void)run([&] { return net::fetch(http::verb::get, "http://u:p@h/", {}, {}, o); });
    ADD_FAILURE() << "fetched";
  } catch (const net::net_error& e) {
    EXPECT_EQ(e.reason(), "bad_url");
    EXPECT_EQ(std::string(e.what()).find("u:p"), std::string::npos);
  }
}

// TLS configuration errors name the file; without TLS in the build, an https client is refused at once.
TEST(NetHttp, TlsSettingsAreCheckedUpFront) {
  if (net::tls_context::available) {
    try {
      net::tls_context ctx(net::tls_options{"/nonexistent/ca.pem", {}, {}});
      ADD_FAILURE() << "loaded";
    } catch (const net::net_error& e) {
      EXPECT_EQ(e.reason(), "tls_files");
      EXPECT_NE(std::string(e.what()).find("/nonexistent/ca.pem"), std::string::npos);
    }
  } else {
    try {
      net::client c(net::parse_http_url("https://h/"), {});
      ADD_FAILURE() << "accepted";
    } catch (const net::net_error& e) {
      EXPECT_EQ(e.reason(), "tls_unavailable");
    }
  }
}

}  // namespace net_http_test_ns
