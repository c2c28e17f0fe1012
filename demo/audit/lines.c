/*
 * lines.c — the audit's JSON lines (docs/audit.md, schema
 * stacksnap.audit/2): process, record, update and end.
 *
 * Owns: formatting them into a caller's buffer, with code that is
 * async-signal-safe (the last write runs in a fatal signal's handler): no
 * stdio, no allocation, no lock, no locale; numbers, hex and ISO 8601
 * times are written by hand. Records and slots are read without a lock,
 * once published, through their atomics (records.c and naming.c say why
 * that is enough). A raw record's frames are placed in their images from
 * stacksnap's lock-free image table (a reference held while the line is
 * made: the strings live in that table).
 * Must not: write a partial line: a line that does not fit in what is
 * left of the buffer is taken back whole (the caller writes the buffer
 * and tries again), and a record whose stack alone is too big keeps the
 * frames that fit and says frames_truncated.
 */
#include "audit.h"

#include <netdb.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "images/images.h"

static void put(audit_buf_t *b, const char *s, size_t n) {
  if (b->full || b->len + n > b->cap) {
    b->full = true;
    return;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void puts_(audit_buf_t *b, const char *s) { put(b, s, strlen(s)); }

static void put_u64(audit_buf_t *b, uint64_t v) {
  char tmp[SNAP__DEC_MAX];
  put(b, tmp, snap__dec_u64(tmp, v));
}

static void put_i64(audit_buf_t *b, int64_t v) {
  char tmp[SNAP__DEC_MAX];
  put(b, tmp, snap__dec_i64(tmp, v));
}

static void put_hex(audit_buf_t *b, uint64_t v) {
  char tmp[18];
  int n = 0;
  do
    tmp[sizeof tmp - 1 - n++] = "0123456789abcdef"[v & 15];
  while (v >>= 4);
  put(b, "\"0x", 3);
  put(b, tmp + sizeof tmp - n, (size_t)n);
  put(b, "\"", 1);
}

/* A JSON string; null for NULL. Bytes outside printable ASCII are written
   \u00XX (read as Latin-1): a path need not be UTF-8, the line must stay
   JSON. */
static void put_str(audit_buf_t *b, const char *s) {
  if (!s) {
    puts_(b, "null");
    return;
  }
  put(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      char e[2] = {'\\', (char)*p};
      put(b, e, 2);
    } else if (*p < 0x20 || *p >= 0x7f) {
      char e[6] = {'\\',
                   'u',
                   '0',
                   '0',
                   "0123456789abcdef"[*p >> 4],
                   "0123456789abcdef"[*p & 15]};
      put(b, e, 6);
    } else {
      put(b, (const char *)p, 1);
    }
  }
  put(b, "\"", 1);
}

static void put_2(audit_buf_t *b, unsigned v) {
  char d[2];
  snap__dec_fixed(d, v, 2);
  put(b, d, 2);
}

/* "YYYY-MM-DDThh:mm:ss.uuuuuuZ" for ns since the epoch (UTC). The civil
   date from the day count: the proleptic Gregorian calendar in 400-year
   eras that start on March 1st, so the leap day is the era-year's last. */
static void put_iso(audit_buf_t *b, uint64_t ns) {
  uint64_t secs = ns / 1000000000u;
  int64_t days = (int64_t)(secs / 86400);
  unsigned sod = (unsigned)(secs % 86400);
  int64_t z = days + 719468;
  int64_t era = z / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = (int64_t)yoe + era * 400;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  unsigned d = doy - (153 * mp + 2) / 5 + 1;
  unsigned m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2)
    y++;
  put(b, "\"", 1);
  put_u64(b, (uint64_t)y);
  put(b, "-", 1);
  put_2(b, m);
  put(b, "-", 1);
  put_2(b, d);
  put(b, "T", 1);
  put_2(b, sod / 3600);
  put(b, ":", 1);
  put_2(b, sod / 60 % 60);
  put(b, ":", 1);
  put_2(b, sod % 60);
  unsigned us = (unsigned)(ns % 1000000000u / 1000);
  char frac[7] = {'.'};
  snap__dec_fixed(frac + 1, us, 6);
  put(b, frac, 7);
  put(b, "Z\"", 2);
}

