// The crash suite of the turn journal: a child process runs turns through json_tool_host with a SQLite journal
// and is SIGKILLed at a random moment; then the same turns run again (same scopes, same journal). The tools'
// non-idempotent effects are recorded in a file outside the journal (appended and fsynced before the tool
// returns). Pass, for every kill: every non-idempotent effect happened at most once; every call that had ended
// before the kill is replayed, not re-run; every non-idempotent call the kill left in doubt is reported as
// in_doubt. The control: the same re-run without the journal repeats effects.
// The suite itself is test/unit/crash_rerun_support.hpp (shared with etcd_journal_test.cpp); this file gives it
// the SQLite journal.
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>

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

}  // namespace sqlite_crash_test_ns
