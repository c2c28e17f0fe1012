#!/usr/bin/env python3
"""check-podspec.py — checks stacksnap.podspec the way CocoaPods would use it.

No CocoaPods tool exists here (Debian packages none; RubyGems is not
reachable), so this applies CocoaPods' own rules, as written in its source
(CocoaPods 1.x), to the podspec and the committed files:

  - file patterns (Sandbox::PathList#relative_glob): matched against every
    file of the pod (here: `git ls-files`), case-insensitively, with
    File.fnmatch(FNM_PATHNAME) semantics; {a,b} sets expanded, "/**/" also
    matching "/"; a pattern naming a directory gets the attribute's default
    glob; exclude_files patterns get "**/*" and are subtracted;
  - the consumer of a platform (ios, osx) sees the root's patterns plus that
    platform's (s.ios.source_files ...);
  - public headers (Sandbox::FileAccessor#public_headers): public_header_files
    if given, else every header of source_files; minus private/project ones;
  - header mapping (PodTarget#header_mappings): each header is linked at
    <pod name or header_dir>/<its path relative to header_mappings_dir>, or
    at <pod>/<basename> without header_mappings_dir;
  - cleaning (Sandbox::PodDirCleaner): files that no attribute names
    (source_files, preserve_paths, the licence...) are deleted from a
    downloaded pod.

It fails (exit 1) on:
  - a prepare_command (the pod must build from its committed files);
  - a file pattern that matches nothing;
  - two compiled sources of one platform with the same base name (Xcode
    names object files by it), or, without header_mappings_dir, two headers
    with the same base name (they would share one link in Headers/);
  - a missing public header, a public header outside include/, any header
    of include/ left out, or a public header whose mapped path is not
    <pod>/<its path in include/> (so <stacksnap/stacksnap.h> and the
    module's umbrella find it);
  - an #include of a file of the pod, found through the including file's
    directory or HEADER_SEARCH_PATHS, that the cleaner would delete;
  - a HEADER_SEARCH_PATHS entry under $(PODS_TARGET_SRCROOT) that does not
    exist, or a licence file that does not exist.

The podspec is Ruby; this reads the subset it uses (s.attr = literal,
s.<platform>.attr = literal, strings, lists, hashes, heredocs) and fails on
a file attribute it cannot read rather than guessing.

Usage: check-podspec.py [podspec] [--root DIR]
       check-podspec.py --self-test   (the rules against broken podspecs)
"""
import os
import re
import subprocess
import sys
import tempfile

PLATFORMS = ("ios", "osx")
FILE_ATTRS = ("source_files", "exclude_files", "public_header_files",
              "private_header_files", "project_header_files",
              "preserve_paths")
SCALAR_ATTRS = ("header_mappings_dir", "header_dir", "prepare_command",
                "name", "module_name")
# Xcodeproj::Constants::HEADER_FILES_EXTENSIONS
HEADER_EXTS = (".h", ".hh", ".hpp", ".ipp", ".tpp", ".hxx", ".def", ".inl",
               ".inc", ".pch")
COMPILED_EXTS = (".c", ".m", ".mm", ".cpp", ".cc", ".cxx", ".c++", ".s",
                 ".S", ".swift")
# Sandbox::FileAccessor#glob_for_attribute
DIR_GLOBS = {
    "source_files": "*.{h,hpp,hh,m,mm,c,cpp,swift}",
    "public_header_files": "*.{" + ",".join(e[1:] for e in HEADER_EXTS) + "}",
}


class SpecError(Exception):
    pass


# ---- Reading the podspec ---------------------------------------------------

STRING = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""


