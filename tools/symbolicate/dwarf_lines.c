/*
 * dwarf_lines.c — the DWARF line-table reader of stacksnap-symbolicate:
 * address -> file:line, answering as binutils' addr2line does.
 *
 * Owns: a tiny ELF section walk, the .debug_info/.debug_abbrev read of each
 * compile unit's first DIE, the line-program state machine (DWARF 2-5) and
 * the sorted index. Must not: read files, call the OS, keep global state,
 * or trust one byte of the input: it runs over whatever debug file a user
 * points it at, and under a fuzzer. Every read goes through a cursor that
 * checks offset and length against its section in 64-bit arithmetic
 * (overflow-proof) and fails sticky; every count is checked against the
 * bytes that could hold it before anything is sized by it; every loop
 * consumes input or is bounded by a count so checked; the joined paths
 * have a total byte budget. Broken input gives SNAP_DWL_EMALFORMED (or
 * EVERSION / ELIMIT), never a guess at a partial table.
 *
 * Compressed debug sections (SHF_COMPRESSED, as distros ship, or the old
 * .zdebug_* names) give SNAP_DWL_ECOMPRESSED: inflating needs zlib (or
 * zstd), and this tool takes no new dependency.
 *
 * Algorithm:
 *  1. Section headers -> .debug_line, .debug_info, .debug_abbrev,
 *     .debug_str, .debug_line_str, .debug_str_offsets (by name).
 *  2. Each compile unit of .debug_info (v2-5, 32- or 64-bit DWARF): its
 *     first DIE's DW_AT_stmt_list and DW_AT_comp_dir (string, strp,
 *     line_strp, strx*). No .debug_info: every program of .debug_line,
 *     without a comp_dir.
 *  3. Each line program once (by offset): header (v5 entry formats
 *     included), then the opcodes; a row is kept at every copy, special
 *     opcode and end_sequence; rows after the last end_sequence are
 *     dropped (no sequence holds them). A row's file becomes a path once
 *     per (program, file index), joined as bfd's concat_filename does:
 *     an absolute name as is, else comp_dir/dir/name (dir dropped when
 *     absent, comp_dir dropped when dir is absolute or there is none;
 *     DWARF < 5 indexes files and dirs from 1, 5 from 0). Rows before a
 *     sequence's first set_file take file 0 in DWARF 5, as binutils 2.40
 *     does (the standard says 1: for gcc+gas code from a header before
 *     any set_file, addr2line and we say the .c file, llvm-addr2line the
 *     header). is_stmt is ignored (addr2line keeps every row). An
 *     extended opcode ends where its length says (bfd reads the operands
 *     of the four it knows and ignores the length: they differ only on a
 *     length that lies). Programs of two units may not overlap
 *     (EMALFORMED): so rows number at most the bytes of .debug_line.
 *  4. Sequences are sorted by start (longer first on ties); one nested in
 *     an earlier one is dropped and one overlapping it starts where the
 *     earlier ends (bfd's sort_line_sequences, here over all units at
 *     once: addr2line first picks the unit whose ranges hold the
 *     address, which differs only where two units' code overlaps, such as
 *     functions a linker dropped, left at 0). Rows inside a sequence
 *     are put in address order (stable) if the producer did not, and the
 *     sequence starts at its lowest row (bfd's insertion list may keep a
 *     later start when the first row is not the lowest: then addr2line
 *     finds nothing below it where we do; no current compiler emits
 *     rows out of order).
 *  5. Lookup: binary search for the sequence with start <= addr < end,
 *     then for the last row at or below addr (the last one of rows
 *     sharing an address, as bfd keeps).
 *
 * Not done: a unit's address ranges. addr2line answers "unit.c:?" for an
 * address a unit covers without a line row (gcc's crtstuff.c); here that
 * is SNAP_DWL_ENOTFOUND, as is every address outside the line sequences.
 * Nor .debug_types, split DWARF's .dwo files, or supplementary files
 * (DW_FORM_GNU_strp_alt: no comp_dir then).
 */
#include "dwarf_lines.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- Limits --------------------------------------------------------------
   Joined paths are the one output not bounded by the input's size (a long
   comp_dir times many files): their total is capped at 16 bytes per input
   byte + 16 MiB; real files use a small fraction of that. */
#define PATH_BUDGET_PER_BYTE 16u
#define PATH_BUDGET_BASE (16u << 20)

/* ---- Errors ------------------------------------------------------------ */

const char *snap__dwarf_lines_strerror(int code) {
  switch (code) {
#define SNAP__DWL_TEXT(name, value, text)                                      \
  case value: return text;
    SNAP_DWL_ERROR_MAP(SNAP__DWL_TEXT)
#undef SNAP__DWL_TEXT
  }
  return "unknown error";
}

/* ---- Bounded reads --------------------------------------------------------
   A cursor over one section (or part of one). Any read past `end` sets
   `bad` and returns 0; callers check `bad` at points where it matters. */
typedef struct cur {
  const uint8_t *base; /* the section's first byte */
  uint64_t pos, end;   /* offsets from base; pos <= end unless bad */
  bool bad;
} cur_t;

static cur_t cur_make(const uint8_t *base, uint64_t size) {
  cur_t c = {base, 0, size, false};
  return c;
}

static bool cur_has(const cur_t *c, uint64_t n) {
  return !c->bad && c->pos <= c->end && n <= c->end - c->pos;
}

static uint64_t rd_le(cur_t *c, unsigned n) {
  if (n > 8 || !cur_has(c, n)) {
    c->bad = true;
    return 0;
  }
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++)
    v |= (uint64_t)c->base[c->pos + i] << (8 * i);
  c->pos += n;
  return v;
}

static uint8_t rd_u8(cur_t *c) { return (uint8_t)rd_le(c, 1); }

static void skip(cur_t *c, uint64_t n) {
  if (!cur_has(c, n)) {
    c->bad = true;
    return;
  }
  c->pos += n;
}

static uint64_t rd_uleb(cur_t *c) {
  uint64_t v = 0;
  unsigned shift = 0;
  for (;;) {
    uint8_t b = rd_u8(c);
    if (c->bad)
      return 0;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80))
      return v;
  }
}

static int64_t rd_sleb(cur_t *c) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = rd_u8(c);
    if (c->bad)
      return 0;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40))
    v |= ~(uint64_t)0 << shift;
  return (int64_t)v;
}

