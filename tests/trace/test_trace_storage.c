/*
 * test_trace_storage.c — the trace's storage holds its memory cap and
 * keeps the newest data (issue 16: "memory stays under max_bytes after 10
 * minutes at 1 kHz with a stack that changes every sample; the oldest
 * data is dropped, never the newest").
 *
 * Ten minutes at 1 kHz are 600 000 samples: driven here through the
 * sampler's own storage calls (snap__trace_add_stack, the thread's span,
 * the ring) with a synthetic clock, so the test takes a second, not ten
 * minutes. Every sample's stack is new (a leaf pc that never repeats, under
 * 40 shared frames): the table fills again and again and must compact.
 * Checked: the storage never touches memory outside its block (the block
 * sits between two guard zones whose bytes are checked), no allocation
 * happens after start (the heap does not grow: mallinfo2), the newest
 * 1000 samples are all present with their exact stacks, the ring's oldest
 * record is newer than what was dropped, and the time order of spans in
 * the ring is the order they were recorded.
 *
 * Also the span encoding itself, against a reference: random spans
 * (times, counts, ids, states, cpu, labels across their ranges) pushed and
 * read back exactly; and the remap after a compaction. And the path memo
 * of the sampler's ticks (snap__stack_table_add_path, which reuses the
 * nodes of a thread's previous stack) against the plain add: random
 * stacks that share outer frames, leaves that move, depths that change,
 * compactions between them; both tables must give the same node every
 * time.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "trace/trace.h"
#include "xorshift.h"

#define GUARD 4096

static void ring_roundtrip(void) {
  static uint8_t mem[1 << 16];
  snap__span_ring_t r;
  snap__span_ring_init(&r, mem, sizeof mem);
  uint64_t rng = 0x1234567u;
  enum { N = 20000 };
  static snap__tspan_t want[N];
  uint64_t t = 5;
  for (int i = 0; i < N; i++) {
    snap__tspan_t s = {0};
    uint64_t len =
        snap_xorshift(&rng) % 4 == 0 ? snap_xorshift(&rng) % 100000 : 0;
    t += snap_xorshift(&rng) % 3000;
    s.start_us = t;
    s.end_us = t + len;
    s.thread = (uint32_t)(snap_xorshift(&rng) % 300);
    s.stack = snap_xorshift(&rng) % 10 == 0
                  ? SNAP__TRACE_NONE
                  : (uint32_t)(snap_xorshift(&rng) >> 40);
    s.count = 1 + (uint32_t)(snap_xorshift(&rng) % 100000);
    s.state = (uint8_t)(snap_xorshift(&rng) % SNAP__STATE_COUNT);
    s.wait_kind = (uint8_t)(snap_xorshift(&rng) % SNAP_WAIT_KIND_COUNT);
    s.cpu_us = snap_xorshift(&rng) % 3 == 0
                   ? -1
                   : (int64_t)(snap_xorshift(&rng) % 1000000);
    s.label = snap_xorshift(&rng) % 5 == 0
                  ? 1 + (uint32_t)(snap_xorshift(&rng) % 256)
                  : 0;
    want[i] = s;
    CHECK(snap__span_ring_push(&r, &s), "push %d", i);
  }
  /* The ring holds the newest records; read them back. */
  CHECK(r.records > 0 && r.records < N, "the ring wrapped (%llu kept)",
        (unsigned long long)r.records);
  CHECK_EQ(r.records + r.dropped, (uint64_t)N);
  snap__span_iter_t it = snap__span_ring_iter(&r);
  snap__tspan_t got;
  size_t i = N - (size_t)r.records, bad = 0;
  while (snap__span_ring_next(&r, &it, &got)) {
    const snap__tspan_t *w = &want[i++];
    if (memcmp(&got.start_us, &w->start_us, sizeof got.start_us) ||
        got.end_us != w->end_us || got.thread != w->thread ||
        got.stack != w->stack || got.count != w->count ||
        got.state != w->state || got.wait_kind != w->wait_kind ||
        got.cpu_us != w->cpu_us || got.label != w->label)
      bad++;
  }
  CHECK_EQ(i, (size_t)N);
  CHECK(bad == 0, "%zu of %llu records read back differently", bad,
        (unsigned long long)r.records);
  /* Trimming by time drops only records that ended before the limit. */
  uint64_t limit = want[N - 100].end_us;
  snap__span_ring_trim(&r, limit, r.cap);
  it = snap__span_ring_iter(&r);
  CHECK(snap__span_ring_next(&r, &it, &got) && got.end_us >= limit,
        "trim kept a record older than the limit");
}

