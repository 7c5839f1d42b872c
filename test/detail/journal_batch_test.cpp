// The group-commit queue of a batch journal (detail/journal_batch.hpp), step by step: one commit per batch, every
// item in exactly one commit, a batch opened within a step (a hold) is parked until the step ends, holds park a
// commit only on their own executor, and a bounded number of unholds resumes it.
#include <tool_effects/detail/journal_batch.hpp>

#include <gtest/gtest.h>

#include <exception>
#include <optional>
#include <vector>

namespace journal_batch_test_ns {

using tool_effects::detail::batch_queue;
using tool_effects::detail::record_completion;
using added = batch_queue<int>::added;

namespace {
int pool_a = 0, pool_b = 0;  // two execution contexts (only their addresses count)
// Where a commit may run: an item of a waiting call (> 0); quiet items (< 0) give no place.
std::optional<int> oldest(const int& item) { return item > 0 ? std::optional<int>(item) : std::nullopt; }
}  // namespace

TEST(JournalBatch, OneCommitIsScheduledPerBatchAndEveryItemIsInExactlyOne) {
  batch_queue<int> q;
  EXPECT_EQ(q.add(1, &pool_a), added::schedule) << "the first item opens a batch";
  EXPECT_EQ(q.add(2, &pool_a), added::joined) << "a batch is open: its commit is already scheduled";
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.take(), (std::vector<int>{1, 2}));
  EXPECT_EQ(q.add(3, &pool_a), added::joined) << "the commit is running: the item waits for the next one";
  EXPECT_EQ(q.finish(oldest), std::optional<int>(3)) << "items arrived meanwhile: the next commit is due";
  EXPECT_EQ(q.take(), (std::vector<int>{3}));
  EXPECT_EQ(q.finish(oldest), std::nullopt);
  EXPECT_EQ(q.add(4, &pool_a), added::schedule) << "idle again: a new batch opens";
  q.add_quiet(5);
  EXPECT_EQ(q.take(), (std::vector<int>{4, 5}));
  EXPECT_EQ(q.finish(oldest), std::nullopt);
  q.add_quiet(6);
  EXPECT_EQ(q.add(7, &pool_a), added::schedule) << "a quiet item opens no batch";
  EXPECT_EQ(q.take(), (std::vector<int>{6, 7}));
  q.add_quiet(-8);
  EXPECT_EQ(q.finish(oldest), std::nullopt) << "only a quiet item waits: no commit is scheduled for it";
  EXPECT_EQ(q.add(9, &pool_a), added::schedule) << "and the queue is idle";
}

// Issue 39.2: the calls an engine step makes ready (the turn's start, a call's end) queue their records within
// the step, and the step's end commits them together, whatever the number of threads. Control: an item added
// outside any step is scheduled at once (the dispatcher then goes round the executor's queue instead).
TEST(JournalBatch, ABatchOpenedWithinAStepIsCommittedWhenTheStepEnds) {
  batch_queue<int> q;
  q.hold(&pool_a);                                   // the turn's start
  EXPECT_EQ(q.add(1, &pool_a), added::parked) << "opened within the step: parked until it ends";
  for (int i = 2; i <= 16; ++i) EXPECT_EQ(q.add(i, &pool_a), added::joined);
  q.hold(&pool_a);                                   // another step on the same pool (another turn)
  EXPECT_EQ(q.unhold(&pool_a, oldest, 64), std::nullopt) << "a step is still running there";
  EXPECT_EQ(q.unhold(&pool_a, oldest, 64), std::optional<int>(1)) << "the last step's end commits the batch";
  EXPECT_EQ(q.take().size(), 16u) << "all 16 in one commit";
  EXPECT_EQ(q.finish(oldest), std::nullopt);
  q.hold(&pool_b);
  EXPECT_EQ(q.add(17, &pool_a), added::schedule) << "a step on another pool does not hold this one's batch";
  EXPECT_EQ(q.unhold(&pool_b, oldest, 64), std::nullopt);
}

TEST(JournalBatch, HoldsParkACommitOnlyOnTheirOwnExecutor) {
  batch_queue<int> q;
  ASSERT_EQ(q.add(1, &pool_a), added::schedule);
  q.hold(&pool_b);
  EXPECT_FALSE(q.park(&pool_a)) << "a hold on another executor does not delay the commit";
  q.hold(&pool_a);
  q.hold(&pool_a);
  EXPECT_TRUE(q.park(&pool_a));
  EXPECT_EQ(q.unhold(&pool_b, oldest, 64), std::nullopt) << "another executor's unhold does not resume it";
  EXPECT_EQ(q.unhold(&pool_a, oldest, 64), std::nullopt) << "one hold is left";
  EXPECT_EQ(q.unhold(&pool_a, oldest, 64), std::optional<int>(1)) << "the last hold resumes the parked commit";
  EXPECT_EQ(q.unhold(&pool_a, oldest, 64), std::nullopt) << "resumed once";
}

TEST(JournalBatch, ABusyExecutorCannotStarveAParkedCommit) {
  batch_queue<int> q;
  ASSERT_EQ(q.add(1, &pool_a), added::schedule);
  for (int i = 0; i < 10; ++i) q.hold(&pool_a);
  ASSERT_TRUE(q.park(&pool_a));
  for (int i = 0; i < 3; ++i) q.hold(&pool_a);  // new calls keep coming
  EXPECT_EQ(q.unhold(&pool_a, oldest, 3), std::nullopt);
  EXPECT_EQ(q.unhold(&pool_a, oldest, 3), std::nullopt);
  EXPECT_EQ(q.unhold(&pool_a, oldest, 3), std::optional<int>(1)) << "the 3rd unhold since it parked resumes it";
}

TEST(JournalBatch, AParkedCommitWhoseItemsWereTakenMeanwhileLeavesTheQueueIdle) {
  batch_queue<int> q;
  ASSERT_EQ(q.add(1, &pool_a), added::schedule);
  q.hold(&pool_a);
  ASSERT_TRUE(q.park(&pool_a));
  EXPECT_EQ(q.take(), (std::vector<int>{1}));  // the turn's end committed it
  EXPECT_EQ(q.unhold(&pool_a, oldest, 64), std::nullopt);
  EXPECT_EQ(q.add(2, &pool_a), added::schedule) << "not stuck: the next item opens a batch";
}

TEST(JournalBatch, ACompletionRunsOnceWithItsError) {
  int calls = 0;
  std::exception_ptr seen;
  record_completion c([&](std::exception_ptr e) {
    ++calls;
    seen = e;
  });
  EXPECT_TRUE(static_cast<bool>(c));
  EXPECT_FALSE(static_cast<bool>(record_completion{}));
  c(std::make_exception_ptr(7));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(seen);
}

}  // namespace journal_batch_test_ns