/* An inline NUL-terminated string; the cursor moves past its NUL. */
static const char *rd_cstr(cur_t *c) {
  if (!cur_has(c, 1)) {
    c->bad = true;
    return NULL;
  }
  const uint8_t *s = c->base + c->pos;
  const uint8_t *nul = memchr(s, 0, (size_t)(c->end - c->pos));
  if (!nul) {
    c->bad = true;
    return NULL;
  }
  c->pos += (uint64_t)(nul - s) + 1;
  return (const char *)s;
}

/* A DWARF initial length: 32-bit, or 0xffffffff then 64-bit. Sets
 *offset_size (4 or 8); false for the reserved values. */
static bool rd_length(cur_t *c, uint64_t *len, unsigned *offset_size) {
  uint64_t l = rd_le(c, 4);
  *offset_size = 4;
  if (l == 0xffffffffu) {
    l = rd_le(c, 8);
    *offset_size = 8;
  } else if (l >= 0xfffffff0u) {
    return false;
  }
  *len = l;
  return !c->bad && cur_has(c, l);
}

/* `p` with room for `need` elements (doubling), or NULL (p untouched). */
static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return p;
  size_t n = *cap ? *cap : 64;
  while (n < need) {
    if (n > SIZE_MAX / 2 / elem)
      return NULL;
    n *= 2;
  }
  void *q = realloc(p, n * elem);
  if (q)
    *cap = n;
  return q;
}

/* ---- Sections -------------------------------------------------------------
 */
typedef struct sec {
  const uint8_t *data;
  uint64_t size;
  bool present;
} sec_t;

typedef struct secs {
  sec_t line, line_str, str, info, abbrev, str_offsets;
  bool compressed; /* a debug section we would read is compressed */
} secs_t;

/* A string at `off` in a section whose last byte was checked to be NUL
   (see find_sections): any in-range offset has its terminator inside. */
static const char *sec_str(const sec_t *s, uint64_t off) {
  if (!s->present || off >= s->size)
    return NULL;
  return (const char *)s->data + off;
}

#define SHF_COMPRESSED_ 0x800u
#define SHT_NOBITS_ 8u

static int find_sections(const uint8_t *f, uint64_t len, secs_t *out) {
  memset(out, 0, sizeof *out);
  cur_t h = cur_make(f, len);
  if (len < 64 || memcmp(f, "\177ELF", 4) != 0 || f[4] != 2 /* ELFCLASS64 */
      || f[5] != 1 /* ELFDATA2LSB */)
    return SNAP_DWL_ENOTELF;
  h.pos = 0x28;
  uint64_t shoff = rd_le(&h, 8);
  h.pos = 0x3a;
  uint64_t shentsize = rd_le(&h, 2);
  uint64_t shnum = rd_le(&h, 2);
  uint64_t shstrndx = rd_le(&h, 2);
  if (shoff == 0 || shentsize < 64)
    return SNAP_DWL_ENOLINES; /* no section headers: nothing to find */
  cur_t s = cur_make(f, len);
  s.pos = shoff;
  if (!cur_has(&s, shentsize))
    return SNAP_DWL_EMALFORMED;
  /* Section 0 holds the real count and string-table index when they do
     not fit the header's 16 bits (e_shnum 0, e_shstrndx SHN_XINDEX). */
  if (shnum == 0) {
    s.pos = shoff + 32;
    shnum = rd_le(&s, 8);
  }
  if (shstrndx == 0xffff) {
    s.pos = shoff + 40;
    shstrndx = rd_le(&s, 4);
  }
  if (s.bad || shnum > (len - shoff) / shentsize || shstrndx >= shnum)
    return SNAP_DWL_EMALFORMED;

  /* The section-name table, and its last byte NUL (sec_str's promise). */
  s.pos = shoff + shstrndx * shentsize + 24;
  uint64_t stroff = rd_le(&s, 8);
  uint64_t strsize = rd_le(&s, 8);
  if (s.bad || stroff > len || strsize > len - stroff || strsize == 0 ||
      f[stroff + strsize - 1] != 0)
    return SNAP_DWL_EMALFORMED;

  static const struct {
    const char *name;
    size_t field;
  } want[] = {
      {"line", offsetof(secs_t, line)},
      {"line_str", offsetof(secs_t, line_str)},
      {"str", offsetof(secs_t, str)},
      {"info", offsetof(secs_t, info)},
      {"abbrev", offsetof(secs_t, abbrev)},
      {"str_offsets", offsetof(secs_t, str_offsets)},
  };
  for (uint64_t i = 0; i < shnum; i++) {
    s.pos = shoff + i * shentsize;
    uint64_t name = rd_le(&s, 4);
    uint64_t type = rd_le(&s, 4);
    uint64_t flags = rd_le(&s, 8);
    skip(&s, 8); /* sh_addr */
    uint64_t off = rd_le(&s, 8);
    uint64_t size = rd_le(&s, 8);
    if (s.bad)
      return SNAP_DWL_EMALFORMED;
    if (name >= strsize)
      continue;
    const char *n = (const char *)f + stroff + name;
    bool z = strncmp(n, ".zdebug_", 8) == 0;
    if (!z && strncmp(n, ".debug_", 7) != 0)
      continue;
    const char *tail = n + (z ? 8 : 7);
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
      if (strcmp(tail, want[w].name) != 0)
        continue;
      if (z || (flags & SHF_COMPRESSED_)) {
        out->compressed = true;
        break;
      }
      sec_t *sec = (sec_t *)((char *)out + want[w].field);
      if (type == SHT_NOBITS_ || sec->present)
        break; /* no bytes here (or a second copy: first one wins) */
      if (off > len || size > len - off)
        return SNAP_DWL_EMALFORMED;
      sec->data = f + off;
      sec->size = size;
      sec->present = true;
      break;
    }
  }
  /* String sections count only if NUL-terminated (see sec_str). */
  sec_t *strs[] = {&out->str, &out->line_str};
  for (size_t i = 0; i < 2; i++)
    if (strs[i]->present &&
        (strs[i]->size == 0 || strs[i]->data[strs[i]->size - 1] != 0))
      strs[i]->present = false;
  if (!out->line.present)
    return out->compressed ? SNAP_DWL_ECOMPRESSED : SNAP_DWL_ENOLINES;
  if (out->compressed)
    return SNAP_DWL_ECOMPRESSED;
  return SNAP_DWL_OK;
}

