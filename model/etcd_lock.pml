/* etcd_lock.pml — the acquire / wait / release protocol of the etcd coordinator (issue 18), for spin.
 *
 * What is modelled (docs/coordination.md, "Across machines: etcd", says what is abstracted away):
 *   - etcd as one linearizable store: a revision counter, and per client the keys of its current call
 *     (present, create revision, which call they belong to) under the client's lease. A Txn is one atomic step.
 *   - N = 3 clients running up to CALLS = 2 calls in sequence (5 calls); each call declares read / write /
 *     append accesses to NRES = 3 resources (bit masks). The call table (init) mixes overlapping, disjoint
 *     and commuting calls.
 *   - acquire: one Txn puts the call's keys (a retried Txn finds its own key and keeps its create revision)
 *     and reads the conflicting keys; the call is granted when no conflicting key is OLDER than its own,
 *     otherwise it watches the newest older conflicting key until that key is gone, then checks again with a
 *     Txn that first compares its own key's create revision (a lost key means a lost lease: lease_lost).
 *   - lost requests and lost responses (the client times out and retries), bounded by MAXLOSS;
 *     watches that end without the event (compaction, a cancelled watch, a member failover), bounded by
 *     MAXWAKE: the client then checks again;
 *   - a client paused (SIGSTOP) past its lease TTL, at most MAXPAUSE times: the lease may expire, etcd
 *     deletes its keys; when it resumes it either notices (lease_lost) or goes on with stale grants;
 *   - a client that crashes (at most MAXCRASH): its lease expires and its keys go;
 *   - fenced resources: each remembers the largest token that wrote it (or read it under a write grant);
 *     an access with a smaller token is refused. A write grant does read-modify-write.
 *
 * Checked (scripts/model-check):
 *   safety (assertions, invalid end states = deadlock):
 *     - mutual exclusion: when a call is granted, no conflicting call of a live lease holds a grant;
 *     - FIFO: when a call is granted, no conflicting key older than its own exists;
 *     - fencing: a read-modify-write accepted by the resource saw no other write in between (no lost update)
 *       even when a paused holder resumes with its old grant;
 *     - no deadlock: every client reaches its end.
 *   liveness (ltl `live`, weak fairness): every client eventually ends all its calls, each granted or failed.
 * Variants that must FAIL (the controls; -D at spin time):
 *   -DPAPER_RULE  the rule first written for issue 18 ("granted if every range is empty or its oldest key is
 *                 the call's own"): a reader older than a writer waits forever (liveness violated).
 *   -DNO_FENCE    resources without the fence check: a paused writer's stale write is a lost update.
 */

#define N 3
#define CALLS 2
#define NRES 3
#define NONE 255

#ifndef MAXLOSS
#define MAXLOSS 1
#endif
#ifndef MAXWAKE
#define MAXWAKE 1
#endif
#ifndef MAXPAUSE
#define MAXPAUSE 1
#endif
#ifndef MAXCRASH
#define MAXCRASH 1
#endif
/* which client may be paused: 0..N-1, or ANY (the full check) */
#define ANY 255
#ifndef PAUSER
#define PAUSER ANY
#endif

/* the call table: bit r of Rm/Wm/Am = the call reads / writes / appends to resource r.
   Call c*CALLS + k is client c's k-th call. */
byte Rm[N * CALLS];
byte Wm[N * CALLS];
byte Am[N * CALLS];
byte ncalls[N];   /* how many calls client c makes (at most CALLS) */

/* --- etcd: the store ---------------------------------------------------------------------------- */
byte rev = 1;              /* the store's revision */
bool present[N];           /* client c's current call has its keys in the store */
byte crev[N];              /* their create revision */
byte call_of[N];           /* which call they belong to */
bool lease_alive[N];       /* client c's lease exists in the store */

/* --- fenced resources ----------------------------------------------------------------------------- */
byte max_w[NRES];          /* the largest token that wrote (or read under a write grant) */
byte ver[NRES];            /* bumped by every accepted write */

/* --- ghosts and fault budgets --------------------------------------------------------------------- */
bool holding[N];           /* the client believes it holds its call's grant */
bool paused[N];
bool crashed[N];
bool done[N];              /* the client ended all its calls (each granted or failed), or crashed */
byte losses = 0;
byte wakes = 0;
byte pauses = 0;
byte crashes = 0;

/* THE conflict rule of access.hpp on modes: write conflicts with everything, read with append. */
#define CONFLICT_CALLS(a, b) \
  (((Wm[a] & (Rm[b] | Wm[b] | Am[b])) | (Wm[b] & (Rm[a] | Am[a])) | (Rm[a] & Am[b]) | (Am[a] & Rm[b])) != 0)
#define CONFLICT(i, j) CONFLICT_CALLS(call_of[i], call_of[j])

/* A lost message: the client times out and sends again (bounded, so that runs end). */
#define LOSE (losses < MAXLOSS) -> losses++

