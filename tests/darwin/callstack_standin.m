/*
 * callstack_standin.m — Foundation's _NSCallStackArray as its contract
 * says it behaves (docs/apple.md, "Contract: _NSCallStackArray"), for GCC's
 * Objective-C runtime on Linux, so test_callstack_class.c can drive the
 * real Apple naming code (src/platform/darwin/callstack_symbols.c) against
 * it under AddressSanitizer. Built by gcc (objc.cmake explains why).
 *
 *  +arrayWithFrames:count:symbols:  keeps the frames pointer (no copy),
 *                                   _ignore = 2, _cnt = count - 2 (0 when
 *                                   count < 2), returns an autoreleased array;
 *  -count                           _cnt;
 *  -objectAtIndex:                  on first use, lines =
 *                                   backtrace_symbols(&_frames[_ignore], _cnt);
 *                                   then the line as a string, or (when
 *                                   backtrace_symbols failed) the address as a
 *                                   number; past _cnt Foundation raises, so
 *                                   the stand-in aborts;
 *  -dealloc                         free(_frames), free(lines).
 * backtrace_symbols follows Libc's rules (gen/backtrace.c) over this
 * process's dladdr, which the test may shape as dyld would (<redacted>, a
 * Mach-O header symbol): see cs_backtrace_symbols.
 *
 * No Foundation here: a small root class with a retain count, strings and
 * numbers that answer -description and -UTF8String as NSString and NSNumber
 * do, and the autorelease pool functions. Single-threaded, as the test is.
 */
#include <dlfcn.h>
#include <objc/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callstack_standin.h"

unsigned long cs_standin_ignore = 2;
int cs_standin_return_nil;
int cs_standin_symbols_fail;
int cs_standin_have_uuid;
volatile int cs_standin_formatting;
unsigned long cs_standin_made, cs_standin_freed, cs_standin_bad_index;
char cs_standin_lines[CS_STANDIN_LINES][256];
int cs_standin_nlines;

void cs_standin_reset(void) {
  cs_standin_ignore = 2;
  cs_standin_return_nil = 0;
  cs_standin_symbols_fail = 0;
  cs_standin_have_uuid = 0;
  cs_standin_made = cs_standin_freed = cs_standin_bad_index = 0;
  cs_standin_nlines = 0;
}

static void die(const char *why) {
  fprintf(stderr, "callstack_standin: %s\n", why);
  abort();
}

/* ---- Reference counting and the autorelease pool ------------------------- */

/* A root class of its own: GCC's Object has no reference counting, and a
   -dealloc that ends the chain is the root's. */
__attribute__((objc_root_class))
@interface CSObject {
  Class isa;
  unsigned long extra_refs; /* references beyond the first */
}
+ (id)alloc;
- (id)retain;
- (void)release;
- (id)autorelease;
- (void)dealloc;
@end

#define POOL_MAX 4096
static id pool_items[POOL_MAX];
static size_t pool_depth;

/* A pool is the depth at its push, plus one so that it is never NULL. */
void *objc_autoreleasePoolPush(void) {
  return (void *)(uintptr_t)(pool_depth + 1);
}

void objc_autoreleasePoolPop(void *pool) {
  size_t mark = (size_t)(uintptr_t)pool - 1;
  if (mark > pool_depth)
    die("pool popped twice or out of order");
  while (pool_depth > mark)
    [pool_items[--pool_depth] release];
}

@implementation CSObject
+ (id)alloc {
  return class_createInstance(self, 0);
}
- (id)retain {
  extra_refs++;
  return self;
}
- (void)release {
  if (extra_refs == 0)
    [self dealloc];
  else
    extra_refs--;
}
- (id)autorelease {
  if (pool_depth == POOL_MAX)
    die("autorelease pool full");
  pool_items[pool_depth++] = self;
  return self;
}
- (void)dealloc {
  object_dispose(self);
}
@end

/* NSString's part the code under test uses. */
@interface CSString : CSObject {
  char *utf8;
}
+ (id)stringWithUTF8String:(const char *)s;
- (id)description;
- (const char *)UTF8String;
@end

@implementation CSString
+ (id)stringWithUTF8String:(const char *)s {
  CSString *str = [self alloc];
  str->utf8 = strdup(s);
  if (!str->utf8)
    die("out of memory");
  return [str autorelease];
}
- (id)description {
  return self;
}
- (const char *)UTF8String {
  return utf8;
}
- (void)dealloc {
  free(utf8);
  [super dealloc];
}
@end

/* NSNumber's: its description is the decimal value. */
@interface CSNumber : CSObject {
  unsigned long value;
}
+ (id)numberWithUnsignedInteger:(unsigned long)v;
- (id)description;
@end

@implementation CSNumber
+ (id)numberWithUnsignedInteger:(unsigned long)v {
  CSNumber *n = [self alloc];
  n->value = v;
  return [n autorelease];
}
- (id)description {
  char text[24];
  snprintf(text, sizeof text, "%lu", value);
  return [CSString stringWithUTF8String:text];
}
@end

/* ---- Libc's backtrace_symbols -------------------------------------------- */

/* Libc's line: index, image basename padded to 35 columns, the address in
   16 hex digits (8 on a 32-bit process), symbol, decimal offset. */
