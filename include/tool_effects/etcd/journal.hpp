// tool_effects/etcd/journal.hpp — the turn journal of journal.hpp on etcd: the same at-most-once
// and in-doubt semantics as sqlite_journal, shared by every process (on every machine) that uses the same
// etcd key prefix. Include <tool_effects/etcd.hpp>.
//
//   tool_effects::etcd::etcd_journal journal(client_options);   // endpoints, TLS, auth as for the coordinator
//   host.run(pool, run_options{}.with(journal), calls, scope);
//
// One key per call: `<prefix>J/<idempotency key>`, its value a JSON object {"state": "started"|"ended",
// "name", "failed", "result", "reason", "message"}. A call is *claimed* by creating its key:
// Txn(create_revision(key) == 0) put(started). A record that is already there is taken over only if it is
// still *started* (in doubt: the dispatcher decided to run the call again) and unchanged since it was read
// (Txn(mod_revision(key) == seen)); a record another run created or ended meanwhile makes record_started
// throw journal_error, and the call does not run. etcd answers a write only once a quorum has it on disk
// (fsync), so `record_started` returns when the record is durable. Group commit: the dispatcher hands
// the records of calls that start (or end) together to `record_batch`, one Txn for up to 64 of them.
#ifndef TOOL_EFFECTS_ETCD_JOURNAL_HPP
#define TOOL_EFFECTS_ETCD_JOURNAL_HPP

#include <algorithm>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/etcd/client.hpp>
#include <tool_effects/journal.hpp>

namespace tool_effects::etcd {

/// The journal on etcd. A handle: copies share one client (thread-safe: its requests are serialized).
/// Every member throws `journal_error` naming etcd and the cause on a fault (no endpoint answered, a record
/// that does not parse, a claim lost to another run).
class etcd_journal {
 public:
  explicit etcd_journal(client_options options, std::string prefix = "tool_effects/")
      : client_(std::make_shared<client>(std::move(options))), prefix_(std::move(prefix)),
        group_commit_(std::make_shared<journal_group_commit>()) {}

  /// The call's record, or nothing (never started).
  [[nodiscard]] std::optional<journal_entry> find(const std::string& key) const {
    return guarded("read", [&]() -> std::optional<journal_entry> {
      const auto r = client_->range({key_of(key)});
      if (r.kvs.empty()) return std::nullopt;
      return decode(r.kvs.front().value);
    });
  }

  /// Claims the call (see the file comment); returns once etcd has the record on a quorum's disks.
  void record_started(const std::string& key, std::string_view name) const {
    guarded("record a call as started in", [&] {
      const std::string v = started_value(name);
      const auto k = key_of(key);
      const auto res = client_->txn({{txn_compare::target::create_revision, txn_compare::relation::equal, k, 0, {}}},
                                    {txn_op::put(k, v)}, {txn_op::get({k})});
      if (res.succeeded) return;
      const auto& kvs = res.responses.front().range.kvs;
      if (kvs.empty() || decode(kvs.front().value).at != journal_entry::state::started)
        throw journal_error("the call was ended by another run");
      // in doubt, and the dispatcher decided to run it again: take the record over if nobody else did
      const auto again = client_->txn(
          {{txn_compare::target::mod_revision, txn_compare::relation::equal, k, kvs.front().mod_revision, {}}},
          {txn_op::put(k, v)});
      if (!again.succeeded) throw journal_error("the call was claimed by another run");
    });
  }

  /// Records the call's end.
  void record_ended(const std::string& key, const journal_entry& e) const {
    guarded("record a call's end in", [&] { client_->put(key_of(key), ended_value(e)); });
  }

  /// Group commit (BatchJournal): up to `batch_ops` records in one Txn, one round trip and one quorum write
  /// for all of them: every *started* record is created only if its key is new (create_revision == 0), every
  /// *ended* record is put. If a started record's key exists (an in-doubt call run again, or a claim by
  /// another run), that Txn writes nothing and its records are recorded one by one as record_started and
  /// record_ended do, so a lost claim fails alone (its `error`). A fault of etcd throws.
  void record_batch(std::span<journal_record> records) const {
    for (std::size_t at = 0; at < records.size(); at += batch_ops) {
      const auto chunk = records.subspan(at, std::min(batch_ops, records.size() - at));
      const bool written = guarded("record calls in", [&] {
        std::vector<txn_compare> compare;
        std::vector<txn_op> puts;
        for (const journal_record& r : chunk) {
          const auto k = key_of(r.key);
          if (r.entry.at == journal_entry::state::started) {
            compare.push_back({txn_compare::target::create_revision, txn_compare::relation::equal, k, 0, {}});
            puts.push_back(txn_op::put(k, started_value(r.name)));
          } else {
            puts.push_back(txn_op::put(k, ended_value(r.entry)));
          }
        }
        return client_->txn(compare, puts).succeeded;
      });
      if (written) continue;
      for (journal_record& r : chunk) {
        try {
          if (r.entry.at == journal_entry::state::started) record_started(r.key, r.name);
          else record_ended(r.key, r.entry);
        } catch (...) {
          r.error = std::current_exception();
        }
      }
    }
  }
  /// The group-commit queue (BatchJournal), shared by the copies.
  [[nodiscard]] journal_group_commit& group_commit() const noexcept { return *group_commit_; }

  /// Records per Txn (etcd's --max-txn-ops is 128 by default; a Txn has one compare per started record).
  static constexpr std::size_t batch_ops = 64;

 private:
  std::string key_of(const std::string& key) const { return prefix_ + "J/" + key; }
  static std::string started_value(std::string_view name) {
    return nlohmann::json{{"state", "started"}, {"name", std::string(name)}}.dump();
  }
  static std::string ended_value(const journal_entry& e) {
    return nlohmann::json{{"state", "ended"},   {"failed", e.failed},   {"result", e.result},
                          {"reason", e.reason}, {"message", e.message}}
        .dump();
  }

  static journal_entry decode(const std::string& value) {
    const auto j = tool_effects::detail::parse_json(value, "etcd journal record");
    const auto str = [&](const char* f) -> std::string {
      const auto it = j.find(f);
      if (it == j.end()) return {};
      if (!it->is_string()) throw journal_error(std::string("field ") + f + " is not a string");
      return it->get<std::string>();
    };
    journal_entry e;
    const auto state = str("state");
    if (state != "started" && state != "ended") throw journal_error("a record with an unknown state");
    e.at = state == "ended" ? journal_entry::state::ended : journal_entry::state::started;
    if (const auto it = j.find("failed"); it != j.end()) {
      if (!it->is_boolean()) throw journal_error("field failed is not a boolean");
      e.failed = it->get<bool>();
    }
    e.result = str("result");
    e.reason = str("reason");
    e.message = str("message");
    return e;
  }

  template <class F>
  static auto guarded(const char* what, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const journal_error& e) {
      throw journal_error(std::string("tool_effects: etcd journal: cannot ") + what + " etcd: " + e.what());
    } catch (const std::exception& e) {
      throw journal_error(std::string("tool_effects: etcd journal: cannot ") + what + " etcd: " + e.what());
    }
  }

  std::shared_ptr<client> client_;
  std::string prefix_;
  std::shared_ptr<journal_group_commit> group_commit_;
};

static_assert(BatchJournal<etcd_journal>);

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_JOURNAL_HPP
