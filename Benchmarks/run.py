#!/usr/bin/env python3
"""Runs every benchmark scenario for each client in turn (A B A B …, so the machine's drift hits all alike),
repeats each, prints medians, the ratio ours/peer for each goal, and peak RSS. Servers: the project's own
scripts/test-servers (nginx with keep-alive, sendfile and no access log; pyftpdlib), started here and stopped
by PID at the end. `--smoke` runs every scenario once at a tiny size: it checks that everything works, and
measures nothing worth reading."""
import argparse, os, re, shutil, statistics, subprocess, sys, tempfile, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
parser = argparse.ArgumentParser()
parser.add_argument("--smoke", action="store_true")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--only", action="append", metavar="SCENARIO",
                    help="run this scenario (seq, conc32, tofile, ...; repeatable) and print its medians, not the table")
args = parser.parse_args()
rounds = 1 if args.smoke else args.rounds


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def build(cmd):
    """Runs a `swift build`, quiet when it works; SwiftPM prints compiler errors on stdout, so a failure shows it."""
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        raise SystemExit("benchmark: %s failed with status %d" % (" ".join(cmd), done.returncode))


def child(cmd, extra_env=None):
    """Runs cmd (with extra_env added to the environment); returns its standard output, or stops the run with its error."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **extra_env) if extra_env else None)
    if proc.returncode != 0:
        raise SystemExit("benchmark: %s failed: %s" % (" ".join(cmd[:3]), proc.stderr.strip()[:500]))
    return proc.stdout


def rusage_child(cmd, stdout=subprocess.DEVNULL):
    """Like child(), with the child's peak RSS (KiB) and CPU time. The peak comes from GNU time: a child
    forked from this Python process inherits its resident pages until exec, and wait4's ru_maxrss counts
    them (it reported 23 MiB for `cat`); time's own fork is small."""
    report = tempfile.NamedTemporaryFile(prefix="rss-", delete=False).name
    start = time.perf_counter()
    proc = subprocess.Popen([time_bin, "-f", "%M", "-o", report] + cmd, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    with open(report) as f:
        words = f.read().split()
    os.unlink(report)
    if status != 0:
        raise SystemExit("benchmark: %s failed (%d): %s" % (" ".join(cmd[:3]), status, err.strip()[:500]))
    rss = int(words[-1]) if words and words[-1].isdigit() else usage.ru_maxrss
    return {"seconds": seconds, "rss_kib": rss, "cpu": usage.ru_utime + usage.ru_stime}


def bench(scenario, client, *rest, extra_env=None):
    """One LoaderBench run: its RESULT line as a dict."""
    out = child([bench_bin, scenario, client] + [str(r) for r in rest], extra_env)
    line = next(l for l in out.splitlines() if l.startswith("RESULT "))
    fields = dict(pair.split("=", 1) for pair in line.split()[1:])
    return {"seconds": float(fields["seconds"]), "rss_kib": int(fields["rss_kib"]), "cpu": float(fields["cpu"]),
            "allocations": int(fields["allocations"]), "requests": int(fields["requests"])}


def allocations_per_request(scenario, client, *rest):
    """One untimed LoaderBench run with the allocation counter preloaded: allocator calls per request."""
    saved = os.environ.get("LD_PRELOAD")
    os.environ["LD_PRELOAD"] = counter_lib
    try:
        result = bench(scenario, client, *rest)
    finally:
        if saved is None:
            del os.environ["LD_PRELOAD"]
        else:
            os.environ["LD_PRELOAD"] = saved
    if result["allocations"] < 0:
        raise SystemExit("benchmark: LoaderBench did not find the preloaded allocation counter (%s)" % counter_lib)
    return result["allocations"] / result["requests"]


def wrk(url, connections, duration):
    out = sh(["wrk", "-t", str(min(2, connections)), "-c", str(connections), "-d", "%ds" % duration, url])
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return {"rate": rate}


# Servers and binaries.
print("== starting servers (scripts/test-servers)", flush=True)
subprocess.run([os.path.join(root, "scripts/test-servers"), "start"], check=True)
env = dict(l.split("=", 1) for l in open(os.path.join(root, ".build/test-servers/env")).read().split())
http = "http://127.0.0.1:%s" % env["HTTP_PORT"]
ftp = "ftp://127.0.0.1:%s" % env["FTP_PORT"]
# nginx over TLS: HTTP/2 by ALPN on one port, HTTP/1.1 alone on the other. The certificate names localhost, and
# every client is given the test CA (LoaderBench reads it from LOADERBENCH_CA, for ours and AsyncHTTPClient).
h2 = "https://localhost:%s" % env["H2_PORT"]
https1 = "https://localhost:%s" % env["HTTPS_PORT"]
ca = env["CA"]
ca_env = {"LOADERBENCH_CA": ca}
www = env["ROOT"]
# Where curl and loadurl write their downloads to a file; removed at the end.
tmp = tempfile.mkdtemp()
try:
    if shutil.which("wrk") is None:
        print("== installing wrk (Debian)", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False, capture_output=True)
    have_wrk = shutil.which("wrk") is not None
    if not os.path.exists("/usr/bin/time"):
        print("== installing GNU time (Debian)", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "time"], check=False, capture_output=True)
    if not os.path.exists("/usr/bin/time"):
        raise SystemExit("benchmark: GNU time (/usr/bin/time) is needed for the CLI peers' peak RSS: apt-get install time")
    time_bin = "/usr/bin/time"
    # A smoke run only checks that everything works: a debug build is enough, and quicker to make.
    config = "debug" if args.smoke else "release"
    package = os.path.dirname(os.path.abspath(__file__))
    print("== building LoaderBench (%s)" % config, flush=True)
    # SwiftPM keeps this package's build plan across runs and misses files added to the project it depends
    # on by path (the build then fails on a symbol in a new file): plan again each time, which is cheap.
    for plan in ("debug.yaml", "release.yaml"):
        if os.path.exists(os.path.join(package, ".build", plan)):
            os.remove(os.path.join(package, ".build", plan))
    build(["swift", "build", "-c", config, "--package-path", package])
    bench_bin = os.path.join(sh(["swift", "build", "-c", config, "--package-path", package, "--show-bin-path"]).strip(), "LoaderBench")
    counter_lib = os.path.join(os.path.dirname(bench_bin), "libAllocationCounter.so")
    # Our CLI, side by side with curl's: a process with our loader alone, so its peak RSS is the loader's
    # (LoaderBench also carries URLSession, Foundation, libcurl and AsyncHTTPClient).
    print("== building loadurl (%s)" % config, flush=True)
    build(["swift", "build", "-c", config, "--package-path", root, "--product", "loadurl"])
    loadurl_bin = os.path.join(sh(["swift", "build", "-c", config, "--package-path", root, "--show-bin-path"]).strip(), "loadurl")

    small = 50 if args.smoke else 5000
    many = 200 if args.smoke else 20000
    big_http = "/300k.bin" if args.smoke else "/512m.bin"
    big_bytes = 300000 if args.smoke else 512 << 20
    ftp_file, ftp_bytes = ("/300k.bin", 300000) if args.smoke else ("/256m.bin", 256 << 20)
    ftp_times = 2 if args.smoke else 4
    ftp_many = 20 if args.smoke else 300
    data_mib, data_times = (1, 2) if args.smoke else (8, 20)
    noop_count = 200 if args.smoke else 100000
    slow_count = 20 if args.smoke else 1000

    # scenario name -> (unit description, {client: callable returning a result dict})
    curl_urls = lambda n, path, origin=http: sum([[origin + path, "-o", "/dev/null"] for _ in range(n)], [])
    scenarios = [
        ("seq", "%d sequential 1 KiB GETs over keep-alive" % small, "req/s", small, {
            "loader": lambda: bench("sequential", "loader", http + "/1k.bin", small),
            "loader-el": lambda: bench("sequential", "loader-el", http + "/1k.bin", small),
            "nio-minimal": lambda: bench("sequential", "nio-minimal", http + "/1k.bin", small),
            "nio-minimal-el": lambda: bench("sequential", "nio-minimal-el", http + "/1k.bin", small),
            "handler-el": lambda: bench("sequential", "handler-el", http + "/1k.bin", small),
            "urlsession": lambda: bench("sequential", "urlsession", http + "/1k.bin", small),
            "asynchttpclient": lambda: bench("sequential", "asynchttpclient", http + "/1k.bin", small),
            "curl": lambda: rusage_child(["curl", "-s"] + curl_urls(small, "/1k.bin")),
            "loadurl": lambda: rusage_child([loadurl_bin, "-s"] + [http + "/1k.bin"] * small),
        }),
        ("conc32", "%d 1 KiB GETs, 32 in flight" % many, "req/s", many, {
            "loader": lambda: bench("concurrent", "loader", http + "/1k.bin", many, 32),
            "loader-el": lambda: bench("concurrent", "loader-el", http + "/1k.bin", many, 32),
            "nio-minimal": lambda: bench("concurrent", "nio-minimal", http + "/1k.bin", many, 32),
            "nio-minimal-el": lambda: bench("concurrent", "nio-minimal-el", http + "/1k.bin", many, 32),
            "handler-el": lambda: bench("concurrent", "handler-el", http + "/1k.bin", many, 32),
            "urlsession": lambda: bench("concurrent", "urlsession", http + "/1k.bin", many, 32),
            "asynchttpclient": lambda: bench("concurrent", "asynchttpclient", http + "/1k.bin", many, 32),
            "curl": lambda: rusage_child(["curl", "-s", "--parallel", "--parallel-max", "32"] + curl_urls(many, "/1k.bin")),
            "loadurl": lambda: rusage_child([loadurl_bin, "-s", "-Z", "--parallel-max", "32"] + [http + "/1k.bin"] * many),
        }),
        # The same, with every Swift client's pool allowed 32 connections per host, as curl (--parallel-max 32)
        # and wrk (-c 32) have: the rows above give each client its default (8 for ours and AsyncHTTPClient).
        ("conc32c", "%d 1 KiB GETs, 32 in flight, 32 connections per host for every client" % many, "req/s", many, {
            "loader": lambda: bench("concurrent", "loader", http + "/1k.bin", many, 32, 32),
            "loader-el": lambda: bench("concurrent", "loader-el", http + "/1k.bin", many, 32, 32),
            "asynchttpclient": lambda: bench("concurrent", "asynchttpclient", http + "/1k.bin", many, 32, 32),
        }),
        ("conc1", "%d 1 KiB GETs, 1 in flight (scaling)" % many, "req/s", many, {
            "loader": lambda: bench("concurrent", "loader", http + "/1k.bin", many, 1),
            "loader-el": lambda: bench("concurrent", "loader-el", http + "/1k.bin", many, 1)}),
        ("conc256", "%d 1 KiB GETs, 256 in flight (scaling)" % many, "req/s", many, {
            "loader": lambda: bench("concurrent", "loader", http + "/1k.bin", many, 256),
            "loader-el": lambda: bench("concurrent", "loader-el", http + "/1k.bin", many, 256)}),
        # HTTPS: every client offers HTTP/2 by ALPN and gets it (one connection carries every request). The
        # loader's figure over HTTP/1.1 with TLS (nginx's other port) is beside it: what HTTP/2 costs or saves us.
        ("h2seq", "%d sequential 1 KiB GETs over HTTP/2 (https)" % small, "req/s", small, {
            "loader": lambda: bench("sequential", "loader", h2 + "/1k.bin", small, extra_env=ca_env),
            "loader-http1.1": lambda: bench("sequential", "loader", https1 + "/1k.bin", small, extra_env=ca_env),
            "asynchttpclient": lambda: bench("sequential", "asynchttpclient", h2 + "/1k.bin", small, extra_env=ca_env),
            "curl": lambda: rusage_child(["curl", "-s", "--cacert", ca] + curl_urls(small, "/1k.bin", h2)),
            "loadurl": lambda: rusage_child([loadurl_bin, "-s", "--cacert", ca] + [h2 + "/1k.bin"] * small),
        }),
        ("h2conc32", "%d 1 KiB GETs over HTTP/2 (https), 32 in flight" % many, "req/s", many, {
            "loader": lambda: bench("concurrent", "loader", h2 + "/1k.bin", many, 32, extra_env=ca_env),
            "loader-http1.1": lambda: bench("concurrent", "loader", https1 + "/1k.bin", many, 32, extra_env=ca_env),
            "asynchttpclient": lambda: bench("concurrent", "asynchttpclient", h2 + "/1k.bin", many, 32, extra_env=ca_env),
            "curl": lambda: rusage_child(["curl", "-s", "--cacert", ca, "--parallel", "--parallel-max", "32"] + curl_urls(many, "/1k.bin", h2)),
            "loadurl": lambda: rusage_child([loadurl_bin, "-s", "--cacert", ca, "-Z", "--parallel-max", "32"] + [h2 + "/1k.bin"] * many),
        }),
        ("h2download", "%s over HTTP/2 (https) streamed and discarded" % big_http, "MB/s", big_bytes, {
            "loader": lambda: bench("stream", "loader", h2 + big_http, extra_env=ca_env),
            "loader-http1.1": lambda: bench("stream", "loader", https1 + big_http, extra_env=ca_env),
            "curl": lambda: rusage_child(["curl", "-s", "--cacert", ca, "-o", "/dev/null", h2 + big_http]),
            "loadurl": lambda: rusage_child([loadurl_bin, "-s", "--cacert", ca, "-o", "/dev/null", h2 + big_http]),
        }),
        ("download", "%s streamed and discarded" % big_http, "MB/s", big_bytes, {
            "loader": lambda: bench("stream", "loader", http + big_http),
            "urlsession": lambda: bench("stream", "urlsession", http + big_http),
            "asynchttpclient": lambda: bench("stream", "asynchttpclient", http + big_http),
            "curl": lambda: rusage_child(["curl", "-s", "-o", "/dev/null", http + big_http]),
            "loadurl": lambda: rusage_child([loadurl_bin, "-s", "-o", "/dev/null", http + big_http]),
        }),
        ("tofile", "%s downloaded to a file" % big_http, "MB/s", big_bytes, {
            "loader": lambda: bench("tofile", "loader", http + big_http),
            "urlsession": lambda: bench("tofile", "urlsession", http + big_http),
            "asynchttpclient": lambda: bench("tofile", "asynchttpclient", http + big_http),
            "curl": lambda: rusage_child(["curl", "-s", "-o", os.path.join(tmp, "curl.out"), http + big_http]),
            "loadurl": lambda: rusage_child([loadurl_bin, "-s", "-o", os.path.join(tmp, "loadurl.out"), http + big_http]),
        }),
        ("data", "%d MiB base64 data: URL decoded %dx" % (data_mib, data_times), "MB/s", (data_mib << 20) * data_times, {
            "loader": lambda: bench("data", "loader", data_mib, data_times),
            "foundation": lambda: bench("data", "foundation", data_mib, data_times),
        }),
        ("file", "%s file: URL read" % big_http, "MB/s", big_bytes, {
            "loader": lambda: bench("stream", "loader", "file://" + www + big_http),
            "cat": lambda: rusage_child(["cat", www + big_http]),
        }),
        # Each sample is ftp_times downloads in one process (curl given the URL that many times, as its users
        # fetch several files): one download took 50-100 ms here, and the ratio of single downloads swung
        # between 0.87x and 1.44x from one run to the next with the same code.
        ("ftp", "%s FTP download (%dx per sample)" % (ftp_file, ftp_times), "MB/s", ftp_bytes * ftp_times, {
            "loader": lambda: bench("stream", "loader", ftp + ftp_file, ftp_times),
            "curl": lambda: rusage_child(["curl", "-s"] + ["-o", "/dev/null", ftp + ftp_file] * ftp_times),
        }),
        # Many small files from one server in one process, as a mirroring tool fetches them: what keeping the
        # logged-in control connection between loads saves (curl keeps it too).
        ("ftpmany", "%d small FTP files (15 bytes) in one process" % ftp_many, "req/s", ftp_many, {
            "loadurl": lambda: rusage_child([loadurl_bin, "-s"] + [ftp + "/hello.txt"] * ftp_many),
            "curl": lambda: rusage_child(["curl", "-s"] + ["-o", "/dev/null", ftp + "/hello.txt"] * ftp_many),
        }),
        ("noop1", "no-op custom scheme, 1 handler registered", "us/req", noop_count, {
            "loader": lambda: bench("noop", "loader", 1, noop_count)}),
        ("noop100", "no-op custom scheme, 100 handlers registered", "us/req", noop_count, {
            "loader": lambda: bench("noop", "loader", 100, noop_count)}),
        # Last: it leaves a thousand connections closing behind it, which slowed the CPU-bound no-op runs
        # that came next (6.9 us per load instead of 4.2 in one run).
        ("slow%d" % slow_count, "%d concurrent slow downloads (1 MiB at 256 KiB/s each)" % slow_count, "MB/s", slow_count << 20, {
            "loader": lambda: bench("manystreams", "loader", http + "/slow/1m.bin", slow_count)}),
    ]
    if have_wrk:
        d = 1 if args.smoke else 3
        scenarios[0][4]["wrk"] = lambda: wrk(http + "/1k.bin", 1, d)
        scenarios[1][4]["wrk"] = lambda: wrk(http + "/1k.bin", 32, d)

    # The big files are sparse, and this VM gives back idle page cache within a minute or two: the first
    # client to read one after that waited for the kernel to make its pages again (a 512 MiB stream at
    # 350-590 MB/s instead of 1,200-2,000, curl alike; `fincore` showed the file leave the cache while idle).
    # Each run of these scenarios starts with the file read once, untimed, so that every client finds it cached.
    warm_files = {"download": [www + big_http], "h2download": [www + big_http], "tofile": [www + big_http], "file": [www + big_http],
                  "ftp": [env["FTP_ROOT"] + ftp_file]}

    def warm(paths):
        for path in paths:
            with open(path, "rb", buffering=0) as f:
                while f.read(1 << 20):
                    pass

    results = {}
    started = time.time()
    if args.only:
        unknown = set(args.only) - {s[0] for s in scenarios}
        if unknown:
            raise SystemExit("benchmark: no scenario %s (there are %s)" % (", ".join(sorted(unknown)), ", ".join(s[0] for s in scenarios)))
        scenarios = [s for s in scenarios if s[0] in args.only]
    samples = {s[0]: {c: [] for c in s[4]} for s in scenarios}

    def one_round(key, clients):
        """Each client of one scenario once, in turn (A B A B … across the rounds)."""
        for client, run in clients.items():
            warm(warm_files.get(key, []))
            if key == "tofile":
                # No client's time includes removing a file: curl and loadurl would truncate their output
                # of the round before as they open it (LoaderBench removes its file once timed).
                for name in ("curl.out", "loadurl.out"):
                    if os.path.exists(os.path.join(tmp, name)):
                        os.remove(os.path.join(tmp, name))
                # The previous client's 512 MiB file may still be in dirty pages: written back now,
                # untimed, rather than during the next client's writes.
                os.sync()
            samples[key][client].append(run())

    # Round by round across the scenarios, not every round of one scenario before the next: this VM has
    # slow spells of a minute or so (one took a whole scenario's five rounds to 0.7x of the rounds of the
    # same code a few minutes later), and spread this way a spell spoils one round of a few scenarios,
    # which their medians drop, instead of every round of one. The slow downloads come after all the
    # rounds: they leave a thousand connections closing, which slowed the scenario after them.
    rotating = [s for s in scenarios if not s[0].startswith("slow")]
    for number in range(rounds):
        print("== round %d of %d: %s" % (number + 1, rounds, " ".join(s[0] for s in rotating)), flush=True)
        for key, title, unit, amount, clients in rotating:
            one_round(key, clients)
            if key == "tofile":
                # The last client's 512 MiB file written back now, untimed, not during the next scenario.
                os.sync()
    for key, title, unit, amount, clients in scenarios:
        if key.startswith("slow"):
            print("== %s, %d round(s)" % (key, rounds), flush=True)
            for _ in range(rounds):
                one_round(key, clients)

    for key, title, unit, amount, clients in scenarios:
        print("== %s: %s" % (key, title), flush=True)
        table = {}
        for client, runs in samples[key].items():
            if "rate" in runs[0]:
                value = statistics.median(r["rate"] for r in runs)
                table[client] = {"value": value, "rss": None, "cpu": None}
                continue
            seconds = statistics.median(r["seconds"] for r in runs)
            value = {"req/s": amount / seconds, "MB/s": amount / seconds / 1e6, "us/req": seconds / amount * 1e6}[unit]
            table[client] = {"value": value, "rss": max(r["rss_kib"] for r in runs), "cpu": statistics.median(r["cpu"] for r in runs)}
        results[key] = (title, unit, table)
        for client, row in table.items():
            extra = "" if row["rss"] is None else "  peak RSS %6.1f MiB  CPU %.2f s" % (row["rss"] / 1024, row["cpu"])
            runs = samples[key][client]
            # Every round's figures, in the full run too: a median hides which rounds a slow spell took.
            rounds_seen = "" if "seconds" not in runs[0] else "  rounds: " + " ".join(
                "%.3fs/%.2fcpu" % (r["seconds"], r["cpu"]) for r in runs)
            print("   %-16s %12.1f %s%s%s" % (client, row["value"], unit, extra, rounds_seen), flush=True)

    if args.only:
        # The table needs every scenario; the medians above are what was asked for.
        sys.exit(0)

    # Allocations per request, counted in runs of their own (untimed: counting costs an atomic add per call).
    print("== allocations per request (libAllocationCounter.so preloaded)", flush=True)
    allocations = {
        ("noop1", "loader"): allocations_per_request("noop", "loader", 1, noop_count // 10),
        ("noop100", "loader"): allocations_per_request("noop", "loader", 100, noop_count // 10),
    }
    for key, scenario, extra in (("seq", "sequential", ()), ("conc32", "concurrent", (32,))):
        for client in ("loader", "loader-el", "nio-minimal", "nio-minimal-el", "handler-el"):
            count = small if key == "seq" else many // 4
            allocations[(key, client)] = allocations_per_request(scenario, client, http + "/1k.bin", count, *extra)
    for (key, client), value in allocations.items():
        print("   %-8s %-16s %8.1f allocations/req" % (key, client, value), flush=True)

    goals = [("seq", "curl", 1.2), ("seq", "wrk", 0.85), ("seq", "urlsession", 4.0),
             ("conc32", "curl", 2.0), ("conc32", "asynchttpclient", 1.5), ("conc32", "wrk", 0.85),
             ("download", "curl", 1.0), ("tofile", "curl", 1.5), ("data", "foundation", 0.5), ("file", "cat", 0.5),
             ("ftp", "curl", 0.9)]
    print("\n| scenario | ours | peer | ours/peer | goal |\n|---|---|---|---|---|")
    for key, peer, goal in goals:
        title, unit, table = results[key]
        if peer not in table:
            continue
        # "loader-el": the same loader with the caller's tasks on an HTTP event loop (HTTPSchemeHandler.taskExecutor());
        # "loadurl": our CLI, against curl's.
        for ours in ("loader", "loader-el", "loadurl"):
            if ours not in table or (ours == "loadurl" and peer != "curl"):
                continue
            label = {"loader": title, "loader-el": title + " (tasks on the event loop)", "loadurl": title + " (loadurl CLI)"}[ours]
            ratio = table[ours]["value"] / table[peer]["value"]
            print("| %s | %.1f %s | %s %.1f | %.2fx | >= %.2fx %s |" % (label, table[ours]["value"], unit, peer,
                                                                 table[peer]["value"], ratio, goal, "met" if ratio >= goal else "missed"))
    # With equal connections: against AsyncHTTPClient in the same runs, and against curl and wrk (which
    # used 32 connections in the rows above).
    title, unit, table = results["conc32c"]
    for ours, where in (("loader", ""), ("loader-el", " (tasks on the event loop)")):
        for peer, peers in (("asynchttpclient", table), ("curl", results["conc32"][2]), ("wrk", results["conc32"][2])):
            if ours in table and peer in peers:
                print("| %s%s | %.1f %s | %s %.1f | %.2fx | (measured, no goal) |" % (
                    title, where, table[ours]["value"], unit, peer, peers[peer]["value"], table[ours]["value"] / peers[peer]["value"]))
    # What our layers (session, task, middleware, registry, handler) cost: the loader against a minimal client
    # written directly on NIO (MinimalNIOClient.swift), with the caller's tasks in the same place.
    for key, count in (("seq", small), ("conc32", many)):
        title, unit, table = results[key]
        # The middle row splits that: our HTTP handler driven without the loader (HandlerDirectClient.swift).
        for ours, floor, where, what in (("loader", "nio-minimal", "", "the loader"),
                                         ("loader-el", "nio-minimal-el", " (tasks on the event loop)", "the loader"),
                                         ("handler-el", "nio-minimal-el", " (tasks on the event loop)", "the HTTP handler alone")):
            if ours in table and floor in table:
                a, b = table[ours], table[floor]
                print("| %s%s: %s against a minimal NIO client | %.1f %s, %.1f us CPU/req, %.1f allocations/req | %s %.1f, %.1f us CPU/req, %.1f allocations/req | %.2fx | (measured, no goal) |" % (
                    title, where, what, a["value"], unit, a["cpu"] * 1e6 / count, allocations[(key, ours)], floor, b["value"],
                    b["cpu"] * 1e6 / count, allocations[(key, floor)], a["value"] / b["value"]))
    # How the cost grows with the requests in flight (the same 1 KiB GETs, with 1, 32 and 256 at once).
    for ours, where in (("loader", ""), ("loader-el", " (tasks on the event loop)")):
        steps = ["%d: %.0f req/s, %.1f us CPU/req" % (n, results[key][2][ours]["value"], results[key][2][ours]["cpu"] * 1e6 / many)
                 for key, n in (("conc1", 1), ("conc32", 32), ("conc256", 256)) if ours in results[key][2]]
        print("| %d 1 KiB GETs at 1, 32 and 256 in flight%s | %s | | | (measured, no goal) |" % (many, where, "; ".join(steps)))
    # HTTPS with HTTP/2: no goal in the issue; the peers over HTTP/2, and the loader over HTTP/1.1 with TLS.
    for key in ("h2seq", "h2conc32", "h2download"):
        title, unit, table = results[key]
        for ours, peer in (("loader", "curl"), ("loader", "asynchttpclient"), ("loadurl", "curl"), ("loader", "loader-http1.1")):
            if ours in table and peer in table:
                label = title + (" (loadurl CLI)" if ours == "loadurl" else "")
                print("| %s | %.1f %s | %s %.1f | %.2fx | (measured, no goal) |" % (
                    label, table[ours]["value"], unit, peer, table[peer]["value"], table[ours]["value"] / table[peer]["value"]))
    title, unit, table = results["download"]
    # The goal is judged on loadurl, a process with our loader alone; LoaderBench's figure is for reference:
    # it also maps what URLSession and AsyncHTTPClient need (Foundation, ICU, libcurl).
    if "loadurl" in table:
        rss = table["loadurl"]["rss"] / 1024
        print("| %s: peak RSS (loadurl) | %.1f MiB | curl %.1f MiB | | <= 32 MiB %s |" % (
            title, rss, table["curl"]["rss"] / 1024, "met" if rss <= 32 else "missed"))
    if "loader" in table:
        print("| %s: peak RSS (LoaderBench, with URLSession and AsyncHTTPClient linked) | %.1f MiB | curl %.1f MiB | | (reference) |" % (
            title, table["loader"]["rss"] / 1024, table["curl"]["rss"] / 1024))
    # The client's CPU per GB (user and system, median over the rounds): nginx bounds the rate here, so this
    # is where a client's own cost shows. Lower is better, so the ratio reads the other way from the rows above.
    # LoaderBench counts the transfer alone; curl and loadurl their whole process, start included (a few ms):
    # the loadurl row is the like-for-like one.
    gigabytes = big_bytes / 1e9
    for ours, label in (("loader", ""), ("loadurl", " (loadurl CLI)")):
        if ours in table and "curl" in table:
            mine, theirs = table[ours]["cpu"] / gigabytes, table["curl"]["cpu"] / gigabytes
            print("| %s: client CPU per GB%s | %.3f s/GB | curl %.3f s/GB | %.2fx | (measured, lower is better) |" % (
                title, label, mine, theirs, mine / theirs))
    title, unit, table = results["ftpmany"]
    if "loadurl" in table and "curl" in table:
        print("| %s (loadurl CLI) | %.1f %s | curl %.1f | %.2fx | (measured, no goal) |" % (
            title, table["loadurl"]["value"], unit, table["curl"]["value"], table["loadurl"]["value"] / table["curl"]["value"]))
    title, unit, table = results["slow%d" % slow_count]
    print("| %s | peak RSS %.1f MiB | | | (measured, no goal) |" % (title, table["loader"]["rss"] / 1024))
    for key in ("noop1", "noop100"):
        title, unit, table = results[key]
        print("| %s | %.2f us/req, %.1f allocations/req | | | <= 5 us %s |" % (
            title, table["loader"]["value"], allocations[(key, "loader")], "met" if table["loader"]["value"] <= 5 else "missed"))
    print("\n%d round(s) in %.0f s; %s" % (rounds, time.time() - started, time.strftime("%Y-%m-%d")))
finally:
    subprocess.run([os.path.join(root, "scripts/test-servers"), "stop"], check=False)
    shutil.rmtree(tmp, ignore_errors=True)
