// The server's Streamable HTTP transport (issue 28, <tool_effects/mcp/server_http.hpp>), driven over raw TCP on
// 127.0.0.1 so that every byte the server writes is asserted: sessions, JSON and SSE answers (priming event,
// retry), GET streams, resumption with Last-Event-ID, DELETE, the stateless 2026-07-28 era and its mirrored
// headers, DNS-rebinding protection, and hostile clients (garbage, oversize, slowloris, too many sessions,
// streams and pending requests): each fails alone and the server keeps serving.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cerrno>

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/http.hpp>
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server_http.hpp>
#include <tool_effects/mcp/transport/detail/http_server_handle.hpp>

#include "mcp_http_raw.hpp"

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_server_http_test_ns {

namespace te = tool_effects;
using nlohmann::json;
using namespace std::chrono_literals;
using tcp = boost::asio::ip::tcp;

namespace {

// The listener's sessions answer by method (a protocol session each, as the server's are, with these handlers in
// place of the server's): initialize, echo and tools/call (params back), progress (a related notification,
// then the result), hold (kept for the test to answer), poll (its stream closed at once, kept), params (the
// Mcp-Param-* fields seen), notify (an unrelated notification, then the result); any other method is the
// session's -32601.
struct test_handler {
  std::mutex m;
  std::vector<std::weak_ptr<te::detail::mcp_session>> sessions;  // every session made, in order
  std::optional<json> held_result;
  bool held = false;
  // Whether a request is held.
  bool holding() {
    std::lock_guard lock(m);
    return held;
  }
  void answer_held(json result) {
    std::lock_guard lock(m);
    held_result = std::move(result);
  }
  // How many of the sessions made have ended.
  std::size_t ended() {
    std::lock_guard lock(m);
    std::size_t n = 0;
    for (auto& w : sessions) {
      auto s = w.lock();
      n += !s || !s->alive() ? 1 : 0;
    }
    return n;
  }
  std::size_t made() {
    std::lock_guard lock(m);
    return sessions.size();
  }
  // Sends a notification from the session of `ctx`, related to its request or to none.
  static void notify(const te::detail::mcp_request_context& ctx, std::string method, json params, bool related) {
    auto s = ctx.session.lock();
    if (!s) return;
    te::detail::mcp_outgoing meta;
    if (related) meta.related_id = ctx.id;
    boost::asio::post(s->strand(), [s, method = std::move(method), params = std::move(params), meta]() mutable {
      s->notify(method, std::move(params), std::move(meta));
    });
  }
  boost::asio::awaitable<json> hold(te::detail::mcp_request_context ctx, bool poll) {
    if (poll)
      if (auto s = ctx.session.lock())
        boost::asio::post(s->strand(), [s, id = ctx.id] { s->transport()->close_stream(id); });
    {
      std::lock_guard lock(m);
      held = true;
    }
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor);
    for (;;) {
      {
        std::lock_guard lock(m);
        if (held_result) {
          held = false;
          co_return *std::exchange(held_result, std::nullopt);
        }
      }
      t.expires_after(5ms);
      co_await t.async_wait(boost::asio::use_awaitable);
    }
  }
  std::shared_ptr<te::detail::mcp_session> make(const te::detail::mcp_strand& strand) {
    te::detail::mcp_session_settings st;
    st.name = "test client";
    st.max_handler_requests = 64;
    auto s = std::make_shared<te::detail::mcp_session>(strand, st);
    {
      std::lock_guard lock(m);
      sessions.push_back(s);
    }
    using ctx_t = te::detail::mcp_request_context;
    s->on_request("initialize", [](ctx_t ctx) -> boost::asio::awaitable<json> {
      co_return json{{"protocolVersion", ctx.params["protocolVersion"]}, {"capabilities", json::object()}};
    });
    for (const char* m : {"echo", "tools/call"})
      s->on_request(m, [](ctx_t ctx) -> boost::asio::awaitable<json> {
        co_return ctx.params.is_null() ? json::object() : ctx.params;
      });
    s->on_request("progress", [](ctx_t ctx) -> boost::asio::awaitable<json> {
      notify(ctx, "notifications/progress", {{"progress", 1}}, true);
      co_return json{{"done", true}};
    });
    s->on_request("notify", [](ctx_t ctx) -> boost::asio::awaitable<json> {
      notify(ctx, "notifications/message", {{"n", 1}}, false);
      co_return json{{"done", true}};
    });
    s->on_request("hold", [this](ctx_t ctx) { return hold(std::move(ctx), false); });
    s->on_request("poll", [this](ctx_t ctx) { return hold(std::move(ctx), true); });
    s->on_request("params", [](ctx_t ctx) -> boost::asio::awaitable<json> {
      json out = json::object();
      if (ctx.incoming && ctx.incoming->param_headers)
        for (const auto& [k, v] : *ctx.incoming->param_headers) out[k] = v ? json(*v) : json();
      co_return out;
    });
    return s;
  }
};

// The listener as mcp_server::listen_http holds it: closed when it goes.
struct listener {
  std::shared_ptr<te::detail::mcp_http_server_core> core;
  ~listener() { core->close(); }
  [[nodiscard]] std::size_t sessions() const { return core->count_sessions(); }
  [[nodiscard]] std::size_t connections() const { return core->count_connections(); }
  void close() { core->close(); }
};

using mcp_test::accept_both;
using mcp_test::parse;
using mcp_test::raw_conn;
using mcp_test::request;
using mcp_test::response;

struct fixture : ::testing::Test {
  boost::asio::thread_pool pool{2};
  std::shared_ptr<test_handler> handler = std::make_shared<test_handler>();
  std::unique_ptr<listener> server;
  unsigned short port = 0;

  void start(te::mcp_http_server_options o = {}) {
    server = std::make_unique<listener>();
    te::detail::mcp_listener_hooks hooks;
    hooks.make_session = [h = handler](const te::detail::mcp_strand& strand) { return h->make(strand); };
    server->core = std::make_shared<te::detail::mcp_http_server_core>(pool.get_executor(), std::move(hooks), std::move(o));
    port = server->core->listen("127.0.0.1", 0, "/mcp");
  }
  void SetUp() override { start(); }
  void TearDown() override {
    server.reset();
    pool.join();
  }
  // One exchange on a new connection (Connection: close), read to the end.
  response exchange(const std::string& method, const std::string& body,
                    std::map<std::string, std::string> headers = {}) {
    raw_conn c(port);
    c.write(request(method, body, std::move(headers), port));
    c.read_to_close();
    return parse(c.in);
  }
  response post(const json& msg, std::map<std::string, std::string> headers = {}) {
    return exchange("POST", msg.dump(), std::move(headers));
  }
  static json rpc(int id, const std::string& method, json params = json::object()) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
  }
  // A session: its id, after initialize (answered as JSON) and notifications/initialized (202).
  std::string initialize(const std::string& version = "2025-11-25") {
    const auto r = post(rpc(0, "initialize", {{"protocolVersion", version}, {"capabilities", json::object()}}));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
    const std::string sid = r.headers.count("mcp-session-id") ? r.headers.at("mcp-session-id") : "";
    EXPECT_EQ(sid.size(), 32u);
    const auto n = post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                        {{"Mcp-Session-Id", sid}, {"MCP-Protocol-Version", version}});
    EXPECT_EQ(n.status, 202);
    EXPECT_EQ(n.body, "");
    return sid;
  }
  static std::map<std::string, std::string> session(const std::string& sid) {
    return {{"Mcp-Session-Id", sid}, {"MCP-Protocol-Version", "2025-11-25"}};
  }
  static std::map<std::string, std::string> modern(const std::string& method, std::string name = {}) {
    std::map<std::string, std::string> h{{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", method}};
    if (!name.empty()) h["Mcp-Name"] = std::move(name);
    return h;
  }
  static int error_code(const response& r) { return json::parse(r.body)["error"]["code"].get<int>(); }
};

using McpServerHttp = fixture;

TEST_F(McpServerHttp, ASessionIsGivenAtInitializeAndAnswersAsJson) {
  const std::string sid = initialize();
  const auto r = post(rpc(7, "echo", {{"x", 1}}), session(sid));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-type"), "application/json");
  EXPECT_EQ(json::parse(r.body), (json{{"jsonrpc", "2.0"}, {"id", 7}, {"result", {{"x", 1}}}}));
  const auto none = post(rpc(8, "echo"));
  EXPECT_EQ(none.status, 400);
  EXPECT_EQ(json::parse(none.body)["error"]["message"], "Bad Request: Mcp-Session-Id header is required");
  const auto unknown = post(rpc(9, "echo"), session("00000000000000000000000000000000"));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(error_code(unknown), -32001);
}

TEST_F(McpServerHttp, ARelatedMessageMakesAnSseStreamWithPrimingEventAndRetry) {
  const std::string sid = initialize();
  const auto r = post(rpc(3, "progress"), session(sid));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
  EXPECT_EQ(r.headers.at("mcp-session-id"), sid);
  // Stream 1 was initialize's; this request's is stream 2: the priming event (id 2-0, retry, empty data) first.
  EXPECT_EQ(r.body,
            "id: 2-0\nretry: 500\ndata: \n\n"
            "id: 2-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
            "id: 2-2\ndata: {\"id\":3,\"jsonrpc\":\"2.0\",\"result\":{\"done\":true}}\n\n");
}

TEST_F(McpServerHttp, AClosedStreamIsResumedWithLastEventId) {
  const std::string sid = initialize();
  const auto r = post(rpc(4, "poll"), session(sid));  // the core closes the stream before answering
  EXPECT_EQ(r.body, "id: 2-0\nretry: 500\ndata: \n\n");
  handler->answer_held({{"late", true}});
  auto h = session(sid);
  h["Accept"] = "text/event-stream";
  h["Last-Event-ID"] = "2-0";
  const auto g = exchange("GET", "", h);
  EXPECT_EQ(g.status, 200);
  EXPECT_EQ(g.body, "id: 2-1\ndata: {\"id\":4,\"jsonrpc\":\"2.0\",\"result\":{\"late\":true}}\n\n");
  h["Last-Event-ID"] = "99-0";
  EXPECT_EQ(exchange("GET", "", h).status, 400);
}

TEST_F(McpServerHttp, UnrelatedMessagesGoToAGetStreamAndAreKeptUntilOneOpens) {
  const std::string sid = initialize();
  EXPECT_EQ(json::parse(post(rpc(5, "notify"), session(sid)).body)["result"]["done"], true);  // kept: no GET stream
  auto h = session(sid);
  h["Accept"] = "text/event-stream";
  raw_conn g(port);
  g.write(request("GET", "", h, port));
  ASSERT_TRUE(g.read_until([](const std::string& s) { return s.find("\"n\":1") != std::string::npos; }));
  EXPECT_NE(
      g.in.find(
          "id: 3-0\nretry: 500\ndata: \n\nid: 3-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\""),
      std::string::npos)
      << g.in;
  // Several GET streams at once, up to the bound (4): the second opens, the fifth is refused.
  std::vector<std::unique_ptr<raw_conn>> more;
  for (int i = 0; i < 3; ++i) {
    more.push_back(std::make_unique<raw_conn>(port));
    more.back()->write(request("GET", "", h, port));
    ASSERT_TRUE(
        more.back()->read_until([](const std::string& s) { return s.find("retry: 500") != std::string::npos; }));
  }
  const auto fifth = exchange("GET", "", h);
  EXPECT_EQ(fifth.status, 429);
  EXPECT_EQ(json::parse(fifth.body)["error"]["message"], "Too Many Requests: too many GET streams");
  // A later message goes to one open GET stream.
  post(rpc(6, "notify"), session(sid));
  std::size_t seen = 0;
  g.read_until([](const std::string& s) { return s.find("id: 3-2\n") != std::string::npos; }, 300ms);
  seen += g.in.find("id: 3-2\n") != std::string::npos;
  for (auto& c : more) {
    c->read_until([](const std::string& s) { return s.find("\"n\":1") != std::string::npos; }, 300ms);
    seen += c->in.find("\"n\":1") != std::string::npos;
  }
  EXPECT_EQ(seen, 1u);
}

TEST_F(McpServerHttp, DeleteEndsTheSession) {
  const std::string sid = initialize();
  EXPECT_EQ(exchange("DELETE", "", session(sid)).status, 200);
  EXPECT_EQ(post(rpc(1, "echo"), session(sid)).status, 404);
  EXPECT_EQ(exchange("DELETE", "", session(sid)).status, 404);
  EXPECT_EQ(server->sessions(), 0u);
  EXPECT_EQ(handler->made(), 1u);
  EXPECT_EQ(handler->ended(), 1u);  // its protocol session ended with it
}

TEST_F(McpServerHttp, TheStatelessEraChecksItsMirroredHeaders) {
  const auto ok = post(rpc(1, "tools/call", {{"name", "add"}}), modern("tools/call", "add"));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.headers.count("mcp-session-id"), 0u);
  EXPECT_EQ(json::parse(ok.body)["result"]["name"], "add");
  // OWS around the value, and the Base64 form, are the same name.
  EXPECT_EQ(post(rpc(2, "tools/call", {{"name", "add"}}), modern("tools/call", "  add ")).status, 200);
  EXPECT_EQ(post(rpc(3, "tools/call", {{"name", "add"}}), modern("tools/call", "=?base64?YWRk?=")).status, 200);
  // Padding is required ("Hello, world!": 20 characters padded, 18 without); a long unpadded value is refused
  // (its decoding once wrote past the buffer sized for whole groups).
  const std::string hello = "Hello, world!";
  EXPECT_EQ(post(rpc(31, "tools/call", {{"name", hello}}), modern("tools/call", "=?base64?SGVsbG8sIHdvcmxkIQ==?=")).status,
            200);
  EXPECT_EQ(error_code(post(rpc(32, "tools/call", {{"name", hello}}), modern("tools/call", "=?base64?SGVsbG8sIHdvcmxkIQ?="))),
            -32020);
  const auto wrong = post(rpc(4, "tools/call", {{"name", "add"}}), modern("tools/call", "sub"));
  EXPECT_EQ(wrong.status, 400);
  EXPECT_EQ(json::parse(wrong.body),
            (json{{"jsonrpc", "2.0"},
                  {"id", 4},
                  {"error", {{"code", -32020}, {"message", "Header mismatch: Mcp-Name does not match the body"}}}}));
  const auto missing = post(rpc(5, "tools/call", {{"name", "add"}}), modern("tools/call"));
  EXPECT_EQ(json::parse(missing.body)["error"]["message"], "Header mismatch: Mcp-Name is missing");
  const auto method = post(rpc(6, "tools/call", {{"name", "add"}}), modern("prompts/list", "add"));
  EXPECT_EQ(method.status, 400);
  EXPECT_EQ(json::parse(method.body)["error"]["message"],
            "Header mismatch: Mcp-Method does not match the body's method");
  const auto lower = post(rpc(7, "tools/call", {{"name", "add"}}), modern("TOOLS/CALL", "add"));
  EXPECT_EQ(error_code(lower), -32020);  // values are case-sensitive
  // A JSON-RPC error of the request's own making gets its HTTP status: -32601 is 404.
  const auto unknown = post(rpc(8, "nope"), modern("nope"));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(error_code(unknown), -32601);
  // Mcp-Param-* reach the core, lower-cased, trimmed.
  auto h = modern("params");
  h["Mcp-Param-Region"] = " eu ";
  EXPECT_EQ(json::parse(post(rpc(9, "params"), h).body)["result"], (json{{"region", "eu"}}));
  // No GET stream and no DELETE without a session in this era.
  auto g = modern("x");
  g["Accept"] = "text/event-stream";
  EXPECT_EQ(exchange("GET", "", g).status, 405);
  EXPECT_EQ(exchange("DELETE", "", g).status, 405);
  const auto v = post(rpc(10, "echo"), {{"MCP-Protocol-Version", "1999-01-01"}});
  EXPECT_EQ(v.status, 400);
  EXPECT_EQ(error_code(v), -32022);
  EXPECT_EQ(json::parse(v.body)["error"]["data"]["requested"], "1999-01-01");
}

