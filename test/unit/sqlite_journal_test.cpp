// The SQLite turn journal (journal.hpp, sqlite_journal.hpp) in the dispatcher and json_tool_host: ended calls are
// replayed (not run), in-doubt calls run again only if retry-safe, keys do not collide across turns, and journal
// faults (read-only directory, full disk, corrupt file, another version's journal) stop calls before they run,
// with an error that names the cause. The faults use real tmpfs mounts (the tests need CAP_SYS_ADMIN; without it
// they are skipped, saying so).
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <tool_effects/coordination.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/json.hpp>
#include <tool_effects/sqlite_journal.hpp>

#include "scratch_dirs.hpp"

namespace sqlite_journal_test_ns {

namespace te = tool_effects;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

fs::path fresh_dir(const std::string& name) { return te_test::scratch_dir("te_journal", name); }

struct ledger : te::resource<> {};
struct charge_card {
  using side_effects = te::effects<te::writes<ledger>, te::network>;
  std::atomic<int>* runs;
  int operator()(int amount) const {
    ++*runs;
    return amount;
  }
};
struct read_ledger {
  using side_effects = te::effects<te::reads<ledger>, te::idempotent>;
  std::atomic<int>* runs;
  std::string operator()() const {
    ++*runs;
    return "balance";
  }
};

std::string reason_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const te::call_failure& f) {
    return std::string(te::to_string(f.reason()));
  } catch (const te::journal_error& j) {
    return std::string("journal_error: ") + j.what();
  } catch (const std::exception& x) {
    return x.what();
  }
}

// A tmpfs mounted for one test (unmounted at the end). `ok()` false: mounting is not permitted here.
class tmpfs_mount {
 public:
  tmpfs_mount(const fs::path& dir, const std::string& options) : dir_(dir) {
    fs::create_directories(dir_);
    ok_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) == 0;
    if (!ok_) error_ = std::strerror(errno);
  }
  ~tmpfs_mount() {
    if (ok_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool remount_read_only() { return ::mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr) == 0; }
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  fs::path dir_;
  bool ok_ = false;
  std::string error_;
};

}  // namespace

TEST(SqliteJournal, AnEndedCallIsReplayedNotRunAgain) {
  const auto dir = fresh_dir("replay");
  te::sqlite_journal journal((dir / "j.db").string());
  std::atomic<int> charges{0}, reads{0};
  boost::asio::thread_pool pool(2);
  const auto opts = te::run_options{}.with(journal);
  for (int run = 0; run < 3; ++run) {
    auto [c, r] = te::run_plan(pool, opts, te::call(charge_card{&charges}, 42).with_idempotency_key("turn-1/charge"),
                               te::call(read_ledger{&reads}).with_idempotency_key("turn-1/read"));
    ASSERT_TRUE(c.has_value() && r.has_value());
    EXPECT_EQ(c.value(), 42);
    EXPECT_EQ(r.value(), "balance");
    EXPECT_EQ(c.replayed(), run > 0);
    EXPECT_EQ(r.replayed(), run > 0);
  }
  EXPECT_EQ(charges.load(), 1);
  EXPECT_EQ(reads.load(), 1);
  // A failure is recorded and replayed as the same failure.
  struct failing {
    using side_effects = te::effects<te::writes<ledger>>;
    int operator()() const { throw std::runtime_error("card declined"); }
  };
  for (int run = 0; run < 2; ++run) {
    auto [f] = te::run_plan(pool, opts, te::call(failing{}).with_idempotency_key("turn-1/fail"));
    ASSERT_TRUE(f.has_error());
    EXPECT_EQ(f.replayed(), run > 0);
    EXPECT_EQ(reason_of(f.error()), "card declined");
  }
  // Without a key a journaled call cannot be matched across runs: it does not run.
  auto [k] = te::run_plan(pool, opts, te::call(charge_card{&charges}, 1));
  ASSERT_TRUE(k.has_error());
  EXPECT_NE(reason_of(k.error()).find("needs an idempotency key"), std::string::npos) << reason_of(k.error());
  EXPECT_EQ(charges.load(), 1);
}