def parse_strings(text, attr):
    """The string literals of a value: 'a', 'b' | ['a', 'b'] | 'a'."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    items = []
    pos = 0
    for m in re.finditer(r"\s*(" + STRING + r")\s*(,|$)", body):
        if m.start() != pos:
            raise SpecError(f"cannot read the value of {attr}: {text!r}")
        lit = m.group(1)
        if lit.startswith('"') and "#{" in lit:
            raise SpecError(f"{attr}: string interpolation is not read: {lit}")
        items.append(lit[1:-1])
        pos = m.end()
    if pos != len(body) or not items:
        raise SpecError(f"cannot read the value of {attr}: {text!r}")
    return items


def parse_hash(text):
    """{ 'K' => 'V', ... } with string keys and values."""
    return {k[1:-1]: v[1:-1] for k, v in
            re.findall(r"(" + STRING + r")\s*=>\s*(" + STRING + r")", text)}


def read_podspec(path):
    """Returns {(platform or None, attr): raw value text}."""
    src = open(path, encoding="utf-8").read().splitlines()
    attrs = {}
    i = 0
    while i < len(src):
        line = src[i]
        i += 1
        m = re.match(r"^\s*\w+\.(?:(ios|osx|tvos|watchos|visionos)\.)?(\w+)\s*=\s*(.*)$", line)
        if not m:
            continue
        platform, attr, value = m.group(1), m.group(2), m.group(3)
        here = re.match(r"^<<[~-]?(\w+)", value)
        if here:  # a heredoc: skip to its terminator
            while i < len(src) and src[i].strip() != here.group(1):
                i += 1
            i += 1
            continue
        # Continuation lines while brackets are open.
        def depth(s):
            s = re.sub(STRING, "", s)
            s = re.sub(r"#.*$", "", s)
            return s.count("[") + s.count("{") - s.count("]") - s.count("}")
        d = depth(value)
        while d > 0 and i < len(src):
            value += "\n" + src[i]
            d += depth(src[i])
            i += 1
        value = value.strip()
        # A trailing comment after a literal value.
        if not value.startswith("{"):
            value = re.sub(r"\s+#[^'\"]*$", "", value)
        attrs[(platform, attr)] = value
    return attrs


class Spec:
    def __init__(self, path):
        raw = read_podspec(path)
        self.raw = raw
        self.name = self.scalar("name")
        if not self.name:
            raise SpecError("no s.name")

    def scalar(self, attr, platform=None):
        v = self.raw.get((platform, attr)) or self.raw.get((None, attr))
        if v is None:
            return None
        return parse_strings(v, attr)[0]

    def patterns(self, attr, platform):
        """The consumer's patterns: the root's plus the platform's."""
        out = []
        for key in ((None, attr), (platform, attr)):
            if key in self.raw:
                out += parse_strings(self.raw[key], attr)
        return out

    def xcconfig(self):
        v = self.raw.get((None, "pod_target_xcconfig"))
        return parse_hash(v) if v else {}

    def license_file(self):
        v = self.raw.get((None, "license"))
        if not v:
            return None
        m = re.search(r":file\s*=>\s*(" + STRING + r")", v)
        return m.group(1)[1:-1] if m else None


# ---- CocoaPods' glob rules ---------------------------------------------------

def expand_sets(pattern):
    """PathList#dir_glob_equivalent_patterns."""
    pattern = pattern.replace("/**/", "{/**/,/}")
    sets = re.findall(r"\{[^}]*\}", pattern)
    patterns = [pattern]
    for s in dict.fromkeys(sets):
        values = s[1:-1].split(",")
        patterns = [p.replace(s, v) for p in patterns for v in values]
    return patterns


def fnmatch_regex(pattern):
    """File.fnmatch(pattern, path, FNM_PATHNAME | FNM_CASEFOLD) as a regex:
    '*' and '?' stop at '/', '**/' matches any number of directories, a
    leading '.' of a component is matched only literally."""
    out = []
    i = 0
    at_component_start = True
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append(r"(?:[^/.][^/]*/)*")
            i += 3
            at_component_start = True
            continue
        if c == "*":
            out.append(r"(?:[^/.][^/]*)?" if at_component_start else r"[^/]*")
        elif c == "?":
            out.append(r"[^/.]" if at_component_start else r"[^/]")
        elif c == "[":
            j = pattern.find("]", i)
            if j < 0:
                out.append(re.escape(c))
            else:
                out.append("[" + pattern[i + 1:j].replace("!", "^", 1) + "]")
                i = j
        else:
            out.append(re.escape(c))
        at_component_start = c == "/"
        i += 1
    return re.compile("^" + "".join(out) + "$", re.IGNORECASE)


class PathList:
    def __init__(self, files):
        self.files = sorted(files)
        self.dirs = sorted({d for f in files for d in parents(f)})

    def is_dir(self, p):
        p = p.rstrip("/").lower()
        return any(d.lower() == p for d in self.dirs)

    def glob(self, patterns, dir_pattern=None, exclude=None):
        """PathList#relative_glob; also returns the patterns that matched
        nothing."""
        result, empty = [], []
        for pattern in patterns:
            p = pattern
            if dir_pattern and self.is_dir(p):
                p = p.rstrip("/") + "/" + dir_pattern
            regexes = [fnmatch_regex(e) for e in expand_sets(p)]
            hits = [f for f in self.files if any(r.match(f) for r in regexes)]
            if not hits:
                empty.append(pattern)
            result += hits
        if exclude:
            excluded, _ = self.glob(exclude, dir_pattern="**/*")
            result = [f for f in result if f not in set(excluded)]
        return list(dict.fromkeys(result)), empty


