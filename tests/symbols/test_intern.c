/*
 * test_intern.c — the shared strings (intern.c) against a plain model:
 * every held id reads back its string, the same string gets the same id
 * while it is held, and a string whose last reference went is gone (its
 * id may be reused) — through growth and deletions anywhere in a probe run
 * (issue 26: open addressing with backward-shift deletion replaced the
 * hash chains). The model is an array of (string, id, references) the test
 * keeps itself; 20 000 strings, references taken and dropped at random.
 * A string the table lost would get a second id while the first is held.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"
#include "symbols/intern.h"

#define N 20000
#define STEPS 400000

static char g_str[N][24];
static uint32_t g_id[N];
static int g_refs[N];

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

int main(void) {
  for (int i = 0; i < N; i++)
    snprintf(g_str[i], sizeof g_str[i], "sym_%d_%x", i,
             (unsigned)(i * 2654435761u));
  int wrong = 0;
  for (int step = 0; step < STEPS && wrong < 10; step++) {
    int i = (int)(rnd() % N);
    /* Take more often than drop while few are held: the table grows to
       thousands of live strings, then churns. */
    bool take = g_refs[i] == 0 || rnd() % 3 != 0;
    if (take) {
      const char *s = g_str[i];
      uint32_t id = 0;
      CHECK_EQ(snap__intern_acquire(&s, 1, &id), SNAP_OK);
      if (g_refs[i] > 0 && id != g_id[i]) {
        CHECK(false, "step %d: %s got id %u while %u is held", step, s, id,
              g_id[i]);
        wrong++;
      }
      g_id[i] = id;
      g_refs[i]++;
    } else {
      snap__intern_release(&g_id[i], 1);
      g_refs[i]--;
    }
    if (step % 1000 == 0)
      for (int k = 0; k < N; k++)
        if (g_refs[k] > 0) {
          const char *got = snap__intern_get(g_id[k]);
          if (!got || strcmp(got, g_str[k]) != 0) {
            CHECK(false, "step %d: id %u reads %s, want %s", step, g_id[k],
                  got ? got : "NULL", g_str[k]);
            wrong++;
          }
        }
  }
  for (int k = 0; k < N; k++)
    while (g_refs[k] > 0) {
      snap__intern_release(&g_id[k], 1);
      g_refs[k]--;
    }
  snap__intern_trim();
  CHECK_EQ(snap__intern_bytes(), 0);
  return check_result("test_intern");
}
