#!/usr/bin/env python3
"""Finds one compile-fail snippet's error in the compiler output of all of them together.

  check_errors.py build  BUILD_DIR TARGET LOG   builds TARGET (all the snippets in one
                                                translation unit), which must fail, into LOG
  check_errors.py expect LOG SNIPPET REGEX      passes if the error the snippet causes matches
                                                REGEX (CMake's syntax)

The output is cut into blocks, each ending with an "error:" line; the snippet's error is the
block whose instantiation chain names the snippet's file (compile_fail/SNIPPET.cpp), so one
snippet's message is never credited to another.
"""
import re
import subprocess
import sys


def build(build_dir, target, log):
    done = subprocess.run(["cmake", "--build", build_dir, "--target", target], capture_output=True, text=True)
    output = done.stdout + done.stderr
    with open(log, "w") as f:
        f.write(output)
    if done.returncode == 0:
        sys.exit(f"{target} compiled, but every snippet in it must fail to compile")
    if "error:" not in output:
        sys.exit(f"{target} failed without a compiler error:\n{output}")
    print(f"{target} failed to compile, as it must; output in {log}")


def expect(log, snippet, regex):
    with open(log) as f:
        lines = f.read().splitlines(keepends=True)
    blocks, current = [], []
    for line in lines:
        current.append(line)
        if "error:" in line:
            blocks.append("".join(current))
            current = []
    # CMake's regular expressions have no {n} repetition: braces are literal there.
    pattern = re.compile(re.sub(r"(?<!\\)([{}])", r"\\\1", regex), re.DOTALL)
    mine = [b for b in blocks if f"compile_fail/{snippet}.cpp" in b]
    if not mine:
        sys.exit(f"no error names compile_fail/{snippet}.cpp in {log}")
    for block in mine:
        if pattern.search(block):
            print(block)
            return
    sys.exit(f"{snippet}: no error of it matches {regex!r}; its errors:\n" + "".join(mine))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "build":
        build(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "expect":
        expect(*sys.argv[2:])
    else:
        sys.exit(__doc__)
