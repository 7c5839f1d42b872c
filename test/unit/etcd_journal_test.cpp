// The crash suite of the turn journal on etcd (etcd/journal.hpp), against the three-member cluster of the fixture
// etcd_cluster: a child process runs turns through json_tool_host with an etcd_journal and is SIGKILLed at a
// random moment; then the same turns run again in this process (same scopes, same cluster and prefix). The tools'
// non-idempotent effects are recorded in a file outside the journal (appended and fsynced before the tool
// returns). Pass, for every kill: every non-idempotent effect happened at most once; every call that had ended
// before the kill is replayed, not re-run; every non-idempotent call the kill left in doubt is reported as
// in_doubt. The control: the same re-run without the journal repeats effects.
// The suite itself is test/unit/crash_rerun_support.hpp (shared with sqlite_crash_test.cpp); this file gives it
// the etcd journal.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/dispatch.hpp>
#include <tool_effects/etcd.hpp>

#include "crash_rerun_support.hpp"
#include "etcd_test_support.hpp"

namespace etcd_journal_test_ns {

namespace te = tool_effects;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using etcd_test::endpoints;
te::etcd::client_options options() {
  te::etcd::client_options o;
  o.endpoints = endpoints();
  return o;
}

// The journal of a run: its own key prefix on the cluster.
struct etcd_backend {
  // A request the child sent just before it died may still be applied by etcd (the gateway does not cancel it).
  std::chrono::milliseconds settle{150};
  std::string describe = "etcd, three members";
  std::string base = "te-journal/" + std::to_string(std::random_device{}()) + "/";

  std::string location(const fs::path&, int run) const {
    return base + (run < 0 ? std::string("probe") : std::to_string(run)) + "/";
  }
  template <class F>
  void with_journal(const std::string& prefix, F&& f) const {
    te::etcd::etcd_journal journal(options(), prefix);
    f(journal);
  }
  // key -> state (0 started, 1 ended), read directly from etcd.
  std::map<std::string, int> states(const std::string& prefix) const {
    std::map<std::string, int> out;
    te::etcd::client c(options());
    const auto p = prefix + "J/";
    for (const auto& kv : c.range({p, te::etcd::detail::prefix_end(p)}).kvs)
      out[kv.key.substr(p.size())] = json::parse(kv.value).at("state") == "ended" ? 1 : 0;
    return out;
  }
};

}  // namespace