/* ---- Attribute forms ------------------------------------------------------
   One reader for .debug_info attributes and v5 line-header entries. A
   value is a number, an inline string, or a string reference resolved
   against the unit's string sections. */
enum {
  DW_FORM_addr = 0x01,
  DW_FORM_block2 = 0x03,
  DW_FORM_block4 = 0x04,
  DW_FORM_data2 = 0x05,
  DW_FORM_data4 = 0x06,
  DW_FORM_data8 = 0x07,
  DW_FORM_string = 0x08,
  DW_FORM_block = 0x09,
  DW_FORM_block1 = 0x0a,
  DW_FORM_data1 = 0x0b,
  DW_FORM_flag = 0x0c,
  DW_FORM_sdata = 0x0d,
  DW_FORM_strp = 0x0e,
  DW_FORM_udata = 0x0f,
  DW_FORM_ref_addr = 0x10,
  DW_FORM_ref1 = 0x11,
  DW_FORM_ref2 = 0x12,
  DW_FORM_ref4 = 0x13,
  DW_FORM_ref8 = 0x14,
  DW_FORM_ref_udata = 0x15,
  DW_FORM_indirect = 0x16,
  DW_FORM_sec_offset = 0x17,
  DW_FORM_exprloc = 0x18,
  DW_FORM_flag_present = 0x19,
  DW_FORM_strx = 0x1a,
  DW_FORM_addrx = 0x1b,
  DW_FORM_ref_sup4 = 0x1c,
  DW_FORM_strp_sup = 0x1d,
  DW_FORM_data16 = 0x1e,
  DW_FORM_line_strp = 0x1f,
  DW_FORM_ref_sig8 = 0x20,
  DW_FORM_implicit_const = 0x21,
  DW_FORM_loclistx = 0x22,
  DW_FORM_rnglistx = 0x23,
  DW_FORM_ref_sup8 = 0x24,
  DW_FORM_strx1 = 0x25,
  DW_FORM_strx2 = 0x26,
  DW_FORM_strx3 = 0x27,
  DW_FORM_strx4 = 0x28,
  DW_FORM_addrx1 = 0x29,
  DW_FORM_addrx2 = 0x2a,
  DW_FORM_addrx3 = 0x2b,
  DW_FORM_addrx4 = 0x2c,
  DW_FORM_GNU_addr_index = 0x1f01,
  DW_FORM_GNU_str_index = 0x1f02,
  DW_FORM_GNU_ref_alt = 0x1f20,
  DW_FORM_GNU_strp_alt = 0x1f21,
};

typedef struct unit_ctx {
  unsigned version, offset_size, address_size;
} unit_ctx_t;

typedef enum { VAL_NUM, VAL_STR, VAL_STRX, VAL_NONE } val_kind_t;

typedef struct val {
  val_kind_t kind;
  uint64_t num;    /* VAL_NUM: the number; VAL_STRX: the index */
  const char *str; /* VAL_STR; NULL for a reference out of range */
} val_t;

/* Reads one value of `form`. `zero_size_ok`: whether forms that take no
   bytes (flag_present, implicit_const) may appear; line headers say no,
   so that every entry there consumes input. */
static bool rd_form(cur_t *c, uint64_t form, const unit_ctx_t *u,
                    const secs_t *s, bool zero_size_ok, int64_t implicit,
                    val_t *v) {
  v->kind = VAL_NUM;
  v->num = 0;
  v->str = NULL;
  for (int depth = 0; form == DW_FORM_indirect; depth++) {
    if (depth > 0 || !zero_size_ok)
      return false; /* indirect to indirect: nothing real does that */
    form = rd_uleb(c);
  }
  switch (form) {
  case DW_FORM_addr: v->num = rd_le(c, u->address_size); break;
  case DW_FORM_data1:
  case DW_FORM_ref1:
  case DW_FORM_flag:
  case DW_FORM_addrx1: v->num = rd_le(c, 1); break;
  case DW_FORM_data2:
  case DW_FORM_ref2:
  case DW_FORM_addrx2: v->num = rd_le(c, 2); break;
  case DW_FORM_addrx3: v->num = rd_le(c, 3); break;
  case DW_FORM_data4:
  case DW_FORM_ref4:
  case DW_FORM_ref_sup4:
  case DW_FORM_addrx4: v->num = rd_le(c, 4); break;
  case DW_FORM_data8:
  case DW_FORM_ref8:
  case DW_FORM_ref_sig8:
  case DW_FORM_ref_sup8: v->num = rd_le(c, 8); break;
  case DW_FORM_data16: skip(c, 16); break;
  case DW_FORM_sdata: v->num = (uint64_t)rd_sleb(c); break;
  case DW_FORM_udata:
  case DW_FORM_ref_udata:
  case DW_FORM_addrx:
  case DW_FORM_loclistx:
  case DW_FORM_rnglistx:
  case DW_FORM_GNU_addr_index: v->num = rd_uleb(c); break;
  case DW_FORM_sec_offset:
  case DW_FORM_strp_sup:
  case DW_FORM_GNU_ref_alt: v->num = rd_le(c, u->offset_size); break;
  case DW_FORM_GNU_strp_alt: /* in a supplementary file we do not have */
    skip(c, u->offset_size);
    v->kind = VAL_NONE;
    break;
  case DW_FORM_ref_addr:
    v->num = rd_le(c, u->version <= 2 ? u->address_size : u->offset_size);
    break;
  case DW_FORM_block1: skip(c, rd_le(c, 1)); break;
  case DW_FORM_block2: skip(c, rd_le(c, 2)); break;
  case DW_FORM_block4: skip(c, rd_le(c, 4)); break;
  case DW_FORM_block:
  case DW_FORM_exprloc: skip(c, rd_uleb(c)); break;
  case DW_FORM_string:
    v->kind = VAL_STR;
    v->str = rd_cstr(c);
    break;
  case DW_FORM_strp:
    v->kind = VAL_STR;
    v->str = sec_str(&s->str, rd_le(c, u->offset_size));
    break;
  case DW_FORM_line_strp:
    v->kind = VAL_STR;
    v->str = sec_str(&s->line_str, rd_le(c, u->offset_size));
    break;
  case DW_FORM_strx:
  case DW_FORM_GNU_str_index:
    v->kind = VAL_STRX;
    v->num = rd_uleb(c);
    break;
  case DW_FORM_strx1:
  case DW_FORM_strx2:
  case DW_FORM_strx3:
  case DW_FORM_strx4:
    v->kind = VAL_STRX;
    v->num = rd_le(c, (unsigned)(form - DW_FORM_strx1 + 1));
    break;
  case DW_FORM_flag_present:
    if (!zero_size_ok)
      return false;
    v->num = 1;
    break;
  case DW_FORM_implicit_const:
    if (!zero_size_ok)
      return false;
    v->num = (uint64_t)implicit;
    break;
  default: return false;
  }
  return !c->bad;
}

