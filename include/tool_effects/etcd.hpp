// tool_effects/etcd.hpp — etcd support, part of the JSON component (needs nlohmann::json):
// a client of etcd's v3 JSON gateway as Asio coroutines (etcd/async_client.hpp) with a blocking wrapper
// (etcd/client.hpp), on the library's HTTP client layer (net/http_client.hpp), and the lock protocol over it
// (etcd/lock.hpp), described with its model check in docs/coordination.md ("Across machines: etcd").
#ifndef TOOL_EFFECTS_ETCD_HPP
#define TOOL_EFFECTS_ETCD_HPP

#include <tool_effects/etcd/async_client.hpp>
#include <tool_effects/etcd/client.hpp>
#include <tool_effects/etcd/coordinator.hpp>
#include <tool_effects/etcd/error.hpp>
#include <tool_effects/etcd/journal.hpp>
#include <tool_effects/etcd/lease.hpp>
#include <tool_effects/etcd/lock.hpp>
#include <tool_effects/etcd/types.hpp>

#endif  // TOOL_EFFECTS_ETCD_HPP
