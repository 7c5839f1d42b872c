// At most once through the gateway, with its SQLite journal. A gateway killed (SIGKILL) while a non-idempotent
// call runs upstream, and started again on the same journal, does not repeat that call when its client sends it
// again with the same idempotency key: the client gets `in_doubt`, and the upstream's effects log shows the
// effect once. The control, without a journal, repeats it. A call repeated with its key after it ended is
// answered from the journal (run once); the control, without a key, runs twice. And an upstream that dies is
// restarted, a retry-safe call on it retried; the control, a call that is not retry-safe, is not.
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gateway_test_support.hpp"

namespace gateway_journal_test_ns {

using namespace gateway_test;

namespace {
// A configuration with the upstream's `append` declared a plain write (not idempotent), with or without a
// journal.
fs::path config(const fs::path& dir, bool journal) {
  const json tools = {{"append", {{"writes", {"log"}}}}};
  json c = json::object();
  c["mcpServers"]["up"] = upstream(dir / "effects.log", {{"tools", tools}});
  c["gateway"]["audit"] = (dir / "audit.jsonl").string();
  if (journal) c["gateway"]["journal"] = (dir / "journal.db").string();
  const fs::path p = dir / (journal ? "journaled.json" : "plain.json");
  write_file(p, c.dump());
  return p;
}

// Sends append (taking 1.5 s upstream) with key "k1", kills the gateway 0.5 s later, starts another gateway
// and sends the same call with the same key: that call's result.
json killed_and_resent(const fs::path& dir, bool journal) {
  const fs::path cfg = config(dir, journal);
  {
    rpc first({gateway(), "--config", cfg.string()}, {}, dir / "first.stderr");
    first.initialize();
    first.send_call("append", {{"text", "once"}, {"ms", 1500}}, "k1");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    first.process().signal(SIGKILL);
    EXPECT_EQ(first.process().wait(), 128 + SIGKILL);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the orphaned upstream finishes the call
  rpc second({gateway(), "--config", cfg.string()}, {}, dir / "second.stderr");
  second.initialize();
  return second.call("append", {{"text", "once"}, {"ms", 1500}}, "k1");  // the same call: same tool, arguments
}
}  // namespace

TEST(GatewayJournal, AGatewayKilledMidCallDoesNotRepeatItOnTheSameJournal) {
  const auto dir = fresh_dir("killed");
  const json r = killed_and_resent(dir, true);
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_EQ(text_of(r).rfind("in_doubt: ", 0), 0u) << text_of(r);
  EXPECT_EQ(lines_of(dir / "effects.log"), std::vector<std::string>{"append once"}) << "the effect happened once";
  bool audited = false;
  for (const auto& line : lines_of(dir / "audit.jsonl"))
    audited = audited || json::parse(line).value("outcome", "") == "in_doubt";
  EXPECT_TRUE(audited) << "the audit log records the in-doubt call";

  // The control: without a journal the call sent again runs again.
  const auto control = fresh_dir("killed_control");
  const json c = killed_and_resent(control, false);
  EXPECT_FALSE(c.value("isError", false)) << c.dump();
  EXPECT_EQ(lines_of(control / "effects.log"), (std::vector<std::string>{"append once", "append once"}));
}

TEST(GatewayJournal, ACallRepeatedWithItsKeyIsAnsweredFromTheJournal) {
  const auto dir = fresh_dir("replay");
  const fs::path cfg = config(dir, true);
  {
    rpc client({gateway(), "--config", cfg.string()});
    client.initialize();
    const json a = client.call("append", {{"text", "keyed"}}, "k2");
    EXPECT_EQ(text_of(a), "appended");
    EXPECT_EQ(client.call("append", {{"text", "keyed"}}, "k2"), a) << "the same answer";
    // The control: without a key each call runs.
    client.call("append", {{"text", "unkeyed"}});
    client.call("append", {{"text", "unkeyed"}});
  }
  rpc restarted({gateway(), "--config", cfg.string()});  // and across restarts
  restarted.initialize();
  EXPECT_EQ(text_of(restarted.call("append", {{"text", "keyed"}}, "k2")), "appended");
  // A key used again for another call is refused.
  const json reused = restarted.call("append", {{"text", "other"}}, "k2");
  EXPECT_NE(reused.dump().find("idempotency_key_reused"), std::string::npos) << reused.dump();
  EXPECT_EQ(lines_of(dir / "effects.log"), (std::vector<std::string>{"append keyed", "append unkeyed", "append unkeyed"}));
}

// die_once exits the upstream process on its first call. Declared read-only (retry-safe), the call fails with
// a transient error, the upstream is restarted and the call retried: it answers. The control: undeclared
// (unknown: never retried; allowed by the configuration so that it runs at all), the call fails, and the next
// call finds the upstream restarted.
TEST(GatewayRecovery, AnUpstreamThatDiesIsRestartedAndOnlyARetrySafeCallIsRetried) {
  const auto dir = fresh_dir("restart");
  json tools = json::object();
  tools["die_once"]["reads"] = json::array({"nothing"});
  json c = json::object();
  c["mcpServers"]["up"] = upstream(dir / "effects.log", {{"tools", tools}}, dir / "started");
  c["gateway"]["audit"] = (dir / "audit.jsonl").string();
  c["gateway"]["retry"]["base_delay_ms"] = 10;
  write_file(dir / "gateway.json", c.dump());
  {
    rpc client({gateway(), "--config", (dir / "gateway.json").string()});
    client.initialize();
    const json r = client.call("die_once", {{"marker", (dir / "marker").string()}});
    EXPECT_EQ(text_of(r), "survived") << r.dump();
  }
  EXPECT_EQ(lines_of(dir / "started").size(), 2u) << "started, then restarted once";
  bool two_attempts = false;
  for (const auto& line : lines_of(dir / "audit.jsonl")) two_attempts = two_attempts || json::parse(line)["attempts"] == 2;
  EXPECT_TRUE(two_attempts) << read_file(dir / "audit.jsonl");

  const auto control = fresh_dir("restart_control");
  json allowed = json::object();
  allowed["die_once"]["approval"] = "allow";
  json cc = json::object();
  cc["mcpServers"]["up"] = upstream(control / "effects.log", {{"tools", allowed}}, control / "started");
  write_file(control / "gateway.json", cc.dump());
  rpc client({gateway(), "--config", (control / "gateway.json").string()});
  client.initialize();
  const json r = client.call("die_once", {{"marker", (control / "marker").string()}});
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_NE(text_of(r), "survived");
  EXPECT_EQ(text_of(client.call("die_once", {{"marker", (control / "marker").string()}})), "survived")
      << "the next call finds the upstream restarted";
}

}  // namespace gateway_journal_test_ns