/* "name":<time string>,"name_ns":<ns> */
static void put_time(audit_buf_t *b, const char *name, uint64_t ns) {
  put(b, ",\"", 2);
  puts_(b, name);
  put(b, "\":", 2);
  put_iso(b, ns);
  put(b, ",\"", 2);
  puts_(b, name);
  put(b, "_ns\":", 5);
  put_u64(b, ns);
}

static void begin(audit_buf_t *b, const char *type) {
  puts_(b, "{\"type\":\"");
  puts_(b, type);
  puts_(b, "\",\"pid\":");
  put_u64(b, (uint64_t)atomic_load(&audit_pid));
}

/* Ends the line begun at start: true, or the line taken back. */
static bool finish(audit_buf_t *b, size_t start) {
  put(b, "}\n", 2);
  if (!b->full)
    return true;
  b->len = start;
  return false;
}

bool audit_line_process(audit_buf_t *b) {
  size_t start = b->len;
  b->full = false;
  begin(b, "process");
  puts_(b, ",\"schema\":\"stacksnap.audit/2\",\"ppid\":");
  put_u64(b, (uint64_t)getppid());
  puts_(b, ",\"forked_from\":");
  int parent = atomic_load(&audit_forked_from);
  if (parent)
    put_u64(b, (uint64_t)parent);
  else
    puts_(b, "null");
  puts_(b, ",\"exe\":");
  put_str(b, audit_cfg.exe);
#if defined(__aarch64__)
  puts_(b, ",\"os\":\"linux\",\"arch\":\"aarch64\"");
#else
  puts_(b, ",\"os\":\"linux\",\"arch\":\"x86_64\"");
#endif
  put_time(b, "start", audit_cfg.start_ns);
  puts_(b, ",\"prefixes\":[");
  for (int i = 0; i < audit_cfg.nprefixes; i++) {
    if (i)
      put(b, ",", 1);
    put_str(b, audit_cfg.prefix[i]);
  }
  put(b, "]", 1);
  return finish(b, start);
}

static const char *eai_name(int code) {
  switch (code) {
  case EAI_BADFLAGS: return "EAI_BADFLAGS";
  case EAI_NONAME: return "EAI_NONAME";
  case EAI_AGAIN: return "EAI_AGAIN";
  case EAI_FAIL: return "EAI_FAIL";
  case EAI_FAMILY: return "EAI_FAMILY";
  case EAI_SOCKTYPE: return "EAI_SOCKTYPE";
  case EAI_SERVICE: return "EAI_SERVICE";
  case EAI_MEMORY: return "EAI_MEMORY";
  case EAI_SYSTEM: return "EAI_SYSTEM";
  case EAI_OVERFLOW: return "EAI_OVERFLOW";
#ifdef EAI_NODATA
  case EAI_NODATA: return "EAI_NODATA";
#endif
#ifdef EAI_ADDRFAMILY
  case EAI_ADDRFAMILY: return "EAI_ADDRFAMILY";
#endif
  default: return NULL;
  }
}

static const char *herrno_name(int code) {
  switch (code) {
  case HOST_NOT_FOUND: return "HOST_NOT_FOUND";
  case TRY_AGAIN: return "TRY_AGAIN";
  case NO_RECOVERY: return "NO_RECOVERY";
  case NO_DATA: return "NO_DATA";
  case NETDB_INTERNAL: return "NETDB_INTERNAL";
  default: return NULL;
  }
}

