// tool_effects/etcd/error.hpp — the errors of the etcd client, lock protocol and coordinator: one
// error category, `etcd_category()`, whose values (`etcd::errc`) are the stable failure reasons of
// docs/coordination.md ("Errors of the etcd client"). Include <tool_effects/etcd.hpp>.
#ifndef TOOL_EFFECTS_ETCD_ERROR_HPP
#define TOOL_EFFECTS_ETCD_ERROR_HPP

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include <boost/system/error_code.hpp>

#include <tool_effects/detail/str_cat.hpp>

namespace tool_effects::etcd {

/// Why an etcd request, lock acquisition or wait failed. Each value's `to_string` is a stable string (the
/// `reason()` of `etcd::error`, the `message()` of its error code); 0 is never used.
enum class errc {
  unavailable = 1,       ///< no endpoint answered (every endpoint was tried), or a stream ended
  timeout,               ///< one request ran past client_options::request_timeout
  bad_response,          ///< not what the gateway sends (JSON, fields, sizes, the token)
  lease_not_found,       ///< etcd does not know the lease (it expired or was revoked)
  compacted,             ///< the revision asked for was compacted
  auth_failed,           ///< etcd refused the user, password or token
  bad_option,            ///< the client's options (endpoints, TLS files, user without password)
  server_error,          ///< any other gRPC error (etcd::error::grpc_status() is its code)
  lease_lost,            ///< the lock protocol: the call's keys went with the lease while it waited
  coordination_timeout,  ///< the lock protocol: the wait limit passed before the grant (its keys deleted)
  cancelled,             ///< the lock protocol: the wait was interrupted (its keys deleted)
};

/// The stable string of `e` ("unavailable", "timeout", ...; "unknown" for a value outside the enum).
constexpr std::string_view to_string(errc e) noexcept {
  switch (e) {
    case errc::unavailable: return "unavailable";
    case errc::timeout: return "timeout";
    case errc::bad_response: return "bad_response";
    case errc::lease_not_found: return "lease_not_found";
    case errc::compacted: return "compacted";
    case errc::auth_failed: return "auth_failed";
    case errc::bad_option: return "bad_option";
    case errc::server_error: return "server_error";
    case errc::lease_lost: return "lease_lost";
    case errc::coordination_timeout: return "coordination_timeout";
    case errc::cancelled: return "cancelled";
  }
  return "unknown";
}

namespace detail {
struct etcd_category_impl final : boost::system::error_category {
  const char* name() const noexcept override { return "tool_effects.etcd"; }
  std::string message(int v) const override { return std::string(to_string(static_cast<errc>(v))); }
};
}  // namespace detail

/// The category of `etcd::errc`: name "tool_effects.etcd", message(v) the stable string of the value.
inline const boost::system::error_category& etcd_category() noexcept {
  static const detail::etcd_category_impl c;
  return c;
}
/// `errc` as an error code (also made implicitly: errc is an error code enum).
inline boost::system::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), etcd_category()}; }

/// A failed etcd request or lock wait. `code()` is its `errc` as an error code of `etcd_category()`,
/// `reason()` that value's stable string, `grpc_status()` the gRPC status code of a gateway error (0 when
/// there is none). `what()` is "etcd: <reason>: <message>", the message bounded (quotes at most 300 bytes
/// of what a server sent).
class error : public std::runtime_error {
 public:
  error(errc reason, const std::string& message, int grpc_status = 0)
      : std::runtime_error(tool_effects::detail::str_cat("etcd: ", to_string(reason), ": ", message)),
        reason_(reason), grpc_status_(grpc_status) {}
  [[nodiscard]] errc value() const noexcept { return reason_; }
  [[nodiscard]] boost::system::error_code code() const noexcept { return make_error_code(reason_); }
  [[nodiscard]] std::string_view reason() const noexcept { return to_string(reason_); }
  [[nodiscard]] int grpc_status() const noexcept { return grpc_status_; }

 private:
  errc reason_;
  int grpc_status_;
};

}  // namespace tool_effects::etcd

template <>
struct boost::system::is_error_code_enum<tool_effects::etcd::errc> : std::true_type {};

#endif  // TOOL_EFFECTS_ETCD_ERROR_HPP
