// tool_effects/journal.hpp — a turn journal: each call at most once across
// re-runs of a turn (a host restarted mid-turn, a retried model request, a
// resumed graph).
//
//   auto journal = tool_effects::sqlite_journal("turns.db");      // sqlite_journal.hpp
//   host.run(pool, run_options{}.with(journal), calls, scope);
//
// Per call, under its idempotency key (from the call's identity and scope in
// json_tool_host; `call(...).with_idempotency_key(k)` for static calls):
// - no record: the journal durably records *started* before the call can
//   run (a journal fault: the call does not run, its outcome says why), and
//   its outcome (result or failure) when it ends (a `BatchJournal`: durable
//   at the latest when the turn returns; records of calls that start or end
//   together share one commit);
// - *ended*: the call is not run again; its recorded outcome is returned,
//   `replayed()`;
// - *started* but not ended (the process died): in doubt. It runs again only
//   if it is retry-safe (`may_retry`), or if the options' approver approves
//   it when asked with `may_already_have_happened` set (asked synchronously);
//   else it fails with `call_failure{in_doubt}`: never silently a second time.
// States and limits: docs/coordination.md.
#ifndef TOOL_EFFECTS_JOURNAL_HPP
#define TOOL_EFFECTS_JOURNAL_HPP

#include <charconv>
#include <concepts>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <tool_effects/attempt.hpp>
#include <tool_effects/confirmation.hpp>
#include <tool_effects/detail/across_turns_fwd.hpp>
#include <tool_effects/detail/journal_batch.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/outcome.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects {

struct inline_executor;  // dispatch.hpp

/// A journal could not read or record (unwritable, full, corrupt, written
/// by another version). `what()` names the journal and the cause.
class journal_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a journal knows of one call.
struct journal_entry {
  enum class state : std::uint8_t { started, ended };
  state at = state::started;
  bool failed = false;       ///< ended with a failure
  std::string result{};      ///< ended successfully: the result, encoded by `journal_codec<R>`
  std::string reason{};      ///< failed with a failure record: its stable reason slug ("" for a plain error)
  std::string message{};     ///< failed: the error's message
};

/// A journal: `find(key)` the entry of a call (nothing: never started);
/// `record_started(key, name)` returns only once the record is durable;
/// `record_ended(key, entry)`. All throw `journal_error` on a fault; all are
/// thread-safe. A handle: copies share one journal.
template <class J>
concept Journal = std::copy_constructible<J> &&
                  requires(const J& j, const std::string& key, std::string_view name, const journal_entry& e) {
                    { j.find(key) } -> std::same_as<std::optional<journal_entry>>;
                    j.record_started(key, name);
                    j.record_ended(key, e);
                  };

/// One record of a batch (`record_batch`): *started* (`entry.at == started`, with the call's `name`) or
/// *ended* (the entry to record).
struct journal_record {
  std::string key{};
  std::string name{};
  journal_entry entry{};
  std::exception_ptr error{};  ///< set by the journal when this record alone could not be recorded
};

/// The group-commit queue of a batch journal: the records waiting for its next commit, each with what to do
/// once it is committed. A `BatchJournal` owns one, shared by all its copies; only the dispatcher uses it
/// (state machine: detail/journal_batch.hpp; no I/O of its own).
class journal_group_commit {
 public:
  struct pending {
    journal_record record;
    detail::record_completion done;
    boost::asio::any_io_executor ex;  // tracks work: the executor of the record's call does not run out of it
  };
  detail::batch_queue<pending> queue;
};

