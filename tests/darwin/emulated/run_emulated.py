#!/usr/bin/env python3
"""run_emulated.py — Apple machine code of stacksnap, executed here (issue 23).

The portable walker (src/capture/: the walk, the cursor, the frame-record,
Swift async, call-frame and signal readers, the link-register rule),
compiled by Debian's clang for arm64-apple-ios and arm64e-apple-ios with no
SDK (freestanding headers, include/string.h here; no libSystem:
freestanding.c) and linked by ld64.lld into a Mach-O executable, runs under
the Unicorn CPU emulator. emu_seam.c is its platform seam. This script:

  1. loads the image's segments at their linked addresses (the image must
     import nothing and use no chained fixups: nothing is left to bind or
     slide);
  2. lays out stacks in emulated memory: frame records, Swift extended
     records with async context chains on a heap, _sigtramp's record over
     a signal frame, hostile records (not moving up, misaligned, outside
     the stack, cycles), link-register cases, app-only filtering, and
     seeded random stacks;
  3. calls snap_emu_walk (emu_seam.c) with the registers, on an emulated
     stack of its own, for each walk entry and flag set;
  4. compares the pcs (and the number of checked reads) with host_walk, the
     same sources built for this host walking the same bytes mapped at the
     same addresses, and with the pcs each hand-made case was built to
     hold.

Pointer authentication: Unicorn's "max" arm64 CPU implements PACIA/PACIB/
PACDA/PACDB, AUT* and XPAC* (QEMU's FEAT_PAuth, QARMA), once SCR_EL3.API,
HCR_EL2.API and SCTLR_EL1.EnIA/EnIB/EnDA/EnDB are set. Each stack is laid
out twice: plain, and with every return address, async context pointer and
the thread-state pc and lr signed by the emulated CPU (keys and modifiers
as arm64e uses them; every signed word is checked to differ from its plain
value and to authenticate back). The walker's XPACLRI must recover the
plain pcs. The arm64 image also runs on Cortex-A72, which has no pointer
authentication: there XPACLRI is a NOP and plain stacks must still walk.
Upstream clang 14 emits no pointer-authentication code for arm64e (no
ptrauth ABI): the arm64e image holds only the walker's own XPACLRI.

--part pure (run_pure below): the darwin backend's pure functions
(run-loop nesting, call-stack lines, compact unwind, wait decoding),
compiled against the SDK named by --sdk or SNAP_DARWIN_SDK, run the same
way against host_pure; skipped without an SDK.

Exit 0: every case agreed; 1: a disagreement or fault; 77 (ctest's
SKIP_RETURN_CODE): unicorn, clang, ld64.lld, the host program or (pure)
the SDK missing. docs/apple.md, "Apple machine code, executed here".

  run_emulated.py --image-dir DIR --host HOST_WALK --ld64 L [--clang C]
  run_emulated.py --part pure --sdk SDK --image-dir DIR --host HOST_PURE
                  --ld64 L [--unwind-from MACHO]...
"""
import argparse
import os
import random
import struct
import subprocess
import sys
import time

SKIP = 77


def skip(why):
    print(f"run_emulated: skipped: {why}")
    sys.exit(SKIP)


try:
    import unicorn as U
    from unicorn import arm64_const as A
except ImportError:
    U = None

# ---- emu_seam.h, word for word ----------------------------------------
N_REGIONS, N_IMAGES, MAX_PCS = 8, 4, 64
STACK, HEAP = 1, 2
BOUNDED, READERS, PLATFORM = 0, 1, 2
WORLD_WORDS = 1 + 3 * N_REGIONS + 1 + 5 * N_IMAGES + 2
CALL_WORDS = 12 + MAX_PCS
ASYNC, APP_ONLY, FP_ONLY = 0x1, 0x2, 0x4  # stacksnap.h SNAP_CAPTURE_*
ENTRY_NAMES = {BOUNDED: "bounded", READERS: "readers", PLATFORM: "platform"}

# The walker's core files and the seam (relative to the source tree).
CORE = ["walk", "cursor", "frame_records", "async_frames", "link_register",
        "cfi_step", "signal_frames", "rule_cache", "live_images", "cfi",
        "cfi_program"]
HERE = os.path.dirname(os.path.abspath(__file__))

# ---- Addresses --------------------------------------------------------
# Laid-out memory lies where the host program can map it under every
# configuration the tier runs in: below 2 GiB, which AddressSanitizer
# (shadow from 0x7fff8000) and ThreadSanitizer (application memory from
# 0x1000) both leave to the program, and below 2^39 (iOS's 39-bit user
# address space, the TCR_EL1.T0SZ the emulated CPU signs with).
STACK_LO, STACK_SIZE = 0x6f000000, 0x10000
STACK_HI = STACK_LO + STACK_SIZE
HEAP_LO, HEAP_SIZE = 0x28000000, 0x4000
UNWIND_LO = 0x29000000  # a copy of an image's __unwind_info
ALT_LO, ALT_SIZE = STACK_HI, 0x4000  # the mapping right above the stack
APP = 0x104000000  # an app's __TEXT
SYS = 0x1a0000000  # the shared cache
# The emulated walker's own stack, call block and return trap.
WSTACK_LO, WSTACK_SIZE = 0x700000000, 0x100000
CALL_AT = 0x710000000
TRAP = 0x720000000


def blend(addr, disc):
    """ptrauth_blend_discriminator: the address with disc in its top 16
    bits."""
    return (addr & 0x0000FFFFFFFFFFFF) | (disc << 48)


