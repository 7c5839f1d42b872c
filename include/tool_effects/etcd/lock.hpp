// tool_effects/etcd/lock.hpp — the lock protocol of the etcd coordinator over etcd::client:
// one key per declared access under the process's lease, conflict ranges that give access.hpp's rule,
// FIFO by create revision, the create revision as fencing token. Model-checked: model/etcd_lock.pml;
// described in docs/coordination.md ("Across machines: etcd"). Include <tool_effects/etcd.hpp>.
#ifndef TOOL_EFFECTS_ETCD_LOCK_HPP
#define TOOL_EFFECTS_ETCD_LOCK_HPP

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include <tool_effects/access.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/etcd/async_client.hpp>
#include <tool_effects/etcd/client.hpp>
#include <tool_effects/etcd/error.hpp>

namespace tool_effects::etcd {

/// A half-open key range [key, range_end) of etcd.
struct key_range {
  std::string key;
  std::string range_end;
};

namespace detail {

// Escapes a path or target so that it never contains the separators \x00 and \x01 ('%' escapes itself).
inline std::string escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '%' || c == '\0' || c == '\x01') {
      static constexpr char hex[] = "0123456789ABCDEF";
      out += '%';
      out += hex[std::uint8_t(c) >> 4];
      out += hex[std::uint8_t(c) & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// "<prefix>L/<mode>|" — every key of one mode
inline std::string mode_prefix(std::string_view prefix, access_mode m) {
  return str_cat(prefix, "L/", to_string(m), "|");
}

// the keys at exactly `path` (any target): "<mode prefix><escaped path>\x00"
inline std::string at_path(std::string_view prefix, access_mode m, std::string_view path) {
  std::string k = mode_prefix(prefix, m);
  k += escape(path);
  k += '\0';
  return k;
}

inline key_range prefix_range(std::string p) {
  auto end = detail::prefix_end(p);
  return {std::move(p), std::move(end)};
}

}  // namespace detail

/// The accesses a call locks: its declared ones, or for an exclusive (unknown) call a write of the root,
/// which conflicts with every access (conservative default).
inline std::vector<runtime_access> lock_accesses(const call_description& d) {
  if (d.exclusive) return {runtime_access{"", access_mode::write, std::nullopt}};
  return d.accesses;
}

/// The key of one access of a call: `<prefix>L/<mode>|<escaped path>\x00*\x00<id>` for the whole resource,
/// `<prefix>L/<mode>|<escaped path>\x00=<escaped target>\x00<id>` for a targeted one. `id` names the call
/// (lease, client UUID, call number), so a retried put finds its own key.
inline std::string lock_key(std::string_view prefix, const runtime_access& a, std::string_view id) {
  std::string k = detail::at_path(prefix, a.mode, a.resource);
  if (a.target) {
    k += '=';
    k += detail::escape(*a.target);
  } else {
    k += '*';
  }
  k += '\0';
  k += id;
  return k;
}

/// The ranges that hold every key conflicting with access `a`: for each mode that conflicts with a's mode,
/// the keys of every strict ancestor of a's path, the keys of the path itself (for a targeted access: the
/// whole-resource keys and those of the same target), and the keys of every path under it.
/// Together they give exactly access.hpp's rule (`conflicts` of call_description.hpp), tested differentially.
inline std::vector<key_range> conflict_ranges(std::string_view prefix, const runtime_access& a) {
  std::vector<key_range> out;
  for (const auto m : {access_mode::read, access_mode::write, access_mode::append}) {
    if (!access_modes_conflict(a.mode, m)) continue;
    // strict ancestors: "" and every prefix ending before a '/'
    if (!a.resource.empty()) {
      out.push_back(detail::prefix_range(detail::at_path(prefix, m, "")));
      for (std::size_t i = 0; i < a.resource.size(); ++i)
        if (a.resource[i] == '/')
          out.push_back(detail::prefix_range(detail::at_path(prefix, m, std::string_view(a.resource).substr(0, i))));
    }
    // the path itself
    const auto here = detail::at_path(prefix, m, a.resource);
    if (a.target) {
      out.push_back(detail::prefix_range(here + "*"));
      out.push_back(detail::prefix_range(here + "=" + detail::escape(*a.target) + std::string(1, '\0')));
    } else {
      out.push_back(detail::prefix_range(here));
    }
    // below it: "<path>/..." (for the root: every non-empty path, whose first byte is never \x00)
    if (a.resource.empty()) {
      const auto all = detail::mode_prefix(prefix, m);
      out.push_back({all + std::string(1, '\x01'), detail::prefix_end(all)});
    } else {
      out.push_back(detail::prefix_range(detail::mode_prefix(prefix, m) + detail::escape(a.resource) + "/"));
    }
  }
  return out;
}

/// A grant: the call's keys and its fencing token (their create revision; grows along every chain of
/// conflicting grants).
struct lock_grant {
  std::int64_t token = 0;
  std::vector<std::string> keys;
};

/// One call's acquisition by the protocol of docs/coordination.md, in steps, as coroutines of an
/// async_client: etcd_coordinator's asynchronous acquisitions await them on the caller's executor (a waiting
/// acquisition holds a watch connection, no thread), lock_session runs them on a blocking client's
/// io_context. Not thread-safe (one coroutine or strand at a time).
class lock_acquisition {
 public:
  /// `id` names the call in the fleet (lease / client UUID / call number).
  lock_acquisition(async_client& c, std::int64_t lease_id, std::string_view prefix, std::string_view id,
                   const call_description& call, std::chrono::steady_clock::time_point deadline)
      : client_(c), lease_(lease_id), deadline_(deadline) {
    for (const auto& a : lock_accesses(call)) {
      grant_.keys.push_back(lock_key(prefix, a, id));
      for (auto& r : conflict_ranges(prefix, a)) ranges_.push_back(std::move(r));
    }
  }

  /// The first round trip: one Txn puts every key (kept if there: a retry keeps its create revision) and reads
  /// the own key and the oldest key of every range. True when granted (uncontended: one round trip).
  boost::asio::awaitable<bool> start() {
    std::vector<txn_op> ops;
    for (const auto& k : grant_.keys) ops.push_back(txn_op::put(k, "", lease_));
    ops.push_back(txn_op::get({grant_.keys.front()}));
    for (const auto& r : ranges_) {
      range_request q(r.key, r.range_end, 1);
      q.order = range_request::sort::create_ascending;
      q.keys_only = true;
      ops.push_back(txn_op::get(q));
    }
    const std::vector<txn_op> again{txn_op::get({grant_.keys.front()})};
    const std::vector<txn_compare> is_new{
        {txn_compare::target::create_revision, txn_compare::relation::equal, grant_.keys.front(), 0, {}}};
    const auto first = co_await client_.txn(is_new, ops, again);
    const auto& own = first.responses[first.succeeded ? grant_.keys.size() : 0].range.kvs;
    if (own.empty()) throw error(errc::lease_lost, "the call's key is gone");
    grant_.token = own.front().create_revision;
    bool granted = first.succeeded;
    if (granted)
      for (std::size_t i = grant_.keys.size() + 1; i < first.responses.size(); ++i)
        for (const auto& kv : first.responses[i].range.kvs) granted = granted && kv.create_revision >= grant_.token;
    co_return granted;
  }

  /// One step of the wait. Without an open watch: checks again (If the own key still has its create revision
  /// Then read the newest older key of every range): none, granted (true); else opens a watch on the newest
  /// older conflicting key. Then reads that watch for at most `wait` (or until wake()): its delete, its cancel
  /// (compaction) or the end of its stream closes it, and the next step checks again. Throws
  /// `coordination_timeout` past the deadline (the keys are deleted first), `lease_lost` when the own keys
  /// are gone.
  boost::asio::awaitable<bool> step(std::chrono::milliseconds wait) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline_) {
      co_await release();
      throw error(errc::coordination_timeout, "the wait limit passed before the grant");
    }
    if (!watch_.is_open()) {
      std::vector<txn_op> check;
      for (const auto& r : ranges_) {
        range_request q(r.key, r.range_end, 1);
        q.order = range_request::sort::create_descending;
        q.max_create_revision = grant_.token - 1;
        q.keys_only = true;
        check.push_back(txn_op::get(q));
      }
      const std::vector<txn_compare> still_mine{
          {txn_compare::target::create_revision, txn_compare::relation::equal, grant_.keys.front(), grant_.token, {}}};
      const auto res = co_await client_.txn(still_mine, check);
      if (!res.succeeded) throw error(errc::lease_lost, "the call's keys expired while it waited");
      key_value blocker;
      for (const auto& r : res.responses)
        for (const auto& kv : r.range.kvs)
          if (kv.create_revision < grant_.token && kv.create_revision > blocker.create_revision) blocker = kv;
      if (blocker.create_revision == 0) co_return true;
      watch_ = co_await client_.watch(blocker.key, {}, res.revision + 1);
    }
    std::optional<watch_response> m;
    bool ended = false;
    try {
      m = co_await watch_.next(std::min(now + wait, deadline_));
    } catch (const error&) {
      ended = true;  // the stream ended: check again
    }
    if (ended) {
      watch_.close();
      co_return false;
    }
    if (!m) co_return false;
    bool deleted = m->canceled;
    for (const auto& e : m->events) deleted = deleted || e.is_delete;
    if (deleted) watch_.close();
    co_return false;
  }