/* ---- Compile units (.debug_info) ------------------------------------------
 */
typedef struct cu {
  uint64_t stmt_list;
  const char *comp_dir; /* NULL when the unit names none */
} cu_t;

enum {
  DW_TAG_compile_unit = 0x11,
  DW_TAG_partial_unit = 0x3c,
  DW_TAG_skeleton_unit = 0x4a,
  DW_AT_stmt_list = 0x10,
  DW_AT_comp_dir = 0x1b,
  DW_AT_str_offsets_base = 0x72,
  DW_UT_compile = 1,
  DW_UT_partial = 3,
  DW_UT_skeleton = 4,
};

/* The first DIE of the unit whose header `c` has just been read, up to
   `die_end`: its stmt_list (false when it has none) and comp_dir. */
static int read_cu_die(cur_t *c, const unit_ctx_t *u, uint64_t abbrev_off,
                       const secs_t *s, uint64_t *budget, cu_t *out,
                       bool *has_lines) {
  *has_lines = false;
  uint64_t code = rd_uleb(c);
  if (c->bad)
    return SNAP_DWL_EMALFORMED;
  if (code == 0)
    return SNAP_DWL_OK; /* an empty unit */
  if (!s->abbrev.present || abbrev_off >= s->abbrev.size)
    return SNAP_DWL_EMALFORMED;
  cur_t a = cur_make(s->abbrev.data, s->abbrev.size);
  a.pos = abbrev_off;
  /* Find the abbreviation: every declaration read consumes bytes. */
  for (;;) {
    uint64_t ac = rd_uleb(&a);
    if (a.bad || ac == 0)
      return SNAP_DWL_EMALFORMED; /* the table ends without the code */
    uint64_t tag = rd_uleb(&a);
    rd_u8(&a); /* children */
    if (ac == code) {
      if (tag != DW_TAG_compile_unit && tag != DW_TAG_partial_unit &&
          tag != DW_TAG_skeleton_unit)
        return SNAP_DWL_OK; /* not a unit with lines */
      break;
    }
    for (;;) {
      uint64_t at = rd_uleb(&a), form = rd_uleb(&a);
      if (a.bad)
        return SNAP_DWL_EMALFORMED;
      if (form == DW_FORM_implicit_const)
        rd_sleb(&a);
      if (at == 0 && form == 0)
        break;
    }
  }
  /* Units sharing one abbreviation table each search it from its start:
     a hostile file could make that quadratic, so the bytes searched in
     all have a budget (a few times the sections' size). */
  if (a.pos - abbrev_off > *budget)
    return SNAP_DWL_ELIMIT;
  *budget -= a.pos - abbrev_off;
  val_t comp_dir = {VAL_NONE, 0, NULL};
  uint64_t str_offsets_base = 0;
  for (;;) {
    uint64_t at = rd_uleb(&a), form = rd_uleb(&a);
    int64_t implicit = 0;
    if (form == DW_FORM_implicit_const)
      implicit = rd_sleb(&a);
    if (a.bad)
      return SNAP_DWL_EMALFORMED;
    if (at == 0 && form == 0)
      break;
    val_t v;
    if (!rd_form(c, form, u, s, true, implicit, &v))
      return SNAP_DWL_EMALFORMED;
    if (at == DW_AT_stmt_list && v.kind == VAL_NUM) {
      out->stmt_list = v.num;
      *has_lines = true;
    } else if (at == DW_AT_comp_dir) {
      comp_dir = v;
    } else if (at == DW_AT_str_offsets_base && v.kind == VAL_NUM) {
      str_offsets_base = v.num;
    }
  }
  out->comp_dir = NULL;
  if (comp_dir.kind == VAL_STR) {
    out->comp_dir = comp_dir.str;
  } else if (comp_dir.kind == VAL_STRX && s->str_offsets.present) {
    /* DW_FORM_strx: an index into this unit's slice of .debug_str_offsets
       (the base may come after comp_dir in the DIE, hence here). */
    uint64_t os = u->offset_size;
    if (comp_dir.num <= (UINT64_MAX - str_offsets_base) / os) {
      cur_t so = cur_make(s->str_offsets.data, s->str_offsets.size);
      so.pos = str_offsets_base + comp_dir.num * os;
      uint64_t off = rd_le(&so, (unsigned)os);
      if (!so.bad)
        out->comp_dir = sec_str(&s->str, off);
    }
  }
  return SNAP_DWL_OK;
}

/* Every compile unit with a line program. *cus is malloc'd. */
static int read_cus(const secs_t *s, cu_t **cus, size_t *ncus) {
  *cus = NULL;
  *ncus = 0;
  size_t cap = 0;
  uint64_t budget = 8 * (s->info.size + s->abbrev.size) + (1u << 20);
  cur_t c = cur_make(s->info.data, s->info.size);
  while (c.pos < c.end) {
    uint64_t len;
    unsigned osz;
    if (!rd_length(&c, &len, &osz))
      return SNAP_DWL_EMALFORMED;
    uint64_t unit_end = c.pos + len;
    cur_t u = c;
    u.end = unit_end;
    unit_ctx_t ctx = {(unsigned)rd_le(&u, 2), osz, 0};
    if (ctx.version < 2 || ctx.version > 5)
      return SNAP_DWL_EVERSION;
    uint64_t abbrev_off;
    bool lines_unit = true;
    if (ctx.version >= 5) {
      uint64_t type = rd_u8(&u);
      ctx.address_size = rd_u8(&u);
      abbrev_off = rd_le(&u, osz);
      lines_unit = type == DW_UT_compile || type == DW_UT_partial ||
                   type == DW_UT_skeleton;
      if (type == DW_UT_skeleton)
        skip(&u, 8); /* dwo_id */
    } else {
      abbrev_off = rd_le(&u, osz);
      ctx.address_size = rd_u8(&u);
    }
    if (u.bad || (ctx.address_size != 4 && ctx.address_size != 8))
      return SNAP_DWL_EMALFORMED;
    if (lines_unit) {
      cu_t cu = {0, NULL};
      bool has_lines;
      int rc = read_cu_die(&u, &ctx, abbrev_off, s, &budget, &cu, &has_lines);
      if (rc != SNAP_DWL_OK)
        return rc;
      if (has_lines) {
        cu_t *n = grow(*cus, &cap, *ncus + 1, sizeof *n);
        if (!n)
          return SNAP_DWL_ENOMEM;
        *cus = n;
        (*cus)[(*ncus)++] = cu;
      }
    }
    c.pos = unit_end;
  }
  return SNAP_DWL_OK;
}

