#!/usr/bin/env python3
"""Compares LoaderBench binaries (say, a copy built before a change and one built after) on the same scenarios,
alternating them round by round (A B, then B A) so that the machine's drift hits each alike. Prints, per
scenario and binary, the median rate, the median CPU time (user + system, from GNU time) and every round's
rate, and the second binary's rate and CPU time over the first's, round by round (the median of those ratios,
with its quartiles: on this VM the drift between rounds is often larger than a change). It uses the servers
`scripts/test-servers start` left running (their ports are read from .build/test-servers/env) and starts none
itself.

    cp Benchmarks/.build/release/LoaderBench /tmp/before   # then change, rebuild, and:
    Benchmarks/compare.py /tmp/before Benchmarks/.build/release/LoaderBench --rounds 12 \\
        "sequential loader-el 5000" "concurrent loader-el 20000 32"

A scenario is LoaderBench's arguments with the URL left out: it is the nginx test server's /1k.bin for the
sequential and concurrent scenarios, and the argument as given otherwise (`"data loader 8 20"`)."""
import argparse, os, re, statistics, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("binaries", nargs=2)
parser.add_argument("scenarios", nargs="*", default=["sequential loader-el 5000", "concurrent loader-el 20000 32"])
parser.add_argument("--rounds", type=int, default=8)
args = parser.parse_intermixed_args()

env_file = os.path.join(root, ".build", "test-servers", "env")
if not os.path.exists(env_file):
    sys.exit("compare: no test servers (run scripts/test-servers start first)")
env = dict(line.split("=", 1) for line in open(env_file).read().split() if "=" in line)
small = "http://127.0.0.1:%s/1k.bin" % env["HTTP_PORT"]


def command(binary, scenario):
    """The LoaderBench command line for `scenario`, and how many units (requests or bytes) one run does."""
    words = scenario.split()
    if words[0] in ("sequential", "concurrent"):
        return [binary, words[0], words[1], small] + words[2:], int(words[2])
    return [binary] + words, 1


results = {}
for round_index in range(args.rounds):
    order = args.binaries if round_index % 2 == 0 else args.binaries[::-1]
    for scenario in args.scenarios:
        for binary in order:
            cmd, units = command(binary, scenario)
            done = subprocess.run(["/usr/bin/time", "-f", "TIME %U %S"] + cmd, capture_output=True, text=True)
            seconds = re.search(r"seconds=([0-9.]+)", done.stdout)
            cpu = re.search(r"TIME ([0-9.]+) ([0-9.]+)", done.stderr)
            if done.returncode != 0 or not seconds or not cpu:
                sys.exit("compare: %s failed: %s" % (" ".join(cmd), done.stderr.strip()[-500:]))
            results.setdefault((scenario, binary), []).append(
                (units / float(seconds.group(1)), float(cpu.group(1)) + float(cpu.group(2))))

def spread(ratios):
    """The median of per-round ratios with the quartiles around it: each round ran both binaries back to back, so a
    ratio within a round is not moved by the machine's drift between rounds, which here often exceeds the change."""
    if len(ratios) < 2:
        return "%.3f" % ratios[0]
    low, _, high = statistics.quantiles(ratios, n=4)
    return "%.3f (quartiles %.3f-%.3f)" % (statistics.median(ratios), low, high)


for scenario in args.scenarios:
    first = None
    for binary in args.binaries:
        runs = results[(scenario, binary)]
        rate = statistics.median(r[0] for r in runs)
        first = first or rate
        print("%-30s %-40s %10.1f /s  CPU %.3f s  %.3fx  rounds: %s" % (
            scenario, binary, rate, statistics.median(r[1] for r in runs), rate / first,
            " ".join("%.0f" % r[0] for r in runs)))
    a, b = (results[(scenario, binary)] for binary in args.binaries)
    print("%-30s second/first, paired by round: rate %s, CPU %s" % (
        scenario, spread([y[0] / x[0] for x, y in zip(a, b)]), spread([y[1] / x[1] for x, y in zip(a, b)])))
