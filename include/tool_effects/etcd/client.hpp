// tool_effects/etcd/client.hpp — the blocking client of etcd's v3 JSON gateway, for the etcd
// coordinator, lease keeper and journal: each member runs the coroutine of the same name of
// etcd::async_client (etcd/async_client.hpp) to its end on an io_context of the client's own, in the calling
// thread (one implementation, the blocking API a thin wrapper). Part of the JSON component
// (nlohmann::json). Include <tool_effects/etcd.hpp>.
#ifndef TOOL_EFFECTS_ETCD_CLIENT_HPP
#define TOOL_EFFECTS_ETCD_CLIENT_HPP

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <tool_effects/etcd/async_client.hpp>
#include <tool_effects/etcd/error.hpp>
#include <tool_effects/etcd/types.hpp>

namespace tool_effects::etcd {

namespace detail {
// Runs `a` to its end on `ioc` in this thread; its value, or its exception rethrown. Other work of `ioc`
// (a watch's reader) runs too while it waits, and stays pending after it.
template <class T>
T run_blocking(boost::asio::io_context& ioc, boost::asio::awaitable<T> a) {
  std::exception_ptr failed;
  bool done = false;
  std::optional<std::conditional_t<std::is_void_v<T>, int, T>> out;
  if constexpr (std::is_void_v<T>) {
    boost::asio::co_spawn(ioc, std::move(a), [&](std::exception_ptr e) {
      failed = e;
      done = true;
    });
  } else {
    boost::asio::co_spawn(ioc, std::move(a), [&](std::exception_ptr e, T v) {
      failed = e;
      if (!e) out.emplace(std::move(v));
      done = true;
    });
  }
  ioc.restart();
  while (!done && ioc.run_one() != 0) {
  }
  if (!done) throw error(errc::unavailable, "the client's io_context stopped");
  if (failed) std::rethrow_exception(failed);
  if constexpr (!std::is_void_v<T>) return std::move(*out);
}
}  // namespace detail

class client;

/// A watch on a key or range, on its own connection to one endpoint, read in the calling thread. `next`
/// returns each message; a canceled message (compacted start revision, or the server ended the watch) ends
/// it: open a new watch from `compact_revision` (or from the last revision seen + 1). Not thread-safe.
class watch_stream {
 public:
  watch_stream(watch_stream&&) noexcept = default;
  watch_stream& operator=(watch_stream&&) = delete;
  ~watch_stream() {
    if (!ioc_) return;
    w_.close();
    ioc_->restart();
    ioc_->poll();  // the reader ends
  }

  /// The next message, waiting at most `wait`; nullopt when none came in time (the watch goes on).
  /// Throws etcd::error when the connection fails or the stream ends: open a new watch from the last
  /// revision seen + 1.
  std::optional<watch_response> next(std::chrono::milliseconds wait) {
    return detail::run_blocking(*ioc_, w_.next(std::chrono::steady_clock::now() + wait));
  }

 private:
  friend class client;
  watch_stream(std::unique_ptr<boost::asio::io_context> ioc, async_watch w) : ioc_(std::move(ioc)), w_(std::move(w)) {}
  std::unique_ptr<boost::asio::io_context> ioc_;  // first: the watch goes before its io_context
  async_watch w_;
};

/// A client of etcd's v3 JSON gateway, blocking: each member is async_client's coroutine of the same name run
/// on the client's own io_context. Requests are serialized by a mutex (one connection at a time); watches
/// and keepalives use connections of their own. Fails over as async_client does.
class client {
 public:
  /// Checks the options (bad_option) but does not connect; authenticates on the first request.
  explicit client(client_options options)
      : ioc_(std::make_unique<boost::asio::io_context>()), async_(std::move(options), ioc_->get_executor()) {}

  /// Which endpoint requests go to now (an index into options().endpoints).
  [[nodiscard]] std::size_t current_endpoint() const noexcept { return async_.current_endpoint(); }
  [[nodiscard]] const client_options& options() const noexcept { return async_.options(); }

  range_result range(const range_request& r) { return run(async_.range(r)); }
  /// Puts one key; returns the store's revision after it.
  std::int64_t put(std::string_view key, std::string_view value, std::int64_t lease_id = 0) {
    return run(async_.put(key, value, lease_id));
  }
  /// Deletes `key` (or [key, range_end)); returns how many keys went.
  std::int64_t delete_range(std::string_view key, std::string_view range_end = {}) {
    return run(async_.delete_range(key, range_end));
  }
  /// If every comparison holds, runs `success`, else `failure`; atomically, one revision.
  txn_result txn(const std::vector<txn_compare>& compare, const std::vector<txn_op>& success,
                 const std::vector<txn_op>& failure = {}) {
    return run(async_.txn(compare, success, failure));
  }
  /// The answering member's status (/v3/maintenance/status): its id and the id of the leader it knows.
  member_status status() { return run(async_.status()); }
  /// Compacts the key-value history up to `revision` (watches from older revisions are then canceled).
  void compact(std::int64_t revision, bool physical = false) { run(async_.compact(revision, physical)); }
  /// Asks the member this client talks to, which must be the leader, to hand leadership to the member
  /// `target_member_id` (decimal, as member_status gives it) and waits for the hand-off (maintenance, tests).
  void transfer_leadership(const std::string& target_member_id) { run(async_.transfer_leadership(target_member_id)); }
  /// Grants a lease of `ttl_seconds`.
  lease lease_grant(std::int64_t ttl_seconds) { return run(async_.lease_grant(ttl_seconds)); }
  /// Renews the lease once; returns its TTL. A lease that expired (TTL 0 in the answer) is lease_not_found.
  lease lease_keepalive(std::int64_t id) { return run(async_.lease_keepalive(id)); }
  /// Revokes the lease: its keys are deleted.
  void lease_revoke(std::int64_t id) { run(async_.lease_revoke(id)); }

  /// Opens a watch on `key` (or [key, range_end)) from `start_revision` (0: from now) on the current
  /// endpoint, failing over like a request, and waits for its answer's header. The watch has an io_context
  /// of its own (it is read apart from the client's requests).
  watch_stream watch(std::string_view key, std::string_view range_end = {}, std::int64_t start_revision = 0) {
    std::lock_guard lock(mutex_);
    auto ioc = std::make_unique<boost::asio::io_context>();
    auto w = detail::run_blocking(*ioc, async_.watch(key, range_end, start_revision, ioc->get_executor()));
    return watch_stream(std::move(ioc), std::move(w));
  }

  /// Runs a coroutine of async() (or one made of them: the lock protocol) to its end in this thread, holding
  /// the client's mutex.
  template <class T>
  T run(boost::asio::awaitable<T> a) {
    std::lock_guard lock(mutex_);
    return detail::run_blocking(*ioc_, std::move(a));
  }
  /// The coroutine client under this one; its executor is the client's io_context, which only run() runs.
  [[nodiscard]] async_client& async() noexcept { return async_; }

 private:
  std::mutex mutex_;
  std::unique_ptr<boost::asio::io_context> ioc_;
  async_client async_;
};

}  // namespace tool_effects::etcd

#endif  // TOOL_EFFECTS_ETCD_CLIENT_HPP
