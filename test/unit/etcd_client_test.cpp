// The etcd v3 JSON-gateway client against a real three-member etcd cluster (the ctest fixture etcd_cluster,
// test/etcd/cluster.py). Skips when the fixture did not start one (no etcd binary).
#include <tool_effects/etcd.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etcd_test_support.hpp"

namespace etcd_client_test_ns {

namespace etcd = tool_effects::etcd;
using namespace std::chrono_literals;

using etcd_test::endpoints;

#undef REQUIRE_CLUSTER  // unity-built with the other etcd tests, which define their own
#define REQUIRE_CLUSTER()                                                                       \
  const auto eps = endpoints();                                                                 \
  if (eps.size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)"; \
  static_assert(true)

int cluster_cmd(const std::string& cmd, int index) {
  const auto line = std::string("python3 '") + TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT + "' " + cmd + " '" +
                    TOOL_EFFECTS_ETCD_STATE_DIR + "' " + std::to_string(index);
  return std::system(line.c_str());
}

// A key prefix of this test run, so that tests (and runs) never see each other's keys.
std::string unique_prefix(const char* test) {
  std::random_device rd;
  return std::string("te-test/") + test + "/" + std::to_string(rd()) + "/";
}

etcd::client make_client(const std::vector<std::string>& eps) {
  etcd::client_options o;
  o.endpoints = eps;
  o.request_timeout = 3s;
  return etcd::client(o);
}

// Every failure reason is a value of etcd::errc in one error category, with a stable string that reason(),
// the code's message() and what() carry, and that docs/coordination.md's table of errors names (issue 27).
TEST(EtcdErrors, EveryReasonIsAStableStringOfOneCategoryAndDocumented) {
  const std::vector<std::pair<etcd::errc, std::string>> all{
      {etcd::errc::unavailable, "unavailable"},
      {etcd::errc::timeout, "timeout"},
      {etcd::errc::bad_response, "bad_response"},
      {etcd::errc::lease_not_found, "lease_not_found"},
      {etcd::errc::compacted, "compacted"},
      {etcd::errc::auth_failed, "auth_failed"},
      {etcd::errc::bad_option, "bad_option"},
      {etcd::errc::server_error, "server_error"},
      {etcd::errc::lease_lost, "lease_lost"},
      {etcd::errc::coordination_timeout, "coordination_timeout"},
      {etcd::errc::cancelled, "cancelled"}};
  // the list above is the whole enum: its values are 1..N, and N + 1 is no reason
  EXPECT_EQ(etcd::to_string(static_cast<etcd::errc>(all.size() + 1)), "unknown");
  EXPECT_EQ(etcd::to_string(static_cast<etcd::errc>(0)), "unknown");
  std::ifstream doc_file(std::filesystem::path(TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT).parent_path().parent_path().parent_path() /
                         "docs" / "coordination.md");
  ASSERT_TRUE(doc_file) << "docs/coordination.md not found";
  const std::string doc((std::istreambuf_iterator<char>(doc_file)), std::istreambuf_iterator<char>());
  const auto table = doc.find("**Errors of the etcd client.**");
  ASSERT_NE(table, std::string::npos);
  const auto table_end = doc.find("\n\n", doc.find("| reason | when |", table));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& [value, name] = all[i];
    EXPECT_EQ(static_cast<std::size_t>(value), i + 1);
    EXPECT_EQ(etcd::to_string(value), name);
    const boost::system::error_code ec = value;  // an error code enum
    EXPECT_EQ(&ec.category(), &etcd::etcd_category());
    EXPECT_STREQ(ec.category().name(), "tool_effects.etcd");
    EXPECT_EQ(ec.message(), name);
    const etcd::error e(value, "the message", 14);
    EXPECT_EQ(e.reason(), name);
    EXPECT_EQ(e.code(), value);
    EXPECT_EQ(e.value(), value);
    EXPECT_EQ(e.grpc_status(), 14);
    EXPECT_EQ(std::string(e.what()), "etcd: " + name + ": the message");
    EXPECT_NE(doc.substr(table, table_end - table).find("| `" + name + "` |"), std::string::npos)
        << name << " is not in docs/coordination.md's table of errors";
  }
  // a gateway error's reason comes from its code and message, and it is in the same category
  try {
    etcd::detail::throw_gateway_error(400, R"({"code": 11, "message": "etcdserver: mvcc: required revision has been compacted"})");
  } catch (const etcd::error& e) {
    EXPECT_EQ(e.code(), etcd::errc::compacted);
    EXPECT_EQ(e.grpc_status(), 11);
  }
}

