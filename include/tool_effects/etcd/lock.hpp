// tool_effects/etcd/lock.hpp — the lock protocol of the etcd coordinator (issue 18) over etcd::client:
// one key per declared access under the process's lease, conflict ranges that give access.hpp's rule,
// FIFO by create revision, the create revision as fencing token. Model-checked: model/etcd_lock.pml;
// described in docs/coordination.md ("Across machines: etcd"). Include <tool_effects/etcd.hpp>.
#ifndef TOOL_EFFECTS_ETCD_LOCK_HPP
#define TOOL_EFFECTS_ETCD_LOCK_HPP

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <tool_effects/access.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/etcd/client.hpp>

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

/// The protocol of docs/coordination.md for one process: its lease (kept alive by the caller), a client
/// UUID, and a key prefix shared by every process that must be coordinated. acquire() blocks until the call
/// is granted, fails with `lease_lost` (the lease expired: the call's keys are gone) or with
/// `coordination_timeout` (the wait limit passed; its keys are deleted). Not thread-safe.
class lock_session {
 public:
  lock_session(client& c, std::int64_t lease_id, std::string client_uuid, std::string prefix = "tool_effects/")
      : client_(c), lease_(lease_id), uuid_(std::move(client_uuid)), prefix_(std::move(prefix)) {}

  /// `interrupt`, if given, is asked at least every 250 ms while the call waits: a non-empty reason it returns
  /// ends the wait (the keys are deleted) with an etcd::error of that reason (e.g. "cancelled", "lease_lost").
  lock_grant acquire(const call_description& call, std::chrono::milliseconds wait_limit,
                     const std::function<std::string()>& interrupt = {}) {
    lock_grant g;
    try {
      return acquire_into(g, call, wait_limit, interrupt);
    } catch (const error& e) {
      // a failed request may have left the keys (its answer was lost): delete them, best effort (the lease
      // takes them otherwise)
      if (e.reason() != "lease_lost" && e.reason() != "coordination_timeout" && !g.keys.empty()) {
        try {
          release(g);
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
  lock_grant& acquire_into(lock_grant& g, const call_description& call, std::chrono::milliseconds wait_limit,
                           const std::function<std::string()>& interrupt) {
    const auto deadline = std::chrono::steady_clock::now() + wait_limit;
    const auto id = detail::str_cat(std::to_string(lease_), "/", uuid_, "/", std::to_string(++calls_));
    std::vector<key_range> ranges;
    for (const auto& a : lock_accesses(call)) {
      g.keys.push_back(lock_key(prefix_, a, id));
      for (auto& r : conflict_ranges(prefix_, a)) ranges.push_back(std::move(r));
    }
    // one Txn: put every key (kept if there: a retry keeps its create revision), read the own key and the
    // oldest key of every range
    std::vector<txn_op> ops;
    for (const auto& k : g.keys) ops.push_back(txn_op::put(k, "", lease_));
    ops.push_back(txn_op::get({g.keys.front()}));
    for (const auto& r : ranges) {
      range_request q(r.key, r.range_end, 1);
      q.order = range_request::sort::create_ascending;
      q.keys_only = true;
      ops.push_back(txn_op::get(q));
    }
    std::vector<txn_op> again{txn_op::get({g.keys.front()})};
    const auto first = client_.txn(
        {{txn_compare::target::create_revision, txn_compare::relation::equal, g.keys.front(), 0, {}}}, ops, again);
    const auto& own = first.responses[first.succeeded ? g.keys.size() : 0].range.kvs;
    if (own.empty()) throw error("lease_lost", "the call's key is gone");
    g.token = own.front().create_revision;
    bool granted = first.succeeded;
    if (granted)
      for (std::size_t i = g.keys.size() + 1; i < first.responses.size(); ++i)
        for (const auto& kv : first.responses[i].range.kvs) granted = granted && kv.create_revision >= g.token;
    if (granted) return g;  // uncontended: one round trip
    for (;;) {
      // check: If(own key still has its create revision) Then(newest older key of every range)
      std::vector<txn_op> check;
      for (const auto& r : ranges) {
        range_request q(r.key, r.range_end, 1);
        q.order = range_request::sort::create_descending;
        q.max_create_revision = g.token - 1;
        q.keys_only = true;
        check.push_back(txn_op::get(q));
      }
      const auto res = client_.txn(
          {{txn_compare::target::create_revision, txn_compare::relation::equal, g.keys.front(), g.token, {}}}, check);
      if (!res.succeeded) throw error("lease_lost", "the call's keys expired while it waited");
      key_value blocker;
      for (const auto& r : res.responses)
        for (const auto& kv : r.range.kvs)
          if (kv.create_revision < g.token && kv.create_revision > blocker.create_revision) blocker = kv;
      if (blocker.create_revision == 0) return g;
      // watch the newest older conflicting key until it is deleted (or the watch ends: check again)
      auto w = client_.watch(blocker.key, {}, res.revision + 1);
      for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
          release(g);
          throw error("coordination_timeout", "the wait limit passed before the grant");
        }
        if (interrupt) {
          if (auto why = interrupt(); !why.empty()) {
            release(g);
            throw error(why, "the wait was interrupted");
          }
        }
        std::optional<watch_response> m;
        try {
          m = w.next(std::chrono::duration_cast<std::chrono::milliseconds>(
              std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::milliseconds(250))));
        } catch (const error&) {
          break;  // the stream ended: check again
        }
        if (!m) continue;
        if (m->canceled) break;
        bool deleted = false;
        for (const auto& e : m->events) deleted = deleted || e.is_delete;
        if (deleted) break;
      }
    }
  }

  client& client_;
  std::int64_t lease_;
  std::string uuid_;
  std::string prefix_;
  std::uint64_t calls_ = 0;
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_LOCK_HPP