/* ---- The index ------------------------------------------------------------
 */
typedef struct row {
  uint64_t addr;
  uint32_t path; /* index into paths */
  uint32_t line;
  uint32_t column;
  uint32_t discriminator;
} row_t;

typedef struct seq {
  uint64_t low, end; /* [low, end): end is the end_sequence row's address */
  uint64_t first;    /* its rows: rows[first .. first + count) */
  uint64_t count;    /* the end_sequence row included */
  uint64_t order;    /* decode order: the last tie-break */
} seq_t;

struct snap__dwarf_lines {
  row_t *rows;
  size_t nrows, rows_cap;
  seq_t *seqs;
  size_t nseqs, seqs_cap;
  char **paths;
  size_t npaths, paths_cap;
  uint64_t path_budget; /* bytes of joined paths still allowed */
};

/* ---- One line program -----------------------------------------------------
 */
typedef struct file_ent {
  const char *name;
  uint64_t dir;
  int64_t path; /* index into paths once joined, else -1 */
} file_ent_t;

typedef struct prog {
  unsigned version;
  const char *comp_dir;
  const char **dirs;
  uint64_t ndirs;
  file_ent_t *files;
  size_t nfiles, files_cap;
  int64_t unknown, none; /* "<unknown>" and "??" once made, else -1 */
} prog_t;

static bool is_abs(const char *p) { return p[0] == '/'; }

/* Appends a copy of a joined path: up to three parts with '/' between. */
static int add_path(snap__dwarf_lines_t *dl, const char *a, const char *b,
                    const char *c, uint32_t *id) {
  const char *part[3] = {a, b, c};
  size_t plen[3] = {0, 0, 0}, total = 1;
  for (int i = 0; i < 3; i++) {
    if (!part[i])
      continue;
    /* Lengths bounded by the budget left: a hostile file cannot make us
       scan more than the budget in all. */
    uint64_t lim = dl->path_budget;
    size_t n = 0;
    while (n < lim && part[i][n])
      n++;
    plen[i] = n;
    total += plen[i] + 1;
    if (total > dl->path_budget)
      return SNAP_DWL_ELIMIT;
  }
  char **np = dl->npaths < UINT32_MAX
                  ? grow(dl->paths, &dl->paths_cap, dl->npaths + 1, sizeof *np)
                  : NULL;
  if (!np)
    return SNAP_DWL_ENOMEM;
  dl->paths = np;
  char *p = malloc(total), *w = p;
  if (!p)
    return SNAP_DWL_ENOMEM;
  for (int i = 0; i < 3; i++) {
    if (!part[i])
      continue;
    if (w != p)
      *w++ = '/';
    memcpy(w, part[i], plen[i]);
    w += plen[i];
  }
  *w = 0;
  dl->path_budget -= total;
  *id = (uint32_t)dl->npaths;
  dl->paths[dl->npaths++] = p;
  return SNAP_DWL_OK;
}

/* The path of file `file` of the program, joined once (bfd's
   concat_filename: see the head comment, step 3). */
/* The two names of no file, made once a program: "<unknown>" (a file
   index out of the table) and "??" (a table without files). */
static int cached_path(snap__dwarf_lines_t *dl, int64_t *slot, const char *name,
                       uint32_t *id) {
  if (*slot >= 0) {
    *id = (uint32_t)*slot;
    return SNAP_DWL_OK;
  }
  int rc = add_path(dl, name, NULL, NULL, id);
  if (rc == SNAP_DWL_OK)
    *slot = *id;
  return rc;
}

static int unknown_path(snap__dwarf_lines_t *dl, prog_t *p, uint32_t *id) {
  return cached_path(dl, &p->unknown, "<unknown>", id);
}

static int none_path(snap__dwarf_lines_t *dl, prog_t *p, uint32_t *id) {
  return cached_path(dl, &p->none, "??", id);
}

static int file_path(snap__dwarf_lines_t *dl, prog_t *p, uint64_t file,
                     uint32_t *id) {
  bool from0 = p->version >= 5;
  if (!from0) {
    if (file == 0)
      return unknown_path(dl, p, id);
    file--;
  }
  if (file >= p->nfiles)
    return unknown_path(dl, p, id);
  file_ent_t *f = &p->files[file];
  if (f->path >= 0) {
    *id = (uint32_t)f->path;
    return SNAP_DWL_OK;
  }
  int rc;
  if (is_abs(f->name)) {
    rc = add_path(dl, f->name, NULL, NULL, id);
  } else {
    uint64_t d = from0 ? f->dir : f->dir - 1; /* dir 0 (< v5): none */
    const char *sub = d < p->ndirs ? p->dirs[d] : NULL;
    const char *dir = (!sub || !is_abs(sub)) ? p->comp_dir : NULL;
    if (!dir) {
      dir = sub;
      sub = NULL;
    }
    rc = add_path(dl, dir, sub, f->name, id);
  }
  if (rc == SNAP_DWL_OK)
    f->path = *id;
  return rc;
}

enum {
  DW_LNCT_path = 1,
  DW_LNCT_directory_index = 2,
  DW_LNS_copy = 1,
  DW_LNS_advance_pc = 2,
  DW_LNS_advance_line = 3,
  DW_LNS_set_file = 4,
  DW_LNS_set_column = 5,
  DW_LNS_negate_stmt = 6,
  DW_LNS_set_basic_block = 7,
  DW_LNS_const_add_pc = 8,
  DW_LNS_fixed_advance_pc = 9,
  DW_LNS_set_prologue_end = 10,
  DW_LNS_set_epilogue_begin = 11,
  DW_LNS_set_isa = 12,
  DW_LNE_end_sequence = 1,
  DW_LNE_set_address = 2,
  DW_LNE_define_file = 3,
  DW_LNE_set_discriminator = 4,
};