TEST(EtcdBase64, RoundTripsEveryLengthAndRejectsNonCanonicalInput) {
  std::string bytes;
  for (int n = 0; n < 40; ++n) {
    const auto enc = etcd::detail::base64_encode(bytes);
    EXPECT_EQ(enc.size() % 4, 0u);
    EXPECT_EQ(etcd::detail::base64_decode(enc), bytes) << n;
    bytes += char(n * 37 + 200);
  }
  EXPECT_EQ(etcd::detail::base64_encode("foo"), "Zm9v");
  EXPECT_EQ(etcd::detail::base64_decode("Zm9vYg=="), "foob");
  for (const char* bad : {"Zm9", "Zm9v!", "Zg=a", "Z===", "Zm9v\n", "=Zm9"})
    EXPECT_FALSE(etcd::detail::base64_decode(bad)) << bad;
}

TEST(EtcdOptions, BadEndpointsAreBadOptions) {
  for (const auto& eps : {std::vector<std::string>{}, std::vector<std::string>{"localhost"},
                          std::vector<std::string>{"http://127.0.0.1:"}}) {
    try {
      etcd::client_options o;
      o.endpoints = eps;
      etcd::client c(o);
      ADD_FAILURE() << "accepted";
    } catch (const etcd::error& e) {
      EXPECT_EQ(e.reason(), "bad_option") << e.what();
    }
  }
}

TEST(EtcdClient, UnreachableEndpointsAreUnavailable) {
  etcd::client_options o;
  o.endpoints = {"http://127.0.0.1:1", "127.0.0.1:2"};
  o.request_timeout = 1s;
  etcd::client c(o);
  try {
    c.put("k", "v");
    ADD_FAILURE() << "no error";
  } catch (const etcd::error& e) {
    EXPECT_EQ(e.reason(), "unavailable") << e.what();
  }
}

TEST(EtcdClient, PutRangeAndTxnCompareAndCreate) {
  REQUIRE_CLUSTER();
  auto c = make_client(eps);
  const auto p = unique_prefix("txn");
  const std::string key = p + std::string("bin\0\xff", 5);  // keys are bytes
  const auto r1 = c.put(key, "one");
  EXPECT_GT(r1, 0);
  auto got = c.range({key});
  ASSERT_EQ(got.kvs.size(), 1u);
  EXPECT_EQ(got.kvs[0].key, key);
  EXPECT_EQ(got.kvs[0].value, "one");
  EXPECT_EQ(got.kvs[0].create_revision, r1);
  EXPECT_EQ(got.kvs[0].version, 1);

  // compare-and-create: the first creates, the second finds the key and reads it in the failure branch
  const auto cas = [&](const std::string& k, const std::string& v) {
    return c.txn({{etcd::txn_compare::target::create_revision, etcd::txn_compare::relation::equal, k, 0, {}}},
                 {etcd::txn_op::put(k, v)}, {etcd::txn_op::get({k})});
  };
  const auto first = cas(p + "claim", "a");
  EXPECT_TRUE(first.succeeded);
  const auto second = cas(p + "claim", "b");
  EXPECT_FALSE(second.succeeded);
  ASSERT_EQ(second.responses.size(), 1u);
  ASSERT_EQ(second.responses[0].range.kvs.size(), 1u);
  EXPECT_EQ(second.responses[0].range.kvs[0].value, "a");
  EXPECT_EQ(second.responses[0].range.kvs[0].create_revision, first.revision);

  // a prefix range sorted by create revision, limit 1: the oldest key (what the lock protocol reads)
  c.put(p + "q/c", "x");
  c.put(p + "q/a", "x");
  c.put(p + "q/b", "x");
  etcd::range_request oldest(p + "q/", etcd::detail::prefix_end(p + "q/"));
  oldest.limit = 1;
  oldest.order = etcd::range_request::sort::create_ascending;
  const auto o = c.range(oldest);
  ASSERT_EQ(o.kvs.size(), 1u);
  EXPECT_EQ(o.kvs[0].key, p + "q/c");
  EXPECT_EQ(o.count, 3);
  EXPECT_TRUE(o.more);
  EXPECT_EQ(c.delete_range(p, etcd::detail::prefix_end(p)), 5);
  EXPECT_TRUE(c.range({p, etcd::detail::prefix_end(p)}).kvs.empty());
}

