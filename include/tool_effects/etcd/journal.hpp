// tool_effects/etcd/journal.hpp — the turn journal of journal.hpp on etcd (issue 18): the same at-most-once
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
// (fsync), so `record_started` returns when the record is durable.
#ifndef TOOL_EFFECTS_ETCD_JOURNAL_HPP
#define TOOL_EFFECTS_ETCD_JOURNAL_HPP

#include <memory>
#include <optional>
#include <string>
#include <string_view>

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
      : client_(std::make_shared<client>(std::move(options))), prefix_(std::move(prefix)) {}

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
      nlohmann::json v{{"state", "started"}, {"name", std::string(name)}};
      const auto k = key_of(key);
      const auto res = client_->txn({{txn_compare::target::create_revision, txn_compare::relation::equal, k, 0, {}}},
                                    {txn_op::put(k, v.dump())}, {txn_op::get({k})});
      if (res.succeeded) return;
      const auto& kvs = res.responses.front().range.kvs;
      if (kvs.empty() || decode(kvs.front().value).at != journal_entry::state::started)
        throw journal_error("the call was ended by another run");
      // in doubt, and the dispatcher decided to run it again: take the record over if nobody else did
      const auto again = client_->txn(
          {{txn_compare::target::mod_revision, txn_compare::relation::equal, k, kvs.front().mod_revision, {}}},
          {txn_op::put(k, v.dump())});
      if (!again.succeeded) throw journal_error("the call was claimed by another run");
    });
  }

  /// Records the call's end.
  void record_ended(const std::string& key, const journal_entry& e) const {
    guarded("record a call's end in", [&] {
      nlohmann::json v{{"state", "ended"},   {"failed", e.failed},   {"result", e.result},
                       {"reason", e.reason}, {"message", e.message}};
      client_->put(key_of(key), v.dump());
    });
  }

 private:
  std::string key_of(const std::string& key) const { return prefix_ + "J/" + key; }

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
};

static_assert(Journal<etcd_journal>);

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_JOURNAL_HPP
