/*
 * test_wait_chain.c — chains and deadlocks (src/lag/wait_chain.c) over
 * handmade thread lists, and how the report's JSON states them.
 *
 * The oracle is the rule issue 14 and docs/lag.md state: from main follow
 * owner -> the owner's wait -> ...; a thread met again closes a cycle,
 * and `deadlock` lists exactly the cycle's threads (main only when it is
 * on it); with no cycle on main's chain, the first cycle among the other
 * threads in list order. The graphs are drawn by hand below; the JSON is
 * read back by substring (the report's JSON parses under python3 in the
 * process tests).
 */
#include <string.h>

#include "check.h"
#include "lag/lag.h"

#define MAXT 300

static snap__lag_thread_t g_ts[MAXT];

/* Thread i (tid 100 + i) waits on a mutex owned by thread `owner` (an
   index; -1: waits on nothing; -2: a mutex whose owner is unknown; -3: a
   condition variable, no owner; >= 1000: owned by tid `owner` that is not
   listed). */
static void set(int i, int owner) {
  snap__lag_thread_t *t = &g_ts[i];
  memset(t, 0, sizeof *t);
  t->tid = (snap_thread_t)(100 + i);
  t->main = i == 0;
  t->wait.size = sizeof t->wait;
  t->wait.fd = -1;
  if (owner == -1)
    return;
  t->wait.kind = owner == -3 ? SNAP_WAIT_CONDVAR : SNAP_WAIT_MUTEX;
  t->wait.address = 0x1000 + (uintptr_t)i * 64;
  t->wait.owner_state = owner == -3   ? SNAP_OWNER_NONE
                        : owner == -2 ? SNAP_OWNER_UNKNOWN
                                      : SNAP_OWNER_KNOWN;
  if (owner >= 1000)
    t->wait.owner = (snap_thread_t)owner;
  else if (owner >= 0)
    t->wait.owner = (snap_thread_t)(100 + owner);
  /* Its state as the dump judges it from the wait (src/blocked/): the
     report prints blocked_on for a blocked thread only. */
  t->state = snap__state_judge(
      &(snap__state_facts_t){.cpu0_ns = -1,
                             .cpu1_ns = -1,
                             .runq0_ns = -1,
                             .runq1_ns = -1,
                             .wait = &t->wait,
                             .wait_from_os = true,
                             .plat = snap__plat_trace_facts()});
}

/* Sets n threads from owners[] and analyses from 0. */
static void analyze(const int *owners, int n, snap__wait_chain_t *chain,
                    snap__wait_chain_t *cycle) {
  for (int i = 0; i < n; i++)
    set(i, owners[i]);
  CHECK_EQ(snap__wait_analyze(g_ts, n, 0, chain, cycle), SNAP_OK);
}

/* c->at equals want[0..n). */
static void same(const snap__wait_chain_t *c, const int *want, int n,
                 const char *what) {
  CHECK(c->n == n, "%s: %d threads, want %d", what, c->n, n);
  for (int i = 0; i < n && i < c->n; i++)
    CHECK(c->at[i] == want[i], "%s[%d] = %d, want %d", what, i, c->at[i],
          want[i]);
}