// A journaled call under a coordinator starts once its record is committed, on another stack than its
// coordinated start: it still gets its grant's fencing token (attempt_context::fencing_token), which a fenced
// resource checks. (Before, the token was set for the synchronous start only, and such a call read 0.)
TEST(SqliteJournal, AJournaledCallUnderACoordinatorGetsItsFencingToken) {
  const auto dir = fresh_dir("fencing");
  te::sqlite_journal journal((dir / "j.db").string());
  struct fenced_write {
    using side_effects = te::effects<te::writes<ledger>>;
    std::uint64_t operator()(const te::attempt_context& ctx) const { return ctx.fencing_token; }
  };
  boost::asio::thread_pool pool(2);
  const auto opts = te::run_options{}.with(te::local_coordinator{}).with(journal);
  auto [a, b] = te::run_plan(pool, opts, te::call(fenced_write{}).with_idempotency_key("fenced/a"),
                             te::call(fenced_write{}).with_idempotency_key("fenced/b"));
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_GT(a.value(), 0u);
  EXPECT_GT(b.value(), a.value()) << "the second write's grant is the later one";
  // The same turn without the journal: the synchronous start, which always had the token.
  auto [c] = te::run_plan(pool, te::run_options{}.with(te::local_coordinator{}), te::call(fenced_write{}));
  ASSERT_TRUE(c.has_value());
  EXPECT_GT(c.value(), 0u);
}

TEST(SqliteJournal, AnInDoubtCallRunsAgainOnlyIfRetrySafe) {
  const auto dir = fresh_dir("doubt");
  te::sqlite_journal journal((dir / "j.db").string());
  journal.record_started("t/charge", "charge_card");  // an earlier run died after this
  journal.record_started("t/read", "read_ledger");
  std::atomic<int> charges{0}, reads{0};
  boost::asio::thread_pool pool(2);
  auto [c, r] = te::run_plan(pool, te::run_options{}.with(journal),
                             te::call(charge_card{&charges}, 5).with_idempotency_key("t/charge"),
                             te::call(read_ledger{&reads}).with_idempotency_key("t/read"));
  ASSERT_TRUE(c.has_error());
  EXPECT_EQ(reason_of(c.error()), "in_doubt");
  EXPECT_EQ(charges.load(), 0) << "a non-idempotent in-doubt call is never run silently again";
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r.replayed());
  EXPECT_EQ(reads.load(), 1) << "a retry-safe in-doubt call runs again";
  // The control: without the journal the same call runs.
  auto [c2] = te::run_plan(pool, te::call(charge_card{&charges}, 5).with_idempotency_key("t/charge"));
  EXPECT_TRUE(c2.has_value());
  EXPECT_EQ(charges.load(), 1);
}

TEST(SqliteJournal, AnInDoubtCallGoesToTheApproverToldItMayHaveHappened) {
  const auto dir = fresh_dir("doubt_approver");
  te::sqlite_journal journal((dir / "j.db").string());
  journal.record_started("a/charge", "charge_card");
  journal.record_started("b/charge", "charge_card");
  std::atomic<int> charges{0};
  std::vector<bool> told;
  boost::asio::thread_pool pool(1);
  for (const bool approve : {true, false}) {
    const auto opts = te::run_options{}.with(journal).with(te::approver([&, approve](const te::confirmation_request& r) {
      told.push_back(r.may_already_have_happened);
      return approve ? te::confirmation::approve : te::confirmation::deny;
    }));
    auto [c] = te::run_plan(pool, opts, te::call(charge_card{&charges}, 5).with_idempotency_key(approve ? "a/charge" : "b/charge"));
    if (approve) {
      ASSERT_TRUE(c.has_value()) << reason_of(c.error());
    } else {
      ASSERT_TRUE(c.has_error());
      EXPECT_EQ(reason_of(c.error()), "in_doubt");
    }
  }
  EXPECT_EQ(charges.load(), 1) << "run again only when approved";
  ASSERT_EQ(told.size(), 2u);
  EXPECT_TRUE(told[0] && told[1]) << "the approver was told the call may already have happened";
  EXPECT_EQ(journal.find("a/charge")->at, te::journal_entry::state::ended);
}

