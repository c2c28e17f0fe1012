/*
 * thread_dump.c — the whole-process dump of a report: every thread's stack,
 * name and wait, the main thread first, then the threads of its wait
 * chain, then running threads, then the rest.
 *
 * Owns: the order and the cap (max_threads) of a report's thread list,
 * the list's memory, and the chain and deadlock computed from it
 * (wait_chain.c), a deadlock confirmed by sampling its threads once more.
 * Must not: name a stack or read a thread's name while any
 * thread is stopped (all are captured first; each capture returns with
 * its thread running again), or list the watchdog or any other thread of
 * the library's (snap__plat_thread_is_ours).
 *
 * Run states are read before any thread is sampled: a thread just
 * sampled is still leaving the signal handler, and would read "running".
 * Each thread's state is src/blocked/'s answer from that reading and its
 * sample's wait (judge_state); the reading alone only orders the list
 * (threads on a CPU or a run queue before the rest).
 * The same read gives each thread's start, which says whether a thread a
 * lock's memory names can be its owner (snap__wait_judge_owner: one that
 * began after the wait began is an exited owner's reused TID); an owner
 * that is not listed is looked at once, and main's owner was looked at
 * with main's sample (main_sample.c). An owner is judged before the
 * chain follows it: an innocent thread is neither named nor sampled as
 * the holder.
 *
 * Order: the main thread's wait names the owner of the lock it waits on
 * (snap__capture_thread_wait); that owner is sampled next, then the owner
 * of what it waits on, and so on until a thread waits on nothing with a
 * known owner, or one already sampled (a cycle). So the cap and the budget
 * never cut the threads that say why main waits. An owner that is not in
 * the thread list (born after it was read, or past its 4096 entries) is
 * sampled all the same if the cap allows.
 *
 * Time: threads are sampled one after another, each allowed the sample
 * timeout; the dump as a whole gets one budget (dump_budget_ms), after
 * which the rest are listed unsampled (the chain's threads excepted: they
 * come first, and there are at most max of them), and a thread that
 * blocks the sampling signal is listed at once
 * (snap__plat_sample_reachable) rather than waited for: 64 such threads
 * once cost 6.4 s.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "lag/lag.h"

static bool in_list(const snap__lag_thread_t *ts, int k, snap_thread_t tid) {
  for (int j = 0; j < k; j++)
    if (ts[j].tid == tid)
      return true;
  return false;
}

/* The threads were sampled one after another (main's wait even before
   the dump), so a cycle in their waits may mix moments: a lock handed on
   between two samples. A deadlock stands only if every thread on the
   cycle, sampled again now, still waits on the same lock held by the same
   thread; nothing on a true cycle can have moved. */
static bool cycle_stands(const snap__lag_thread_t *ts,
                         const snap__wait_chain_t *cycle, unsigned flags) {
  static uintptr_t pcs[SNAP__DUMP_DEPTH]; /* the watchdog's thread only */
  for (int i = 0; i < cycle->n; i++) {
    const snap__lag_thread_t *t = &ts[cycle->at[i]];
    snap_wait_t now = {.size = sizeof now};
    if (snap__capture_thread_wait(t->tid, pcs, SNAP__DUMP_DEPTH, flags, &now,
                                  false, NULL) < 0 ||
        now.owner_state != SNAP_OWNER_KNOWN || now.owner != t->wait.owner ||
        now.address != t->wait.address)
      return false;
  }
  return true;
}

/* The threads listed, and one look at each (tids as read: the dump marks
   the ones it took in `all`). */
typedef struct looked {
  const snap_thread_t *tid;
  const int *rc;
  const snap__plat_thread_look_t *look;
  int n;
} looked_t;

/* Judges t's owner against the look the list has of it, or one taken now
   for an owner that is not listed. */
static void judge(snap__lag_thread_t *t, const looked_t *l, uint64_t from_ns) {
  snap__plat_thread_look_t look = {0};
  int rc = SNAP_ENOTHREAD;
  if (t->wait.owner_state == SNAP_OWNER_KNOWN) {
    int i = 0;
    while (i < l->n && l->tid[i] != t->wait.owner)
      i++;
    if (i < l->n) {
      rc = l->rc[i];
      look = l->look[i];
    } else {
      rc = snap__plat_thread_look(t->wait.owner, &look);
    }
  }
  snap__wait_judge_owner(t, from_ns, rc, &look);
}