int main(void) {
  snap__wait_chain_t chain, cycle;

  /* main -> 2 -> 3, 3 runs: a chain, no deadlock. */
  {
    int o[] = {2, -1, 3, -1};
    analyze(o, 4, &chain, &cycle);
    same(&chain, (int[]){0, 2, 3}, 3, "chain");
    CHECK_EQ(cycle.n, 0);
  }
  /* main waits on nothing: its chain is main alone. */
  {
    int o[] = {-1, -1};
    analyze(o, 2, &chain, &cycle);
    same(&chain, (int[]){0}, 1, "idle chain");
    CHECK_EQ(cycle.n, 0);
  }
  /* Two threads: main holds A wants B, 1 holds B wants A. */
  {
    int o[] = {1, 0};
    analyze(o, 2, &chain, &cycle);
    same(&chain, (int[]){0, 1}, 2, "chain");
    same(&cycle, (int[]){0, 1}, 2, "deadlock");
  }
  /* Three-thread cycle through main: 0 -> 2 -> 1 -> 0. */
  {
    int o[] = {2, 0, 1, -1};
    analyze(o, 4, &chain, &cycle);
    same(&chain, (int[]){0, 2, 1}, 3, "chain");
    same(&cycle, (int[]){0, 2, 1}, 3, "deadlock");
  }
  /* main waits on a cycle it is not part of: 0 -> 1 -> 2 -> 3 -> 1. The
     deadlock is 1 2 3, not main. */
  {
    int o[] = {1, 2, 3, 1};
    analyze(o, 4, &chain, &cycle);
    same(&chain, (int[]){0, 1, 2, 3}, 4, "chain");
    same(&cycle, (int[]){1, 2, 3}, 3, "deadlock");
  }
  /* main's chain ends (an unknown owner); a cycle elsewhere: 3 <-> 4, and
     a later one 5 <-> 6: the first in list order is reported. Thread 2
     leads into the first one from outside: listed from where it entered. */
  {
    int o[] = {1, -2, 4, 4, 3, 6, 5};
    analyze(o, 7, &chain, &cycle);
    same(&chain, (int[]){0, 1}, 2, "chain");
    same(&cycle, (int[]){4, 3}, 2, "deadlock");
  }
  /* Owners that end a chain: one not listed, a kind without an owner, a
     thread that names itself (never accepted). */
  {
    int o[] = {1, 2, 3, 1234};
    analyze(o, 4, &chain, &cycle);
    same(&chain, (int[]){0, 1, 2, 3}, 4, "unlisted owner");
    CHECK_EQ(cycle.n, 0);
    int p[] = {1, -3};
    analyze(p, 2, &chain, &cycle);
    same(&chain, (int[]){0, 1}, 2, "condvar");
    int q[] = {0};
    analyze(q, 1, &chain, &cycle);
    same(&chain, (int[]){0}, 1, "self");
    CHECK_EQ(cycle.n, 0);
  }
  /* Tids in any order (the index is sorted, the list is not). */
  {
    int o[] = {3, -1, -1, 1};
    for (int i = 0; i < 4; i++)
      set(i, o[i]);
    g_ts[1].tid = 7;
    g_ts[3].wait.owner = 7;
    g_ts[3].tid = 90000;
    g_ts[0].wait.owner = 90000;
    CHECK_EQ(snap__wait_analyze(g_ts, 4, 0, &chain, &cycle), SNAP_OK);
    same(&chain, (int[]){0, 3, 1}, 3, "unsorted tids");
  }
  /* A chain longer than the cap: its head, marked truncated. */
  {
    for (int i = 0; i < MAXT; i++)
      set(i, i + 1 < MAXT ? i + 1 : -1);
    CHECK_EQ(snap__wait_analyze(g_ts, MAXT, 0, &chain, &cycle), SNAP_OK);
    CHECK_EQ(chain.n, SNAP__CHAIN_MAX);
    CHECK(chain.truncated, "not marked truncated");
    CHECK_EQ(cycle.n, 0);
  }
  /* No list, no start. */
  CHECK_EQ(snap__wait_analyze(g_ts, 0, 0, &chain, &cycle), SNAP_OK);
  CHECK_EQ(chain.n + cycle.n, 0);

  /* The JSON: per-thread blocked_on, main_blocked_on, deadlock. */
  {
    int o[] = {1, 2, 1, -2, -3};
    for (int i = 0; i < 5; i++)
      set(i, o[i]);
    strcpy(g_ts[1].name, "db-writer");
    strcpy(g_ts[0].wait.owner_name, "stale-name"); /* the list's wins */
    snap__lag_report_t r = {0};
    r.nthreads = 5;
    r.threads = g_ts;
    CHECK_EQ(snap__wait_analyze(g_ts, 5, 0, &r.main_chain, &r.deadlock),
             SNAP_OK);
    size_t len;
    char *j = snap__lag_report_json(&r, &len);
    CHECK(j != NULL, "no JSON");
    if (j) {
      const char *want[] = {
          "\"blocked_on\":{\"kind\":\"mutex\",\"address\":\"0x1000\","
          "\"owner\":\"known\",\"owner_tid\":101,\"owner_name\":"
          "\"db-writer\"}",
          "\"blocked_on\":{\"kind\":\"mutex\",\"address\":\"0x10c0\","
          "\"owner\":\"unknown\",\"owner_tid\":null,\"owner_name\":null}",
          "\"blocked_on\":{\"kind\":\"condvar\",\"address\":\"0x1100\","
          "\"owner\":\"none\",\"owner_tid\":null,\"owner_name\":null}",
          "\"main_blocked_on\":[\n  {\"tid\":100,",
          "{\"tid\":101,\"name\":\"db-writer\",\"kind\":\"mutex\"",
          "\"deadlock\":[101,102]",
      };
      for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        CHECK(strstr(j, want[i]) != NULL, "missing %s in\n%s", want[i], j);
      CHECK(strstr(j, "stale-name") == NULL, "owner name not the list's");
    }
    free(j);
    /* No wait anywhere: none of the keys. */
    for (int i = 0; i < 5; i++)
      set(i, -1);
    CHECK_EQ(snap__wait_analyze(g_ts, 5, 0, &r.main_chain, &r.deadlock),
             SNAP_OK);
    j = snap__lag_report_json(&r, &len);
    CHECK(j && !strstr(j, "blocked_on") && !strstr(j, "deadlock"),
          "keys without a wait:\n%s", j ? j : "(null)");
    free(j);
  }
  return check_result("test_wait_chain");
}
