// The crash suite of the turn journal: a child process runs turns through json_tool_host with a SQLite journal
// and is SIGKILLed at a random moment; then the same turns run again (same scopes, same journal). The tools'
// non-idempotent effects are recorded in a file outside the journal (appended and fsynced before the tool
// returns). Pass, for every kill: every non-idempotent effect happened at most once; every call that had ended
// before the kill is replayed, not re-run; every non-idempotent call the kill left in doubt is reported as
// in_doubt. The control: the same re-run without the journal repeats effects.
// The suite itself is test/unit/crash_rerun_support.hpp (shared with etcd_journal_test.cpp); this file gives it
// the SQLite journal. SqliteJournalCrash.ACrashBetweenTheStartedRecordsAndTheCallsLeavesThemInDoubt kills the
// process at one precise moment instead: once the started records are durable, before any call starts.
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <tool_effects/sqlite_journal.hpp>

#include "crash_rerun_support.hpp"

namespace sqlite_crash_test_ns {

namespace te = tool_effects;
namespace fs = std::filesystem;

namespace {

// The journal of a run: a SQLite file in the run's directory.
struct sqlite_backend {
  std::chrono::milliseconds settle{0};  // a local file: nothing is in flight after the kill
  std::string describe;

  std::string location(const fs::path& dir, int) const { return (dir / "journal.db").string(); }
  template <class F>
  void with_journal(const std::string& db, F&& f) const {
    te::sqlite_journal journal(db);
    f(journal);
  }
  // key -> state (0 started, 1 ended), read directly from the file.
  std::map<std::string, int> states(const std::string& db_path) const {
    std::map<std::string, int> out;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      return out;
    }
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT key, state FROM calls", -1, &st, nullptr) == SQLITE_OK) {
      while (sqlite3_step(st) == SQLITE_ROW)
        out[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] = sqlite3_column_int(st, 1);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }
};

}  // namespace

TEST(SqliteJournalCrash, KilledTurnsRunAgainDoEachEffectAtMostOnce) {
  const fs::path root = fs::temp_directory_path() / ("te_crash_" + std::to_string(::getpid()));
  fs::create_directories(root);
  // A tmpfs when permitted: a SIGKILL loses no page cache, so the file system's speed is all it changes (the
  // suite tests process death, not power loss); otherwise the temporary directory.
  const bool on_tmpfs = ::mount("tmpfs", root.c_str(), "tmpfs", 0, "size=64m") == 0;
  sqlite_backend b;
  b.describe = on_tmpfs ? "SQLite on a tmpfs" : "SQLite in the temporary directory";
  crash_rerun::kill_and_rerun(b, root, 200);
  if (on_tmpfs) ::umount2(root.c_str(), MNT_DETACH);
  fs::remove_all(root);
}

TEST(SqliteJournalCrash, ControlWithoutTheJournalTheReRunRepeatsEffects) {
  crash_rerun::control_without_journal_repeats_effects();
}