static int add_file(prog_t *p, const char *name, uint64_t dir) {
  file_ent_t *n = grow(p->files, &p->files_cap, p->nfiles + 1, sizeof *n);
  if (!n)
    return SNAP_DWL_ENOMEM;
  p->files = n;
  file_ent_t f = {name, dir, -1};
  p->files[p->nfiles++] = f;
  return SNAP_DWL_OK;
}

/* DWARF 5 directory or file entries: a format (content type, form pairs)
   then `count` entries. Directories go to p->dirs, files to p->files. */
static int v5_entries(cur_t *c, const unit_ctx_t *u, const secs_t *s, prog_t *p,
                      bool dirs) {
  uint64_t nfmt = rd_u8(c);
  uint64_t fmt[255][2];
  for (uint64_t i = 0; i < nfmt; i++) {
    fmt[i][0] = rd_uleb(c);
    fmt[i][1] = rd_uleb(c);
  }
  uint64_t count = rd_uleb(c);
  if (c->bad)
    return SNAP_DWL_EMALFORMED;
  /* Every form allowed here takes >= 1 byte: the count cannot exceed the
     bytes left (checked before anything is sized by it). */
  if (count > 0 && (nfmt == 0 || count > c->end - c->pos))
    return SNAP_DWL_EMALFORMED;
  if (dirs) {
    p->dirs = count ? calloc((size_t)count, sizeof *p->dirs) : NULL;
    if (count && !p->dirs)
      return SNAP_DWL_ENOMEM;
    p->ndirs = count;
  }
  for (uint64_t e = 0; e < count; e++) {
    const char *name = NULL;
    uint64_t dir = 0;
    for (uint64_t i = 0; i < nfmt; i++) {
      val_t v;
      if (!rd_form(c, fmt[i][1], u, s, false, 0, &v))
        return SNAP_DWL_EMALFORMED;
      if (fmt[i][0] == DW_LNCT_path) {
        if (v.kind != VAL_STR || !v.str)
          return SNAP_DWL_EMALFORMED; /* strx has no base in .debug_line */
        name = v.str;
      } else if (fmt[i][0] == DW_LNCT_directory_index) {
        if (v.kind != VAL_NUM)
          return SNAP_DWL_EMALFORMED;
        dir = v.num;
      }
    }
    if (!name)
      return SNAP_DWL_EMALFORMED;
    if (dirs) {
      p->dirs[e] = name;
    } else {
      int rc = add_file(p, name, dir);
      if (rc != SNAP_DWL_OK)
        return rc;
    }
  }
  return SNAP_DWL_OK;
}

/* Closes the sequence whose rows are rows[first..nrows) (end row last). */
static int end_sequence(snap__dwarf_lines_t *dl, uint64_t first,
                        uint64_t order) {
  row_t *r = dl->rows + first;
  uint64_t n = dl->nrows - first;
  uint64_t end = r[n - 1].addr, low = end;
  for (uint64_t i = 0; i + 1 < n; i++)
    if (r[i].addr < low)
      low = r[i].addr;
  if (n < 2 || low >= end) {
    dl->nrows = first; /* empty (or backwards) sequence: nothing to find */
    return SNAP_DWL_OK;
  }
  seq_t *ns = grow(dl->seqs, &dl->seqs_cap, dl->nseqs + 1, sizeof *ns);
  if (!ns)
    return SNAP_DWL_ENOMEM;
  dl->seqs = ns;
  seq_t s = {low, end, first, n, order};
  dl->seqs[dl->nseqs++] = s;
  return SNAP_DWL_OK;
}

/* Decodes the line program at `off` of .debug_line into dl's rows and
   sequences. */
