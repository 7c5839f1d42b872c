// tool_effects/mcp/gateway/backends.hpp — the coordinator and the journal a gateway configuration names
// (`gateway.coordinator`, `gateway.journal`), made: an in-process or etcd coordinator, a SQLite or etcd journal,
// or none. Needs SQLite (link tool_effects::sqlite) and the etcd client (part of the JSON component).
//
//   auto config = te::load_gateway_config("gateway.json");
//   te::mcp_gateway gateway(config, te::make_gateway_backends(config));
#ifndef TOOL_EFFECTS_MCP_GATEWAY_BACKENDS_HPP
#define TOOL_EFFECTS_MCP_GATEWAY_BACKENDS_HPP

#include <exception>
#include <string>

#include <tool_effects/coordination.hpp>
#include <tool_effects/etcd/coordinator.hpp>
#include <tool_effects/etcd/journal.hpp>
#include <tool_effects/mcp/gateway.hpp>
#include <tool_effects/mcp/gateway/config.hpp>
#include <tool_effects/mcp/gateway/coordination.hpp>
#include <tool_effects/sqlite_journal.hpp>

namespace tool_effects {

namespace detail {
inline etcd::client_options gateway_etcd_client(const gateway_etcd_config& e) {
  etcd::client_options o;
  o.endpoints = e.endpoints;
  o.request_timeout = e.request_timeout;
  o.user = e.user;
  o.password = e.password;
  o.ca_file = e.ca_file;
  o.cert_file = e.cert_file;
  o.key_file = e.key_file;
  return o;
}
}  // namespace detail

/// The backends `c` names. The etcd coordinator is renewed when its lease is lost (a new lease: the calls
/// granted under the old one already failed with `lease_lost`). Throws `gateway_config_error` naming
/// `/gateway/coordinator` or `/gateway/journal` when one cannot be opened (an unwritable journal, no etcd
/// endpoint answering).
inline gateway_backends make_gateway_backends(const gateway_config& c) {
  gateway_backends b;
  try {
    if (c.etcd_coordinator) {
      etcd::coordinator_options o;
      o.client = detail::gateway_etcd_client(*c.etcd_coordinator);
      o.lease.ttl = c.etcd_coordinator->ttl;
      o.prefix = c.etcd_coordinator->prefix;
      o.wait_limit = c.wait_limit;
      b.coordinator = gateway_coordinator::renewing([o] { return etcd::etcd_coordinator(o); });
    } else {
      b.coordinator = gateway_coordinator(local_coordinator{}.with_wait_limit(c.wait_limit));
    }
  } catch (const std::exception& e) {
    throw gateway_config_error(c.file, "", "", "/gateway/coordinator", "cannot reach the coordinator", e.what());
  }
  try {
    if (!c.sqlite_journal.empty())
      b.journal = gateway_journal(sqlite_journal(c.sqlite_journal), "sqlite " + c.sqlite_journal);
    else if (c.etcd_journal)
      b.journal = gateway_journal(etcd::etcd_journal(detail::gateway_etcd_client(*c.etcd_journal), c.etcd_journal->prefix),
                                  "etcd " + c.etcd_journal->endpoints.front());
  } catch (const std::exception& e) {
    throw gateway_config_error(c.file, "", "", "/gateway/journal", "cannot open the journal", e.what());
  }
  return b;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_MCP_GATEWAY_BACKENDS_HPP