  /// Ends the wait of a step() at once (it returns false): from the client's executor, e.g. on a cancellation.
  void wake() { watch_.wake(); }
  [[nodiscard]] std::chrono::steady_clock::time_point deadline() const noexcept { return deadline_; }

  /// The grant (after start() or step() returned true); its keys also when it failed.
  [[nodiscard]] const lock_grant& grant() const noexcept { return grant_; }
  [[nodiscard]] lock_grant take_grant() noexcept { return std::move(grant_); }

  /// Deletes the keys (idempotent); throws etcd::error when etcd cannot be reached.
  boost::asio::awaitable<void> release() {
    watch_.close();
    std::vector<txn_op> ops;
    for (const auto& k : grant_.keys) ops.push_back(txn_op::del(k));
    co_await client_.txn({}, ops);
  }

 private:
  async_client& client_;
  std::int64_t lease_;
  std::chrono::steady_clock::time_point deadline_;
  lock_grant grant_;
  std::vector<key_range> ranges_;
  async_watch watch_;
};

/// The protocol of docs/coordination.md for one process: its lease (kept alive by the caller), a client
/// UUID, and a key prefix shared by every process that must be coordinated. acquire() blocks until the call
/// is granted, fails with `lease_lost` (the lease expired: the call's keys are gone) or with
/// `coordination_timeout` (the wait limit passed; its keys are deleted). Not thread-safe.
class lock_session {
 public:
  lock_session(client& c, std::int64_t lease_id, std::string client_uuid, std::string prefix = "tool_effects/")
      : client_(c), lease_(lease_id), uuid_(std::move(client_uuid)), prefix_(std::move(prefix)) {}