TEST(SqliteJournal, JsonToolHostKeysDoNotCollideAcrossTurns) {
  const auto dir = fresh_dir("json");
  te::sqlite_journal journal((dir / "j.db").string());
  te::tool_registry<> reg;
  te::json_tool_host<> host(reg);
  std::atomic<int> sends{0};
  std::vector<std::string> keys;
  std::mutex m;
  host.add(te::dynamic_tool{"send_email", te::describe_runtime("send_email", {te::effect::network}, {}), {}},
           [&](const te::attempt_context& ctx, const json& a) -> json {
             ++sends;
             std::lock_guard l(m);
             keys.push_back(ctx.idempotency_key);
             return a;
           });
  const auto calls = te::parse_tool_calls(R"([{"id": "1", "name": "send_email", "arguments": {"to": "a"}}])");
  boost::asio::thread_pool pool(2);
  // Default scope, no journal: each run is a new turn with new keys.
  (void)host.run(pool, te::run_options{}, calls);
  (void)host.run(pool, te::run_options{}, calls);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_NE(keys[0], keys[1]) << "two turns with the default scope shared a key";
  // A journaled turn needs a scope.
  EXPECT_THROW((void)host.run(pool, te::run_options{}.with(journal), calls), std::invalid_argument);
  // The same scope twice: replayed; another scope: a new call.
  const auto a = host.run(pool, te::run_options{}.with(journal), calls, "session-1/turn-1");
  const auto b = host.run(pool, te::run_options{}.with(journal), calls, "session-1/turn-1");
  const auto c = host.run(pool, te::run_options{}.with(journal), calls, "session-1/turn-2");
  ASSERT_TRUE(a[0].has_value() && b[0].has_value() && c[0].has_value());
  EXPECT_FALSE(a[0].replayed());
  EXPECT_TRUE(b[0].replayed());
  EXPECT_EQ(b[0].value(), (json{{"to", "a"}}));
  EXPECT_FALSE(c[0].replayed());
  EXPECT_EQ(sends.load(), 4);
}

// ---------------------------------------------------------------------------------------------------------------
// Hostile journal files (issue 26.9): a file someone else wrote or can write is refused at open, with an error
// naming the file and the reason, so no call runs against it. Each case runs the same turn twice when the file
// is accepted (a charge of 42, then its replay): with the protections of sqlite_journal_impl removed, the
// forgery shows (999999 replayed, or a charge skipped), which is how each test fails.
// ---------------------------------------------------------------------------------------------------------------