# ---- A case -----------------------------------------------------------
class Case:
    """One laid-out memory image and one walk over it. put() records each
    word; sign= marks a word the arm64e variant stores signed, as (key,
    modifier) with key one of ia ib da db."""

    def __init__(self, name, expect=None, flags=(0, FP_ONLY),
                 entries=(BOUNDED, READERS, PLATFORM)):
        self.name, self.expect = name, expect
        self.flags, self.entries = flags, entries
        self.regions = []  # [lo, size, kind, bytearray]
        self.signs = {}  # addr -> (key, modifier)
        self.images = []  # (start, end, in_app, unwind_info, size)
        self.async_active = 0
        self.regs = dict(pc=0, sp=0, fp=0, lr=0, lr_valid=0)
        self.reg_signs = {}  # reg -> (key, modifier)
        self.exact, self.hi, self.max, self.skip = 1, STACK_HI, MAX_PCS, 0

    def region(self, lo, size, kind):
        self.regions.append([lo, size, kind, bytearray(size)])

    def put(self, addr, value, sign=None):
        for lo, size, _, data in self.regions:
            if lo <= addr and addr + 8 <= lo + size:
                struct.pack_into("<Q", data, addr - lo, value & (2**64 - 1))
                for a in range(addr - 7, addr + 8):  # words it overlaps
                    self.signs.pop(a, None)
                if sign:
                    self.signs[addr] = sign
                return
        raise ValueError(f"{self.name}: {addr:#x} is in no region")

    def put_bytes(self, addr, b):
        for lo, size, _, data in self.regions:
            if lo <= addr and addr + len(b) <= lo + size:
                data[addr - lo:addr - lo + len(b)] = b
                return
        raise ValueError(f"{self.name}: {addr:#x} is in no region")

    def get(self, addr):
        for lo, size, _, data in self.regions:
            if lo <= addr and addr + 8 <= lo + size:
                return struct.unpack_from("<Q", data, addr - lo)[0]
        raise ValueError(addr)

    def record(self, at, saved_fp, ra, sign=True):
        """A frame record [saved fp, return address] at `at`; on arm64e the
        return address is signed as pacibsp signs it: IB key, the sp on
        entry (the record's address + 16) as modifier."""
        self.put(at, saved_fp)
        self.put(at + 8, ra, ("ib", at + 16) if sign else None)

    def set_regs(self, pc, sp, fp, lr=0, lr_valid=0, exact=1):
        self.regs = dict(pc=pc, sp=sp, fp=fp, lr=lr, lr_valid=lr_valid)
        self.exact = exact
        # thread_get_state's arm64e pc and lr are signed (IA, IB);
        # the cursor strips both.
        self.reg_signs = {"pc": ("ia", 0x7481)}
        if lr_valid:
            self.reg_signs["lr"] = ("ib", 0x77d3)

    def world_words(self):
        w = [len(self.regions)]
        for i in range(N_REGIONS):
            if i < len(self.regions):
                lo, size, kind, _ = self.regions[i]
                w += [lo, lo + size, kind]
            else:
                w += [0, 0, 0]
        w.append(len(self.images))
        for i in range(N_IMAGES):
            im = list(self.images[i]) if i < len(self.images) else []
            w += (im + [0, 0, 0, 0, 0])[:5]
        w += [self.async_active, 0]
        assert len(w) == WORLD_WORDS
        return w

    def call_words(self, flags, entry, regs=None):
        r = regs or self.regs
        w = [r["pc"], r["sp"], r["fp"], r["lr"], r["lr_valid"], self.exact,
             flags, self.hi, self.max, self.skip, entry, 0]
        return w + [0] * MAX_PCS


def pack(words):
    return struct.pack(f"<{len(words)}Q", *[x & (2**64 - 1) for x in words])


# ---- The cases --------------------------------------------------------
def ra(i, base=APP):
    return base + 0x1000 + 0x40 * i + 4 * (i % 7)


def plain_chain(c, ras, top=STACK_HI - 0x100, step=0x60):
    """Records from `top` down, outermost first: ras[-1] is the outermost
    return address (saved fp 0). Returns the innermost record's address."""
    at, outer = top, 0
    for r in reversed(ras):
        at -= step
        c.record(at, outer, r)
        outer = at
    return outer


def stack_case(name, **kw):
    c = Case(name, **kw)
    c.region(STACK_LO, STACK_SIZE, STACK)
    return c


