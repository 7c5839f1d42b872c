// tool_effects/etcd/detail/coordinator_state.hpp — internal to <tool_effects/etcd/coordinator.hpp> (included
// there after `coordinator_options`): what the copies of one etcd_coordinator share (the lease, the client
// UUID, a pool of idle blocking clients), and the one mapping of the lock protocol's failures to the
// acquisition errors of the Coordinator concept.
#ifndef TOOL_EFFECTS_ETCD_DETAIL_COORDINATOR_STATE_HPP
#define TOOL_EFFECTS_ETCD_DETAIL_COORDINATOR_STATE_HPP

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <tool_effects/coordination.hpp>
#include <tool_effects/etcd/client.hpp>
#include <tool_effects/etcd/error.hpp>
#include <tool_effects/etcd/lease.hpp>
#include <tool_effects/etcd/lock.hpp>

namespace tool_effects::etcd::detail {

// How an acquisition that the lock protocol ended with `why` completes: `timed_out` (the wait limit),
// `operation_aborted` (cancelled), `coordination_errc::lease_lost`, else `coordination_errc::unavailable`.
inline boost::system::error_code acquisition_error(errc why) noexcept {
  switch (why) {
    case errc::coordination_timeout: return boost::asio::error::timed_out;
    case errc::cancelled: return boost::asio::error::operation_aborted;
    case errc::lease_lost: return make_error_code(coordination_errc::lease_lost);
    default: return make_error_code(coordination_errc::unavailable);
  }
}

// What the copies of one coordinator share: the lease (renewed on coordinator_options::executor when set), the client UUID, a pool of idle blocking clients (a
// blocking acquisition holds a client of its own, so waits do not serialize on one connection).
struct coordinator_state {
  coordinator_options opts;
  lease_keeper keeper;
  std::string uuid;
  std::atomic<std::uint64_t> calls{0};
  std::mutex m;
  std::vector<std::unique_ptr<client>> idle;

  explicit coordinator_state(coordinator_options o) : opts(std::move(o)), keeper(opts.client, opts.lease, opts.executor) {
    std::random_device rd;
    static constexpr char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) uuid += hex[rd() & 15];
  }

  // A call's id, unique in the fleet: lease / UUID.n / 1.
  std::string next_call_id() {
    return str_cat(std::to_string(keeper.id()), "/", uuid, ".", std::to_string(++calls), "/1");
  }

  std::unique_ptr<client> take() {
    {
      std::lock_guard lock(m);
      if (!idle.empty()) {
        auto c = std::move(idle.back());
        idle.pop_back();
        return c;
      }
    }
    return std::make_unique<client>(opts.client);
  }
  void give(std::unique_ptr<client> c) {
    std::lock_guard lock(m);
    if (idle.size() < 16) idle.push_back(std::move(c));
  }

  // Deletes a grant's keys, best effort (else the lease takes them).
  void release(const lock_grant& g) noexcept {
    try {
      auto c = take();
      lock_session(*c, keeper.id(), uuid, opts.prefix).release(g);
      give(std::move(c));
    } catch (...) {
    }
  }
};

}  // namespace tool_effects::etcd::detail

#endif  // TOOL_EFFECTS_ETCD_DETAIL_COORDINATOR_STATE_HPP