/// A journal that commits records together (group commit): `record_batch(records)` records all of them, every
/// one durable when it returns, in as few disk writes as it can (sqlite_journal: one transaction; etcd_journal:
/// one Txn). A record that fails alone gets its `error` set (the others are recorded); a fault of the whole
/// batch throws `journal_error`. `group_commit()`: its queue. The dispatcher commits together the *started*
/// records of calls that become ready together (a turn's start, or a call's end, makes them ready: one commit
/// before any of them starts, whatever the pool) and the *ended* records of calls that end together
/// (docs/coordination.md, docs/performance-notes.md); a call still runs only once its *started* record is durable.
template <class J>
concept BatchJournal = Journal<J> && requires(const J& j, std::span<journal_record> records) {
  j.record_batch(records);
  { j.group_commit() } -> std::same_as<journal_group_commit&>;
};

/// How a result of type R is recorded: `encode(const R&) -> std::string` and
/// `decode(std::string_view) -> R`. Given for void, bool, arithmetic types,
/// std::string and JSON values with `dump()` and `parse()` (nlohmann::json);
/// specialise it for other result types of journaled calls.
template <class R, class = void>
struct journal_codec;

template <>
struct journal_codec<void> {};

template <>
struct journal_codec<std::string> {
  static std::string encode(const std::string& v) { return v; }
  static std::string decode(std::string_view s) { return std::string(s); }
};

template <class R>
struct journal_codec<R, std::enable_if_t<std::is_arithmetic_v<R>>> {
  static std::string encode(const R& v) {
    if constexpr (std::is_same_v<R, bool>) return v ? "true" : "false";
    else if constexpr (std::is_floating_point_v<R>) {
      char buf[64];
      const auto r = std::to_chars(buf, buf + sizeof buf, v);
      return std::string(buf, r.ptr);
    } else {
      return std::to_string(v);
    }
  }
  static R decode(std::string_view s) {
    if constexpr (std::is_same_v<R, bool>) return s == "true";
    else if constexpr (std::is_floating_point_v<R>) return static_cast<R>(std::stod(std::string(s)));
    else {
      R v{};
      const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
      if (r.ec != std::errc{}) throw journal_error("tool_effects: journal: a recorded result does not decode");
      return v;
    }
  }
};

template <class R>
struct journal_codec<R, std::enable_if_t<!std::is_arithmetic_v<R> && requires(const R& v, std::string_view s) {
                          { v.dump() } -> std::convertible_to<std::string>;
                          { R::parse(s) } -> std::convertible_to<R>;
                        }>> {
  static std::string encode(const R& v) { return v.dump(); }
  static R decode(std::string_view s) { return R::parse(s); }
};

/// Whether results of type R can be journaled.
template <class R>
concept JournalEncodable = std::is_void_v<R> || requires(const R& v, std::string_view s) {
  { journal_codec<R>::encode(v) } -> std::convertible_to<std::string>;
  { journal_codec<R>::decode(s) } -> std::convertible_to<R>;
};

