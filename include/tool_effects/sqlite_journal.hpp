// tool_effects/sqlite_journal.hpp — the embedded turn journal (journal.hpp)
// on SQLite 3 (component tool_effects::sqlite; links SQLite::SQLite3).
//
//   auto journal = tool_effects::sqlite_journal("turns.db");
//   auto out = host.run(pool, run_options{}.with(journal), calls, "session-7/turn-3");
//
// The file is in WAL mode with `synchronous=FULL`: a record is on disk
// (fsync of the WAL) before its call runs, so a call's *started* record
// exists before its side effect can happen. Group commit: the
// dispatcher records the *started* records of calls that start together in
// one transaction (`record_batch`, one fsync), and the *ended* records of
// calls that end together in another. Several processes may share a file (SQLite's
// locking; a busy timeout of 5 s). The file carries a schema version; a
// journal written by another version, a corrupt file, an unwritable
// directory or a full disk throw `journal_error` naming the file and cause.
//
// Defensive open: a journal file is input, possibly written by
// someone else. The file is refused ("tool_effects: the journal '<path>' is
// refused: <reason>") when it is a symbolic link, not a regular file,
// writable by group or others, or when its schema is not exactly the
// journal's (sqlite_journal_objects: no trigger, view, other table or index,
// no altered table). A new file is created with mode 0600. The connection
// runs with SQLITE_DBCONFIG_DEFENSIVE, trusted_schema=OFF, and triggers and
// views disabled. Reasoning: docs/coordination.md.
#ifndef TOOL_EFFECTS_SQLITE_JOURNAL_HPP
#define TOOL_EFFECTS_SQLITE_JOURNAL_HPP

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/journal.hpp>

namespace tool_effects {

/// The schema this version writes and reads (stored in the file's `meta` table).
inline constexpr std::string_view sqlite_journal_schema = "tool_effects.journal.v1";

namespace detail {

// The journal's schema: every object sqlite_schema may hold, with its exact SQL (null for the primary keys'
// automatic indexes). A file with anything else (a trigger, a view, another table or index, a column more) is
// refused: its schema is code that would run in our connection, or data we did not write.
struct sqlite_journal_object {
  std::string_view type, name, sql;  // sql "": none (an automatic index)
};
inline constexpr sqlite_journal_object sqlite_journal_objects[] = {
    {"table", "calls",
     "CREATE TABLE calls(key TEXT PRIMARY KEY, name TEXT NOT NULL, state INTEGER NOT NULL, "
     "failed INTEGER NOT NULL DEFAULT 0, result TEXT, reason TEXT, message TEXT)"},
    {"table", "meta", "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL)"},
    {"index", "sqlite_autoindex_calls_1", ""},
    {"index", "sqlite_autoindex_meta_1", ""},
};

class sqlite_journal_impl {
 public:
  explicit sqlite_journal_impl(std::string path) : path_(std::move(path)) {
    check_file();
    const int rc = sqlite3_open_v2(path_.c_str(), &db_,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX |
                                       SQLITE_OPEN_NOFOLLOW,
                                   nullptr);
    if (rc != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      const int extended = db_ ? sqlite3_extended_errcode(db_) : rc;
      sqlite3_close_v2(db_);
      db_ = nullptr;
      if (extended == SQLITE_CANTOPEN_SYMLINK) refuse("it is a symbolic link");
      throw journal_error(str_cat("tool_effects: cannot open the journal '", path_, "': ", why));
    }
    try {
      // Defensive: nothing in the file may run code in this connection or corrupt it through SQL (no
      // triggers or views at all, no functions from the schema, no writes to the schema or shadow tables).
      db_config(SQLITE_DBCONFIG_DEFENSIVE, 1);
      db_config(SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0);
      db_config(SQLITE_DBCONFIG_ENABLE_TRIGGER, 0);
      db_config(SQLITE_DBCONFIG_ENABLE_VIEW, 0);
      exec("PRAGMA trusted_schema=OFF");
      sqlite3_busy_timeout(db_, 5000);
      const bool created = open_in_wal_mode();
      // The schema and its version in one transaction, checked before anything is written to the file, and
      // nothing written if it is refused (close() rolls back). In a new file it goes without an fsync of its
      // own: see open_in_wal_mode.
      exec(created ? "PRAGMA synchronous=OFF" : "PRAGMA synchronous=FULL");
      exec(str_cat("BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS ", sqlite_journal_objects[1].sql.substr(13),
                   "; CREATE TABLE IF NOT EXISTS ", sqlite_journal_objects[0].sql.substr(13)));
      check_schema();
      exec(str_cat("INSERT OR IGNORE INTO meta(k, v) VALUES('schema', '", sqlite_journal_schema, "'); COMMIT"));
      exec("PRAGMA synchronous=FULL");
      const std::string schema = query_text("SELECT v FROM meta WHERE k = 'schema'");
      if (schema != sqlite_journal_schema)
        throw journal_error(str_cat("tool_effects: the journal '", path_, "' was written by another version (schema '",
                                    schema, "'; this version reads '", sqlite_journal_schema, "')"));
      find_ = prepare("SELECT state, failed, result, reason, message FROM calls WHERE key = ?1");
      started_ = prepare("INSERT INTO calls(key, name, state) VALUES(?1, ?2, 0) "
                         "ON CONFLICT(key) DO UPDATE SET state = 0, failed = 0, result = NULL, reason = NULL, "
                         "message = NULL");
      ended_ = prepare("UPDATE calls SET state = 1, failed = ?2, result = ?3, reason = ?4, message = ?5 WHERE key = ?1");
    } catch (...) {
      close();
      throw;
    }
  }
  sqlite_journal_impl(const sqlite_journal_impl&) = delete;
  sqlite_journal_impl& operator=(const sqlite_journal_impl&) = delete;
  ~sqlite_journal_impl() { close(); }