/* A random stack of the kind a thread's ticks give: most often the
   previous one with its leaf moved (and now and then a frame near it
   changed, or a frame more or less), else a new one of any depth under
   one of a few shared roots. */
static int random_stack(uint64_t *rng, uintptr_t *pcs, int n) {
  uint64_t pick = snap_xorshift(rng) % 8;
  if (n == 0 || pick == 0) {
    n = 1 + (int)(snap_xorshift(rng) % 256);
    uintptr_t root = 0x1000u * (1 + snap_xorshift(rng) % 3);
    for (int i = n - 1; i >= 0; i--)
      pcs[i] = root + 0x10u * (uintptr_t)(n - i);
  } else if (pick == 1 && n < 256) { /* a call deeper */
    memmove(pcs + 1, pcs, (size_t)n * sizeof *pcs);
    n++;
  } else if (pick == 2 && n > 1) { /* a return */
    memmove(pcs, pcs + 1, (size_t)(n - 1) * sizeof *pcs);
    n--;
  } else if (pick == 3 && n > 2) { /* a frame near the leaf changed */
    pcs[1 + snap_xorshift(rng) % (uint64_t)(n - 1 < 4 ? n - 1 : 4)] =
        0x800000u + 0x10u * (snap_xorshift(rng) % 8);
  }
  pcs[0] = 0x900000u + 4u * (snap_xorshift(rng) % 64);
  return n;
}

static void path_same_as_add(void) {
  enum { BYTES = 1 << 20, ROUNDS = 200000 };
  static uint8_t mem_a[BYTES], mem_b[BYTES];
  static snap__stack_path_t path;
  snap__stack_table_t a, b;
  snap__stack_table_init(&a, mem_a, sizeof mem_a);
  snap__stack_table_init(&b, mem_b, sizeof mem_b);
  uint64_t rng = 0xfeedu;
  uintptr_t pcs[256];
  int n = 0;
  uint32_t live[8] = {0};
  size_t differ = 0, compactions = 0;
  for (int r = 0; r < ROUNDS && differ == 0; r++) {
    n = random_stack(&rng, pcs, n);
    bool exact0 = snap_xorshift(&rng) % 4 != 0;
    uint32_t ia = snap__stack_table_add(&a, pcs, n, exact0);
    uint32_t ib = snap__stack_table_add_path(&b, &path, pcs, n, exact0);
    differ += ia != ib || a.n != b.n;
    live[r % 8] = ia;
    if (ia == SNAP__TRACE_NONE || r % 97 == 96) {
      /* Compaction keeps the last 8 stacks: ids move, and the memo must
         not be trusted after it. */
      snap__stack_table_t *t[2] = {&a, &b};
      uint32_t old[8];
      memcpy(old, live, sizeof old);
      for (int k = 0; k < 2; k++) {
        snap__stack_table_unmark(t[k]);
        for (int j = 0; j < 8; j++)
          snap__stack_table_mark(t[k], old[j]);
        snap__stack_table_plan(t[k]);
        for (int j = 0; j < 8; j++)
          live[j] = snap__stack_table_remap(t[k], old[j]);
        snap__stack_table_finish(t[k]);
      }
      compactions++;
    }
  }
  printf("path memo: %d stacks, %zu compactions, %zu differences\n", ROUNDS,
         compactions, differ);
  CHECK(differ == 0, "add_path gave another node than add");
  CHECK(compactions > 10, "too few compactions (%zu)", compactions);
}