/* t's state from what the OS said of it before any sample (ready: on a
   CPU or a run queue) and its sample's wait, if it was sampled. */
static void judge_state(snap__lag_thread_t *t, bool ready, bool sampled,
                        bool wait_from_os) {
  snap__plat_sched_t os = snap__plat_sched_unknown();
  if (ready)
    os.run = SNAP__RUN_READY;
  t->state = snap__state_judge(
      &(snap__state_facts_t){.cpu0_ns = -1,
                             .cpu1_ns = -1,
                             .runq0_ns = -1,
                             .runq1_ns = -1,
                             .os = &os,
                             .wait = sampled ? &t->wait : NULL,
                             .wait_from_os = wait_from_os,
                             .plat = snap__plat_trace_facts()});
}

/* Samples t (its tid set) into pcs: its wait, error and state set, the
   frame count returned (0 when it could not be sampled: t->error says
   why). ready: the OS's run state read before. A thread that blocks the
   sampling signal is not waited for. */
static int sample_into(snap__lag_thread_t *t, uintptr_t *pcs, unsigned flags,
                       bool ready) {
  t->wait = (snap_wait_t){.size = sizeof t->wait};
  bool from_os = false;
  int got = snap__plat_sample_reachable(t->tid);
  if (got == SNAP_OK)
    got = snap__capture_thread_wait(t->tid, pcs, SNAP__DUMP_DEPTH, flags,
                                    &t->wait, false, &from_os);
  t->error = got < 0 ? got : SNAP_OK;
  judge_state(t, ready, got >= 0, from_os);
  return got < 0 ? 0 : got;
}