namespace detail {

// Journals among the dispatch options' extras (detail/across_turns_fwd.hpp).
template <Journal J>
struct is_journal<J> : std::true_type {};
template <BatchJournal J>
struct is_batch_journal<J> : std::true_type {};

template <class R>
journal_entry ended_entry(const outcome<R>& o) {
  journal_entry e;
  e.at = journal_entry::state::ended;
  if (o.has_value()) {
    if constexpr (!std::is_void_v<R>) e.result = journal_codec<R>::encode(o.value());
    return e;
  }
  e.failed = true;
  try {
    if (o.has_error()) std::rethrow_exception(o.error());
    e.message = "aborted";
  } catch (const call_failure& f) {
    e.reason = std::string(to_string(f.reason()));
    e.message = f.record().last_error_message;
  } catch (const std::exception& x) {
    e.message = x.what();
  } catch (...) {
    e.message = "unknown exception";
  }
  return e;
}

template <class R>
outcome<R> replay(const journal_entry& e, std::string_view name, effect_set effects) {
  outcome<R> o;
  if (!e.failed) {
    if constexpr (std::is_void_v<R>) o = outcome<R>::success();
    else o = outcome<R>::success(journal_codec<R>::decode(e.result));
  } else if (const auto r = try_parse_failure_reason(e.reason)) {
    auto rec = make_failure_record(std::string(name), 0, classify(effects), *r);
    rec.last_error_message = e.message;
    o = outcome<R>::failure(std::make_exception_ptr(call_failure(std::move(rec))));
  } else {
    o = outcome<R>::failure(std::make_exception_ptr(std::runtime_error(e.message)));
  }
  o.mark_replayed();
  return o;
}

template <class R>
outcome<R> journal_fault(std::string_view name, std::string_view what) {
  return outcome<R>::failure(std::make_exception_ptr(
      journal_error(str_cat("tool_effects: '", name, "' was not run: ", what))));
}

// The completion of a journaled call: records its end, then delivers its outcome.
template <class R, class J, class Done>
struct record_then {
  J journal;
  std::string key;
  Done done;
  void operator()(outcome<R> o) {
    try {
      journal.record_ended(key, ended_entry(o));
    } catch (...) {
      // The outcome is delivered anyway; the call stays in doubt in the journal (never run twice silently).
    }
    done(std::move(o));
  }
};

inline std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

// Which execution context (thread pool, io_context) an executor runs on: holds and a parked commit meet there.
inline const void* context_of(const boost::asio::any_io_executor& ex) {
  return &boost::asio::query(ex, boost::asio::execution::context);
}

// Where the next commit may run: the executor of a record whose call waits for it (its executor is tracked,
// so it lives); a quiet *ended* record's executor may be gone (a private io_context), and nobody waits for it.
inline std::optional<boost::asio::any_io_executor> next_commit_place(const journal_group_commit::pending& p) {
  if (p.done) return p.ex;
  return std::nullopt;
}

// The bounds of a commit's wait for more records (gather_then_commit).
inline constexpr int journal_gather_rounds = 8;
inline constexpr std::size_t journal_hold_wait = 64;
template <BatchJournal J>
void gather_then_commit(const J& journal, const boost::asio::any_io_executor& ex, std::size_t seen, int round);

// Commits every queued record in one `record_batch`, and posts each record's completion to its call's
// executor.
template <BatchJournal J>
void commit_now(const J& journal) {
  auto batch = journal.group_commit().queue.take();
  if (batch.empty()) return;
  std::vector<journal_record> records;
  records.reserve(batch.size());
  for (auto& p : batch) records.push_back(std::move(p.record));
  std::exception_ptr whole;
  try {
    journal.record_batch(std::span<journal_record>(records));
  } catch (...) {
    whole = std::current_exception();
  }
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (batch[i].done)
      boost::asio::post(batch[i].ex, [done = std::move(batch[i].done), e = whole ? whole : records[i].error]() mutable {
        done(std::move(e));
      });
}

// The due commit of a batch journal's queue; the next one is scheduled if records arrived meanwhile.
template <BatchJournal J>
void commit_queued_records(const J& journal) {
  commit_now(journal);
  if (auto next = journal.group_commit().queue.finish(next_commit_place))
    gather_then_commit(journal, *next, 0, 0);
}

// A step of a journaled turn's engine on executor `ex`: its start (detail/execute_calls.hpp, start_turn) or a
// call's end (record_then_batched), which launches the calls it makes ready. With a batch journal, each of those
// calls queues its *started* record within the step (the engine launches them in the step's thread:
// detail/execute_calls.hpp), and the commit of the batch they open waits for the step's end. The end of the last
// step on that executor commits it, here, in the step's thread, before any of those calls can start: the calls
// that became ready together are committed together, whatever the pool. A batch that the step joined
// (a commit was already due or running) is committed by that commit or the next.
template <class J, class Executor>
void hold_journal(const J& journal, const Executor& ex) {
  if constexpr (BatchJournal<J>) journal.group_commit().queue.hold(context_of(boost::asio::any_io_executor(ex)));
  else (void)journal, (void)ex;
}
template <class J, class Executor>
void release_journal(const J& journal, const Executor& ex) {
  if constexpr (BatchJournal<J>) {
    if (journal.group_commit().queue.unhold(context_of(boost::asio::any_io_executor(ex)), next_commit_place,
                                            journal_hold_wait))
      commit_queued_records(journal);
  } else {
    (void)journal, (void)ex;
  }
}

// The end of a turn (the engine's last call completed, before its outcomes are returned): the *ended* records
// still queued are committed now, in this thread.
template <class J>
void flush_journal(const J& journal) {
  if constexpr (BatchJournal<J>) commit_now(journal);
}

// Queues a record of a batch journal; `then(error)` runs on `ex` once it is committed (error null) or not.
// Within a step (hold_journal), the step's end commits the batch; outside any step (a call whose coordinator
// grant arrived later) its commit is scheduled (gather_then_commit).
template <BatchJournal J, class F>
void queue_record(const J& journal, const boost::asio::any_io_executor& ex, journal_record record, F then) {
  auto tracked = boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked);
  auto& queue = journal.group_commit().queue;
  if (queue.add({std::move(record), record_completion(std::move(then)), tracked}, context_of(ex)) ==
      std::remove_reference_t<decltype(queue)>::added::schedule)
    gather_then_commit(journal, tracked, 0, 0);
}

