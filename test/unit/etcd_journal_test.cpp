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
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

TEST(EtcdJournalCrash, ControlWithoutTheJournalTheReRunRepeatsEffects) {
  crash_rerun::control_without_journal_repeats_effects();
}

}  // namespace etcd_journal_test_ns