TEST_F(McpServerHttp, DnsRebindingIsRefusedOnALoopbackBind) {
  auto with = [&](const std::string& host, const std::string& origin) {
    raw_conn c(port);
    std::string body = rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}}).dump();
    std::string r = "POST /mcp HTTP/1.1\r\nHost: " + host +
                    "\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: " + accept_both + "\r\n" +
                    (origin.empty() ? "" : "Origin: " + origin + "\r\n") +
                    "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    c.write(r);
    c.read_to_close();
    return parse(c.in);
  };
  const auto evil = with("evil.example.com", "http://evil.example.com");
  EXPECT_EQ(evil.status, 403);
  EXPECT_EQ(json::parse(evil.body)["error"]["message"],
            "Forbidden: Host is not an allowed host (DNS rebinding protection)");
  const auto origin = with("127.0.0.1:" + std::to_string(port), "http://evil.example.com");
  EXPECT_EQ(origin.status, 403);
  EXPECT_EQ(json::parse(origin.body)["error"]["message"],
            "Forbidden: Origin is not an allowed origin (DNS rebinding protection)");
  EXPECT_EQ(with("localhost:" + std::to_string(port), "http://localhost:" + std::to_string(port)).status, 200);
  EXPECT_EQ(with("[::1]:1", "").status, 200);
  EXPECT_EQ(server->sessions(), 2u);  // the refused ones made none
}

