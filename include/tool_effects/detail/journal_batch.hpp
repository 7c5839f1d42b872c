// tool_effects/detail/journal_batch.hpp — internal to journal.hpp: the group-commit queue of a batch journal
// (`BatchJournal`), a state machine with no I/O of its own.
//
// Records arrive from any thread (`add`; `add_quiet` queues one for the next commit without asking for one).
// The first record after an idle period opens a batch, which gets exactly one commit: records that arrive
// before that commit runs, or while it runs, wait in the queue. The commit takes every queued record at once
// (`take`), writes them in one transaction, and then asks `finish`: if records arrived meanwhile, the next
// commit is due at once (on the executor of the oldest of them), else the queue is idle again. So at most one
// commit per journal is due or running at any time, and every record is in exactly one commit.
// Where the commit of a new batch runs:
// - Holds (`hold` .. `unhold`, per execution context) are the engine's steps: a turn's start, or a call's end,
//   which launch the calls they make ready; each such call queues its record within the step. A batch opened
//   on a context that holds the journal is parked there (`add` says so), and the unhold that ends the last hold
//   there commits it, in its own thread: the calls that became ready together commit together, however many
//   threads the pool has.
// - Else (a record queued outside any step: a call whose coordinator grant came later) the caller schedules
//   the commit (`add` says so); the scheduled commit goes round its executor's queue while the batch grows (a
//   bounded number of rounds), and parks if holds appeared meanwhile on its context (`park`).
// A parked commit resumes at the latest after a bounded number of unholds there (a busy journal does not
// starve it). The dispatcher (journal.hpp) does the scheduling and the writing; docs/coordination.md and
// docs/performance-notes.md have the reasoning (what "together" means, the fsync count).
#ifndef TOOL_EFFECTS_DETAIL_JOURNAL_BATCH_HPP
#define TOOL_EFFECTS_DETAIL_JOURNAL_BATCH_HPP

#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace tool_effects::detail {

// A move-only `void(std::exception_ptr)`: what happens once a record's commit is over (null: committed).
class record_completion {
 public:
  record_completion() = default;  // nothing to do
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, record_completion>)
  explicit record_completion(F f) : p_(std::make_unique<impl<F>>(std::move(f))) {}
  void operator()(std::exception_ptr e) { (*p_)(std::move(e)); }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  struct base {
    virtual ~base() = default;
    virtual void operator()(std::exception_ptr e) = 0;
  };
  template <class F>
  struct impl final : base {
    F f;
    explicit impl(F&& g) : f(std::move(g)) {}
    void operator()(std::exception_ptr e) override { f(std::move(e)); }
  };
  std::unique_ptr<base> p_;
};

// The queue: items of type T (a record, its completion, its executor). Thread-safe.
template <class T>
class batch_queue {
 public:
  // What `add` did with the batch.
  enum class added {
    joined,    // a batch was open (its commit is due or running): the item waits for it or for the next one
    schedule,  // a batch opened: the caller schedules its commit
    parked,    // a batch opened and is parked on the holds of `where`: the unhold that ends them commits it
  };
  // Queues `item`, whose commit would run on the executor of context `where`.
  [[nodiscard]] added add(T item, const void* where) {
    std::lock_guard lock(m_);
    items_.push_back(std::move(item));
    if (std::exchange(scheduled_, true)) return added::joined;
    if (count_of(where) == 0) return added::schedule;
    parked_ = where;
    unholds_while_parked_ = 0;
    return added::parked;
  }
  // A hold: an engine step on the executor whose execution context is `where` is launching calls, whose
  // records arrive before its unhold.
  void hold(const void* where) {
    std::lock_guard lock(m_);
    for (auto& h : holds_)
      if (h.where == where) {
        ++h.count;
        return;
      }
    holds_.push_back({where, 1});
  }
  // A scheduled commit, on the executor of context `where`, found holds there: it parks (true) and the unhold
  // that ends them resumes it. (Holds on other executors do not stop it: a busy pool elsewhere cannot delay it.)
  [[nodiscard]] bool park(const void* where) {
    std::lock_guard lock(m_);
    if (count_of(where) == 0) return false;
    parked_ = where;
    unholds_while_parked_ = 0;
    return true;
  }
  // A hold ended. If a commit is parked on that executor and this was the last hold there (or the
  // `max_wait`-th since it parked: a busy journal does not starve it), it is due now: `pick`'s place (as in
  // finish) says so, and the caller commits.
  template <class Pick>
  [[nodiscard]] auto unhold(const void* where, Pick pick, std::size_t max_wait) -> std::invoke_result_t<Pick, const T&> {
    std::lock_guard lock(m_);
    for (std::size_t i = 0; i < holds_.size(); ++i)
      if (holds_[i].where == where && --holds_[i].count == 0) {
        holds_[i] = holds_.back();
        holds_.pop_back();
        break;
      }
    if (parked_ != where || (count_of(where) != 0 && ++unholds_while_parked_ < max_wait)) return std::nullopt;
    parked_ = nullptr;
    return next_commit(pick);  // (nothing if a turn's end took the items meanwhile)
  }
  // Queues `item` without opening a batch: it waits for the next commit, whoever runs it.
  void add_quiet(T item) {
    std::lock_guard lock(m_);
    items_.push_back(std::move(item));
  }
  // How many items are queued.
  [[nodiscard]] std::size_t size() {
    std::lock_guard lock(m_);
    return items_.size();
  }
  // Every queued item, for the commit that runs now.
  [[nodiscard]] std::vector<T> take() {
    std::lock_guard lock(m_);
    return std::exchange(items_, {});
  }
  // The commit is over. The next one is due if an item waits that `pick` gives a place to run it (an
  // optional: the oldest such item's); else the queue is idle (quiet items wait for whoever commits next).
  template <class Pick>
  [[nodiscard]] auto finish(Pick pick) -> std::invoke_result_t<Pick, const T&> {
    std::lock_guard lock(m_);
    return next_commit(pick);
  }

 private:
  struct holds_at {
    const void* where;
    std::size_t count;
  };
  template <class Pick>
  auto next_commit(Pick& pick) -> std::invoke_result_t<Pick, const T&> {
    for (const T& item : items_)
      if (auto where = pick(item)) return where;
    scheduled_ = false;
    return std::nullopt;
  }
  std::size_t count_of(const void* where) const {
    for (const auto& h : holds_)
      if (h.where == where) return h.count;
    return 0;
  }

  std::mutex m_;
  std::vector<T> items_;
  std::vector<holds_at> holds_;
  std::size_t unholds_while_parked_ = 0;
  bool scheduled_ = false;
  const void* parked_ = nullptr;  // the context of the executor of the parked commit
};

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_JOURNAL_BATCH_HPP
