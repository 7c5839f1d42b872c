// tool_effects/impl/failure.ipp — the definitions of failure.hpp's records (their text, the message of an
// error, `make_failure_record`, `call_failure`): included by that header (header-only, the default), or
// compiled once by <tool_effects/impl/src.hpp> (TOOL_EFFECTS_SEPARATE_COMPILATION).
#ifndef TOOL_EFFECTS_IMPL_FAILURE_IPP
#define TOOL_EFFECTS_IMPL_FAILURE_IPP

#include <tool_effects/failure.hpp>

namespace tool_effects {

TOOL_EFFECTS_DECL std::string to_string(const failure_record& r) {
  std::string out = detail::str_cat("tool '", r.tool, "' failed: reason=", to_string(r.reason), " class=",
                                     to_string(r.effect_class), " attempts=", std::to_string(r.attempts));
  if (!r.last_error_message.empty() || r.last_error) out.append(" error=").append(parse_error::quote(r.last_error_message));
  return out;
}

namespace detail {
TOOL_EFFECTS_DECL std::string message_of(const std::exception_ptr& e) {
  if (!e) return {};
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}
}  // namespace detail

TOOL_EFFECTS_DECL failure_record make_failure_record(std::string tool, std::size_t attempts, side_effect_class c,
                                                     failure_reason reason, std::exception_ptr error) {
  failure_record r{std::move(tool), attempts, c, reason, std::move(error), {}};
  r.last_error_message = detail::message_of(r.last_error);
  return r;
}

TOOL_EFFECTS_DECL call_failure::call_failure(failure_record r)
    : std::runtime_error(to_string(r)), record_(std::move(r)) {}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_IMPL_FAILURE_IPP