void snap__thread_dump(snap__lag_report_t *r, const snap__main_sample_t *main,
                       snap_thread_t self, unsigned max_threads,
                       uint64_t budget_ns, const snap__wait_since_t *since) {
  uint64_t deadline = snap__plat_now_ns() + budget_ns;
  int cap = 4096, max = (int)max_threads;
  snap_thread_t *all = malloc(sizeof *all * (size_t)cap);
  snap_thread_t *ids = malloc(sizeof *ids * (size_t)cap);
  snap__plat_thread_look_t *looks = calloc((size_t)cap, sizeof *looks);
  int *look_rc = malloc(sizeof *look_rc * (size_t)cap);
  snap__lag_thread_t *ts = calloc((size_t)max, sizeof *ts);
  uintptr_t(*pcs)[SNAP__DUMP_DEPTH] = malloc(sizeof *pcs * (size_t)max);
  int *npcs = calloc((size_t)max, sizeof *npcs);
  int total = all ? snap_thread_list(all, cap) : SNAP_ENOMEM;
  if (!ids || !looks || !look_rc || !ts || !pcs || !npcs || total < 0) {
    free(all);
    free(ids);
    free(looks);
    free(look_rc);
    free(ts);
    free(pcs);
    free(npcs);
    return;
  }
  int n = total < cap ? total : cap;
  r->threads_total = total;
  for (int i = 0; i < n; i++) {
    /* Not the app's: the watchdog, the trace's sampler (whose blocked
       signals would list it as unsampleable), any other of ours. */
    if (all[i] == self || snap__plat_thread_is_ours(all[i])) {
      r->threads_total--;
      all[i] = 0;
    }
    ids[i] = all[i];
    look_rc[i] = SNAP_ENOTHREAD;
    if (all[i] == main->tid) { /* judged with its sample */
      look_rc[i] = SNAP_OK;    /* its start unknown: it is the process's */
    } else if (all[i]) {
      look_rc[i] = snap__plat_thread_look(all[i], &looks[i]);
    }
  }
  const looked_t looked = {ids, look_rc, looks, n};
  unsigned flags = snap__lag_capture_flags();
  int k = 0;
  /* The main thread, as last sampled. */
  for (int i = 0; i < n && k < max; i++) {
    if (!all[i] || all[i] != main->tid)
      continue;
    ts[k] =
        (snap__lag_thread_t){.tid = all[i], .main = true, .state = main->state};
    all[i] = 0;        /* taken */
    int got = main->n; /* a count, or why there is none */
    if (got > 0) {
      memcpy(pcs[k], main->pcs, sizeof(uintptr_t) * (size_t)got);
      ts[k].wait = main->wait;
      snap__wait_judge_owner(&ts[k], since->main_ns, main->owner_rc,
                             &main->owner);
    }
    ts[k].error = got < 0 ? got : SNAP_OK;
    npcs[k] = got < 0 ? 0 : got;
    k++;
  }
  /* Its chain: the owner of each wait, while there is a new one. */
  const snap_wait_t *w = k > 0 ? &ts[0].wait : NULL;
  while (w && w->kind != SNAP_WAIT_NONE && w->owner_state == SNAP_OWNER_KNOWN &&
         k < max) {
    snap_thread_t owner = w->owner;
    if (in_list(ts, k, owner) || owner == self)
      break; /* a cycle closes (or the watchdog, which waits on no lock) */
    ts[k] = (snap__lag_thread_t){.tid = owner};
    bool listed = false, ready = false;
    for (int i = 0; i < n && !listed; i++)
      if (all[i] == owner) {
        listed = true;
        ready = looks[i].running;
        all[i] = 0; /* taken */
      }
    if (!listed) {
      ready = snap_thread_is_running(owner) == 1;
      if (total <= cap) /* born since the list was read: one more */
        r->threads_total++;
    }
    npcs[k] = sample_into(&ts[k], pcs[k], flags, ready);
    judge(&ts[k], &looked, 0); /* when its wait began: unknown */
    w = &ts[k].wait;
    k++;
  }
  for (int pass = 1; pass < 3 && k < max; pass++) {
    for (int i = 0; i < n && k < max; i++) {
      if (!all[i] || all[i] == main->tid || (pass == 1 && !looks[i].running))
        continue;
      ts[k] = (snap__lag_thread_t){.tid = all[i]};
      ts[k].wait = (snap_wait_t){.size = sizeof ts[k].wait};
      all[i] = 0; /* taken */
      if (snap__plat_now_ns() >= deadline) {
        ts[k].error = SNAP_ETIMEDOUT; /* the budget is spent: not sampled */
        judge_state(&ts[k], looks[i].running, false, false);
      } else {
        npcs[k] = sample_into(&ts[k], pcs[k], flags, looks[i].running);
        judge(&ts[k], &looked, 0); /* when its wait began: unknown */
      }
      k++;
    }
  }
  /* Every thread runs again: name them now, each once. An owner that is
     not listed (past the cap) is named in the wait that points at it; one
     that exited since (main's owner let go and left) keeps the name main's
     sample read. */
  for (int i = 0; i < k; i++) {
    if (!snap__plat_thread_name(ts[i].tid, ts[i].name, sizeof ts[i].name))
      ts[i].name[0] = '\0';
    const snap_wait_t *mw = &ts[0].wait;
    if (!ts[i].name[0] && ts[0].main && mw->owner_state == SNAP_OWNER_KNOWN &&
        mw->owner == ts[i].tid) { /* cut to fit, as a read would be */
      size_t len = strnlen(mw->owner_name, sizeof ts[i].name - 1);
      memcpy(ts[i].name, mw->owner_name, len);
      ts[i].name[len] = '\0';
    }
    if (ts[i].error == SNAP_OK) {
      ts[i].stack = snap__lag_name(pcs[i], npcs[i]);
      if (!ts[i].stack)
        ts[i].error = SNAP_ENOMEM;
    }
  }
  for (int i = 0; i < k; i++) {
    snap_wait_t *wt = &ts[i].wait;
    if (wt->owner_state == SNAP_OWNER_KNOWN && !wt->owner_name[0] &&
        !in_list(ts, k, wt->owner) &&
        !snap__plat_thread_name(wt->owner, wt->owner_name,
                                sizeof wt->owner_name))
      wt->owner_name[0] = '\0';
  }
  r->threads = ts;
  r->nthreads = k;
  /* Out of memory: no chain, no deadlock (both left empty). */
  snap__wait_analyze(ts, k, k > 0 && ts[0].main ? 0 : -1, &r->main_chain,
                     &r->deadlock);
  if (r->deadlock.n > 0 && !cycle_stands(ts, &r->deadlock, flags))
    r->deadlock.n = 0, r->deadlock.truncated = false;
  free(pcs);
  free(npcs);
  free(looks);
  free(look_rc);
  free(ids);
  free(all);
}

void snap__thread_dump_drop(snap__lag_report_t *r) {
  for (int i = 0; i < r->nthreads; i++)
    snap_stack_release(r->threads[i].stack);
  free(r->threads);
  r->threads = NULL;
  r->nthreads = 0;
  r->main_chain.n = r->deadlock.n = 0;
}
