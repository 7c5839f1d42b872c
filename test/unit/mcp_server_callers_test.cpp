// The server knows who is calling (mcp_server over Streamable HTTP, driven over raw TCP on 127.0.0.1): an OAuth
// 2.1 resource server (RFC 9728 metadata, 401 and 403 challenges, audience binding, sessions owned by their
// principal, the caller's identity in a tool, tokens never quoted); everything a caller owns keyed by it
// (idempotency keys, a key reused for another call refused, stateless request ids, MRTR states); fair limits
// (no lockout by idle sessions, a slowloris does not keep a client out, a memory budget, I/O apart from the
// tools); HTTP framing per RFC 9112; approvals asked of the user by elicitation; what a new user should not trip
// over. Each protection beside a control that shows what it prevents, or what still works.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <boost/asio/thread_pool.hpp>
#include <boost/describe/class.hpp>

#include <tool_effects/json/arguments.hpp>
#include <tool_effects/mcp/http.hpp>
#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server_http.hpp>
#include <tool_effects/sqlite_journal.hpp>

#include "mcp_http_raw.hpp"

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_server_callers_test_ns {

namespace te = tool_effects;
using nlohmann::json;
using namespace std::chrono_literals;
using mcp_test::accept_both;
using mcp_test::parse;
using mcp_test::raw_conn;
using mcp_test::request;
using mcp_test::response;

namespace {

struct accounts : te::resource<> {
  static constexpr std::string_view resource_name = "accounts";
};
struct vault {
  static constexpr std::string_view resource_name = "vault";
};

// What the tools share: the balances, how often each tool ran, and a gate that holds `hold` until opened.
struct state {
  std::mutex m;
  std::condition_variable cv;
  std::map<std::string, long> balances;
  std::atomic<int> deposits{0}, tokens{0}, closes{0}, held{0};
  bool open = false;
  void release() {
    std::lock_guard l(m);
    open = true;
    cv.notify_all();
  }
};

struct get_balance {
  static constexpr std::string_view name = "get_balance";
  static constexpr std::string_view target_arg = "acct";
  using side_effects = te::effects<te::reads<accounts>>;
  state* s = nullptr;
  json operator()(const json& args) const {
    std::lock_guard l(s->m);
    return json{{"balance", s->balances[args.at("acct").get<std::string>()]}};
  }
};
struct deposit {
  static constexpr std::string_view name = "deposit";
  static constexpr std::string_view target_arg = "acct";
  using side_effects = te::effects<te::writes<accounts>>;
  state* s = nullptr;
  json operator()(const json& args) const {
    ++s->deposits;
    std::lock_guard l(s->m);
    return json{{"balance", s->balances[args.at("acct").get<std::string>()] += args.value("amount", 1L)}};
  }
};
// A fresh secret each run, and whom it was issued to: what a replay across callers would leak.
struct issue_token {
  static constexpr std::string_view name = "issue_token";
  using side_effects = te::effects<te::writes<vault>>;
  state* s = nullptr;
  json operator()(const te::attempt_context& ctx, const json&) const {
    const int n = ++s->tokens;
    const te::mcp_principal* who = te::mcp_caller_of(ctx);
    return json{{"token", "secret-" + std::to_string(n)}, {"owner", who ? who->subject : "anonymous"}};
  }
};
struct close_account {
  static constexpr std::string_view name = "close_account";
  static constexpr std::string_view target_arg = "acct";
  using side_effects = te::effects<te::writes<accounts>, te::destructive>;
  state* s = nullptr;
  json operator()(const json&) const {
    ++s->closes;
    return "closed";
  }
};
struct whoami {
  static constexpr std::string_view name = "whoami";
  using side_effects = te::effects<te::reads<accounts>>;
  json operator()(const te::attempt_context& ctx, const json&) const {
    const te::mcp_principal* who = te::mcp_caller_of(ctx);
    if (!who) return json{{"subject", nullptr}};
    return json{{"subject", who->subject}, {"client_id", who->client_id}, {"scopes", who->scopes}};
  }
};
struct hold {
  static constexpr std::string_view name = "hold";
  using side_effects = te::effects<te::reads<vault>>;
  state* s = nullptr;
  json operator()(const json&) const {
    ++s->held;
    std::unique_lock l(s->m);
    s->cv.wait_for(l, 20s, [&] { return s->open; });
    return "released";
  }
};
struct count_args {
  long n = 0;
};
BOOST_DESCRIBE_STRUCT(count_args, (), (n))
struct count {
  static constexpr std::string_view name = "count";
  using arguments = count_args;
  using side_effects = te::effects<te::reads<accounts>>;
  json operator()(const json& args) const { return json{{"n", args.at("n")}}; }
};

using registry = te::tool_registry<get_balance, deposit, issue_token, close_account, whoami, hold, count>;
registry make_registry(state& s) {
  return registry(get_balance{&s}, deposit{&s}, issue_token{&s}, close_account{&s}, whoami{}, hold{&s}, count{});
}

constexpr std::string_view resource = "https://bank.example.com/mcp";

// When tok-brief expires (set by the test that uses it).
std::atomic<std::chrono::system_clock::time_point> brief_expiry{std::chrono::system_clock::now() + 1h};

// Tokens a test verifier knows: tok-a (alice, read and write), tok-b (bob, read and write), tok-read (carol,
// read only), tok-other (dave, for another audience), tok-old (erin, expired), tok-brief (frank, until
// brief_expiry); any other is not valid.
std::optional<te::mcp_principal> verify(std::string_view t) {
  te::mcp_principal p;
  p.issuer = "https://auth.example.com";
  p.audience = {std::string(resource)};
  p.client_id = "client-1";
  p.scopes = {"accounts:read", "accounts:write", "vault:read", "vault:write"};
  if (t == "tok-a") p.subject = "alice";
  else if (t == "tok-b") p.subject = "bob";
  else if (t == "tok-read") p.subject = "carol", p.scopes = {"accounts:read", "vault:read"};
  else if (t == "tok-other") p.subject = "dave", p.audience = {"https://other.example.com/mcp"};
  else if (t == "tok-old") p.subject = "erin", p.expires_at = std::chrono::system_clock::now() - 1h;
  else if (t == "tok-brief") p.subject = "frank", p.expires_at = brief_expiry.load();
  else if (t.rfind("tok-throw", 0) == 0) throw std::runtime_error(std::string("cannot verify ") + std::string(t));
  else return std::nullopt;
  return p;
}

json rpc(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

// One server over HTTP, and the raw exchanges of a client.
struct fixture {
  state s;
  registry reg = make_registry(s);
  te::json_tool_host<get_balance, deposit, issue_token, close_account, whoami, hold, count> host{reg};
  boost::asio::thread_pool pool{4};
  std::filesystem::path db;
  using options_t = decltype(te::run_options{}.with(te::local_coordinator{}).with(std::declval<te::sqlite_journal>()));
  std::optional<te::mcp_server<decltype(host), options_t>> server;
  unsigned short port = 0;

  explicit fixture(te::mcp_http_server_options o = {}, bool authorize = true) {
    static std::atomic<int> n{0};
    db = std::filesystem::temp_directory_path() /
         ("te_callers_" + std::to_string(::getpid()) + "_" + std::to_string(++n) + ".db");
    std::filesystem::remove(db);
    if (authorize && !o.authorization)
      o.authorization = te::mcp_resource_server{.resource = std::string(resource),
                                                .authorization_servers = {"https://auth.example.com"},
                                                .scopes_supported = {"accounts:read", "accounts:write"},
                                                .verify_token = verify,
                                                .tool_scopes = te::mcp_scopes_from_effects{}};
    server.emplace(pool, host, te::mcp_server_options{.name = "bank", .version = "1.0.0"},
                   te::run_options{}.with(te::local_coordinator{}).with(te::sqlite_journal(db.string())));
    port = server->listen_http("127.0.0.1", 0, "/mcp", std::move(o));
  }
  ~fixture() {
    s.release();
    server.reset();
    pool.join();
    std::filesystem::remove(db);
  }
  response exchange(const std::string& method, const std::string& body, std::map<std::string, std::string> h = {}) {
    raw_conn c(port);
    c.write(request(method, body, std::move(h), port));
    c.read_to_close(10s);
    return parse(c.in);
  }
  response post(const json& msg, std::map<std::string, std::string> h = {}) { return exchange("POST", msg.dump(), std::move(h)); }
  static std::map<std::string, std::string> bearer(const std::string& token, std::map<std::string, std::string> h = {}) {
    h["Authorization"] = "Bearer " + token;
    return h;
  }
  // A session of `token`'s principal ("" : none): its id.
  std::string initialize(const std::string& token, json capabilities = json::object()) {
    auto h = token.empty() ? std::map<std::string, std::string>{} : bearer(token);
    const auto r = post(rpc(0, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", capabilities}}), h);
    EXPECT_EQ(r.status, 200) << r.body;
    const std::string sid = r.headers.count("mcp-session-id") ? r.headers.at("mcp-session-id") : "";
    h["Mcp-Session-Id"] = sid;
    h["MCP-Protocol-Version"] = "2025-11-25";
    EXPECT_EQ(post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, h).status, 202);
    return sid;
  }
  static std::map<std::string, std::string> in_session(const std::string& token, const std::string& sid) {
    auto h = token.empty() ? std::map<std::string, std::string>{} : bearer(token);
    h["Mcp-Session-Id"] = sid;
    h["MCP-Protocol-Version"] = "2025-11-25";
    return h;
  }
  json call(const std::string& token, const std::string& sid, int id, const std::string& tool, json args = json::object(),
            json meta = nullptr) {
    json params = {{"name", tool}, {"arguments", std::move(args)}};
    if (!meta.is_null()) params["_meta"] = std::move(meta);
    const auto r = post(rpc(id, "tools/call", std::move(params)), in_session(token, sid));
    return r.body.empty() ? json() : json::parse(r.body);
  }
};

json key(const std::string& k) { return {{std::string(te::mcp_idempotency_meta_key), k}}; }

// ---------------------------------------------------------------------------------------------- authorization

TEST(McpServerAuthorization, TheProtectedResourceMetadataIsPublished) {
  fixture f;
  const auto r = f.exchange("GET", "", {});  // the endpoint itself needs a token
  EXPECT_EQ(r.status, 401);
  raw_conn c(f.port);
  c.write("GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  c.read_to_close();
  const auto m = parse(c.in);
  ASSERT_EQ(m.status, 200) << c.in;
  const json doc = json::parse(m.body);
  EXPECT_EQ(doc["resource"], resource);
  EXPECT_EQ(doc["authorization_servers"], json::array({"https://auth.example.com"}));
  EXPECT_EQ(doc["scopes_supported"], json::array({"accounts:read", "accounts:write"}));
  EXPECT_EQ(doc["bearer_methods_supported"], json::array({"header"}));
}

TEST(McpServerAuthorization, ARequestWithoutAValidTokenForThisServerIsRefused) {
  fixture f;
  const json init = rpc(0, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}});
  const std::string challenge =
      "Bearer resource_metadata=\"https://bank.example.com/.well-known/oauth-protected-resource/mcp\"";
  const auto none = f.post(init);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.headers.at("www-authenticate"), challenge);
  for (const char* t : {"tok-unknown", "tok-other", "tok-old"}) {
    const auto r = f.post(init, fixture::bearer(t));
    EXPECT_EQ(r.status, 401) << t;
    EXPECT_EQ(r.headers.at("www-authenticate"), challenge + ", error=\"invalid_token\"") << t;
  }
  // A verifier that throws with the token in its words: refused, and the token is quoted nowhere.
  const auto thrown = f.post(init, fixture::bearer("tok-throw-SECRET-1234"));
  EXPECT_EQ(thrown.status, 401);
  EXPECT_EQ(thrown.body.find("SECRET-1234"), std::string::npos) << thrown.body;
  EXPECT_EQ(thrown.headers.at("www-authenticate").find("SECRET-1234"), std::string::npos);
  // Control: a token issued for this server, unexpired, is served.
  EXPECT_EQ(f.post(init, fixture::bearer("tok-a")).status, 200);
}

TEST(McpServerAuthorization, AToolThatWritesNeedsTheWriteScopeAndAStepUpIsNamed) {
  fixture f;
  const std::string sid = f.initialize("tok-read");
  const auto r = f.post(rpc(1, "tools/call", {{"name", "deposit"}, {"arguments", {{"acct", "x"}}}}),
                        fixture::in_session("tok-read", sid));
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.headers.at("www-authenticate"),
            "Bearer resource_metadata=\"https://bank.example.com/.well-known/oauth-protected-resource/mcp\", "
            "error=\"insufficient_scope\", scope=\"accounts:write\"");
  EXPECT_EQ(f.s.deposits.load(), 0);
  // Control: what the token allows runs; a caller with the write scope deposits.
  EXPECT_EQ(f.call("tok-read", sid, 2, "get_balance", {{"acct", "x"}})["result"]["structuredContent"]["balance"], 0);
  const std::string a = f.initialize("tok-a");
  EXPECT_EQ(f.call("tok-a", a, 3, "deposit", {{"acct", "x"}})["result"]["structuredContent"]["balance"], 1);
}

TEST(McpServerAuthorization, ASessionIsItsPrincipalsAlone) {
  fixture f;
  const std::string a = f.initialize("tok-a");
  const auto stolen = f.post(rpc(1, "tools/list"), fixture::in_session("tok-b", a));
  EXPECT_EQ(stolen.status, 404);
  EXPECT_EQ(json::parse(stolen.body)["error"]["code"], -32001);
  EXPECT_EQ(f.exchange("DELETE", "", fixture::in_session("tok-b", a)).status, 404);  // nor ended by another
  // Control: its own principal is served in it.
  EXPECT_EQ(f.post(rpc(2, "tools/list"), fixture::in_session("tok-a", a)).status, 200);
}

TEST(McpServerAuthorization, AToolKnowsItsCaller) {
  fixture f;
  const std::string a = f.initialize("tok-a");
  const json r = f.call("tok-a", a, 1, "whoami")["result"]["structuredContent"];
  EXPECT_EQ(r["subject"], "alice");
  EXPECT_EQ(r["client_id"], "client-1");
  // Control: without authorization there is no caller.
  fixture open({}, false);
  const std::string s = open.initialize("");
  EXPECT_TRUE(open.call("", s, 1, "whoami")["result"]["structuredContent"]["subject"].is_null());
}

// One request on a kept-alive connection `c` (Connection: keep-alive): its response, read to its Content-Length.
response keep_alive(raw_conn& c, unsigned short port, const json& msg, std::map<std::string, std::string> h) {
  std::string req = request("POST", msg.dump(), std::move(h), port);
  req.replace(req.find("Connection: close"), 17, "Connection: keep-alive");
  c.in.clear();
  c.write(req);
  const auto whole = [](const std::string& in) {
    const auto end = in.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const auto head = parse(in.substr(0, end + 4));
    const auto n = head.headers.count("content-length") ? std::stoul(head.headers.at("content-length")) : 0;
    return in.size() >= end + 4 + n;
  };
  EXPECT_TRUE(c.read_until(whole, 10s)) << c.in;
  return parse(c.in);
}

// The server remembers each connection's last verified token (to skip hashing it again): every request is still
// judged by its own token. On one kept-alive connection, alice's token is served in alice's session, bob's is
// not (404: another principal's session; were the connection's last principal reused, bob would be served as
// alice), and an unknown token is refused.
TEST(McpServerAuthorization, EachRequestOnAKeptAliveConnectionIsJudgedByItsOwnToken) {
  fixture f;
  const std::string a = f.initialize("tok-a");
  raw_conn c(f.port);
  const json whoami = rpc(1, "tools/call", {{"name", "whoami"}, {"arguments", json::object()}});
  auto r = keep_alive(c, f.port, whoami, fixture::in_session("tok-a", a));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["result"]["structuredContent"]["subject"], "alice");
  r = keep_alive(c, f.port, whoami, fixture::in_session("tok-b", a));
  EXPECT_EQ(r.status, 404) << r.body;
  r = keep_alive(c, f.port, whoami, fixture::in_session("tok-a", a));  // the connection still serves alice
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["result"]["structuredContent"]["subject"], "alice");
  r = keep_alive(c, f.port, whoami, fixture::in_session("tok-unknown", a));
  EXPECT_EQ(r.status, 401) << r.body;
}