/* The lease of a paused or crashed client may expire: etcd deletes its keys (one revision). */
active proctype lease_expiry() {
  byte c;
end_expiry:
  do
  :: d_step {
       (paused[0] || crashed[0]) && lease_alive[0] -> c = 0;
       lease_alive[c] = 0; if :: present[c] -> present[c] = 0; rev++ :: else -> skip fi; c = 0 }
  :: d_step {
       (paused[1] || crashed[1]) && lease_alive[1] -> c = 1;
       lease_alive[c] = 0; if :: present[c] -> present[c] = 0; rev++ :: else -> skip fi; c = 0 }
  :: d_step {
       (paused[2] || crashed[2]) && lease_alive[2] -> c = 2;
       lease_alive[c] = 0; if :: present[c] -> present[c] = 0; rev++ :: else -> skip fi; c = 0 }
  od
}

/* The newest conflicting key older than `me`'s own (NONE if there is none). */
inline newest_older(me, blocker, brev, j) {
  blocker = NONE; brev = 0; j = 0;
  do
  :: j < N ->
     if
     :: j != me && present[j] && crev[j] < crev[me] && CONFLICT(me, j) && crev[j] >= brev ->
        blocker = j; brev = crev[j]
     :: else -> skip
     fi;
     j++
  :: else -> break
  od
}

#ifdef PAPER_RULE
/* The first written rule: per range (resource r, conflicting mode), the call is granted when the range is
   empty or its oldest key is the call's own. `ok` = granted. */
inline paper_granted(me, ok, j, r, m, oldest, orev, inrange) {
  ok = 1; r = 0;
  do
  :: r < NRES ->
     m = 0;
     do
     :: m < 3 ->
        /* m: 0 = read range, 1 = write range, 2 = append range; checked when it conflicts with one of
           `me`'s modes on r */
        if
        :: (m == 0 && (((Wm[call_of[me]]) >> r) & 1)) ||
           (m == 1 && ((((Rm[call_of[me]]) | (Wm[call_of[me]]) | (Am[call_of[me]])) >> r) & 1)) ||
           (m == 2 && ((((Rm[call_of[me]]) | (Wm[call_of[me]])) >> r) & 1)) ->
           oldest = NONE; orev = 255; j = 0;
           do
           :: j < N ->
              inrange = present[j] &&
                ((m == 0 && ((Rm[call_of[j]] >> r) & 1)) || (m == 1 && ((Wm[call_of[j]] >> r) & 1)) ||
                 (m == 2 && ((Am[call_of[j]] >> r) & 1)));
              if :: inrange && crev[j] < orev -> oldest = j; orev = crev[j] :: else -> skip fi;
              j++
           :: else -> break
           od;
           if :: oldest != NONE && oldest != me -> ok = 0 :: else -> skip fi
        :: else -> skip
        fi;
        m++
     :: else -> break
     od;
     r++
  :: else -> break
  od
}
#endif

/* May pause here (SIGSTOP past the TTL). On resume the client either learns from its keepalive that the
   lease is gone (lost = 1) or not yet (it goes on; the fence must catch it). */
inline maybe_pause(me, lost) {
  if
  :: pauses < MAXPAUSE && (PAUSER == ANY || PAUSER == me) -> pauses++; paused[me] = 1;
     paused[me] = 0;   /* resumes; the lease_expiry process may have run in between */
     if :: !lease_alive[me] -> lost = 1 :: true -> skip fi
  :: true -> skip
  fi
}

/* A fenced access to resource r with `token`; `bump`: a write, or a read under a write grant. */
inline fenced(r, token, bump, accepted) {
#ifdef NO_FENCE
  accepted = 1;
#else
  accepted = (token >= max_w[r]);
#endif
  if :: accepted && bump && token > max_w[r] -> max_w[r] = token :: else -> skip fi
}

