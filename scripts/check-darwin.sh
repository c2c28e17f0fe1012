#!/usr/bin/env bash
# check-darwin.sh — cross-compiles the Apple build of stacksnap against the
# SDKs in $SNAP_DARWIN_SDK (iPhoneOS) and $SNAP_DARWIN_MACOS_SDK (macOS),
# with clang, ld64.lld and warnings as errors. Run by the CMake target
# check-darwin (cmake/check_darwin.cmake), or by hand:
#
#   scripts/check-darwin.sh [cmake] [source-dir] [build-dir] [config...]
#
# config: ios-arm64 ios-arm64e macos-arm64 macos-arm64e macos-x86_64
# (default: all those whose SDK is set). iOS configurations build the
# library (static and shared) and link the smoke executable
# tests/darwin/smoke/smoke.c plus two small dylibs; macOS ones do the same
# when the SDK has libSystem, else compile the library and the smoke
# objects only (a trimmed SDK). Nothing built here runs: there is no Mac.
#
# Then, per configuration, the package builds: every file SwiftPM
# (Package.swift) and CocoaPods (stacksnap.podspec) compile, with their
# flags (clang modules above all), read from those manifests; the public
# header imported as a module; the sources with SNAP_NO_PRIVATE_API, whose
# objects must not hold the private names; a scan for struct/union/enum
# tags the SDK's headers define too; and, where a Swift toolchain is here
# and the SDK is whole, `swift build --triple <arch>-apple-ios...` of the C
# target itself. SNAP_CHECK_DARWIN_PACKAGE_ONLY=1: the package builds alone.
#
# After each build, the stopped window's imports (llvm-nm -u of the objects
# tests/darwin/window_imports.txt lists) are checked against that allowlist,
# the linked smoke binary's lazy binds (llvm-objdump --macho --lazy-bind)
# against what src/platform/darwin/prebind.c binds at load time, and the
# locks: the symbol cache and the sampler lock through snap__lock_t,
# darwin/lock.c an os_unfair_lock, semaphores waited on only for wake-ups.
set -euo pipefail