def cases(seed, n_random, unwind):
    out = []
    # 1. Frame records, various depths: pc, then every return address.
    for depth in (0, 1, 2, 5, 17, 40):
        ras = [ra(i) for i in range(depth)]
        c = stack_case(f"records depth {depth}", expect=None)
        fp = plain_chain(c, ras) if ras else 0
        c.set_regs(APP + 0x10, (fp or STACK_HI - 0x200) - 0x30, fp)
        c.expect = [APP + 0x10] + ras
        out.append(c)
    # 2. A record whose return address is 0 ends the stack.
    c = stack_case("return address 0 ends")
    fp = plain_chain(c, [ra(1), ra(2), 0, ra(4)])
    c.set_regs(APP + 0x20, fp - 0x20, fp)
    c.expect = [APP + 0x20, ra(1), ra(2)]
    out.append(c)
    # 3. A saved fp that does not move up the stack: a cycle, a record
    #    pointing to itself, one pointing below the current frame.
    for what, bad in (("cycle", "inner"), ("self", "self"), ("down", "down")):
        c = stack_case(f"fp does not move up ({what})")
        ras = [ra(i) for i in range(4)]
        fp = plain_chain(c, ras)
        third = c.get(c.get(fp))  # the third record
        target = {"inner": fp, "self": third, "down": fp - 0x100}[bad]
        c.put(third, target)
        c.set_regs(APP + 0x30, fp - 0x40, fp)
        c.expect = [APP + 0x30] + ras[:3]
        out.append(c)
    # 4. A misaligned saved fp ends the walk.
    c = stack_case("misaligned fp")
    ras = [ra(i) for i in range(5)]
    fp = plain_chain(c, ras)
    second = c.get(fp)
    c.put(second, c.get(second) + 4)
    c.set_regs(APP + 0x40, fp - 0x40, fp)
    c.expect = [APP + 0x40] + ras[:2]
    out.append(c)
    # 5. A saved fp past the stack's top (into another thread's stack, which
    #    the checked read could reach): never followed.
    c = stack_case("fp beyond the stack top")
    c.region(ALT_LO, ALT_SIZE, HEAP)
    ras = [ra(i) for i in range(3)]
    fp = plain_chain(c, ras)
    c.put(ALT_LO + 0x100, 0)
    c.put(ALT_LO + 0x108, ra(99))
    c.put(c.get(fp), STACK_HI + 0x100)  # second record -> past the top
    c.set_regs(APP + 0x50, fp - 0x40, fp)
    c.expect = [APP + 0x50] + ras[:2]
    out.append(c)
    # 6. A record straddling the stack's top: its second word is outside.
    c = stack_case("record straddles the top")
    c.set_regs(APP + 0x60, STACK_HI - 0x100, STACK_HI - 8)
    c.put(STACK_HI - 8, 0)
    c.expect = [APP + 0x60]
    out.append(c)
    # 7. Bounds unknown (hi 0): every read is the checked one; a chain
    #    into unmapped memory ends where the read is refused.
    c = stack_case("bounds unknown", entries=(BOUNDED, READERS))
    ras = [ra(i) for i in range(6)]
    fp = plain_chain(c, ras)
    c.put(c.get(c.get(c.get(fp))), 0x50000000)  # 4th record -> unmapped
    c.set_regs(APP + 0x70, fp - 0x40, fp)
    c.hi = 0
    c.expect = [APP + 0x70] + ras[:4]
    out.append(c)
    # 8. max and skip.
    for mx, sk in ((1, 0), (3, 0), (4, 2), (8, 5), (5, 30)):
        c = stack_case(f"max {mx} skip {sk}")
        ras = [ra(i) for i in range(12)]
        fp = plain_chain(c, ras)
        c.set_regs(APP + 0x80, fp - 0x40, fp)
        c.max, c.skip = mx, sk
        c.expect = ([APP + 0x80] + ras)[sk:sk + mx]
        out.append(c)
    # 9. The link register of a stopped thread (frame 0 a leaf, or not).
    #    Function bounds come from a real __unwind_info (the arm64 walker
    #    image's own, copied into the laid-out memory) through Apple's own
    #    lookup, compact_unwind.c. pc lies in the image's largest function,
    #    a stale lr in the same one, a live lr in the second largest.
    base, text_hi, section, funcs = unwind
    (a0, a1), (b0, _) = funcs[0], funcs[1]
    for what in ("live", "stale", "same", "no bounds", "lr in no image"):
        c = stack_case(f"link register {what}")
        c.region(UNWIND_LO, (len(section) + 0xFFF) & ~0xFFF, HEAP)
        c.put_bytes(UNWIND_LO, section)
        c.images = [(base, base + text_hi, 1) +
                    ((0, 0) if what == "no bounds" else
                     (UNWIND_LO, len(section)))]
        ras = [ra(i) for i in range(4)]
        fp = plain_chain(c, ras)
        pc = a0 + 0x10
        lr = {"live": b0 + 0x14, "stale": a0 + (a1 - a0) // 2,
              "same": ras[0], "no bounds": a0 + (a1 - a0) // 2,
              "lr in no image": SYS + 0x100}[what]
        c.set_regs(pc, fp - 0x40, fp, lr=lr, lr_valid=1)
        taken = what in ("live", "no bounds", "lr in no image")
        c.expect = [pc] + ([lr] if taken else []) + ras
        out.append(c)
    # 10. App-only: the shared cache's frames dropped.
    c = stack_case("app only", flags=(APP_ONLY, APP_ONLY | FP_ONLY))
    c.images = [(APP, APP + 0x100000, 1), (SYS, SYS + 0x10000000, 0)]
    ras = [ra(0), ra(1, SYS), ra(2), ra(3, SYS), ra(4, SYS), ra(5)]
    fp = plain_chain(c, ras)
    c.set_regs(SYS + 0x10, fp - 0x40, fp)
    c.expect = [r for r in [SYS + 0x10] + ras if APP <= r < APP + 0x100000]
    out.append(c)
    # 11. Swift async: an extended record (saved fp tagged 0b0001 in bits
    #     63:60), the context at fp - 8 (signed DB, the slot's address
    #     blended with 0xc31a), contexts on the heap (parent DA, resume IA).
    for what in ("chain", "inactive", "unreadable", "misaligned", "loop",
                 "no resume", "no async flag", "deep frame"):
        flags = (FP_ONLY,) if what == "no async flag" else (ASYNC,
                                                            ASYNC | FP_ONLY)
        c = stack_case(f"swift async {what}", flags=flags)
        c.region(HEAP_LO, HEAP_SIZE, HEAP)
        c.async_active = 0 if what == "inactive" else 1
        os_ras = [ra(i, SYS) for i in range(5)]  # the executor's frames
        top_fp = plain_chain(c, os_ras)
        # The async function's extended record, under the executor's.
        ext = top_fp - 0x60
        c.record(ext, top_fp | (1 << 60), ra(50, SYS))
        ctxs = [HEAP_LO + 0x100 + 0x80 * i for i in range(4)]
        resumes = [ra(60 + i) for i in range(4)]
        for i, cx in enumerate(ctxs):
            parent = ctxs[i + 1] if i + 1 < len(ctxs) else 0
            if what == "loop" and i == len(ctxs) - 1:
                parent = ctxs[0]
            c.put(cx, parent, ("da", blend(cx, 0xbda2)))
            c.put(cx + 8, resumes[i], ("ia", blend(cx + 8, 0xd707)))
        first = {"unreadable": 0x50000000, "misaligned": ctxs[0] + 4}.get(
            what, ctxs[0])
        if what == "no resume":
            c.put(ctxs[0] + 8, 0)
        c.put(ext - 8, first, ("db", blend(ext - 8, 0xc31a)))
        fp, pc = ext, APP + 0x90
        inner = []
        if what == "deep frame":  # a plain callee of the async function
            fp = ext - 0x40
            c.record(fp, ext, ra(70))
            inner = [ra(70)]
        c.set_regs(pc, fp - 0x30, fp)
        os_stack = [pc] + inner + [ra(50, SYS)] + os_ras
        walked = [pc] + inner + [r + 1 for r in resumes]
        if what == "loop":
            c.max = 20
            walked = ([pc] + inner + [r + 1 for r in resumes] * 6)[:20]
        c.expect = {"chain": walked, "deep frame": walked, "loop": walked,
                    }.get(what, os_stack)
        out.append(c)
    # 12. Apple's signal frame: xnu pushes the ucontext and siginfo on the
    #     stack, _sigtramp's prologue a record [interrupted fp, interrupted
    #     lr] under it, and the handler's records under that. Frame records
    #     cross it (signal_frames_darwin.c); the interrupted pc itself is
    #     not in any record.
    c = stack_case("signal frame (_sigtramp)")
    ras = [ra(i) for i in range(4)]
    interrupted = plain_chain(c, ras)
    uctx = interrupted - 0x400  # ucontext + siginfo: 0x300 bytes of state
    rnd = random.Random(seed)
    for a in range(uctx, uctx + 0x300, 8):
        c.put(a, rnd.getrandbits(64))
    tramp = uctx - 0x20
    sigtramp_ra = SYS + 0x4c10
    c.record(tramp, interrupted, ra(9))  # ra(9): the interrupted lr
    handler = tramp - 0x50
    c.record(handler, tramp, sigtramp_ra)
    c.set_regs(APP + 0xa0, handler - 0x20, handler)
    c.expect = [APP + 0xa0, sigtramp_ra, ra(9)] + ras
    out.append(c)
    # 13. Random stacks: chains of records that wander (down the stack,
    #     misaligned, tagged, ending in 0), contexts anywhere on the heap;
    #     only agreement with the host is required. Every word is a
    #     canonical address (below 2^39): of a wild one, XPACLRI keeps the
    #     low 39 bits where the host keeps all 64, a difference of
    #     architectures, not of the walker.
    rnd = random.Random(seed)
    for i in range(n_random):
        fl = rnd.choice([(0,), (FP_ONLY,), (ASYNC,), (ASYNC | FP_ONLY,)])
        c = stack_case(f"random {i}", flags=fl)
        c.region(HEAP_LO, HEAP_SIZE, HEAP)
        c.async_active = rnd.getrandbits(1)
        addr = STACK_HI - 8 * rnd.randrange(4, 64)
        fp = addr - 8 * rnd.randrange(2, 40)
        first_fp = fp
        for _ in range(rnd.randrange(1, 30)):
            nxt = fp + 16 + 8 * rnd.randrange(0, 24)
            if rnd.random() < 0.1:
                nxt = fp - 8 * rnd.randrange(0, 8)  # does not move up
            misaligned = rnd.random() < 0.05
            if misaligned:
                nxt += 4
            if rnd.random() < 0.1:
                nxt |= 1 << 60  # async tag
            if fp + 16 > STACK_HI or fp < STACK_LO:
                break
            c.put(fp, nxt if nxt < STACK_HI else 0)
            c.put(fp + 8, rnd.choice([ra(rnd.randrange(200)),
                                      ra(rnd.randrange(200), SYS), 0]),
                  ("ib", fp + 16))
            if nxt & (1 << 60) and fp - 8 >= STACK_LO:
                cx = HEAP_LO + 16 * rnd.randrange(0, HEAP_SIZE // 16 - 1)
                c.put(fp - 8, cx, ("db", blend(fp - 8, 0xc31a)))
                c.put(cx, HEAP_LO + 16 * rnd.randrange(0, HEAP_SIZE // 16 - 1),
                      ("da", blend(cx, 0xbda2)))
                c.put(cx + 8, ra(rnd.randrange(100, 200)),
                      ("ia", blend(cx + 8, 0xd707)))
            if misaligned:
                break  # the walk ends there; nothing is written unaligned
            fp = nxt & ~(0xF << 60)
        c.set_regs(APP + 8 * i, first_fp - 8 * rnd.randrange(0, 8), first_fp,
                   lr=ra(rnd.randrange(200)), lr_valid=rnd.getrandbits(1),
                   exact=rnd.getrandbits(1))
        c.hi = rnd.choice([STACK_HI, STACK_HI, 0])
        c.entries = (BOUNDED, READERS) if c.hi == 0 else c.entries
        c.max = rnd.choice([MAX_PCS, 10, 3])
        out.append(c)
    return out


# ---- Mach-O -----------------------------------------------------------
LC_SEGMENT_64, LC_SYMTAB, LC_DYLD_INFO_ONLY = 0x19, 0x2, 0x80000022
LC_DYLD_CHAINED_FIXUPS = 0x80000034


class MachO:
    """Segments, sections and defined symbols of an arm64 Mach-O file. With
    run=True it must be loadable as is: no binds, no chained fixups."""

    def __init__(self, path, run=True):
        d = open(path, "rb").read()
        magic, cputype, subtype, ftype, ncmds, _, _, _ = struct.unpack_from(
            "<IiiIIIII", d)
        if magic != 0xFEEDFACF or cputype != 0x0100000C:
            raise SystemExit(f"{path}: not an arm64 Mach-O")
        self.segments, self.symbols, self.sections = [], {}, {}
        off = 32
        for _ in range(ncmds):
            cmd, size = struct.unpack_from("<II", d, off)
            if cmd == LC_SEGMENT_64:
                name, vmaddr, vmsize, fileoff, filesize = struct.unpack_from(
                    "<16sQQQQ", d, off + 8)
                nsects = struct.unpack_from("<I", d, off + 64)[0]
                for k in range(nsects):
                    sect, seg, addr, ssize, soff = struct.unpack_from(
                        "<16s16sQQI", d, off + 72 + 80 * k)
                    key = (seg.rstrip(b"\0").decode(),
                           sect.rstrip(b"\0").decode())
                    self.sections[key] = (addr, d[soff:soff + ssize]
                                          if soff else b"")
                if vmaddr or fileoff or filesize:  # not __PAGEZERO
                    self.segments.append((name.rstrip(b"\0").decode(), vmaddr,
                                          vmsize, d[fileoff:fileoff + filesize]))
            elif cmd == LC_SYMTAB:
                symoff, nsyms, stroff, _ = struct.unpack_from("<IIII", d,
                                                              off + 8)
                for i in range(nsyms):
                    strx, ntype, _, _, value = struct.unpack_from(
                        "<IBBHQ", d, symoff + 16 * i)
                    name = d[stroff + strx:d.index(b"\0", stroff + strx)]
                    if ntype & 0x0e == 0x0e:  # N_SECT
                        self.symbols[name.decode()] = value
            elif cmd == LC_DYLD_INFO_ONLY:
                w = struct.unpack_from("<10I", d, off + 8)
                if run and (w[3] or w[5] or w[7]):  # bind, weak, lazy sizes
                    raise SystemExit(f"{path}: imports symbols")
            elif cmd == LC_DYLD_CHAINED_FIXUPS and run:
                raise SystemExit(f"{path}: chained fixups are not applied here")
            off += size


# ---- The emulated CPU -------------------------------------------------
def cp(crn, crm, op0, op1, op2):
    return (crn, crm, op0, op1, op2)


SCTLR_EL1, TCR_EL1 = cp(1, 0, 3, 0, 0), cp(2, 0, 3, 0, 2)
HCR_EL2, SCR_EL3 = cp(1, 1, 3, 4, 0), cp(1, 1, 3, 6, 0)
KEYS = {"ia": (1, 0), "ib": (1, 2), "da": (2, 0), "db": (2, 2)}
PAC = {"ia": 0xDAC10020, "ib": 0xDAC10420, "da": 0xDAC10820,
       "db": 0xDAC10C20}  # pac<key> x0, x1
AUT = {"ia": 0xDAC11020, "ib": 0xDAC11420, "da": 0xDAC11820,
       "db": 0xDAC11C20}  # aut<key> x0, x1


def new_cpu(model, pac):
    uc = U.Uc(U.UC_ARCH_ARM64, U.UC_MODE_ARM)
    uc.ctl_set_cpu_model(model)
    if pac:
        rnd = random.Random(0x5eed)
        for crm, op2 in KEYS.values():  # key lo, key hi
            uc.reg_write(A.UC_ARM64_REG_CP_REG, cp(2, crm, 3, 0, op2) +
                         (rnd.getrandbits(64),))
            uc.reg_write(A.UC_ARM64_REG_CP_REG, cp(2, crm, 3, 0, op2 + 1) +
                         (rnd.getrandbits(64),))
        # Non-secure (so HCR_EL2 applies), pointer-auth not trapped to EL2
        # or EL3, enabled for all four keys at EL1 (where Unicorn runs).
        scr = uc.reg_read(A.UC_ARM64_REG_CP_REG, SCR_EL3)
        uc.reg_write(A.UC_ARM64_REG_CP_REG,
                     SCR_EL3 + (scr | 1 | 1 << 10 | 1 << 16 | 1 << 17,))
        hcr = uc.reg_read(A.UC_ARM64_REG_CP_REG, HCR_EL2)
        uc.reg_write(A.UC_ARM64_REG_CP_REG,
                     HCR_EL2 + (hcr | 1 << 31 | 1 << 40 | 1 << 41,))
        sctlr = uc.reg_read(A.UC_ARM64_REG_CP_REG, SCTLR_EL1)
        uc.reg_write(A.UC_ARM64_REG_CP_REG, SCTLR_EL1 + (
            sctlr | 1 << 31 | 1 << 30 | 1 << 27 | 1 << 13,))
        # 39-bit user addresses, no top-byte ignore: the PAC takes bits
        # 54:39 and 63:56.
        uc.reg_write(A.UC_ARM64_REG_CP_REG, TCR_EL1 + (25,))
    return uc


class Signer:
    """Signs and authenticates with the emulated CPU's own instructions."""

    def __init__(self):
        self.uc = new_cpu(A.UC_CPU_ARM64_MAX, True)
        self.uc.mem_map(0x10000, 0x1000)

    def _run(self, insn, value, modifier):
        self.uc.mem_write(0x10000, struct.pack("<I", insn))
        self.uc.reg_write(A.UC_ARM64_REG_X0, value)
        self.uc.reg_write(A.UC_ARM64_REG_X1, modifier)
        self.uc.emu_start(0x10000, 0x10004)
        return self.uc.reg_read(A.UC_ARM64_REG_X0)

    def sign(self, key, value, modifier):
        s = self._run(PAC[key], value, modifier)
        if value and (s == value or self._run(AUT[key], s, modifier) != value):
            raise SystemExit(f"pac{key} {value:#x}: {s:#x} does not sign "
                             "or does not authenticate")
        return s


def signed_variant(c, signer):
    """The case's regions and registers with every marked word signed."""
    regions = [[lo, size, kind, bytearray(data)] for lo, size, kind, data
               in c.regions]
    for addr, (key, mod) in c.signs.items():
        for lo, size, _, data in regions:
            if lo <= addr < lo + size:
                v = struct.unpack_from("<Q", data, addr - lo)[0]
                struct.pack_into("<Q", data, addr - lo, signer.sign(key, v, mod))
    regs = dict(c.regs)
    for r, (key, mod) in c.reg_signs.items():
        regs[r] = signer.sign(key, regs[r], mod)
    return regions, regs


class Emulated:
    """A walker image loaded into one emulated CPU."""

    def __init__(self, image, model, pac):
        self.uc = uc = new_cpu(model, pac)
        m = MachO(image)
        for name, vmaddr, vmsize, data in m.segments:
            size = (vmsize + 0x3FFF) & ~0x3FFF
            uc.mem_map(vmaddr, size)
            uc.mem_write(vmaddr, data)
        self.entry = m.symbols["_snap_emu_walk"]
        self.world = m.symbols["_snap_emu_world"]
        uc.mem_map(WSTACK_LO, WSTACK_SIZE)
        uc.mem_map(CALL_AT, 0x1000)
        uc.mem_map(TRAP, 0x1000)
        uc.mem_write(TRAP, struct.pack("<I", 0xD4200000))  # brk #0

    def walk(self, c, regions, flags, entry, regs):
        uc = self.uc
        for lo, size, _, data in regions:
            uc.mem_map(lo, size)
            uc.mem_write(lo, bytes(data))
        uc.mem_write(self.world, pack(c.world_words()))
        uc.mem_write(CALL_AT, pack(c.call_words(flags, entry, regs)))
        uc.reg_write(A.UC_ARM64_REG_X0, CALL_AT)
        uc.reg_write(A.UC_ARM64_REG_SP, WSTACK_LO + WSTACK_SIZE - 0x100)
        uc.reg_write(A.UC_ARM64_REG_X29, 0)
        uc.reg_write(A.UC_ARM64_REG_X30, TRAP)
        try:
            uc.emu_start(self.entry, TRAP, count=2_000_000)
        except U.UcError as e:
            pc = uc.reg_read(A.UC_ARM64_REG_PC)
            return f"fault {e} at pc {pc:#x}"
        finally:
            for lo, size, _, _ in regions:
                uc.mem_unmap(lo, size)
        if uc.reg_read(A.UC_ARM64_REG_PC) != TRAP:
            return "did not return (instruction budget)"
        words = struct.unpack(f"<{CALL_WORDS}Q",
                              uc.mem_read(CALL_AT, 8 * CALL_WORDS))
        n = words[11]
        reads = struct.unpack("<Q", uc.mem_read(
            self.world + 8 * (WORLD_WORDS - 1), 8))[0]
        return (list(words[12:12 + n]), reads)


def host_answers(host, runs):
    blob = bytearray()
    for c, flags, entry in runs:
        blob += b"SNAPEMU1" + pack(c.world_words()) + pack(
            c.call_words(flags, entry))
        for _, _, _, data in c.regions:
            blob += data
    p = subprocess.run([host], input=bytes(blob), capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"host_walk failed ({p.returncode}): "
                         f"{p.stderr.decode(errors='replace')}")
    out = []
    for line in p.stdout.decode().splitlines():
        f = line.split()
        n = int(f[0])
        out.append(([int(x, 16) for x in f[1:1 + n]], int(f[1 + n])))
    if len(out) != len(runs):
        raise SystemExit("host_walk: answered too few cases")
    return out


def image_unwind(path):
    """An image's base, its text's end (offset), its __unwind_info, and its
    functions [start, end) by its symbols, largest first."""
    m = MachO(path, run=False)
    base = next(v for n, v, _, _ in m.segments if n == "__TEXT")
    text_at, text = m.sections[("__TEXT", "__text")]
    starts = sorted(v for v in set(m.symbols.values())
                    if text_at <= v < text_at + len(text))
    funcs = list(zip(starts, starts[1:] + [text_at + len(text)]))
    funcs.sort(key=lambda f: f[1] - f[0], reverse=True)
    return (base, text_at - base + len(text),
            m.sections[("__TEXT", "__unwind_info")][1], funcs)


# ---- Building the images ----------------------------------------------
def build_images(args):
    """Compiles the core and the seam for arm64 and arm64e with no SDK and
    links them with ld64.lld. Returns {arch: path}."""
    resource = subprocess.run([args.clang, "-print-resource-dir"],
                              capture_output=True, text=True,
                              check=True).stdout.strip()
    srcs = [os.path.join(args.src, "src/capture", f + ".c") for f in CORE]
    srcs += [os.path.join(args.src, "src/platform/darwin/compact_unwind.c"),
             os.path.join(HERE, "emu_seam.c"), os.path.join(HERE,
                                                           "freestanding.c")]
    images = {}
    for arch, minos in (("arm64", "12.0"), ("arm64e", "14.0")):
        objdir = os.path.join(args.image_dir, arch)
        os.makedirs(objdir, exist_ok=True)
        objs = []
        for s in srcs:
            o = os.path.join(objdir, os.path.basename(s)[:-2] + ".o")
            cmd = [args.clang, "-target", f"{arch}-apple-ios{minos}",
                   # -ffreestanding drops the unwind tables an app's
                   # build has (and __unwind_info with them): back on.
                   "-ffreestanding", "-funwind-tables", "-nostdinc",
                   "-isystem",
                   os.path.join(resource, "include"), "-isystem",
                   os.path.join(HERE, "include"), "-O2", "-std=c11", "-Wall",
                   "-Wextra", "-Werror", "-I", os.path.join(args.src, "src"),
                   "-I", os.path.join(args.src, "include"), "-I", HERE,
                   "-c", s, "-o", o]
            subprocess.run(cmd, check=True)
            objs.append(o)
        out = os.path.join(args.image_dir, f"walker-{arch}")
        subprocess.run([args.ld64, "-arch", arch, "-platform_version", "ios",
                        minos, minos, "-e", "_snap_emu_walk", "-dead_strip",
                        "-o", out] + objs, check=True)
        images[arch] = out
    return images


def count_pac_instructions(image, objdump):
    """Pointer-authentication instructions clang put in the image, apart
    from the walker's own XPACLRI (hint #7)."""
    if not objdump:
        return None
    d = subprocess.run([objdump, "-d", "--macho", image], capture_output=True,
                       text=True).stdout
    words = ("pacia", "pacib", "pacda", "pacdb", "autia", "autib", "retaa",
             "retab", "blraa", "blrab", "braa", "brab", "ldraa", "ldrab",
             "pacibsp", "autibsp", "xpaci", "xpacd")
    return sum(1 for line in d.splitlines()
               if line.split("\t")[-1].split(" ")[0].strip() in words)


# ---- The SDK part: the darwin backend's pure functions ----------------
PURE = ["runloop_nesting", "callstack_lines", "compact_unwind", "wait_abi"]
OP_RUNLOOP, OP_CSLINE, OP_UNWIND, OP_WAIT = 1, 2, 3, 4
ARENA, ARENA_SIZE, OUT_MAX = 0x30000000, 0x400000, 4096
OUT_AT = 0x710000000


def build_pure_images(args):
    """pure_seam.c and the four files compiled as the Apple build compiles
    them: against the SDK's headers (-isysroot), C11, arm64 and arm64e."""
    srcs = [os.path.join(args.src, "src/platform/darwin", f + ".c")
            for f in PURE]
    srcs += [os.path.join(HERE, "pure_seam.c"), os.path.join(HERE,
                                                            "freestanding.c")]
    images = {}
    for arch, minos in (("arm64", "12.0"), ("arm64e", "14.0")):
        objdir = os.path.join(args.image_dir, "pure-objects-" + arch)
        os.makedirs(objdir, exist_ok=True)
        objs = []
        for src in srcs:
            o = os.path.join(objdir, os.path.basename(src)[:-2] + ".o")
            subprocess.run([args.clang, "-target", f"{arch}-apple-ios{minos}",
                            "-isysroot", args.sdk, "-O2", "-std=c11", "-Wall",
                            "-Wextra", "-Werror", "-I",
                            os.path.join(args.src, "src"), "-I",
                            os.path.join(args.src, "include"), "-I", HERE,
                            "-c", src, "-o", o], check=True)
            objs.append(o)
        out = os.path.join(args.image_dir, f"pure-{arch}")
        subprocess.run([args.ld64, "-arch", arch, "-platform_version", "ios",
                        minos, minos, "-e", "_snap_emu_pure", "-dead_strip",
                        "-o", out] + objs, check=True)
        images[arch] = out
    return images


class Arena:
    """One request: input words at the arena's start, data after them."""

    def __init__(self, op):
        self.op, self.words, self.data = op, [], bytearray()

    def blob(self, b, align=16):
        """Places b in the arena; returns its address (fixed up once the
        words' length is known: data follows a 64 KiB word area)."""
        while len(self.data) % align:
            self.data.append(0)
        at = ARENA + 0x10000 + len(self.data)
        self.data += b
        return at

    def bytes(self):
        w = pack(self.words)
        assert len(w) <= 0x10000
        return w + bytes(0x10000 - len(w)) + bytes(self.data)


CS_LINES = [
    "0   CoreFoundation                      0x00007fff204a16af __exceptionPreprocess + 242",
    "1   libobjc.A.dylib                     0x00007fff201d93c9 objc_exception_throw + 48",
    "3   UIKitCore                           0x00000001a1f2f5d8 -[UIApplication _run] + 1064",
    "4   MyApp                               0x0000000102a5c1e4 main + 120",
    "6   ???                                 0x0000000000000000 0x0 + 0",
    "7   dyld                                0x0000000100b6d4d0 start + 444",
    "8   ???                                 0x000000010a8e3f2c 0x0 + 4472061740",
    "9   Google Chrome Framework             0x0000000110d2a8b5 ChromeMain + 21",
    "10  com.apple.AppSupport.SomeVeryLongFramework 0x00000001a2b3c4d5 f + 1",
    "11  MyApp                               0x0000000102a60010 MyApp + 65552",
    "11  MyApp                               0x0000000102a60010 0x102a50000 + 65552",
    "12  UIKitCore                           0x00000001a1f2f5d8 <redacted> + 36",
    "13  MyApp                               0x0000000102a5c1e4 closure #1 in ViewController.viewDidLoad() + 52",
    "15  Foundation                          0x00000001a30b1c2c +[NSThread callStackSymbols] + 40",
    "16  1Password 7                         0x0000000104c0ffee main + 64",
    "3   UIKitCore                           0x1234 -[UIApplication _run] + 1",
    "3   0x00000001a1f2f5d8 -[UIApplication _run] + 1",
    "3   UIKitCore                           0x00000001a1f2f5d8  + 12",
    "3   MyApp                               0x0000000102a60010 UIKitCore + 4",
    "5   libsystem_kernel.dylib              0x00000001b0d4c014 0xB0D4C000 + 20",
    "2   MyApp                               0x0000000102a5c1e4 A1B2C3D4-E5F6-0718-293A-4B5C6D7E8F90 + 7",
]


def pure_requests(seed, sections):
    rnd = random.Random(seed)
    reqs = []
    # Run-loop nesting: random activity sequences, known and unknown values.
    acts = [1, 2, 4, 32, 64, 128, 0, 8, 3, 0xFFFFFFFF, 1 << 6 | 1 << 5]
    for _ in range(200):
        a = Arena(OP_RUNLOOP)
        seq = [rnd.choice(acts) for _ in range(rnd.randrange(1, 60))]
        a.words = [rnd.randrange(0, 4), rnd.getrandbits(1), len(seq)] + seq
        reqs.append(("runloop", a))
    # Call-stack lines: real shapes, every truncation, random edits.
    lines = [l.encode() for l in CS_LINES]
    for l in list(lines[:6]):
        lines += [l[:k] for k in range(0, len(l), 3)]
    for _ in range(300):
        l = bytearray(rnd.choice(lines[:len(CS_LINES)]))
        for _ in range(rnd.randrange(1, 4)):
            if l:
                l[rnd.randrange(len(l))] = rnd.choice(
                    b" +0x9aF?<>-[]#\x00\xff")
        lines.append(bytes(l))
    for l in lines:
        a = Arena(OP_CSLINE)
        # The line's own bytes only: a parser reading past len would read
        # the arena's zeros on both sides, so it is followed by junk.
        at = a.blob(l + b"J" * 8, align=1)
        a.words = [at, len(l)]
        reqs.append(("callstack line", a))
    # Compact unwind: each real section, and damaged copies of it.
    for name, (base, text_lo, text_hi, sec) in sections.items():
        copies = [("", sec)]
        for k in range(40):
            b = bytearray(sec)
            for _ in range(rnd.randrange(1, 6)):
                b[rnd.randrange(len(b))] = rnd.getrandbits(8)
            copies.append((f" damaged {k}", bytes(b)))
        for k in range(10):
            copies.append((f" truncated {k}", sec[:rnd.randrange(len(sec))]))
        for tag, b in copies:
            a = Arena(OP_UNWIND)
            at = a.blob(b)
            targets = sorted({rnd.randrange(max(0, text_lo - 64), text_hi + 64)
                              for _ in range(150)} | {text_lo, text_hi,
                                                      text_hi - 1, 0})
            a.words = [at, len(b), base, len(targets)] + targets
            reqs.append((f"unwind {name}{tag}", a))
    # Wait decoding: register sets over lock memory and a thread table.
    threads = [(0x0A07, 0x9C3A1), (0x1503, 0x9C3F7), (0x2603, 0x9C402)]
    for _ in range(400):
        a = Arena(OP_WAIT)
        code = a.blob(bytes(0x80))
        lock = a.blob(bytes(0x100))
        regions = [(code, code + 0x80), (lock, lock + 0x100)]
        words = {code + 0x10: 0xD4001001, code + 0x20: 0xD65F03C0}
        lock_words = [rnd.choice([0, t[0], t[0] & ~1, t[0] | 3,
                                  t[1], rnd.getrandbits(32),
                                  0x32AAABA7, 0x4D555458])
                      for t in [rnd.choice(threads)] for _ in range(32)]
        for k, w in enumerate(lock_words):
            struct.pack_into("<I", a.data, lock - ARENA - 0x10000 + 4 * k, w)
        for addr, w in words.items():
            struct.pack_into("<I", a.data, addr - ARENA - 0x10000, w)
        a.data[code - ARENA - 0x10000 + 0x40:code - ARENA - 0x10000 + 0x42] = \
            b"\x0f\x05"
        # Mostly the calls libplatform and libpthread make (as
        # tests/darwin/test_wait_abi.c lays them out), some perturbed.
        holder, waiter_t = rnd.sample(threads, 2)
        lk = lock + 4 * rnd.randrange(0, 30)
        word = rnd.choice([holder[0], holder[0] & ~1, holder[0] | 3])
        struct.pack_into("<I", a.data, lk - ARENA - 0x10000, word)
        kind = rnd.choice(["unfair", "unfair", "compare", "mutex", "sem",
                           "random"])
        arch = 1 if rnd.random() < 0.7 else rnd.choice([2, 0])
        pc = {1: code + 0x14, 2: code + 0x42}.get(arch, code + 0x14)
        if rnd.random() < 0.15:
            pc = rnd.choice([code + 0x24, 0x50000000, 0, code + 0x14])
        if kind in ("unfair", "compare"):
            nr = rnd.choice([515, 544])
            op = 0x01000002 if kind == "unfair" else 0x01000001
            args = [op, lk, word, rnd.choice([0, 1000]), 0, 0]
        elif kind == "mutex":
            nr = 301
            args = [lk & ~7, rnd.getrandbits(32), rnd.getrandbits(32),
                    rnd.choice([holder[1], waiter_t[1], 0x9C300]),
                    rnd.getrandbits(8), 0]
        elif kind == "sem":
            nr = -36
            args = [rnd.getrandbits(12) | 3, 0, 0, 0, 0, 0]
        else:
            nr = rnd.choice([301, 515, 544, -36, 0, 3, rnd.getrandbits(16)])
            args = [rnd.choice([0x01000002, 0x01000001, rnd.getrandbits(32)]),
                    lock + 4 * rnd.randrange(0, 60), lock_words[0],
                    rnd.getrandbits(64), 0, rnd.getrandbits(8)]
        if arch == 2 and rnd.random() < 0.8:  # x86_64's syscall classes
            nr = 0x1000000 | -nr if nr < 0 else 0x2000000 | nr
        if rnd.random() < 0.1:
            args[rnd.randrange(6)] = rnd.getrandbits(64)
        waiter = waiter_t[0] if rnd.random() < 0.9 else holder[0]
        a.words = [arch, waiter, rnd.choice([2, 2, 1, 0]), pc, nr] + args
        a.words += [len(regions)] + [x for r in regions for x in r]
        a.words += [len(threads)] + [x for t in threads for x in t]
        reqs.append(("wait", a))
    return reqs


def unwind_sections(paths):
    """{name: (image base, text start, text end (offsets), __unwind_info)}
    of each image that has one."""
    out = {}
    for name, path in paths:
        if not path or not os.path.isfile(path):
            continue
        m = MachO(path, run=False)
        sec = m.sections.get(("__TEXT", "__unwind_info"))
        text = m.sections.get(("__TEXT", "__text"))
        base = next((v for n, v, _, _ in m.segments if n == "__TEXT"), None)
        if sec and text and base is not None and sec[1]:
            out[name] = (base, text[0] - base, text[0] - base + len(text[1]),
                         sec[1])
    return out


def run_pure(args):
    if not args.sdk or not os.path.isdir(args.sdk):
        skip("SNAP_DARWIN_SDK unset: the darwin backend's pure functions "
             "are compiled against the SDK")
    if not os.access(args.host, os.X_OK):
        skip(f"no host program {args.host}")
    t0 = time.monotonic()
    images = build_pure_images(args)
    t_build = time.monotonic() - t0
    sections = unwind_sections([("pure-arm64 image", images["arm64"])] +
                               [(os.path.basename(p), p)
                                for p in args.unwind_from])
    print("run_emulated: __unwind_info from " + ", ".join(
        f"{n} ({len(v[3])} bytes)" for n, v in sections.items()))
    reqs = pure_requests(args.seed, sections)
    blob = bytearray()
    for _, a in reqs:
        b = a.bytes()
        blob += b"SNAPPUR1" + pack([a.op, 0, len(b)]) + b
    p = subprocess.run([args.host], input=bytes(blob), capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"host_pure failed: {p.stderr.decode()}")
    host = [[int(x, 16) for x in line.split()[1:]]
            for line in p.stdout.decode().splitlines()]
    if len(host) != len(reqs):
        raise SystemExit("host_pure answered too few requests")
    # What the host's answers hold, so a vacuous run shows.
    st = dict(waits=0, kinds=0, owners=0, lines=0, parsed=0, targets=0,
              found=0, verdicts=0)
    for (what, a), want in zip(reqs, host):
        if a.op == OP_WAIT:
            st["waits"] += 1
            st["kinds"] += want[0] != 0
            st["owners"] += want[2] != 0
        elif a.op == OP_CSLINE:
            st["lines"] += 1
            st["parsed"] += want[0]
        elif a.op == OP_UNWIND:
            st["targets"] += len(want) // 6
            st["found"] += sum(want[0::6])
        else:
            st["verdicts"] += sum(1 for v in want[:-2] if v)
    print(f"run_emulated: host answers: {st['kinds']}/{st['waits']} waits "
          f"decoded to a kind, {st['owners']} with an owner; "
          f"{st['parsed']}/{st['lines']} lines parsed; {st['found']}/"
          f"{st['targets']} unwind lookups found; {st['verdicts']} busy/idle "
          "verdicts")
    failures = 0
    variants = [("arm64 on Cortex-A72", images["arm64"], A.UC_CPU_ARM64_A72),
                ("arm64e on max", images["arm64e"], A.UC_CPU_ARM64_MAX)]
    t1 = time.monotonic()
    for label, image, model in variants:
        uc = new_cpu(model, model == A.UC_CPU_ARM64_MAX)
        m = MachO(image)
        for _, vmaddr, vmsize, data in m.segments:
            uc.mem_map(vmaddr, (vmsize + 0x3FFF) & ~0x3FFF)
            uc.mem_write(vmaddr, data)
        uc.mem_map(WSTACK_LO, WSTACK_SIZE)
        uc.mem_map(OUT_AT, 8 * OUT_MAX)
        uc.mem_map(TRAP, 0x1000)
        uc.mem_map(ARENA, ARENA_SIZE)
        entry = m.symbols["_snap_emu_pure"]
        bad = 0
        for (what, a), want in zip(reqs, host):
            b = a.bytes()
            uc.mem_write(ARENA, b)
            uc.reg_write(A.UC_ARM64_REG_X0, a.op)
            uc.reg_write(A.UC_ARM64_REG_X1, ARENA)
            uc.reg_write(A.UC_ARM64_REG_X2, OUT_AT)
            uc.reg_write(A.UC_ARM64_REG_SP, WSTACK_LO + WSTACK_SIZE - 0x100)
            uc.reg_write(A.UC_ARM64_REG_X30, TRAP)
            try:
                uc.emu_start(entry, TRAP, count=20_000_000)
                n = uc.reg_read(A.UC_ARM64_REG_X0)
                got = list(struct.unpack(f"<{n}Q", uc.mem_read(OUT_AT, 8 * n)))
                if uc.reg_read(A.UC_ARM64_REG_PC) != TRAP:
                    got = "did not return"
            except U.UcError as e:
                got = f"fault {e} at {uc.reg_read(A.UC_ARM64_REG_PC):#x}"
            uc.mem_write(ARENA, bytes(len(b)))
            if got != want:
                bad += 1
                if bad <= 10:
                    print(f"FAIL {label}: {what}: emulated {got} host {want}")
        print(f"run_emulated: {label}: {len(reqs) - bad}/{len(reqs)} "
              "calls agree")
        failures += bad
    kinds = {}
    for what, _ in reqs:
        k = what.split(" ")[0]
        kinds[k] = kinds.get(k, 0) + 1
    print("run_emulated: " + ", ".join(f"{v} {k}" for k, v in kinds.items()) +
          f" calls; build {t_build:.1f} s, calls {time.monotonic() - t1:.1f} s")
    total = len(reqs) * len(variants)
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image-dir", required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--src", default=os.path.join(HERE, "../../.."))
    ap.add_argument("--clang", default="/usr/bin/clang")
    ap.add_argument("--ld64", default="")
    ap.add_argument("--objdump", default="")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--random", type=int, default=300)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--part", choices=("walk", "pure"), default="walk")
    ap.add_argument("--sdk", default=os.environ.get("SNAP_DARWIN_SDK", ""))
    ap.add_argument("--unwind-from", action="append", default=[],
                    help="another Mach-O whose __unwind_info the pure part "
                    "reads (check_darwin's smoke binary)")
    args = ap.parse_args()
    if U is None:
        skip("python module unicorn missing (scripts/install-deps.sh)")
    if not (U.__version__.startswith("2.")):
        skip(f"unicorn {U.__version__}: 2.x needed (CPU models)")
    if not os.path.isfile(args.clang) or not os.access(args.clang, os.X_OK):
        skip(f"no clang at {args.clang}")
    if not args.ld64 or not os.access(args.ld64, os.X_OK):
        skip("no ld64.lld (Debian: lld)")
    if args.part == "pure":
        return run_pure(args)
    if not os.access(args.host, os.X_OK):
        skip(f"no host program {args.host}")
    t0 = time.monotonic()
    images = build_images(args)
    t_build = time.monotonic() - t0
    for arch, path in images.items():
        n = count_pac_instructions(path, args.objdump)
        print(f"run_emulated: {arch} image {path}: "
              f"{'?' if n is None else n} pointer-authentication "
              "instructions from the compiler (XPACLRI aside)")

    all_cases = cases(args.seed, args.random, image_unwind(images["arm64"]))
    runs = [(c, fl, en) for c in all_cases for fl in c.flags
            for en in c.entries]
    t1 = time.monotonic()
    host = host_answers(args.host, runs)
    signer = Signer()
    variants = [("arm64 on Cortex-A72 (no PAuth)", images["arm64"],
                 A.UC_CPU_ARM64_A72, False),
                ("arm64 on max, signed", images["arm64"], A.UC_CPU_ARM64_MAX,
                 True),
                ("arm64e on max", images["arm64e"], A.UC_CPU_ARM64_MAX, False),
                ("arm64e on max, signed", images["arm64e"],
                 A.UC_CPU_ARM64_MAX, True)]
    signed = {id(c): signed_variant(c, signer) for c in all_cases}
    n_signed = sum(len(c.signs) + len(c.reg_signs) for c in all_cases)
    failures = 0
    for label, image, model, sign in variants:
        emu = Emulated(image, model, pac=model == A.UC_CPU_ARM64_MAX)
        bad = 0
        for (c, fl, en), (hpcs, hreads) in zip(runs, host):
            regions, regs = signed[id(c)] if sign else (c.regions, c.regs)
            got = emu.walk(c, regions, fl, en, regs)
            what = f"{label}: {c.name} [flags {fl:#x}, {ENTRY_NAMES[en]}]"
            problems = []
            if isinstance(got, str):
                problems.append(got)
            else:
                pcs, reads = got
                if pcs != hpcs:
                    problems.append("pcs differ from the host's:\n      emu  " +
                                    " ".join(f"{p:#x}" for p in pcs) +
                                    "\n      host " +
                                    " ".join(f"{p:#x}" for p in hpcs))
                elif reads != hreads:
                    problems.append(f"checked reads {reads}, host {hreads}")
                if c.expect is not None and pcs != c.expect:
                    problems.append("pcs differ from the laid-out stack's:\n"
                                    "      got  " +
                                    " ".join(f"{p:#x}" for p in pcs) +
                                    "\n      want " +
                                    " ".join(f"{p:#x}" for p in c.expect))
            if c.expect is not None and hpcs != c.expect and not sign \
                    and model == A.UC_CPU_ARM64_A72:
                problems.append("the host's pcs differ from the laid-out "
                                "stack's")
            if problems:
                bad += 1
                if bad <= 10:
                    print(f"FAIL {what}: " + "; ".join(problems))
            elif args.verbose:
                print(f"ok   {what}")
        print(f"run_emulated: {label}: {len(runs) - bad}/{len(runs)} walks "
              "agree")
        failures += bad
    t_run = time.monotonic() - t1
    hand = sum(1 for c in all_cases if c.expect is not None)
    print(f"run_emulated: {len(all_cases)} stacks ({hand} hand-made with "
          f"known pcs, {len(all_cases) - hand} random), {len(runs)} walks "
          f"each on the host and in {len(variants)} emulated variants; "
          f"{n_signed} words signed per signed variant; build {t_build:.1f} s, "
          f"walks {t_run:.1f} s")
    total = len(runs) * len(variants)
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