TEST(EtcdClient, LeaseKeptAliveKeepsItsKeysAndExpiresWithoutKeepalive) {
  REQUIRE_CLUSTER();
  auto c = make_client(eps);
  const auto p = unique_prefix("lease");
  const auto kept = c.lease_grant(2);
  const auto dropped = c.lease_grant(2);
  EXPECT_GE(kept.ttl, 2);  // etcd raises a TTL below its minimum (1.5 election timeouts)
  c.put(p + "kept", "v", kept.id);
  c.put(p + "dropped", "v", dropped.id);
  // a keepalive every 500 ms on one lease only, until the other one's key is gone: at least the TTL, and
  // longer when a leader election (a loaded machine) extended the leases
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::steady_clock::now() - start; };
  while (elapsed() < 30s && (elapsed() < 3s || !c.range({p + "dropped"}).kvs.empty())) {
    EXPECT_GT(c.lease_keepalive(kept.id).ttl, 0);
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_GE(elapsed(), 2s);
  EXPECT_EQ(c.range({p + "kept"}).kvs.size(), 1u) << "the kept-alive lease lost its key";
  EXPECT_TRUE(c.range({p + "dropped"}).kvs.empty()) << "the lease without keepalive did not expire in 30 s";
  try {
    c.lease_keepalive(dropped.id);
    ADD_FAILURE() << "an expired lease was renewed";
  } catch (const etcd::error& e) {
    EXPECT_EQ(e.reason(), "lease_not_found") << e.what();
  }
  c.lease_revoke(kept.id);
  EXPECT_TRUE(c.range({p + "kept"}).kvs.empty()) << "revoking did not delete the lease's key";
  try {
    c.lease_revoke(kept.id);
    ADD_FAILURE() << "revoked twice";
  } catch (const etcd::error& e) {
    EXPECT_EQ(e.reason(), "lease_not_found") << e.what();
  }
}

// Reads watch messages until one has an event (or the wait is over).
std::optional<etcd::watch_response> next_event(etcd::watch_stream& w, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto m = w.next(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
    if (m && (!m->events.empty() || m->canceled)) return m;
  }
  return std::nullopt;
}

TEST(EtcdWatch, SeesADeleteAndTimesOutWithoutOne) {
  REQUIRE_CLUSTER();
  auto c = make_client(eps);
  const auto p = unique_prefix("watch");
  const auto rev = c.put(p + "k", "v");
  auto w = c.watch(p + "k", {}, rev + 1);
  // nothing happens: next() returns empty in time, it does not hang
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(next_event(w, 300ms));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(c.delete_range(p + "k"), 1);
  const auto m = next_event(w, 5s);
  ASSERT_TRUE(m) << "the delete was not seen";
  ASSERT_EQ(m->events.size(), 1u);
  EXPECT_TRUE(m->events[0].is_delete);
  EXPECT_EQ(m->events[0].kv.key, p + "k");
  EXPECT_GT(m->events[0].kv.mod_revision, rev);
}