// Schedules the commit of a batch that opened outside any step: it goes to the back of the executor's queue, at
// least twice and again as long as the batch grew meanwhile (at most `journal_gather_rounds` times), so that the
// records of calls started or ended by handlers queued meanwhile join it. Then, if engine steps hold the journal
// on that executor, it parks until they end (at most `journal_hold_wait` of them: a busy journal does not starve
// it), and the last one commits it; else it commits.
template <BatchJournal J>
void gather_then_commit(const J& journal, const boost::asio::any_io_executor& ex, std::size_t seen, int round) {
  boost::asio::post(ex, [journal, ex, seen, round] {
    auto& queue = journal.group_commit().queue;
    const std::size_t now = queue.size();
    if ((now != seen || round < 2) && round < journal_gather_rounds)
      gather_then_commit(journal, ex, now, round + 1);
    else if (!queue.park(context_of(ex)))
      commit_queued_records(journal);
  });
}

// The completion of a journaled call on a batch journal: queues its *ended* record and delivers its outcome.
// The record is committed with the next batch of the journal, or at the latest at the end of the turn, before
// the turn's outcomes are returned (flush_journal): a crash before that leaves the call in doubt, never run
// again silently.
template <class R, class J, class Done>
struct record_then_batched {
  J journal;
  std::string key;
  boost::asio::any_io_executor ex;
  Done done;
  void operator()(outcome<R> o) {
    try {
      journal.group_commit().queue.add_quiet({journal_record{key, {}, ended_entry(o), {}}, {}, ex});
    } catch (...) {
      // The end cannot be encoded or queued: delivered anyway, the call stays in doubt.
    }
    // A step of the engine: the calls this end makes ready queue their records, committed together when it ends.
    const J j = journal;  // copies: `done` may end the turn and free what holds this completion
    const boost::asio::any_io_executor step_ex = ex;
    hold_journal(j, step_ex);
    try {
      done(std::move(o));
    } catch (...) {
      release_journal(j, step_ex);
      throw;
    }
    release_journal(j, step_ex);
  }
};

