// tool_effects/etcd/types.hpp — the values of the etcd client: its options, key-value pairs,
// range and transaction requests and answers, leases, watch messages. Include <tool_effects/etcd.hpp>.
//
// Keys and values are bytes (base64 on the wire); int64 fields are JSON strings on the wire, and the gateway
// omits fields that have their default value (0, false, empty), so a missing field reads as its default.
#ifndef TOOL_EFFECTS_ETCD_TYPES_HPP
#define TOOL_EFFECTS_ETCD_TYPES_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tool_effects::etcd {

/// How the client reaches etcd. Endpoints are "http://host:port" (a bare "host:port" is read as http).
struct client_options {
  std::vector<std::string> endpoints;                     ///< tried in turn; a failing one moves to the next
  std::chrono::milliseconds request_timeout{3000};        ///< per request (connect, write, read) and endpoint
  std::string user;                                       ///< etcd user (auth enabled); empty: no auth
  std::string password;                                   ///< its password
  std::size_t max_response_bytes = std::size_t{8} << 20; ///< a longer response (or stream line) is bad_response
  /// TLS, for "https://" endpoints: needs a build with TOOL_EFFECTS_ETCD_TLS=1 and OpenSSL (else https
  /// endpoints are bad_option). The server is verified against `ca_file` (PEM; empty: the system's CAs);
  /// `cert_file` / `key_file` (PEM) are the client certificate for etcd's --client-cert-auth.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

/// One key-value pair as etcd stores it.
struct key_value {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;
};

/// A range read: the keys found, how many matched (before `limit`), the store's revision.
struct range_result {
  std::int64_t revision = 0;
  std::vector<key_value> kvs;
  std::int64_t count = 0;
  bool more = false;
};

/// A range request: `key` alone, or [key, range_end) ("\0" as range_end: every key >= key).
struct range_request {
  range_request() = default;
  range_request(std::string k, std::string end = {}, std::int64_t lim = 0)  // NOLINT: a key converts
      : key(std::move(k)), range_end(std::move(end)), limit(lim) {}
  std::string key;
  std::string range_end;
  std::int64_t limit = 0;          ///< 0: no limit
  std::int64_t revision = 0;       ///< 0: the newest
  std::int64_t max_create_revision = 0;  ///< 0: no bound; else only keys created at or before it
  enum class sort { none, create_ascending, create_descending } order = sort::none;
  bool keys_only = false;
  bool count_only = false;
};

/// One operation of a transaction.
struct txn_op {
  enum class kind { put, range, delete_range } op = kind::range;
  std::string key;
  std::string value;      ///< put
  std::int64_t lease = 0; ///< put
  range_request range;    ///< range (its key is used); delete_range uses range.range_end
  static txn_op put(std::string k, std::string v, std::int64_t lease_id = 0) {
    return {kind::put, std::move(k), std::move(v), lease_id, {}};
  }
  static txn_op get(range_request r) {
    auto k = r.key;
    return {kind::range, std::move(k), {}, 0, std::move(r)};
  }
  static txn_op del(std::string k, std::string range_end = {}) {
    range_request r;
    r.range_end = std::move(range_end);
    return {kind::delete_range, std::move(k), {}, 0, std::move(r)};
  }
};

/// One comparison of a transaction's guard.
struct txn_compare {
  enum class target { create_revision, mod_revision, version, value } what = target::create_revision;
  enum class relation { equal, greater, less, not_equal } rel = relation::equal;
  std::string key;
  std::int64_t number = 0;  ///< revisions and versions
  std::string value;        ///< target::value
};

/// One operation's answer: a range's keys, or how many keys a delete removed.
struct txn_op_result {
  txn_op::kind op = txn_op::kind::range;
  range_result range;
  std::int64_t deleted = 0;
};

/// A transaction's answer: which branch ran, the store's revision after it, each operation's answer.
struct txn_result {
  bool succeeded = false;
  std::int64_t revision = 0;
  std::vector<txn_op_result> responses;
};

/// A lease: its id and TTL in seconds (as granted, or remaining after a keepalive).
struct lease {
  std::int64_t id = 0;
  std::int64_t ttl = 0;
};

/// One watch message: events since the last one, or the end of the watch (canceled, with the compacted
/// revision when the start revision had been compacted).
struct watch_event {
  bool is_delete = false;
  key_value kv;
};
struct watch_response {
  std::int64_t revision = 0;
  bool created = false;
  bool canceled = false;
  std::int64_t compact_revision = 0;
  std::vector<watch_event> events;
};

/// A member's status: its id and its leader's id (equal on the leader), as etcd's decimal uint64 strings.
struct member_status {
  std::string member_id;
  std::string leader;
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_TYPES_HPP