namespace {

// Makes a journal at `path` (as this version writes it), then runs `sql` on it directly, as an attacker with
// write access to the file would.
void craft(const std::string& path, const std::string& sql) {
  { te::sqlite_journal j(path); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// Opens `path` and expects it refused with `why` in the message (and the path). When it is not refused, runs a
// charge of 42 twice (and a read before it) and reports what the journal made of it.
void expect_refused(const std::string& path, const std::string& why) {
  std::optional<te::sqlite_journal> journal;
  try {
    journal.emplace(path);
  } catch (const te::journal_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("tool_effects: the journal '" + path + "' is refused: "), std::string::npos) << what;
    EXPECT_NE(what.find(why), std::string::npos) << what;
    return;
  }
  std::atomic<int> charges{0}, reads{0};
  boost::asio::thread_pool pool(2);
  std::string replayed;
  for (int run = 0; run < 2; ++run) {
    auto [r, c] = te::run_plan(pool, te::run_options{}.with(*journal),
                               te::call(read_ledger{&reads}).with_idempotency_key("t/read"),
                               te::call(charge_card{&charges}, 42).with_idempotency_key("t/charge"));
    if (c.has_value()) replayed += std::to_string(c.value()) + (c.replayed() ? " (replayed) " : " (ran) ");
    else replayed += reason_of(c.error()) + " ";
  }
  ADD_FAILURE() << "the journal was opened, not refused (" << why << "); the charge of 42 gave: " << replayed
                << "; it ran " << charges.load() << " time(s)";
}

}  // namespace

TEST(SqliteJournalHostile, ABenignJournalIsOpenedAndReplaysWhatTheToolReturned) {
  const auto dir = fresh_dir("benign");
  const auto path = (dir / "j.db").string();
  craft(path, "SELECT 1");
  te::sqlite_journal journal(path);
  std::atomic<int> charges{0}, reads{0};
  boost::asio::thread_pool pool(2);
  for (int run = 0; run < 2; ++run) {
    auto [r, c] = te::run_plan(pool, te::run_options{}.with(journal),
                               te::call(read_ledger{&reads}).with_idempotency_key("t/read"),
                               te::call(charge_card{&charges}, 42).with_idempotency_key("t/charge"));
    ASSERT_TRUE(c.has_value()) << reason_of(c.error());
    EXPECT_EQ(c.value(), 42);
    EXPECT_EQ(c.replayed(), run == 1);
  }
  EXPECT_EQ(charges.load(), 1);
}

TEST(SqliteJournalHostile, ATriggerThatForgesResultsIsRefused) {
  const auto dir = fresh_dir("forge");
  const auto path = (dir / "j.db").string();
  craft(path, "CREATE TRIGGER forge AFTER UPDATE ON calls WHEN NEW.state = 1 AND NEW.result <> '999999' "
              "BEGIN UPDATE calls SET result = '999999' WHERE key = NEW.key; END");
  expect_refused(path, "it has a trigger 'forge' that is not the journal's");
}

TEST(SqliteJournalHostile, ATriggerThatMarksACallEndedThatNeverRanIsRefused) {
  const auto dir = fresh_dir("skip");
  const auto path = (dir / "j.db").string();
  craft(path, "CREATE TRIGGER skip AFTER INSERT ON calls WHEN NEW.key = 't/read' BEGIN "
              "INSERT OR REPLACE INTO calls(key, name, state, failed, result) VALUES('t/charge', 'charge_card', 1, 0, "
              "'42'); END");
  expect_refused(path, "it has a trigger 'skip' that is not the journal's");
}

TEST(SqliteJournalHostile, AViewIsRefused) {
  const auto dir = fresh_dir("view");
  const auto path = (dir / "j.db").string();
  craft(path, "CREATE VIEW pending AS SELECT key FROM calls WHERE state = 0");
  expect_refused(path, "it has a view 'pending' that is not the journal's");
}

TEST(SqliteJournalHostile, AnExtraTableOrAnAlteredOneIsRefused) {
  const auto dir = fresh_dir("extra");
  const auto extra = (dir / "extra.db").string();
  craft(extra, "CREATE TABLE notes(x TEXT)");
  expect_refused(extra, "it has a table 'notes' that is not the journal's");
  const auto altered = (dir / "altered.db").string();
  craft(altered, "ALTER TABLE calls ADD COLUMN forged TEXT DEFAULT '999999'");
  expect_refused(altered, "its table 'calls' is not the journal's");
  const auto index = (dir / "index.db").string();
  craft(index, "CREATE INDEX by_name ON calls(name)");
  expect_refused(index, "it has an index 'by_name' that is not the journal's");
}

TEST(SqliteJournalHostile, ASymbolicLinkIsRefused) {
  const auto dir = fresh_dir("symlink");
  const auto target = (dir / "real.db").string();
  { te::sqlite_journal j(target); }  // the control: the file itself opens
  fs::create_symlink(target, dir / "link.db");
  expect_refused((dir / "link.db").string(), "it is a symbolic link");
  // A dangling link (the attacker's file does not exist yet) is not followed to create one either.
  fs::create_symlink(dir / "elsewhere.db", dir / "dangling.db");
  expect_refused((dir / "dangling.db").string(), "it is a symbolic link");
  EXPECT_FALSE(fs::exists(dir / "elsewhere.db"));
  te::sqlite_journal again(target);
  EXPECT_FALSE(again.find("x"));
}

TEST(SqliteJournalHostile, TheFileIsCreatedWithMode0600AndAFileOthersCanWriteIsRefused) {
  const auto dir = fresh_dir("mode");
  const auto path = (dir / "j.db").string();
  const ::mode_t old_umask = ::umask(0);  // the most permissive process: SQLite alone would create 0644
  {
    te::sqlite_journal j(path);
    j.record_started("k", "charge_card");
  }
  ::umask(old_umask);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    struct ::stat st {};
    if (::stat((path + suffix).c_str(), &st) != 0) continue;  // -wal and -shm are removed at the last close
    EXPECT_EQ(st.st_mode & 0777, 0600u) << path << suffix;
  }
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::others_read);
  { te::sqlite_journal j(path); }  // the control: readable by others, writable by the owner only
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::group_write | fs::perms::others_read | fs::perms::others_write);
  expect_refused(path, "it is writable by other users (mode 0666; 0600 expected)");
}