// Records *started* (durably) and then runs the call: one record at a time on a plain journal or an inline
// executor; through the group-commit queue on a batch journal.
template <class R, class J, class Executor, class Done, class Run>
void start_journaled(const J& journal, const std::string& key, std::string_view name, const Executor& ex,
                     Done&& done, Run run) {
  if constexpr (BatchJournal<J> && !std::is_same_v<Executor, inline_executor>) {
    const boost::asio::any_io_executor any_ex(ex);
    queue_record(journal, any_ex, journal_record{key, std::string(name), {}, {}},
                 [journal, key, name = std::string(name), any_ex, done = std::forward<Done>(done),
                  run = std::move(run), token = current_fencing_token()](std::exception_ptr e) mutable {
                   if (e) {
                     done(journal_fault<R>(name, what_of(e)));
                     return;
                   }
                   // The call starts here, once its record is committed, on another stack than its coordinated
                   // start: under its grant's fencing token all the same (attempt_context::fencing_token).
                   struct token_scope {
                     std::uint64_t saved;
                     ~token_scope() { current_fencing_token() = saved; }
                   } const scope{std::exchange(current_fencing_token(), token)};
                   run(record_then_batched<R, J, std::decay_t<Done>>{journal, key, any_ex, std::move(done)});
                 });
  } else {
    (void)ex;
    try {
      journal.record_started(key, name);
    } catch (const std::exception& e) {
      done(journal_fault<R>(name, e.what()));
      return;
    }
    run(record_then<R, J, std::decay_t<Done>>{journal, key, std::forward<Done>(done)});
  }
}

// THE journaled start of a dispatched call: replays an ended call, refuses an
// in-doubt call that is not retry-safe, else records *started* durably and
// `run(done')` with `done'` recording the end. Journal faults: the call does
// not run and its outcome is a `journal_error`. A batch journal on a real
// executor commits the records of calls that start (or end) together at once
// (start_journaled).
template <class R, class J, class Executor, class Done, class Run>
void journal_call(const J& journal, const std::string& key, std::string_view name, effect_set effects,
                  const approver* in_doubt_approver, const Executor& ex, Done&& done, Run run) {
  static_assert(JournalEncodable<R>,
                "tool_effects: a journaled call's result type has no journal_codec<R>; specialise "
                "tool_effects::journal_codec for it");
  // An outcome decided here, without running the call (replayed, in doubt, a journal fault). A batch journal's
  // calls are launched in the engine's step (detail/execute_calls.hpp): their outcome is posted to the call's
  // executor, as a run call's would be, so that a step never completes calls inside itself (no recursion along
  // a chain of replayed calls).
  const auto deliver = [&](outcome<R> o) {
    if constexpr (BatchJournal<J> && !std::is_same_v<Executor, inline_executor>)
      boost::asio::post(ex, [d = std::decay_t<Done>(std::forward<Done>(done)), o = std::move(o)]() mutable {
        d(std::move(o));
      });
    else
      done(std::move(o));
  };
  if (key.empty()) {
    deliver(journal_fault<R>(name, "a journaled call needs an idempotency key (json_tool_host derives one; for a "
                                   "static call use call(...).with_idempotency_key(k))"));
    return;
  }
  try {
    if (const auto e = journal.find(key)) {
      if (e->at == journal_entry::state::ended) {
        deliver(replay<R>(*e, name, effects));
        return;
      }
      if (!may_retry(effects, false)) {
        bool approved = false;
        std::exception_ptr approver_error;
        if (in_doubt_approver != nullptr) {
          try {
            confirmation_request request = make_confirmation_request(name, {}, effects, key);
            request.may_already_have_happened = true;
            approved = in_doubt_approver->ask(request) == confirmation::approve;
          } catch (...) {
            approver_error = std::current_exception();
          }
        }
        if (!approved) {
          auto rec =
              make_failure_record(std::string(name), 0, classify(effects), failure_reason::in_doubt, approver_error);
          rec.last_error_message = str_cat("started in an earlier run that did not end (key ", key,
                                           "): it may already have happened",
                                           in_doubt_approver ? "; the approver did not approve running it again" : "");
          deliver(outcome<R>::failure(std::make_exception_ptr(call_failure(std::move(rec)))));
          return;
        }
      }
    }
  } catch (const std::exception& e) {
    deliver(journal_fault<R>(name, e.what()));
    return;
  }
  start_journaled<R>(journal, key, name, ex, std::forward<Done>(done), std::move(run));
}

}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JOURNAL_HPP