static int read_program(snap__dwarf_lines_t *dl, const secs_t *s, uint64_t off,
                        const char *comp_dir, uint64_t *next) {
  cur_t c = cur_make(s->line.data, s->line.size);
  c.pos = off;
  uint64_t len;
  unsigned osz;
  if (off >= s->line.size || !rd_length(&c, &len, &osz))
    return SNAP_DWL_EMALFORMED;
  c.end = c.pos + len;
  *next = c.end;
  unit_ctx_t u = {(unsigned)rd_le(&c, 2), osz, 8};
  if (c.bad)
    return SNAP_DWL_EMALFORMED;
  if (u.version < 2 || u.version > 5)
    return SNAP_DWL_EVERSION;
  if (u.version >= 5) {
    u.address_size = rd_u8(&c);
    rd_u8(&c); /* segment selector size */
  }
  uint64_t hlen = rd_le(&c, osz);
  if (c.bad || hlen > c.end - c.pos)
    return SNAP_DWL_EMALFORMED;
  uint64_t prog_start = c.pos + hlen;
  unsigned min_inst = rd_u8(&c);
  unsigned max_ops = u.version >= 4 ? rd_u8(&c) : 1;
  bool default_stmt = rd_u8(&c) != 0;
  int line_base = (int8_t)rd_u8(&c);
  unsigned line_range = rd_u8(&c);
  unsigned opcode_base = rd_u8(&c);
  if (c.bad || max_ops == 0 || line_range == 0 || opcode_base == 0)
    return SNAP_DWL_EMALFORMED;
  uint8_t std_len[256] = {0};
  for (unsigned i = 1; i < opcode_base; i++)
    std_len[i] = rd_u8(&c);
  (void)default_stmt; /* addr2line keeps every row, is_stmt or not */

  prog_t p = {u.version, comp_dir, NULL, 0, NULL, 0, 0, -1, -1};
  int rc = SNAP_DWL_OK;
  if (u.version >= 5) {
    rc = v5_entries(&c, &u, s, &p, true);
    if (rc == SNAP_DWL_OK)
      rc = v5_entries(&c, &u, s, &p, false);
  } else {
    /* include_directories then file_names, each ended by an empty name;
       every entry consumes its bytes, so the counts are bounded. */
    size_t dcap = 0;
    for (;;) {
      const char *d = rd_cstr(&c);
      if (!d || !*d)
        break;
      const char **nd = grow(p.dirs, &dcap, (size_t)p.ndirs + 1, sizeof *nd);
      if (!nd) {
        rc = SNAP_DWL_ENOMEM;
        break;
      }
      p.dirs = nd;
      p.dirs[p.ndirs++] = d;
    }
    while (rc == SNAP_DWL_OK) {
      const char *f = rd_cstr(&c);
      if (!f || !*f)
        break;
      uint64_t dir = rd_uleb(&c);
      rd_uleb(&c); /* mtime */
      rd_uleb(&c); /* length */
      rc = add_file(&p, f, dir);
    }
  }
  if (rc == SNAP_DWL_OK && (c.bad || c.pos > prog_start))
    rc = SNAP_DWL_EMALFORMED;
  c.pos = prog_start;

  /* The state machine. The file register starts at 1 (the standard), but
     rows before a sequence's first set_file are named as binutils names
     them: by entry 0 in DWARF 5 (the unit's primary file: gas's tables
     from gcc have 1 = some other file there), by entry 1 before; no file
     at all: "??" (addr2line's NULL file name). */
  const uint64_t initial_file = u.version >= 5 ? 0 : 1;
  uint64_t addr = 0, file = initial_file, first = dl->nrows;
  bool no_files = p.nfiles == 0;
  uint32_t line = 1, column = 0, disc = 0;
  uint64_t op_index = 0;
  while (rc == SNAP_DWL_OK && c.pos < c.end) {
    unsigned op = rd_u8(&c);
    bool emit = false, end = false;
    uint64_t adv = 0; /* operation advance */
    bool advance = false;
    if (op >= opcode_base) {
      unsigned adj = op - opcode_base;
      adv = adj / line_range;
      advance = true;
      line += (uint32_t)(line_base + (int)(adj % line_range));
      emit = true;
    } else if (op == 0) {
      uint64_t elen = rd_uleb(&c);
      if (c.bad || elen > c.end - c.pos) {
        rc = SNAP_DWL_EMALFORMED;
        break;
      }
      uint64_t ext_end = c.pos + elen;
      if (elen > 0) {
        cur_t e = c;
        e.end = ext_end;
        unsigned sub = rd_u8(&e);
        switch (sub) {
        case DW_LNE_end_sequence: emit = end = true; break;
        case DW_LNE_set_address: {
          uint64_t n = elen - 1;
          if (n == 0 || n > 8) {
            rc = SNAP_DWL_EMALFORMED;
            break;
          }
          addr = rd_le(&e, (unsigned)n);
          op_index = 0;
          break;
        }
        case DW_LNE_define_file:
          if (u.version < 5) {
            const char *f = rd_cstr(&e);
            uint64_t dir = rd_uleb(&e);
            if (e.bad || !f) {
              rc = SNAP_DWL_EMALFORMED;
              break;
            }
            rc = add_file(&p, f, dir);
          }
          break;
        case DW_LNE_set_discriminator: disc = (uint32_t)rd_uleb(&e); break;
        default: break; /* vendor extensions: skipped by their length */
        }
        if (rc == SNAP_DWL_OK && e.bad)
          rc = SNAP_DWL_EMALFORMED;
      }
      c.pos = ext_end;
    } else {
      switch (op) {
      case DW_LNS_copy: emit = true; break;
      case DW_LNS_advance_pc:
        adv = rd_uleb(&c);
        advance = true;
        break;
      case DW_LNS_advance_line: line += (uint32_t)rd_sleb(&c); break;
      case DW_LNS_set_file:
        file = rd_uleb(&c);
        no_files = false;
        break;
      case DW_LNS_set_column: column = (uint32_t)rd_uleb(&c); break;
      case DW_LNS_negate_stmt:
      case DW_LNS_set_basic_block:
      case DW_LNS_set_prologue_end:
      case DW_LNS_set_epilogue_begin: break;
      case DW_LNS_const_add_pc:
        adv = (255u - opcode_base) / line_range;
        advance = true;
        break;
      case DW_LNS_fixed_advance_pc:
        addr += rd_le(&c, 2);
        op_index = 0;
        break;
      case DW_LNS_set_isa: rd_uleb(&c); break;
      default: /* an opcode this reader does not know: skip its operands */
        for (unsigned i = 0; i < std_len[op]; i++)
          rd_uleb(&c);
        break;
      }
    }
    if (c.bad && rc == SNAP_DWL_OK)
      rc = SNAP_DWL_EMALFORMED;
    if (rc != SNAP_DWL_OK)
      break;
    if (advance) {
      /* DWARF 4's VLIW form; with max_ops 1 it is addr += adv * min_inst.
         Unsigned arithmetic: a hostile advance wraps, never traps. */
      uint64_t t = op_index + adv;
      addr += (uint64_t)min_inst * (t / max_ops);
      op_index = t % max_ops;
    }
    if (emit) {
      uint32_t path;
      rc = no_files ? none_path(dl, &p, &path) : file_path(dl, &p, file, &path);
      if (rc != SNAP_DWL_OK)
        break;
      row_t *nr = grow(dl->rows, &dl->rows_cap, dl->nrows + 1, sizeof *nr);
      if (!nr) {
        rc = SNAP_DWL_ENOMEM;
        break;
      }
      dl->rows = nr;
      row_t r = {addr, path, line, column, disc};
      dl->rows[dl->nrows++] = r;
      disc = 0;
      if (end) {
        rc = end_sequence(dl, first, dl->nseqs);
        addr = 0;
        op_index = 0;
        file = initial_file;
        no_files = p.nfiles == 0;
        line = 1;
        column = 0;
        first = dl->nrows;
      }
    }
  }
  if (rc == SNAP_DWL_OK)
    dl->nrows = first; /* rows of an unended sequence: no sequence holds them */
  free(p.dirs);
  free(p.files);
  return rc;
}

/* ---- Sorting --------------------------------------------------------------
 */
