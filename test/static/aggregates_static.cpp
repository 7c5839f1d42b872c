// Public aggregates can be built with designated initializers that name only
// some members, warning-free under -Wall -Wextra -Werror (g++ warns about
// omitted members without default initializers). Compile-only.
#include <string>

#include <tool_effects/tool_effects.hpp>

namespace te = tool_effects;

namespace {
[[maybe_unused]] bool designated_initializers_compile() {
  const te::runtime_access access{.resource = "db/users", .mode = te::access_mode::write};
  const te::call_description description{.name = "bulk_update", .exclusive = false};
  const te::basic_identity_policy<std::string> identity{.target_arg = "path"};
  const te::call_identity id{.tool = "write_file"};
  const te::repeat_policy repeats{.threshold = 2};
  const te::retry_policy retry{.max_attempts = 2};
  const te::attempt_context attempt{.attempt = 2};
  const te::call_settings settings{.name = "x"};
  const te::failure_record record{.tool = "send_email"};
  const te::run_options options{.max_concurrency = 4};
  const te::confirmation_request request{.tool = "rm", .reason = te::confirmation_reason::unknown_effects};
  const te::call_subject subject{.call_id = "c1"};
  return !access.resource.empty() && !description.exclusive && identity.target_arg && !id.tool.empty() &&
         repeats.threshold == 2 && retry.max_attempts == 2 && attempt.attempt == 2 && !settings.name.empty() &&
         !record.tool.empty() && options.max_concurrency == 4 && !request.tool.empty() && !subject.call_id.empty();
}
}  // namespace