// The listener remembers the Host and Origin a connection's last request passed the check with: each request on
// one kept-alive connection is still judged by its own. A good request, then an evil Host, an evil Origin, and
// good again, on one connection: 200, 403, 403, 200 (were the connection's first pass reused, the evil ones would
// be served).
TEST_F(McpServerHttp, EachRequestOnAKeptAliveConnectionIsCheckedForRebindingByItsOwnHeaders) {
  raw_conn c(port);
  const std::string good = "127.0.0.1:" + std::to_string(port);
  auto with = [&](const std::string& host, const std::string& origin) {
    const std::string body = rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}}).dump();
    c.in.clear();
    c.write("POST /mcp HTTP/1.1\r\nHost: " + host +
            "\r\nConnection: keep-alive\r\nContent-Type: application/json\r\nAccept: " + accept_both + "\r\n" +
            (origin.empty() ? "" : "Origin: " + origin + "\r\n") + "Content-Length: " + std::to_string(body.size()) +
            "\r\n\r\n" + body);
    EXPECT_TRUE(c.read_until([](const std::string& in) {
      const auto end = in.find("\r\n\r\n");
      if (end == std::string::npos) return false;
      const auto head = parse(in.substr(0, end + 4));
      const auto n = head.headers.count("content-length") ? std::stoul(head.headers.at("content-length")) : 0;
      return in.size() >= end + 4 + n;
    })) << c.in;
    return parse(c.in).status;
  };
  EXPECT_EQ(with(good, ""), 200);
  EXPECT_EQ(with("evil.example.com", ""), 403);
  EXPECT_EQ(with(good, "http://evil.example.com"), 403);
  EXPECT_EQ(with(good, "http://" + good), 200);
  EXPECT_EQ(with(good, "http://" + good), 200);  // the same again: remembered
}

