#!/usr/bin/env python3
"""client-latency.py: what a call costs through the Python client.

    bench/client-latency.py --box NAME [--rounds N] [--user U] [--out DIR]

Times, in one running box, three ways an agent framework on the host
runs the command `true`, interleaved in rotation (A B C, B C A, C A B,
...) after warm-up rounds, so that drift cancels out:

  D  docker exec -u USER BOX bash -lc true      a new docker exec per call
  E  box.exec("true")                           clients/python: one channel,
                                                a subshell of its session
  S  session.run("true")                        clients/python: a session's
                                                command

Each call is timed from the host, from the call to its result, and
checked (status 0, no output). Prints the median, p90, min and max of
each and the ratios of the medians E/D and S/D; with --out, writes
client-latency.json and client-latency.txt there. bench/client-latency.sh
starts the box and runs this.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "clients", "python"))

from toolrun import Box  # noqa: E402


def repo_relative(arg):
    """An argument under the checkout, relative to it: no machine's paths in results."""
    repo = os.path.dirname(HERE)
    return os.path.relpath(arg, repo) if os.path.isabs(arg) and arg.startswith(repo + os.sep) \
        else arg


def quantile(values, q):
    v = sorted(values)
    i = max(0, min(len(v) - 1, int(q * len(v) + 0.999999) - 1))
    return v[i]


def summary(values):
    return {"median": statistics.median(values), "p90": quantile(values, 0.9),
            "min": min(values), "max": max(values), "n": len(values)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--box", required=True)
    ap.add_argument("--user", default="1000:1000")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--max-seconds", type=float, default=900)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not 1 <= a.rounds <= 5000:
        ap.error("--rounds must be 1 to 5000")

    box = Box.attach(a.box, user=a.user)
    session = box.session()

    def docker_exec():
        p = subprocess.run(["docker", "exec", "-u", a.user, a.box, "bash", "-lc", "true"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        assert p.returncode == 0 and not p.stdout and not p.stderr, p

    def client_exec():
        r = box.exec("true")
        assert r.exit_code == 0 and r.state == "done" and not r.stdout and not r.stderr, r

    def session_run():
        r = session.run("true")
        assert r.exit_code == 0 and r.state == "done" and not r.stdout and not r.stderr, r

    ways = [("D", "docker exec -u USER BOX bash -lc true", docker_exec),
            ("E", 'box.exec("true")', client_exec),
            ("S", 'session.run("true")', session_run)]
    times = {key: [] for key, _, _ in ways}
    load_before = os.getloadavg()
    for _ in range(a.warmup):
        for _, _, fn in ways:
            fn()
    start = time.monotonic()
    rounds = 0
    for i in range(a.rounds):
        order = ways[i % 3:] + ways[:i % 3]
        for key, _, fn in order:
            t0 = time.perf_counter()
            fn()
            times[key].append((time.perf_counter() - t0) * 1000)
        rounds += 1
        if time.monotonic() - start > a.max_seconds:
            print(f"client-latency: time limit of {a.max_seconds:g} s reached after "
                  f"{rounds} rounds", file=sys.stderr)
            break
    session.close()
    box.close()

    stats = {key: summary(v) for key, v in times.items()}
    d = stats["D"]["median"]
    docker_version = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                                    capture_output=True, text=True).stdout.strip()
    machine = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "nproc": os.cpu_count(), "kernel": platform.release(),
               "python": platform.python_version(), "docker": docker_version,
               "load_before": [round(x, 2) for x in load_before],
               "load_after": [round(x, 2) for x in os.getloadavg()]}
    lines = [
        f"client latency: {rounds} rounds of D, E, S interleaved in rotation, box {a.box}",
        f"  {machine['date']}, {machine['nproc']} CPUs, Linux {machine['kernel']}, "
        f"Docker engine {docker_version}, Python {machine['python']}, load average "
        f"{machine['load_before'][0]} before, {machine['load_after'][0]} after",
        f"  {'':44} {'median':>9} {'p90':>9} {'min':>9} {'max':>9}   (ms)",
    ]
    for key, label, _ in ways:
        s = stats[key]
        lines.append(f"  {key} {label:42} {s['median']:9.2f} {s['p90']:9.2f} "
                     f"{s['min']:9.2f} {s['max']:9.2f}")
    for key in ("E", "S"):
        m = stats[key]["median"]
        lines.append(f"  median ratio {key}/D: {m / d:.4f} ({m - d:+.1f} ms per call)")
    text = "\n".join(lines)
    print(text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "client-latency.json"), "w") as f:
            json.dump({"machine": machine, "rounds": rounds, "box": a.box,
                       "ways": {k: lbl for k, lbl, _ in ways}, "stats": stats,
                       "ratios": {"E/D": stats["E"]["median"] / d,
                                  "S/D": stats["S"]["median"] / d},
                       "command": " ".join(repo_relative(x) for x in sys.argv)}, f, indent=2)
        with open(os.path.join(a.out, "client-latency.txt"), "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