  std::optional<journal_entry> find(const std::string& key) {
    std::lock_guard lock(m_);
    reset guard{find_};
    bind(find_, 1, key);
    const int rc = sqlite3_step(find_);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) fail("read", rc);
    journal_entry e;
    e.at = sqlite3_column_int(find_, 0) == 1 ? journal_entry::state::ended : journal_entry::state::started;
    e.failed = sqlite3_column_int(find_, 1) != 0;
    e.result = column(find_, 2);
    e.reason = column(find_, 3);
    e.message = column(find_, 4);
    return e;
  }

  void record_started(const std::string& key, std::string_view name) {
    std::lock_guard lock(m_);
    reset guard{started_};
    bind(started_, 1, key);
    bind(started_, 2, name);
    const int rc = sqlite3_step(started_);
    if (rc != SQLITE_DONE) fail("record a call as started in", rc);
  }

  void record_ended(const std::string& key, const journal_entry& e) {
    std::lock_guard lock(m_);
    reset guard{ended_};
    bind(ended_, 1, key);
    sqlite3_bind_int(ended_, 2, e.failed ? 1 : 0);
    bind(ended_, 3, e.result);
    bind(ended_, 4, e.reason);
    bind(ended_, 5, e.message);
    const int rc = sqlite3_step(ended_);
    if (rc != SQLITE_DONE) fail("record a call's end in", rc);
  }

  // Every record in one transaction (one fsync of the WAL): all are recorded or none (a fault throws).
  void record_batch(std::span<journal_record> records) {
    std::lock_guard lock(m_);
    exec_or_fail("BEGIN IMMEDIATE", "start a transaction in");
    try {
      for (const journal_record& r : records) {
        if (r.entry.at == journal_entry::state::started) {
          reset guard{started_};
          bind(started_, 1, r.key);
          bind(started_, 2, r.name);
          if (const int rc = sqlite3_step(started_); rc != SQLITE_DONE) fail("record a call as started in", rc);
        } else {
          reset guard{ended_};
          bind(ended_, 1, r.key);
          sqlite3_bind_int(ended_, 2, r.entry.failed ? 1 : 0);
          bind(ended_, 3, r.entry.result);
          bind(ended_, 4, r.entry.reason);
          bind(ended_, 5, r.entry.message);
          if (const int rc = sqlite3_step(ended_); rc != SQLITE_DONE) fail("record a call's end in", rc);
        }
      }
      exec_or_fail("COMMIT", "commit records to");
    } catch (...) {
      if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  [[nodiscard]] journal_group_commit& group_commit() noexcept { return group_commit_; }

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  void exec_or_fail(const char* sql, std::string_view what) {
    if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); rc != SQLITE_OK) fail(what, rc);
  }
  struct reset {
    sqlite3_stmt* s;
    ~reset() {
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
    }
  };