cmake_bin=${1:-cmake}
src=$(cd "${2:-$(dirname "$0")/..}" && pwd)
out=${3:-$src/build/darwin}
shift $(($# < 3 ? $# : 3))
configs=("$@")

ios_sdk=${SNAP_DARWIN_SDK:-}
mac_sdk=${SNAP_DARWIN_MACOS_SDK:-}
if [[ -z "$ios_sdk" && -z "$mac_sdk" ]]; then
  echo "check-darwin: skipped: no SDK (set SNAP_DARWIN_SDK to an iPhoneOS.sdk and/or SNAP_DARWIN_MACOS_SDK to a MacOSX.sdk)"
  exit 0
fi
if ((${#configs[@]} == 0)); then
  [[ -n "$ios_sdk" ]] && configs+=(ios-arm64 ios-arm64e)
  [[ -n "$mac_sdk" ]] && configs+=(macos-arm64 macos-arm64e macos-x86_64)
  [[ -z "$ios_sdk" ]] && echo "check-darwin: iOS not checked (SNAP_DARWIN_SDK unset)"
  [[ -z "$mac_sdk" ]] && echo "check-darwin: macOS not checked (SNAP_DARWIN_MACOS_SDK unset)"
fi

# ---- The stopped window's imports and the locks' (docs/apple.md, "Contract:
# locks and the stopped window"). Per configuration, on the library's
# objects (and the smoke executable where one was linked).
llvm_tool() { # name: Debian's unversioned llvm tool, else the newest versioned
  local t
  for t in "/usr/bin/$1" /usr/bin/"$1"-[0-9]* /usr/lib/llvm-*/bin/"$1"; do
    [[ -x $t ]] && { echo "$t"; return 0; }
  done
  echo "check-darwin: $1 not found (Debian: apt-get install llvm)" >&2
  return 1
}
nm_tool=$(llvm_tool llvm-nm)
objdump_tool=$(llvm_tool llvm-objdump)
allowlist=$src/tests/darwin/window_imports.txt

# imports <object>: its undefined symbols, one a line.
imports() { "$nm_tool" -u "$1" | awk '{print $NF}' | sort -u; }

check_window_imports() { # cfg dir [exe]
  local cfg=$1 dir=$2 exe=${3:-} objdir fails=0 obj base sym kind objs
  objdir=$dir/stacksnap/CMakeFiles/stacksnap_static.dir/src
  declare -A kind_of objs_of
  local objects=()
  while read -r first second third _; do
    [[ -z $first || $first == \#* ]] && continue
    if [[ $first == object ]]; then
      objects+=("$second")
    else
      kind_of[$first]=$second
      objs_of[$first]=",$third,"
    fi
  done <"$allowlist"
  # 1. Every import of a window object is on the list, for that object.
  #    The imports are listed in $dir/window_imports.list for review.
  local listing=$dir/window_imports.list
  : >"$listing"
  for obj in "${objects[@]}"; do
    [[ -f $objdir/$obj.o ]] || { echo "check-darwin: $cfg: window object $obj.o missing" >&2; fails=1; continue; }
    base=${obj##*/}
    echo "$obj: $(imports "$objdir/$obj.o" | grep -v '^_snap__' | tr '\n' ' ')" >>"$listing"
    while read -r sym; do
      [[ -z $sym || $sym == _snap__* ]] && continue # ours, linked statically
      if [[ -z ${kind_of[$sym]:-} || ${objs_of[$sym]} != *",$base,"* ]]; then
        echo "check-darwin: $cfg: $obj imports $sym, which tests/darwin/window_imports.txt does not allow there (a call in the stopped window?)" >&2
        fails=1
      fi
    done < <(imports "$objdir/$obj.o")
  done
  # 2. No window import is bound lazily unless prebind.c calls it at load.
  if [[ -n $exe ]]; then
    local prebound lazy
    prebound=$(imports "$objdir/platform/darwin/prebind.c.o")
    lazy=$("$objdump_tool" --macho --lazy-bind "$exe" | awk 'NF >= 5 && $1 ~ /^__/ {print $NF}' | sort -u)
    for sym in $lazy; do
      [[ ${kind_of[$sym]:-} == window ]] || continue
      if ! grep -qx -- "$sym" <<<"$prebound"; then
        echo "check-darwin: $cfg: $sym is called in the stopped window and bound lazily in $exe, but prebind.c does not bind it at load time (dyld2 would bind it under its loader lock with a thread suspended)" >&2
        fails=1
      fi
    done
  fi
  # 3. Locks: mutual exclusion through snap__lock_t (os_unfair_lock, which
  #    donates priority), semaphores for wake-ups only.
  local cache lock sampler
  cache=$(imports "$objdir/symbols/cache.c.o")
  lock=$(imports "$objdir/platform/darwin/lock.c.o")
  sampler=$(imports "$objdir/platform/posix/sampler_lock.c.o")
  grep -qx _snap__plat_lock_lock <<<"$cache" ||
    { echo "check-darwin: $cfg: symbols/cache.c does not lock through snap__plat_lock_lock" >&2; fails=1; }
  grep -qx _snap__plat_lock_lock <<<"$sampler" ||
    { echo "check-darwin: $cfg: posix/sampler_lock.c does not take a snap__lock_t" >&2; fails=1; }
  if ! { grep -qx _os_unfair_lock_lock <<<"$lock" && grep -qx _os_unfair_lock_unlock <<<"$lock"; }; then
    echo "check-darwin: $cfg: platform/darwin/lock.c is not an os_unfair_lock" >&2
    fails=1
  fi
  # Only the wake-up users may wait on a semaphore: the watchdog's sleep,
  # the trace sampler's sleep between looks (its waker, which is the
  # semaphore on Apple), a trace writer's wait for the sampler's pass.
  while read -r obj; do
    case ${obj#"$objdir"/} in
      lag/watchdog.c.o | trace/schedule.c.o | platform/darwin/waker_darwin.c.o | platform/darwin/semaphore.c.o) ;;
      *) echo "check-darwin: $cfg: ${obj#"$objdir"/} waits on a semaphore (mutual exclusion belongs to snap__lock_t; semaphores are for wake-ups)" >&2; fails=1 ;;
    esac
  done < <(for obj in $(find "$objdir" -name '*.o' | sort); do
    local list
    list=$(imports "$obj")
    grep -qxE '_snap__plat_sem_(timed)?wait|_dispatch_semaphore_wait' <<<"$list" && echo "$obj"
  done)
  ((fails == 0)) || { echo "check-darwin: $cfg: window/lock check FAILED" >&2; return 1; }
  echo "check-darwin: $cfg: window imports and locks checked (imports listed in $listing)"
}

# ---- The package builds (docs/apple.md, "Building it without a Mac"):
# every file SwiftPM (Package.swift) and CocoaPods (stacksnap.podspec)
# compile for this platform, compiled with the flags those builds pass and
# CMake does not: clang modules (-fmodules: SwiftPM's
# ClangModuleBuildDescription enables them for C on Darwin, Xcode's
# CLANG_ENABLE_MODULES = YES for CocoaPods), the package's C standard, no
# _GNU_SOURCE, the lowest deployment target the package declares. The file
# lists and the flags are read from the manifests (package_plan), not
# copied here. Then the same sources with SNAP_NO_PRIVATE_API, whose
# objects must hold none of the private names the default build holds.

# package_plan os out: the builds of Package.swift and the podspec for os
# (ios, macos), one "build NAME" line each, then its "min VERSION",
# "flag FLAG" and "file PATH" lines. Fails on what it cannot read.
package_plan() {
  python3 - "$src" "$1" "$2" <<'PY'
import importlib.util, os, re, sys

root, os_name, out = sys.argv[1:4]
SPM_PLATFORM = {"ios": "iOS", "macos": "macOS"}[os_name]
POD_PLATFORM = {"ios": "ios", "macos": "osx"}[os_name]
C_EXTS = (".c", ".m", ".mm", ".cc", ".cpp", ".cxx", ".c++", ".s", ".S")


def fail(msg):
    sys.exit(f"check-darwin: package_plan: {msg}")


def split_top(text, sep=","):
    """text split at sep outside brackets and string literals."""
    parts, depth, quote, cur, i = [], 0, False, "", 0
    while i < len(text):
        c = text[i]
        if quote and c == "\\":
            cur += text[i:i + 2]
            i += 2
            continue
        if c == '"':
            quote = not quote
        elif not quote and c in "([{":
            depth += 1
        elif not quote and c in ")]}":
            depth -= 1
        if c == sep and depth == 0 and not quote:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        parts.append(cur.strip())
    return parts


def call_args(text, start):
    """The text between the parenthesis at text[start] and its match."""
    depth, quote = 0, False
    for i in range(start, len(text)):
        c = text[i]
        if c == '"' and text[i - 1] != "\\":
            quote = not quote
        elif not quote and c == "(":
            depth += 1
        elif not quote and c == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    fail("unbalanced parentheses in Package.swift")


def labelled(args):
    """{label: value text} of a call's arguments."""
    out = {}
    for a in split_top(args):
        m = re.match(r"^(\w+)\s*:\s*(.*)$", a, re.S)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


# ---- Package.swift, as SwiftPM evaluates it on a Mac building for os.
lines = []
conds = []  # per open #if: [this branch active, a branch was taken]
for raw in open(os.path.join(root, "Package.swift"), encoding="utf-8"):
    line, quote = "", False  # drop // comments outside strings
    for i, c in enumerate(raw.rstrip("\n")):
        if c == '"':
            quote = not quote
        if not quote and raw.startswith("//", i):
            break
        line += c
    d = re.match(r"^\s*#(if|elseif|else|endif)\b\s*(.*)$", line)
    if not d:
        if all(c[0] for c in conds):
            lines.append(line)
        continue
    kw, expr = d.group(1), d.group(2)

    def truth(e):
        e = re.sub(r"os\((\w+)\)", lambda m: str(m.group(1) == "macOS"), e)
        e = e.replace("||", " or ").replace("&&", " and ").replace("!", " not ")
        if not re.fullmatch(r"(True|False|or|and|not|[\s()])*", e):
            fail(f"cannot evaluate #{kw} {expr}")
        return eval(e)

    if kw == "if":
        t = truth(expr)
        conds.append([t, t])
    elif kw == "elseif":
        now = not conds[-1][1] and truth(expr)
        conds[-1] = [now, conds[-1][1] or now]
    elif kw == "else":
        conds[-1] = [not conds[-1][1], True]
    else:
        conds.pop()
manifest = "\n".join(lines)

strings = {m.group(1): m.group(2) for m in
           re.finditer(r'\blet\s+(\w+)\s*=\s*"([^"]*)"', manifest)}


def value(text):
    text = text.strip()
    if re.fullmatch(r'"[^"]*"', text):
        return text[1:-1]
    if text in strings:
        return strings[text]
    fail(f"cannot read {text!r} in Package.swift")


def values(text):
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        fail(f"not a list: {text!r}")
    return [value(v) for v in split_top(text[1:-1])]


def applies(cond):
    """Whether a setting's .when(...) holds for this platform."""
    if cond is None:
        return True
    m = re.fullmatch(r"\.when\((.*)\)", cond.strip(), re.S)
    if not m:
        fail(f"cannot read the condition {cond!r}")
    c = labelled(m.group(1))
    if set(c) - {"platforms", "configuration"}:
        fail(f"cannot read the condition {cond!r}")
    if "platforms" in c:
        return SPM_PLATFORM in re.findall(r"\.(\w+)", c["platforms"])
    return True  # configuration: both are built


package = re.search(r"\bPackage\s*\(", manifest)
if not package:
    fail("no Package( in Package.swift")
pkg = labelled(call_args(manifest, package.end() - 1))
plat = re.search(r"\." + SPM_PLATFORM + r'\(\s*(?:\.v(\d+)(?:_(\d+))?|"([\d.]+)")\s*\)',
                 pkg.get("platforms", ""))
if not plat:
    fail(f"Package.swift declares no {SPM_PLATFORM} deployment target")
spm_min = plat.group(3) or f"{plat.group(1)}.{plat.group(2) or 0}"
std = pkg.get("cLanguageStandard")
if std:
    std = re.fullmatch(r"\.(\w+)", std).group(1)
    std = re.sub(r"^iso9899_", "iso9899:", std)  # CLanguageStandard's raw values

product_targets = set()
for m in re.finditer(r"\.library\s*\(", manifest):
    product_targets.update(values(labelled(call_args(manifest, m.end() - 1))["targets"]))
for m in re.finditer(r"\.target\s*\(", manifest):
    t = labelled(call_args(manifest, m.end() - 1))
    name = value(t["name"])
    if name not in product_targets:
        continue
    troot = os.path.normpath(os.path.join(root, value(t.get("path", f'"Sources/{name}"'))))
    excluded = [os.path.normpath(os.path.join(troot, e)) for e in values(t.get("exclude", "[]"))]
    files = []
    for s in values(t.get("sources", '["."]')):
        base = os.path.normpath(os.path.join(troot, s))
        walk = [(base, [], [])] if os.path.isfile(base) else os.walk(base)
        for d, dirs, names in walk:
            dirs[:] = sorted(n for n in dirs if not n.startswith("."))
            paths = [d] if not names else [os.path.join(d, n) for n in names]
            for p in paths:
                if (os.path.isfile(p) and p.endswith(C_EXTS)
                        and not os.path.basename(p).startswith(".")
                        and not any(p == e or p.startswith(e + os.sep) for e in excluded)):
                    files.append(p)
    if not files:
        fail(f"target {name}: no sources")
    flags = ["-I" + os.path.join(troot, value(t.get("publicHeadersPath", '"include"')))]
    # cSettings: a list, plus lists that the build's environment switches
    # on (Context.environment, e.g. SNAP_NO_PRIVATE_API): empty here.
    terms = split_top(t.get("cSettings", "[]"), "+")
    for extra in terms[1:]:
        if not re.search(r"\blet\s+" + re.escape(extra) + r"\s*:\s*\[CSetting\]\s*=(?:(?!\nlet\b).)*?Context\.environment",
                         manifest, re.S):
            fail(f"cannot read the cSettings term {extra!r}")
    for setting in split_top(terms[0].strip()[1:-1]):
        sm = re.fullmatch(r"\.(\w+)\((.*)\)", setting, re.S)
        if not sm:
            fail(f"cannot read the setting {setting!r}")
        kind, args = sm.group(1), split_top(sm.group(2))
        cond = next((a for a in args if a.startswith(".when")), None)
        args = [a for a in args if not a.startswith(".when")]
        if not applies(cond):
            continue
        if kind == "headerSearchPath":
            flags.append("-I" + os.path.normpath(os.path.join(troot, value(args[0]))))
        elif kind == "define":
            to = next((a for a in args[1:] if a.startswith("to:")), None)
            flags.append("-D" + value(args[0]) + (f"={value(to[3:])}" if to else ""))
        elif kind == "unsafeFlags":
            flags += values(args[0])
        else:
            fail(f"cannot read the setting .{kind}")
    c99name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    # ClangModuleBuildDescription.swift (basicArguments, emitCommandLine,
    # clangModuleArguments, activeCompilationConditions, optimizationArguments).
    for config, extra in (("debug", ["-O0", "-DSWIFT_PACKAGE=1", "-DDEBUG=1"]),
                          ("release", ["-O2", "-DSWIFT_PACKAGE=1"])):
        print(f"build swiftpm-{name}-{config}")
        print(f"min {spm_min}")
        # The module map SwiftPM writes for the target's dependents
        # (ModuleMapGenerator): include/<target>.h as umbrella header.
        umbrella = os.path.join(flags[0][2:], f"{name}.h")
        if os.path.isfile(umbrella):
            print(f"module {c99name} {umbrella}")
        for f in (["-fobjc-arc"] + extra + ["-fblocks", "-fmodules",
                  f"-fmodule-name={c99name}",
                  f"-fmodules-cache-path={out}/modules-swiftpm-{config}"]
                  + flags + ([f"-std={std}"] if std else [])):
            print(f"flag {f}")
        for p in sorted(files):
            print(f"file {p}")

# ---- stacksnap.podspec, with CocoaPods' own rules (check-podspec.py).
loader = importlib.util.spec_from_file_location(
    "check_podspec", os.path.join(root, "scripts", "check-podspec.py"))
cp = importlib.util.module_from_spec(loader)
loader.loader.exec_module(cp)
spec = cp.Spec(os.path.join(root, "stacksnap.podspec"))
paths = cp.PathList(cp.pod_files(root))
pod_min = spec.scalar("deployment_target", POD_PLATFORM)
if not pod_min:
    fail(f"the podspec declares no {POD_PLATFORM}.deployment_target")
sources, _ = paths.glob(spec.patterns("source_files", POD_PLATFORM),
                        cp.DIR_GLOBS["source_files"],
                        spec.patterns("exclude_files", POD_PLATFORM))
compiled = [os.path.join(root, f) for f in sources
            if os.path.splitext(f)[1] in cp.COMPILED_EXTS]
headers = [f for f in sources if os.path.splitext(f)[1] in cp.HEADER_EXTS]
xc = spec.xcconfig()
# CocoaPods links every header of the pod into Headers/Private/<pod>/ and
# the public ones into Headers/Public/<pod>/, by base name (no
# header_mappings_dir), and searches Headers/Private, Headers/Private/<pod>
# and Headers/Public before the podspec's HEADER_SEARCH_PATHS.
hdr = os.path.join(out, "cocoapods-headers")
public = spec.patterns("public_header_files", POD_PLATFORM)
public, _ = paths.glob(public, cp.DIR_GLOBS["public_header_files"]) if public else (headers, [])
for kind, hs in (("Private", headers), ("Public", public)):
    d = os.path.join(hdr, kind, spec.name)
    os.makedirs(d, exist_ok=True)
    for h in hs:
        link = os.path.join(d, os.path.basename(h))
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join(root, h), link)
search = [os.path.join(hdr, "Private"), os.path.join(hdr, "Private", spec.name),
          os.path.join(hdr, "Public")]
for e in re.findall(r'"?\$\(PODS_TARGET_SRCROOT\)/?([^"\s]*)"?', xc.get("HEADER_SEARCH_PATHS", "")):
    search.append(os.path.normpath(os.path.join(root, e)))
flags = ["-I" + d for d in search]
# Xcode's defaults for the Pods project (Xcodeproj's constants.rb:
# CLANG_ENABLE_MODULES = YES, GCC_C_LANGUAGE_STANDARD = gnu11 unless the
# pod says otherwise; Debug: GCC_OPTIMIZATION_LEVEL 0, DEBUG=1), and
# CocoaPods' COCOAPODS=1 for every pod target. Xcode's Release is -Os.
pod_std = xc.get("GCC_C_LANGUAGE_STANDARD", "gnu11")
for config, extra in (("debug", ["-O0", "-DDEBUG=1"]), ("release", ["-Os"])):
    print(f"build cocoapods-{spec.name}-{config}")
    print(f"min {pod_min}")
    for f in (extra + ["-DCOCOAPODS=1", "-fmodules",
              f"-fmodules-cache-path={out}/modules-cocoapods-{config}",
              f"-std={pod_std}"] + flags + xc.get("OTHER_CFLAGS", "").split()):
        print(f"flag {f}")
    for p in sorted(compiled):
        print(f"file {p}")
PY
}

jobs=${SNAP_CHECK_DARWIN_JOBS:-2}

# swiftpm_build cfg os arch sdk dir: SwiftPM itself, where a Swift toolchain
# is here, builds the package's C target for the Apple triple (the Linux
# toolchain has no Swift standard library for Apple: Swift targets cannot
# be built, the C one can). Its compile lines must carry every flag
# package_plan derived for SwiftPM's debug build: the plan is checked
# against the tool it describes.
swiftpm_build() {
  local cfg=$1 os=$2 arch=$3 sdk=$4 dir=$5/package swift_bin libtool scratch log min line flag missing=0
  swift_bin=$(command -v swift || true)
  [[ -z $swift_bin && -x /opt/swift/usr/bin/swift ]] && swift_bin=/opt/swift/usr/bin/swift
  if [[ -z $swift_bin ]]; then
    echo "check-darwin: $cfg: SwiftPM itself: not run (no Swift toolchain: swift on PATH or /opt/swift/usr/bin)"
    return 0
  fi
  if [[ ! -d $sdk/usr/include ]]; then
    echo "check-darwin: $cfg: SwiftPM itself: not run (the SDK has no usr/include; swift build --sdk takes a whole SDK)"
    return 0
  fi
  # SwiftPM requires Apple's libtool for Darwin triples (to archive static
  # products); LLVM's llvm-libtool-darwin is its stand-in.
  mkdir -p "$dir/swiftpm-bin"
  libtool=$(llvm_tool llvm-libtool-darwin) || return 1
  ln -sf "$libtool" "$dir/swiftpm-bin/libtool"
  min=$(package_plan "$os" "$dir" | awk '$1 == "build" {b = $2} b ~ /^swiftpm-.*-debug$/ && $1 == "min" {print $2}' | head -n 1)
  # Outside the source tree: with a scratch path inside the target's path
  # (".") Swift 6.3 fails every build after the first (scripts/test.sh).
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/stacksnap-swiftpm.XXXXXX")
  log=$dir/swiftpm-$cfg.log
  (cd "$src" && SNAP_PACKAGE_BACKEND=darwin PATH="$dir/swiftpm-bin:$PATH" \
    "$swift_bin" build -v --triple "$arch-apple-$os$min" --sdk "$sdk" \
    --scratch-path "$scratch" --target stacksnap -Xcc -Wall -Xcc -Wextra -Xcc -Werror) >"$log" 2>&1
  local rc=$?
  rm -rf "$scratch"
  if ((rc != 0)); then
    grep -E 'error|warning' "$log" | head -n 40 >&2
    echo "check-darwin: $cfg: swift build --triple $arch-apple-$os$min FAILED (log: $log)" >&2
    return 1
  fi
  line=$(grep -E -- "-c [^ ]*/src/symbols/cache\.c " "$log" | head -n 1)
  while read -r kind flag; do
    [[ $flag == -fmodules-cache-path=* ]] && continue # a path of the build's
    if [[ " $line " != *" $flag "* && " $line " != *" ${flag:0:2} ${flag:2} "* ]]; then
      echo "check-darwin: $cfg: SwiftPM compiles without $flag, which package_plan gives it" >&2
      missing=1
    fi
  done < <(package_plan "$os" "$dir" | awk '$1 == "build" {b = $2} b ~ /^swiftpm-.*-debug$/ && $1 == "flag"')
  ((missing == 0)) || { echo "check-darwin: $cfg: SwiftPM's command line: $line" >&2; return 1; }
  echo "check-darwin: $cfg: swift build --triple $arch-apple-$os$min compiled the C target; its command line carries every flag of package_plan's SwiftPM build"
}

# The private names SNAP_NO_PRIVATE_API leaves out (docs/apple.md, "App
# Store: private names"): the class and the selector only it answers.
private_names=(_NSCallStackArray arrayWithFrames:count:symbols:)

# tag_clashes sdk file...: struct/union/enum tags the files define that a
# header of the SDK defines too. Under clang modules a tag of a module the
# file never imports still meets ours ("has incompatible definitions in
# different translation units": <search.h>'s struct entry), and a trimmed
# SDK without module maps cannot show it by compiling.
tags_of() { grep -hoE '\b(struct|union|enum)[[:space:]]+[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\{' "$@" 2>/dev/null |
  sed -E 's/[[:space:]]*\{$//; s/[[:space:]]+/ /' | sort -u; }
tag_clashes() {
  local sdk=$1 inc
  shift
  inc=$sdk/usr/include
  [[ -d $inc ]] || inc=$sdk/include
  comm -12 <(tags_of "$@") <(find "$inc" -name '*.h' -print0 | xargs -0 cat 2>/dev/null | tags_of /dev/stdin)
}

# package_compile cfg os arch sdk cc dir: every build package_plan gives
# for os, compiled by cc for arch (objects under dir/package), the
# public header imported as SwiftPM's module map makes it, then the
# SNAP_NO_PRIVATE_API build and its objects' strings.
package_compile() {
  local cfg=$1 os=$2 arch=$3 sdk=$4 cc=$5 dir=$6/package
  local plan env=(-isysroot "$sdk") build="" min="" module="" umbrella="" fails=0
  local -a flags=() files=()
  mkdir -p "$dir"
  plan=$(package_plan "$os" "$dir") || return 1
  # What the compiler and the SDK need here, as cmake/darwin_cross.cmake
  # gives them (not the packages' flags): a trimmed SDK's layout, and
  # arm64e's opaque thread state for a clang without pointer authentication.
  if [[ ! -d $sdk/usr/include && -d $sdk/include ]]; then
    env+=(-isystem "$sdk/include" -iframework "$sdk/Frameworks")
  fi
  [[ $arch == arm64e ]] && env+=(-D__DARWIN_OPAQUE_ARM_THREAD_STATE64=1)
  # Our CI's strictness on top: warnings are errors.
  env+=(-Wall -Wextra -Werror)
  run_build() { # name extra-flags...: compiles files[] with flags[]
    local name=$1 objdir=$dir/$1 log
    shift
    log=$objdir.log
    mkdir -p "$objdir"
    : >"$log"
    # shellcheck disable=SC2016 # expanded by the inner bash
    printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} bash -c '
      o=$1/$(echo "$2" | sed "s|^$3/||; s|/|_|g").o
      "$4" "${@:5}" -c "$2" -o "$o" >>"$1.log" 2>&1 || { echo "FAILED: $2" >>"$1.log"; exit 1; }' \
      bash "$objdir" {} "$src" "$cc" -target "$arch-apple-$os$min" "${env[@]}" "${flags[@]}" "$@" ||
      { grep -v '^FAILED' "$log" | head -n 40 >&2
        echo "check-darwin: $cfg: $name ($cc): $(grep -c '^FAILED' "$log") of ${#files[@]} files FAILED to compile:" >&2
        grep '^FAILED' "$log" | sed 's/^/  /' >&2
        return 1; }
    echo "check-darwin: $cfg: $name: ${#files[@]} files compiled ($cc, -target $arch-apple-$os$min)"
  }
  finish() { # the build read so far
    [[ -z $build ]] && return 0
    if ((${#files[@]} == 0)); then
      echo "check-darwin: $cfg: $build: no files" >&2
      return 1
    fi
    run_build "$build" || return 1
    if [[ -n $module ]]; then
      # A dependent's view: `import stacksnap` through the module map
      # SwiftPM generates (the library's own files see the header textually).
      local map=$dir/$build.modulemap
      printf 'module %s {\n    umbrella header "%s"\n    export *\n}\n' "$module" "$umbrella" >"$map"
      printf '#include "%s"\n' "${umbrella##*/}" >"$dir/$build.client.c"
      "$cc" -target "$arch-apple-$os$min" "${env[@]}" -fmodules \
        "-fmodules-cache-path=$dir/modules-client" "-fmodule-map-file=$map" \
        -I "${umbrella%/*}" -std=c11 -fsyntax-only "$dir/$build.client.c" ||
        { echo "check-darwin: $cfg: $build: the module $module does not import" >&2; return 1; }
      echo "check-darwin: $cfg: $build: module $module imports through SwiftPM's module map"
    fi
    if [[ $build == swiftpm-*-debug ]]; then
      # App Store builds: the same files with SNAP_NO_PRIVATE_API.
      local name on=$dir/$build objs
      run_build "$build-no-private-api" -DSNAP_NO_PRIVATE_API=1 || return 1
      for name in "${private_names[@]}"; do
        objs=$(LC_ALL=C grep -rlaF --include='*.o' -- "$name" "$on" | wc -l)
        ((objs > 0)) ||
          { echo "check-darwin: $cfg: $build: no object holds $name (is the list of private names stale?)" >&2; return 1; }
        if LC_ALL=C grep -rlaF --include='*.o' -- "$name" "$on-no-private-api" >&2; then
          echo "check-darwin: $cfg: with SNAP_NO_PRIVATE_API the objects above still hold $name" >&2
          return 1
        fi
      done
      echo "check-darwin: $cfg: SNAP_NO_PRIVATE_API: no object holds ${private_names[*]} (the default build has them)"
    fi
  }
  while read -r kind value rest; do
    case $kind in
      build)
        finish || return 1
        build=$value; min=""; module=""; umbrella=""; flags=(); files=() ;;
      min) min=$value ;;
      module) module=$value; umbrella=$rest ;;
      flag) flags+=("$value") ;;
      file) files+=("$value") ;;
    esac
  done <<<"$plan"
  finish || return 1
  local clashes ours
  mapfile -t ours < <(package_plan "$os" "$dir" | awk '$1 == "file" {print $2}' | sort -u
    find "$src/src" "$src/include" -name '*.h' ! -path '*/platform/linux/*')
  clashes=$(tag_clashes "$sdk" "${ours[@]}")
  if [[ -n $clashes ]]; then
    echo "check-darwin: $cfg: these tags of ours are defined by the SDK's headers too (a clash under clang modules; name them for their file):" >&2
    while IFS= read -r line; do echo "  $line"; done <<<"$clashes" >&2
    return 1
  fi
  echo "check-darwin: $cfg: no struct/union/enum tag of ours is one of the SDK's"
}

summary=()
for cfg in "${configs[@]}"; do
  os=${cfg%%-*}
  arch=${cfg#*-}
  case $os in
    ios) sdk=$ios_sdk; var=SNAP_DARWIN_SDK ;;
    macos) sdk=$mac_sdk; var=SNAP_DARWIN_MACOS_SDK ;;
    *) echo "check-darwin: unknown configuration $cfg" >&2; exit 2 ;;
  esac
  if [[ -z "$sdk" || ! -d "$sdk" ]]; then
    echo "check-darwin: $cfg: $var is not an SDK directory: '$sdk'" >&2
    exit 1
  fi
  dir=$out/$cfg
  mkdir -p "$out"
  if [[ ${SNAP_CHECK_DARWIN_PACKAGE_ONLY:-0} == 1 ]]; then
    # The package builds alone (quicker; what `swift build` and `pod
    # install` users compile), with clang found as the toolchain finds it.
    cc=${SNAP_CHECK_DARWIN_CC:-$(command -v /usr/lib/llvm-1[4-6]/bin/clang /usr/bin/clang | head -n 1)}
    mkdir -p "$dir"
    package_compile "$cfg" "$os" "$arch" "$sdk" "$cc" "$dir" ||
      { echo "check-darwin: $cfg: the package builds FAILED" >&2; exit 1; }
    swiftpm_build "$cfg" "$os" "$arch" "$sdk" "$dir" || exit 1
    summary+=("$cfg: SwiftPM's and CocoaPods' builds compiled (SNAP_CHECK_DARWIN_PACKAGE_ONLY: no CMake build)")
    continue
  fi
  echo "check-darwin: $cfg: configuring in $dir"
  "$cmake_bin" -S "$src/tests/darwin/smoke" -B "$dir" \
    -DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain-$os.cmake" \
    -DCMAKE_OSX_ARCHITECTURES="$arch" -DCMAKE_OSX_SYSROOT="$sdk" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAP_WERROR=ON >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log" >&2; echo "check-darwin: $cfg: configure FAILED" >&2; exit 1; }
  echo "check-darwin: $cfg: building"
  if ! "$cmake_bin" --build "$dir" -j "$jobs"; then
    echo "check-darwin: $cfg: build FAILED" >&2
    exit 1
  fi
  if [[ $cfg == "${configs[0]}" ]]; then
    # The CMake option SNAP_NO_PRIVATE_API, once: the library's objects
    # must hold none of the private names the default build's hold.
    echo "check-darwin: $cfg: SNAP_NO_PRIVATE_API=ON: configuring and building the library in $dir-no-private-api"
    if ! { "$cmake_bin" -S "$src/tests/darwin/smoke" -B "$dir-no-private-api" \
      -DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain-$os.cmake" \
      -DCMAKE_OSX_ARCHITECTURES="$arch" -DCMAKE_OSX_SYSROOT="$sdk" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAP_WERROR=ON -DSNAP_NO_PRIVATE_API=ON \
      >"$dir-no-private-api.configure.log" 2>&1 &&
      "$cmake_bin" --build "$dir-no-private-api" -j "$jobs" --target stacksnap_static \
        >"$dir-no-private-api.build.log" 2>&1; }; then
      tail -n 40 "$dir-no-private-api.configure.log" "$dir-no-private-api.build.log" >&2
      echo "check-darwin: $cfg: SNAP_NO_PRIVATE_API=ON: build FAILED" >&2
      exit 1
    fi
    for name in "${private_names[@]}"; do
      LC_ALL=C grep -rqaF --include='*.o' -- "$name" "$dir/stacksnap/CMakeFiles/stacksnap_static.dir" ||
        { echo "check-darwin: $cfg: no object of the default build holds $name (is the list of private names stale?)" >&2; exit 1; }
      if LC_ALL=C grep -rlaF --include='*.o' -- "$name" "$dir-no-private-api/stacksnap/CMakeFiles/stacksnap_static.dir" >&2; then
        echo "check-darwin: $cfg: with -DSNAP_NO_PRIVATE_API=ON the objects above still hold $name" >&2
        exit 1
      fi
    done
    echo "check-darwin: $cfg: SNAP_NO_PRIVATE_API=ON: no object holds ${private_names[*]} (the default build's do)"
  fi
  cc=$(sed -n 's/^SNAP_CROSS_CLANG:FILEPATH=//p' "$dir/CMakeCache.txt")
  package_compile "$cfg" "$os" "$arch" "$sdk" "$cc" "$dir" ||
    { echo "check-darwin: $cfg: the package builds FAILED" >&2; exit 1; }
  swiftpm_build "$cfg" "$os" "$arch" "$sdk" "$dir" || exit 1
  if grep -q '^SNAP_DARWIN_SDK_CAN_LINK:BOOL=ON' "$dir/CMakeCache.txt"; then
    exe=$dir/stacksnap_darwin_smoke
    [[ -f $exe.app/stacksnap_darwin_smoke ]] && exe=$exe.app/stacksnap_darwin_smoke
    [[ -f $exe ]] || { echo "check-darwin: $cfg: no executable at $exe" >&2; exit 1; }
    check_window_imports "$cfg" "$dir" "$exe" || exit 1
    summary+=("$cfg: compiled and linked ($exe); window imports and locks checked; SwiftPM's and CocoaPods' builds compiled")
  else
    check_window_imports "$cfg" "$dir" || exit 1
    summary+=("$cfg: compiled (the SDK has no libSystem: nothing linked); window imports and locks checked; SwiftPM's and CocoaPods' builds compiled")
  fi
done
for line in "${summary[@]}"; do
  echo "check-darwin: $line"
done
echo "check-darwin: passed"