// A route beside the endpoint (mcp_http_server_options::routes, e.g. /metrics): served for GET whatever the query,
// 405 for another method, 500 when its handler throws; behind the endpoint's own DNS-rebinding check (an evil Host
// never reaches the handler); any other path 404. The control: the same GET to a listener without the route is
// 404. `listen` refuses a route without '/', at the endpoint's path, given twice or without a handler.
TEST_F(McpServerHttp, ARouteIsServedBesideTheEndpointBehindTheSameChecks) {
  auto get = [&](const std::string& target, const std::string& method = "GET", std::string host = {}) {
    if (host.empty()) host = "127.0.0.1:" + std::to_string(port);
    raw_conn c(port);
    c.write(method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
    c.read_to_close();
    return parse(c.in);
  };
  EXPECT_EQ(get("/metrics").status, 404) << "the control: no route, no page";

  std::atomic<int> called{0};
  te::mcp_http_server_options o;
  o.routes.push_back({"/metrics", [&](const te::mcp_principal* caller) {
                        ++called;
                        return te::mcp_http_route_response{200, "text/plain; version=0.0.4",
                                                           caller ? "caller\n" : "up 1\n"};
                      }});
  o.routes.push_back({"/boom", [](const te::mcp_principal*) -> te::mcp_http_route_response {
                        throw std::runtime_error("the handler failed");
                      }});
  start(o);
  const response ok = get("/metrics?name=x");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.headers.at("content-type"), "text/plain; version=0.0.4");
  EXPECT_EQ(ok.body, "up 1\n");
  const response post = get("/metrics", "POST");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.headers.at("allow"), "GET");
  EXPECT_EQ(get("/metrics", "GET", "evil.example.com").status, 403);
  EXPECT_EQ(called.load(), 1) << "neither the POST nor the evil Host reached the handler";
  const response boom = get("/boom");
  EXPECT_EQ(boom.status, 500);
  EXPECT_EQ(boom.body, "Internal Server Error: the route failed\n");
  EXPECT_EQ(get("/metrics/").status, 404);
  EXPECT_EQ(get("/metrics").status, 200) << "the listener serves on after a failed route";

  const auto refused = [&](te::mcp_http_route r, const std::string& why) {
    te::mcp_http_server_options bad;
    bad.routes = {r};
    if (r.path == "/twice") bad.routes.push_back(r);
    te::detail::mcp_listener_hooks hooks;
    hooks.make_session = [h = handler](const te::detail::mcp_strand& strand) { return h->make(strand); };
    auto core = std::make_shared<te::detail::mcp_http_server_core>(pool.get_executor(), std::move(hooks), std::move(bad));
    try {
      core->listen("127.0.0.1", 0, "/mcp");
      core->close();
      ADD_FAILURE() << r.path << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "mcp_http_server: route \"" + r.path + "\" " + why);
    }
  };
  const auto page = [](const te::mcp_principal*) { return te::mcp_http_route_response{}; };
  refused({"metrics", page}, "does not start with '/'");
  refused({"/mcp", page}, "is the MCP endpoint's own path");
  refused({"/twice", page}, "is given twice");
  refused({"/none", {}}, "has no handler");
}