TEST(EtcdWatch, CompactionCancelsAnOldWatchWhichIsReEstablished) {
  REQUIRE_CLUSTER();
  auto c = make_client(eps);
  const auto p = unique_prefix("compact");
  const auto r1 = c.put(p + "k", "1");
  c.put(p + "k", "2");
  // a watch open while the history is compacted under it goes on. It watches from now, and the compaction
  // waits for its `created` answer: etcd cancels a watch that starts below the compacted revision and has not
  // caught up yet, and watch() returns before etcd has registered the watch. (It started at put "3" + 1, which
  // other tests' writes to the shared cluster can leave below the compaction: under load the gcc preset saw it
  // canceled, then nothing for 8 s.)
  c.put(p + "k", "3");
  auto live = c.watch(p + "k", {}, 0);
  {
    const auto until = std::chrono::steady_clock::now() + 5s;
    std::optional<etcd::watch_response> created;
    while (!(created && created->created) && std::chrono::steady_clock::now() < until) created = live.next(500ms);
    ASSERT_TRUE(created && created->created) << "the live watch was not created";
  }
  const auto r4 = c.put(p + "other", "x");
  c.compact(r4);
  // a watch from before the compaction is canceled with the compacted revision...
  auto old = c.watch(p + "k", {}, r1);
  const auto m = next_event(old, 5s);
  ASSERT_TRUE(m) << "no answer from a watch on a compacted revision";
  EXPECT_TRUE(m->canceled);
  EXPECT_GE(m->compact_revision, r4);
  // ...and re-established from there; it then sees the delete
  auto again = c.watch(p + "k", {}, m->compact_revision);
  EXPECT_EQ(c.delete_range(p + "k"), 1);
  for (auto* w : {&again, &live}) {
    std::optional<etcd::watch_response> got;
    for (int i = 0; i < 5 && !(got && got->events.size() == 1 && got->events[0].is_delete); ++i)
      got = next_event(*w, 2s);
    ASSERT_TRUE(got) << "the watch hangs";
    ASSERT_FALSE(got->canceled);
    ASSERT_EQ(got->events.size(), 1u);
    EXPECT_TRUE(got->events[0].is_delete);
  }
  // a range at the compacted revision is a stable error
  try {
    etcd::range_request r(p + "k");
    r.revision = r1;
    c.range(r);
    ADD_FAILURE() << "read a compacted revision";
  } catch (const etcd::error& e) {
    EXPECT_EQ(e.reason(), "compacted") << e.what();
  }
}