// A token remembered for its connection is not honoured past its expiry: served before, 401 after, on the same
// kept-alive connection. (Control: the same request before the expiry is served.)
TEST(McpServerAuthorization, AConnectionsTokenIsNotHonouredPastItsExpiry) {
  fixture f;
  brief_expiry = std::chrono::system_clock::now() + 1500ms;
  const std::string sid = f.initialize("tok-brief");
  raw_conn c(f.port);
  const json whoami = rpc(1, "tools/call", {{"name", "whoami"}, {"arguments", json::object()}});
  auto r = keep_alive(c, f.port, whoami, fixture::in_session("tok-brief", sid));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["result"]["structuredContent"]["subject"], "frank");
  std::this_thread::sleep_until(brief_expiry.load() + 100ms);
  r = keep_alive(c, f.port, whoami, fixture::in_session("tok-brief", sid));
  EXPECT_EQ(r.status, 401) << r.body;
  EXPECT_NE(r.headers["www-authenticate"].find("invalid_token"), std::string::npos);
  brief_expiry = std::chrono::system_clock::now() + 1h;
}

// ------------------------------------------------------------------------------------- what a caller owns

TEST(McpServerCallers, AnIdempotencyKeyIsItsCallersAlone) {
  fixture f;
  const std::string a = f.initialize("tok-a");
  const std::string b = f.initialize("tok-b");
  const json first = f.call("tok-a", a, 1, "issue_token", json::object(), key("k1"))["result"]["structuredContent"];
  EXPECT_EQ(first["owner"], "alice");
  // Another caller with the same key runs its own call: never alice's result.
  const json other = f.call("tok-b", b, 2, "issue_token", json::object(), key("k1"))["result"]["structuredContent"];
  EXPECT_EQ(other["owner"], "bob");
  EXPECT_NE(other["token"], first["token"]);
  // Control: alice repeating her key gets her call's outcome again, and the tool ran twice in all.
  const json again = f.call("tok-a", a, 3, "issue_token", json::object(), key("k1"))["result"]["structuredContent"];
  EXPECT_EQ(again, first);
  EXPECT_EQ(f.s.tokens.load(), 2);
}