// mcp_http_request_cost (what a body holds of max_bytes_in_flight, counted eight bytes at a time) against the
// plain count of ',' ':' '[' '{' (one value more than them, 48 bytes each, and the bytes): every byte value,
// every length up to 40 and every alignment, and random bodies.
TEST(McpServerHttpBudget, ARequestsCostIsItsBytesAnd48ForEachValueItMayHold) {
  auto plain = [](std::string_view b) {
    std::size_t v = 1;
    for (const char ch : b) v += (ch == ',' || ch == ':' || ch == '[' || ch == '{') ? 1 : 0;
    return b.size() + 48 * v;
  };
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (std::size_t from = 0; from < all.size(); ++from)
    for (std::size_t n = 0; n <= 40 && from + n <= all.size(); ++n)
      ASSERT_EQ(te::detail::mcp_http_request_cost(std::string_view(all).substr(from, n)),
                plain(std::string_view(all).substr(from, n)))
          << from << " " << n;
  std::mt19937 rng(7);
  const std::string alphabet = ",:[{]}\"a0 \x7b\x5b\xfb\xdb\x2c\xac\x3a\xba\x0c\x1a";
  for (int k = 0; k < 2000; ++k) {
    std::string b(rng() % 300, ' ');
    for (char& ch : b) ch = rng() % 4 == 0 ? static_cast<char>(rng()) : alphabet[rng() % alphabet.size()];
    ASSERT_EQ(te::detail::mcp_http_request_cost(b), plain(b)) << b;
  }
  EXPECT_EQ(te::detail::mcp_http_request_cost(R"({"a":[1,2]})"), 11 + 48 * 5);
}

TEST_F(McpServerHttp, RebindingProtectionCanBeTurnedOff) {
  server.reset();
  start({.dns_rebinding_protection = false});
  raw_conn c(port);
  const std::string body = rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}}).dump();
  c.write(
      "POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\nContent-Type: "
      "application/json\r\nAccept: " +
      std::string(accept_both) + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  c.read_to_close();
  EXPECT_EQ(parse(c.in).status, 200);
}