  [[noreturn]] void refuse(std::string_view why) const {
    throw journal_error(str_cat("tool_effects: the journal '", path_, "' is refused: ", why));
  }
  // Before SQLite opens it: the file is not a symbolic link, and not writable by other users; a new file is
  // created here with mode 0600 (SQLite gives its -wal and -shm files the database file's mode).
  void check_file() const {
    struct ::stat st {};
    if (::lstat(path_.c_str(), &st) != 0) {
      if (errno != ENOENT) return;  // SQLite's open reports it
      const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd >= 0) {
        ::close(fd);
        return;
      }
      if (errno != EEXIST) return;  // SQLite's open reports it (a missing or unwritable directory)
      if (::lstat(path_.c_str(), &st) != 0) return;
    }
    if (S_ISLNK(st.st_mode)) refuse("it is a symbolic link");
    if (!S_ISREG(st.st_mode)) refuse("it is not a regular file");
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      refuse(str_cat("it is writable by other users (mode ", mode, "; 0600 expected)"));
    }
  }
  // WAL mode, in as few fsyncs as can make it durable (a new journal took 10 fsyncs to open and
  // close, as many as five turns' records). True: the file was new (no pages).
  // - A file with pages is switched (a no-op for a journal, which is in WAL mode already).
  // - A new file takes WAL mode through an in-memory rollback journal: its first page is written and the file
  //   synced once, instead of a rollback journal file created, synced twice and deleted, and its directory
  //   synced (4 fsyncs). If the process dies before that sync, the file holds no record: the next open
  //   rebuilds it, or refuses it as not a database. That page is durable before any record can be (SQLite
  //   deletes the WAL of a database file without pages).
  // - Then, in a new file only, the schema transaction (constructor) runs at synchronous=OFF: its frames go
  //   to the new WAL without an fsync. The first record's commit, at synchronous=FULL, syncs the WAL file
  //   (SQLite also syncs its directory then), so the WAL's header, the schema's frames and the record become
  //   durable together, and a record is never durable without the frames before it in the same file. The
  //   WAL is new and small, so that transaction cannot trigger an automatic checkpoint (which would write
  //   the database file unsynced).
  bool open_in_wal_mode() {
    const bool created = query_text("PRAGMA page_count") == "0";
    if (created) exec("PRAGMA journal_mode=MEMORY");
    const std::string mode = query_text("PRAGMA journal_mode=WAL");
    if (mode != "wal")
      throw journal_error(str_cat("tool_effects: the journal '", path_, "' cannot use WAL mode (got '", mode,
                                  "'; is its directory writable?)"));
    return created;
  }
  void db_config(int op, int value) {
    int now = -1;
    if (sqlite3_db_config(db_, op, value, &now) != SQLITE_OK || now != value)
      throw journal_error(str_cat("tool_effects: cannot open the journal '", path_,
                                  "': SQLite refused a defensive setting (sqlite3_db_config ", std::to_string(op), ")"));
  }
  // The whole schema is the journal's (sqlite_journal_objects), nothing more, nothing less.
  void check_schema() {
    sqlite3_stmt* s = prepare("SELECT type, name, sql FROM sqlite_schema ORDER BY name");
    std::size_t seen = 0;
    std::string why;
    int rc;
    while (why.empty() && (rc = sqlite3_step(s)) == SQLITE_ROW) {
      const std::string type = column(s, 0), name = column(s, 1), sql = column(s, 2);
      const sqlite_journal_object* expected = nullptr;
      for (const auto& o : sqlite_journal_objects)
        if (o.name == name && o.type == type) expected = &o;
      if (expected == nullptr) why = str_cat("it has ", type == "index" ? "an " : "a ", type, " '", name,
                                             "' that is not the journal's");
      else if (expected->sql != sql) why = str_cat("its ", type, " '", name, "' is not the journal's (", sql, ")");
      else ++seen;
    }
    if (why.empty() && rc != SQLITE_DONE) why = str_cat("its schema cannot be read (", sqlite3_errmsg(db_), ")");
    sqlite3_finalize(s);
    if (!why.empty()) refuse(why);
    if (seen != std::size(sqlite_journal_objects)) refuse("its schema lacks a table or index of the journal's");
  }

  [[noreturn]] void fail(std::string_view what, int rc) const {
    throw journal_error(str_cat("tool_effects: cannot ", what, " the journal '", path_, "': ", sqlite3_errmsg(db_),
                                " (", sqlite3_errstr(rc), ")"));
  }
  static void bind(sqlite3_stmt* s, int i, std::string_view v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  static std::string column(sqlite3_stmt* s, int i) {
    const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
    return t ? std::string(t, static_cast<std::size_t>(sqlite3_column_bytes(s, i))) : std::string();
  }
  void exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      const std::string why = err ? err : sqlite3_errstr(rc);
      sqlite3_free(err);
      throw journal_error(str_cat("tool_effects: cannot open the journal '", path_, "': ", why));
    }
  }
  std::string query_text(const std::string& sql) {
    sqlite3_stmt* s = prepare(sql);
    std::string out;
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) out = column(s, 0);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      throw journal_error(str_cat("tool_effects: cannot open the journal '", path_, "': ", sqlite3_errmsg(db_)));
    return out;
  }
  sqlite3_stmt* prepare(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      throw journal_error(str_cat("tool_effects: cannot open the journal '", path_, "': ", sqlite3_errmsg(db_)));
    return s;
  }
  void close() noexcept {
    for (sqlite3_stmt* s : {find_, started_, ended_}) sqlite3_finalize(s);
    find_ = started_ = ended_ = nullptr;
    if (db_) sqlite3_close_v2(db_);
    db_ = nullptr;
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* find_ = nullptr;
  sqlite3_stmt* started_ = nullptr;
  sqlite3_stmt* ended_ = nullptr;
  std::mutex m_;
  journal_group_commit group_commit_;
};

}  // namespace detail