TEST(McpServerCallers, AKeyReusedForAnotherCallIsRefused) {
  fixture f;
  const std::string a = f.initialize("tok-a");
  EXPECT_EQ(f.call("tok-a", a, 1, "deposit", {{"acct", "x"}, {"amount", 100}}, key("pay-1"))["result"]["structuredContent"]
                ["balance"],
            100);
  const json reused = f.call("tok-a", a, 2, "deposit", {{"acct", "x"}, {"amount", 5}}, key("pay-1"));
  ASSERT_TRUE(reused.contains("error")) << reused.dump();
  EXPECT_EQ(reused["error"]["code"], -32602);
  EXPECT_NE(reused["error"]["message"].get<std::string>().find("idempotency_key_reused"), std::string::npos);
  // Control: the same call again is a replay, not a second deposit.
  EXPECT_EQ(f.call("tok-a", a, 3, "deposit", {{"acct", "x"}, {"amount", 100}}, key("pay-1"))["result"]["structuredContent"]
                ["balance"],
            100);
  EXPECT_EQ(f.s.deposits.load(), 1);
}

// A stateless (2026-07-28) request is its own session: another client's notifications/cancelled for its id
// reaches nothing of it.
TEST(McpServerCallers, AStatelessRequestCannotBeCancelledByAnotherClient) {
  fixture f({}, false);
  const json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                     {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  const std::map<std::string, std::string> h{{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"},
                                             {"Mcp-Name", "hold"}};
  raw_conn victim(f.port);
  victim.write(request("POST", rpc(42, "tools/call", {{"name", "hold"}, {"_meta", meta}}).dump(), h, f.port));
  for (int i = 0; i < 200 && f.s.held.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(f.s.held.load(), 1);
  const auto cancel = f.post({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 42}}}},
                             {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "notifications/cancelled"}});
  EXPECT_EQ(cancel.status, 202);
  f.s.release();
  victim.read_to_close(10s);
  const auto r = parse(victim.in);
  ASSERT_EQ(r.status, 200) << victim.in;
  EXPECT_EQ(json::parse(r.body)["result"]["content"][0]["text"], "released");
}

