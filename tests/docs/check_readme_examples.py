#!/usr/bin/env python3
"""check_readme_examples.py CC INCLUDE_DIR LIBRARY MARKDOWN...

Every ```c block of the given Markdown files must compile as it is printed
(-Wall -Wextra -Werror, C11) and link against the library as a shared
object with no undefined symbol: a README whose examples do not build is
not true. Prints one line per block; exits 1 on the first failure."""
import os
import re
import subprocess
import sys
import tempfile


def main():
    cc, include, library, *docs = sys.argv[1:]
    blocks = 0
    with tempfile.TemporaryDirectory() as tmp:
        for doc in docs:
            text = open(doc, encoding="utf-8").read()
            for k, m in enumerate(re.finditer(r"^```c\n(.*?)^```", text,
                                              re.S | re.M)):
                src = os.path.join(tmp, f"example{blocks}.c")
                with open(src, "w", encoding="utf-8") as f:
                    f.write(m.group(1))
                line = text.count("\n", 0, m.start()) + 1
                cmd = [cc, "-std=c11", "-Wall", "-Wextra", "-Werror",
                       "-fPIC", "-shared", "-I", include, src, library,
                       "-Wl,--no-undefined", "-lpthread", "-ldl",
                       "-o", os.path.join(tmp, f"example{blocks}.so")]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{doc}:{line}: the example does not build:\n"
                          f"{r.stderr}")
                    return 1
                print(f"{doc}:{line}: builds")
                blocks += 1
    if blocks == 0:
        print("no ```c block found")
        return 1
    print(f"{blocks} examples build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
