#!/usr/bin/env python3
"""Prints the initial async frame size of each async function in a binary, largest first: what a call of it takes
from its task's allocator (Swift's task allocator hands out slabs of about 1 KiB from malloc; the frames live at
once along a load's deepest await decide how many a task made for one load needs).

    Benchmarks/frames.py Benchmarks/.build/release/LoaderBench '6Loader|10HTTPScheme'

Each async function has an "async function pointer" record (a mangled name ending in `Tu`): a 32-bit relative
offset to the function, then the 32-bit size of the frame it starts with. The optional pattern is a regular
expression on the mangled name. Uses `nm`, `readelf` and `swift demangle`."""
import re, struct, subprocess, sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
path = sys.argv[1]
pattern = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
data = open(path, "rb").read()

sections = []
for line in subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout.splitlines():
    match = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
    if match and match.group(1) not in (".bss", ".tbss"):
        sections.append(tuple(int(match.group(i), 16) for i in (2, 3, 4)))


def file_offset(address):
    for start, offset, size in sections:
        if start <= address < start + size:
            return offset + address - start
    return None


records = []
for line in subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout.splitlines():
    fields = line.split()
    if len(fields) != 3 or not fields[2].endswith("Tu") or (pattern and not pattern.search(fields[2])):
        continue
    offset = file_offset(int(fields[0], 16))
    if offset is not None:
        records.append((struct.unpack("<iI", data[offset:offset + 8])[1], fields[2]))

names = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(name for _, name in records),
                       capture_output=True, text=True).stdout.splitlines()
for (size, _), name in sorted(zip(records, names), reverse=True):
    print("%6d  %s" % (size, name.replace("async function pointer to ", "")))