TEST(SqliteJournalFaults, ACorruptFileIsRefusedNamingIt) {
  const auto dir = fresh_dir("corrupt");
  const auto path = (dir / "j.db").string();
  {
    std::ofstream f(path, std::ios::binary);
    for (int i = 0; i < 512; ++i) f << "not a database, just bytes ";
  }
  try {
    te::sqlite_journal j(path);
    FAIL() << "opened a corrupt journal";
  } catch (const te::journal_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a database"), std::string::npos) << e.what();
  }
}

TEST(SqliteJournalFaults, AJournalOfAnotherVersionIsRefused) {
  const auto dir = fresh_dir("version");
  const auto path = (dir / "j.db").string();
  { te::sqlite_journal j(path); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET v = 'tool_effects.journal.v9' WHERE k = 'schema'", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  try {
    te::sqlite_journal j(path);
    FAIL() << "opened another version's journal";
  } catch (const te::journal_error& e) {
    EXPECT_NE(std::string(e.what()).find("another version (schema 'tool_effects.journal.v9'"), std::string::npos)
        << e.what();
  }
}

TEST(SqliteJournalFaults, AReadOnlyDirectoryIsRefused) {
  const auto dir = fresh_dir("ro");
  tmpfs_mount mnt(dir / "mnt", "size=1m");
  if (!mnt.ok()) GTEST_SKIP() << "cannot mount a tmpfs here (" << mnt.error() << "): read-only case not run";
  const auto existing = (dir / "mnt" / "existing.db").string();
  { te::sqlite_journal j(existing); }
  ASSERT_TRUE(mnt.remount_read_only());
  EXPECT_THROW(te::sqlite_journal((dir / "mnt" / "new.db").string()), te::journal_error);
  try {
    te::sqlite_journal j(existing);
    // Opening may succeed on a read-only file system; recording must not, and then no call runs.
    std::atomic<int> charges{0};
    boost::asio::thread_pool pool(1);
    auto [c] = te::run_plan(pool, te::run_options{}.with(j), te::call(charge_card{&charges}, 1).with_idempotency_key("k"));
    ASSERT_TRUE(c.has_error());
    EXPECT_NE(reason_of(c.error()).find("journal_error"), std::string::npos) << reason_of(c.error());
    EXPECT_EQ(charges.load(), 0);
  } catch (const te::journal_error& e) {
    EXPECT_NE(std::string(e.what()).find(existing), std::string::npos) << e.what();
  }
}