TEST_F(McpServerHttp, BadRequestsFailAloneWithTheirStatus) {
  const std::string sid = initialize();
  auto status_of = [&](const std::string& raw) {
    raw_conn c(port);
    c.write(raw);
    c.read_to_close();
    return parse(c.in);
  };
  const auto garbage = status_of("\x16\x03\x01 not http at all\r\n\r\n");
  EXPECT_EQ(garbage.status, 400);
  EXPECT_EQ(json::parse(garbage.body)["error"]["message"], "Malformed HTTP request");
  const auto parse_error = exchange("POST", "{\"jsonrpc\":", session(sid));
  EXPECT_EQ(parse_error.status, 400);
  EXPECT_EQ(error_code(parse_error), -32700);
  const auto deep = exchange("POST", std::string(100, '[') + std::string(100, ']'), session(sid));
  EXPECT_EQ(deep.status, 400);
  EXPECT_EQ(error_code(deep), -32700);
  const auto batch = exchange("POST", "[" + rpc(1, "echo").dump() + "]", session(sid));
  EXPECT_EQ(json::parse(batch.body)["error"]["message"], "Invalid Request: batches are not supported");
  EXPECT_EQ(post({{"jsonrpc", "1.0"}, {"id", 1}, {"method", "echo"}}, session(sid)).status, 400);
  EXPECT_EQ(post({{"jsonrpc", "2.0"}, {"id", json::array()}, {"method", "echo"}}, session(sid)).status, 400);
  auto accept = session(sid);
  accept["Accept"] = "application/json";
  EXPECT_EQ(post(rpc(1, "echo"), accept).status, 406);
  auto type = session(sid);
  type["Content-Type"] = "text/plain";
  EXPECT_EQ(post(rpc(1, "echo"), type).status, 415);
  EXPECT_EQ(exchange("PUT", "", session(sid)).status, 405);
  raw_conn wrong_path(port);
  wrong_path.write("GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  wrong_path.read_to_close();
  EXPECT_EQ(parse(wrong_path.in).status, 404);
  // Still serving, the session intact.
  EXPECT_EQ(json::parse(post(rpc(2, "echo", {{"ok", 1}}), session(sid)).body)["result"]["ok"], 1);
}

TEST_F(McpServerHttp, OversizeHeadersAndBodiesAreRefused) {
  server.reset();
  start({.max_header_bytes = 2048, .max_body_bytes = 4096});
  const std::string sid = initialize();
  auto big_header = session(sid);
  big_header["X-Filler"] = std::string(4096, 'a');
  const auto h = post(rpc(1, "echo"), big_header);
  EXPECT_EQ(h.status, 431);
  const auto b = post(rpc(1, "echo", {{"s", std::string(8192, 'b')}}), session(sid));
  EXPECT_EQ(b.status, 413);
  EXPECT_EQ(json::parse(b.body)["error"]["message"], "Request body too large");
  EXPECT_EQ(post(rpc(2, "echo"), session(sid)).status, 200);
}

TEST_F(McpServerHttp, ASlowClientIsCutAtTheReadTimeout) {
  server.reset();
  start({.read_timeout = 300ms});
  raw_conn slow(port);
  slow.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // and never the rest
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(slow.read_to_close(3s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(slow.in, "");
  initialize();  // others are served meanwhile and after
}

TEST_F(McpServerHttp, SessionsPendingRequestsAndConnectionsAreBounded) {
  server.reset();
  start({.max_connections = 8, .max_sessions = 2, .max_pending_requests = 1});
  const std::string a = initialize();
  const std::string b = initialize();
  // A session with an open stream is busy: with both busy, a third session is refused (an idle one would have
  // made room: McpServerLimits.IdleSessionsMakeRoomForANewClient).
  auto listen = [&](const std::string& sid) {
    auto c = std::make_unique<raw_conn>(port);
    auto h = session(sid);
    h["Accept"] = "text/event-stream";
    c->write(request("GET", "", h, port));
    EXPECT_TRUE(c->read_until([](const std::string& in) { return in.find("retry: 500") != std::string::npos; }));
    return c;
  };
  auto stream_a = listen(a);
  auto stream_b = listen(b);
  const auto third = post(rpc(0, "initialize", {{"protocolVersion", "2025-11-25"}}));
  EXPECT_EQ(third.status, 503);
  EXPECT_EQ(json::parse(third.body)["error"]["message"], "Service Unavailable: too many sessions, none idle");
  // One pending request: a second one while it waits is refused, and served once the first is answered.
  raw_conn held(port);
  held.write(request("POST", rpc(1, "hold").dump(), session(a), port));
  for (int i = 0; i < 100 && !handler->holding(); ++i) std::this_thread::sleep_for(10ms);
  const auto busy = post(rpc(2, "echo"), session(a));
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(json::parse(busy.body)["error"]["message"], "Too Many Requests: too many pending requests");
  handler->answer_held({{"released", true}});
  held.read_to_close();
  EXPECT_EQ(json::parse(parse(held.in).body)["result"]["released"], true);
  EXPECT_EQ(post(rpc(3, "echo"), session(a)).status, 200);
  // At the connection bound, the connection that has waited longest for a request head goes, so that a new
  // client is served; the two streams, busy, stay.
  for (int i = 0; i < 100 && server->connections() > 2; ++i) std::this_thread::sleep_for(10ms);
  std::vector<std::unique_ptr<raw_conn>> idle;
  for (int i = 0; i < 6; ++i) idle.push_back(std::make_unique<raw_conn>(port));
  for (int i = 0; i < 100 && server->connections() < 8; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server->connections(), 8u);
  EXPECT_EQ(post(rpc(4, "echo"), session(a)).status, 200);
  EXPECT_TRUE(idle.front()->read_to_close(2s));
  EXPECT_FALSE(stream_a->eof);
  EXPECT_FALSE(stream_b->eof);
}

TEST_F(McpServerHttp, CloseEndsEverySessionAndConnection) {
  const std::string sid = initialize();
  auto h = session(sid);
  h["Accept"] = "text/event-stream";
  raw_conn g(port);
  g.write(request("GET", "", h, port));
  ASSERT_TRUE(g.read_until([](const std::string& s) { return s.find("retry: 500") != std::string::npos; }));
  server->close();
  EXPECT_TRUE(g.read_to_close(2s));
  EXPECT_EQ(handler->made(), 1u);
  EXPECT_EQ(handler->ended(), 1u);
}

// mcp_server (mcp/server.hpp) behind listen_http, driven by our own HTTP client: the derived annotations arrive,
// calls run through the server's coordinator (two clients, 40 increments of one account each, lose none).
struct counter {
  std::mutex m;
  long value = 0;
};
struct accounts : te::resource<> {
  static constexpr std::string_view resource_name = "accounts";
};
struct increment {
  static constexpr std::string_view name = "increment";
  static constexpr std::string_view target_arg = "acct";
  using side_effects = te::effects<te::writes<accounts>>;
  counter* c = nullptr;
  json operator()(const json&) const {
    long v;
    {
      std::lock_guard l(c->m);
      v = c->value;
    }
    std::this_thread::sleep_for(100us);  // an unserialised read-modify-write loses increments
    std::lock_guard l(c->m);
    c->value = v + 1;
    return json{{"value", v + 1}};
  }
};

TEST(McpServerHttpServer, OurClientListsAndCallsOverHttp) {
  counter c;
  te::tool_registry<increment> reg(increment{&c});
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  std::optional<te::mcp_server<te::json_tool_host<increment>>> server;
  server.emplace(pool, host, te::mcp_server_options{.name = "counter", .version = "1.0.0"});
  const unsigned short port = server->listen_http("127.0.0.1", 0, "/mcp");
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  {
    auto a = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url});
    auto b = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url});
    const json tools = a.list_tools();
    ASSERT_EQ(tools["tools"].size(), 1u) << tools.dump();
    EXPECT_EQ(
        tools["tools"][0]["annotations"],
        (json{
            {"readOnlyHint", false}, {"destructiveHint", false}, {"idempotentHint", false}, {"openWorldHint", false}}));
    std::thread ta([&] {
      for (int i = 0; i < 40; ++i) a.call("increment", {{"acct", "x"}});
    });
    for (int i = 0; i < 40; ++i) b.call("increment", {{"acct", "x"}});
    ta.join();
    EXPECT_EQ(c.value, 80);
    EXPECT_THROW(a.call("nope"), te::mcp_error);
  }
  server.reset();
  pool.join();
}