proctype client(byte me) {
  byte k = 0;
  byte call;
  byte blocker, brev, j, r, my_rev, readver;
  bool granted, lost, accepted;
#ifdef PAPER_RULE
  byte m, oldest, orev;
  bool inrange;
#endif

  do
  :: k < ncalls[me] ->
     call = me * CALLS + k;
     lost = 0;
     /* the keepalive told us about a lost lease between calls: a new lease for this call */
     lease_alive[me] = 1;
     /* a crash: the lease expires later, the keys go with it */
     if
     :: crashes < MAXCRASH -> crashes++; crashed[me] = 1; goto crash
     :: true -> skip
     fi;

acquire: skip;  /* the one Txn: put the call's keys under the lease (kept if already there), read the ranges */
     if
     :: LOSE; goto acquire                       /* request lost */
     :: d_step {
          if
          :: !lease_alive[me] -> lost = 1
          :: else ->
             if
             :: !present[me] -> rev++; present[me] = 1; crev[me] = rev; call_of[me] = call
             :: else -> skip                   /* a retry: the key keeps its create revision */
             fi;
             my_rev = crev[me];
#ifdef PAPER_RULE
             paper_granted(me, granted, j, r, m, oldest, orev, inrange);
#endif
             newest_older(me, blocker, brev, j);
#ifndef PAPER_RULE
             granted = (blocker == NONE);
#endif
          fi }
     fi;
     if
     :: LOSE; goto acquire                       /* response lost: the retry finds the key */
     :: true -> skip
     fi;

wait:
     if
     :: lost -> goto failed
     :: !lost && granted -> goto grant
     :: else -> skip
     fi;
     /* watch the newest older conflicting key until it is deleted (its create revision no longer there) */
     if
     :: blocker != NONE -> 
        if
        :: !(present[blocker] && crev[blocker] == brev) -> skip    /* the delete event */
        :: wakes < MAXWAKE -> wakes++                              /* watch ended early: check again */
        fi
     :: else -> skip      /* nothing older to watch (only the first written rule gets here) */
     fi;
     maybe_pause(me, lost);
     if :: lost -> goto failed :: else -> skip fi;

recheck: skip;  /* If(create_revision(own key) == my_rev) Then(range the conflicting keys) Else(lease_lost) */
     if
     :: LOSE; goto recheck
     :: d_step {
          if
          :: !(present[me] && crev[me] == my_rev) -> lost = 1
          :: else ->
#ifdef PAPER_RULE
             paper_granted(me, granted, j, r, m, oldest, orev, inrange);
#endif
             newest_older(me, blocker, brev, j);
#ifndef PAPER_RULE
             granted = (blocker == NONE);
#endif
          fi }
     fi;
     /* (a lost response to this read-only Txn is the same as a lost request: not modelled twice) */
     goto wait;

grant: skip;
     d_step {
       /* FIFO: no conflicting key older than ours */
       j = 0;
       do
       :: j < N -> assert(!(j != me && present[j] && crev[j] < my_rev && CONFLICT(me, j))); j++
       :: else -> break
       od;
       /* mutual exclusion among live leases */
       j = 0;
       do
       :: j < N ->
          assert(!(lease_alive[me] && j != me && holding[j] && lease_alive[j] && CONFLICT(me, j))); j++
       :: else -> break
       od;
       holding[me] = 1 }
     maybe_pause(me, lost);
     /* the call's accesses, each fenced with the grant's token */
     r = 0;
     do
     :: r < NRES && !lost ->
        if
        :: (Wm[call] >> r) & 1 ->                   /* read-modify-write */
           if
           :: d_step {              /* not paused in between: read and write back to back */
                fenced(r, my_rev, 1, accepted); readver = ver[r];
                if :: accepted -> assert(ver[r] == readver); ver[r]++ :: else -> skip fi }
           :: pauses < MAXPAUSE && (PAUSER == ANY || PAUSER == me) ->  /* paused between read and write */
              d_step { fenced(r, my_rev, 1, accepted); readver = ver[r] }
              maybe_pause(me, lost);
              if
              :: accepted && !lost ->
                 d_step {
                   fenced(r, my_rev, 1, accepted);
                   if :: accepted -> assert(ver[r] == readver); ver[r]++ :: else -> skip fi }
              :: else -> skip
              fi
           fi
        :: ((Rm[call] | Am[call]) >> r) & 1 ->
           d_step { fenced(r, my_rev, 0, accepted) }
        :: else -> skip
        fi;
        r++
     :: else -> break
     od;
     holding[me] = 0;
release: skip;  /* delete the call's keys (idempotent; lost requests are sent again) */
     if
     :: LOSE; goto release
     :: d_step { if :: present[me] && crev[me] == my_rev -> present[me] = 0; rev++ :: else -> skip fi }
     fi;
     k++;
     goto next;
failed: skip;
     holding[me] = 0;
     /* the keys may still be there (a lost response, or the lease came back): delete them */
     d_step { if :: present[me] && crev[me] == my_rev -> present[me] = 0; rev++ :: else -> skip fi }
     k++;
next: skip;
     d_step { blocker = 0; brev = 0; j = 0; r = 0; my_rev = 0; readver = 0; granted = 0; lost = 0; accepted = 0 }
  :: else -> break
  od;
  done[me] = 1;
  goto finish;
crash:
  done[me] = 1;
finish:
  skip
}

init {
  atomic {
    /* client 0: write r0, then append r2      client 1: read r0 and r1, then append r2
       client 2: write r0 and r2.
       Overlapping: 0a-2 (write/write r0), 1a-0a and 1a-2 (read/write r0), 0b-2 and 1b-2 (append/write r2);
       disjoint: 0a-1b, 1a-0b; commuting: 0b-1b (append/append r2). */
    Wm[0] = 1;  Am[1] = 4;  ncalls[0] = 2;
    Rm[2] = 3;  Am[3] = 4;  ncalls[1] = 2;
    Wm[4] = 5;              ncalls[2] = 1;
    run client(0); run client(1); run client(2)
  }
}

ltl live { <> (done[0] && done[1] && done[2]) }