TEST(EtcdJournalCrash, KilledTurnsRunAgainDoEachEffectAtMostOnce) {
  if (endpoints().size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  const fs::path root = fs::temp_directory_path() / ("te_crash_" + std::to_string(::getpid()));
  fs::create_directories(root);
  etcd_backend b;
  crash_rerun::kill_and_rerun(b, root, 50);
  fs::remove_all(root);
}

// The claim: record_started creates the key only if it is absent (Txn(create_revision == 0)); an in-doubt record
// (started, never ended) is taken over by the run the dispatcher lets run it again; a record another run ended
// meanwhile is not overwritten (journal_error, the call does not run).
TEST(EtcdJournal, ClaimsTakeOverOnlyUnchangedInDoubtRecords) {
  if (endpoints().size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  const std::string prefix = "te-journal/" + std::to_string(std::random_device{}()) + "/";
  te::etcd::etcd_journal a(options(), prefix), b(options(), prefix);
  EXPECT_FALSE(a.find("k").has_value());
  a.record_started("k", "send_email");
  ASSERT_TRUE(b.find("k").has_value());
  EXPECT_EQ(b.find("k")->at, te::journal_entry::state::started);
  b.record_started("k", "send_email");  // in doubt: taken over
  te::journal_entry ended;
  ended.at = te::journal_entry::state::ended;
  ended.result = "42";
  a.record_ended("k", ended);
  const auto e = b.find("k");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->at, te::journal_entry::state::ended);
  EXPECT_EQ(e->result, "42");
  try {
    b.record_started("k", "send_email");
    ADD_FAILURE() << "an ended record was claimed again";
  } catch (const te::journal_error& x) {
    EXPECT_NE(std::string(x.what()).find("ended by another run"), std::string::npos) << x.what();
  }
  EXPECT_EQ(a.find("k")->result, "42");
  // an unreachable etcd is a journal fault naming etcd
  te::etcd::client_options dead;
  dead.endpoints = {"http://127.0.0.1:1"};
  dead.request_timeout = std::chrono::milliseconds(300);
  te::etcd::etcd_journal nowhere(dead, prefix);
  try {
    (void)nowhere.find("k");
    ADD_FAILURE() << "no fault";
  } catch (const te::journal_error& x) {
    EXPECT_NE(std::string(x.what()).find("etcd journal"), std::string::npos) << x.what();
  }
}

// Group commit on etcd (issue 29.2): the records of a turn of 16 calls that all start together go in one Txn
// each way, so their keys share one create revision (the *started* Txn) and one mod revision (the *ended* Txn):
// 2 write round trips and 2 quorum writes instead of 32. The control, side by side: the same turn through the
// plain Journal interface writes 16 + 16 revisions. A record whose claim is lost fails alone.
namespace {

struct one_record_at_a_time {
  te::etcd::etcd_journal j;
  [[nodiscard]] std::optional<te::journal_entry> find(const std::string& key) const { return j.find(key); }
  void record_started(const std::string& key, std::string_view name) const { j.record_started(key, name); }
  void record_ended(const std::string& key, const te::journal_entry& e) const { j.record_ended(key, e); }
};

struct keyed_write {
  std::string key;
  int operator()() const { return 7; }
  [[nodiscard]] const std::string& idempotency_key() const noexcept { return key; }
};

// {distinct create revisions, distinct mod revisions} of the keys under `prefix`, after a 16-call turn.
std::pair<std::size_t, std::size_t> revisions_of_a_turn(const std::string& prefix, bool batched) {
  te::etcd::etcd_journal journal(options(), prefix);
  std::vector<te::call_description> d;
  std::vector<keyed_write> tasks;
  for (int i = 0; i < 16; ++i) {
    d.push_back(te::describe_runtime("charge", {}, {{"ledger", te::access_mode::write, std::to_string(i)}}));
    tasks.push_back({"t/" + std::to_string(i)});
  }
  boost::asio::thread_pool pool(2);
  const std::span<const te::call_description> calls(d);
  const auto out = batched ? te::run_plan(pool, te::run_options{}.with(journal), calls, tasks)
                           : te::run_plan(pool, te::run_options{}.with(one_record_at_a_time{journal}), calls, tasks);
  for (const auto& o : out) EXPECT_TRUE(o.has_value() && !o.replayed());
  std::set<std::int64_t> created, modified;
  te::etcd::client c(options());
  const auto p = prefix + "J/";
  const auto kvs = c.range({p, te::etcd::detail::prefix_end(p)}).kvs;
  EXPECT_EQ(kvs.size(), 16u);
  for (const auto& kv : kvs) {
    EXPECT_EQ(json::parse(kv.value).at("state"), "ended");
    created.insert(kv.create_revision);
    modified.insert(kv.mod_revision);
  }
  return {created.size(), modified.size()};
}

}  // namespace

TEST(EtcdJournal, ATurnsRecordsGoInOneTxnEachWayAndALostClaimFailsAlone) {
  if (endpoints().size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  const std::string base = "te-journal/" + std::to_string(std::random_device{}()) + "/";
  const auto batched = revisions_of_a_turn(base + "batched/", true);
  const auto plain = revisions_of_a_turn(base + "plain/", false);
  std::printf("16-call turn on etcd: write Txns (distinct create + mod revisions) with group commit %zu + %zu, "
              "one record at a time %zu + %zu\n",
              batched.first, batched.second, plain.first, plain.second);
  EXPECT_EQ(batched.first, 1u);
  EXPECT_EQ(batched.second, 1u);
  EXPECT_EQ(plain.first, 16u) << "the control: one Txn per started record";
  EXPECT_EQ(plain.second, 16u);

  // A batch of three started records, the second already ended by another run: it alone fails.
  te::etcd::etcd_journal a(options(), base + "claims/"), other(options(), base + "claims/");
  other.record_started("k2", "charge");
  te::journal_entry ended;
  ended.at = te::journal_entry::state::ended;
  ended.result = "42";
  other.record_ended("k2", ended);
  std::vector<te::journal_record> records{{"k1", "charge", {}, {}}, {"k2", "charge", {}, {}}, {"k3", "charge", {}, {}}};
  a.record_batch(records);
  EXPECT_FALSE(records[0].error);
  ASSERT_TRUE(records[1].error) << "an ended record was claimed again";
  EXPECT_FALSE(records[2].error);
  EXPECT_EQ(a.find("k1")->at, te::journal_entry::state::started);
  EXPECT_EQ(a.find("k2")->result, "42");
  EXPECT_EQ(a.find("k3")->at, te::journal_entry::state::started);
}

TEST(EtcdJournalCrash, ControlWithoutTheJournalTheReRunRepeatsEffects) {
  crash_rerun::control_without_journal_repeats_effects();
}

}  // namespace etcd_journal_test_ns