#if __LP64__
#define LINE_FORMAT "%-4d%-35s 0x%016lx %s + %lu"
#else
#define LINE_FORMAT "%-4d%-35s 0x%08lx %s + %lu"
#endif

/* Libc (current gen/backtrace.c), per frame, from dladdr's answer:
     image  = basename of dli_fname cut to 35 characters, "???" if none;
     symbol = dli_sname, offset from dli_saddr; except
              "<redacted>" with the image's UUID known: the UUID, offset
              from dli_fbase;
            = no dli_sname but an image: the image name itself, offset from
              dli_fbase;
            = neither: "0x<dli_saddr>", offset from dli_saddr.
   dyld's UUID is modelled by a made-up one built from the image base. */
static void format_line(char *out, size_t size, int i, const void *addr,
                        const Dl_info *info) {
  char image[36] = "???", uuid[37], hex[19];
  const char *symbol;
  uintptr_t a = (uintptr_t)addr, offset;
  if (info->dli_fname) {
    const char *slash = strrchr(info->dli_fname, '/');
    snprintf(image, sizeof image, "%.35s", slash ? slash + 1 : info->dli_fname);
  }
  if (info->dli_sname && strcmp(info->dli_sname, "<redacted>") == 0 &&
      cs_standin_have_uuid) {
    snprintf(uuid, sizeof uuid, "%08lX-5A4E-4150-8000-%012lX",
             (unsigned long)((uint64_t)(uintptr_t)info->dli_fbase >> 32),
             (unsigned long)((uint64_t)(uintptr_t)info->dli_fbase &
                             0xffffffffffffu));
    symbol = uuid;
    offset = a - (uintptr_t)info->dli_fbase;
  } else if (info->dli_sname) {
    symbol = info->dli_sname;
    offset = a - (uintptr_t)info->dli_saddr;
  } else if (info->dli_fname) {
    symbol = image;
    offset = a - (uintptr_t)info->dli_fbase;
  } else {
    snprintf(hex, sizeof hex, "0x%lx",
             (unsigned long)(uintptr_t)info->dli_saddr);
    symbol = hex;
    offset = a - (uintptr_t)info->dli_saddr;
  }
  snprintf(out, size, LINE_FORMAT, i, image, (unsigned long)a, symbol,
           (unsigned long)offset);
}

/* One malloc'd block, the pointers first and the lines after them, as
   Libc's: the caller frees the block only. */
static char **cs_backtrace_symbols(void *const *frames, int n) {
  if (cs_standin_symbols_fail || n <= 0)
    return NULL;
  enum { LINE_MAX_LEN = 512 };
  char **lines = malloc((size_t)n * (sizeof(char *) + LINE_MAX_LEN));
  if (!lines)
    return NULL;
  char *text = (char *)(lines + n);
  cs_standin_formatting = 1;
  for (int i = 0; i < n; i++) {
    Dl_info info;
    if (!dladdr(frames[i], &info))
      memset(&info, 0, sizeof info); /* Libc's Dl_info array is calloc'd */
    lines[i] = text + (size_t)i * LINE_MAX_LEN;
    format_line(lines[i], LINE_MAX_LEN, i, frames[i], &info);
    if (i < CS_STANDIN_LINES)
      snprintf(cs_standin_lines[i], sizeof cs_standin_lines[i], "%s", lines[i]);
  }
  cs_standin_formatting = 0;
  cs_standin_nlines = n < CS_STANDIN_LINES ? n : CS_STANDIN_LINES;
  return lines;
}

/* ---- _NSCallStackArray --------------------------------------------------- */

@interface _NSCallStackArray : CSObject {
  void **_frames;
  unsigned long _cnt;
  unsigned long _ignore;
  char **_pcstrs;
  BOOL _wantSyms;
}
+ (id)arrayWithFrames:(void **)frames
                count:(unsigned long)count
              symbols:(BOOL)symbols;
- (unsigned long)count;
- (id)objectAtIndex:(unsigned long)index;
@end

@implementation _NSCallStackArray
+ (id)arrayWithFrames:(void **)frames
                count:(unsigned long)count
              symbols:(BOOL)symbols {
  if (cs_standin_return_nil)
    return nil;
  _NSCallStackArray *a = [self alloc];
  a->_frames = frames; /* kept, not copied: freed in -dealloc */
  a->_ignore = cs_standin_ignore;
  a->_cnt = count >= a->_ignore ? count - a->_ignore : 0;
  a->_pcstrs = NULL;
  a->_wantSyms = symbols;
  cs_standin_made++;
  return [a autorelease];
}

- (unsigned long)count {
  return _cnt;
}

- (id)objectAtIndex:(unsigned long)index {
  if (index >= _cnt) {
    /* Foundation raises NSRangeException here: in an app, a crash. */
    cs_standin_bad_index++;
    die("-[_NSCallStackArray objectAtIndex:]: index beyond bounds");
  }
  if (_wantSyms && !_pcstrs)
    _pcstrs = cs_backtrace_symbols(&_frames[_ignore], (int)_cnt);
  if (_wantSyms && _pcstrs)
    return [CSString stringWithUTF8String:_pcstrs[index]];
  return [CSNumber numberWithUnsignedInteger:(unsigned long)(uintptr_t)
                                                 _frames[_ignore + index]];
}

- (void)dealloc {
  free(_frames);
  free(_pcstrs);
  cs_standin_freed++;
  [super dealloc];
}
@end