static int seq_cmp(const void *a, const void *b) {
  const seq_t *x = a, *y = b;
  if (x->low != y->low)
    return x->low < y->low ? -1 : 1;
  if (x->end != y->end)
    return x->end > y->end ? -1 : 1; /* the longer first */
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Stable merge sort of rows by address (only run on a sequence whose
   producer did not emit it in order). */
static void sort_rows(row_t *r, row_t *tmp, uint64_t n) {
  for (uint64_t w = 1; w < n; w *= 2) {
    for (uint64_t lo = 0; lo < n; lo += 2 * w) {
      uint64_t mid = lo + w < n ? lo + w : n;
      uint64_t hi = lo + 2 * w < n ? lo + 2 * w : n;
      uint64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        tmp[k++] = r[j].addr < r[i].addr ? r[j++] : r[i++];
      while (i < mid)
        tmp[k++] = r[i++];
      while (j < hi)
        tmp[k++] = r[j++];
    }
    memcpy(r, tmp, (size_t)n * sizeof *r);
    if (w > n / 2)
      break;
  }
}

static int finish_index(snap__dwarf_lines_t *dl) {
  /* Rows in address order inside each sequence; the end row stays last
     (its address is the largest: end_sequence dropped the others). */
  row_t *tmp = NULL;
  for (size_t i = 0; i < dl->nseqs; i++) {
    row_t *r = dl->rows + dl->seqs[i].first;
    uint64_t n = dl->seqs[i].count - 1;
    bool sorted = true;
    for (uint64_t k = 1; k < n && sorted; k++)
      sorted = r[k - 1].addr <= r[k].addr;
    for (uint64_t k = 0; k < n && sorted; k++)
      sorted = r[k].addr < dl->seqs[i].end;
    if (sorted)
      continue;
    if (!tmp && !(tmp = malloc(dl->nrows * sizeof *tmp)))
      return SNAP_DWL_ENOMEM;
    sort_rows(r, tmp, n);
    /* Rows at or past the end address can never be found; the end row
       must follow the last one below it. */
    uint64_t keep = n;
    while (keep > 0 && r[keep - 1].addr >= dl->seqs[i].end)
      keep--;
    r[keep] = r[n];
    dl->seqs[i].count = keep + 1;
  }
  free(tmp);
  if (dl->nseqs == 0)
    return SNAP_DWL_OK;
  qsort(dl->seqs, dl->nseqs, sizeof *dl->seqs, seq_cmp);
  /* bfd's sort_line_sequences: drop nested, trim overlapping. */
  size_t n = 1;
  uint64_t last_end = dl->seqs[0].end;
  for (size_t i = 1; i < dl->nseqs; i++) {
    seq_t s = dl->seqs[i];
    if (s.low < last_end) {
      if (s.end <= last_end)
        continue;
      s.low = last_end;
    }
    last_end = s.end;
    dl->seqs[n++] = s;
  }
  dl->nseqs = n;
  return SNAP_DWL_OK;
}

/* ---- The API --------------------------------------------------------------
 */
static int cu_cmp(const void *a, const void *b) {
  const cu_t *x = a, *y = b;
  return x->stmt_list < y->stmt_list ? -1 : x->stmt_list > y->stmt_list;
}

int snap__dwarf_lines_open(const void *buf, size_t len,
                           snap__dwarf_lines_t **out) {
  if (!out)
    return SNAP_DWL_EINVAL;
  *out = NULL;
  if (!buf)
    return SNAP_DWL_EINVAL;
  secs_t s;
  int rc = find_sections(buf, len, &s);
  if (rc != SNAP_DWL_OK)
    return rc;
  snap__dwarf_lines_t *dl = calloc(1, sizeof *dl);
  if (!dl)
    return SNAP_DWL_ENOMEM;
  dl->path_budget = (uint64_t)len * PATH_BUDGET_PER_BYTE + PATH_BUDGET_BASE;

  cu_t *cus = NULL;
  size_t ncus = 0;
  if (s.info.present) {
    rc = read_cus(&s, &cus, &ncus);
    if (rc == SNAP_DWL_OK && ncus > 1) {
      /* Sorted by offset, so that a program two units share is read once
         (the comp_dir of the first unit in that order). */
      qsort(cus, ncus, sizeof *cus, cu_cmp);
    }
    /* Programs may not overlap (no producer makes them so): rows then
       number at most the bytes of .debug_line, whatever the units say. */
    uint64_t next = 0;
    for (size_t i = 0; rc == SNAP_DWL_OK && i < ncus; i++) {
      if (i > 0 && cus[i].stmt_list == cus[i - 1].stmt_list)
        continue;
      if (i > 0 && cus[i].stmt_list < next)
        rc = SNAP_DWL_EMALFORMED;
      else
        rc = read_program(dl, &s, cus[i].stmt_list, cus[i].comp_dir, &next);
    }
  } else {
    uint64_t off = 0;
    while (rc == SNAP_DWL_OK && off < s.line.size)
      rc = read_program(dl, &s, off, NULL, &off);
  }
  free(cus);
  if (rc == SNAP_DWL_OK)
    rc = finish_index(dl);
  if (rc != SNAP_DWL_OK) {
    snap__dwarf_lines_close(dl);
    return rc;
  }
  *out = dl;
  return SNAP_DWL_OK;
}

void snap__dwarf_lines_close(snap__dwarf_lines_t *dl) {
  if (!dl)
    return;
  for (size_t i = 0; i < dl->npaths; i++)
    free(dl->paths[i]);
  free(dl->paths);
  free(dl->rows);
  free(dl->seqs);
  free(dl);
}

int snap__dwarf_lines_lookup(const snap__dwarf_lines_t *dl, uint64_t addr,
                             snap__dwarf_line_t *out) {
  if (!dl || !out)
    return SNAP_DWL_EINVAL;
  /* The last sequence starting at or below addr. */
  size_t lo = 0, hi = dl->nseqs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (dl->seqs[mid].low <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0 || addr >= dl->seqs[lo - 1].end)
    return SNAP_DWL_ENOTFOUND;
  const seq_t *s = &dl->seqs[lo - 1];
  const row_t *r = dl->rows + s->first;
  /* The last row at or below addr, among rows[0 .. count-1) (the end row
     excluded: addr < end). */
  uint64_t a = 0, b = s->count - 1;
  while (a < b) {
    uint64_t mid = a + (b - a) / 2;
    if (r[mid].addr <= addr)
      a = mid + 1;
    else
      b = mid;
  }
  if (a == 0)
    return SNAP_DWL_ENOTFOUND; /* below the first row: cannot happen */
  const row_t *hit = &r[a - 1];
  out->file = dl->paths[hit->path];
  out->line = hit->line;
  out->column = hit->column;
  out->discriminator = hit->discriminator;
  out->row_address = hit->addr;
  return SNAP_DWL_OK;
}

size_t snap__dwarf_lines_rows(const snap__dwarf_lines_t *dl) {
  return dl ? dl->nrows : 0;
}

size_t snap__dwarf_lines_sequences(const snap__dwarf_lines_t *dl) {
  return dl ? dl->nseqs : 0;
}