TEST(SqliteJournalFaults, AFullDiskStopsCallsBeforeTheyRun) {
  const auto dir = fresh_dir("full");
  tmpfs_mount mnt(dir / "mnt", "size=256k");
  if (!mnt.ok()) GTEST_SKIP() << "cannot mount a tmpfs here (" << mnt.error() << "): full-disk case not run";
  te::sqlite_journal journal((dir / "mnt" / "j.db").string());
  {
    // Fill the file system.
    std::FILE* f = std::fopen((dir / "mnt" / "filler").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::vector<char> block(4096, 'x');
    while (std::fwrite(block.data(), 1, block.size(), f) == block.size() && std::fflush(f) == 0) {
    }
    std::fclose(f);
    // Leave room for a few records, so that calls are recorded and run until the disk is full.
    const auto filler = dir / "mnt" / "filler";
    fs::resize_file(filler, fs::file_size(filler) - 48 * 1024);
  }
  std::atomic<int> ran_without_record{0}, ran{0};
  struct recorded_charge {
    using side_effects = te::effects<te::writes<ledger>>;
    te::sqlite_journal j;
    std::string key;
    std::atomic<int>* ran;
    std::atomic<int>* without;
    int operator()() const {
      ++*ran;
      if (!j.find(key)) ++*without;
      return 1;
    }
  };
  boost::asio::thread_pool pool(1);
  int refused = 0;
  for (int i = 0; i < 200 && refused == 0; ++i) {
    const std::string key = "k" + std::to_string(i) + std::string(200, 'p');
    auto [c] = te::run_plan(pool, te::run_options{}.with(journal),
                            te::call(recorded_charge{journal, key, &ran, &ran_without_record}).with_idempotency_key(key));
    if (c.has_error()) {
      ++refused;
      const auto why = reason_of(c.error());
      EXPECT_NE(why.find("journal_error"), std::string::npos) << why;
      EXPECT_TRUE(why.find("full") != std::string::npos || why.find("disk") != std::string::npos) << why;
    }
  }
  EXPECT_EQ(refused, 1) << "the full disk was never noticed";
  EXPECT_EQ(ran_without_record.load(), 0) << "a call ran without its started record";
  EXPECT_GT(ran.load(), 0) << "no call was recorded before the disk filled (the case proves nothing)";
  std::printf("full disk: %d calls recorded before the tmpfs filled\n", ran.load());
}

// ---------------------------------------------------------------------------------------------------------------
// Group commit (issues 29.2 and 39.2): a turn of 16 non-idempotent calls with their own targets (all may run at
// once) on pools of 1, 2, 4 and 16 threads. The fsync and fdatasync calls of the whole process are counted by
// strace (-f -c) around a child run of this binary (DISABLED_JournaledTurns: TE_TURNS turns on a pool of
// TE_THREADS, new keys each, a new journal file). Two figures per pool, each at most 3 per turn:
// - per turn as issue 39 counts it: the whole process's count for 5 turns, opening and closing the new journal
//   included, divided by 5 (issue 29's harness counted so: 171 for 5 turns);
// - the marginal count: (11 turns - 1 turn) / 10, without the open and close.
// Side by side, the control: the same turns through a journal without `record_batch` (one transaction per
// record, as before group commit), at least one sync per record.
// ---------------------------------------------------------------------------------------------------------------
namespace {

// The SQLite journal seen through the plain Journal interface: one record, one transaction.
struct one_record_at_a_time {
  te::sqlite_journal j;
  [[nodiscard]] std::optional<te::journal_entry> find(const std::string& key) const { return j.find(key); }
  void record_started(const std::string& key, std::string_view name) const { j.record_started(key, name); }
  void record_ended(const std::string& key, const te::journal_entry& e) const { j.record_ended(key, e); }
};
static_assert(te::Journal<one_record_at_a_time> && !te::BatchJournal<one_record_at_a_time>);

struct keyed_write {
  std::string key;
  std::atomic<int>* runs;
  int operator()() const {
    ++*runs;
    return 7;
  }
  [[nodiscard]] const std::string& idempotency_key() const noexcept { return key; }
};

// Runs `turns` turns of 16 calls on a pool of `threads` with a journal at `db` (batched or not); returns how many
// calls ran.
int run_journaled_turns(const std::string& db, int turns, int threads, bool batched) {
  std::vector<te::call_description> d;
  for (int i = 0; i < 16; ++i)
    d.push_back(te::describe_runtime("charge", {}, {{"ledger", te::access_mode::write, std::to_string(i)}}));
  std::atomic<int> runs{0};
  boost::asio::thread_pool pool(static_cast<std::size_t>(threads));
  te::sqlite_journal journal(db);
  for (int t = 0; t < turns; ++t) {
    std::vector<keyed_write> tasks;
    for (int i = 0; i < 16; ++i) tasks.push_back({"turn-" + std::to_string(t) + "/" + std::to_string(i), &runs});
    const auto check = [&](const auto& out) {
      for (const auto& o : out)
        if (!o.has_value() || o.replayed()) throw std::runtime_error("a journaled call did not run");
    };
    if (batched) check(te::run_plan(pool, te::run_options{}.with(journal), std::span<const te::call_description>(d), tasks));
    else check(te::run_plan(pool, te::run_options{}.with(one_record_at_a_time{journal}),
                            std::span<const te::call_description>(d), tasks));
  }
  return runs.load();
}

// fsync + fdatasync calls of a child run of this binary with `turns` turns on a pool of `threads`, a new journal
// file (strace -f -c); -1: strace or the child failed.
long count_syncs(const fs::path& dir, int turns, int threads, bool batched) {
  const auto db = dir / ("j" + std::to_string(turns) + "_" + std::to_string(threads) + (batched ? "b" : "p") + ".db");
  const auto out = dir / "strace.txt";
  // LeakSanitizer refuses to run under ptrace (the ASan build's child would exit non-zero): leaks are not what
  // this child is run for.
  const std::string cmd = "ASAN_OPTIONS=detect_leaks=0 TE_TURNS=" + std::to_string(turns) +
                          " TE_THREADS=" + std::to_string(threads) + " TE_BATCHED=" + (batched ? "1" : "0") +
                          " TE_DB='" + db.string() + "' strace -f -qq -c -e trace=fsync,fdatasync -o '" +
                          out.string() + "' " + fs::read_symlink("/proc/self/exe").string() +
                          " --gtest_also_run_disabled_tests --gtest_filter=SqliteJournalGroupCommit.DISABLED_JournaledTurns"
                          " > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return -1;
  std::ifstream in(out);
  long total = 0;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < line.size();) {
      const auto b = line.find_first_not_of(' ', i);
      if (b == std::string::npos) break;
      const auto e = line.find(' ', b);
      tokens.push_back(line.substr(b, e == std::string::npos ? std::string::npos : e - b));
      i = e == std::string::npos ? line.size() : e;
    }
    if (tokens.size() >= 5 && (tokens.back() == "fsync" || tokens.back() == "fdatasync")) total += std::stol(tokens[3]);
  }
  return total;
}

}  // namespace