/// A turn journal in a SQLite file (a handle: copies share one connection).
/// Opening throws `journal_error` when the file cannot be opened or created,
/// cannot use WAL mode (a read-only directory), is not a database, or was
/// written by another version (its schema differs).
class sqlite_journal {
 public:
  explicit sqlite_journal(std::string path) : impl_(std::make_shared<detail::sqlite_journal_impl>(std::move(path))) {}

  /// The entry of the call with this key (nothing: never started).
  [[nodiscard]] std::optional<journal_entry> find(const std::string& key) const { return impl_->find(key); }
  /// Records the call as started; returns once the record is on disk.
  void record_started(const std::string& key, std::string_view name) const { impl_->record_started(key, name); }
  /// Records the call's end.
  void record_ended(const std::string& key, const journal_entry& e) const { impl_->record_ended(key, e); }
  /// Records every record in one transaction (one fsync): all durable when it returns, or none and it throws.
  void record_batch(std::span<journal_record> records) const { impl_->record_batch(records); }
  /// The group-commit queue (BatchJournal), shared by the copies.
  [[nodiscard]] journal_group_commit& group_commit() const noexcept { return impl_->group_commit(); }
  /// The file.
  [[nodiscard]] const std::string& path() const noexcept { return impl_->path(); }

 private:
  std::shared_ptr<detail::sqlite_journal_impl> impl_;
};

static_assert(BatchJournal<sqlite_journal>);

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_SQLITE_JOURNAL_HPP