TEST(EtcdFailover, AKilledMemberIsLeftForTheNextEndpoint) {
  REQUIRE_CLUSTER();
  auto c = make_client(eps);
  const auto p = unique_prefix("failover");
  c.put(p + "before", "v");
  ASSERT_EQ(c.current_endpoint(), 0u);
  ASSERT_EQ(cluster_cmd("kill", 0), 0);
  // the control: a client of the killed member alone fails
  {
    etcd::client_options o;
    o.endpoints = {eps[0]};
    o.request_timeout = 1s;
    etcd::client alone(o);
    EXPECT_THROW(alone.put(p + "alone", "v"), etcd::error);
  }
  // the client moves on; the two remaining members keep the quorum (a new leader if the killed one led)
  std::int64_t rev = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (rev == 0 && std::chrono::steady_clock::now() - t0 < 20s) {
    try {
      rev = c.put(p + "after", "v");
    } catch (const etcd::error& e) {
      std::this_thread::sleep_for(100ms);
    }
  }
  const auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(rev, 0) << "no write after the kill";
  EXPECT_NE(c.current_endpoint(), 0u);
  EXPECT_EQ(c.range({p + "before"}).kvs.size(), 1u);
  std::printf("failover: first write after SIGKILL of member 0 took %.3f s\n", took);
  RecordProperty("failover_seconds", std::to_string(took));
  ASSERT_EQ(cluster_cmd("restart", 0), 0);
  // the restarted member has the write made while it was down
  const auto t1 = std::chrono::steady_clock::now();
  bool seen = false;
  while (!seen && std::chrono::steady_clock::now() - t1 < 20s) {
    try {
      auto back = make_client({eps[0]});
      seen = back.range({p + "after"}).kvs.size() == 1;
    } catch (const etcd::error&) {
    }
    if (!seen) std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(seen) << "the restarted member did not catch up";
}

// User/password auth, on a one-member cluster of its own (enabling auth would lock the shared one).
TEST(EtcdAuth, ATokenFromUserAndPasswordIsSentAndBadCredentialsAreAuthFailed) {
  REQUIRE_CLUSTER();
  const std::string dir = std::string(TOOL_EFFECTS_ETCD_STATE_DIR) + "-auth-" + std::to_string(::getpid());
  const auto script = std::string("python3 '") + TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT + "' ";
  ASSERT_EQ(std::system((script + "start '" + dir + "' --members 1 >/dev/null").c_str()), 0);
  struct stop_at_exit {
    std::string cmd;
    std::string dir;
    ~stop_at_exit() {
      [[maybe_unused]] auto rc = std::system(cmd.c_str());
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } stop{script + "stop '" + dir + "' >/dev/null", dir};
  std::ifstream in(dir + "/cluster.json");
  const auto ep = nlohmann::json::parse(in)["endpoints"][0].get<std::string>();
  auto open = make_client({ep});
  // the control: before auth is enabled, a client without credentials writes
  open.put("k", "before");
  // enable auth (root user with the root role) through the gateway, as etcdctl would
  {
    boost::asio::io_context io;
    const auto c = std::make_shared<etcd::detail::connection>(io.get_executor(), etcd::detail::parse_endpoint(ep), 3s,
                                                              1 << 20);
    const auto post = [&](const std::string& target, const std::string& body) {
      return etcd::detail::run_blocking(io, c->post(target, body, "")).first;
    };
    EXPECT_EQ(post("/v3/auth/user/add", R"({"name":"root","password":"pw"})"), 200u);
    EXPECT_EQ(post("/v3/auth/user/grant", R"({"user":"root","role":"root"})"), 200u);
    EXPECT_EQ(post("/v3/auth/enable", "{}"), 200u);
  }
  for (const auto& [user, password] : {std::pair<std::string, std::string>{"", ""}, {"root", "wrong"}}) {
    etcd::client_options o;
    o.endpoints = {ep};
    o.user = user;
    o.password = password;
    etcd::client c(o);
    try {
      c.put("k", "v");
      ADD_FAILURE() << "wrote with user '" << user << "'";
    } catch (const etcd::error& e) {
      EXPECT_EQ(e.reason(), "auth_failed") << e.what();
    }
  }
  etcd::client_options o;
  o.endpoints = {ep};
  o.user = "root";
  o.password = "pw";
  etcd::client c(o);
  EXPECT_GT(c.put("k", "after"), 0);
  EXPECT_EQ(c.range({"k"}).kvs.at(0).value, "after");
}

// TLS with a client certificate, on a one-member cluster of its own (etcd --client-cert-auth).
TEST(EtcdTls, ClientCertificateIsRequiredAndTheServerIsVerified) {
#if !(defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS)
  GTEST_SKIP() << "built without OpenSSL (TOOL_EFFECTS_ETCD_TLS)";
#else
  REQUIRE_CLUSTER();
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl command for the certificates";
  const std::string dir = std::string(TOOL_EFFECTS_ETCD_STATE_DIR) + "-tls-" + std::to_string(::getpid());
  const std::string certs = dir + "/certs";
  const auto script = std::string("python3 '") + TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT + "' ";
  ASSERT_EQ(std::system((std::string("'") + TOOL_EFFECTS_ETCD_MAKE_CERTS + "' '" + certs + "'").c_str()), 0);
  ASSERT_EQ(std::system((script + "start '" + dir + "' --members 1 --tls '" + certs + "' >/dev/null").c_str()), 0);
  struct stop_at_exit {
    std::string cmd;
    std::string dir;
    ~stop_at_exit() {
      [[maybe_unused]] auto rc = std::system(cmd.c_str());
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } stop{script + "stop '" + dir + "' >/dev/null", dir};
  std::ifstream in(dir + "/cluster.json");
  const auto ep = nlohmann::json::parse(in)["endpoints"][0].get<std::string>();
  ASSERT_EQ(ep.rfind("https://", 0), 0u);
  auto attempt = [&](std::string ca, std::string cert, std::string key) {
    etcd::client_options o;
    o.endpoints = {ep};
    o.request_timeout = 3s;
    o.ca_file = std::move(ca);
    o.cert_file = std::move(cert);
    o.key_file = std::move(key);
    etcd::client c(o);
    return c.put("k", "v");
  };
  // the controls: no client certificate; a server not signed by the given CA (its own cert as the "CA")
  EXPECT_THROW(attempt(certs + "/ca.pem", "", ""), etcd::error);
  EXPECT_THROW(attempt(certs + "/client.pem", certs + "/client.pem", certs + "/client-key.pem"), etcd::error);
  EXPECT_GT(attempt(certs + "/ca.pem", certs + "/client.pem", certs + "/client-key.pem"), 0);
  // a watch and a keepalive go over TLS too
  etcd::client_options o;
  o.endpoints = {ep};
  o.ca_file = certs + "/ca.pem";
  o.cert_file = certs + "/client.pem";
  o.key_file = certs + "/client-key.pem";
  etcd::client c(o);
  const auto l = c.lease_grant(5);
  EXPECT_GT(c.lease_keepalive(l.id).ttl, 0);
  const auto rev = c.put("w", "v");
  auto w = c.watch("w", {}, rev + 1);
  c.delete_range("w");
  const auto m = next_event(w, 5s);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->events.size(), 1u);
  EXPECT_TRUE(m->events[0].is_delete);
#endif
}

// Round trips on this machine (not a timed assertion: printed for docs/benchmarks.md).
TEST(EtcdClient, RoundTripTimes) {
  REQUIRE_CLUSTER();
  auto c = make_client(eps);
  const auto p = unique_prefix("rtt");
  constexpr int n = 100;
  auto measure = [&](auto&& op) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) op(i);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  const auto put_us = measure([&](int i) { c.put(p + std::to_string(i), "v"); });
  const auto range_us = measure([&](int i) { EXPECT_EQ(c.range({p + std::to_string(i)}).kvs.size(), 1u); });
  const auto txn_us = measure([&](int i) {
    const auto k = p + "t" + std::to_string(i);
    EXPECT_TRUE(c.txn({{etcd::txn_compare::target::create_revision, etcd::txn_compare::relation::equal, k, 0, {}}},
                      {etcd::txn_op::put(k, "v"), etcd::txn_op::get({p, etcd::detail::prefix_end(p), 1})})
                    .succeeded);
  });
  const auto del_us = measure([&](int i) { c.delete_range(p + std::to_string(i)); });
  std::printf("round trips (mean of %d, µs): put %.0f, range %.0f, txn(create+range) %.0f, delete %.0f\n", n, put_us,
              range_us, txn_us, del_us);
  RecordProperty("put_us", std::to_string(put_us));
  RecordProperty("txn_us", std::to_string(txn_us));
  c.delete_range(p, etcd::detail::prefix_end(p));
}

}  // namespace etcd_client_test_ns