TEST(SqliteJournalGroupCommit, DISABLED_JournaledTurns) {
  const char* turns = std::getenv("TE_TURNS");
  const char* threads = std::getenv("TE_THREADS");
  const char* db = std::getenv("TE_DB");
  const char* batched = std::getenv("TE_BATCHED");
  ASSERT_TRUE(turns && threads && db && batched) << "run by SqliteJournalGroupCommit.AtMostThreeSyncsPerSixteenCallTurn";
  const int n = std::atoi(turns);
  EXPECT_EQ(run_journaled_turns(db, n, std::atoi(threads), std::string(batched) == "1"), 16 * n);
}

TEST(SqliteJournalGroupCommit, AtMostThreeSyncsPerSixteenCallTurn) {
  if (std::system("strace -V > /dev/null 2>&1") != 0) GTEST_SKIP() << "strace is not installed";
  const auto dir = fresh_dir("group_commit");
  for (const int threads : {1, 2, 4, 16}) {
    const long b1 = count_syncs(dir, 1, threads, true), b5 = count_syncs(dir, 5, threads, true),
               b11 = count_syncs(dir, 11, threads, true);
    ASSERT_TRUE(b1 >= 0 && b5 >= 0 && b11 >= 0) << "strace or the child run failed";
    const double amortized = static_cast<double>(b5) / 5, marginal = static_cast<double>(b11 - b1) / 10;
    std::printf("pool of %2d: fsync+fdatasync per 16-call turn %.1f (5 turns, open and close included: %ld), "
                "%.1f marginal (%ld/%ld for 1/11 turns)\n",
                threads, amortized, b5, marginal, b1, b11);
    EXPECT_LE(amortized, 3.0) << "pool of " << threads;
    EXPECT_LE(marginal, 3.0) << "pool of " << threads;
  }
  const long p1 = count_syncs(dir, 1, 2, false), p11 = count_syncs(dir, 11, 2, false);
  ASSERT_TRUE(p1 >= 0 && p11 >= 0) << "strace or the child run failed";
  const double plain = static_cast<double>(p11 - p1) / 10;
  std::printf("control, one record per transaction (pool of 2): %.1f per turn (%ld/%ld for 1/11 turns)\n", plain, p1,
              p11);
  EXPECT_GE(plain, 32.0) << "the control: one transaction per record syncs at least once per record";
}