  /// The id of this session's next call (lease / client UUID / call number).
  [[nodiscard]] std::string next_id() {
    return detail::str_cat(std::to_string(lease_), "/", uuid_, "/", std::to_string(++calls_));
  }

  /// `interrupt`, if given, is asked at least every 250 ms while the call waits: a reason it returns ends the
  /// wait (the keys are deleted) with an etcd::error of that reason (e.g. errc::cancelled, errc::lease_lost).
  lock_grant acquire(const call_description& call, std::chrono::milliseconds wait_limit,
                     const std::function<std::optional<errc>()>& interrupt = {}) {
    lock_acquisition a(client_.async(), lease_, prefix_, next_id(), call,
                       std::chrono::steady_clock::now() + wait_limit);
    // each step a run of its own: the client's mutex is not held across the wait (other threads may use it)
    try {
      if (client_.run(a.start())) return a.take_grant();
      for (;;) {
        if (interrupt) {
          if (const auto why = interrupt()) {
            client_.run(a.release());
            throw error(*why, "the wait was interrupted");
          }
        }
        if (client_.run(a.step(std::chrono::milliseconds(250)))) return a.take_grant();
      }
    } catch (const error& e) {
      // a failed request may have left the keys (its answer was lost): delete them, best effort (the lease
      // takes them otherwise)
      if (e.value() != errc::lease_lost && e.value() != errc::coordination_timeout) {
        try {
          client_.run(a.release());
        } catch (const error&) {
        }
      }
      throw;
    }
  }

  /// Deletes the grant's keys (idempotent).
  void release(const lock_grant& g) {
    std::vector<txn_op> ops;
    for (const auto& k : g.keys) ops.push_back(txn_op::del(k));
    client_.txn({}, ops);
  }

 private:
  client& client_;
  std::int64_t lease_;
  std::string uuid_;
  std::string prefix_;
  std::uint64_t calls_ = 0;
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_LOCK_HPP