// ------------------------------------------------------------------------------------------------ fair limits

TEST(McpServerLimits, IdleSessionsMakeRoomForANewClient) {
  fixture f({.max_sessions = 4}, false);
  for (int i = 0; i < 10; ++i) f.initialize("");  // ten idle sessions: the oldest go
  const std::string fresh = f.initialize("");
  EXPECT_EQ(fresh.size(), 32u);
  EXPECT_EQ(f.call("", fresh, 1, "get_balance", {{"acct", "x"}})["result"]["structuredContent"]["balance"], 0);
  // Control: when every session is busy (a request held in each), none can go: 503 with Retry-After.
  fixture busy({.max_sessions = 2}, false);
  std::vector<std::unique_ptr<raw_conn>> held;
  for (int i = 0; i < 2; ++i) {
    const std::string sid = busy.initialize("");
    held.push_back(std::make_unique<raw_conn>(busy.port));
    held.back()->write(request("POST", rpc(7, "tools/call", {{"name", "hold"}}).dump(), fixture::in_session("", sid),
                               busy.port));
  }
  for (int i = 0; i < 200 && busy.s.held.load() < 2; ++i) std::this_thread::sleep_for(10ms);
  const auto refused = busy.post(rpc(0, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}}));
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.headers.at("retry-after"), "1");
}