def parents(path):
    out = []
    d = os.path.dirname(path)
    while d:
        out.append(d)
        d = os.path.dirname(d)
    return out


def pod_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"],
                             check=True, capture_output=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirnames, names in os.walk(root):
            dirnames[:] = [n for n in dirnames if n not in (".git", "build", ".build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


# ---- The checks ------------------------------------------------------------------

def check(podspec, root):
    errors = []
    spec = Spec(podspec)
    paths = PathList(pod_files(root))
    files_set = set(paths.files)

    if spec.scalar("prepare_command"):
        errors.append("prepare_command: a pod must build from its committed files")

    lic = spec.license_file()
    if lic and lic not in files_set:
        errors.append(f"license file {lic} is not in the pod")

    xcconfig = spec.xcconfig()
    search_dirs = []
    for entry in re.findall(r'"?\$\(PODS_TARGET_SRCROOT\)/?([^"\s]*)"?',
                            xcconfig.get("HEADER_SEARCH_PATHS", "")):
        d = entry.rstrip("/")
        if d and not paths.is_dir(d):
            errors.append(f"HEADER_SEARCH_PATHS: {d} does not exist in the pod")
        search_dirs.append(d)

    for platform in PLATFORMS:
        tag = f"[{platform}]"
        exclude = spec.patterns("exclude_files", platform)
        _, empty = paths.glob(exclude, dir_pattern="**/*")
        for p in empty:
            errors.append(f"{tag} exclude_files pattern {p!r} matches no file")

        def attr_files(attr):
            pats = spec.patterns(attr, platform)
            got, empty = paths.glob(pats, DIR_GLOBS.get(attr), exclude)
            for p in empty:
                errors.append(f"{tag} {attr} pattern {p!r} matches no file")
            return got

        sources = attr_files("source_files")
        if not sources:
            errors.append(f"{tag} source_files: nothing")
        headers = [f for f in sources if os.path.splitext(f)[1] in HEADER_EXTS]
        compiled = [f for f in sources if os.path.splitext(f)[1] in COMPILED_EXTS]

        # Base names: object files, and (unmapped) header links.
        by_stem = {}
        for f in compiled:
            by_stem.setdefault(os.path.splitext(os.path.basename(f))[0].lower(), []).append(f)
        for stem, fs in sorted(by_stem.items()):
            if len(fs) > 1:
                errors.append(f"{tag} sources share the base name {stem!r}: {', '.join(fs)}")
        mappings_dir = spec.scalar("header_mappings_dir", platform)
        if not mappings_dir:
            by_name = {}
            for f in headers:
                by_name.setdefault(os.path.basename(f).lower(), []).append(f)
            for n, fs in sorted(by_name.items()):
                if len(fs) > 1:
                    errors.append(f"{tag} headers share the name {n!r} in Headers/{spec.name}/: {', '.join(fs)}")

        # Public headers and where they are linked.
        public_pats = spec.patterns("public_header_files", platform)
        public, _ = paths.glob(public_pats, DIR_GLOBS["public_header_files"], exclude)
        if public_pats and not public:
            errors.append(f"{tag} public_header_files {public_pats} match no file")
        if not public:
            public = headers
        hidden = set(attr_files("private_header_files") + attr_files("project_header_files"))
        public = [h for h in public if h not in hidden]
        if not public:
            errors.append(f"{tag} no public header")
        api = [f for f in paths.files if f.startswith("include/")
               and os.path.splitext(f)[1] in HEADER_EXTS]
        for h in api:
            if h not in public:
                errors.append(f"{tag} {h} is not a public header")
        header_dir = spec.name
        if spec.scalar("header_dir", platform):
            header_dir = os.path.join(spec.name, spec.scalar("header_dir", platform))
        for h in public:
            if not h.startswith("include/"):
                errors.append(f"{tag} public header {h} is not in include/")
                continue
            if mappings_dir:
                rel = os.path.relpath(h, mappings_dir)
            else:
                rel = os.path.basename(h)
            linked = os.path.normpath(os.path.join(header_dir, rel))
            want = os.path.join(spec.name, os.path.relpath(h, "include"))
            if linked != want:
                errors.append(f"{tag} public header {h} is linked at Headers/Public/{linked}, not {want}")
            if h not in sources:
                errors.append(f"{tag} public header {h} is not in source_files")

        # What the cleaner keeps, and whether every include is among it.
        kept = set(sources) | set(attr_files("preserve_paths"))
        if lic:
            kept.add(lic)
        for f in sorted(set(compiled) | set(headers)):
            try:
                text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            for inc in re.findall(r'^\s*#\s*(?:include|import)\s*[<"]([^>"]+)[>"]', text, re.M):
                for base in [os.path.dirname(f)] + search_dirs + ["include"]:
                    cand = os.path.normpath(os.path.join(base, inc))
                    if cand in files_set:
                        if cand not in kept:
                            errors.append(f"{tag} {f} includes {inc} ({cand}), which CocoaPods' cleaner deletes (not in source_files or preserve_paths)")
                        break
    return errors


# ---- Self-test: each rule against a broken podspec ---------------------------------

GOOD = """Pod::Spec.new do |s|
  s.name = 'demo'
  s.license = { :type => 'MIT', :file => 'LICENSE' }
  s.source_files = 'include/*.h', 'src/**/*.{c,h}'
  s.exclude_files = 'src/linux/**/*'
  s.public_header_files = 'include/demo.h'
  s.preserve_paths = 'third_party/x/*'
  s.pod_target_xcconfig = {
    'HEADER_SEARCH_PATHS' => '"$(PODS_TARGET_SRCROOT)/src" "$(PODS_TARGET_SRCROOT)/third_party/x"',
  }
end
"""
TREE = {
    "LICENSE": "",
    "include/demo.h": "",
    "src/core/a.c": '#include "core/a.h"\n#include <x.h>\n',
    "src/core/a.h": "",
    "src/apple/b.c": "",
    "src/linux/a.c": "",
    "third_party/x/x.h": "",
}


def self_test():
    cases = [
        ("good", GOOD, {}, None),
        ("prepare_command", GOOD.replace("end\n", "  s.prepare_command = 'x.sh'\nend\n"), {}, "prepare_command"),
        ("duplicate base name", GOOD, {"src/apple/a.c": ""}, "share the base name 'a'"),
        ("duplicate header name", GOOD, {"src/apple/a.h": ""}, "share the name 'a.h'"),
        ("header_mappings_dir src", GOOD.replace("end\n", "  s.header_mappings_dir = 'src'\nend\n"), {}, "linked at Headers/Public/include/demo.h"),
        ("public header missing", GOOD.replace("'include/demo.h'", "'include/gone.h'"), {}, "match no file"),
        ("api header not public", GOOD, {"include/more.h": ""}, "include/more.h is not a public header"),
        ("cleaned include", GOOD.replace("  s.preserve_paths = 'third_party/x/*'\n", ""), {}, "cleaner deletes"),
        ("pattern matches nothing", GOOD.replace("'src/linux/**/*'", "'src/gone/**/*'"), {}, "matches no file"),
    ]
    failed = 0
    for name, spec_text, extra, want in cases:
        with tempfile.TemporaryDirectory() as d:
            for rel, text in {**TREE, **extra}.items():
                os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
                open(os.path.join(d, rel), "w").write(text)
            open(os.path.join(d, "demo.podspec"), "w").write(spec_text)
            errors = check(os.path.join(d, "demo.podspec"), d)
        ok = (not errors) if want is None else any(want in e for e in errors)
        print(f"self-test {name}: {'ok' if ok else 'FAILED'}"
              + ("" if ok else f" (wanted {want!r}, got {errors})"))
        failed += not ok
    return failed == 0


def main(argv):
    if "--self-test" in argv:
        return 0 if self_test() else 1
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = [a for a in argv if not a.startswith("--")]
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
        args.remove(root)
    podspec = args[0] if args else os.path.join(root, "stacksnap.podspec")
    try:
        errors = check(podspec, root)
    except SpecError as e:
        errors = [str(e)]
    for e in errors:
        print(f"check-podspec: {e}")
    print(f"check-podspec: {os.path.basename(podspec)}: "
          + ("FAILED" if errors else "passed (CocoaPods' glob, header-mapping and cleaning rules)"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