/* "result":<name>,"errno":<n> */
static void put_result(audit_buf_t *b, const audit_slot_t *r) {
  puts_(b, ",\"result\":");
  const char *name = NULL;
  int err = 0;
  if (r->result == 0) {
    name = "ok";
  } else if (audit_fns[r->fn].naming == RESULT_ERRNO) {
    name = strerrorname_np(r->result); /* a table lookup: signal-safe */
    err = r->result;
  } else if (audit_fns[r->fn].naming == RESULT_EAI) {
    name = eai_name(r->result);
    err = r->result == EAI_SYSTEM ? r->result_errno : 0;
  } else {
    name = herrno_name(r->result);
  }
  if (name) {
    put_str(b, name);
  } else { /* a code with no name: its number, as text */
    put(b, "\"", 1);
    put_i64(b, r->result);
    put(b, "\"", 1);
  }
  puts_(b, ",\"errno\":");
  put_u64(b, (uint64_t)(err > 0 ? err : 0));
}

/* The moving fields: count, times, threads. */
static void put_counts(audit_buf_t *b, const audit_sum_t *sum,
                       bool with_first) {
  puts_(b, ",\"count\":");
  put_u64(b, sum->count);
  if (with_first)
    put_time(b, "first", sum->first_ns);
  put_time(b, "last", sum->last_ns);
  puts_(b, ",\"threads\":[");
  for (int i = 0; i < sum->nthreads; i++) {
    puts_(b, i ? ",{\"tid\":" : "{\"tid\":");
    put_u64(b, (uint64_t)sum->tids[i]);
    puts_(b, ",\"name\":");
    char name[17];
    memcpy(name, sum->names[i], 16);
    name[16] = '\0';
    put_str(b, name);
    put(b, "}", 1);
  }
  puts_(b, "],\"threads_more\":");
  puts_(b, sum->threads_more ? "true" : "false");
}

/* The image fields of a frame: path, base, size, offset, build id. */
static void put_image(audit_buf_t *b, uintptr_t pc, const char *name,
                      const char *path, uintptr_t base, uintptr_t size,
                      const char *build_id) {
  puts_(b, ",\"image\":");
  put_str(b, path ? name : NULL);
  puts_(b, ",\"image_path\":");
  put_str(b, path);
  if (path) {
    puts_(b, ",\"image_base\":");
    put_hex(b, base);
    puts_(b, ",\"image_size\":");
    put_u64(b, size);
    puts_(b, ",\"image_offset\":");
    put_hex(b, pc - base);
  } else {
    puts_(b, ",\"image_base\":null,\"image_size\":null,\"image_offset\":null");
  }
  puts_(b, ",\"build_id\":");
  put_str(b, build_id);
}

static void put_frame(audit_buf_t *b, const snap_frame_t *f) {
  puts_(b, "{\"pc\":");
  put_hex(b, f->pc);
  put_image(b, f->pc, f->image, f->image_path, f->image_base, f->image_size,
            f->build_id);
  puts_(b, ",\"symbol\":");
  put_str(b, f->symbol);
  puts_(b, ",\"symbol_offset\":");
  if (f->symbol)
    put_u64(b, f->pc - f->symbol_addr);
  else
    puts_(b, "null");
  puts_(b, f->in_app ? ",\"in_app\":true}" : ",\"in_app\":false}");
}

/* A raw frame: its image from the table t (each pc is a return address:
   the call before it is looked up), no symbol. */
static void put_raw_frame(audit_buf_t *b, const snap__images_t *t,
                          uintptr_t pc) {
  const snap__image_t *im = pc ? snap__images_find(t, pc - 1) : NULL;
  puts_(b, "{\"pc\":");
  put_hex(b, pc);
  if (im)
    put_image(b, pc, im->name, im->path, im->base, im->size, im->build_id);
  else
    put_image(b, pc, NULL, NULL, 0, 0, NULL);
  puts_(b, ",\"symbol\":null,\"symbol_offset\":null");
  puts_(b, im && im->in_app ? ",\"in_app\":true}" : ",\"in_app\":false}");
}

/* Room kept for what follows the frames: the closing of the line. */
#define TAIL_ROOM 64