TEST(McpServerLimits, ASlowlorisDoesNotKeepAClientOut) {
  fixture f({.max_connections = 16}, false);
  std::vector<std::unique_ptr<raw_conn>> slow;
  for (int i = 0; i < 40; ++i) {  // more than the bound, each sending part of a head and nothing more
    slow.push_back(std::make_unique<raw_conn>(f.port));
    slow.back()->write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string sid = f.initialize("");
  EXPECT_EQ(sid.size(), 32u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST(McpServerLimits, TheMemoryOfRequestsInFlightIsBounded) {
  fixture f({.max_body_bytes = std::size_t{8} << 20, .max_bytes_in_flight = std::size_t{16} << 20}, false);
  const std::string sid = f.initialize("");
  // A million tiny values in 2 MB: held parsed it would cost far more than its bytes. Refused before parsing.
  std::string many = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_balance","arguments":{"acct":"x","v":[)";
  for (int i = 0; i < 1000000; ++i) many += i ? ",0" : "0";
  many += "]}}}";
  const auto r = f.exchange("POST", many, fixture::in_session("", sid));
  EXPECT_EQ(r.status, 413) << r.body.substr(0, 200);
  // Control: the same call with a few values is served.
  EXPECT_EQ(f.call("", sid, 2, "get_balance", {{"acct", "x"}, {"v", {0, 0, 0}}})["result"]["structuredContent"]["balance"],
            0);
}

TEST(McpServerLimits, ToolsThatBlockDoNotDelayTheTransport) {
  fixture f({}, false);
  const std::string a = f.initialize("");
  std::vector<std::unique_ptr<raw_conn>> blocked;
  for (int i = 0; i < 6; ++i) {  // more blocking calls than the pool has threads (4)
    blocked.push_back(std::make_unique<raw_conn>(f.port));
    blocked.back()->write(request("POST", rpc(10 + i, "tools/call", {{"name", "hold"}}).dump(),
                                  fixture::in_session("", a), f.port));
  }
  for (int i = 0; i < 200 && f.s.held.load() < 4; ++i) std::this_thread::sleep_for(10ms);
  // Every thread of the application's pool is held by a tool: the listener still answers, on its own thread.
  const std::string b = f.initialize("");
  EXPECT_EQ(f.post(rpc(1, "ping"), fixture::in_session("", b)).status, 200);
  EXPECT_EQ(json::parse(f.post(rpc(2, "tools/list"), fixture::in_session("", b)).body)["result"]["tools"].size(), 7u);
  EXPECT_EQ(f.s.open, false);  // (nothing was released meanwhile)
}

// https (TOOL_EFFECTS_MCP_TLS): the listener serves TLS with its certificate; our client verifies it against the
// test's CA. Control: plain HTTP to the TLS port gets no MCP answer.
TEST(McpServerTls, TheListenerServesHttps) {
  if (!TOOL_EFFECTS_MCP_HAS_TLS) GTEST_SKIP() << "built without TOOL_EFFECTS_MCP_TLS (OpenSSL)";
  namespace fs = std::filesystem;
  const fs::path certs = fs::temp_directory_path() / ("te_callers_certs_" + std::to_string(::getpid()));
  ASSERT_EQ(std::system(("bash " TOOL_EFFECTS_MCP_MAKE_CERTS " " + certs.string()).c_str()), 0);
  fixture f({.tls = te::mcp_http_server_options::tls_files{(certs / "server.pem").string(),
                                                            (certs / "server-key.pem").string()}},
            false);
  {
    auto c = te::mcp_client::connect(f.pool, {.url = "https://127.0.0.1:" + std::to_string(f.port) + "/mcp",
                                              .tls_ca_file = (certs / "ca.pem").string()});
    EXPECT_EQ(c.call("get_balance", {{"acct", "x"}})["structuredContent"]["balance"], 0);
  }
  const auto plain = f.post(rpc(0, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}}));
  EXPECT_NE(plain.status, 200);
  fs::remove_all(certs);
}

// -------------------------------------------------------------------------------------------- HTTP framing

TEST(McpServerFraming, AmbiguousTransferEncodingsAreRefusedAndTheConnectionCloses) {
  fixture f({}, false);
  auto raw = [&](const std::string& head_fields, const std::string& body) {
    raw_conn c(f.port);
    c.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: " +
            std::string(accept_both) + "\r\n" + head_fields + "\r\n" + body);
    const bool closed = c.read_to_close(5s);
    return std::pair{parse(c.in), closed};
  };
  const std::string msg = rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}}).dump();
  const std::string chunk = [&] {
    char n[16];
    std::snprintf(n, sizeof n, "%zx", msg.size());
    return std::string(n) + "\r\n" + msg + "\r\n0\r\n\r\n";
  }();
  auto [both, both_closed] = raw("Transfer-Encoding: chunked\r\nContent-Length: " + std::to_string(chunk.size()) + "\r\n", chunk);
  EXPECT_EQ(both.status, 400);
  EXPECT_TRUE(both_closed);
  auto [not_last, nl_closed] = raw("Transfer-Encoding: chunked, identity\r\n", chunk);
  EXPECT_EQ(not_last.status, 400);
  EXPECT_TRUE(nl_closed);
  auto [unknown, u_closed] = raw("Transfer-Encoding: xchunked\r\nContent-Length: " + std::to_string(msg.size()) + "\r\n", msg);
  EXPECT_EQ(unknown.status, 400);
  EXPECT_TRUE(u_closed);
  auto [gzip, g_closed] = raw("Transfer-Encoding: gzip, chunked\r\n", chunk);
  EXPECT_EQ(gzip.status, 501);
  EXPECT_TRUE(g_closed);
  // Control: chunked alone is read.
  auto [ok, ok_closed] = raw("Transfer-Encoding: chunked\r\nConnection: close\r\n", chunk);
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST(McpServerFraming, AMalformedLastEventIdIs400) {
  fixture f({}, false);
  const std::string sid = f.initialize("");
  auto h = fixture::in_session("", sid);
  h["Accept"] = "text/event-stream";
  h["Last-Event-ID"] = "123456789012345678901234-1";  // more than 64 bits: the parse once threw
  const auto r = f.exchange("GET", "", h);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "Bad Request: Last-Event-ID is not an event id of this server");
  // Control: a well-formed id of no stream of this session is the other 400.
  h["Last-Event-ID"] = "99-0";
  EXPECT_EQ(json::parse(f.exchange("GET", "", h).body)["error"]["message"],
            "Bad Request: Last-Event-ID names no stream of this session");
}