// ---------------------------------------------------------------------------------------------------------------
// A crash between a call's started record and its start (issue 39.2). The dispatcher commits the started records
// of the calls that become ready together, and a call starts only from its commit's completion, posted once the
// commit is durable; so the started records of a whole group are on disk before any of its calls starts, and a
// crash in between leaves every call of the group started-but-not-ended: in doubt. The child below dies (SIGKILL,
// the whole process) inside the journal's record_batch, right after the commit of the turn's first group
// returned. In the suite's turn that group is calls 1, 2 and 4 (two emails, whose appends commute, and the first
// balance read); call 3 (the charge, a write of the ledger) waits for the read, and call 5 for the charge. So the
// crash leaves 1, 2 and 4 recorded as started and none of them run, and no record of 3 and 5. The re-run must
// report the non-idempotent 1 and 4 as in_doubt without running them (the journal's contract: it cannot know
// that they did not run), run the idempotent read 2 again (retry-safe) and 3 and 5 for the first time; asked
// with an approver that approves, it runs 1 and 4 (once). Control: the same crash re-run through a journal that
// hides started records (as a journal without the in-doubt state would) runs 1 and 4, so the test would catch a
// dispatcher that re-runs them.
// ---------------------------------------------------------------------------------------------------------------
namespace {

// The SQLite journal, killing the process once a commit holding started records is durable.
struct dies_after_started_commit {
  te::sqlite_journal j;
  [[nodiscard]] std::optional<te::journal_entry> find(const std::string& k) const { return j.find(k); }
  void record_started(const std::string& k, std::string_view n) const { j.record_started(k, n); }
  void record_ended(const std::string& k, const te::journal_entry& e) const { j.record_ended(k, e); }
  void record_batch(std::span<te::journal_record> records) const {
    j.record_batch(records);
    for (const auto& r : records)
      if (r.entry.at == te::journal_entry::state::started) ::kill(::getpid(), SIGKILL);
  }
  [[nodiscard]] te::journal_group_commit& group_commit() const noexcept { return j.group_commit(); }
};
static_assert(te::BatchJournal<dies_after_started_commit>);

// The SQLite journal as a journal without the in-doubt state would see it: a started record is not found.
struct hides_started_records {
  te::sqlite_journal j;
  [[nodiscard]] std::optional<te::journal_entry> find(const std::string& k) const {
    auto e = j.find(k);
    if (e && e->at == te::journal_entry::state::started) return std::nullopt;
    return e;
  }
  void record_started(const std::string& k, std::string_view n) const { j.record_started(k, n); }
  void record_ended(const std::string& k, const te::journal_entry& e) const { j.record_ended(k, e); }
};

std::string key_of_call(std::size_t i) {
  const auto& c = crash_rerun::turn_calls()[i];
  return te::idempotency_key(te::identify(c.name, te::identity_policy{}, c.arguments), "turn-0/" + c.id);
}

// The crash: the suite's turn in a child process through dies_after_started_commit; true if it died by SIGKILL.
bool crash_after_started_records(const fs::path& db, const fs::path& effects) {
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) {
    try {
      crash_rerun::session s(effects, false);
      boost::asio::thread_pool pool(4);
      (void)s.host.run(pool, te::run_options{}.with(dies_after_started_commit{te::sqlite_journal(db.string())}),
                       crash_rerun::turn_calls(), "turn-0");
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);  // not reached if the commit killed the process
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

}  // namespace

TEST(SqliteJournalCrash, ACrashBetweenTheStartedRecordsAndTheCallsLeavesThemInDoubt) {
  const fs::path dir = fs::temp_directory_path() / ("te_crash_window_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "control");
  const auto& calls = crash_rerun::turn_calls();
  ASSERT_EQ(calls.size(), 5u);
  const auto in_first_group = [&](std::size_t i) { return calls[i].id == "1" || calls[i].id == "2" || calls[i].id == "4"; };
  const auto in_doubt_after_crash = [&](std::size_t i) { return calls[i].id == "1" || calls[i].id == "4"; };
  for (const char* run : {"a", "control"}) {
    ASSERT_TRUE(crash_after_started_records(dir / run / "journal.db", dir / run / "effects.log"))
        << "the child did not die in its first commit";
    // What the crash left: the first group's started records, nothing of the others, and no call ran.
    const auto states = sqlite_backend{}.states((dir / run / "journal.db").string());
    EXPECT_EQ(states.size(), 3u);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (!in_first_group(i)) {
        EXPECT_EQ(states.count(key_of_call(i)), 0u) << "call " << calls[i].id << " was not ready, yet recorded";
      } else {
        ASSERT_TRUE(states.count(key_of_call(i))) << "no started record for call " << calls[i].id;
        EXPECT_EQ(states.at(key_of_call(i)), 0) << "call " << calls[i].id << " is not just started";
      }
    }
    EXPECT_TRUE(crash_rerun::effect_counts(dir / run / "effects.log").empty()) << "a call ran before the crash";
  }

  boost::asio::thread_pool pool(4);
  {  // The re-run: in doubt, not run, unless retry-safe; the calls the crash did not reach run.
    crash_rerun::session again(dir / "a" / "effects.log", false);
    te::sqlite_journal j((dir / "a" / "journal.db").string());
    const auto out = again.host.run(pool, te::run_options{}.with(j), calls, "turn-0");
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (in_doubt_after_crash(i)) {
        EXPECT_TRUE(crash_rerun::is_in_doubt(out[i])) << "call " << calls[i].id << " was not reported in doubt";
        EXPECT_EQ(again.executed_keys.count(key_of_call(i)), 0u) << "call " << calls[i].id << " ran again";
      } else {
        EXPECT_TRUE(out[i].has_value() && !out[i].replayed()) << "call " << calls[i].id << " did not run";
        EXPECT_EQ(again.executed_keys.count(key_of_call(i)), 1u) << "call " << calls[i].id;
      }
    }
    const auto effects = crash_rerun::effect_counts(dir / "a" / "effects.log");
    EXPECT_EQ(effects.size(), 1u) << "only the charge (call 3), which the crash did not reach, has run";
    EXPECT_EQ(effects.count(key_of_call(2)), 1u);
  }
  {  // Approved as "may already have happened": each in-doubt call runs, once.
    crash_rerun::session again(dir / "a" / "effects.log", false);
    te::sqlite_journal j((dir / "a" / "journal.db").string());
    int asked = 0;
    const auto approve = [&](const te::confirmation_request& r) {
      ++asked;
      EXPECT_TRUE(r.may_already_have_happened);
      return te::confirmation::approve;
    };
    const auto out = again.host.run(pool, te::run_options{}.with(j).with(te::approver(approve)), calls, "turn-0");
    EXPECT_EQ(asked, 2);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      EXPECT_TRUE(out[i].has_value()) << "call " << calls[i].id;
      EXPECT_EQ(out[i].replayed(), !in_doubt_after_crash(i)) << "call " << calls[i].id;
    }
    const auto effects = crash_rerun::effect_counts(dir / "a" / "effects.log");
    EXPECT_EQ(effects.size(), 3u);
    for (const auto& [key, n] : effects) EXPECT_EQ(n, 1) << key;
  }
  {  // Control: without the in-doubt state the re-run runs 1 and 4 again.
    crash_rerun::session again(dir / "control" / "effects.log", false);
    const auto out = again.host.run(
        pool, te::run_options{}.with(hides_started_records{te::sqlite_journal((dir / "control" / "journal.db").string())}),
        calls, "turn-0");
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (in_doubt_after_crash(i)) {
        EXPECT_EQ(again.executed_keys.count(key_of_call(i)), 1u) << "the control did not run call " << calls[i].id;
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace sqlite_crash_test_ns