bool audit_line_record(audit_buf_t *b, int id, const audit_sum_t *sum) {
  const audit_record_t *r = &audit_records[id];
  const audit_slot_t *k = &audit_slots[r->slot];
  size_t start = b->len;
  b->full = false;
  begin(b, "record");
  puts_(b, ",\"id\":");
  put_u64(b, (uint64_t)id);
  static const char *const kinds[] = {"file", "network", "dns"};
  puts_(b, ",\"kind\":");
  put_str(b, kinds[audit_fns[k->fn].kind]);
  puts_(b, ",\"function\":");
  put_str(b, audit_fns[k->fn].name);
  puts_(b, ",\"resource\":");
  put_str(b, audit_slot_resource(k));
  puts_(b, ",\"argument\":");
  put_str(b, audit_slot_argument(k));
  put_result(b, k);
  put_counts(b, sum, true);
  puts_(b, r->named ? ",\"named\":true" : ",\"named\":false");
  puts_(b, ",\"call_site\":");
  put_u64(b, (uint64_t)r->call_site);
  puts_(b, r->app ? ",\"app\":true" : ",\"app\":false");
  puts_(b, ",\"frames\":[");
  if (b->full) {
    b->len = start;
    return false;
  }
  /* Frames while they fit, leaving room for the line's end. */
  bool truncated = k->truncated;
  size_t cap = b->cap;
  b->cap = cap > TAIL_ROOM ? cap - TAIL_ROOM : 0;
  const snap__images_t *t = r->named ? NULL : snap__images_acquire();
  int n = r->named ? (r->stack ? snap_stack_count(r->stack) : 0) : k->npcs;
  for (int i = 0; i < n; i++) {
    /* Built when the record was named (naming.c): only read here. */
    const snap_frame_t *f = r->named ? snap_stack_frame(r->stack, i) : NULL;
    if (r->named && !f)
      break;
    size_t mark = b->len;
    if (i)
      put(b, ",", 1);
    if (f)
      put_frame(b, f);
    else
      put_raw_frame(b, t, audit_slot_pcs(k)[i]);
    if (b->full && start > 0) {
      /* Other lines fill the buffer: the whole line waits for an empty
         one (the caller flushes and asks again). Truncating here cut
         every 30th record of a run with long paths to no frame at all. */
      b->len = start;
      b->cap = cap;
      if (t)
        snap__images_release(t);
      return false;
    }
    if (b->full) { /* longer than an empty buffer holds: its first frames */
      b->len = mark;
      b->full = false;
      truncated = true;
      break;
    }
  }
  if (t)
    snap__images_release(t);
  b->cap = cap;
  puts_(b, "],\"frames_truncated\":");
  puts_(b, truncated ? "true" : "false");
  return finish(b, start);
}

bool audit_line_update(audit_buf_t *b, int id, const audit_sum_t *sum) {
  size_t start = b->len;
  b->full = false;
  begin(b, "update");
  puts_(b, ",\"id\":");
  put_u64(b, (uint64_t)id);
  put_counts(b, sum, false);
  return finish(b, start);
}

bool audit_line_end(audit_buf_t *b, const char *reason, int sig,
                    uint64_t lines_lost) {
  size_t start = b->len;
  b->full = false;
  begin(b, "end");
  puts_(b, ",\"reason\":");
  put_str(b, reason);
  puts_(b, ",\"signal\":");
  if (sig)
    put_u64(b, (uint64_t)sig);
  else
    puts_(b, "null");
  int records = 0;
  for (int i = 0; i < audit_records_claimed(); i++)
    records += atomic_load(&audit_records[i].ready);
  puts_(b, ",\"records\":");
  put_u64(b, (uint64_t)records);
  puts_(b, ",\"calls\":");
  put_u64(b, atomic_load(&audit_calls));
  puts_(b, ",\"calls_not_kept\":");
  put_u64(b, atomic_load(&audit_calls_not_kept) + audit_calls_dropped());
  puts_(b, ",\"lines_lost\":");
  put_u64(b, lines_lost);
  put_time(b, "time", audit_now_ns());
  return finish(b, start);
}