// ------------------------------------------------------------------------------------------------ approvals

// With no approver in the options, a destructive call is asked of the user at the client (elicitation), shown
// with its tool, effects and arguments; it runs once when approved, never when declined or when the client cannot
// be asked.
TEST(McpServerApprovals, ADestructiveCallIsAskedOfTheUserAtTheClient) {
  fixture f({}, false);
  const std::string url = "http://127.0.0.1:" + std::to_string(f.port) + "/mcp";
  std::mutex m;
  std::vector<std::string> shown;
  auto client_with = [&](std::optional<bool> approve) {
    te::mcp_client_options o;
    o.protocol_versions = {"2025-11-25"};
    if (approve)
      o.on_elicitation = [&m, &shown, approve](const te::mcp_elicitation_request& r) {
        std::lock_guard l(m);
        shown.push_back(r.message);
        return *approve ? te::mcp_elicitation_response::accept({{"approve", true}})
                        : te::mcp_elicitation_response::decline();
      };
    return te::mcp_client::connect(f.pool, te::mcp_http_endpoint{.url = url}, o);
  };
  {
    auto yes = client_with(true);
    EXPECT_EQ(te::mcp_text(yes.call("close_account", {{"acct", "a-17"}})), "closed");
    EXPECT_EQ(f.s.closes.load(), 1);
    std::lock_guard l(m);
    ASSERT_EQ(shown.size(), 1u);
    EXPECT_NE(shown[0].find("\"close_account\""), std::string::npos) << shown[0];
    EXPECT_NE(shown[0].find("destructive"), std::string::npos) << shown[0];
    EXPECT_NE(shown[0].find(R"({"acct":"a-17"})"), std::string::npos) << shown[0];
  }
  {
    auto no = client_with(false);
    EXPECT_THROW(no.call("close_account", {{"acct", "a-18"}}), te::mcp_tool_error);
    auto mute = client_with(std::nullopt);  // no elicitation capability: not asked, denied as before
    try {
      mute.call("close_account", {{"acct", "a-19"}});
      ADD_FAILURE() << "ran without approval";
    } catch (const te::mcp_tool_error& e) {
      EXPECT_NE(std::string(e.what()).find("confirmation_denied"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(f.s.closes.load(), 1);  // only the approved call ran
  std::lock_guard l(m);
  EXPECT_EQ(shown.size(), 2u);  // the client without the capability was not asked
}

// -------------------------------------------------------------------------------- what a new user trips over

TEST(McpServerNewcomer, ATargetArgumentIsRequiredAndBadArgumentsAreSaidInTheLibrarysWords) {
  fixture f({}, false);
  const std::string sid = f.initialize("");
  const json tools = json::parse(f.post(rpc(1, "tools/list"), fixture::in_session("", sid)).body)["result"]["tools"];
  for (const auto& t : tools)
    if (t["name"] == "get_balance") {
      EXPECT_EQ(t["inputSchema"]["required"], json::array({"acct"})) << t.dump();
      EXPECT_TRUE(t["inputSchema"]["properties"].contains("acct"));
    }
  const json missing = f.call("", sid, 2, "get_balance", json::object())["result"];
  EXPECT_EQ(missing["isError"], true);
  const std::string text = missing["content"][0]["text"];
  EXPECT_EQ(text.rfind("invalid_arguments: ", 0), 0u) << text;
  EXPECT_NE(text.find("missing required key \"acct\""), std::string::npos) << text;
  EXPECT_EQ(text.find("json.exception"), std::string::npos) << text;
  // JSON Schema's integers: 5.0 and 1e3 are integers; 5.5 is not.
  EXPECT_EQ(f.call("", sid, 3, "count", {{"n", 5.0}})["result"]["isError"], nullptr);
  EXPECT_EQ(f.call("", sid, 4, "count", {{"n", 1e3}})["result"]["isError"], nullptr);
  EXPECT_EQ(f.call("", sid, 5, "count", {{"n", 5.5}})["result"]["isError"], true);
}

// In the session-based eras a session's requests come after initialize: before it, the error says so, and the
// session goes on (stdio, the same route as every transport).
TEST(McpServerNewcomer, ARequestBeforeInitializeIsRefusedAndTheSessionGoesOn) {
  state s;
  registry reg = make_registry(s);
  te::json_tool_host<get_balance, deposit, issue_token, close_account, whoami, hold, count> host{reg};
  boost::asio::thread_pool pool(2);
  te::mcp_server server(pool, host);
  int to_server[2];
  int from_server[2];
  ASSERT_EQ(::pipe(to_server), 0);
  ASSERT_EQ(::pipe(from_server), 0);
  std::thread serving([&] { server.serve_fds(to_server[0], from_server[1]); });
  const std::string in = rpc(1, "tools/list").dump() + "\n" +
                         rpc(2, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}}).dump() +
                         "\n" + rpc(3, "tools/list").dump() + "\n" + rpc(4, "ping").dump() + "\n";
  ASSERT_EQ(::write(to_server[1], in.data(), in.size()), static_cast<ssize_t>(in.size()));
  ::close(to_server[1]);
  serving.join();
  ::close(from_server[1]);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(from_server[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(from_server[0]);
  ::close(to_server[0]);
  std::map<int, json> by_id;
  for (std::size_t pos = 0, nl; (nl = out.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    const json m = json::parse(out.substr(pos, nl - pos));
    by_id[m["id"].get<int>()] = m;
  }
  ASSERT_EQ(by_id.size(), 4u) << out;
  EXPECT_EQ(by_id[1]["error"]["code"], -32600);
  EXPECT_NE(by_id[1]["error"]["message"].get<std::string>().find("before initialize"), std::string::npos);
  EXPECT_EQ(by_id[3]["result"]["tools"].size(), 7u);  // control: after initialize it is served
  EXPECT_EQ(by_id[4]["result"], json::object());       // ping needs no initialize
}

}  // namespace
}  // namespace mcp_server_callers_test_ns