// The awaitable form (async_run_plan) through the batch journal: the turn's records are committed before its
// outcomes come back (the engine's end flushes them), so a second run replays every call.
TEST(SqliteJournalGroupCommit, TheAwaitableFormCommitsATurnBeforeItReturns) {
  const auto dir = fresh_dir("async");
  te::sqlite_journal journal((dir / "j.db").string());
  std::atomic<int> charges{0};
  boost::asio::thread_pool pool(2);
  for (int run = 0; run < 2; ++run) {
    auto f = boost::asio::co_spawn(
        pool,
        [&]() -> boost::asio::awaitable<int> {
          auto [a, b, c] = co_await te::async_run_plan(te::run_options{}.with(journal),
                                                       te::call(charge_card{&charges}, 1).with_idempotency_key("a/1"),
                                                       te::call(charge_card{&charges}, 2).with_idempotency_key("a/2"),
                                                       te::call(charge_card{&charges}, 3).with_idempotency_key("a/3"));
          int replayed = 0;
          for (const auto* o : {&a, &b, &c}) {
            EXPECT_TRUE(o->has_value());
            replayed += o->replayed() ? 1 : 0;
          }
          // Every ended record is in the file once the turn has returned.
          for (const char* k : {"a/1", "a/2", "a/3"}) {
            const auto e = journal.find(k);
            EXPECT_TRUE(e && e->at == te::journal_entry::state::ended) << k;
          }
          co_return replayed;
        },
        boost::asio::use_future);
    EXPECT_EQ(f.get(), run == 0 ? 0 : 3);
  }
  EXPECT_EQ(charges.load(), 3);
}

// A turn that ends while its engine is still being started: a replayed turn (every call already ended in the
// journal) completes inside start(), so async_run_plan's coroutine is resumed and finishes on the pool's other
// thread, and its frame (the executor, the options) is freed, while the thread that started the engine still
// returns through start_turn. start_turn used to read the executor after start(), to release the journal's
// hold: a heap-use-after-free that TSan reported in the landing CI of the test above. It now reads only copies
// taken before. Control, under TSan: without the copies this test failed in each of three runs (and the test
// above within 0-34 of 100 repetitions); with them it passed. The replays also charge nothing twice.
TEST(SqliteJournalGroupCommit, AnAwaitableTurnThatEndsDuringItsStartIsNotReadAfterIt) {
  const auto dir = fresh_dir("async_end_in_start");
  te::sqlite_journal journal((dir / "j.db").string());
  std::atomic<int> charges{0};
  boost::asio::thread_pool pool(2);
  constexpr int turns = 100;
  int replayed = 0;
  for (int t = 0; t <= turns; ++t) {  // turn 0 runs the calls; the others replay them
    auto f = boost::asio::co_spawn(
        pool,
        [&]() -> boost::asio::awaitable<int> {
          auto [a, b, c] = co_await te::async_run_plan(te::run_options{}.with(journal),
                                                       te::call(charge_card{&charges}, 1).with_idempotency_key("r/1"),
                                                       te::call(charge_card{&charges}, 2).with_idempotency_key("r/2"),
                                                       te::call(charge_card{&charges}, 3).with_idempotency_key("r/3"));
          int n = 0;
          for (const auto* o : {&a, &b, &c}) n += o->has_value() && o->replayed() ? 1 : 0;
          co_return n;
        },
        boost::asio::use_future);
    replayed += f.get();
  }
  EXPECT_EQ(replayed, 3 * turns);
  EXPECT_EQ(charges.load(), 3);
}

}  // namespace sqlite_journal_test_ns
