// tool_effects/json/stream.hpp — internal to <tool_effects/json.hpp>: tool
// calls assembled from a streamed model response (`tool_call_stream`), so a
// caller can plan and start the first calls of a turn while the model is
// still generating the rest.
//
//   tool_effects::tool_call_stream stream;
//   for (const auto& event : sse_data_payloads)           // one JSON text per event
//     for (auto& call : stream.feed(event)) start(call);  // complete calls, as soon as they are
//   for (auto& call : stream.finish()) start(call);        // the rest (e.g. no final event seen)
//
// The public declarations are below; the accumulator's state machine is in json/detail/stream_state.hpp.
#ifndef TOOL_EFFECTS_JSON_STREAM_HPP
#define TOOL_EFFECTS_JSON_STREAM_HPP

#include <concepts>
#include <cstddef>
#include <map>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <span>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/json/calls.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/outcome.hpp>

namespace tool_effects {

/// The most tool calls a stream keeps open (started, not yet complete) at
/// once, unless `stream_limits` says otherwise.
inline constexpr std::size_t default_max_open_stream_calls = 1024;

/// Limits of a `tool_call_stream`.
struct stream_limits {
  std::size_t max_open_calls = default_max_open_stream_calls;  ///< open calls at once; one more is a `json_error`
};

/// An argument fragment that arrived for a call the stream had already
/// yielded (a broken or hostile stream). The call as yielded misses it, so
/// its outcome must not stand: `tool_call_stream::fail_late_calls` fails it.
/// One entry per call, however many fragments arrived for it late.
struct late_fragment {
  std::size_t position = 0;   ///< the call's position in the turn (order of start)
  std::string id;             ///< the call's id, as yielded
  std::string name;           ///< the call's tool name
  std::size_t fragments = 0;  ///< how many fragments arrived after it was yielded
  std::size_t bytes = 0;      ///< their total size
  std::string message;        ///< `<name> (call "<id>") received arguments after it was yielded (<bytes> more bytes); ...`
};

}  // namespace tool_effects

// The accumulator's state machine (it needs `stream_limits` and `late_fragment`, above).
#include <tool_effects/json/detail/stream_state.hpp>

namespace tool_effects {

/// Accumulates the events of one streamed model response and yields each
/// tool call once its arguments are complete, with the same name, id
/// (generated ids included) and arguments as `parse_tool_calls` gives for the
/// whole response. Understands, with no flag to pass:
///  - OpenAI Chat Completions chunks (`choices[0].delta.tool_calls[]` keyed by
///    `index`, arguments as string fragments). A call is complete when its
///    choice has a `finish_reason`, at `[DONE]`, or at `finish()`; it is
///    yielded earlier, when a later call starts, only if its arguments are
///    already a whole JSON object or array (so chunks that arrive out of
///    order are still accumulated). A new `id` at an index already in use
///    starts a new call (servers that reuse index 0 for every call of a
///    parallel batch), and ends the one before;
///  - OpenAI Responses events (`response.output_item.added`,
///    `response.function_call_arguments.delta` / `.done`,
///    `response.output_item.done`, `response.completed`);
///  - Anthropic Messages events (`content_block_start` with a `tool_use`
///    block, `input_json_delta` fragments, `content_block_stop`, `message_stop`);
///  - Gemini `streamGenerateContent` chunks (GenerateContentResponse objects),
///    whose `functionCall` parts arrive whole: each is complete in its chunk.
/// The end events of one vendor (`finish_reason`, `response.completed`,
/// `message_stop`) complete only that vendor's calls. Other events and fields
/// are ignored. Each call is yielded exactly once. A fragment for a call
/// already yielded is never dropped: it is recorded (`late()`), and
/// `fail_late_calls` fails that call's outcome. Lookups cost O(log open
/// calls); more than `stream_limits::max_open_calls` open calls at once is a
/// `json_error`. Malformed fields the accumulator reads throw `json_error`
/// (pointer within the event); bad arguments do not (see
/// `tool_call::arguments_error`). Not thread-safe: feed one stream from one thread.
class tool_call_stream {
 public:
  /// A stream with the default limits.
  tool_call_stream() = default;
  /// A stream with `limits`.
  explicit tool_call_stream(stream_limits limits) : state_(limits) {}

  /// Feeds one event (a parsed chunk or event object); returns the calls it
  /// completed, in order.
  std::vector<tool_call> feed(const nlohmann::json& event) {
    std::vector<tool_call> done;
    state_.feed(event, done);
    return done;
  }

  /// Feeds one event given as JSON text (an SSE `data:` payload); `[DONE]`
  /// (the end marker of OpenAI streams) completes every open call; blank
  /// text is ignored.
  /// (A `std::string`, `std::string_view` or string literal.)
  template <class Text>
    requires std::convertible_to<const Text&, std::string_view> && (!std::same_as<Text, nlohmann::json>)
  std::vector<tool_call> feed(const Text& text) {
    const std::string_view trimmed = detail::stream_state::trim(std::string_view(text));
    if (trimmed.empty()) return {};
    if (trimmed == "[DONE]") return finish();
    return feed(detail::parse_json(trimmed, "in stream event"));
  }

  /// Completes every call still open (the stream ended) and returns them.
  std::vector<tool_call> finish() {
    std::vector<tool_call> done;
    state_.close_all(done);
    return done;
  }

  /// Number of calls started so far (complete or not).
  [[nodiscard]] std::size_t started() const noexcept { return state_.started(); }
  /// Number of calls yielded so far.
  [[nodiscard]] std::size_t completed() const noexcept { return state_.completed(); }

  /// The calls that received fragments after they were yielded, one entry each, in order of the first such fragment.
  [[nodiscard]] const std::vector<late_fragment>& late() const noexcept { return state_.late(); }

  /// Fails the outcome of every call that received a late fragment:
  /// `outcomes[k]` belongs to `calls[k]` (e.g. the calls this stream yielded
  /// and `json_tool_host::run`'s outcomes for them); a call whose id has a
  /// late fragment gets an `invalid_arguments` failure whose message says so,
  /// whatever it returned. Returns how many outcomes it failed. Throws
  /// std::invalid_argument if the sizes differ.
  std::size_t fail_late_calls(std::span<const tool_call> calls, std::vector<outcome<nlohmann::json>>& outcomes) const {
    if (calls.size() != outcomes.size())
      throw std::invalid_argument(detail::str_cat("tool_call_stream::fail_late_calls: ", std::to_string(calls.size()),
                                                  " calls but ", std::to_string(outcomes.size()), " outcomes"));
    std::size_t failed = 0;
    const std::vector<late_fragment>& late_calls = state_.late();
    if (late_calls.empty()) return failed;
    std::map<std::pair<std::string_view, std::string_view>, const late_fragment*> by_call;
    for (const auto& l : late_calls) by_call.emplace(std::pair<std::string_view, std::string_view>(l.id, l.name), &l);
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const auto it = by_call.find({calls[k].id, calls[k].name});
      if (it == by_call.end()) continue;
      failure_record r = make_failure_record(calls[k].name, 0, side_effect_class::non_idempotent,
                                             failure_reason::invalid_arguments,
                                             std::make_exception_ptr(std::invalid_argument(it->second->message)));
      outcomes[k] = outcome<nlohmann::json>::failure(std::make_exception_ptr(call_failure(std::move(r))));
      ++failed;
    }
    return failed;
  }

 private:
  detail::stream_state state_{};
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_STREAM_HPP