int main(void) {
  ring_roundtrip();
  path_same_as_add();

  /* 10 minutes at 1 kHz through the sampler's storage. */
  size_t max_bytes = 1u << 20; /* 1 MiB: compaction happens often */
  snap__trace_t *tr = calloc(1, sizeof *tr);
  uint8_t *block = malloc(max_bytes + 2 * GUARD);
  CHECK(tr && block, "allocations");
  if (!tr || !block)
    return check_result("test_trace_storage");
  memset(block, 0xA5, GUARD);
  memset(block + GUARD + max_bytes, 0x5A, GUARD);
  uint8_t *mem = block + GUARD;
  size_t table = max_bytes / 4 & ~(size_t)15;
  snap__stack_table_init(&tr->table, mem, table);
  snap__span_ring_init(&tr->ring, mem + table, max_bytes - table);
  uint32_t th = snap__trace_thread_index(tr, 4242);
  CHECK_EQ(th, 0u);

  enum { SAMPLES = 600000, DEPTH = 41, KEEP = 1000 };
  static uint32_t leaf_of[KEEP]; /* the newest samples' stacks */
  uintptr_t pcs[DEPTH];
  for (int d = 1; d < DEPTH; d++)
    pcs[d] = 0x400000u + 0x40u * (uintptr_t)(DEPTH - d); /* shared frames */
  struct mallinfo2 before = mallinfo2();
  for (uint32_t i = 0; i < SAMPLES; i++) {
    pcs[0] = 0x10000000u + 4u * i; /* a new leaf every sample */
    uint32_t leaf = snap__trace_add_stack(tr, pcs, DEPTH, true);
    if (leaf == SNAP__TRACE_NONE) {
      CHECK(0, "sample %u: no room for its stack", i);
      break;
    }
    snap__trace_thr_t *t = &tr->thr[th];
    snap__trace_close_span(tr, t);
    t->span = (snap__tspan_t){.start_us = 1000u * i,
                              .end_us = 1000u * i,
                              .thread = th,
                              .stack = leaf,
                              .count = 1,
                              .state = SNAP__STATE_RUNNING,
                              .cpu_us = 1000};
    t->open = true;
    t->last_stack = leaf;
    if (i >= SAMPLES - KEEP)
      leaf_of[i - (SAMPLES - KEEP)] = leaf; /* renumbered by compactions! */
  }
  struct mallinfo2 after = mallinfo2();
  snap__trace_close_span(tr, &tr->thr[th]);
  printf("600000 samples: %llu spans kept (%llu dropped), %u nodes of %u, "
         "ring %zu of %zu bytes, %llu compactions\n",
         (unsigned long long)tr->ring.records,
         (unsigned long long)tr->ring.dropped, tr->table.n, tr->table.cap,
         tr->ring.len, tr->ring.cap,
         (unsigned long long)atomic_load(&tr->compactions));
  (void)leaf_of;
  CHECK(tr->ring.len <= tr->ring.cap && tr->table.n <= tr->table.cap,
        "storage past its capacity");
  size_t bad_guard = 0;
  for (size_t i = 0; i < GUARD; i++)
    bad_guard += (block[i] != 0xA5) + (block[GUARD + max_bytes + i] != 0x5A);
  CHECK(bad_guard == 0, "%zu guard bytes written", bad_guard);
  if (!SNAP_TEST_ASAN && !SNAP_TEST_TSAN)
    CHECK(after.uordblks <= before.uordblks + 4096,
          "the heap grew by %zu bytes while sampling",
          (size_t)(after.uordblks - before.uordblks));
  CHECK(atomic_load(&tr->compactions) > 0, "the table never compacted");
  CHECK(tr->ring.dropped > 0, "nothing was dropped: the test proves nothing");

  /* The newest KEEP samples are all there, in order, each with its exact
     stack: walk the ring, take the last KEEP records. */
  snap__span_iter_t it = snap__span_ring_iter(&tr->ring);
  snap__tspan_t s;
  uint64_t n = 0, prev_end = 0;
  bool ordered = true;
  static snap__tspan_t last[KEEP];
  while (snap__span_ring_next(&tr->ring, &it, &s)) {
    ordered &= s.end_us >= prev_end;
    prev_end = s.end_us;
    last[n++ % KEEP] = s;
  }
  CHECK(ordered, "the ring's records are out of order");
  CHECK(n >= KEEP, "only %llu records kept", (unsigned long long)n);
  size_t wrong = 0;
  for (uint64_t k = 0; k < KEEP && n >= KEEP; k++) {
    const snap__tspan_t *r = &last[(n - KEEP + k) % KEEP];
    uint32_t i = SAMPLES - KEEP + (uint32_t)k;
    if (r->start_us != 1000u * i) {
      wrong++;
      continue;
    }
    /* Its stack, leaf to root, as recorded. */
    uint32_t id = r->stack;
    for (int d = 0; d < DEPTH; d++) {
      uintptr_t want = d == 0 ? 0x10000000u + 4u * i
                              : 0x400000u + 0x40u * (uintptr_t)(DEPTH - d);
      if (id >= tr->table.n || tr->table.nodes[id].pc != want) {
        wrong++;
        break;
      }
      id = tr->table.nodes[id].parent;
    }
    if (id != SNAP__TRACE_NONE)
      wrong++;
  }
  CHECK(wrong == 0, "%zu of the newest %d samples missing or wrong", wrong,
        KEEP);
  snap__tspan_t oldest;
  it = snap__span_ring_iter(&tr->ring);
  CHECK(snap__span_ring_next(&tr->ring, &it, &oldest) &&
            oldest.start_us / 1000u == tr->ring.dropped,
        "the oldest kept is not the one after the dropped ones");
  free(block);
  free(tr);
  return check_result("test_trace_storage");
}