struct chatty {
  static constexpr std::string_view name = "chatty";
  using side_effects = te::effects<te::reads<accounts>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    ctx.report_log("debug", "d");
    ctx.report_log("info", "i");
    ctx.report_log("warning", "w");
    ctx.report_log("error", "e");
    return "done";
  }
};

// Over HTTP, a tool's log messages reach our client (on_log) on the request's stream, before the response:
// every level until the session sets one, then only those at or above it; emergency suppresses them all (the
// control: the filter is what removes them; checked by hand: without the filter in request_reporter::log the
// warning and emergency expectations fail). Levels are per session: a second session still gets every level.
// A bad level is -32602 naming it, and the session goes on.
TEST(McpServerHttpServer, AToolsLogReachesOurClientAtOrAboveItsSessionsLevel) {
  te::tool_registry<chatty> reg;
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  std::optional<te::mcp_server<te::json_tool_host<chatty>>> server;
  server.emplace(pool, host, te::mcp_server_options{.name = "chatty"});
  const std::string url = "http://127.0.0.1:" + std::to_string(server->listen_http("127.0.0.1", 0, "/mcp")) + "/mcp";
  {
    std::mutex m;
    std::vector<json> a_logs, b_logs;
    auto collect = [&m](std::vector<json>& into) {
      return [&m, &into](const json& params) {
        std::lock_guard lock(m);
        into.push_back(params);
      };
    };
    auto taken = [&m](std::vector<json>& from) {
      std::lock_guard lock(m);
      return std::exchange(from, {});
    };
    // A 2025 session (initialize, Mcp-Session-Id), which logging/setLevel is for (the 2026-07-28 era has none).
    te::mcp_client_options ao;
    ao.protocol_versions = {"2025-11-25"};
    ao.on_log = collect(a_logs);
    te::mcp_client_options bo = ao;
    bo.on_log = collect(b_logs);
    auto a = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url}, ao);
    auto b = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url}, bo);
    auto msg = [](const char* level, const char* data) {
      return json{{"level", level}, {"logger", "chatty"}, {"data", data}};
    };
    const std::vector<json> all{msg("debug", "d"), msg("info", "i"), msg("warning", "w"), msg("error", "e")};
    a.call("chatty");
    EXPECT_EQ(taken(a_logs), all) << "every level until the session sets one";
    EXPECT_EQ(a.request("logging/setLevel", {{"level", "warning"}}), json::object());
    a.call("chatty");
    EXPECT_EQ(taken(a_logs), (std::vector<json>{msg("warning", "w"), msg("error", "e")}));
    b.call("chatty");
    EXPECT_EQ(taken(b_logs), all) << "another session keeps its own level";
    try {
      a.request("logging/setLevel", {{"level", "verbose"}});
      ADD_FAILURE() << "a bad level was accepted";
    } catch (const te::mcp_rpc_error& e) {
      EXPECT_EQ(e.code(), -32602);
      EXPECT_NE(std::string(e.what()).find("Invalid params: at /level: expected one of debug, info, notice, warning, "
                                           "error, critical, alert, emergency: verbose"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(a.request("logging/setLevel", {{"level", "emergency"}}), json::object());
    a.call("chatty");
    EXPECT_TRUE(taken(a_logs).empty()) << "a level above every message suppresses them all";
    EXPECT_TRUE(taken(b_logs).empty());
  }
  server.reset();
  pool.join();
}


// The 2026-07-28 era served by mcp_server over HTTP with no session: our client pinned to that version
// discovers, lists and calls; server/discover answers the version list; bad requests fail alone, each with its
// status, its error and the request's id, and the next one is served.
TEST(McpServerHttpServer, TheModernEraIsServedWithoutASession) {
  counter c;
  te::tool_registry<increment> reg(increment{&c});
  te::json_tool_host host(reg);
  boost::asio::thread_pool pool(2);
  std::optional<te::mcp_server<te::json_tool_host<increment>>> server;
  server.emplace(pool, host, te::mcp_server_options{.name = "counter", .version = "1.0.0"});
  const unsigned short port = server->listen_http("127.0.0.1", 0, "/mcp");
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  {
    te::mcp_client_options o;
    o.protocol_versions = {"2026-07-28"};
    auto client = te::mcp_client::connect(pool, te::mcp_http_endpoint{.url = url}, o);
    EXPECT_EQ(client.protocol_version(), "2026-07-28");
    EXPECT_EQ(client.server_info()["serverInfo"], (json{{"name", "counter"}, {"version", "1.0.0"}}));
    ASSERT_EQ(client.list_tools()["tools"].size(), 1u);
    EXPECT_EQ(client.call("increment", {{"acct", "x"}})["structuredContent"], (json{{"value", 1}}));
    EXPECT_THROW(client.call("nope"), te::mcp_error);
    EXPECT_EQ(client.call("increment", {{"acct", "x"}})["structuredContent"], (json{{"value", 2}}));
  }
  auto post = [&](int id, const std::string& method, json params, std::map<std::string, std::string> h) {
    raw_conn conn(port);
    conn.write(request("POST", json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump(),
                       std::move(h), port));
    conn.read_to_close();
    return parse(conn.in);
  };
  const json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                     {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  const std::map<std::string, std::string> h{{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "server/discover"}};
  const auto discover = post(1, "server/discover", {{"_meta", meta}}, h);
  EXPECT_EQ(discover.status, 200);
  EXPECT_EQ(discover.headers.count("mcp-session-id"), 0u);
  json versions = json::array();
  for (const auto& v : te::mcp_protocol_versions()) versions.push_back(v);
  EXPECT_EQ(json::parse(discover.body)["result"]["supportedVersions"], versions);
  // _meta missing: -32602 with 400.
  const auto no_meta = post(2, "server/discover", json::object(), h);
  EXPECT_EQ(no_meta.status, 400);
  EXPECT_EQ(json::parse(no_meta.body)["error"]["code"], -32602);
  EXPECT_EQ(json::parse(no_meta.body)["id"], 2);
  // The header and _meta disagree: -32020 with 400.
  json other = meta;
  other["io.modelcontextprotocol/protocolVersion"] = "2099-01-01";
  const auto mismatch = post(3, "server/discover", {{"_meta", other}}, h);
  EXPECT_EQ(mismatch.status, 400);
  EXPECT_EQ(json::parse(mismatch.body)["error"]["code"], -32020);
  // Both name a version this server does not speak: the transport's -32022, with the request's id.
  const auto unknown = post(4, "server/discover", {{"_meta", other}},
                            {{"MCP-Protocol-Version", "2099-01-01"}, {"Mcp-Method", "server/discover"}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(json::parse(unknown.body)["id"], 4);
  EXPECT_EQ(json::parse(unknown.body)["error"]["data"]["supported"], versions);
  // initialize is gone in this era: 404 and -32601, and no session is opened.
  const auto init = post(5, "initialize", {{"protocolVersion", "2026-07-28"}, {"_meta", meta}},
                         {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "initialize"}});
  EXPECT_EQ(init.status, 404);
  EXPECT_EQ(json::parse(init.body)["error"]["code"], -32601);
  EXPECT_EQ(init.headers.count("mcp-session-id"), 0u);
  EXPECT_EQ(post(6, "server/discover", {{"_meta", meta}}, h).status, 200);
  server.reset();
  pool.join();
}

}  // namespace
}  // namespace mcp_server_http_test_ns
